"""The CUDA backend's array namespace: CuPy, with the array-API names ember's ops use that CuPy 14 lacks
(``vecdot``, ``unstack``, ``linalg.vector_norm``). Every other name is CuPy's own."""
from __future__ import annotations

import types


class _Namespace(types.ModuleType):
    """A module whose missing attributes are those of ``base`` (looked up once, then cached)."""

    def __init__(self, name: str, base):
        super().__init__(name)
        self._base = base

    def __getattr__(self, name):
        value = getattr(self._base, name)
        setattr(self, name, value)
        return value


def make(cupy) -> types.ModuleType:
    """The namespace over the ``cupy`` module (the real one or the tests' stand-in)."""
    xp = _Namespace("ember.backends.cuda.xp", cupy)
    linalg = _Namespace("ember.backends.cuda.xp.linalg", cupy.linalg)

    def vecdot(x1, x2, /, *, axis=-1):
        return (cupy.conj(x1) * x2).sum(axis=axis)

    def unstack(x, /, *, axis=0):
        return tuple(cupy.moveaxis(x, axis, 0))

    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 - the array API's name
        a = cupy.abs(x)
        if ord == float("inf"):
            return a.max(axis=axis, keepdims=keepdims)
        if ord == float("-inf"):
            return a.min(axis=axis, keepdims=keepdims)
        if ord == 0:
            return (a != 0).sum(axis=axis, keepdims=keepdims).astype(a.dtype)
        if ord == 1:
            return a.sum(axis=axis, keepdims=keepdims)
        if ord == 2:
            return cupy.sqrt((a * a).sum(axis=axis, keepdims=keepdims))
        return (a ** ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)

    for ns, name, value in ((xp, "vecdot", vecdot), (xp, "unstack", unstack), (xp, "linalg", linalg),
                            (linalg, "vector_norm", vector_norm)):
        setattr(ns, name, value)
    return xp
