"""Anomaly mode: find the forward op whose backward produced NaN.

>>> import ember
>>> with ember.autograd.detect_anomaly():
...     x = ember.tensor([0.0], requires_grad=True)
...     y = (x / x).sum()
...     try:
...         y.backward()
...     except RuntimeError as e:
...         print(str(e).splitlines()[0])
Function 'DivBackward0' returned nan values in its 1th output.
"""
from __future__ import annotations

import os
import traceback

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

ENABLED = False
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    return ENABLED


def record_forward(node) -> None:
    """Remember where in the user's code ``node`` was created (ember's own frames left out)."""
    frames = traceback.extract_stack()
    while frames and frames[-1].filename.startswith(_PACKAGE_DIR):
        frames.pop()
    node._anomaly_trace = "".join(traceback.format_list(frames))


def check_backward(node, grads) -> None:
    """Raise if ``node``'s backward produced NaN, naming the node and where its forward ran."""
    for i, g in enumerate(grads):
        if g is not None and g._dtype.is_floating_point and bool(_has_nan(g)):
            where = node._anomaly_trace or "(forward traceback not recorded: it ran outside anomaly mode)\n"
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.\n"
                               f"The forward call that created it:\n{where}")


def _has_nan(t):
    xp = t._device.backend.xp
    return xp.any(xp.isnan(t._data))


class set_detect_anomaly:
    """Turn anomaly detection on or off; as a context manager it is restored on exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        global ENABLED
        self.prev = ENABLED
        ENABLED = bool(mode) and check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global ENABLED
        ENABLED = self.prev
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager: record forward tracebacks and check every backward for NaN."""

    def __init__(self, check_nan: bool = True):
        super().__init__(True, check_nan)
