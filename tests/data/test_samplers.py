"""Samplers: exact order for the deterministic ones, distribution checks (fixed seeds, chi-square bounds) for
the random ones, reproducibility, PyTorch's argument checks and messages."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.data import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

#: P(chi-square with k degrees of freedom > bound) < 1e-5 for each k used here
CHI2_BOUND = {3: 26, 4: 28, 5: 30, 9: 37, 19: 52}


def chi2(counts, expected):
    counts, expected = np.asarray(counts, dtype=float), np.asarray(expected, dtype=float)
    return ((counts - expected) ** 2 / expected).sum()


def assert_uniform(values, k):
    """``values`` (ints in [0, k)) look uniform: chi-square with k - 1 degrees of freedom."""
    counts = np.bincount(values, minlength=k)
    assert len(counts) == k
    assert chi2(counts, np.full(k, len(values) / k)) < CHI2_BOUND[k - 1]


def gen(seed):
    return ember.Generator().manual_seed(seed)


RANDOM_SAMPLERS = {
    "random": lambda g: RandomSampler(range(20), generator=g),
    "random_replacement": lambda g: RandomSampler(range(20), replacement=True, num_samples=30, generator=g),
    "random_more": lambda g: RandomSampler(range(7), num_samples=30, generator=g),
    "subset": lambda g: SubsetRandomSampler(list(range(0, 40, 2)), generator=g),
    "weighted": lambda g: WeightedRandomSampler(np.arange(1.0, 21.0), 30, generator=g),
    "weighted_no_replacement": lambda g: WeightedRandomSampler(np.arange(1.0, 21.0), 15, replacement=False,
                                                               generator=g),
}


# -- Sampler / SequentialSampler ----------------------------------------------------------------------------------
def test_sampler_base():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.raises(TypeError, match="has no len"):
        len(Sampler())


def test_sequential_sampler_order_and_len():
    s = SequentialSampler("abcde")
    assert list(s) == [0, 1, 2, 3, 4] and list(s) == [0, 1, 2, 3, 4]
    assert len(s) == 5 and s.data_source == "abcde"
    assert list(SequentialSampler([])) == [] and len(SequentialSampler([])) == 0


def test_sequential_sampler_follows_data_source_length():
    data = [1, 2]
    s = SequentialSampler(data)
    data.append(3)
    assert list(s) == [0, 1, 2] and len(s) == 3


# -- RandomSampler -----------------------------------------------------------------------------------------------
def test_random_sampler_is_a_permutation():
    s = RandomSampler(range(50), generator=gen(0))
    out = list(s)
    assert sorted(out) == list(range(50)) and out != list(range(50))
    assert len(s) == 50 and s.num_samples == 50 and s.replacement is False


def test_random_sampler_more_samples_than_items_without_replacement():
    out = list(RandomSampler(range(7), num_samples=17, generator=gen(1)))
    assert len(out) == 17
    assert sorted(out[:7]) == sorted(out[7:14]) == list(range(7))  # whole permutations first
    assert len(set(out[14:])) == 3  # then the start of one more
    assert len(list(RandomSampler(range(7), num_samples=3, generator=gen(1)))) == 3


def test_random_sampler_with_replacement():
    s = RandomSampler(range(5), replacement=True, num_samples=1000, generator=gen(0))
    out = list(s)
    assert len(out) == len(s) == 1000
    assert set(out) == set(range(5))
    assert len(list(RandomSampler(range(5), replacement=True))) == 5


def test_random_sampler_with_replacement_crosses_draw_blocks():
    n = (1 << 16) * 2 + 5
    out = list(RandomSampler(range(3), replacement=True, num_samples=n, generator=gen(0)))
    assert len(out) == n and set(out) == {0, 1, 2}


def test_random_sampler_with_replacement_is_uniform():
    assert_uniform(list(RandomSampler(range(10), replacement=True, num_samples=50_000, generator=gen(0))), 10)


def test_random_sampler_permutations_are_uniform():
    """Each item is first equally often, over many passes of one sampler (fresh draws each pass)."""
    s = RandomSampler(range(5), generator=gen(0))
    assert_uniform([next(iter(s)) for _ in range(5000)], 5)
    ember.manual_seed(0)
    s = RandomSampler(range(5))
    assert_uniform([list(s)[2] for _ in range(5000)], 5)


def test_random_sampler_num_samples_follows_data_source():
    data = [1, 2, 3]
    s = RandomSampler(data)
    data.append(4)
    assert len(s) == 4 and sorted(s) == [0, 1, 2, 3]


def test_random_sampler_argument_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    for bad in (0, -2, 2.5, "3", True):
        with pytest.raises(ValueError, match=f"num_samples should be a positive integer value, but got "
                                             f"num_samples={bad}"):
            RandomSampler(range(3), num_samples=bad)
    with pytest.raises(ValueError, match="but got num_samples=0"):
        RandomSampler([])


# -- SubsetRandomSampler -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("indices", [[5, 9, 2, 7], range(2, 10, 2), ember.tensor([5, 9, 2, 7]),
                                     np.array([5, 9, 2, 7])], ids=["list", "range", "tensor", "ndarray"])
def test_subset_random_sampler_permutes_the_indices(indices):
    s = SubsetRandomSampler(indices, generator=gen(0))
    out = list(s)
    assert sorted(out) == sorted(np.asarray(indices).tolist())
    assert len(s) == 4 and all(type(i) is int for i in out)


def test_subset_random_sampler_is_uniform():
    s = SubsetRandomSampler([10, 11, 12, 13], generator=gen(0))
    assert_uniform([next(iter(s)) - 10 for _ in range(4000)], 4)


def test_subset_random_sampler_empty():
    assert list(SubsetRandomSampler([])) == [] and len(SubsetRandomSampler([])) == 0


# -- WeightedRandomSampler ---------------------------------------------------------------------------------------
def test_weighted_sampler_frequencies_follow_weights():
    weights = [1.0, 2.0, 3.0, 4.0, 0.0, 10.0]
    out = list(WeightedRandomSampler(weights, 40_000, generator=gen(0)))
    counts = np.bincount(out, minlength=6)
    assert counts[4] == 0  # zero weight: never drawn
    keep = [0, 1, 2, 3, 5]
    p = np.array([weights[i] for i in keep]) / sum(weights)
    assert chi2(counts[keep], p * len(out)) < CHI2_BOUND[4]


def test_weighted_sampler_without_replacement():
    s = WeightedRandomSampler([0.5, 0.1, 3.0, 1.0], 4, replacement=False, generator=gen(0))
    out = list(s)
    assert sorted(out) == [0, 1, 2, 3] and len(s) == 4
    # the first index drawn follows the weights
    w = np.array([1.0, 2.0, 3.0, 4.0])
    s = WeightedRandomSampler(w, 2, replacement=False, generator=gen(1))
    firsts = []
    for _ in range(4000):
        a, b = list(s)
        assert a != b
        firsts.append(a)
    assert chi2(np.bincount(firsts, minlength=4), w / w.sum() * 4000) < CHI2_BOUND[3]


def test_weighted_sampler_accepts_tensors_and_arrays():
    for weights in (ember.tensor([0.0, 1.0]), ember.tensor([0.0, 1.0], dtype=ember.float32), np.array([0, 2])):
        s = WeightedRandomSampler(weights, 5, generator=gen(0))
        assert list(s) == [1] * 5
        assert s.weights.dtype == ember.float64
        assert all(type(i) is int for i in s)


def test_weighted_sampler_argument_errors():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"num_samples should be a positive integer value, but got "
                                             f"num_samples={bad}"):
            WeightedRandomSampler([1.0], bad)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=0"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 2)


def test_weighted_sampler_bad_weights_fail_when_drawing():
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False))
    with pytest.raises(RuntimeError, match="element < 0"):
        list(WeightedRandomSampler([-1.0, 2.0], 3))


# -- what every random sampler shares ------------------------------------------------------------------------------
@pytest.mark.parametrize("make", RANDOM_SAMPLERS.values(), ids=RANDOM_SAMPLERS.keys())
def test_random_samplers_reproducible_with_manual_seed(make):
    s = make(None)
    ember.manual_seed(11)
    first, second = list(s), list(s)
    assert first != second  # each pass draws a fresh seed
    ember.manual_seed(11)
    assert list(s) == first and list(s) == second
    assert all(type(i) is int for i in first)


@pytest.mark.parametrize("make", RANDOM_SAMPLERS.values(), ids=RANDOM_SAMPLERS.keys())
def test_random_samplers_reproducible_with_generator(make):
    a, b = make(gen(5)), make(gen(5))
    pass1 = list(a)
    assert list(b) == pass1
    assert list(a) != pass1  # the generator moved on
    ember.manual_seed(0)
    c = list(make(gen(5)))
    ember.manual_seed(1)
    assert list(make(gen(5))) == c == pass1  # the global seed does not matter with a generator


@pytest.mark.parametrize("make", RANDOM_SAMPLERS.values(), ids=RANDOM_SAMPLERS.keys())
def test_random_samplers_draw_nothing_before_the_first_item(make):
    """As PyTorch's generator-based samplers: iter() alone leaves the default generator alone."""
    s = make(None)
    ember.manual_seed(2)
    it = iter(s)
    after_iter = ember.rand(3).tolist()
    ember.manual_seed(2)
    assert ember.rand(3).tolist() == after_iter
    ember.manual_seed(2)
    next(it)
    assert ember.rand(3).tolist() != after_iter


@pytest.mark.parametrize("make", RANDOM_SAMPLERS.values(), ids=RANDOM_SAMPLERS.keys())
def test_random_samplers_len(make):
    s = make(gen(0))
    assert len(list(s)) == len(s)


# -- BatchSampler ------------------------------------------------------------------------------------------------
def test_batch_sampler_exact_batches():
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert list(BatchSampler(range(6), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert list(BatchSampler(range(2), 5, False)) == [[0, 1]]
    assert list(BatchSampler(range(2), 5, True)) == []
    assert list(BatchSampler([], 5, False)) == []


def test_batch_sampler_lengths():
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    assert len(BatchSampler(range(9), 3, False)) == 3
    s = BatchSampler(range(5), 2, False)
    assert (s.sampler, s.batch_size, s.drop_last) == (range(5), 2, False)


def test_batch_sampler_over_any_iterable():
    assert list(BatchSampler((i * 10 for i in range(5)), 2, False)) == [[0, 10], [20, 30], [40]]
    with pytest.raises(TypeError, match="has no len"):
        len(BatchSampler(iter(range(3)), 2, False))


def test_batch_sampler_over_random_sampler():
    s = BatchSampler(RandomSampler(range(10), generator=gen(0)), 4, False)
    batches = list(s)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(itertools.chain(*batches)) == list(range(10))
    assert list(s) != batches


def test_batch_sampler_passes_are_independent_and_lazy():
    reads = []

    class Counting(Sampler):
        def __iter__(self):
            reads.append(1)
            return iter(range(5))

    s = BatchSampler(Counting(), 2, False)
    it = iter(s)
    assert reads == []  # the inner sampler is asked for its indices on the first next(), as in PyTorch
    assert next(it) == [0, 1] and reads == [1]
    assert list(s) == [[0, 1], [2, 3], [4]] and list(it) == [[2, 3], [4]]


def test_batch_sampler_batches_are_fresh_lists():
    batches = list(BatchSampler(range(4), 2, False))
    batches[0].append(99)
    assert batches[1] == [2, 3]
    assert all(type(b) is list for b in BatchSampler(range(5), 2, True))


def test_batch_sampler_argument_errors():
    for bad in (0, -3, 2.0, "4", True, None):
        with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, but got "
                                             f"batch_size={bad}"):
            BatchSampler(range(3), bad, False)
    for bad in (0, 1, "no", None):
        with pytest.raises(ValueError, match=f"drop_last should be a boolean value, but got drop_last={bad}"):
            BatchSampler(range(3), 2, bad)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(1, 40), st.booleans())
def test_batch_sampler_property(n, batch_size, drop_last):
    s = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    batches = list(s)
    assert len(batches) == len(s) == (n // batch_size if drop_last else -(-n // batch_size))
    assert all(len(b) == batch_size for b in batches[:-1])
    if batches:
        assert 0 < len(batches[-1]) <= batch_size
        assert len(batches[-1]) == batch_size or not drop_last
    flat = list(itertools.chain(*batches))
    assert flat == list(range(len(flat)))
    assert len(flat) == (n - n % batch_size if drop_last else n)
