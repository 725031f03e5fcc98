"""The runner of the documentation's code (tests/docs/markdown_blocks.py): it finds the blocks and their shown
output, and a page fails when a block raises or prints something other than the page shows."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import PageError, page_blocks, run_page

ROOT = Path(__file__).resolve().parents[2]
GOOD = """# Good

```python
x = 2
print(x * 3)
```

```text
6
```

Prose between a block and a ``text`` block: that text is not its output.

```python
print(x + 1)   # the namespace carries over from the block before
```

```bash
this is not run
```
"""
RAISES = "# Raises\n\n```python\nprint('fine')\n```\n\n```python\n1 / 0\n```\n"
PRINTS_OTHER = "# Prints other\n\n```python\nprint([1, 2])\n```\n\n```text\n[1, 3]\n```\n"


def test_python_blocks_are_found_with_their_output_and_lines():
    blocks = page_blocks(GOOD)
    assert [(b.code, b.line, b.expected) for b in blocks] == [
        ("x = 2\nprint(x * 3)", 4, "6"),
        ("print(x + 1)   # the namespace carries over from the block before", 15, None)]


def test_a_snippet_include_is_not_run_here():
    assert page_blocks('```python\n--8<-- "examples/quickstart.py"\n```\n') == []


def test_a_good_page_runs(tmp_path):
    (tmp_path / "good.md").write_text(GOOD)
    assert run_page(tmp_path / "good.md") == 2


def test_a_raising_block_fails_the_page_naming_its_line(tmp_path):
    (tmp_path / "raises.md").write_text(RAISES)
    with pytest.raises(PageError, match=r"raises.md:8: the block raised ZeroDivisionError"):
        run_page(tmp_path / "raises.md")


def test_a_block_printing_other_than_the_page_shows_fails_with_the_difference(tmp_path):
    (tmp_path / "other.md").write_text(PRINTS_OTHER)
    with pytest.raises(PageError, match=r"(?s)other.md:4: the block printed something other.*-\[1, 3\]\n\+\[1, 2\]"):
        run_page(tmp_path / "other.md")


SCRIPT = """# A script

```python
x = 5   # the page's namespace: a script does not see it
```

```python title="show_main.py"
print(__name__, "x" in globals())
```

```text
__main__ False
```
"""
FAILING_SCRIPT = '# Failing script\n\n```python title="boom.py"\nraise SystemExit("no data here")\n```\n'


def test_a_titled_block_is_a_script_run_in_its_own_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.md").write_text(SCRIPT)
    assert [b.script for b in page_blocks(SCRIPT)] == [None, "show_main.py"]
    assert run_page(tmp_path / "script.md") == 2
    assert (tmp_path / "show_main.py").read_text() == 'print(__name__, "x" in globals())\n'


def test_a_failing_script_fails_the_page_with_its_status_and_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "boom.md").write_text(FAILING_SCRIPT)
    with pytest.raises(PageError, match=r"(?s)boom.md:4: the script boom.py exited with status 1.*no data here"):
        run_page(tmp_path / "boom.md")


@pytest.mark.slow
def test_pytest_fails_on_bad_pages_and_passes_good_ones(tmp_path):
    for name, text in {"good.md": GOOD, "raises.md": RAISES, "sub/other.md": PRINTS_OTHER}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/docs/test_guides.py", "-q", "-p", "no:cacheprovider"],
                         cwd=ROOT, env={**os.environ, "EMBER_DOCS_DIR": str(tmp_path)}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 failed, 1 passed" in run.stdout, run.stdout
    assert "FAILED tests/docs/test_guides.py::test_the_page_runs_and_prints_what_it_shows[raises.md]" in run.stdout
    assert "FAILED tests/docs/test_guides.py::test_the_page_runs_and_prints_what_it_shows[sub/other.md]" in run.stdout
