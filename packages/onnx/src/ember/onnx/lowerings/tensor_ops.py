"""ONNX lowerings of the tensor ops: arithmetic, pointwise, activations, matmul, shapes and views, reductions,
softmax, comparisons, indexing.

Each lowering is ``lowering(g, node) -> list of output names`` (see :mod:`ember.onnx`). The shape and
indexing lowerings are in :mod:`.tensor_shapes` and part of this table; its helpers :func:`shape_input` and
:func:`reshape` (a target shape that keeps the dynamic axes free) can be imported from here too.
"""
from __future__ import annotations

import math

import numpy as np

from .._graph import onnx_dtype
from . import tensor_shapes
from .tensor_shapes import _ints, reshape, shape_input  # noqa: F401 - reshape, shape_input: for other lowerings


# -- helpers -------------------------------------------------------------------------------------------------------
def _scalar(g, node, value, index=0):
    """A constant of the dtype of output ``index`` (the dtype the op computes in)."""
    return g.const(np.asarray(value, dtype=np.dtype(node.output_dtypes[index].name)))


def _axes_arg(g, op_type, x, axes, keepdims, since=18):
    """A reduction node; ``axes`` as an input from opset ``since`` on, an attribute before."""
    if axes is None:
        return g.op(op_type, x, keepdims=int(keepdims))
    axes = [int(a) for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
    if g.opset >= since:
        return g.op(op_type, x, _ints(g, axes), keepdims=int(keepdims))
    return g.op(op_type, x, axes=axes, keepdims=int(keepdims))


# -- elementwise ---------------------------------------------------------------------------------------------------
def _unary(op_type):
    def lower(g, node):
        return [g.op(op_type, node.inputs[0])]
    lower.__name__ = f"lower_{op_type.lower()}"
    return lower


def _binary(op_type):
    def lower(g, node):
        return [g.op(op_type, node.inputs[0], node.inputs[1])]
    lower.__name__ = f"lower_{op_type.lower()}"
    return lower


def _add_sub(op_type):
    def lower(g, node):
        a, b = node.inputs[:2]
        alpha = node.attrs.get("alpha", 1)
        if alpha != 1:
            b = g.op("Mul", b, _scalar(g, node, alpha))
        return [g.op(op_type, a, b)]
    return lower


def lower_mul(g, node):
    out = g.op("Mul", node.inputs[0], node.inputs[1])
    scale = node.attrs.get("scale", 1)
    return [out if scale == 1 else g.op("Mul", out, _scalar(g, node, scale))]


def _then(op_type, const, first=False):
    """``op_type(f(x), c)`` (or ``op_type(c, f(x))``) after a unary ONNX op ``f``: exp2, log2, expm1 ..."""
    def make(inner):
        def lower(g, node):
            x = g.op(inner, node.inputs[0]) if inner else node.inputs[0]
            c = _scalar(g, node, const)
            return [g.op(op_type, c, x) if first else g.op(op_type, x, c)]
        return lower
    return make


def lower_log1p(g, node):
    return [g.op("Log", g.op("Add", node.inputs[0], _scalar(g, node, 1)))]


def lower_frac(g, node):
    x = node.inputs[0]
    return [g.op("Sub", x, g.op("Mul", g.op("Sign", x), g.op("Floor", g.op("Abs", x))))]


def lower_round(g, node):
    decimals = node.attrs.get("decimals", 0)
    if not decimals:
        return [g.op("Round", node.inputs[0])]
    scale = _scalar(g, node, 10.0 ** decimals)
    return [g.op("Div", g.op("Round", g.op("Mul", node.inputs[0], scale)), scale)]


def lower_pow(g, node):
    return [g.op("Pow", node.inputs[0], node.inputs[1])]


def lower_clamp(g, node):
    x = node.inputs[0]
    if "lo" in node.attrs or "hi" in node.attrs or len(node.inputs) == 1:
        lo, hi = node.attrs.get("lo"), node.attrs.get("hi")
        return [g.op("Clip", x, None if lo is None else _scalar(g, node, lo),
                     None if hi is None else _scalar(g, node, hi))]
    lo, hi = node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else None
    if lo is not None:
        x = g.op("Max", x, lo)
    if hi is not None:
        x = g.op("Min", x, hi)
    return [x]


def _as_bool(g, node, i):
    x = node.inputs[i]
    return x if node.input_dtypes[i].name == "bool" else g.op("Not", g.op("Equal", x, g.const(
        np.zeros((), dtype=np.dtype(node.input_dtypes[i].name)))))


def _logical(op_type):
    def lower(g, node):
        if op_type == "Not":
            return [g.op("Not", _as_bool(g, node, 0))]
        return [g.op(op_type, _as_bool(g, node, 0), _as_bool(g, node, 1))]
    return lower


def _bitwise(op_type):
    def lower(g, node):
        if g.opset < 18:
            g.unsupported(node, f"ONNX has {op_type} from opset 18 on (export with opset_version=18)")
        return [g.op(op_type, *node.inputs[:2])]
    return lower


def lower_bitwise_not(g, node):
    if node.input_dtypes[0].name != "bool":
        return _bitwise("BitwiseNot")(g, node)
    return [g.op("Not", node.inputs[0])]


def _all_any(reduce_op):
    def lower(g, node):
        x = g.op("Cast", _as_bool(g, node, 0), to=onnx_dtype(np.int32))
        out = _axes_arg(g, reduce_op, x, node.attrs.get("dims"), node.attrs.get("keepdim", False))
        return [g.op("Cast", out, to=onnx_dtype(node.output_dtypes[0]))]
    return lower


def lower_ne(g, node):
    return [g.op("Not", g.op("Equal", node.inputs[0], node.inputs[1]))]


def lower_where(g, node):
    return [g.op("Where", *node.inputs[:3])]


def lower_masked_fill(g, node):
    a, mask, value = node.inputs[:3]
    if node.input_dtypes[2] is not None and node.input_dtypes[2] != node.output_dtypes[0]:
        value = g.op("Cast", value, to=onnx_dtype(node.output_dtypes[0]))
    return [g.op("Where", mask, value, a)]


def lower_to(g, node):
    if node.input_dtypes[0] == node.output_dtypes[0]:
        return [g.op("Identity", node.inputs[0])]
    return [g.op("Cast", node.inputs[0], to=onnx_dtype(node.output_dtypes[0]))]


def lower_isnan(g, node):
    return [g.op("IsNaN", node.inputs[0])]


def lower_isinf(g, node):
    return [g.op("IsInf", node.inputs[0])]


def lower_isposinf(g, node):
    return [g.op("IsInf", node.inputs[0], detect_negative=0)]


def lower_isneginf(g, node):
    return [g.op("IsInf", node.inputs[0], detect_positive=0)]


def lower_isfinite(g, node):
    x = node.inputs[0]
    return [g.op("Not", g.op("Or", g.op("IsInf", x), g.op("IsNaN", x)))]


# -- activations ---------------------------------------------------------------------------------------------------
_SQRT_HALF = math.sqrt(0.5)
_TANH_SCALE = math.sqrt(2.0 / math.pi)


def lower_gelu(g, node):
    x = node.inputs[0]
    half = g.op("Mul", x, _scalar(g, node, 0.5))
    if node.attrs.get("approximate", "none") == "tanh":
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, _scalar(g, node, 0.044715)))
        t = g.op("Tanh", g.op("Mul", inner, _scalar(g, node, _TANH_SCALE)))
    else:
        t = g.op("Erf", g.op("Mul", x, _scalar(g, node, _SQRT_HALF)))
    return [g.op("Mul", half, g.op("Add", t, _scalar(g, node, 1.0)))]


def lower_silu(g, node):
    x = node.inputs[0]
    return [g.op("Mul", x, g.op("Sigmoid", x))]


def lower_softplus(g, node):
    x = node.inputs[0]
    beta, threshold = node.attrs.get("beta", 1.0), node.attrs.get("threshold", 20.0)
    bx = x if beta == 1 else g.op("Mul", x, _scalar(g, node, beta))
    soft = g.op("Softplus", bx)
    if beta != 1:
        soft = g.op("Div", soft, _scalar(g, node, beta))
    return [g.op("Where", g.op("Greater", bx, _scalar(g, node, threshold)), x, soft)]


def lower_leakyrelu(g, node):
    return [g.op("LeakyRelu", node.inputs[0], alpha=float(node.attrs.get("negative_slope", 0.01)))]


def lower_hardtanh(g, node):
    a = node.attrs
    return [g.op("Clip", node.inputs[0], _scalar(g, node, a.get("min_val", -1.0)),
                 _scalar(g, node, a.get("max_val", 1.0)))]


def lower_hardsigmoid(g, node):
    return [g.op("HardSigmoid", node.inputs[0], alpha=1.0 / 6, beta=0.5)]


def lower_threshold(g, node):
    x = node.inputs[0]
    t, v = node.attrs.get("threshold", 0.0), node.attrs.get("value", 0.0)
    return [g.op("Where", g.op("Greater", x, _scalar(g, node, t)), x, _scalar(g, node, v))]


def lower_hardshrink(g, node):
    return [g.op("Shrink", node.inputs[0], lambd=float(node.attrs.get("lambd", 0.5)))]


def lower_softshrink(g, node):
    lambd = float(node.attrs.get("lambd", 0.5))
    return [g.op("Shrink", node.inputs[0], lambd=lambd, bias=lambd)]


def lower_elu(g, node):
    x = node.inputs[0]
    alpha, scale, input_scale = (node.attrs.get(k, 1.0) for k in ("alpha", "scale", "input_scale"))
    if scale == 1 and input_scale == 1:
        return [g.op("Elu", x, alpha=float(alpha))]
    neg = g.op("Mul", g.op("Min", x, _scalar(g, node, 0.0)), _scalar(g, node, input_scale))
    neg = g.op("Mul", g.op("Sub", g.op("Exp", neg), _scalar(g, node, 1.0)), _scalar(g, node, alpha * scale))
    pos = g.op("Mul", x, _scalar(g, node, scale))
    return [g.op("Where", g.op("Greater", x, _scalar(g, node, 0.0)), pos, neg)]


def lower_mish(g, node):
    x = node.inputs[0]
    return [g.op("Mul", x, g.op("Tanh", g.op("Softplus", x)))]


def lower_logsigmoid(g, node):
    return [g.op("Neg", g.op("Softplus", g.op("Neg", node.inputs[0])))]


def _softmax(op_type):
    def lower(g, node):
        if not node.input_shapes[0]:
            return [g.op("Sub", node.inputs[0], node.inputs[0]) if op_type == "LogSoftmax"
                    else g.op("Div", node.inputs[0], node.inputs[0])]
        return [g.op(op_type, node.inputs[0], axis=int(node.op.dim))]
    return lower


# -- matrix products -----------------------------------------------------------------------------------------------
def lower_matmul(g, node):
    return [g.op("MatMul", node.inputs[0], node.inputs[1])]


def lower_addmm(g, node):
    c, a, b = node.inputs[:3]
    alpha, beta = node.attrs.get("alpha", 1), node.attrs.get("beta", 1)
    prod = g.op("MatMul", a, b)
    if alpha != 1:
        prod = g.op("Mul", prod, _scalar(g, node, alpha))
    if beta == 0:
        return [prod]
    if beta != 1:
        c = g.op("Mul", c, _scalar(g, node, beta))
    return [g.op("Add", prod, c)]


def lower_einsum(g, node):
    equation = ",".join(node.attrs["terms"]) + "->" + node.attrs["out"]
    return [g.op("Einsum", *node.inputs, equation=equation)]


# -- reductions ----------------------------------------------------------------------------------------------------
def lower_sum(g, node):
    x = node.inputs[0]
    dtype = node.attrs.get("dtype")
    if dtype is not None and dtype != node.input_dtypes[0] or node.output_dtypes[0] != node.input_dtypes[0]:
        x = g.op("Cast", x, to=onnx_dtype(node.output_dtypes[0]))
    return [_axes_arg(g, "ReduceSum", x, node.attrs.get("dims"), node.attrs.get("keepdim", False), since=13)]


def _reduce(op_type, dims_key="dims"):
    def lower(g, node):
        x = node.inputs[0]
        if node.output_dtypes[0] != node.input_dtypes[0]:
            x = g.op("Cast", x, to=onnx_dtype(node.output_dtypes[0]))
        return [_axes_arg(g, op_type, x, node.attrs.get(dims_key), node.attrs.get("keepdim", False))]
    return lower


def _max_min(reduce_op, arg_op):
    def lower(g, node):
        x = node.inputs[0]
        if len(node.output_shapes) == 1:  # over all elements
            return [_axes_arg(g, reduce_op, x, None, False)]
        dim, keepdim = int(node.attrs.get("dim", 0)), bool(node.attrs.get("keepdim", False))
        values = _axes_arg(g, reduce_op, x, [dim], keepdim)
        indices = g.op(arg_op, x, axis=dim, keepdims=int(keepdim), select_last_index=0)
        return [values, indices]
    return lower


def _arg(op_type):
    def lower(g, node):
        x, dim, keepdim = node.inputs[0], node.attrs.get("dim"), bool(node.attrs.get("keepdim", False))
        if dim is None:
            x = g.op("Reshape", x, _ints(g, [-1]))
            out = g.op(op_type, x, axis=0, keepdims=0)
            if keepdim:
                out = g.op("Reshape", out, _ints(g, [1] * len(node.input_shapes[0])))
            return [out]
        return [g.op(op_type, x, axis=int(dim), keepdims=int(keepdim))]
    return lower


def lower_cumsum(g, node):
    return [g.op("CumSum", node.inputs[0], g.const(np.asarray(int(node.attrs.get("dim", 0)), dtype=np.int64)))]


_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "tanh": "Tanh", "sigmoid": "Sigmoid",
          "erf": "Erf", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
          "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
          "reciprocal": "Reciprocal", "neg": "Neg", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
          "relu": "Relu", "hardswish": "HardSwish"}
_BINARY = {"div": "Div", "truncdivide": "Div", "maximum": "Max", "minimum": "Min", "eq": "Equal", "gt": "Greater",
           "ge": "GreaterOrEqual", "lt": "Less", "le": "LessOrEqual", "fmod": "Mod", "fmod_scalar": "Mod"}
# one lowering each for an op and its variant (a reduction over all elements and over dims; a scalar operand)
_lower_sub = _add_sub("Sub")
_lower_mean, _lower_prod = _reduce("ReduceMean"), _reduce("ReduceProd", "dim")
_lower_max, _lower_min = _max_min("ReduceMax", "ArgMax"), _max_min("ReduceMin", "ArgMin")

LOWERINGS: dict = {
    **{name: _unary(op) for name, op in _UNARY.items()},
    **{name: _binary(op) for name, op in _BINARY.items()},
    "add": _add_sub("Add"), "sub": _lower_sub, "rsub_scalar": _lower_sub, "mul": lower_mul,
    "pow": lower_pow, "pow_tensor": lower_pow, "pow_scalar_base": lower_pow,
    "rsqrt": lambda g, node: [g.op("Reciprocal", g.op("Sqrt", node.inputs[0]))],
    "exp2": _then("Pow", 2.0, first=True)(None),
    "log2": _then("Div", math.log(2.0))("Log"), "log10": _then("Div", math.log(10.0))("Log"),
    "expm1": _then("Sub", 1.0)("Exp"), "log1p": lower_log1p, "frac": lower_frac,
    "trunc": lambda g, node: [g.op("Mul", g.op("Sign", node.inputs[0]), g.op("Floor", g.op("Abs", node.inputs[0])))],
    "round": lower_round, "round_decimals": lower_round, "clamp": lower_clamp, "clamp_scalar": lower_clamp,
    "ne": lower_ne, "where": lower_where,
    "maskedfill": lower_masked_fill, "maskedfilltensor": lower_masked_fill, "to": lower_to,
    "isnan": lower_isnan, "isinf": lower_isinf, "isposinf": lower_isposinf, "isneginf": lower_isneginf,
    "isfinite": lower_isfinite,
    "logicaland": _logical("And"), "logicalor": _logical("Or"), "logicalxor": _logical("Xor"),
    "logicalnot": _logical("Not"), "bitwisenot": lower_bitwise_not,
    "bitwiseand": _bitwise("BitwiseAnd"), "bitwiseor": _bitwise("BitwiseOr"), "bitwisexor": _bitwise("BitwiseXor"),
    "all": _all_any("ReduceMin"), "any": _all_any("ReduceMax"),
    "gelu": lower_gelu, "silu": lower_silu, "softplus": lower_softplus, "leakyrelu": lower_leakyrelu,
    "hardtanh": lower_hardtanh, "hardsigmoid": lower_hardsigmoid, "threshold": lower_threshold,
    "hardshrink": lower_hardshrink, "softshrink": lower_softshrink, "elu": lower_elu, "selu": lower_elu,
    "celu": lower_elu, "mish": lower_mish, "logsigmoid": lower_logsigmoid,
    "softmax": _softmax("Softmax"), "logsoftmax": _softmax("LogSoftmax"),
    "matmul": lower_matmul, "mm": lower_matmul, "bmm": lower_matmul, "mv": lower_matmul, "dot": lower_matmul,
    "addmm": lower_addmm, "baddbmm": lower_addmm, "einsum": lower_einsum,
    **tensor_shapes.LOWERINGS,
    "sum": lower_sum, "sum_dim": lower_sum, "mean": _lower_mean, "mean_dim": _lower_mean,
    "prod": _lower_prod, "prod_dim": _lower_prod,
    "amax": _reduce("ReduceMax"), "amin": _reduce("ReduceMin"), "logsumexp": _reduce("ReduceLogSumExp"),
    "max": _lower_max, "max_dim": _lower_max, "min": _lower_min, "min_dim": _lower_min,
    "argmax": _arg("ArgMax"), "argmin": _arg("ArgMin"), "cumsum": lower_cumsum,
}
