"""nn.init: gains, fans, the distributions each initialiser draws from (moments and bounds over many draws),
orthogonality, determinism under ember.manual_seed / a generator, errors."""
import math

import numpy as np
import pytest

import ember
from ember.nn import init


def values(t):
    return t.detach().numpy(force=True).astype(np.float64).ravel()


def check_moments(t, mean, std, rel=0.02):
    v = values(t)
    assert abs(v.mean() - mean) < rel * std
    assert abs(v.std() - std) < rel * std


@pytest.fixture(autouse=True)
def seeded():
    ember.manual_seed(1234)


# -- gains and fans --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,param,expected", [
    # values printed by torch.nn.init.calculate_gain (PyTorch 2.13), checked against the formulas by hand
    ("linear", None, 1), ("conv1d", None, 1), ("conv2d", None, 1), ("conv3d", None, 1),
    ("conv_transpose1d", None, 1), ("conv_transpose2d", None, 1), ("conv_transpose3d", None, 1),
    ("sigmoid", None, 1), ("tanh", None, 5 / 3), ("relu", None, math.sqrt(2)),
    ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))), ("leaky_relu", 0.2, 1.3867504905630728),
    ("leaky_relu", 1, 1.0), ("leaky_relu", math.sqrt(5), math.sqrt(1 / 3)), ("selu", None, 0.75),
])
def test_calculate_gain(name, param, expected):
    assert init.calculate_gain(name, param) == pytest.approx(expected, rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="negative_slope 0.1 not a valid number"):
        init.calculate_gain("leaky_relu", "0.1")


@pytest.mark.parametrize("shape,fans", [
    ((5, 3), (3, 5)),                # Linear weight [out, in]
    ((8, 4, 3), (12, 24)),           # Conv1d [out, in, k]
    ((16, 3, 5, 5), (75, 400)),      # Conv2d
    ((2, 6, 3, 3, 3), (162, 54)),    # Conv3d
    ((7, 0), (0, 7)),
])
def test_fan_in_and_fan_out(shape, fans):
    # PyTorch's own helper, mirrored: every init_ scales by these fans, which random samples cannot give back exactly
    assert init._calculate_fan_in_and_fan_out(ember.empty(*shape)) == fans


def test_fans_need_two_dimensions():
    for t in (ember.empty(5), ember.tensor(1.0)):
        with pytest.raises(ValueError, match="fewer than 2 dimensions"):
            init._calculate_fan_in_and_fan_out(t)
        with pytest.raises(ValueError, match="fewer than 2 dimensions"):
            init.xavier_uniform_(t)


# -- plain distributions ------------------------------------------------------------------------------------
def test_uniform_and_normal():
    t = ember.empty(400, 500, requires_grad=True)  # a parameter: filled in place, still a leaf
    assert init.uniform_(t, -2.0, 3.0) is t
    v = values(t)
    assert v.min() >= -2.0 and v.max() < 3.0
    check_moments(t, 0.5, 5 / math.sqrt(12))
    assert t.is_leaf and t.requires_grad and t.grad_fn is None and t._version > 0
    init.normal_(t, mean=1.5, std=0.25)
    check_moments(t, 1.5, 0.25)


def test_constant_ones_zeros_eye():
    t = ember.empty(2, 3, dtype=ember.float64, requires_grad=True)
    assert init.constant_(t, 0.3) is t and values(t).tolist() == [0.3] * 6
    assert values(init.ones_(t)).tolist() == [1.0] * 6
    assert values(init.zeros_(t)).tolist() == [0.0] * 6
    init.eye_(t)
    assert np.array_equal(t.detach().numpy(), np.eye(2, 3))
    tall = init.eye_(ember.empty(4, 2))
    assert np.array_equal(tall.numpy(), np.eye(4, 2))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(2, 2, 2))


def test_dirac():
    w = init.dirac_(ember.empty(4, 3, 3, 5))  # 4 outputs, 3 inputs: output 3 has no input to copy
    expected = np.zeros((4, 3, 3, 5))
    for d in range(3):
        expected[d, d, 1, 2] = 1
    assert np.array_equal(w.numpy(), expected)
    grouped = init.dirac_(ember.empty(4, 2, 3), groups=2)  # 2 outputs per group, each copying inputs 0 and 1
    expected = np.zeros((4, 2, 3))
    for g in range(2):
        for d in range(2):
            expected[2 * g + d, d, 1] = 1
    assert np.array_equal(grouped.numpy(), expected)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(3, 2, 3), groups=2)


# -- scaled initialisers -------------------------------------------------------------------------------------
def test_xavier():
    w = ember.empty(300, 200, 2)  # fan_in 400, fan_out 600
    init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 1000)
    assert np.abs(values(w)).max() <= bound
    check_moments(w, 0.0, bound / math.sqrt(3))
    init.xavier_normal_(w, gain=0.5)
    check_moments(w, 0.0, 0.5 * math.sqrt(2 / 1000))


@pytest.mark.parametrize("a,mode,nonlinearity", [
    (0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"), (0, "fan_out", "relu"),
    (0.1, "FAN_OUT", "tanh"),
])
def test_kaiming(a, mode, nonlinearity):
    w = ember.empty(64, 32, 5, 5)  # conv weight: fan_in 800, fan_out 1600
    fan = 800 if mode.lower() == "fan_in" else 1600
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity)
    assert np.abs(values(w)).max() <= math.sqrt(3) * std
    check_moments(w, 0.0, std)
    init.kaiming_normal_(w, a=a, mode=mode, nonlinearity=nonlinearity)
    check_moments(w, 0.0, std)


def test_kaiming_errors_and_empty_tensors():
    with pytest.raises(ValueError, match="Mode fan_avg not supported, please use one of \\['fan_in', 'fan_out'\\]"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")
    empty = ember.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_normal_(empty) is empty


# -- truncated normal ----------------------------------------------------------------------------------------
def truncated_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std^2) restricted to [a, b] (the textbook formulas)."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    shift = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - shift ** 2
    return mean + std * shift, std * math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [
    (0.0, 1.0, -2.0, 2.0),     # most of the mass inside: redraw what falls outside
    (0.5, 0.02, 0.47, 0.6),    # asymmetric, still most of the mass
    (0.0, 1.0, 1.5, 3.0),      # a tail holding 6.5% of the mass: uniform candidates, density acceptance
    (0.0, 2.0, -0.1, 0.1),     # a narrow window around the mean
])
def test_trunc_normal(mean, std, a, b):
    t = ember.empty(200, 500, requires_grad=True)
    assert init.trunc_normal_(t, mean, std, a, b) is t
    v = values(t)
    assert v.min() >= a and v.max() <= b
    m, s = truncated_moments(mean, std, a, b)
    assert abs(v.mean() - m) < 0.02 * s and abs(v.std() - s) < 0.02 * s


def test_trunc_normal_warns_far_from_the_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        t = init.trunc_normal_(ember.empty(100), mean=5.0, std=1.0, a=-1.0, b=1.0)
    assert np.all(np.abs(values(t)) <= 1.0)


# -- orthogonal and sparse -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 6), (3, 7), (7, 3), (4, 2, 3, 3)])
def test_orthogonal(shape):
    w = init.orthogonal_(ember.empty(*shape, dtype=ember.float64), gain=2.0)
    flat = w.numpy().reshape(shape[0], -1)
    rows, cols = flat.shape
    gram = flat @ flat.T if rows <= cols else flat.T @ flat
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-12)
    other = init.orthogonal_(ember.empty(*shape, dtype=ember.float64))
    assert not np.allclose(other.numpy().reshape(rows, -1), flat / 2)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.empty(4))


def test_sparse():
    w = init.sparse_(ember.empty(200, 300), sparsity=0.25, std=0.5)
    v = w.numpy()
    assert ((v == 0).sum(axis=0) == 50).all()
    nonzero = v[v != 0]
    assert abs(nonzero.std() - 0.5) < 0.02 * 0.5
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(ember.empty(2, 2, 2), 0.1)


# -- randomness, backends, old names ---------------------------------------------------------------------------
@pytest.mark.parametrize("fill", [
    lambda t, g=None: init.uniform_(t, generator=g), lambda t, g=None: init.normal_(t, generator=g),
    lambda t, g=None: init.xavier_uniform_(t, generator=g), lambda t, g=None: init.kaiming_normal_(t, generator=g),
    lambda t, g=None: init.trunc_normal_(t, a=0.5, b=1.0, generator=g),
    lambda t, g=None: init.orthogonal_(t, generator=g), lambda t, g=None: init.sparse_(t, 0.5, generator=g),
])
def test_follows_manual_seed_and_generator(fill):
    ember.manual_seed(7)
    first = values(fill(ember.empty(6, 5)))
    ember.manual_seed(7)
    assert np.array_equal(values(fill(ember.empty(6, 5))), first)
    gen = ember.Generator().manual_seed(99)
    from_gen = values(fill(ember.empty(6, 5), gen))
    gen.manual_seed(99)
    ember.manual_seed(7)
    assert np.array_equal(values(fill(ember.empty(6, 5), gen)), from_gen)
    assert not np.array_equal(from_gen, first)


def test_other_backend(device):
    w = init.kaiming_uniform_(ember.empty(40, 50, device=device), a=math.sqrt(5))
    assert w.device.type == device and np.abs(values(w)).max() <= 1 / math.sqrt(50)
    q = init.orthogonal_(ember.empty(3, 5, dtype=ember.float64, device=device))
    np.testing.assert_allclose(values(q @ q.T).reshape(3, 3), np.eye(3), atol=1e-12)
    t = init.trunc_normal_(ember.empty(500, device=device), a=-0.3, b=0.3)
    assert np.abs(values(t)).max() <= 0.3


def test_deprecated_names():
    with pytest.warns(FutureWarning, match="`nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`"):
        init.uniform(ember.empty(3))
    assert init.kaiming_normal.__name__ == "kaiming_normal"
