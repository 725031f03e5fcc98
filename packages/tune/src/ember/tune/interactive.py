"""Whether a trial process can import the trainable: not when it was defined in a notebook, the REPL,
``python -c`` or a script read from standard input (``python - <<EOF``), whose ``__main__`` has no file.

>>> import types
>>> main_file_missing(types.SimpleNamespace(__file__="<stdin>"))
True
>>> main_file_missing(types.SimpleNamespace(__file__=__file__))
False
"""
from __future__ import annotations

import os
import sys


def main_file_missing(main=None) -> bool:
    """True when ``__main__`` (by default the running one) cannot be imported again from a file."""
    main = sys.modules.get("__main__") if main is None else main
    path = getattr(main, "__file__", None)
    return not path or not os.path.isfile(path)


def check_importable(trainable, executor) -> None:
    """Refuse a trainable defined in ``__main__`` without a file when ``executor`` starts trial processes that
    import it (a start method other than "fork"); the error says what to do instead."""
    start_method = getattr(executor, "start_method", None)
    if start_method in (None, "fork"):
        return
    function = getattr(trainable, "trainable", trainable)  # through with_resources
    if getattr(function, "__module__", None) == "__main__" and main_file_missing():
        raise TypeError(
            f"the trainable {getattr(function, '__qualname__', function)!r} is defined in an interactive session "
            f"(a notebook, the REPL, python -c, or a script piped on standard input as `python - <<EOF`): a "
            f"trial process started with {start_method!r} cannot import it; define it in a .py module and import "
            "it from there (or run the script as `python script.py`), or use LocalExecutor(start_method='fork')")
