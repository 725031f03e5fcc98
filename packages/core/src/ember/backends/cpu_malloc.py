"""glibc's malloc told to keep the memory of a training step's arrays for the next step.

A step allocates and frees arrays of the same sizes again and again. By default glibc serves an array of 128 KiB
or more with a memory map of its own and unmaps it when it is freed, and gives the free top of its heap back to
the kernel once it passes a threshold (both thresholds grow with the largest block freed, up to 32 MiB). Each
step then asks the kernel for fresh zeroed pages, and on a virtual machine a page fault is expensive: on the
2-core development VM an LSTM step spent half its time in them.

When the CPU backend loads, :func:`tune` sets glibc's ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD` (32 MiB: smaller
arrays come from the heap) and ``M_TRIM_THRESHOLD`` to :data:`TRIM_THRESHOLD` (1 GiB of free heap is kept), as
the variables ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` would. Measured at one thread, each
workload of ``benchmarks/run.py`` alone in a fresh process: the LSTM step 6.41 -> 4.12 ms, the CNN step 70.3 ->
62.9 ms, the MLP step 5.14 -> 4.81 ms; resnet18 inference and the tiny step unchanged. The price is resident
memory: what a step freed stays with the process (as in PyTorch's caching GPU allocator).

It leaves malloc alone where ``EMBER_MALLOC_TUNING=0`` (or ``false``, ``off``, ``no``; a value it does not know
warns and leaves it alone too) is set, where the environment already sets glibc's malloc (``MALLOC_*_``
variables or ``GLIBC_TUNABLES``), and under any C library but glibc. ``python -m ember info``
prints which (:func:`describe`).

>>> from ember.backends import cpu_malloc
>>> cpu_malloc.describe().startswith(("glibc malloc", "not tuned"))
True
"""
from __future__ import annotations

import ctypes
import os
import warnings

__all__ = ["tune", "describe", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

#: arrays below this many bytes come from glibc's heap (above it, a memory map of their own)
MMAP_THRESHOLD = 32 << 20
#: how many free bytes at the top of the heap glibc keeps before giving them back to the kernel
TRIM_THRESHOLD = 1 << 30
#: glibc's ``mallopt`` parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: the environment variables through which a user sets glibc's malloc; ember then leaves it alone
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

#: the values of ``EMBER_MALLOC_TUNING`` (any case) that turn the tuning off, and on (unset is on)
_OFF, _ON = ("0", "false", "off", "no"), ("", "1", "true", "on", "yes")

_state = "not tuned: the CPU backend has not loaded"


def _glibc() -> str | None:
    """glibc's version string (``"glibc 2.36"``), or None under another C library."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    return version if version and version.startswith("glibc") else None


def tune(environ=os.environ) -> str:
    """Set glibc's malloc thresholds (see the module docstring) unless told or set otherwise; what it did."""
    global _state
    glibc = _glibc()
    setting = environ.get("EMBER_MALLOC_TUNING", "").strip()
    if setting.lower() in _OFF:
        _state = f"not tuned: EMBER_MALLOC_TUNING={setting}"
    elif setting.lower() not in _ON:
        _state = (f"not tuned: EMBER_MALLOC_TUNING={setting!r} is not understood (expected 1, true, on or yes to tune, "
                  f"0, false, off or no to leave malloc alone)")
        warnings.warn(f"ember: {_state}", RuntimeWarning, stacklevel=2)
    elif any(name in environ for name in _USER_SETTINGS) or "glibc.malloc" in environ.get("GLIBC_TUNABLES", ""):
        _state = "not tuned: the environment sets glibc's malloc (MALLOC_*_ or GLIBC_TUNABLES)"
    elif glibc is None:
        _state = "not tuned: the C library is not glibc"
    else:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: glibc's among them
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1:
            _state = (f"glibc malloc keeps freed arrays ({glibc}: mmap threshold {MMAP_THRESHOLD >> 20} MiB, "
                      f"trim threshold {TRIM_THRESHOLD >> 20} MiB; EMBER_MALLOC_TUNING=0 leaves it alone)")
        else:
            _state = f"not tuned: {glibc}'s mallopt refused the thresholds"
    return _state


def describe() -> str:
    """One line on what :func:`tune` did (``python -m ember info`` prints it)."""
    return _state
