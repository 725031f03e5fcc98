"""docs/memory.md runs: each Python block of the page (in order, one namespace per block, printed output checked
where the page shows it) and its whole example, examples/memory_troubleshooting.py, whose fixes must each fit a
larger batch under the same cap."""
import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "memory.md"
BLOCKS = re.findall(r"```python\n(.*?)```\n(?:\nprints `([^`]*)`)?", PAGE.read_text(), flags=re.S)


@pytest.mark.parametrize("code,shown", [b for b in BLOCKS if not b[0].startswith("--8<--")],
                         ids=lambda v: v.splitlines()[0][:40] if isinstance(v, str) and v else "")
def test_each_block_of_the_page_runs_and_prints_what_the_page_shows(code, shown):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(PAGE), "exec"), {"__name__": "__docs__"})
    finally:
        ember.memory.set_memory_limit(None)
        ember.memory.record_memory_history(enabled=None)
    if shown:
        assert out.getvalue().strip().splitlines()[0] == shown


def test_the_page_includes_the_example_that_the_suite_runs():
    assert '--8<-- "examples/memory_troubleshooting.py"' in PAGE.read_text()


def test_the_example_runs_out_of_memory_then_each_fix_fits_a_larger_batch():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        found = runpy.run_path(str(ROOT / "examples" / "memory_troubleshooting.py"))["main"]()
    text = out.getvalue()
    assert "batch 4096: cpu: out of memory: tried to allocate" in text
    assert found["plain"] < found["checkpoint"] and found["plain"] < found["bfloat16"], found
    assert ember.memory.get_memory_limit() is None
