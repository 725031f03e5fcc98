"""STAND-IN for ``cupy.cuda.runtime`` (tests only, never shipped): the device count, the current device, the
device properties and memory of ``EMBER_STANDIN_GPUS`` simulated GPUs (default 2)."""
from __future__ import annotations

import os


class CUDARuntimeError(RuntimeError):
    """What CuPy raises for a failed CUDA runtime call."""


#: bytes of memory each stand-in GPU has (``EMBER_STANDIN_GPU_MEMORY``, default 1 GiB)
TOTAL_MEMORY = int(os.environ.get("EMBER_STANDIN_GPU_MEMORY", str(1 << 30)))
_state = {"device": 0}


def getDeviceCount() -> int:  # noqa: N802 - CuPy's name
    raw = os.environ.get("EMBER_STANDIN_GPUS", "2")
    if int(raw) <= 0:
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    return int(raw)


def getDevice() -> int:  # noqa: N802
    return _state["device"]


def setDevice(device: int) -> None:  # noqa: N802
    if not 0 <= device < getDeviceCount():
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    _state["device"] = device


def deviceSynchronize() -> None:  # noqa: N802
    """Nothing to wait for: the stand-in runs every kernel at once."""


def getDeviceProperties(device: int) -> dict:  # noqa: N802
    if not 0 <= device < getDeviceCount():
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"Stand-in GPU (NumPy)", "totalGlobalMem": TOTAL_MEMORY, "major": 9, "minor": 0,
            "multiProcessorCount": 132}


def memGetInfo() -> tuple[int, int]:  # noqa: N802
    """``(free, total)`` bytes of the current device."""
    from .memory import _DEVICE_POOL
    return TOTAL_MEMORY - _DEVICE_POOL.total_bytes(), TOTAL_MEMORY


def runtimeGetVersion() -> int:  # noqa: N802
    return 13000


def driverGetVersion() -> int:  # noqa: N802
    return 13000
