"""Runs the code of a documentation page: the ``python`` blocks of a Markdown page, in order, in one namespace,
as a reader would type them into one session, and checks what each prints against the page.

The page's conventions (docs/contributing.md says the same for authors):

- every block fenced as ```` ```python ```` runs; blocks in other languages (``bash``, ``console``, ``text``)
  do not, nor do ```` ```py ```` blocks: Python shown but not run, for code of another library (PyTorch);
- a ```` ```text ```` block right after a ``python`` block (only blank lines between) is what that block prints:
  its standard output must be exactly that text (trailing spaces and the blank lines at either end aside); a
  ``python`` block without one may print anything;
- a block that is a snippet include (``--8<-- "examples/x.py"``) is not run here: the included file is code
  the tests run themselves.

A block that raises, or prints something else, fails the page with the block's line number, its code and the
difference.
"""
from __future__ import annotations

import contextlib
import difflib
import io
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass
class Block:
    """One ``python`` block of a page: its code, the line its code starts on, and the output the page shows
    for it (None when the page shows none)."""

    code: str
    line: int
    expected: str | None = None


class PageError(AssertionError):
    """A block of a page raised or printed something other than what the page shows."""


def fenced_blocks(text: str) -> list[tuple[str, int, str, int]]:
    """The fenced blocks of a Markdown text: (language, the line number of the code's first line, the code, the
    line number of the closing fence), line numbers counted from 1."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m["fence"], (m["info"].strip().split() or [""])[0]
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and not lines[j].strip().strip(fence[0])):
            j += 1
        blocks.append((lang, i + 2, "\n".join(lines[i + 1:j]), j + 1))
        i = j + 1
    return blocks


def page_blocks(text: str) -> list[Block]:
    """The ``python`` blocks of a page, each with the ``text`` block that shows its output, if one follows."""
    lines = text.split("\n")
    fenced = fenced_blocks(text)
    out: list[Block] = []
    for k, (lang, line, code, end) in enumerate(fenced):
        if lang != "python" or code.lstrip().startswith("--8<--"):
            continue
        block = Block(code, line)
        if k + 1 < len(fenced):
            next_lang, next_line, next_code, _ = fenced[k + 1]
            between = lines[end:next_line - 2]  # the lines between this block's closing fence and the next fence
            if next_lang == "text" and not any(s.strip() for s in between):
                block.expected = next_code
        out.append(block)
    return out


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n")


def run_page(path: Path) -> int:
    """Run every ``python`` block of the page at ``path`` in order in one namespace; raise ``PageError`` at the
    first block that raises or prints other than the page shows. Returns how many blocks ran."""
    blocks = page_blocks(path.read_text(encoding="utf-8"))
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        out = io.StringIO()
        # each block is compiled with its page line numbers, so a traceback points into the page
        code = compile("\n" * (block.line - 1) + block.code, str(path), "exec")
        try:
            with contextlib.redirect_stdout(out):
                exec(code, namespace)
        except Exception as exc:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            raise PageError(f"{path}:{block.line}: the block raised {type(exc).__name__}: {exc}\n\n"
                            f"{block.code}\n\n{tb}") from exc
        if block.expected is not None and _normalise(out.getvalue()) != _normalise(block.expected):
            diff = "\n".join(difflib.unified_diff(_normalise(block.expected).split("\n"),
                                                  _normalise(out.getvalue()).split("\n"),
                                                  "the page shows", "the block printed", lineterm=""))
            raise PageError(f"{path}:{block.line}: the block printed something other than the page shows:\n\n"
                            f"{block.code}\n\n{diff}")
    return len(blocks)
