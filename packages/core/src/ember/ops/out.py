"""PyTorch's ``out=`` argument: the result written into a tensor the caller gives.

Every function of the ``ember`` namespace whose PyTorch counterpart takes ``out=`` (:data:`OUT_FUNCTIONS`, read off
PyTorch 2.13's Python bindings) takes it too, keyword-only, with PyTorch's rules: the result is cast into
``out``'s dtype if PyTorch's casting allows it (not floating point into an integer tensor, nor anything else into a
bool one), ``out`` is resized to the result's shape (with PyTorch's warning unless it had no elements), the call
returns ``out`` (a named tuple of the ``out`` tensors for functions returning several), and no autograd history is
recorded: an argument that requires grad (under grad mode) is an error. Factory functions (``zeros``, ``arange``,
``rand``, ...) make their values in ``out``'s dtype and device unless ``dtype``/``device`` are given.

>>> import ember
>>> buf = ember.empty(0)
>>> ember.add(ember.ones(3), 2, out=buf) is buf, buf
(True, tensor([3., 3., 3.]))
>>> values, indices = ember.empty(2), ember.empty(2, dtype=ember.int64)
>>> ember.max(ember.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(values, indices)).indices
tensor([1, 0])
"""
from __future__ import annotations

import functools
import inspect
import warnings

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled

__all__ = ["OUT_FUNCTIONS", "FACTORIES", "supports_out"]

#: the functions of the ``ember`` namespace that take ``out=`` (those whose PyTorch 2.13 counterparts do)
OUT_FUNCTIONS = frozenset("""
abs absolute acos acosh add addmm all amax amin aminmax any arange arccos arccosh arcsin arcsinh arctan arctan2
arctanh argmax argmin argsort asin asinh atan atan2 atanh baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not
bitwise_or bitwise_right_shift bitwise_xor bmm cat ceil clamp clamp_max clamp_min clip concat concatenate copysign cos
cosh cumprod cumsum deg2rad div divide dot empty eq erf exp exp2 expm1 eye fix floor floor_divide fmax fmin fmod frac
full gather ge ger greater greater_equal gt hardshrink hstack hypot index_add index_select inner inverse isneginf
isposinf le lerp less less_equal linspace log log10 log1p log2 log_softmax logaddexp logaddexp2 logical_and
logical_not logical_or logical_xor logit logspace logsumexp lt masked_select matmul max maximum mean median min minimum
mm msort mul multinomial multiply mv nan_to_num nanmean nanmedian nansum ne neg negative nonzero norm normal not_equal
ones outer pow prod rad2deg rand randint randn randperm reciprocal remainder round rsqrt scatter scatter_add sgn
sigmoid sign signbit sin sinc sinh slogdet softmax sqrt square stack std sub subtract sum take take_along_dim tan tanh
tensordot threshold tril triu true_divide trunc var vdot vstack where xlogy zeros
""".split())

#: factory functions among them: without ``dtype=``/``device=`` they make their values as ``out`` holds them
FACTORIES = frozenset("arange empty eye full linspace logspace ones rand randint randn randperm zeros".split())


def supports_out(fn, name: str | None = None):
    """``fn`` with PyTorch's keyword-only ``out=`` argument added (see the module's docstring).

    >>> import ember
    >>> def twice(input):
    ...     return input * 2
    >>> twice = supports_out(twice)
    >>> twice(ember.ones(2), out=ember.empty(2, dtype=ember.float64))
    tensor([2., 2.], dtype=ember.float64)
    """
    name = name or fn.__name__
    factory = name in FACTORIES

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        outs = _check_out(name, out)
        if is_grad_enabled() and (_requires_grad(args) or _requires_grad(kwargs.values()) or
                                  any(o.requires_grad for o in outs)):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if factory and len(outs) == 1:
            kwargs.setdefault("dtype", outs[0].dtype)
            kwargs.setdefault("device", outs[0].device)
        result = fn(*args, **kwargs)
        if isinstance(result, Tensor):
            if len(outs) != 1 or isinstance(out, (tuple, list)):
                raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
            _write(result, out)
            return out
        if len(outs) != len(result):
            raise TypeError(f"{name}(): out must be a tuple of {len(result)} tensors, but got {len(outs)}")
        for r, o in zip(result, outs):
            _write(r, o)
        return type(result)(*outs)

    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    with_out.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return with_out


def _check_out(name: str, out) -> list:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor (or a tuple of tensors for a function that "
                            f"returns several), not {type(o).__name__}")
    return outs


def _requires_grad(values) -> bool:
    for v in values:
        if isinstance(v, Tensor):
            if v.requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def _can_cast(src, dst) -> bool:
    """PyTorch's ``can_cast``: floating point into an integer type, or anything but bool into bool, is not
    allowed."""
    if src.is_floating_point and not dst.is_floating_point:
        return False
    return dst.name != "bool" or src.name == "bool"


def _write(result: Tensor, out: Tensor) -> None:
    if not _can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.scalar_type_name} can't be cast to the desired output type "
                           f"{out.dtype.scalar_type_name}")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got {out.device} instead")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=3)
        out._take_over(Tensor._make(out._device.backend.xp.empty(tuple(result.shape),
                                                                 dtype=out._data.dtype), out._device, out._dtype))
    out.copy_(result)
