"""Every page of the documentation runs: the ``python`` blocks of each docs/**/*.md, in order in one namespace,
with their printed output checked where the page shows it (tests/docs/markdown_blocks.py has the rules).

``EMBER_DOCS_DIR`` points the test at another folder of pages (the tests of the runner itself use it)."""
import os
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import run_page

ROOT = Path(__file__).resolve().parents[2]
DOCS = Path(os.environ.get("EMBER_DOCS_DIR", ROOT / "docs"))
PAGES = sorted(p for p in DOCS.rglob("*.md") if "```python" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_the_page_runs_and_prints_what_it_shows(page, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # files a page saves land in a fresh folder
    run_page(page)
