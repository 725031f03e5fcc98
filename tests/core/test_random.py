"""Random numbers: generators and seeding, random creation ops, in-place random fills."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember


def values(t):
    return t.detach().numpy(force=True).copy()


# -- seeding and generators ---------------------------------------------------------------------------------------
DRAWS = {
    "rand": lambda d: ember.rand(4, 3, device=d),
    "randn": lambda d: ember.randn(5, device=d, dtype=ember.float64),
    "randint": lambda d: ember.randint(-5, 5, (6,), device=d),
    "randperm": lambda d: ember.randperm(7, device=d),
    "normal": lambda d: ember.normal(ember.zeros(3, device=d), 2.0),
    "bernoulli": lambda d: ember.bernoulli(ember.full((8,), 0.5, device=d)),
    "multinomial": lambda d: ember.multinomial(ember.ones(2, 5, device=d), 3),
    "multinomial_repl": lambda d: ember.multinomial(ember.ones(5, device=d), 9, replacement=True),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_seed_gives_same_numbers(device, name):
    ember.manual_seed(123)
    a = values(DRAWS[name](device))
    b = values(DRAWS[name](device))
    ember.manual_seed(123)
    np.testing.assert_array_equal(values(DRAWS[name](device)), a)
    np.testing.assert_array_equal(values(DRAWS[name](device)), b)


def test_different_seeds_give_different_numbers():
    ember.manual_seed(0)
    a = values(ember.rand(100))
    ember.manual_seed(1)
    assert not np.array_equal(values(ember.rand(100)), a)


def test_manual_seed_returns_the_cpu_generator_and_sets_initial_seed():
    g = ember.manual_seed(42)
    assert isinstance(g, ember.Generator)
    assert g is ember.default_generator
    assert g.initial_seed() == 42 == ember.initial_seed()
    assert g.device == ember.device("cpu")


def test_negative_seed_wraps_like_pytorch_and_out_of_range_is_an_error():
    assert ember.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ember.manual_seed(2 ** 64)
    with pytest.raises(ValueError, match="invalid literal"):
        ember.manual_seed("a")


def test_seed_picks_a_nondeterministic_seed_and_applies_it():
    s = ember.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64
    assert ember.initial_seed() == s
    a = values(ember.rand(3))
    ember.manual_seed(s)
    np.testing.assert_array_equal(values(ember.rand(3)), a)
    assert ember.seed() != s


def test_logical_devices_have_independent_generators_seeded_from_the_seed(two_cpus):
    ember.manual_seed(5)
    a0, a1 = values(ember.rand(50, device="cpu:0")), values(ember.rand(50, device="cpu:1"))
    assert not np.array_equal(a0, a1)
    ember.manual_seed(5)
    np.testing.assert_array_equal(values(ember.rand(50, device="cpu:1")), a1)  # cpu:1 first this time
    np.testing.assert_array_equal(values(ember.rand(50, device="cpu:0")), a0)
    g = ember.Generator("cpu:1").manual_seed(5)
    np.testing.assert_array_equal(values(ember.rand(50, device="cpu:1", generator=g)), a1)


def test_cpu_and_cpu0_share_one_default_generator():
    ember.manual_seed(9)
    a = values(ember.rand(4, device="cpu"))
    b = values(ember.rand(4, device="cpu:0"))
    ember.manual_seed(9)
    np.testing.assert_array_equal(values(ember.rand(8)), np.concatenate([a, b]))


def test_rng_state_round_trip():
    ember.manual_seed(3)
    state = ember.get_rng_state()
    assert state.dtype == ember.uint8 and state.ndim == 1
    a = values(ember.randn(10))
    ember.set_rng_state(state)
    np.testing.assert_array_equal(values(ember.randn(10)), a)
    assert ember.initial_seed() == 3


def test_rng_state_of_another_device(device):
    state = ember.get_rng_state(device)
    a = values(ember.rand(5, device=device))
    ember.set_rng_state(state, device)
    np.testing.assert_array_equal(values(ember.rand(5, device=device)), a)


def test_bad_rng_states_are_rejected():
    with pytest.raises(TypeError, match="RNG state must be an ember.ByteTensor"):
        ember.set_rng_state(ember.zeros(3))
    with pytest.raises(TypeError, match="expected an ember.ByteTensor"):
        ember.set_rng_state([1, 2])
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but found the input RNG "
                                           "state size to be 3"):
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        ember.set_rng_state(ember.zeros(5056, dtype=ember.uint8))


def test_generator_api(device):
    g = ember.Generator(device)
    assert g.device == ember.device(device)
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(11) is g and g.initial_seed() == 11
    state = g.get_state()
    a = values(ember.rand(6, generator=g, device=device))
    assert g.set_state(state) is g
    np.testing.assert_array_equal(values(ember.rand(6, generator=g, device=device)), a)
    s = g.seed()
    assert g.initial_seed() == s
    assert "initial_seed=" in repr(g)


def test_generator_does_not_touch_the_default_generator():
    ember.manual_seed(0)
    a = values(ember.rand(3))
    ember.manual_seed(0)
    ember.rand(3, generator=ember.Generator().manual_seed(99))
    np.testing.assert_array_equal(values(ember.rand(3)), a)


def test_generator_of_another_device_type_is_an_error():
    g = ember.Generator("strict")
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'strict'"):
        ember.rand(2, generator=g)
    with pytest.raises(TypeError, match="generator must be an ember.Generator, got int"):
        ember.rand(2, generator=5)


def test_generator_for_a_missing_device_is_an_error():
    with pytest.raises(RuntimeError, match="no ember backend for device type 'nope'"):
        ember.Generator("nope")


def test_fork_rng_restores_the_state():
    ember.manual_seed(1)
    with ember.random.fork_rng():
        ember.rand(10)
    a = values(ember.rand(2))
    ember.manual_seed(1)
    np.testing.assert_array_equal(values(ember.rand(2)), a)


def test_random_module_looks_like_torch_random():
    for name in ("Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
                 "default_generator"):
        assert getattr(ember.random, name) is getattr(ember, name)


# -- creation ops ----------------------------------------------------------------------------------------------------
def test_rand_shape_dtype_range_and_mean(device):
    ember.manual_seed(0)
    x = ember.rand(100, 100, device=device)
    assert x.shape == (100, 100) and x.dtype == ember.float32 and x.device == ember.device(device)
    v = values(x)
    assert v.min() >= 0 and v.max() < 1
    assert abs(v.mean() - 0.5) < 0.01
    assert ember.rand((2, 3), dtype=ember.float64, device=device).dtype == ember.float64
    assert ember.rand([4], device=device).shape == (4,)
    assert ember.rand(size=(2, 1, 2), device=device).shape == (2, 1, 2)
    assert ember.randn(size=[3], device=device).shape == (3,)
    with pytest.raises(TypeError, match="either positionally or as size=, not both"):
        ember.rand(2, size=(2,))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_precision_rand_stays_below_one(dtype):
    v = values(ember.rand(100000, dtype=dtype)).astype(np.float32)
    assert v.min() >= 0 and v.max() < 1


def test_randn_statistics(device):
    ember.manual_seed(0)
    v = values(ember.randn(20000, dtype=ember.float64, device=device))
    assert abs(v.mean()) < 0.03 and abs(v.std() - 1) < 0.03


def test_requires_grad_makes_a_leaf():
    x = ember.rand(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ember.randint(3, (2,), requires_grad=True)


def test_float_only_creation_rejects_int_dtypes():
    with pytest.raises(NotImplementedError, match="rand\\(\\): expected a floating-point dtype, got ember.int64"):
        ember.rand(2, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="randn\\(\\): expected a floating-point dtype"):
        ember.randn(2, dtype=ember.int32)


def test_bad_sizes():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        ember.rand(-1)
    with pytest.raises(TypeError, match="must be a tuple of ints, but found element of type float"):
        ember.rand(2.5)


def test_randint_forms(device):
    ember.manual_seed(0)
    x = ember.randint(10, (1000,), device=device)
    assert x.dtype == ember.int64
    assert set(values(x).tolist()) == set(range(10))
    y = values(ember.randint(-3, 3, (2, 500), device=device))
    assert y.shape == (2, 500) and y.min() == -3 and y.max() == 2
    assert values(ember.randint(3, 5, size=(100,), device=device)).tolist().count(4) > 20
    assert ember.randint(5, size=(3,), device=device).shape == (3,)
    z = ember.randint(5, (4,), dtype=ember.float32, device=device)
    assert z.dtype == ember.float32 and np.all(values(z) == np.floor(values(z)))


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        ember.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
        ember.randint(0, 5)
    with pytest.raises(TypeError, match=r"expects \(high, size\) or \(low, high, size\)"):
        ember.randint(5)
    with pytest.raises(TypeError, match="argument 'high' must be int, not float"):
        ember.randint(0, 5.5, (2,))
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ember.randint(300, (2,), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        ember.randint(3, (2,), dtype=ember.bool)
    with pytest.raises(RuntimeError, match="from is out of bounds for signed char"):
        ember.randint(-200, 2, (2,), dtype=ember.int8)


def test_randperm(device):
    ember.manual_seed(0)
    p = ember.randperm(50, device=device)
    assert p.dtype == ember.int64 and sorted(values(p).tolist()) == list(range(50))
    assert values(p).tolist() != list(range(50))
    assert ember.randperm(0, device=device).shape == (0,)
    f = ember.randperm(4, dtype=ember.float32, device=device)
    assert f.dtype == ember.float32 and sorted(values(f).tolist()) == [0.0, 1.0, 2.0, 3.0]


def test_randperm_errors():
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        ember.randperm(-1)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        ember.randperm(300, dtype=ember.uint8)
    with pytest.raises(TypeError, match="argument 'n' must be int, not float"):
        ember.randperm(2.0)


def test_like_functions(device):
    base = ember.zeros(2, 3, dtype=ember.float64, device=device)
    for fn in (ember.rand_like, ember.randn_like):
        t = fn(base)
        assert t.shape == (2, 3) and t.dtype == ember.float64 and t.device == base.device
    r = ember.randint_like(ember.zeros(4, dtype=ember.int32, device=device), 3, 5)
    assert r.dtype == ember.int32 and set(values(r).tolist()) <= {3, 4}
    assert set(values(ember.randint_like(base, 2)).ravel().tolist()) <= {0.0, 1.0}
    with pytest.raises(NotImplementedError, match="expected a floating-point dtype, got ember.int32"):
        ember.rand_like(ember.zeros(2, dtype=ember.int32))


# -- normal ------------------------------------------------------------------------------------------------------------
def test_normal_float_form(device):
    ember.manual_seed(0)
    x = ember.normal(3.0, 0.5, size=(20000,), device=device, dtype=ember.float64)
    assert x.dtype == ember.float64
    v = values(x)
    assert abs(v.mean() - 3) < 0.02 and abs(v.std() - 0.5) < 0.02
    assert ember.normal(0.0, 1.0, (2, 2), device=device).shape == (2, 2)


def test_normal_tensor_forms_broadcast(device):
    mean = ember.tensor([0.0, 100.0], device=device)
    std = ember.tensor([[0.0], [1.0]], device=device)
    assert ember.normal(mean, 1.0).shape == (2,)
    assert ember.normal(0.0, std).shape == (2, 1)
    out = values(ember.normal(mean, std))
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out[0], [0.0, 100.0])  # std 0: exactly the mean
    assert abs(out[1, 1] - 100) < 10
    assert ember.normal(mean.double(), std).dtype == ember.float64


@pytest.mark.parametrize("args, name", [
    ((ember.zeros(2, requires_grad=True), 1.0), "NormalBackward1"),
    ((0.0, ember.ones(2, requires_grad=True)), "NormalBackward2"),
    ((ember.zeros(2, requires_grad=True), ember.ones(2, requires_grad=True)), "NormalBackward3"),
])
def test_normal_gradient_is_zero_as_in_pytorch(args, name):
    out = ember.normal(*args)
    assert out.grad_fn.name() == name
    out.sum().backward()
    for a in args:
        if isinstance(a, ember.Tensor):
            np.testing.assert_array_equal(values(a.grad), [0.0, 0.0])


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(ember.zeros(2), -1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ember.normal(ember.zeros(2), -ember.ones(2))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           "non-singleton dimension 0"):
        ember.normal(ember.zeros(2), ember.ones(3))
    with pytest.raises(TypeError, match="give size="):
        ember.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="only taken when mean and std are both floats"):
        ember.normal(ember.zeros(2), 1.0, size=(3,))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ember.normal(ember.zeros(2, dtype=ember.int64), 1.0)


# -- bernoulli and multinomial -----------------------------------------------------------------------------------------
def test_bernoulli(device):
    ember.manual_seed(0)
    p = ember.tensor([0.0, 1.0, 0.3], dtype=ember.float64, device=device).expand(5000, 3)
    out = ember.bernoulli(p)
    assert out.dtype == ember.float64 and out.shape == (5000, 3)
    v = values(out)
    assert set(np.unique(v).tolist()) <= {0.0, 1.0}
    assert v[:, 0].sum() == 0 and v[:, 1].sum() == 5000 and abs(v[:, 2].mean() - 0.3) < 0.03
    q = values(ember.bernoulli(ember.zeros(4000, device=device), 0.75))
    assert abs(q.mean() - 0.75) < 0.03
    assert ember.tensor([0.5], device=device).bernoulli().shape == (1,)


def test_bernoulli_grad_fn_and_zero_gradient():
    p = ember.tensor([0.5, 0.2], requires_grad=True)
    out = ember.bernoulli(p)
    assert out.grad_fn.name() == "BernoulliBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(values(p.grad), [0.0, 0.0])


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1 to be true, but got false"):
        ember.bernoulli(ember.tensor([1.5]))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        ember.bernoulli(ember.tensor([float("nan")]))
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        ember.bernoulli(ember.tensor([0.5]), 1.5)
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"):
        ember.bernoulli(ember.tensor([1, 0]))


def test_multinomial_without_replacement(device):
    ember.manual_seed(0)
    probs = ember.tensor([[1.0, 0.0, 1.0, 2.0], [0.0, 0.0, 5.0, 1.0]], device=device)
    out = ember.multinomial(probs, 4)
    assert out.dtype == ember.int64 and out.shape == (2, 4)
    v = values(out)
    for row in v:
        assert sorted(row.tolist()) == [0, 1, 2, 3]
    assert set(v[0, :3].tolist()) == {0, 2, 3}  # the zero-weight category comes last
    assert set(v[1, 2:].tolist()) == {0, 1}
    firsts = values(ember.multinomial(ember.tensor([1.0, 3.0], device=device).expand(4000, 2), 1))
    assert abs(firsts.mean() - 0.75) < 0.03


def test_multinomial_with_replacement(device):
    ember.manual_seed(0)
    out = values(ember.multinomial(ember.tensor([0.2, 0.0, 0.8], device=device), 10000, replacement=True))
    assert out.shape == (10000,) and 1 not in out
    assert abs((out == 2).mean() - 0.8) < 0.02
    rows = values(ember.multinomial(ember.tensor([[1.0, 0.0], [0.0, 1.0]], device=device), 5, True))
    np.testing.assert_array_equal(rows, [[0] * 5, [1] * 5])
    assert ember.multinomial(ember.ones(0, 3, device=device), 2).shape == (0, 2)


@pytest.mark.parametrize("args, kwargs, exc, msg", [
    ((ember.tensor([1, 2]), 1), {}, RuntimeError, "multinomial only supports floating-point dtypes for input, got: "
                                                  "Long"),
    ((ember.ones(2, 2, 2), 1), {}, RuntimeError, "prob_dist must be 1 or 2 dim"),
    ((ember.ones(3), 4), {}, RuntimeError, r"cannot sample n_sample > prob_dist.size\(-1\) samples without "
                                           "replacement"),
    ((ember.ones(3), 0), {}, RuntimeError, "cannot sample n_sample <= 0 samples"),
    ((ember.ones(3), -1), {}, RuntimeError, "cannot sample n_sample <= 0 samples"),
    ((ember.ones(3), 2.0), {}, TypeError, r"multinomial\(\): argument 'num_samples' \(position 2\) must be int, "
                                          "not float"),
    ((ember.tensor([1.0, -1.0]), 1), {}, RuntimeError, "probability tensor contains either `inf`, `nan` or "
                                                       "element < 0"),
    ((ember.tensor([1.0, float("nan")]), 1), {}, RuntimeError, "probability tensor contains either `inf`"),
    ((ember.tensor([1.0, float("inf")]), 1), {"replacement": True}, RuntimeError, "probability tensor contains"),
    ((ember.tensor([[0.0, 0.0], [1.0, 1.0]]), 1), {}, RuntimeError, r"invalid multinomial distribution \(sum of "
                                                                    r"probabilities <= 0\)"),
    ((ember.zeros(0), 1), {}, RuntimeError, "cannot sample n_sample > prob_dist.size"),
])
def test_multinomial_errors(args, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.multinomial(*args, **kwargs)


# -- in-place fills ----------------------------------------------------------------------------------------------------
def test_uniform_normal_exponential_in_place(device):
    ember.manual_seed(0)
    x = ember.empty(10000, dtype=ember.float64, device=device)
    assert x.uniform_(-2, 3) is x and x._version == 1
    v = values(x)
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.05
    x.normal_(1.0, 2.0)
    v = values(x)
    assert abs(v.mean() - 1) < 0.06 and abs(v.std() - 2) < 0.06 and x._version == 2
    x.exponential_(4.0)
    v = values(x)
    assert v.min() >= 0 and abs(v.mean() - 0.25) < 0.01 and x._version == 3


def test_bernoulli_in_place(device):
    ember.manual_seed(0)
    x = ember.zeros(4000, dtype=ember.int64, device=device)
    x.bernoulli_(0.25)
    assert x.dtype == ember.int64 and abs(values(x).mean() - 0.25) < 0.03
    y = ember.zeros(2, 3, device=device).bernoulli_(ember.tensor([0.0, 1.0, 0.0], device=device))
    np.testing.assert_array_equal(values(y), [[0, 1, 0], [0, 1, 0]])
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        x.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        y.bernoulli_(ember.tensor([1.5, 0.0, 0.0], device=device))
    with pytest.raises(RuntimeError, match=r"p of shape \[2\] cannot be broadcast to the shape \[2, 3\]"):
        y.bernoulli_(ember.full((2,), 0.5, device=device))


def test_in_place_fill_writes_through_views():
    base = ember.zeros(2, 4)
    view = base[0]
    view.uniform_(5, 6)
    v = values(base)
    assert np.all(v[0] >= 5) and np.all(v[1] == 0)
    assert base._version == 1


@pytest.mark.parametrize("dtype, low, high", [
    (ember.bool, 0, 1), (ember.uint8, 0, 255), (ember.int8, 0, 127), (ember.float16, 0, 2 ** 11),
])
def test_random_full_range(dtype, low, high):
    ember.manual_seed(0)
    v = values(ember.zeros(20000, dtype=dtype).random_()).astype(np.int64)
    assert v.min() == low and v.max() <= high and v.max() > high * 0.9


def test_random_ranges(device):
    ember.manual_seed(0)
    x = ember.zeros(3000, device=device)
    assert set(values(x.random_(5)).tolist()) == {0, 1, 2, 3, 4}
    assert set(values(x.random_(2, 5)).tolist()) == {2, 3, 4}
    assert set(values(x.random_(to=3)).tolist()) == {0, 1, 2}
    y = ember.zeros(3000, dtype=ember.int8, device=device).random_(120, None)
    assert set(values(y).tolist()) == set(range(120, 128))
    big = values(ember.zeros(100, dtype=ember.float64, device=device).random_())
    assert big.max() > 2 ** 40 and np.all(big == np.floor(big))


def test_random_in_place_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=0 >= to=-3"):
        ember.zeros(3, dtype=ember.int64).random_(-3)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        ember.zeros(3).random_(5, 3)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ember.zeros(3, dtype=ember.uint8).random_(0, 300)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for int"):
        ember.zeros(3, dtype=ember.int32).random_(0, 2 ** 40)
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        ember.zeros(3).random_(0, 2 ** 30)


def test_float_fills_reject_int_tensors_and_bad_parameters():
    x = ember.zeros(3, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        x.uniform_()
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        x.normal_()
    with pytest.raises(RuntimeError, match="Exponential distribution is a continuous probability distribution. "
                                           "dtype must be a floating point but you specified Long"):
        x.exponential_()
    f = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > "
                                           "to=1"):
        f.uniform_(2, 1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        f.normal_(0, -1)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        f.exponential_(0)
    assert f._version == 0


def test_in_place_fill_on_leaf_that_requires_grad():
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        w.normal_()
    with ember.no_grad():
        w.normal_()
        w[0:2].uniform_()
    assert w.requires_grad and w.is_leaf and w._version == 2


def test_in_place_fill_on_view_of_leaf_that_requires_grad():
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        w[0:2].uniform_()


@pytest.mark.parametrize("call, name", [
    (lambda t: t.uniform_(), "UniformBackward0"), (lambda t: t.normal_(), "NormalBackward0"),
    (lambda t: t.bernoulli_(0.5), "BernoulliBackward2"),
    (lambda t: t.bernoulli_(ember.full((3,), 0.5)), "BernoulliBackward1"),
    (lambda t: t.random_(), "RandomBackward2"), (lambda t: t.random_(5), "RandomBackward1"),
    (lambda t: t.random_(2, 5), "RandomBackward0"), (lambda t: t.exponential_(), "ExponentialBackward0"),
])
def test_in_place_fill_on_non_leaf_records_a_zero_gradient(call, name):
    a = ember.ones(3, requires_grad=True)
    x = a * 2
    assert call(x) is x
    assert x.grad_fn.name() == name and x.requires_grad
    assert x.grad_fn.next_functions[0][0].name() == "MulBackward0"
    (x * 3).sum().backward()
    np.testing.assert_array_equal(values(a.grad), [0.0, 0.0, 0.0])


# -- properties --------------------------------------------------------------------------------------------------------
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2 ** 64 - 1), low=st.integers(-50, 50), span=st.integers(1, 50))
def test_shapes_ranges_and_reproducibility_match_numpy_rules(shape, seed, low, span):
    ember.manual_seed(seed)
    u, n, r = ember.rand(shape), ember.randn(shape), ember.randint(low, low + span, shape)
    for t in (u, n, r):
        assert tuple(t.shape) == np.empty(shape).shape
    assert np.all((values(u) >= 0) & (values(u) < 1))
    assert np.all((values(r) >= low) & (values(r) < low + span))
    ember.manual_seed(seed)
    np.testing.assert_array_equal(values(ember.rand(shape)), values(u))
