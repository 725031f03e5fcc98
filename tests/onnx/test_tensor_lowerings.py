"""Each tensor-op lowering, run in onnxruntime and compared with ember's output (``ember.onnx.verify``).

ember's own results are checked against NumPy in tests/core; here the question is whether the ONNX graph computes
the same thing. Each case also names an ONNX op type its graph must contain, so that a case cannot pass by being
constant-folded away.
"""
import numpy as np
import pytest

import ember
import ember.onnx
from ember.ops.activation import (
    celu,
    elu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    selu,
    silu,
    softplus,
    softshrink,
    threshold,
)


def _x(*shape, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.1, 2.0, shape) if positive else rng.standard_normal(shape)
    return ember.tensor(a.astype(np.float32))


X = _x(2, 3, 4)
P = _x(2, 3, 4, positive=True)
W = _x(4, 5, seed=1)
U = _x(3, 4, seed=2)

# (id, function of the inputs, inputs, an ONNX op type the graph must contain)
CASES = [
    ("add", lambda a, b: a + b, (X, U), "Add"),
    ("add_scalar", lambda a: a + 1.5, (X,), "Add"),
    ("add_alpha", lambda a, b: ember.add(a, b, alpha=2.0), (X, U), "Add"),
    ("sub", lambda a, b: a - b, (X, U), "Sub"),
    ("rsub", lambda a: 2.0 - a, (X,), "Sub"),
    ("mul", lambda a, b: a * b, (X, U), "Mul"),
    ("mul_scalar", lambda a: a * 3, (X,), "Mul"),
    ("div", lambda a, b: a / b, (X, P), "Div"),
    ("rdiv", lambda a: 2.0 / a, (P,), "Div"),
    ("div_trunc_int64", lambda a, b: ember.div(a, b, rounding_mode="trunc"),
     (ember.tensor([7, -7, 7, -7, 2**63 - 1, -(2**63) + 1, 5, 0]), ember.tensor([2, 2, -2, -2, 3, 7, -5, 3])), "Div"),
    ("neg", lambda a: -a, (X,), "Neg"),
    ("pow_scalar", lambda a: a ** 2, (X,), "Pow"),
    ("pow_tensor", lambda a, b: a ** b, (P, X), "Pow"),
    ("rpow", lambda a: 2.0 ** a, (X,), "Pow"),
    ("exp", ember.exp, (X,), "Exp"),
    ("log", ember.log, (P,), "Log"),
    ("log2", ember.log2, (P,), "Log"),
    ("log1p", ember.log1p, (P,), "Log"),
    ("expm1", ember.expm1, (X,), "Exp"),
    ("sqrt", ember.sqrt, (P,), "Sqrt"),
    ("rsqrt", ember.rsqrt, (P,), "Sqrt"),
    ("abs", ember.abs, (X,), "Abs"),
    ("tanh", ember.tanh, (X,), "Tanh"),
    ("sigmoid", ember.sigmoid, (X,), "Sigmoid"),
    ("erf", ember.erf, (X,), "Erf"),
    ("sin", ember.sin, (X,), "Sin"),
    ("reciprocal", ember.reciprocal, (P,), "Reciprocal"),
    ("floor", ember.floor, (X,), "Floor"),
    ("square", ember.square, (X,), "Pow"),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), (X,), "Clip"),
    ("clamp_min", lambda a: a.clamp(min=0.1), (X,), "Clip"),
    ("maximum", ember.maximum, (X, U), "Max"),
    ("relu", ember.relu, (X,), "Relu"),
    ("gelu", lambda a: ember.nn.functional.gelu(a), (X,), "Erf"),
    ("gelu_tanh", lambda a: ember.nn.functional.gelu(a, approximate="tanh"), (X,), "Tanh"),
    ("silu", silu, (X,), "Sigmoid"),
    ("softplus", softplus, (X,), "Softplus"),
    ("softplus_beta", lambda a: softplus(a * 10, beta=2.0, threshold=5.0), (X,), "Softplus"),
    ("leaky_relu", lambda a: leaky_relu(a, 0.2), (X,), "LeakyRelu"),
    ("elu", elu, (X,), "Elu"),
    ("selu", selu, (X,), "Exp"),
    ("celu", lambda a: celu(a, 0.5), (X,), "Exp"),
    ("hardtanh", hardtanh, (X,), "Clip"),
    ("hardsigmoid", hardsigmoid, (X,), "HardSigmoid"),
    ("hardswish", hardswish, (X,), "HardSwish"),
    ("threshold", lambda a: threshold(a, 0.1, 20.0), (X,), "Where"),
    ("hardshrink", hardshrink, (X,), "Shrink"),
    ("softshrink", softshrink, (X,), "Shrink"),
    ("mish", mish, (X,), "Softplus"),
    ("logsigmoid", logsigmoid, (X,), "Softplus"),
    ("matmul", lambda a, b: a @ b, (X, W), "MatMul"),
    ("matmul_vec", lambda a, b: a @ b, (U, _x(4, seed=3)), "MatMul"),
    ("mm", ember.mm, (U, W), "MatMul"),
    ("bmm", ember.bmm, (X, _x(2, 4, 3, seed=4)), "MatMul"),
    ("addmm", lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2.0), (_x(5), U, W), "MatMul"),
    ("einsum", lambda a, b: ember.einsum("bij,jk->bik", a, b), (X, W), "Einsum"),
    ("view", lambda a: a.view(6, 4), (X,), "Reshape"),
    ("reshape_infer", lambda a: a.reshape(-1, 2), (X,), "Reshape"),
    ("flatten", lambda a: a.flatten(1), (X,), "Reshape"),
    ("unflatten", lambda a: a.unflatten(2, (2, 2)), (X,), "Reshape"),
    ("permute", lambda a: a.permute(2, 0, 1), (X,), "Transpose"),
    ("transpose", lambda a: a.transpose(0, 2), (X,), "Transpose"),
    ("t", lambda a: a.t(), (U,), "Transpose"),
    ("squeeze", lambda a: a.view(2, 1, 12).squeeze(1), (X,), "Squeeze"),
    ("unsqueeze", lambda a: a.unsqueeze(1), (X,), "Unsqueeze"),
    ("expand", lambda a: a[:, :1].expand(2, 3, 4) * 1, (X,), "Expand"),
    ("contiguous", lambda a: a.transpose(0, 1).contiguous(), (X,), "Transpose"),
    ("clone", lambda a: a.clone() + 1, (X,), "Identity"),
    ("slice", lambda a: a[:, 1:, ::2], (X,), "Slice"),
    ("select", lambda a: a[1, :, 2], (X,), "Squeeze"),
    ("index_none", lambda a: a[None, 0], (X,), "Unsqueeze"),
    ("narrow", lambda a: a.narrow(2, 1, 2), (X,), "Slice"),
    ("cat", lambda a, b: ember.cat([a, b], dim=1), (X, _x(2, 2, 4, seed=5)), "Concat"),
    ("stack", lambda a, b: ember.stack([a, b], dim=1), (X, P), "Concat"),
    ("split", lambda a: a.split([1, 3], dim=2), (X,), "Slice"),
    ("chunk", lambda a: a.chunk(2, dim=2), (X,), "Slice"),
    ("unbind", lambda a: a.unbind(1), (X,), "Squeeze"),
    ("flip", lambda a: a.flip(1), (X,), "Slice"),
    ("repeat", lambda a: a.repeat(1, 2, 1), (X,), "Tile"),
    ("tril", lambda a: a.tril(), (U,), "Trilu"),
    ("sum_all", lambda a: a.sum(), (X,), "ReduceSum"),
    ("sum_dim", lambda a: a.sum(1), (X,), "ReduceSum"),
    ("sum_keepdim", lambda a: a.sum((0, 2), keepdim=True), (X,), "ReduceSum"),
    ("mean", lambda a: a.mean(-1), (X,), "ReduceMean"),
    ("mean_all", lambda a: a.mean(), (X,), "ReduceMean"),
    ("amax", lambda a: a.amax(1, keepdim=True), (X,), "ReduceMax"),
    ("amin", lambda a: a.amin(2), (X,), "ReduceMin"),
    ("max_all", lambda a: a.max(), (X,), "ReduceMax"),
    ("max_dim", lambda a: a.max(1), (X,), "ArgMax"),
    ("min_dim_keepdim", lambda a: a.min(2, keepdim=True), (X,), "ArgMin"),
    ("argmax", lambda a: a.argmax(-1), (X,), "ArgMax"),
    ("argmax_all", lambda a: a.argmax(), (X,), "ArgMax"),
    ("logsumexp", lambda a: a.logsumexp(1), (X,), "ReduceLogSumExp"),
    ("cumsum", lambda a: a.cumsum(1), (X,), "CumSum"),
    ("softmax", lambda a: a.softmax(-1), (X,), "Softmax"),
    ("softmax_dim0", lambda a: a.softmax(0), (X,), "Softmax"),
    ("log_softmax", lambda a: a.log_softmax(1), (X,), "LogSoftmax"),
    ("gt", lambda a, b: a > b, (X, U), "Greater"),
    ("le_scalar", lambda a: a <= 0.2, (X,), "LessOrEqual"),
    ("eq", lambda a: a.floor() == 0, (X,), "Equal"),
    ("ne", lambda a: a.floor() != 0, (X,), "Not"),
    ("logical_and", lambda a, b: ember.logical_and(a > 0, b), (X, U), "And"),
    ("logical_or", lambda a, b: ember.logical_or(a, b > 0), (X, U), "Or"),
    ("logical_not", lambda a: ember.logical_not(a.floor()), (X,), "Not"),
    ("invert_bool", lambda a: ~(a > 0), (X,), "Not"),
    ("all_dim", lambda a: (a > -1).all(1), (X,), "ReduceMin"),
    ("any_all", lambda a: (a > 1).any(), (X,), "ReduceMax"),
    ("where", lambda a, b: ember.where(a > 0, a, b), (X, U), "Where"),
    ("where_scalar", lambda a: ember.where(a > 0, a, 0.0), (X,), "Where"),
    ("masked_fill", lambda a: a.masked_fill(a < 0, -1e9), (X,), "Where"),
    ("to_float64", lambda a: a.to(ember.float64) * 2, (X,), "Cast"),
    ("to_int", lambda a: (a * 3).to(ember.int64), (X,), "Cast"),
    ("index_select", lambda a: a.index_select(1, ember.tensor([2, 0])), (X,), "Gather"),
    ("gather", lambda a: a.gather(2, ember.tensor([[[0], [3], [1]], [[2], [2], [0]]])), (X,), "GatherElements"),
    ("index_tensor", lambda a: a[ember.tensor([1, 0, 1])], (X,), "Gather"),
    ("index_tensor_dim1", lambda a: a[:, ember.tensor([2, 0])], (X,), "Gather"),
]


@pytest.mark.parametrize("fn, inputs, op_type", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lowering_matches_onnxruntime(fn, inputs, op_type):
    diffs = ember.onnx.verify(fn, inputs, rtol=1e-5, atol=1e-5)
    assert all(d <= 1e-5 for d in diffs)
    proto = ember.onnx.build_model(fn, inputs)
    assert op_type in {n.op_type for n in proto.graph.node}


def test_scalar_constants_take_the_op_dtype():
    # float64 input plus a Python float: the constant must be float64 too, or ONNX's type check fails
    x = ember.tensor([[1.0, 2.0]], dtype=ember.float64)
    assert ember.onnx.verify(lambda a: a * 0.5 + 1, x) == [0.0]


def test_integer_arithmetic():
    x = ember.tensor([[1, 2, 3]])
    assert ember.onnx.verify(lambda a: a * 2 + a.sum(), x) == [0.0]


@pytest.mark.parametrize("fn, op_type", [(lambda a: ~(a * 4).to(ember.int32), "BitwiseNot"),
                                         (lambda a: (a * 4).to(ember.int64) & 6, "BitwiseAnd"),
                                         (lambda a: (a * 4).to(ember.int64) | 1, "BitwiseOr")])
def test_bitwise_ops_need_opset_18(fn, op_type):
    with pytest.raises(ember.onnx.UnsupportedExportError, match=f"ONNX has {op_type} from opset 18"):
        ember.onnx.build_model(fn, X)
    assert ember.onnx.verify(fn, X, opset_version=18) == [0.0]


@pytest.mark.parametrize("opset", [18, 20])
@pytest.mark.parametrize("fn", [lambda a: a.mean(-1), lambda a: a.amax((0, 2)), lambda a: a.sum(1, keepdim=True),
                                lambda a: a.logsumexp(1), lambda a: a.max(1)[0], lambda a: (a > 0).all(2)],
                         ids=["mean", "amax", "sum", "logsumexp", "max_dim", "all"])
def test_reductions_take_axes_as_an_input_from_opset_18(fn, opset):
    assert max(ember.onnx.verify(fn, X, opset_version=opset)) <= 1e-5
