"""linear and bilinear: affine maps, as F.linear and F.bilinear.

``linear`` is one op: a single matrix product of the input (flattened to two
dimensions when it has more) with the transposed weight, plus the bias added
in place. Its backward is written with ember ops, so it has a double backward;
when no graph is being built (the usual ``backward()``), the engine runs its
``backward_arrays`` straight on the arrays instead.

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.ones(2, 3, requires_grad=True)
>>> y = F.linear(x, ember.ones(4, 3), ember.zeros(4))
>>> y
tensor([[3., 3., 3., 3.],
        [3., 3., 3., 3.]], grad_fn=<AddmmBackward0>)
"""
from __future__ import annotations

from ember import Tensor, einsum, matmul
from ember._sibling_api import Op, array, autocast_casts

__all__ = ["linear", "bilinear"]


def _rows(xp, a):
    """``a`` as a matrix: its leading dimensions flattened into rows."""
    return a if a.ndim == 2 else xp.reshape(a, (-1, a.shape[-1]))


class LinearNoBias(Op):
    """``input @ weight.T`` for an input of any rank >= 1."""

    name_ = "linear_no_bias"
    backward_name = "MmBackward0"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, w, b=None):
        out = xp.matmul(_rows(xp, x), w.T)
        if b is not None:
            out += b
        return out if x.ndim == 2 else xp.reshape(out, (*x.shape[:-1], w.shape[0]))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors[:2]
        need = ctx.needs_input_grad
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        gx = matmul(g, w) if need[0] else None
        gw = matmul(g2.t(), x if x.ndim == 2 else x.reshape(-1, x.shape[-1])) if need[1] else None
        if len(need) == 2:
            return gx, gw
        return gx, gw, (g2.sum(0) if need[2] else None)

    @staticmethod
    def backward_arrays(ctx, xp, g):
        # first order: three BLAS/reduction calls on the arrays
        x, w = ctx.saved_tensors[:2]
        need = ctx.needs_input_grad
        g2 = _rows(xp, g)
        gx = xp.matmul(g, array(w)) if need[0] else None
        gw = xp.matmul(g2.T, _rows(xp, array(x))) if need[1] else None
        if len(need) == 2:
            return gx, gw
        return gx, gw, (xp.sum(g2, axis=0) if need[2] else None)


class Linear(LinearNoBias):
    """``input @ weight.T + bias``."""

    name_ = "linear"
    backward_name = "AddmmBackward0"


def _c_name(dtype) -> str:
    """The C++ type name PyTorch's matmul messages use (``float``, ``double``, ...)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int"}.get(dtype.name, dtype.name)


def _typename(x) -> str:
    return type(x).__name__


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: ``input`` is ``(*, in_features)``, ``weight`` ``(out_features, in_features)``.

    >>> import ember
    >>> ember.nn.functional.linear(ember.ones(5, 2, 3), ember.ones(4, 3)).shape
    ember.Size([5, 2, 4])
    """
    for arg, what in ((input, "input"), (weight, "weight")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"linear(): argument '{what}' (position {1 + (what == 'weight')}) must be Tensor, "
                            f"not {_typename(arg)}")
    xs, ws = array(input).shape, array(weight).shape
    if len(ws) != 2 or not xs or xs[-1] != ws[1]:
        if len(ws) != 2 or not xs:
            raise RuntimeError(f"both arguments to linear need to be at least 1D (and weight 2D), but they are "
                               f"{len(xs)}D and {len(ws)}D")
        rows = 1
        for n in xs[:-1]:
            rows *= n
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{xs[-1]} and {ws[1]}x{ws[0]})")
    dtype = weight.dtype
    if input.dtype is not dtype and not autocast_casts("linear", input):  # autocast casts them in Op.apply
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c_name(input.dtype)} != "
                           f"{_c_name(dtype)}")
    if bias is None:
        return LinearNoBias.apply(input, weight)
    if not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' must be Tensor, not {_typename(bias)}")
    if array(bias).shape != (ws[0],):
        raise RuntimeError(f"linear(): expected bias of shape [{ws[0]}] (out_features), got {bias.shape}")
    if bias.dtype is not dtype and not autocast_casts("linear", input):
        raise RuntimeError(f"linear(): bias has dtype {bias.dtype}, expected {dtype} as the weight")
    return Linear.apply(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    >>> import ember
    >>> ember.nn.functional.bilinear(ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4)).shape
    ember.Size([2, 5])
    """
    for arg, what in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"bilinear(): argument '{what}' must be Tensor, not {_typename(arg)}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got shape "
                           f"{weight.shape}")
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {a} and {b}")
    for i, x in ((1, input1), (2, input2)):
        if x.dim() == 0 or x.shape[-1] != weight.shape[i]:
            raise RuntimeError(f"bilinear(): input{i} size does not match weight size: got "
                               f"{x.shape[-1] if x.dim() else 0} but expected {weight.shape[i]}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != weight.shape[0]:
            got = bias.shape[0] if bias.dim() == 1 else list(bias.shape)
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but expected "
                               f"{weight.shape[0]}")
        out = out + bias
    return out
