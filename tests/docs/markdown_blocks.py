"""Runs the code of a documentation page: the ``python`` blocks of a Markdown page, in order, in one namespace,
as a reader would type them into one session, and checks what each prints against the page.

The page's conventions (docs/contributing.md says the same for authors):

- every block fenced as ```` ```python ```` runs; blocks in other languages (``bash``, ``console``, ``text``)
  do not, nor do ```` ```py ```` blocks: Python shown but not run, for code of another library (PyTorch);
- a ```` ```text ```` block right after a ``python`` block (only blank lines between) is what that block prints:
  its standard output must be exactly that text (trailing spaces and the blank lines at either end aside); a
  ``python`` block without one may print anything;
- a ``python`` block with a file name, ```` ```python title="tune_quadratic.py" ````, is a script: it is
  written to that file in the page's folder and run as ``python tune_quadratic.py`` in a process of its own
  (for code that must be a script, such as a Tuner whose trial processes import it), its output checked the
  same way; it does not share the page's namespace;
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
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
_TITLE = re.compile(r'\btitle="(?P<name>[\w.-]+\.py)"')
#: how long a script block may run
SCRIPT_TIMEOUT_S = 300


@dataclass
class Block:
    """One ``python`` block of a page: its code, the line its code starts on, and the output the page shows
    for it (None when the page shows none)."""

    code: str
    line: int
    expected: str | None = None
    script: str | None = None  # the file name of a script block


class PageError(AssertionError):
    """A block of a page raised or printed something other than what the page shows."""


def fenced_blocks(text: str) -> list[tuple[str, int, str, int, str]]:
    """The fenced blocks of a Markdown text: (language, the line number of the code's first line, the code, the
    line number of the closing fence, the fence's whole info string), line numbers counted from 1."""
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
        blocks.append((lang, i + 2, "\n".join(lines[i + 1:j]), j + 1, m["info"]))
        i = j + 1
    return blocks


def page_blocks(text: str) -> list[Block]:
    """The ``python`` blocks of a page, each with the ``text`` block that shows its output, if one follows."""
    lines = text.split("\n")
    fenced = fenced_blocks(text)
    out: list[Block] = []
    for k, (lang, line, code, end, info) in enumerate(fenced):
        if lang != "python" or code.lstrip().startswith("--8<--"):
            continue
        title = _TITLE.search(info)
        block = Block(code, line, script=title["name"] if title else None)
        if k + 1 < len(fenced):
            next_lang, next_line, next_code, _, _ = fenced[k + 1]
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
        if block.script is not None:
            printed = _run_script(path, block)
            _check_output(path, block, printed)
            continue
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
        _check_output(path, block, out.getvalue())
    return len(blocks)


def _run_script(path: Path, block: Block) -> str:
    """Write a script block to its file in the current folder, run it in a process of its own and return what
    it printed; raise ``PageError`` when it fails or runs past :data:`SCRIPT_TIMEOUT_S`."""
    assert block.script is not None
    Path(block.script).write_text(block.code + "\n", encoding="utf-8")
    try:
        run = subprocess.run([sys.executable, block.script], capture_output=True, text=True,
                             timeout=SCRIPT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise PageError(f"{path}:{block.line}: the script {block.script} ran past {SCRIPT_TIMEOUT_S} s") from exc
    if run.returncode != 0:
        raise PageError(f"{path}:{block.line}: the script {block.script} exited with status {run.returncode}:\n\n"
                        f"{block.code}\n\n{run.stderr}")
    return run.stdout


def _check_output(path: Path, block: Block, printed: str) -> None:
    if block.expected is not None and _normalise(printed) != _normalise(block.expected):
        diff = "\n".join(difflib.unified_diff(_normalise(block.expected).split("\n"),
                                              _normalise(printed).split("\n"),
                                              "the page shows", "the block printed", lineterm=""))
        raise PageError(f"{path}:{block.line}: the block printed something other than the page shows:\n\n"
                        f"{block.code}\n\n{diff}")
