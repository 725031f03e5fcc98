"""ember's random numbers on the CPU are PyTorch's for the same seed (tests/fixtures/torch_rng.json, made by
tests/fixtures/make_torch_rng_fixtures.py from PyTorch 2.13), and the generator's state is PyTorch's."""
import hashlib
import json
import pathlib
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._mt19937 import MT19937Engine
from ember.ops._avx_math import fma32
from ember.ops._cpu_distributions import permutation

FIXTURE = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "torch_rng.json").read_text())
SEEDS = (0, 1, 2**40 + 7)
SIZES = (1, 15, 16, 17, 1000)
BIG = 1 << 20
BIG_CASES = ("rand_f32", "rand_f64", "randn_f32", "randn_f64", "normal__f32", "normal__f64", "uniform__f32",
             "randint_10", "bernoulli__p", "dropout", "exponential_")


def cases(n):
    """The calls of make_torch_rng_fixtures.py, in ember."""
    probs32 = ember.linspace(0, 1, n)
    weights = ember.arange(1, n + 1, dtype=ember.float32)
    means, stds = weights / n - 0.5, weights / n  # exactly rounded in both libraries (linspace may differ)
    return {
        "rand_f32": lambda: ember.rand(n),
        "rand_f64": lambda: ember.rand(n, dtype=ember.float64),
        "randn_f32": lambda: ember.randn(n),
        "randn_f64": lambda: ember.randn(n, dtype=ember.float64),
        "randint_10": lambda: ember.randint(0, 10, (n,)),
        "randint_wide": lambda: ember.randint(-5, 2**33, (n,)),
        "randperm": lambda: ember.randperm(n),
        "normal__f32": lambda: ember.empty(n).normal_(0.5, 2.0),
        "normal__f64": lambda: ember.empty(n, dtype=ember.float64).normal_(-1.0, 0.5),
        "uniform__f32": lambda: ember.empty(n).uniform_(-2.5, 3.7),
        "bernoulli_t32": lambda: ember.bernoulli(probs32),
        "bernoulli_t64": lambda: ember.bernoulli(probs32.double()),
        "bernoulli__p": lambda: ember.empty(n).bernoulli_(0.3),
        "multinomial_norep": lambda: ember.multinomial(weights, min(n, 5)),
        "multinomial_rep": lambda: ember.multinomial(weights, 7, replacement=True),
        "multinomial_one": lambda: ember.multinomial(weights, 1, replacement=True),
        "dropout": lambda: F.dropout(ember.ones(n), 0.3),
        "randn_pair": lambda: ember.cat([ember.randn(1), ember.randn(1, dtype=ember.float64).float()]),
        "rand_f16": lambda: ember.rand(n, dtype=ember.float16),
        "normal_tensor_mean": lambda: ember.normal(means, 0.5),
        "normal_tensor_std": lambda: ember.normal(0.3, stds),
        "normal_tensors": lambda: ember.normal(means, stds),
        "normal_floats": lambda: ember.normal(2.0, 3.0, size=(n,)),
        "bernoulli_p": lambda: ember.bernoulli(ember.empty(n), 0.7),
        "bernoulli__tensor": lambda: ember.empty(n).bernoulli_(probs32),
        "random__10": lambda: ember.empty(n).random_(10),
        "exponential_": lambda: ember.empty(n).exponential_(),
        "randn_strided": lambda: ember.empty(n, 2).normal_()[:, 0].clone(),
        "normal__strided": lambda: ember.empty(n, 2)[:, 0].normal_(),
    }


def assert_matches(tensor, entry):
    a = np.ascontiguousarray(tensor.detach().numpy())
    assert (str(a.dtype), list(a.shape)) == (entry["dtype"], entry["shape"])
    if "hex" in entry:
        expected = np.frombuffer(bytes.fromhex(entry["hex"]), dtype=a.dtype).reshape(a.shape)
        np.testing.assert_array_equal(a, expected)
    else:
        head = np.frombuffer(bytes.fromhex(entry["head"]), dtype=a.dtype)
        np.testing.assert_array_equal(a.reshape(-1)[:8], head)
        assert hashlib.sha256(a.tobytes()).hexdigest() == entry["sha256"], "values after the first 8 differ"


@pytest.mark.parametrize("name", list(cases(1)))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_equals_pytorch(seed, n, name):
    fn = cases(n)[name]
    ember.manual_seed(seed)
    value = fn()
    entry = FIXTURE["stream"][f"{seed}/{name}/{n}"]
    assert_matches(value, entry["out"])
    assert_matches(ember.rand(1), entry["next"])  # the call used as many words as PyTorch's


def test_state_has_pytorchs_layout_and_round_trips():
    g = ember.Generator().manual_seed(2**40 + 7)
    state = g.get_state().numpy()
    assert state.shape == (5056,)
    seed, left, seeded, nxt = np.frombuffer(state[:24].tobytes(), dtype="<u8,<i4,<i4,<u8")[0].tolist()
    assert (seed, left, seeded, nxt) == (2**40 + 7, 1, 1, 0)  # PyTorch's CPUGeneratorImplState after manual_seed
    ember.randn(1, generator=g)  # leaves the second Box-Muller value cached, which the state carries
    saved = g.get_state()
    a = ember.randn(3, generator=g)
    b = ember.randn(3, generator=ember.Generator().set_state(saved))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_state_is_pytorchs_byte_for_byte():
    entry = FIXTURE["generator"]
    ember.manual_seed(2**40 + 7)
    ember.rand(3)
    ember.randn(1)  # the scalar Box-Muller leaves its second value in the state
    assert ember.get_rng_state().numpy().tobytes().hex() == entry["state"]
    ember.manual_seed(0)
    ember.set_rng_state(ember.tensor(np.frombuffer(bytes.fromhex(entry["state"]), dtype=np.uint8)))
    assert_matches(ember.randn(5, dtype=ember.float64), entry["after"])  # starts with the cached value


def test_unseeded_processes_start_from_fresh_seeds():
    code = "import ember; print(ember.initial_seed(), ember.Generator().initial_seed())"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs[0][0] != runs[1][0]
    assert runs[0][1] == runs[1][1] == "67280421310721"  # torch.Generator()'s fixed seed


@pytest.mark.parametrize("name", BIG_CASES)
def test_a_million_values_equal_pytorchs(name):
    ember.manual_seed(0)
    value = cases(BIG)[name]()
    entry = FIXTURE["stream"][f"0/{name}/{BIG}"]
    assert_matches(value, entry["out"])
    assert_matches(ember.rand(1), entry["next"])


def _to_float32(value: Fraction) -> np.float32:
    """``value`` rounded once to float32 (to nearest, ties to even)."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda f: (abs(Fraction(float(f)) - value), int(np.array(f).view(np.uint32)) & 1))


def test_fma32_rounds_once():
    # 8(1 + 2**-23) * 8(1 - 2**-23) + (2**30 + 2**7) lies 2**-40 below a float32 half-way point that float64
    # rounds onto: one rounding gives 2**30 + 2**7, two roundings (ties to even) 2**30 + 2**8
    a, b = np.float32(8 * (1 + 2**-23)), np.float32(8 * (1 - 2**-23))
    c = np.float32(2**30 + 2**7)
    assert fma32(np.array([a]), b, c)[0] == c
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(2000).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 30, 2000)
               for _ in range(3))
    expected = [_to_float32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))) for p, q, r in zip(x, y, z)]
    np.testing.assert_array_equal(fma32(x, y, z), np.array(expected, dtype=np.float32))


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_randperm_is_the_sequential_fisher_yates_shuffle(seed):
    for n in [*range(2, 200), 1000, 4097]:
        engine = MT19937Engine(seed)
        fast = permutation(engine, n)
        engine = MT19937Engine(seed)
        perm = list(range(n))
        for k, step in enumerate((engine.words(n - 1) % np.arange(n, 1, -1, dtype=np.uint32)).tolist()):
            perm[k], perm[k + step] = perm[k + step], perm[k]
        assert fast.tolist() == perm, n
