"""Table cells for results, loggers and the progress view: nested configurations flattened to ``a/b`` keys, and
values written as a CSV or a table shows them.

>>> flatten({"lr": 0.1, "net": {"width": 64}})
{'lr': 0.1, 'net/width': 64}
>>> cell(0.123456789), cell(None), cell([1, 2])
('0.123457', '', '[1, 2]')
"""
from __future__ import annotations

import json

from .journal import json_default


def flatten(config: dict, prefix: str = "") -> dict:
    """``config`` with nested dicts spread into ``"outer/inner"`` keys."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def plain(value):
    """A CSV/table cell's value: numbers and strings as they are, anything else as JSON text."""
    if isinstance(value, (str, int, float)):
        return value
    return json.dumps(value, default=json_default)


def cell(value) -> str:
    """``value`` as a table shows it: floats to 6 significant digits, None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(plain(value))


def numbers(result: dict) -> dict:
    """The numeric values of ``result`` as floats (booleans and the timestamp left out), flattened: what a metrics
    logger plots."""
    return {key: float(value) for key, value in flatten(result).items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "timestamp"}
