"""The activation ops behind ember.nn's activations: values against NumPy formulas, first and second
derivatives, PyTorch's grad_fn names, dtypes and errors."""
import math

import numpy as np
import pytest

import ember
from ember.ops import activation as A
from tests.core.helpers import check_grads, rand64

# SELU's constants from Klambauer et al. (2017), "Self-Normalizing Neural Networks"
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _np(t):
    return t.detach().numpy(force=True)


def _np_sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


def _np_softplus(x):
    return np.logaddexp(0, x)


# (name, ember function, NumPy reference, PyTorch's grad_fn name, as printed by torch 2.13 by hand)
CASES = [
    ("leaky_relu", lambda t: A.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), "LeakyReluBackward0"),
    ("elu", lambda t: A.elu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1)), "EluBackward0"),
    ("selu", A.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * (np.exp(x) - 1)), "EluBackward0"),
    ("celu", lambda t: A.celu(t, 1.5), lambda x: np.maximum(0, x) + np.minimum(0, 1.5 * (np.exp(x / 1.5) - 1)),
     "CeluBackward0"),
    ("hardtanh", lambda t: A.hardtanh(t, -2.0, 1.5), lambda x: np.clip(x, -2.0, 1.5), "HardtanhBackward0"),
    ("relu6", lambda t: A.relu6(t * 3), lambda x: np.minimum(np.maximum(3 * x, 0), 6), "HardtanhBackward0"),
    ("hardsigmoid", A.hardsigmoid, lambda x: np.minimum(np.maximum(x + 3, 0), 6) / 6, "HardsigmoidBackward0"),
    ("hardswish", A.hardswish, lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6, "HardswishBackward0"),
    ("mish", A.mish, lambda x: x * np.tanh(_np_softplus(x)), "MishBackward0"),
    ("logsigmoid", A.logsigmoid, lambda x: np.log(_np_sigmoid(x)), "LogSigmoidBackward0"),
    ("softsign", A.softsign, lambda x: x / (1 + np.abs(x)), "DivBackward0"),
    ("tanhshrink", A.tanhshrink, lambda x: x - np.tanh(x), "SubBackward0"),
    ("threshold", lambda t: A.threshold(t, 0.5, -3.0), lambda x: np.where(x > 0.5, x, -3.0), "ThresholdBackward0"),
    ("hardshrink", lambda t: A.hardshrink(t, 0.7), lambda x: np.where(np.abs(x) > 0.7, x, 0.0),
     "HardshrinkBackward0"),
    ("softshrink", lambda t: A.softshrink(t, 0.7), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.7, 0),
     "SoftshrinkBackward0"),
    ("sigmoid", ember.sigmoid, _np_sigmoid, "SigmoidBackward0"),
    ("tanh", ember.tanh, np.tanh, "TanhBackward0"),
    ("softplus", lambda t: ember.softplus(t, beta=2.0, threshold=4.0),
     lambda x: np.where(2 * x > 4, x, _np_softplus(2 * x) / 2), "SoftplusBackward0"),
    ("relu", ember.relu, lambda x: np.maximum(x, 0), "ReluBackward0"),
    ("gelu", ember.gelu, lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))), "GeluBackward0"),
    ("silu", ember.silu, lambda x: x * _np_sigmoid(x), "SiluBackward0"),
]


@pytest.mark.parametrize("name,fn,ref,grad_fn", CASES, ids=[c[0] for c in CASES])
def test_values_match_numpy(name, fn, ref, grad_fn, device):
    x = rand64(5, 7, device=device, low=-5, high=5)
    out = fn(x)
    np.testing.assert_allclose(_np(out), ref(_np(x)), rtol=1e-12, atol=1e-14)
    assert out.grad_fn.name() == grad_fn


@pytest.mark.parametrize("name,fn,ref,grad_fn", CASES, ids=[c[0] for c in CASES])
def test_first_and_second_derivatives(name, fn, ref, grad_fn, device):
    x = rand64(3, 5, device=device, low=-4, high=4, seed=2)  # random points stay away from the kinks
    check_grads(fn, x, gradgrad=True)


def test_extreme_inputs_stay_finite(device):
    x = ember.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=ember.float64, device=device)
    for fn in (A.mish, A.logsigmoid, A.elu, A.selu, A.hardswish):
        out = fn(x)
        assert np.isfinite(_np(out)).all(), fn
    np.testing.assert_allclose(_np(A.logsigmoid(x))[:2], [-1000.0, -50.0])
    x.requires_grad_()
    for fn in (A.mish, A.logsigmoid, A.elu):
        g, = ember.autograd.grad(fn(x).sum(), x, create_graph=True)
        gg, = ember.autograd.grad(g.sum(), x)
        assert np.isfinite(_np(g)).all() and np.isfinite(_np(gg)).all(), fn


def test_float32_stays_float32(device):
    x = ember.randn(4, device=device)
    for fn in (A.leaky_relu, A.elu, A.mish, A.hardswish, A.logsigmoid, A.softsign, A.hardtanh):
        assert fn(x).dtype == ember.float32


def test_prelu_per_channel_and_shared_slope(device):
    x = rand64(2, 3, 4, device=device, low=-2, high=2)
    w = rand64(3, device=device, seed=1, low=0.1, high=0.5)
    out = _np(A.prelu(x, w))
    xa = _np(x)
    np.testing.assert_allclose(out, np.where(xa > 0, xa, _np(w)[None, :, None] * xa))
    check_grads(A.prelu, x, w, gradgrad=True)
    shared = rand64(1, device=device, seed=2)
    check_grads(A.prelu, x, shared)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size. Found parameter "
                                           "numbers = 2 and channel size = 3."):
        A.prelu(x, ember.ones(2, dtype=ember.float64, device=device))


def test_glu_halves_along_dim(device):
    x = rand64(2, 4, 3, device=device)
    xa = _np(x)
    np.testing.assert_allclose(_np(A.glu(x, 1)), xa[:, :2] * _np_sigmoid(xa[:, 2:]))
    check_grads(lambda t: A.glu(t, 1), x, gradgrad=True)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 2 is size 3"):
        A.glu(x)


def test_integer_inputs():
    i = ember.tensor([-5, 0, 2, 8])
    assert A.hardtanh(i).tolist() == [-1, 0, 1, 1] and A.hardtanh(i).dtype == ember.int64
    assert A.relu6(i).tolist() == [0, 0, 2, 6]
    for fn, kernel in ((A.leaky_relu, "leaky_relu_cpu"), (A.elu, "elu_cpu"), (A.selu, "elu_cpu"),
                       (A.mish, "mish_cpu"), (A.hardsigmoid, "hardsigmoid_cpu"), (A.hardswish, "hardswish_cpu"),
                       (A.logsigmoid, "log_sigmoid_cpu")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Long'"):
            fn(i)


def test_argument_errors():
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        A.hardtanh(ember.ones(2), 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        A.celu(ember.ones(2), 0.0)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0, but found to be -1"):
        A.softshrink(ember.ones(2), -1.0)


def test_relu_and_threshold_in_place(device):
    x = rand64(4, device=device, seed=3)
    h = x * 2
    assert ember.relu_(h) is h and h._version == 1
    np.testing.assert_allclose(_np(h), np.maximum(2 * _np(x), 0))
    h.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2.0 * (_np(x) > 0))
    t = ember.tensor([0.0, 2.0], device=device)
    assert A.threshold_(t, 1.0, 9.0) is t and t.tolist() == [9.0, 2.0]
    s = ember.tensor([-1.0, 1.0], device=device)
    A.selu_(s)
    np.testing.assert_allclose(_np(s), [SELU_SCALE * SELU_ALPHA * (np.exp(-1) - 1), SELU_SCALE])


def test_logit(device):
    x = rand64(6, device=device, low=0.05, high=0.95, seed=4)
    out = A.logit(x)
    p = _np(x)
    np.testing.assert_allclose(_np(out), np.log(p / (1 - p)), rtol=1e-13)
    assert out.grad_fn.name() == "LogitBackward0"
    check_grads(A.logit, x, gradgrad=True)
    check_grads(lambda t: A.logit(t, eps=0.2), rand64(6, device=device, low=0.25, high=0.75, seed=5))
    # PyTorch's edges: with eps the input is clamped and gets no gradient where it was; without, NaN outside [0, 1]
    for eps, grads in ((None, "[nan, inf, 4.0, inf, nan]"), (0.1, "[0.0, 0.0, 4.0, 0.0, 0.0]")):
        t = ember.tensor([-0.5, 0.0, 0.5, 1.0, 1.5], dtype=ember.float64, device=device, requires_grad=True)
        A.logit(t, eps=eps).sum().backward()
        assert str(t.grad.tolist()) == grads
    assert str(ember.tensor([1, 2], device=device).logit().tolist()) == "[inf, nan]"  # integers compute in float


def test_nan_as_pytorch(device):
    """NaN where PyTorch's CPU kernels agree for every tensor length (checked by hand against PyTorch 2.13):
    relu and threshold pass the gradient at NaN; threshold and the shrinks keep NaN; relu, elu and softshrink
    keep -0."""
    nan = math.nan
    for grad_mode in (False, True):  # the array path of relu's backward, and its differentiable one
        x = ember.tensor([nan, -1.0, 0.0, 2.0], device=device, requires_grad=True)
        ember.relu(x).sum().backward(create_graph=grad_mode)
        assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]
    x = ember.tensor([nan, 0.5, 2.0], device=device, requires_grad=True)
    y = A.threshold(x, 0.5, -2.0)
    assert str(y.detach().tolist()) == "[nan, -2.0, 2.0]"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    v = ember.tensor([nan, -0.2, 0.2, 2.0], device=device)
    assert str(A.hardshrink(v).tolist()) == "[nan, 0.0, 0.0, 2.0]"
    assert str(A.softshrink(v).tolist()) == "[nan, -0.0, 0.0, 1.5]"
    zero = ember.tensor([-0.0], device=device)  # relu and elu keep the sign of zero
    assert str(ember.relu(zero).tolist()) == str(A.elu(zero).tolist()) == "[-0.0]"


@pytest.mark.parametrize("slope", [0.0, 1.0, 1.5, -0.5])
def test_leaky_relu_any_slope(slope, device):
    x = rand64(10, device=device, low=-3, high=3)
    xa = _np(x)
    np.testing.assert_allclose(_np(A.leaky_relu(x, slope)), np.where(xa > 0, xa, slope * xa))
    A.leaky_relu(x, slope).sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.where(xa > 0, 1.0, slope))
