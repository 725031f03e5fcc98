"""Activation modules and ember.nn.functional's activations: reprs, values, in place, implicit softmax dim,
double backward through a gradient penalty, and the seed notes' F.softmax / F.one_hot."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


# repr strings printed by torch 2.13 for the same constructions (taken by hand)
REPRS = [
    (nn.ReLU(), "ReLU()"), (nn.ReLU(True), "ReLU(inplace=True)"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.ELU(), "ELU(alpha=1.0)"), (nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
    (nn.GELU(), "GELU(approximate='none')"), (nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (nn.SiLU(), "SiLU()"), (nn.SiLU(True), "SiLU(inplace=True)"), (nn.Tanh(), "Tanh()"), (nn.Sigmoid(), "Sigmoid()"),
    (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"), (nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"),
    (nn.Softmax(), "Softmax(dim=None)"), (nn.Softmax(1), "Softmax(dim=1)"), (nn.LogSoftmax(dim=1), "LogSoftmax(dim=1)"),
    (nn.Softmin(0), "Softmin(dim=0)"), (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 2, True), "Hardtanh(min_val=-2, max_val=2, inplace=True)"), (nn.ReLU6(), "ReLU6()"),
    (nn.ReLU6(True), "ReLU6(inplace=True)"), (nn.SELU(), "SELU()"), (nn.SELU(True), "SELU(inplace=True)"),
    (nn.CELU(), "CELU(alpha=1.0)"), (nn.CELU(2.0, True), "CELU(alpha=2.0, inplace=True)"), (nn.Mish(), "Mish()"),
    (nn.Mish(True), "Mish(inplace=True)"), (nn.Hardsigmoid(True), "Hardsigmoid()"), (nn.Hardswish(True), "Hardswish()"),
    (nn.LogSigmoid(), "LogSigmoid()"), (nn.Softsign(), "Softsign()"), (nn.Tanhshrink(), "Tanhshrink()"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (nn.Threshold(0.1, 2.0, True), "Threshold(threshold=0.1, value=2.0, inplace=True)"),
    (nn.Hardshrink(), "Hardshrink(0.5)"), (nn.Softshrink(1), "Softshrink(1)"), (nn.GLU(), "GLU(dim=-1)"),
    (nn.PReLU(), "PReLU(num_parameters=1)"), (nn.PReLU(3, 0.1), "PReLU(num_parameters=3)"),
]


@pytest.mark.parametrize("module,text", REPRS, ids=[t for _, t in REPRS])
def test_reprs(module, text):
    assert repr(module) == text


def test_model_printout():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(inplace=True), nn.Dropout(0.2), nn.Softmax(dim=1))
    assert str(model) == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                          "  (1): ReLU(inplace=True)\n  (2): Dropout(p=0.2, inplace=False)\n  (3): Softmax(dim=1)\n)")


# module, the NumPy formula it computes
VALUES = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh), (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Softplus(beta=0.5), lambda x: np.log1p(np.exp(0.5 * x)) / 0.5),
    (nn.Hardtanh(-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (nn.LogSoftmax(dim=0), lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
    (nn.Softmin(dim=1), lambda x: np.exp(-x) / np.exp(-x).sum(1, keepdims=True)),
    (nn.PReLU(), lambda x: np.where(x > 0, x, 0.25 * x)),
    (nn.GLU(dim=1), lambda x: x[:, :2] / (1 + np.exp(-x[:, 2:]))),
]


@pytest.mark.parametrize("module,ref", VALUES, ids=[type(m).__name__ for m, _ in VALUES])
def test_module_values_match_numpy(module, ref):
    x = rand64(3, 4, low=-8, high=8, requires_grad=False)
    module = module.double()
    np.testing.assert_allclose(_np(module(x)), ref(_np(x)), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("fn,args", [(F.relu, ()), (F.leaky_relu, (0.2,)), (F.elu, (0.7,)), (F.selu, ()),
                                     (F.celu, (1.5,)), (F.silu, ()), (F.mish, ()), (F.hardtanh, (-0.5, 0.5)),
                                     (F.relu6, ()), (F.hardsigmoid, ()), (F.hardswish, ()),
                                     (F.threshold, (0.1, -1.0))])
def test_functional_inplace_writes_into_the_input_and_backpropagates(fn, args):
    x = rand64(3, 4, low=-4, high=4)
    expected = fn(x * 2, *args)
    h = x * 2
    out = fn(h, *args, inplace=True)
    assert out is h and h._version == 1
    np.testing.assert_allclose(_np(h), _np(expected))
    h.sum().backward()
    x2 = x.detach().requires_grad_()
    fn(x2 * 2, *args).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(x2.grad))


def test_inplace_modules_and_underscore_forms():
    y = ember.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(y) is y and y.tolist() == [0.0, 2.0]
    z = ember.tensor([-2.0, 2.0])
    assert F.leaky_relu_(z, 0.5) is z and z.tolist() == [-1.0, 2.0]
    for fn in (F.relu_, F.elu_, F.selu_, F.celu_, F.hardtanh_):
        t = ember.tensor([5.0])
        assert fn(t) is t
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        F.relu(leaf, inplace=True)


@pytest.mark.parametrize("ndim,dim", [(0, 0), (1, 0), (2, 1), (3, 0), (4, 1)])
def test_implicit_softmax_dim_rule_and_warning(ndim, dim):
    x = rand64(*([2] * ndim), requires_grad=False)
    for fn, explicit in ((F.softmax, ember.softmax), (F.log_softmax, ember.log_softmax)):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {fn.__name__} has been deprecated. "
                                             "Change the call to include dim=X as an argument.") as record:
            out = fn(x)
        assert record[0].filename == __file__  # the warning points at the caller
        np.testing.assert_allclose(_np(out), _np(explicit(x, dim)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        np.testing.assert_allclose(_np(F.softmin(x)), _np(ember.softmax(-x, dim)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit dim never warns
        F.softmax(x, dim=0)


def test_softmax_module_warns_at_the_call_site():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax") as record:
        nn.Softmax()(ember.ones(2, 3))
    assert record[0].filename == __file__


def test_softmax_dtype_argument():
    x = ember.tensor([1.0, 2.0])
    assert F.softmax(x, 0, dtype=ember.float64).dtype == ember.float64
    assert F.softmin(x, 0, dtype=ember.float64).dtype == ember.float64
    assert F.log_softmax(x, 0, dtype=ember.float64).dtype == ember.float64


def test_seed_snippet_softmax_and_one_hot():
    # seeds/001: the printed results of F.softmax and F.one_hot
    soft = F.softmax(ember.FloatTensor([2.0, 1.0, 3.0, 4.0]), dim=0)
    assert str(soft) == "tensor([0.0871, 0.0321, 0.2369, 0.6439])"
    hot = F.one_hot(ember.LongTensor([1, 2, 4, 4, 5]), num_classes=6)
    assert str(hot) == ("tensor([[0, 1, 0, 0, 0, 0],\n        [0, 0, 1, 0, 0, 0],\n        [0, 0, 0, 0, 1, 0],\n"
                        "        [0, 0, 0, 0, 1, 0],\n        [0, 0, 0, 0, 0, 1]])")


@pytest.mark.parametrize("module", [nn.Tanh(), nn.Sigmoid(), nn.Softplus(), nn.ELU(), nn.GELU(), nn.Mish()],
                         ids=lambda m: type(m).__name__)
def test_gradient_penalty_double_backward(module):
    # the gradient-penalty pattern: a loss on d(output)/d(input), differentiated again
    x = rand64(3, 4, low=-3, high=3)
    check_grads(module, x, gradgrad=True)
    out = module(x).sum()
    g, = ember.autograd.grad(out, x, create_graph=True)
    (g * g).sum().backward()
    assert x.grad is not None and np.isfinite(_np(x.grad)).all()


def test_prelu_learns_its_slope():
    p = nn.PReLU(2).double()
    x = ember.tensor([[-1.0, -2.0], [3.0, -4.0]], dtype=ember.float64)
    p(x).sum().backward()
    np.testing.assert_allclose(_np(p.weight.grad), [-1.0, -6.0])  # sum of the negative inputs per channel
    assert p.weight.tolist() == [0.25, 0.25]


def test_hardtanh_arguments():
    with pytest.raises(AssertionError, match=r"max_val \(1\) must be greater than min_val \(2\)"):
        nn.Hardtanh(2, 1)
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated and renamed to `min_val`"):
        assert nn.Hardtanh(min_value=-2.0).min_val == -2.0
