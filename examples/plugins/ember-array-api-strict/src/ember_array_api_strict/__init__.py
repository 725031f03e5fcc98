"""An ember backend on ``array_api_strict``, registered through the ``ember`` entry-point group.

>>> import ember
>>> (ember.ones(2, device="strict") * 3).tolist()
[3.0, 3.0]
"""
from __future__ import annotations

import array_api_strict as xp
import numpy as np

import ember
from ember.backends import Backend

_D = ember


class StrictBackend(Backend):
    """Arrays of ``array_api_strict`` on its single CPU device; no float16/bfloat16 (the standard has none)."""

    name = "strict"
    xp = xp
    dtypes = {_D.bool_: xp.bool, _D.uint8: xp.uint8, _D.int8: xp.int8, _D.int16: xp.int16, _D.int32: xp.int32,
              _D.int64: xp.int64, _D.float32: xp.float32, _D.float64: xp.float64}

    def from_numpy(self, array, device):
        if isinstance(array, np.ndarray) and array.dtype.kind not in "biuf":
            raise TypeError(f"backend 'strict' cannot hold NumPy dtype {array.dtype}")
        return xp.asarray(array)

    def to_numpy(self, array):
        return np.from_dlpack(array)

    def copy_to(self, array, src, dst):
        return xp.asarray(array, copy=True)

    def describe(self) -> str:
        return f"array-api-strict {xp.__version__}, 1 device"


BACKEND = StrictBackend()


@ember.hookimpl
def ember_backends():
    return [BACKEND]
