"""The op suite in float16/bfloat16: one call per op, written against ``lib`` (``ember``; the same code ran
against PyTorch 2.13 by hand to check dtypes and refusals), with its inputs described by short specs.

A spec is ``"kind:shape"``: ``n`` normal, ``p`` positive (0.5..2), ``g`` greater than one (1.2..3), ``u`` in
(-0.9, 0.9), ``q`` a probability (0.05..0.95), ``s`` a symmetric positive definite matrix, ``b`` a bool mask,
``iK`` int64 indices below K, ``c`` and ``k`` constant floating inputs (no gradient asked; ``k`` positive).
Floating inputs are made in the reduced dtype; the reference runs on the same values in float32.

This module imports neither ember nor PyTorch: the test passes ``lib``.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, NamedTuple

import numpy as np


class Case(NamedTuple):
    id: str
    fn: Callable[..., Any]
    specs: tuple
    grad: bool = True
    #: draws random numbers: only the dtype, the shape and finiteness are compared
    random: bool = False
    #: a reduction over many elements, or a chain of them: a looser tolerance
    loose: bool = False


def _F(lib):
    return lib.nn.functional


def _rnn(kind):
    def run(lib, x):
        lib.manual_seed(0)
        m = getattr(lib.nn, kind)(4, 3, batch_first=True).to(x.dtype)
        return m(x)[0]
    return run


def _bn(training):
    def run(lib, x, rm, rv, w, b):
        return _F(lib).batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
    return run


M = "n:3,4"
V = "n:5"
X4 = "n:2,3,6,6"
X3 = "n:2,3,8"
_c = [
    # -- pointwise ------------------------------------------------------------------------------------------
    Case("abs", lambda lib, x: lib.abs(x), (M,)),
    Case("acos", lambda lib, x: lib.acos(x), ("u:3,4",)),
    Case("acosh", lambda lib, x: lib.acosh(x), ("g:3,4",)),
    Case("asin", lambda lib, x: lib.asin(x), ("u:3,4",)),
    Case("asinh", lambda lib, x: lib.asinh(x), (M,)),
    Case("atan", lambda lib, x: lib.atan(x), (M,)),
    Case("atanh", lambda lib, x: lib.atanh(x), ("u:3,4",)),
    Case("atan2", lambda lib, x, y: lib.atan2(x, y), (M, "p:3,4")),
    Case("ceil", lambda lib, x: lib.ceil(x), (M,)),
    Case("floor", lambda lib, x: lib.floor(x), (M,)),
    Case("trunc", lambda lib, x: lib.trunc(x), (M,)),
    Case("round", lambda lib, x: lib.round(x), (M,)),
    Case("round_decimals", lambda lib, x: lib.round(x, decimals=1), (M,)),
    Case("frac", lambda lib, x: lib.frac(x), (M,)),
    Case("cos", lambda lib, x: lib.cos(x), (M,)),
    Case("cosh", lambda lib, x: lib.cosh(x), (M,)),
    Case("sin", lambda lib, x: lib.sin(x), (M,)),
    Case("sinh", lambda lib, x: lib.sinh(x), (M,)),
    Case("tan", lambda lib, x: lib.tan(x), ("u:3,4",)),
    Case("tanh", lambda lib, x: lib.tanh(x), (M,)),
    Case("sinc", lambda lib, x: lib.sinc(x), (M,)),
    Case("deg2rad", lambda lib, x: lib.deg2rad(x), (M,)),
    Case("rad2deg", lambda lib, x: lib.rad2deg(x), (M,)),
    Case("erf", lambda lib, x: lib.erf(x), (M,)),
    Case("exp", lambda lib, x: lib.exp(x), (M,)),
    Case("exp2", lambda lib, x: lib.exp2(x), (M,)),
    Case("expm1", lambda lib, x: lib.expm1(x), (M,)),
    Case("log", lambda lib, x: lib.log(x), ("p:3,4",)),
    Case("log10", lambda lib, x: lib.log10(x), ("p:3,4",)),
    Case("log1p", lambda lib, x: lib.log1p(x), ("p:3,4",)),
    Case("log2", lambda lib, x: lib.log2(x), ("p:3,4",)),
    Case("logit", lambda lib, x: lib.logit(x), ("q:3,4",)),
    Case("sqrt", lambda lib, x: lib.sqrt(x), ("p:3,4",)),
    Case("rsqrt", lambda lib, x: lib.rsqrt(x), ("p:3,4",)),
    Case("reciprocal", lambda lib, x: lib.reciprocal(x), ("p:3,4",)),
    Case("neg", lambda lib, x: lib.neg(x), (M,)),
    Case("sign", lambda lib, x: lib.sign(x), (M,)),
    Case("sgn", lambda lib, x: lib.sgn(x), (M,)),
    Case("signbit", lambda lib, x: lib.signbit(x), (M,), grad=False),
    Case("sigmoid", lambda lib, x: lib.sigmoid(x), (M,)),
    Case("nantonum", lambda lib, x: lib.nan_to_num(x / (x > 0), neginf=-7.0), (M,), grad=False),
    Case("xlogy", lambda lib, x, y: lib.xlogy(x, y), (M, "p:3,4")),
    Case("copysign", lambda lib, x, y: lib.copysign(x, y), (M, M)),
    Case("hypot", lambda lib, x, y: lib.hypot(x, y), (M, M)),
    Case("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), (M, M)),
    Case("logaddexp2", lambda lib, x, y: lib.logaddexp2(x, y), (M, M)),
    Case("fmax", lambda lib, x, y: lib.fmax(x, y), (M, M)),
    Case("fmin", lambda lib, x, y: lib.fmin(x, y), (M, M)),
    Case("maximum", lambda lib, x, y: lib.maximum(x, y), (M, M)),
    Case("minimum", lambda lib, x, y: lib.minimum(x, y), (M, M)),
    Case("fmod", lambda lib, x, y: lib.fmod(x, y), (M, "p:3,4")),
    Case("fmod_scalar", lambda lib, x: lib.fmod(x, 0.7), (M,)),
    Case("remainder", lambda lib, x, y: lib.remainder(x, y), (M, "p:3,4")),
    Case("remainder_scalar", lambda lib, x: lib.remainder(x, 0.7), (M,)),
    Case("floordivide", lambda lib, x, y: lib.floor_divide(x, y), (M, "p:3,4"), grad=False),
    Case("lerp", lambda lib, x, y, w: lib.lerp(x, y, w), (M, M, "q:3,4")),
    Case("lerp_scalar", lambda lib, x, y: lib.lerp(x, y, 0.3), (M, M)),
    Case("clamp", lambda lib, x, lo: lib.clamp(x, lo, lo + 1), (M, M)),
    Case("clamp_scalar", lambda lib, x: lib.clamp(x, -0.5, 0.5), (M,)),
    # -- arithmetic -----------------------------------------------------------------------------------------
    Case("add", lambda lib, x, y: x + y * 2, (M, "n:4")),
    Case("sub", lambda lib, x, y: x - y, (M, M)),
    Case("mul", lambda lib, x, y: x * y, (M, M)),
    Case("div", lambda lib, x, y: x / y, (M, "p:3,4")),
    Case("rsub_scalar", lambda lib, x: 1 - x, (M,)),
    Case("pow", lambda lib, x: x ** 2.5, ("p:3,4",)),
    Case("pow_scalar_base", lambda lib, x: 2 ** x, (M,)),
    Case("pow_tensor", lambda lib, x, y: x ** y, ("p:3,4", M)),
    # -- comparisons and predicates -------------------------------------------------------------------------
    Case("eq", lambda lib, x, y: lib.eq(x, y.round()), (M, M), grad=False),
    Case("ne", lambda lib, x, y: x != y, (M, M), grad=False),
    Case("lt", lambda lib, x, y: x < y, (M, M), grad=False),
    Case("le", lambda lib, x, y: x <= y, (M, M), grad=False),
    Case("gt", lambda lib, x, y: x > y, (M, M), grad=False),
    Case("ge", lambda lib, x, y: x >= y, (M, M), grad=False),
    Case("isclose", lambda lib, x, y: lib.isclose(x, y, atol=0.5), (M, M), grad=False),
    Case("isfinite", lambda lib, x: lib.isfinite(x / (x > 0)), (M,), grad=False),
    Case("isinf", lambda lib, x: lib.isinf(x / (x > 0)), (M,), grad=False),
    Case("isnan", lambda lib, x: lib.isnan(lib.log(x)), (M,), grad=False),
    Case("isposinf", lambda lib, x: lib.isposinf(x / (x > 0)), (M,), grad=False),
    Case("isneginf", lambda lib, x: lib.isneginf(x / (x > 0)), (M,), grad=False),
    Case("logicaland", lambda lib, x, y: lib.logical_and(x, y), (M, M), grad=False),
    Case("logicalor", lambda lib, x, y: lib.logical_or(x, y), (M, M), grad=False),
    Case("logicalxor", lambda lib, x, y: lib.logical_xor(x, y), (M, M), grad=False),
    Case("logicalnot", lambda lib, x: lib.logical_not(x), (M,), grad=False),
    Case("where", lambda lib, m, x, y: lib.where(m, x, y), ("b:3,4", M, M)),
    # -- reductions -----------------------------------------------------------------------------------------
    Case("sum", lambda lib, x: x.sum(), ("n:40,50",), loose=True),
    Case("sum_dim", lambda lib, x: x.sum(1), ("n:4,300",), loose=True),
    Case("nansum", lambda lib, x: lib.nansum(x, 1), ("n:4,300",), loose=True),
    Case("mean", lambda lib, x: x.mean(), ("n:40,50",), loose=True),
    Case("mean_dim", lambda lib, x: x.mean(1), ("n:4,300",), loose=True),
    Case("prod", lambda lib, x: x.prod(), ("p:2,3",), loose=True),
    Case("prod_dim", lambda lib, x: x.prod(1), ("p:3,4",), loose=True),
    Case("std", lambda lib, x: x.std(1), ("n:4,300",), loose=True),
    Case("var", lambda lib, x: x.var(1), ("n:4,300",), loose=True),
    Case("stdmean", lambda lib, x: lib.std_mean(x, 1)[0], ("n:4,30",), loose=True),
    Case("varmean", lambda lib, x: lib.var_mean(x, 1)[1], ("n:4,30",), loose=True),
    Case("logsumexp", lambda lib, x: lib.logsumexp(x, 1), ("n:4,300",), loose=True),
    Case("cumsum", lambda lib, x: lib.cumsum(x, 1), ("n:3,200",), loose=True),
    Case("cumprod", lambda lib, x: lib.cumprod(x, 1), ("p:3,6",), loose=True),
    Case("amax", lambda lib, x: lib.amax(x, 1), (M,)),
    Case("amin", lambda lib, x: lib.amin(x, 1), (M,)),
    Case("max", lambda lib, x: x.max(), (M,)),
    Case("min", lambda lib, x: x.min(), (M,)),
    Case("max_dim", lambda lib, x: x.max(1)[0], (M,)),
    Case("min_dim", lambda lib, x: x.min(1).values, (M,)),
    Case("argmax", lambda lib, x: x.argmax(1), (M,), grad=False),
    Case("argmin", lambda lib, x: x.argmin(), (M,), grad=False),
    Case("median", lambda lib, x: x.median(1)[0], ("n:3,5",)),
    Case("median_all", lambda lib, x: x.median(), ("n:3,5",)),
    Case("nanmedian", lambda lib, x: x.nanmedian(1)[0], ("n:3,5",)),
    Case("nanmedian_all", lambda lib, x: x.nanmedian(), ("n:3,5",)),
    Case("kthvalue", lambda lib, x: lib.kthvalue(x, 2, 1)[0], (M,)),
    Case("all", lambda lib, x: lib.all(x), (M,), grad=False),
    Case("any", lambda lib, x: lib.any(x > 1, 1), (M,), grad=False),
    Case("countnonzero", lambda lib, x: lib.count_nonzero(x > 0, 1), (M,), grad=False),
    Case("linalgvectornorm", lambda lib, x: lib.linalg.vector_norm(x, dim=1), ("n:4,300",), loose=True),
    # -- sorting --------------------------------------------------------------------------------------------
    Case("sort", lambda lib, x: lib.sort(x, 1)[0], (M,)),
    Case("sortstable", lambda lib, x: lib.sort(x, dim=1, stable=True, descending=True)[0], (M,)),
    Case("argsort", lambda lib, x: lib.argsort(x, 1), (M,), grad=False),
    Case("topk", lambda lib, x: lib.topk(x, 2, 1)[0], (M,)),
    Case("unique2", lambda lib, x: lib.unique(x.round(), return_inverse=True)[0], (M,), grad=False),
    Case("uniquedim", lambda lib, x: lib.unique(x.round(), dim=0), (M,), grad=False),
    Case("nonzero", lambda lib, x: lib.nonzero(x > 0), (M,), grad=False),
    # -- shapes, indexing, copies ---------------------------------------------------------------------------
    Case("cat", lambda lib, x, y: lib.cat([x, y], 1), (M, M)),
    Case("stack", lambda lib, x, y: lib.stack([x, y]), (M, M)),
    Case("clone", lambda lib, x: x.clone() * 1, (M,)),
    Case("views", lambda lib, x: x.t().reshape(2, 6)[1:, None, 2].squeeze(1).unsqueeze(0).expand(2, 1, 6)
         .permute(2, 0, 1).transpose(0, 1).diagonal(0, 1, 2).flatten() * 1, (M,)),
    Case("view_copy", lambda lib, x: x.t().reshape(12).view(3, 4) * 1, (M,)),
    Case("squeezedims", lambda lib, x: x.squeeze((0, 2)).squeeze(), ("n:1,4,1",)),
    Case("split", lambda lib, x: x.split(2, 1)[1] * 2, (M,)),
    Case("splitwithsizes", lambda lib, x: x.split([1, 3], 1)[1] * 2, (M,)),
    Case("unbind", lambda lib, x: x.unbind(1)[2] * 2, (M,)),
    Case("flip", lambda lib, x: lib.flip(x, (0,)), (M,)),
    Case("roll", lambda lib, x: lib.roll(x, 1, 1), (M,)),
    Case("repeat", lambda lib, x: x.repeat(2, 1), (M,)),
    Case("tril", lambda lib, x: lib.tril(x), (M,)),
    Case("triu", lambda lib, x: lib.triu(x, 1), (M,)),
    Case("gather", lambda lib, x, i: lib.gather(x, 1, i), (M, "i4:3,2")),
    Case("index", lambda lib, x, i: x[i], (M, "i3:5")),
    Case("indexselect", lambda lib, x, i: lib.index_select(x, 1, i), (M, "i4:3")),
    Case("indexadd", lambda lib, x, i, s: lib.index_add(x, 0, i, s), (M, "i3:2", "n:2,4")),
    Case("indexput", lambda lib, x, i, v: x.index_put((i,), v), (M, "i3:2", "n:2,4")),
    Case("setitem", lambda lib, x, v: _setitem(x, v), (M, "n:4")),
    Case("scatter", lambda lib, x, i, s: lib.scatter(x, 1, i, s), (M, "i4:3,1", "n:3,1")),
    Case("scattervalue", lambda lib, x, i: lib.scatter(x, 1, i, 0.5), (M, "i4:3,1")),
    Case("scatteradd", lambda lib, x, i, s: lib.scatter_add(x, 1, i, s), (M, "i4:3,2", "n:3,2")),
    Case("scattermultiply", lambda lib, x, i, s: x.clone().scatter_(1, i, s, reduce="multiply"),
         (M, "i4:3,1", "n:3,1"), grad=False),
    Case("maskedfill", lambda lib, x, m: x.masked_fill(m, 0.5), (M, "b:3,4")),
    Case("maskedfilltensor", lambda lib, x, m, v: x.masked_fill(m, v), (M, "b:3,4", "n:")),
    Case("fill", lambda lib, x: x.clone().fill_(2.5), (M,)),
    Case("filltensor", lambda lib, x, v: x.clone().fill_(v), (M, "n:")),
    Case("zero", lambda lib, x: x.clone().zero_(), (M,)),
    Case("copy", lambda lib, x, y: x.clone().copy_(y), (M, M)),
    Case("inplace_arith", lambda lib, x, y: x.clone().add_(y).mul_(y).sub_(1.5).div_(2), (M, M)),
    Case("constant_pad_nd", lambda lib, x: _F(lib).pad(x, (1, 2), value=0.5), (M,)),
    Case("pad", lambda lib, x: _F(lib).pad(x, (2, 1), mode="reflect"), (X3,)),
    Case("padsequence", lambda lib, x, y: lib.nn.utils.rnn.pad_sequence([x, y], batch_first=True),
         ("n:3,2", "n:5,2")),
    Case("embedding", lambda lib, i, w: _F(lib).embedding(i, w), ("i5:2,3", "n:5,4")),
    Case("to", lambda lib, x: x.float() * x.double().to(x.dtype), (M,)),
    # -- matrix products ------------------------------------------------------------------------------------
    Case("mm", lambda lib, a, b: lib.mm(a, b), ("n:16,64", "n:64,8"), loose=True),
    Case("bmm", lambda lib, a, b: lib.bmm(a, b), ("n:2,16,64", "n:2,64,8"), loose=True),
    Case("matmul", lambda lib, a, b: a @ b, ("n:2,3,64", "n:64,5"), loose=True),
    Case("mv", lambda lib, a, v: lib.mv(a, v), ("n:8,64", "n:64"), loose=True),
    Case("dot", lambda lib, a, b: lib.dot(a, b), ("n:64", "n:64"), loose=True),
    Case("addmm", lambda lib, c, a, b: lib.addmm(c, a, b), ("n:3,5", "n:3,64", "n:64,5"), loose=True),
    Case("baddbmm", lambda lib, c, a, b: lib.baddbmm(c, a, b), ("n:2,3,5", "n:2,3,64", "n:2,64,5"), loose=True),
    Case("tensordot", lambda lib, a, b: lib.tensordot(a, b, dims=2), ("n:3,8,8", "n:8,8,4"), loose=True),
    Case("einsum", lambda lib, a, b: lib.einsum("bij,jk->bik", a, b), ("n:2,3,64", "n:64,5"), loose=True),
    Case("linear", lambda lib, x, w, b: _F(lib).linear(x, w, b), ("n:4,64", "n:8,64", "n:8"), loose=True),
    Case("linear_no_bias", lambda lib, x, w: _F(lib).linear(x, w), ("n:4,64", "n:8,64"), loose=True),
    # -- nn: activations ------------------------------------------------------------------------------------
    Case("relu", lambda lib, x: _F(lib).relu(x), (M,)),
    Case("gelu", lambda lib, x: _F(lib).gelu(x), (M,)),
    Case("gelu_tanh", lambda lib, x: _F(lib).gelu(x, approximate="tanh"), (M,)),
    Case("silu", lambda lib, x: _F(lib).silu(x), (M,)),
    Case("mish", lambda lib, x: _F(lib).mish(x), (M,)),
    Case("elu", lambda lib, x: _F(lib).elu(x), (M,)),
    Case("celu", lambda lib, x: _F(lib).celu(x, 0.7), (M,)),
    Case("selu", lambda lib, x: _F(lib).selu(x), (M,)),
    Case("leakyrelu", lambda lib, x: _F(lib).leaky_relu(x, 0.1), (M,)),
    Case("hardshrink", lambda lib, x: _F(lib).hardshrink(x, 0.3), (M,)),
    Case("softshrink", lambda lib, x: _F(lib).softshrink(x, 0.3), (M,)),
    Case("hardsigmoid", lambda lib, x: _F(lib).hardsigmoid(x), (M,)),
    Case("hardswish", lambda lib, x: _F(lib).hardswish(x), (M,)),
    Case("hardtanh", lambda lib, x: _F(lib).hardtanh(x, -0.5, 0.5), (M,)),
    Case("threshold", lambda lib, x: _F(lib).threshold(x, 0.1, 20.0), (M,)),
    Case("softplus", lambda lib, x: _F(lib).softplus(x), (M,)),
    Case("logsigmoid", lambda lib, x: _F(lib).logsigmoid(x), (M,)),
    Case("softmax", lambda lib, x: _F(lib).softmax(x, 1), ("n:4,100",)),
    Case("logsoftmax", lambda lib, x: _F(lib).log_softmax(x, 1), ("n:4,100",), loose=True),
    # -- nn: normalization ----------------------------------------------------------------------------------
    Case("layer_norm", lambda lib, x, w, b: _F(lib).layer_norm(x, (50,), w, b), ("n:4,50", "n:50", "n:50"),
         loose=True),
    Case("group_norm", lambda lib, x, w, b: _F(lib).group_norm(x, 2, w, b), ("n:2,4,25", "n:4", "n:4"), loose=True),
    Case("batch_norm", _bn(False), ("n:4,3,5", "c:3", "k:3", "n:3", "n:3"), loose=True),
    Case("batch_norm_training", _bn(True), ("n:4,3,5", "c:3", "k:3", "n:3", "n:3"), loose=True),
    # -- nn: convolution, pooling, resampling ---------------------------------------------------------------
    Case("conv2d", lambda lib, x, w, b: _F(lib).conv2d(x, w, b, padding=1), (X4, "n:4,3,3,3", "n:4"), loose=True),
    Case("conv1d", lambda lib, x, w: _F(lib).conv1d(x, w, stride=2), (X3, "n:4,3,3"), loose=True),
    Case("conv_transpose2d", lambda lib, x, w: _F(lib).conv_transpose2d(x, w, stride=2), (X4, "n:3,2,3,3"),
         loose=True),
    Case("avg_pool1d", lambda lib, x: _F(lib).avg_pool1d(x, 2), (X3,)),
    Case("avg_pool2d", lambda lib, x: _F(lib).avg_pool2d(x, 3, 2, 1), (X4,)),
    Case("max_pool1d", lambda lib, x: _F(lib).max_pool1d(x, 2), (X3,)),
    Case("max_pool2d", lambda lib, x: _F(lib).max_pool2d(x, 3, 2, 1), (X4,)),
    Case("max_pool1d_with_indices", lambda lib, x: _F(lib).max_pool1d(x, 2, return_indices=True)[0], (X3,)),
    Case("max_pool2d_with_indices", lambda lib, x: _F(lib).max_pool2d(x, 2, return_indices=True)[0], (X4,)),
    Case("adaptive_avg_pool1d", lambda lib, x: _F(lib).adaptive_avg_pool1d(x, 3), (X3,)),
    Case("adaptive_avg_pool2d", lambda lib, x: _F(lib).adaptive_avg_pool2d(x, (3, 4)), (X4,)),
    Case("adaptive_max_pool1d", lambda lib, x: _F(lib).adaptive_max_pool1d(x, 3), (X3,)),
    Case("adaptive_max_pool2d", lambda lib, x: _F(lib).adaptive_max_pool2d(x, (3, 4)), (X4,)),
    Case("adaptive_max_pool1d_with_indices",
         lambda lib, x: _F(lib).adaptive_max_pool1d(x, 3, return_indices=True)[0], (X3,)),
    Case("adaptive_max_pool2d_with_indices",
         lambda lib, x: _F(lib).adaptive_max_pool2d(x, 3, return_indices=True)[0], (X4,)),
    Case("upsample_nearest", lambda lib, x: _F(lib).interpolate(x, scale_factor=2, mode="nearest"), (X4,)),
    Case("upsample_bilinear", lambda lib, x: _F(lib).interpolate(x, size=(9, 7), mode="bilinear"), (X4,)),
    Case("upsample_linear", lambda lib, x: _F(lib).interpolate(x, size=11, mode="linear", align_corners=True),
         (X3,)),
    # -- nn: losses -----------------------------------------------------------------------------------------
    Case("crossentropy", lambda lib, x, t: _F(lib).cross_entropy(x, t), ("n:8,5", "i5:8"), loose=True),
    Case("nllloss", lambda lib, x, t: _F(lib).nll_loss(x, t), ("n:8,5", "i5:8"), loose=True),
    Case("mseloss", lambda lib, x, y: _F(lib).mse_loss(x, y), ("n:8,5", "n:8,5"), loose=True),
    Case("huberloss", lambda lib, x, y: _F(lib).huber_loss(x, y), ("n:8,5", "n:8,5"), loose=True),
    Case("smoothl1loss", lambda lib, x, y: _F(lib).smooth_l1_loss(x, y), ("n:8,5", "n:8,5"), loose=True),
    Case("l1loss", lambda lib, x, y: _F(lib).l1_loss(x, y), ("n:8,5", "n:8,5"), loose=True),
    Case("kldiv", lambda lib, x, y: _F(lib).kl_div(x, y, reduction="batchmean"), ("n:8,5", "q:8,5"), loose=True),
    Case("binarycrossentropy", lambda lib, x, y: _F(lib).binary_cross_entropy(x, y), ("q:8,5", "q:8,5"),
         loose=True),
    Case("binarycrossentropywithlogits", lambda lib, x, y: _F(lib).binary_cross_entropy_with_logits(x, y),
         ("n:8,5", "q:8,5"), loose=True),
    # -- recurrent ------------------------------------------------------------------------------------------
    Case("rnn", _rnn("RNN"), ("n:2,5,4",), loose=True),
    Case("lstm", _rnn("LSTM"), ("n:2,5,4",), loose=True),
    Case("gru", _rnn("GRU"), ("n:2,5,4",), loose=True),
    # -- random ---------------------------------------------------------------------------------------------
    Case("dropout", lambda lib, x: _F(lib).dropout(x, 0.5, training=True), (M,), random=True),
    Case("alpha_dropout", lambda lib, x: _F(lib).alpha_dropout(x, 0.5, training=True), (M,), random=True),
    Case("bernoulli", lambda lib, p: lib.bernoulli(p), ("q:3,4",), random=True, grad=False),
    Case("bernoulliscalar", lambda lib, x: lib.bernoulli(x, 0.3), (M,), random=True, grad=False),
    Case("bernoullirefill1", lambda lib, x: x.clone().bernoulli_(0.5), (M,), random=True),
    Case("bernoullirefill2", lambda lib, x, p: x.clone().bernoulli_(p), (M, "q:3,4"), random=True),
    Case("uniformrefill0", lambda lib, x: x.clone().uniform_(), (M,), random=True),
    Case("normalrefill0", lambda lib, x: x.clone().normal_(), (M,), random=True),
    Case("exponentialrefill0", lambda lib, x: x.clone().exponential_(), (M,), random=True),
    Case("randomrefill0", lambda lib, x: x.clone().random_(), (M,), random=True),
    Case("randomrefill1", lambda lib, x: x.clone().random_(10), (M,), random=True),
    Case("randomrefill2", lambda lib, x: x.clone().random_(2, 10), (M,), random=True),
    Case("normaltensorfloat", lambda lib, m: lib.normal(m, 1.0), (M,), random=True, grad=False),
    Case("normalfloattensor", lambda lib, s: lib.normal(0.0, s), ("p:3,4",), random=True, grad=False),
    Case("normaltensortensor", lambda lib, m, s: lib.normal(m, s), (M, "p:3,4"), random=True, grad=False),
]


def _setitem(x, v):
    y = x.clone()
    y[1] = v
    return y


#: linear algebra: PyTorch 2.13 refuses float16/bfloat16 on the CPU ("Low precision dtypes not supported"), and
#: so does ember. Each entry is (id, call).
REFUSED = [
    ("linalgcholeskyex", lambda lib, a: lib.linalg.cholesky(a)),
    ("linalgdet", lambda lib, a: lib.linalg.det(a)),
    ("linalgslogdet", lambda lib, a: lib.linalg.slogdet(a)),
    ("linalginvex", lambda lib, a: lib.linalg.inv(a)),
    ("linalgsolveex", lambda lib, a: lib.linalg.solve(a, a)),
    ("linalgqr", lambda lib, a: lib.linalg.qr(a)),
    ("linalgsvd", lambda lib, a: lib.linalg.svd(a)),
    ("linalgsvd", lambda lib, a: lib.linalg.svdvals(a)),
    ("linalgeigh", lambda lib, a: lib.linalg.eigh(a)),
    ("linalgeigh", lambda lib, a: lib.linalg.eigvalsh(a)),
    ("linalgsvd", lambda lib, a: lib.linalg.matrix_norm(a, "nuc")),
]

CASES = _c


_RANGES = {"p": (0.5, 2.0), "k": (0.5, 2.0), "g": (1.2, 3.0), "u": (-0.9, 0.9), "q": (0.05, 0.95)}


def input_values(case: Case) -> list:
    """The NumPy values of ``case``'s inputs (float64 for floating ones), the same on every run."""
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    values = []
    for spec in case.specs:
        kind, _, dims = spec.partition(":")
        shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        if kind == "s":
            a = rng.standard_normal(shape)
            values.append(a @ a.T + shape[0] * np.eye(shape[0]))
        elif kind == "b":
            values.append(rng.random(shape) < 0.5)
        elif kind.startswith("i"):
            values.append(rng.integers(0, int(kind[1:]), shape))
        else:
            low, high = _RANGES.get(kind, (0, 0))
            values.append(rng.uniform(low, high, shape) if high else rng.standard_normal(shape))
    return values


def is_floating_spec(spec: str) -> bool:
    return spec[0] in "npguqsck"


def make_inputs(lib, case: Case, dtype, requires_grad: bool) -> list:
    """``case``'s inputs as ``lib`` tensors, floating ones in ``dtype`` (rounded to float16/bfloat16 first by
    the caller's choice of ``dtype``); floating inputs other than constants (``c``) require grad if asked."""
    out = []
    for spec, value in zip(case.specs, input_values(case)):
        if is_floating_spec(spec):
            t = lib.tensor(value, dtype=dtype)
            if requires_grad and spec[0] not in "ck":
                t.requires_grad_()
        else:
            t = lib.tensor(value)
        out.append(t)
    return out
