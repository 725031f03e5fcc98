"""tools/griffe_doctests.py, the site's griffe extension: doctests in docstrings become pycon code blocks."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("griffe_doctests", ROOT / "tools" / "griffe_doctests.py")
griffe_doctests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(griffe_doctests)


def test_a_doctest_is_fenced_from_its_first_prompt_to_the_next_blank_line():
    text = "Adds.\n\n>>> x = 1\n>>> x + 1\n2\n\nDone."
    assert griffe_doctests.fence_doctests(text) == "Adds.\n\n```pycon\n>>> x = 1\n>>> x + 1\n2\n```\n\nDone."


def test_an_indented_doctest_at_the_end_keeps_its_indentation_and_is_closed():
    assert griffe_doctests.fence_doctests("Args:\n    >>> f([[0, 1]])\n    [0]") == \
        "Args:\n    ```pycon\n    >>> f([[0, 1]])\n    [0]\n    ```"


def test_a_doctest_already_inside_a_fence_is_left_alone():
    text = "```python\n>>> 1\n1\n```"
    assert griffe_doctests.fence_doctests(text) == text


def test_roles_become_optional_cross_references_to_the_resolved_path():
    paths = {"Sampler": "ember.data.sampler.Sampler", "ember.data.get_worker_info": "ember.data.get_worker_info"}
    text = "see :class:`Sampler`, :func:`~ember.data.get_worker_info` and :meth:`Sampler.__iter__`"
    assert griffe_doctests.roles_to_crossrefs(text, lambda name: paths.get(name, "ember.data.sampler." + name)) == (
        'see <autoref identifier="ember.data.sampler.Sampler" optional><code>Sampler</code></autoref>, '
        '<autoref identifier="ember.data.get_worker_info" optional><code>get_worker_info</code></autoref> and '
        '<autoref identifier="ember.data.sampler.Sampler.__iter__" optional><code>Sampler.__iter__</code></autoref>')
