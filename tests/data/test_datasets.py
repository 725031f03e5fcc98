"""Datasets: Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset and
random_split, with PyTorch's semantics and messages, and the ``__getbatch__`` fast path."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


def ref_collate(samples):
    """What ``default_collate`` makes of these samples (tensors, tuples and dicts of them): a local
    reference, so that these tests do not depend on collate.py."""
    first = samples[0]
    if isinstance(first, ember.Tensor):
        return ember.stack(samples)
    if isinstance(first, dict):
        return {k: ref_collate([s[k] for s in samples]) for k in first}
    return [ref_collate(list(column)) for column in zip(*samples)]


def assert_same(a, b):
    """Equal nested structures of tensors: same types, dtypes, shapes and values."""
    assert type(a) is type(b)
    if isinstance(a, ember.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tolist() == b.tolist()
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    else:
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Batched(Squares):
    """A dataset with ``__getitems__`` that records its calls."""

    def __init__(self, n, short=False):
        super().__init__(n)
        self.calls, self.short = [], short

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        items = [self[i] for i in indices]
        return items[:-1] if self.short else items


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def tensor_ds(n=6):
    return TensorDataset(ember.arange(n * 2, dtype=ember.float32).reshape(n, 2), ember.arange(n) % 3)


# -- Dataset / IterableDataset ---------------------------------------------------------------------------------
def test_dataset_base_needs_getitem_and_has_no_len():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        Dataset()[0]
    with pytest.raises(TypeError, match="has no len"):
        len(Dataset())


def test_dataset_add_is_concat():
    ds = Squares(3) + Squares(2)
    assert isinstance(ds, ConcatDataset)
    assert [ds[i] for i in range(len(ds))] == [0, 1, 4, 0, 1]


def test_iterable_dataset_needs_iter():
    with pytest.raises(NotImplementedError, match="Subclasses of IterableDataset should implement __iter__"):
        iter(IterableDataset())


def test_iterable_dataset_add_is_chain():
    ds = Stream([1, 2]) + Stream([3])
    assert isinstance(ds, ChainDataset)
    assert list(ds) == [1, 2, 3]
    assert isinstance(Stream([]), Dataset)


# -- TensorDataset -----------------------------------------------------------------------------------------------
def test_tensor_dataset_items_and_len():
    x, y = ember.arange(6).reshape(3, 2), ember.tensor([7, 8, 9])
    ds = TensorDataset(x, y)
    assert len(ds) == 3 and ds.tensors == (x, y)
    a, b = ds[1]
    assert a.tolist() == [2, 3] and b.item() == 8
    a, b = ds[-1]
    assert a.tolist() == [4, 5] and b.item() == 9
    a, b = ds[0:2]
    assert a.shape == (2, 2) and b.tolist() == [7, 8]


def test_tensor_dataset_size_mismatch():
    with pytest.raises(ValueError, match=r"Size mismatch between tensors: .* got sizes \[3, 2\]"):
        TensorDataset(ember.zeros(3, 1), ember.zeros(2))


def test_tensor_dataset_needs_a_tensor():
    with pytest.raises(ValueError, match="TensorDataset needs at least one tensor"):
        TensorDataset()


def test_tensor_dataset_getbatch_is_default_collate_of_items():
    ds = tensor_ds()
    idx = [4, 0, 0, 5, 2]
    batch = ds.__getbatch__(idx)
    assert_same(batch, ref_collate([ds[i] for i in idx]))
    assert batch[0].dtype == ember.float32 and batch[1].dtype == ember.int64


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(-n, n - 1), min_size=1,
                                                                          max_size=10))))
def test_tensor_dataset_getbatch_property(case):
    n, idx = case
    ds = tensor_ds(n)
    assert_same(ds.__getbatch__(idx), ref_collate([ds[i] for i in idx]))


# -- StackDataset ------------------------------------------------------------------------------------------------
def test_stack_dataset_tuple_and_dict():
    ds = StackDataset(Squares(3), [10, 11, 12])
    assert len(ds) == 3 and ds[2] == (4, 12)
    named = StackDataset(sq=Squares(3), plain=[10, 11, 12])
    assert named[1] == {"sq": 1, "plain": 11}
    assert list(named.datasets) == ["sq", "plain"]


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match=r"either ``tuple``- \(via ``args``\) or ``dict``- .* but both types"):
        StackDataset([1], b=[2])
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match=r"Size mismatch between datasets: .* got lengths \[1, 2\]"):
        StackDataset([1], [1, 2])
    with pytest.raises(ValueError, match=r"Size mismatch between datasets: .* got lengths \[2, 3\]"):
        StackDataset(a=[1, 2], b=[1, 2, 3])


def test_stack_dataset_getitems_uses_parts_getitems():
    inner = Batched(5)
    ds = StackDataset(inner, [10, 11, 12, 13, 14])
    assert ds.__getitems__([3, 1]) == [(9, 13), (1, 11)]
    assert inner.calls == [[3, 1]]
    named = StackDataset(a=inner, b=Squares(5))
    assert named.__getitems__([2, 0]) == [{"a": 4, "b": 4}, {"a": 0, "b": 0}]
    assert named.__getitems__([]) == []


def test_stack_dataset_getitems_checks_part_output_size():
    ds = StackDataset(Batched(3, short=True), [1, 2, 3])
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        ds.__getitems__([0, 1])


def test_stack_dataset_getbatch_when_every_part_has_it():
    a, b = tensor_ds(), TensorDataset(ember.arange(6) * 10)
    idx = [5, 1, 1]
    ds = StackDataset(a, b)
    assert_same(ds.__getbatch__(idx), ref_collate([ds[i] for i in idx]))
    named = StackDataset(x=a, y=b)
    assert_same(named.__getbatch__(idx), ref_collate([named[i] for i in idx]))


def test_stack_dataset_without_getbatch_when_a_part_lacks_it():
    ds = StackDataset(tensor_ds(3), Squares(3))
    assert not hasattr(ds, "__getbatch__")
    assert getattr(ds, "__getbatch__", None) is None
    with pytest.raises(AttributeError, match="only when every stacked dataset has it"):
        ds.__getbatch__([0])


# -- ConcatDataset -----------------------------------------------------------------------------------------------
def test_concat_dataset_indexing():
    ds = ConcatDataset([Squares(3), [10, 11], Squares(0), [20]])
    assert ds.cumulative_sizes == [3, 5, 5, 6]
    assert len(ds) == 6
    assert [ds[i] for i in range(6)] == [0, 1, 4, 10, 11, 20]
    assert [ds[i] for i in range(-6, 0)] == [0, 1, 4, 10, 11, 20]
    assert ConcatDataset.cumsum([[1], [2, 3]]) == [1, 3]


def test_concat_dataset_accepts_any_iterable_of_datasets():
    ds = ConcatDataset(iter([[1], [2]]))
    assert ds.datasets == [[1], [2]] and ds[1] == 2


def test_concat_dataset_errors():
    with pytest.raises(ValueError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="ConcatDataset does not support IterableDataset .* got Stream"):
        ConcatDataset([[1], Stream([2])])
    ds = ConcatDataset([[1, 2], [3]])
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-4]
    with pytest.raises(IndexError, match="index 3 is out of range for a ConcatDataset of length 3"):
        ds[3]


# -- ChainDataset ------------------------------------------------------------------------------------------------
def test_chain_dataset():
    ds = ChainDataset([Stream([1, 2]), Stream([]), Stream([3])])
    assert list(ds) == [1, 2, 3] and list(ds) == [1, 2, 3]
    assert len(ds) == 3


def test_chain_dataset_is_lazy():
    def parts():
        yield Stream([1])
        raise AssertionError("read too early")
    it = iter(ChainDataset(parts()))
    assert next(it) == 1


def test_chain_dataset_rejects_map_style_parts():
    ds = ChainDataset([Stream([1]), Squares(2)])
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset, got Squares"):
        list(ds)
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset, got Squares"):
        len(ds)


# -- Subset ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("indices", [[4, 0, 2], (4, 0, 2), ember.tensor([4, 0, 2]), np.array([4, 0, 2])],
                         ids=["list", "tuple", "tensor", "ndarray"])
def test_subset_indices(indices):
    sub = Subset(Squares(5), indices)
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [16, 0, 4]
    assert sub[-1] == 4
    assert all(type(i) is int for i in sub.indices)


def test_subset_range_and_list_index():
    sub = Subset(tensor_ds(), range(1, 6, 2))
    assert sub.indices == range(1, 6, 2)
    assert sub[1][1].item() == 3 % 3
    x, y = sub[[0, 2]]  # a list goes to the dataset as one (fancy) index, as in PyTorch
    assert x.shape == (2, 2) and y.tolist() == [1, 5 % 3]


def test_subset_getitems():
    sub = Subset(Squares(6), [5, 3, 1])
    assert sub.__getitems__([2, 0]) == [1, 25]
    inner = Batched(6)
    sub = Subset(inner, [5, 3, 1])
    assert sub.__getitems__([2, 0]) == [1, 25]
    assert inner.calls == [[1, 5]]


def test_subset_getbatch_delegates():
    ds = tensor_ds()
    sub = Subset(ds, [5, 3, 1, 0])
    idx = [2, 2, 0]
    assert_same(sub.__getbatch__(idx), ref_collate([sub[i] for i in idx]))
    nested = Subset(sub, [3, 0])
    assert_same(nested.__getbatch__([1, 0]), ref_collate([ds[5], ds[0]]))


def test_subset_without_getbatch_when_dataset_lacks_it():
    sub = Subset(Squares(3), [0])
    assert not hasattr(sub, "__getbatch__")
    with pytest.raises(AttributeError, match="Subset has __getbatch__ only when its dataset has it, and Squares"):
        sub.__getbatch__([0])


# -- random_split ------------------------------------------------------------------------------------------------
def test_random_split_integer_lengths_partition():
    parts = random_split(range(10), [3, 7], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert all(isinstance(p, Subset) for p in parts)
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert [parts[1][i] for i in range(7)] == parts[1].indices  # range(10)[i] == i


@pytest.mark.parametrize("n, fractions, expected", [
    (10, [0.33, 0.33, 0.34], [4, 3, 3]),
    (5, [0.5, 0.5], [3, 2]),
    (7, [0.25, 0.25, 0.25, 0.25], [2, 2, 2, 1]),
    (10, [0.8, 0.2], [8, 2]),
    (3, [1.0], [3]),
])
def test_random_split_fractions_round_robin(n, fractions, expected):
    parts = random_split(range(n), fractions, generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == expected
    assert sorted(sum((p.indices for p in parts), [])) == list(range(n))


def test_random_split_warns_for_an_empty_split():
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0. This might result in an empty dataset."):
        parts = random_split(range(1), [0.5, 0.5])
    assert [len(p) for p in parts] == [1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        random_split(range(2), [0.5, 0.5])
        random_split(range(2), [2, 0])  # integer lengths: no warning, as in PyTorch


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(5), [1.5, -0.5])
    with pytest.raises(ValueError, match="Length at index 1 must be a non-negative integer .* got -1"):
        random_split(range(5), [6, -1])
    with pytest.raises(ValueError, match="Length at index 0 must be a non-negative integer .* got 0.5"):
        random_split(range(5), [0.5, 0.4])


def test_random_split_reproducible():
    def split(**kw):
        return [p.indices for p in random_split(range(20), [5, 15], **kw)]
    ember.manual_seed(3)
    a = split()
    assert split() != a  # the default generator moved on
    ember.manual_seed(3)
    assert split() == a
    assert split(generator=ember.Generator().manual_seed(1)) == split(generator=ember.Generator().manual_seed(1))
    assert split(generator=ember.Generator().manual_seed(1)) != split(generator=ember.Generator().manual_seed(2))


def test_random_split_permutation_is_uniform():
    """Over many splits, every item lands in the first (size 1) split equally often (chi-square, 9 dof)."""
    g = ember.Generator().manual_seed(0)
    trials, n = 5000, 10
    counts = np.bincount([random_split(range(n), [1, n - 1], generator=g)[0].indices[0] for _ in range(trials)],
                         minlength=n)
    expected = trials / n
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # P(chi2_9 > 40) < 1e-5


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 200), st.lists(st.integers(1, 100), min_size=1, max_size=6))
def test_random_split_fraction_sizes_property(n, weights):
    fractions = [w / sum(weights) for w in weights]  # sums to 1 up to rounding, above or below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = random_split(range(n), fractions, generator=ember.Generator().manual_seed(0))
    floors = [math.floor(n * f) for f in fractions]
    extra = n - sum(floors)
    assert [len(p) for p in parts] == [fl + (i < extra % len(floors)) + extra // len(floors)
                                       for i, fl in enumerate(floors)]
    assert sorted(sum((p.indices for p in parts), [])) == list(range(n))


def test_random_split_fractions_summing_a_hair_above_one():
    fractions = [w / 13 for w in (1, 6, 3, 3)]
    assert sum(fractions) > 1  # PyTorch rejects these; ember accepts fractions summing to 1 up to rounding
    parts = random_split(range(13), fractions, generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [1, 6, 3, 3]


class Doubled(TensorDataset):
    def __getitem__(self, index):
        return tuple(t[index] * 2 for t in self.tensors)


class DoubledStack(StackDataset):
    def __getitem__(self, index):
        return super().__getitem__(index)[::-1]


class DoubledSubset(Subset):
    def __getitem__(self, index):
        return super().__getitem__(index) * 2


@pytest.mark.parametrize("make, name", [
    (lambda: Doubled(ember.arange(3)), "TensorDataset"),
    (lambda: DoubledStack(tensor_ds(3)), "StackDataset"),
    (lambda: DoubledSubset(tensor_ds(3), [0, 1]), "Subset"),
], ids=["tensor", "stack", "subset"])
def test_getbatch_not_inherited_past_an_overridden_getitem(make, name):
    """A subclass with its own __getitem__ (e.g. a transform) must not be read around by the fast path."""
    ds = make()
    assert getattr(ds, "__getbatch__", None) is None
    with pytest.raises(AttributeError, match=f"overrides __getitem__, so it does not inherit {name}.__getbatch__"):
        ds.__getbatch__([0])


def test_subclass_keeping_getitem_keeps_getbatch():
    class Named(TensorDataset):
        pass

    ds = Named(ember.arange(4))
    assert_same(ds.__getbatch__([3, 1]), ref_collate([ds[3], ds[1]]))
    assert getattr(Subset(Named(ember.arange(4)), [1]), "__getbatch__", None) is not None
