"""Unary math, activations, clamp and the binary elementwise functions: values, dtypes, gradients, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.core.helpers import check_grads, rand64

# name -> (NumPy reference, low, high) ; inputs are drawn in [low, high) where the function is smooth
FLOAT_UNARY = {
    "sqrt": (np.sqrt, 0.5, 2.0), "rsqrt": (lambda a: 1 / np.sqrt(a), 0.5, 2.0), "exp": (np.exp, -1, 1),
    "exp2": (np.exp2, -1, 1), "log": (np.log, 0.5, 2.0), "log2": (np.log2, 0.5, 2.0),
    "log10": (np.log10, 0.5, 2.0), "log1p": (np.log1p, -0.5, 1.0), "expm1": (np.expm1, -1, 1),
    "sin": (np.sin, -2, 2), "cos": (np.cos, -2, 2), "tan": (np.tan, -1, 1), "asin": (np.arcsin, -0.9, 0.9),
    "acos": (np.arccos, -0.9, 0.9), "atan": (np.arctan, -2, 2), "sinh": (np.sinh, -2, 2),
    "cosh": (np.cosh, -2, 2), "tanh": (np.tanh, -2, 2), "asinh": (np.arcsinh, -2, 2),
    "acosh": (np.arccosh, 1.2, 3.0), "atanh": (np.arctanh, -0.9, 0.9),
    "erf": (np.vectorize(math.erf), -3, 3), "reciprocal": (lambda a: 1 / a, 0.5, 2.0),
    "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), -3, 3), "deg2rad": (np.deg2rad, -360, 360),
    "rad2deg": (np.rad2deg, -7, 7), "sinc": (np.sinc, -2, 2),
}
GRAD_FN = {"log1p": "Log1PBackward0", "reciprocal": "ReciprocalBackward0", "deg2rad": "Deg2RadBackward0",
           "rad2deg": "Rad2DegBackward0"}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary_values_grads_and_names(name, device):
    ref, low, high = FLOAT_UNARY[name]
    x = rand64(2, 3, device=device, low=low, high=high)
    fn = getattr(ember, name)
    out = fn(x)
    np.testing.assert_allclose(out.detach().numpy(force=True), ref(x.detach().numpy(force=True)), rtol=1e-12,
                               atol=1e-14)
    assert out.grad_fn.name() == GRAD_FN.get(name, name.capitalize() + "Backward0")
    assert getattr(x, name)().allclose(out)  # the Tensor method is the same function
    check_grads(fn, x)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "sqrt", "sin", "erf", "atan"])
def test_second_derivatives(name, device):
    _, low, high = FLOAT_UNARY[name]
    check_grads(getattr(ember, name), rand64(4, device=device, low=low, high=high), gradgrad=True)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "log1p", "sigmoid", "erf", "reciprocal", "tanh"])
@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.bool_])
def test_integer_inputs_promote_to_default_float(name, dtype, device):
    x = ember.tensor([0, 1, 1], dtype=dtype, device=device)
    out = getattr(ember, name)(x)
    assert out.dtype == ember.float32
    expected = getattr(ember, name)(ember.tensor([0.0, 1.0, 1.0], device=device))
    assert ember.equal(out, expected)
    ember.set_default_dtype(ember.float64)
    try:
        assert getattr(ember, name)(x).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_aliases_are_the_same_functions():
    assert ember.arcsin is ember.asin and ember.arccos is ember.acos and ember.arctan is ember.atan
    assert ember.clip is ember.clamp and ember.absolute is ember.abs and ember.arctan2 is ember.atan2
    assert ember.tensor([0.5]).arcsin().item() == pytest.approx(math.asin(0.5))


def test_erf_matches_math_erf_across_its_range(device):
    values = np.concatenate([np.linspace(-7, 7, 2001), [0.0, -0.0, 1e-300, -1e-30, 1e-8, 0.4999, 0.5, 5.999, 6.0,
                                                        np.inf, -np.inf]])
    x = ember.tensor(values, dtype=ember.float64, device=device)
    got = ember.erf(x).numpy(force=True)
    want = np.array([math.erf(v) for v in values])
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=0)  # relative: tiny inputs too, and erf(0) is 0
    assert np.signbit(got[2002]) and np.signbit(got[2004])  # erf(-0.0) is -0.0, erf(-1e-30) negative
    assert math.isnan(ember.erf(ember.tensor([float("nan")], device=device)).item())
    f32 = ember.erf(ember.tensor(values[:-2], dtype=ember.float32, device=device))
    assert f32.dtype == ember.float32
    np.testing.assert_allclose(f32.numpy(force=True), want[:-2], atol=1e-6)


# -- dtype-keeping ops ------------------------------------------------------------------------------------------
def test_abs_sign_square_keep_integer_dtypes(device):
    i = ember.tensor([-2, 0, 3], dtype=ember.int32, device=device)
    assert ember.abs(i).tolist() == [2, 0, 3] and ember.abs(i).dtype == ember.int32
    assert abs(i).tolist() == [2, 0, 3]
    assert ember.sign(i).tolist() == [-1, 0, 1] and ember.sign(i).dtype == ember.int32
    assert ember.square(i).tolist() == [4, 0, 9] and ember.square(i).dtype == ember.int32
    b = ember.tensor([True, False], device=device)
    assert ember.sign(b).dtype == ember.bool_ and ember.sign(b).tolist() == [True, False]
    assert ember.square(b).dtype == ember.int64
    with pytest.raises(NotImplementedError, match="\"abs\" not implemented for 'Bool'"):
        ember.abs(b)


def test_abs_sign_square_grads(device):
    x = rand64(3, 4, device=device)
    check_grads(ember.abs, x)
    check_grads(ember.square, x, gradgrad=True)
    assert ember.square(x).grad_fn.name() == "PowBackward0"
    assert ember.abs(x).grad_fn.name() == "AbsBackward0"
    z = ember.tensor([0.0, 2.0, -1.0], device=device, requires_grad=True)
    z.abs().sum().backward()
    assert z.grad.tolist() == [0.0, 1.0, -1.0]  # sign(0) = 0, as in PyTorch


@pytest.mark.parametrize("name,values,expected", [
    ("floor", [-1.5, -0.5, 0.5, 1.5], [-2.0, -1.0, 0.0, 1.0]),
    ("ceil", [-1.5, -0.5, 0.5, 1.5], [-1.0, -0.0, 1.0, 2.0]),
    ("trunc", [-1.5, -0.5, 0.5, 1.5], [-1.0, -0.0, 0.0, 1.0]),
    ("round", [-1.5, -0.5, 0.5, 1.5, 2.5], [-2.0, -0.0, 0.0, 2.0, 2.0]),
    ("frac", [-1.5, -0.25, 0.5, 2.75], [-0.5, -0.25, 0.5, 0.75]),
    ("sign", [-3.0, 0.0, 2.0], [-1.0, 0.0, 1.0]),
])
def test_rounding_values_and_zero_grads(name, values, expected, device):
    x = ember.tensor(values, dtype=ember.float64, device=device, requires_grad=True)
    out = getattr(ember, name)(x)
    assert out.tolist() == expected
    assert out.grad_fn.name() == name.capitalize() + "Backward0"
    out.sum().backward()
    assert x.grad.tolist() == ([1.0] * len(values) if name == "frac" else [0.0] * len(values))


def test_round_decimals(device):
    x = ember.tensor([1.2345, -2.5551, 1234.5], dtype=ember.float64, device=device, requires_grad=True)
    np.testing.assert_allclose(ember.round(x, decimals=2).detach().numpy(force=True), [1.23, -2.56, 1234.5])
    assert ember.round(x, decimals=-2).tolist() == [0.0, -0.0, 1200.0]
    assert x.round(decimals=1).grad_fn.name() == "RoundBackward1"
    with pytest.raises(NotImplementedError, match="'Long'"):
        ember.round(ember.tensor([125]), decimals=-1)


def test_rounding_integer_inputs(device):
    i = ember.tensor([-2, 3], device=device)
    for name in ("floor", "ceil", "trunc", "round"):
        out = getattr(ember, name)(i)
        assert out.dtype == ember.int64 and out.tolist() == [-2, 3]
    with pytest.raises(NotImplementedError, match="\"frac\" not implemented for 'Long'"):
        ember.frac(i)
    with pytest.raises(NotImplementedError, match="\"floor\" not implemented for 'Bool'"):
        ember.floor(ember.tensor([True], device=device))


def test_nan_inf_classification(device):
    x = ember.tensor([1.0, float("nan"), float("inf"), -float("inf")], device=device)
    assert ember.isnan(x).tolist() == [False, True, False, False]
    assert ember.isinf(x).tolist() == [False, False, True, True]
    assert ember.isfinite(x).tolist() == [True, False, False, False]
    assert ember.isposinf(x).tolist() == [False, False, True, False]
    assert ember.isneginf(x).tolist() == [False, False, False, True]
    i = ember.tensor([1, 2], device=device)
    assert ember.isnan(i).tolist() == [False, False] and ember.isfinite(i).tolist() == [True, True]
    assert ember.isinf(ember.tensor([True], device=device)).tolist() == [False]
    assert x.isnan().dtype == ember.bool_ and not x.requires_grad


def test_nan_to_num(device):
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.5], device=device)
    info = ember.finfo(ember.float32)
    assert ember.nan_to_num(x).tolist() == [0.0, info.max, info.min, 1.5]
    assert x.nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0).tolist() == [1.0, 2.0, -2.0, 1.5]
    i = ember.tensor([1, 2], device=device)
    assert ember.nan_to_num(i).tolist() == [1, 2] and ember.nan_to_num(i).dtype == ember.int64
    y = ember.tensor([float("nan"), 2.0, float("inf")], dtype=ember.float64, device=device, requires_grad=True)
    out = y.nan_to_num()
    assert out.grad_fn.name() == "NanToNumBackward0"
    out.sum().backward()
    assert y.grad.tolist() == [0.0, 1.0, 0.0]
    check_grads(ember.nan_to_num, rand64(3, device=device))


# -- activations ------------------------------------------------------------------------------------------------
def _np_gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


def _np_gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def _np_softplus(a, beta=1.0, threshold=20.0):
    return np.where(a * beta > threshold, a, np.log1p(np.exp(a * beta)) / beta)


@pytest.mark.parametrize("fn,ref,name", [
    (ember.relu, lambda a: np.maximum(a, 0), "ReluBackward0"),
    (ember.gelu, _np_gelu, "GeluBackward0"),
    (lambda t: ember.gelu(t, approximate="tanh"), _np_gelu_tanh, "GeluBackward0"),
    (ember.silu, lambda a: a / (1 + np.exp(-a)), "SiluBackward0"),
    (ember.softplus, _np_softplus, "SoftplusBackward0"),
    (lambda t: ember.softplus(t, beta=2.0, threshold=1.0), lambda a: _np_softplus(a, 2.0, 1.0),
     "SoftplusBackward0"),
])
def test_activations(fn, ref, name, device):
    x = rand64(3, 5, device=device, low=-3, high=3)
    out = fn(x)
    np.testing.assert_allclose(out.detach().numpy(force=True), ref(x.detach().numpy(force=True)), rtol=1e-12,
                               atol=1e-14)
    assert out.grad_fn.name() == name
    check_grads(fn, x, gradgrad=True)


def test_activations_are_stable_at_extremes(device):
    x = ember.tensor([-1000.0, 1000.0], device=device)
    assert ember.sigmoid(x).tolist() == [0.0, 1.0]
    assert ember.softplus(x).tolist() == [0.0, 1000.0]
    assert ember.silu(x).tolist() == [-0.0, 1000.0]
    assert ember.gelu(x).tolist() == [-0.0, 1000.0]
    assert ember.softplus(ember.tensor([-100.0], dtype=ember.float64, device=device)).item() > 0


def test_activation_methods_and_dtypes(device):
    x = ember.tensor([-1.0, 2.0], device=device)
    assert x.relu().tolist() == [0.0, 2.0] and x.sigmoid().allclose(ember.sigmoid(x))
    assert x.gelu().allclose(ember.gelu(x)) and x.silu().allclose(ember.silu(x))
    assert x.softplus().allclose(ember.softplus(x))
    i = ember.tensor([-1, 2], device=device)
    assert ember.relu(i).tolist() == [0, 2] and ember.relu(i).dtype == ember.int64
    assert ember.sigmoid(i).dtype == ember.float32
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.tensor([True], device=device))
    with pytest.raises(NotImplementedError, match="\"gelu\" not implemented for 'Long'"):
        ember.gelu(i)
    with pytest.raises(NotImplementedError, match="\"silu\" not implemented for 'Long'"):
        ember.silu(i)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        ember.gelu(x, approximate="fast")


def test_sign_of_nan_is_zero_and_abs_passes_no_gradient_there(device):
    x = ember.tensor([math.nan, -2.0, 0.0, 3.0], device=device, requires_grad=True)
    assert x.sign().tolist() == [0.0, -1.0, 0.0, 1.0]  # PyTorch: sign(nan) is 0
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, -1.0, 0.0, 1.0]
    assert ember.tensor([-3, 0, 5], device=device).sign().tolist() == [-1, 0, 1]


def test_relu_grad_at_zero_is_zero(device):
    x = ember.tensor([-1.0, 0.0, 2.0], device=device, requires_grad=True)
    x.relu().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


# -- clamp ----------------------------------------------------------------------------------------------------
def test_clamp_with_numbers(device):
    x = ember.tensor([-2.0, 0.5, 3.0], device=device)
    assert ember.clamp(x, 0, 1).tolist() == [0.0, 0.5, 1.0]
    assert x.clamp(min=0).tolist() == [0.0, 0.5, 3.0]
    assert x.clamp(max=1).tolist() == [-2.0, 0.5, 1.0]
    assert x.clip(-1, 1).tolist() == [-1.0, 0.5, 1.0]
    assert x.clamp(3, 2).tolist() == [2.0, 2.0, 2.0]  # min > max: max wins
    i = ember.tensor([1, 5], device=device)
    assert i.clamp(0, 2).dtype == ember.int64 and i.clamp(0, 2).tolist() == [1, 2]
    assert i.clamp(0.5).dtype == ember.float32 and i.clamp(min=2.5).tolist() == [2.5, 5.0]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    with pytest.raises(TypeError, match="'min' must be a Number or a Tensor, not str"):
        x.clamp("a")


def test_clamp_with_tensors(device):
    x = ember.tensor([[-2.0, 0.5, 3.0]], device=device)
    lo = ember.tensor([[0.0], [1.0]], device=device)
    out = ember.clamp(x, min=lo, max=ember.tensor(2.0, device=device))
    assert out.tolist() == [[0.0, 0.5, 2.0], [1.0, 1.0, 2.0]]
    assert x.clamp(max=ember.tensor([0.0, 0.0, 5.0], device=device)).tolist() == [[-2.0, 0.0, 3.0]]
    i = ember.tensor([1, 5], device=device)
    assert ember.clamp(i, min=ember.tensor([2.0], device=device)).tolist() == [2.0, 5.0]


def test_clamp_grads(device):
    x = ember.tensor([0.0, 2.0, -1.0, 1.0], device=device, requires_grad=True)
    y = x.clamp(0, 2)
    assert y.grad_fn.name() == "ClampBackward1"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 1.0]  # the bounds themselves pass the gradient
    a = rand64(3, 4, device=device, low=-2, high=2)
    check_grads(lambda t: t.clamp(-0.5, 0.7), a)
    check_grads(lambda t: t.clamp(min=-0.3), a)
    lo = rand64(4, device=device, low=-1, high=0, seed=1)
    hi = rand64(3, 1, device=device, low=0, high=1, seed=2)
    assert ember.clamp(a, lo, hi).grad_fn.name() == "ClampBackward0"
    check_grads(lambda t, m, n: ember.clamp(t, m, n), a, lo, hi)
    check_grads(lambda t, m: ember.clamp(t, max=m), a, hi)
    crossed = ember.clamp(a, hi + 1, lo)  # min > max everywhere: the result and its gradient come from max
    assert ember.equal(crossed, lo.expand(3, 4))
    check_grads(lambda t, m, n: ember.clamp(t, m + 1, n), a, hi, lo)


# -- binary elementwise functions --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,ref", [("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax),
                                      ("fmin", np.fmin), ("atan2", np.arctan2)])
def test_binary_functions(name, ref, device):
    a = rand64(3, 1, device=device, low=-2, high=2, seed=1)
    b = rand64(4, device=device, low=-2, high=2, seed=2)
    out = getattr(ember, name)(a, b)
    np.testing.assert_allclose(out.detach().numpy(force=True), ref(a.detach().numpy(force=True),
                                                                   b.detach().numpy(force=True)))
    assert out.grad_fn.name() == name.capitalize() + "Backward0"
    check_grads(getattr(ember, name), a, b, gradgrad=True)


def test_maximum_ties_split_the_gradient(device):
    a = ember.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = ember.tensor([1.0, 1.0, 4.0], device=device, requires_grad=True)
    ember.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0] and b.grad.tolist() == [0.5, 0.0, 1.0]
    nan = ember.maximum(ember.tensor([float("nan"), 1.0], device=device), ember.tensor([0.0, 2.0], device=device))
    assert math.isnan(nan[0].item()) and nan[1].item() == 2.0


def test_fmax_fmin_ignore_nan_and_give_ties_to_the_input(device):
    """As PyTorch 2.13 (checked by hand): NaN only where both are NaN; a tie's gradient goes to ``input``."""
    nan = math.nan
    a = ember.tensor([1.0, nan, 2.0, 3.0, nan], device=device, requires_grad=True)
    b = ember.tensor([1.0, 1.0, nan, 4.0, nan], device=device, requires_grad=True)
    out = ember.fmax(a, b)
    assert str(out.tolist()) == "[1.0, 1.0, 2.0, 4.0, nan]"
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0] and b.grad.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert str(ember.fmin(a, b).tolist()) == "[1.0, 1.0, 2.0, 3.0, nan]"
    assert ember.fmax(ember.tensor([1, 5], device=device), ember.tensor([3, 2], device=device)).tolist() == [3, 5]


def test_sinc_at_zero_and_positive(device):
    x = ember.tensor([0.0, 1e-20, 0.5], dtype=ember.float64, device=device, requires_grad=True)
    out = ember.sinc(x)
    out.sum().backward()
    assert out.tolist()[:2] == [1.0, 1.0] and x.grad.tolist()[:2] == [0.0, 0.0]  # as PyTorch: no 0 / 0
    assert ember.positive(x) is x and +x is not None
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported"):
        ember.positive(ember.tensor([True], device=device))


def test_sgn_and_signbit(device):
    x = ember.tensor([-2.0, -0.0, 0.0, 3.0, math.nan], device=device, requires_grad=True)
    assert str(ember.sgn(x).tolist()) == "[-1.0, 0.0, 0.0, 1.0, 0.0]" and ember.sgn(x).grad_fn.name() == "SgnBackward0"
    assert x.signbit().tolist() == [True, True, False, False, False]
    assert ember.signbit(ember.tensor([-1, 2], device=device)).tolist() == [True, False]
    with pytest.raises(TypeError, match=r"signbit\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        ember.signbit(-1.0)


def test_binary_function_dtypes_and_errors(device):
    i = ember.tensor([1, 5], device=device)
    f = ember.tensor([1.5, 2.5], device=device)
    assert ember.maximum(i, f).tolist() == [1.5, 5.0] and ember.maximum(i, f).dtype == ember.float32
    assert ember.minimum(i, i).dtype == ember.int64
    assert ember.atan2(i, i).dtype == ember.float32
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        ember.maximum(i, 2)


def test_lerp(device):
    s = rand64(2, 3, device=device, seed=1)
    e = rand64(3, device=device, seed=2)
    w = rand64(2, 1, device=device, seed=3)
    np.testing.assert_allclose(ember.lerp(s, e, 0.25).detach().numpy(force=True),
                               (s + 0.25 * (e - s)).detach().numpy(force=True))
    assert ember.lerp(s, e, 0.5).grad_fn.name() == "LerpBackward0"
    assert s.lerp(e, w).grad_fn.name() == "LerpBackward1"
    check_grads(lambda a, b: ember.lerp(a, b, 0.3), s, e, gradgrad=True)
    check_grads(ember.lerp, s, e, w, gradgrad=True)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        ember.lerp(ember.zeros(2, device=device), ember.zeros(2, dtype=ember.float64, device=device), 0.5)
    with pytest.raises(NotImplementedError, match="\"lerp\" not implemented for 'Long'"):
        ember.lerp(ember.tensor([1], device=device), ember.tensor([2], device=device), 0.5)


FLOAT_BINARY = {"hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
                "copysign": np.copysign, "xlogy": lambda a, b: a * np.log(b)}


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary_values_grads_and_names(name, device):
    a = rand64(3, 1, device=device, low=-2, high=2, seed=1)
    b = rand64(4, device=device, low=0.5, high=2, seed=2) if name == "xlogy" else \
        rand64(4, device=device, low=-2, high=-0.5, seed=2)  # negative: copysign flips
    out = getattr(ember, name)(a, b)
    np.testing.assert_allclose(out.detach().numpy(force=True),
                               FLOAT_BINARY[name](a.detach().numpy(force=True), b.detach().numpy(force=True)),
                               rtol=1e-14)
    assert out.grad_fn.name() == name.capitalize() + "Backward0"
    assert getattr(a, name)(b).allclose(out)  # the Tensor method
    check_grads(getattr(ember, name), a, b, gradgrad=True)


def test_float_binary_special_values_as_pytorch(device):
    """Values and gradients at zeros, infinities and NaN, as PyTorch 2.13 gives them (checked by hand)."""
    def t(*values):
        return ember.tensor(values, dtype=ember.float64, device=device, requires_grad=True)
    a, b = t(0.0, 0.0, 2.0, 1.0), t(0.0, math.nan, 0.0, 3.0)
    out = ember.xlogy(a, b)
    assert str(out.tolist()) == "[0.0, nan, -inf, 1.0986122886681098]"  # 0 * log(0) is 0, 0 * log(nan) is nan
    out.sum().backward()
    assert str(a.grad.tolist()) == "[-inf, nan, -inf, 1.0986122886681098]"  # d/da = log(b) everywhere
    a, b = t(1.0, -2.0, 0.0), t(-0.0, 3.0, -1.0)
    out = ember.copysign(a, b)
    assert str(out.tolist()) == "[-1.0, 2.0, -0.0]"
    out.sum().backward()
    assert a.grad.tolist() == [-1.0, -1.0, 0.0] and b.grad.tolist() == [0.0, 0.0, 0.0]
    a, b = t(math.inf, 1000.0), t(1.0, 1000.0)
    out = ember.logaddexp(a, b)
    out.sum().backward()
    assert out[0].item() == math.inf and out[1].item() == pytest.approx(1000 + math.log(2), rel=1e-15)
    assert a.grad.tolist() == [1.0, 0.5] and b.grad.tolist() == [0.0, 0.5]
    assert ember.hypot(t(3e300), t(4e300)).item() == pytest.approx(5e300)  # no overflow


def test_float_binary_dtypes_scalars_and_errors(device):
    i = ember.tensor([3, 4], device=device)
    assert ember.hypot(i, i.flip(0)).dtype == ember.float32 and ember.hypot(i, i.flip(0)).tolist() == [5.0, 5.0]
    f = ember.tensor([0.5, 2.0], device=device)
    assert ember.xlogy(f, 2.0).allclose(f * math.log(2.0)) and ember.copysign(f, -1).tolist() == [-0.5, -2.0]
    with pytest.raises(TypeError, match=r"hypot\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        ember.hypot(f, 2.0)
    with pytest.raises(TypeError, match=r"xlogy\(\): argument 'other' \(position 2\) must be Tensor or Number, "
                                        r"not str"):
        ember.xlogy(f, "2")


@settings(max_examples=30, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       name=st.sampled_from(sorted(FLOAT_BINARY)))
def test_float_binary_functions_broadcast_like_numpy(shapes, name):
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.5, 2.0, s) for s in shapes.input_shapes)
    out = getattr(ember, name)(ember.tensor(a), ember.tensor(b))
    assert tuple(out.shape) == shapes.result_shape
    np.testing.assert_allclose(out.numpy(), FLOAT_BINARY[name](a, b).astype(np.float32), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       name=st.sampled_from(["maximum", "minimum", "fmax", "fmin", "atan2"]))
def test_binary_functions_broadcast_like_numpy(shapes, name):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes.input_shapes)
    out = getattr(ember, name)(ember.tensor(a), ember.tensor(b))
    ref = {"maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
           "atan2": np.arctan2}[name](a, b)
    assert tuple(out.shape) == shapes.result_shape
    np.testing.assert_allclose(out.numpy(), ref.astype(np.float32), rtol=1e-6)


def test_unary_rejects_non_tensors():
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ember.exp([1.0])


def test_inf_and_nan_results_come_without_numpy_warnings_in_user_code():
    import subprocess
    import sys
    code = ("import ember; x = ember.tensor([1.0, 0.0]); "
            "print((x / 0).tolist(), ember.log(x).tolist(), (x * 1e38 * 1e38).tolist())")
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stderr == ""
    assert out.stdout.strip() == "[inf, nan] [0.0, -inf] [inf, 0.0]"
