"""How tensors print: PyTorch's layout, number formats and suffixes.

Floats print with ``precision`` decimals; when every value is a whole number
they print as ``1.``; scientific notation kicks in when magnitudes span more
than 1000x, exceed 1e8, or go below 1e-4. All elements share one width, rows
wrap at ``linewidth``, and tensors with more than ``threshold`` elements are
summarised with ``...`` (``edgeitems`` values kept at each end).

>>> import ember
>>> ember.tensor([1.0, 2.5, -3.0])
tensor([ 1.0000,  2.5000, -3.0000])
>>> ember.tensor([1e-5, 1.0])
tensor([1.0000e-05, 1.0000e+00])
>>> ember.set_printoptions(precision=2)
>>> ember.tensor([1.0, 2.5])
tensor([1.00, 2.50])
>>> ember.set_printoptions(profile="default")
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np

from . import _dtype as dt

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``.

    ``profile`` (``"default"``, ``"short"``, ``"full"``) sets the first four at
    once; arguments given alongside override it. ``sci_mode`` ``True``/``False``
    forces scientific notation on/off; ``None`` (also what every call without
    it sets) chooses automatically.

    >>> import ember
    >>> ember.set_printoptions(sci_mode=True)
    >>> ember.tensor([1.5])
    tensor([1.5000e+00])
    >>> ember.set_printoptions(profile="default")
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r}; expected one of {sorted(_PROFILES)}")
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"set_printoptions(): {key} must be a non-negative number, got {value!r}")
            setattr(PRINT_OPTS, key, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as a dict (give it back to :func:`set_printoptions` as keywords)."""
    return {"precision": PRINT_OPTS.precision, "threshold": PRINT_OPTS.threshold, "edgeitems": PRINT_OPTS.edgeitems,
            "linewidth": PRINT_OPTS.linewidth, "sci_mode": PRINT_OPTS.sci_mode}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Set print options inside a ``with`` block only.

    >>> import ember
    >>> with ember.printoptions(precision=1):
    ...     print(ember.tensor([0.25]))
    tensor([0.2])
    """
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


class _Formatter:
    """One number format and width shared by every element printed from one tensor."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        prec = PRINT_OPTS.precision
        flat = values.reshape(-1)
        if not self.floating:
            self.width = max((len(str(v)) for v in flat.tolist()), default=1)
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        mags = np.abs(finite.astype(np.float64))
        lo, hi = float(mags.min()), float(mags.max())
        items = finite.tolist()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        auto = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = auto if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        if self.sci_mode:
            self.width = max(self.width, max(len(f"{v:.{prec}e}") for v in items))
        elif self.int_mode:
            self.width = max(self.width, max(len(f"{v:.0f}") + 1 for v in items))
        else:
            self.width = max(self.width, max(len(f"{v:.{prec}f}") for v in items))

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRINT_OPTS.precision}f}"
        return text.rjust(self.width)


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The values a summarised print shows (``edgeitems`` at each end of every dimension)."""
    k = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate([arr[:k], arr[-k:]]) if arr.shape[0] > 2 * k else arr  # k=0: every value
    if not k:
        return arr[(slice(0, 0),) * arr.ndim]
    rows = list(range(k)) + list(range(arr.shape[0] - k, arr.shape[0])) if arr.shape[0] > 2 * k \
        else range(arr.shape[0])
    return np.stack([_summarized(arr[i]) for i in rows])


def _vector(arr, indent, summarize, fmt) -> str:
    k = PRINT_OPTS.edgeitems
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2))))
    if summarize and not k:
        items = ["..."]
    elif summarize and arr.shape[0] > 2 * k:
        items = [fmt.format(v) for v in arr[:k].tolist()] + [" ..."] + \
                [fmt.format(v) for v in arr[arr.shape[0] - k:].tolist()]
    else:
        items = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr, indent, summarize, fmt) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    k = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * k:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(k)] + ["..."] + \
                [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n - k, n)]
    else:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _host_values(t) -> np.ndarray:
    arr = np.asarray(t._device.backend.to_numpy(t._data))
    if t._dtype.name in ("float16", "bfloat16"):
        arr = arr.astype(np.float32)  # PyTorch prints half types through float32
    return arr


def format_values(t, indent: int) -> str:
    """The bracketed body of ``t``'s repr (``[1., 2.]``), lines indented for a prefix of ``indent`` characters."""
    arr = _host_values(t)
    summarize = arr.size > PRINT_OPTS.threshold
    fmt = _Formatter(_summarized(arr) if summarize else arr)
    return _nested(arr, indent, summarize, fmt)


def _with_suffixes(body: str, suffixes, indent: int) -> str:
    out = [body]
    # width of the last line as PyTorch counts it (one more than the characters after the last newline)
    line_len = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            line_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def tensor_repr(t, name: str = "tensor") -> str:
    """``repr(t)`` and ``str(t)``: ``tensor([1., 2.], requires_grad=True)`` and so on, as PyTorch prints
    (``name`` is what stands before the parenthesis)."""
    prefix = name + "("
    indent = len(prefix)
    suffixes = []
    dev = t._device
    if dev.type != "cpu" or dev.index not in (None, 0):
        suffixes.append(f"device='{dev}'")
    default = dt.get_default_dtype()
    if t._data.size == 0:
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if t._dtype is not default:
            suffixes.append(f"dtype={t._dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if t._dtype not in (default, dt.int64, dt.bool_):
            suffixes.append(f"dtype={t._dtype!r}")
        body = format_values(t, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
