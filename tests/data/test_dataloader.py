"""DataLoader's arguments, their defaults and mutual exclusions, len(), and single-process loading."""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

import ember
from ember.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    default_collate,
)

from .datasets_for_tests import Echo, ShardedRange


def batches(loader):
    return [b.tolist() if isinstance(b, ember.Tensor) else b for b in loader]


def test_defaults_are_pytorchs():
    loader = DataLoader(Echo(5))
    assert (loader.batch_size, loader.num_workers, loader.pin_memory, loader.drop_last, loader.timeout) == \
        (1, 0, False, False, 0)
    assert loader.prefetch_factor is None and loader.persistent_workers is False
    assert isinstance(loader.sampler, SequentialSampler) and isinstance(loader.batch_sampler, BatchSampler)
    assert loader.collate_fn is default_collate
    assert batches(loader) == [[0], [1], [2], [3], [4]]
    assert DataLoader(Echo(5), num_workers=2).prefetch_factor == 2


@pytest.mark.parametrize("n, batch_size, drop_last",
                         [(10, 3, False), (10, 3, True), (9, 3, False), (2, 5, False), (2, 5, True)])
def test_batch_size_drop_last_and_len(n, batch_size, drop_last):
    loader = DataLoader(Echo(n), batch_size=batch_size, drop_last=drop_last)
    got = batches(loader)
    full = [list(range(i, min(i + batch_size, n))) for i in range(0, n, batch_size)]
    expected = [b for b in full if len(b) == batch_size] if drop_last else full
    assert got == expected and len(loader) == len(expected)


def test_shuffle_is_a_permutation_reproducible_from_manual_seed_and_from_a_generator():
    ember.manual_seed(0)
    a = sum(batches(DataLoader(Echo(50), batch_size=7, shuffle=True)), [])
    b = sum(batches(DataLoader(Echo(50), batch_size=7, shuffle=True)), [])
    ember.manual_seed(0)
    c = sum(batches(DataLoader(Echo(50), batch_size=7, shuffle=True)), [])
    assert sorted(a) == list(range(50)) and a != list(range(50))
    assert a == c and a != b
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    ember.manual_seed(1)
    d = batches(DataLoader(Echo(50), batch_size=7, shuffle=True, generator=g1))
    ember.manual_seed(2)
    assert d == batches(DataLoader(Echo(50), batch_size=7, shuffle=True, generator=g2))


def test_shuffled_passes_differ():
    loader = DataLoader(Echo(30), batch_size=30, shuffle=True)
    assert batches(loader) != batches(loader)


def test_sampler_and_batch_sampler_are_used():
    sampler = [4, 2, 0, 1]
    assert batches(DataLoader(Echo(5), batch_size=2, sampler=sampler)) == [[4, 2], [0, 1]]
    assert batches(DataLoader(Echo(5), batch_sampler=[[3], [1, 2], [0, 4, 4]])) == [[3], [1, 2], [0, 4, 4]]
    loader = DataLoader(Echo(6), batch_sampler=BatchSampler(SequentialSampler(range(6)), 4, drop_last=False))
    assert loader.batch_size is None and batches(loader) == [[0, 1, 2, 3], [4, 5]] and len(loader) == 2


def test_batch_size_none_turns_off_batching_and_converts_numpy():
    ds = [np.arange(3), np.arange(3) + 1]
    out = list(DataLoader(ds, batch_size=None))
    assert all(isinstance(t, ember.Tensor) for t in out) and [t.tolist() for t in out] == [[0, 1, 2], [1, 2, 3]]
    assert len(DataLoader(ds, batch_size=None)) == 2


def test_collate_fn_pads_variable_length_sequences():
    sentences = [[1, 2, 3], [4], [5, 6]]

    def pad(batch):
        longest = max(len(s) for s in batch)
        return ember.tensor([s + [0] * (longest - len(s)) for s in batch]), ember.tensor([len(s) for s in batch])

    (x, lengths), (x2, lengths2) = DataLoader(sentences, batch_size=2, collate_fn=pad)
    assert x.tolist() == [[1, 2, 3], [4, 0, 0]] and lengths.tolist() == [3, 1]
    assert x2.tolist() == [[5, 6]] and lengths2.tolist() == [2]


def test_tensor_dataset_batches_are_tensors_of_the_right_dtype():
    ds = TensorDataset(ember.arange(12.0).reshape(6, 2), ember.arange(6))
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.dtype == ember.float32 and y.dtype == ember.int64
    assert x.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]] and y.tolist() == [0, 1, 2, 3]


def test_getitems_is_used_for_a_whole_batch():
    class Batched(Echo):
        calls = 0

        def __getitems__(self, indices):
            Batched.calls += 1
            return [i * 10 for i in indices]

    assert batches(DataLoader(Batched(5), batch_size=2)) == [[0, 10], [20, 30], [40]] and Batched.calls == 3


def test_iterable_dataset_batches_in_order_with_drop_last_and_len():
    assert batches(DataLoader(ShardedRange(0, 7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches(DataLoader(ShardedRange(0, 7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(ShardedRange(0, 3), batch_size=None)) == [0, 1, 2]  # default_convert keeps ints

    class Sized(ShardedRange):
        def __len__(self):
            return self.end - self.start

    assert len(DataLoader(Sized(0, 7), batch_size=3)) == 3
    assert len(DataLoader(Sized(0, 7), batch_size=3, drop_last=True)) == 2
    with pytest.raises(TypeError):
        len(DataLoader(ShardedRange(0, 7), batch_size=3))


@pytest.mark.parametrize("kwargs, message", [
    ({"shuffle": True, "sampler": [0, 1]}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive with batch_size"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "sampler": [0]}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching"),
    ({"batch_size": 0}, "batch_size should be a positive integer value, but got batch_size=0"),
    ({"num_workers": -1}, "num_workers option should be a non-negative int"),
    ({"timeout": -1}, "timeout option should be a non-negative number"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": 0}, "prefetch_factor option should be a positive int"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"multiprocessing_context": "spawn"}, "multiprocessing_context can only be used with multi-process loading"),
    ({"num_workers": 1, "multiprocessing_context": "teleport"}, "should specify a valid start method"),
])
def test_bad_arguments_are_refused_with_pytorchs_message(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DataLoader(Echo(4), **kwargs)


def test_multiprocessing_context_must_be_a_context_or_a_name():
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object"):
        DataLoader(Echo(4), num_workers=1, multiprocessing_context=42)


@pytest.mark.parametrize("name", ["shuffle", "sampler", "batch_sampler"])
def test_iterable_datasets_refuse_sampling_options(name):
    value = {"shuffle": True, "sampler": [0], "batch_sampler": [[0]]}[name]
    with pytest.raises(ValueError, match=f"DataLoader with IterableDataset: expected unspecified {name} option"):
        DataLoader(ShardedRange(0, 3), **{name: value})


@pytest.mark.parametrize("attr",
                         ["batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"])
def test_sampling_attributes_are_frozen_after_init(attr):
    loader = DataLoader(Echo(4))
    with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
        setattr(loader, attr, None)


def test_pin_memory_without_a_pinning_backend_is_a_no_op_that_warns_once():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true"):
        loader = DataLoader(TensorDataset(ember.arange(4.0)), batch_size=2, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (a,), (b,) = loader
    assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0] and not a.is_pinned()


def test_random_sampler_from_shuffle_uses_the_generator():
    g = ember.Generator().manual_seed(0)
    loader = DataLoader(Echo(5), shuffle=True, generator=g)
    assert isinstance(loader.sampler, RandomSampler) and loader.sampler.generator is g


def test_every_pass_is_a_fresh_iterator_and_len_matches():
    loader = DataLoader(Echo(5), batch_size=2)
    it = iter(loader)
    assert len(it) == 3 and next(it).tolist() == [0, 1]
    assert batches(loader) == [[0, 1], [2, 3], [4]] and next(it).tolist() == [2, 3]


def test_counts_of_a_dict_dataset():
    ds = [{"x": np.ones(2, np.float32) * i, "label": i % 2} for i in range(6)]
    out = list(DataLoader(ds, batch_size=3))
    assert [b["label"].tolist() for b in out] == [[0, 1, 0], [1, 0, 1]]
    assert collections.Counter(type(v).__name__ for b in out for v in b.values()) == {"Tensor": 4}
