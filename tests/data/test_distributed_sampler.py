"""DistributedSampler: partitions across ranks (disjoint, padded, drop_last), shuffling per epoch and shared
by all ranks, the epoch protocol the DataLoader relies on, defaults from the launcher's environment, errors."""
import collections
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.data import DistributedSampler, Sampler


def shares(n, replicas, **kw):
    return [list(DistributedSampler(range(n), replicas, rank, **kw)) for rank in range(replicas)]


def test_is_a_sampler_with_pytorch_attributes():
    s = DistributedSampler(range(10), num_replicas=3, rank=1)
    assert isinstance(s, Sampler)
    assert (s.num_replicas, s.rank, s.epoch, s.shuffle, s.seed, s.drop_last) == (3, 1, 0, True, 0, False)
    assert (s.num_samples, s.total_size, len(s)) == (4, 12, 4)


def test_exact_order_without_shuffle():
    assert shares(6, 3, shuffle=False) == [[0, 3], [1, 4], [2, 5]]
    assert shares(7, 3, shuffle=False) == [[0, 3, 6], [1, 4, 0], [2, 5, 1]]  # padded from the start
    assert shares(7, 3, shuffle=False, drop_last=True) == [[0, 3], [1, 4], [2, 5]]
    assert shares(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]  # fewer items than replicas: repeated
    assert shares(2, 5, shuffle=False, drop_last=True) == [[]] * 5
    assert shares(0, 2, shuffle=False) == [[], []]


def test_disjoint_cover_when_the_size_divides():
    parts = shares(12, 4, seed=3)
    assert all(len(p) == 3 for p in parts)
    assert sorted(itertools.chain(*parts)) == list(range(12))


def test_padded_cover_otherwise():
    parts = shares(10, 4)
    assert all(len(p) == 3 for p in parts)
    counts = collections.Counter(itertools.chain(*parts))
    assert set(counts) == set(range(10))
    assert sorted(counts.values()) == [1] * 8 + [2] * 2  # two indices repeated to pad 10 up to 12


def test_drop_last_drops_the_tail():
    parts = shares(10, 4, drop_last=True)
    assert all(len(p) == 2 for p in parts)
    flat = list(itertools.chain(*parts))
    assert len(set(flat)) == 8


def test_shuffle_same_across_ranks_different_across_epochs():
    def epoch_order(epoch, seed=0, n=20, replicas=3):
        samplers = [DistributedSampler(range(n), replicas, rank, seed=seed) for rank in range(replicas)]
        for s in samplers:
            s.set_epoch(epoch)
        parts = [list(s) for s in samplers]
        # interleaving the ranks' shares gives back one padded permutation: all ranks shared it
        return [i for row in itertools.zip_longest(*parts) for i in row if i is not None]

    e0 = epoch_order(0)
    assert sorted(e0[:20]) == list(range(20)) and e0[20:] == e0[:1]
    assert e0[:20] != list(range(20))
    assert epoch_order(0) == e0
    assert epoch_order(1) != e0 and sorted(epoch_order(1)[:20]) == list(range(20))
    assert epoch_order(0, seed=1) != e0
    assert epoch_order(1, seed=0) == epoch_order(0, seed=1)  # seeded by seed + epoch


def test_shuffle_ignores_the_global_seed():
    s = DistributedSampler(range(30), 2, 0)
    ember.manual_seed(0)
    a = list(s)
    ember.manual_seed(1)
    assert list(s) == a and list(s) == a  # the same epoch gives the same order, pass after pass


def test_shuffled_orders_are_uniform():
    """Across epochs, the first index of rank 0 is uniform over the dataset (chi-square, 9 dof)."""
    s = DistributedSampler(range(10), 2, 0, seed=7)
    firsts = []
    for epoch in range(3000):
        s.set_epoch(epoch)
        firsts.append(next(iter(s)))
    counts = np.bincount(firsts, minlength=10)
    assert (((counts - 300) ** 2) / 300).sum() < 37  # P(chi2_9 > 37) < 1e-5


def test_the_epoch_alone_decides_the_order():
    # (the DataLoader advancing the epoch itself is tested in test_loader_distributed_epochs.py)
    s = DistributedSampler(range(8), 2, 0)
    assert s.epoch == 0
    first = list(s)
    assert list(s) == first  # the same epoch gives the same order on every pass
    s.set_epoch(1)
    second = list(s)
    assert s.epoch == 1 and second != first
    s.set_epoch(0)
    assert list(s) == first
    s.set_epoch(1)
    assert list(s) == second


def test_defaults_from_the_launcher_environment(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    s = DistributedSampler(range(8), shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (4, 3, [3, 7])
    assert DistributedSampler(range(8), num_replicas=2, rank=1).num_replicas == 2  # arguments win


@pytest.mark.parametrize("missing, name", [("WORLD_SIZE", "num_replicas"), ("RANK", "rank")])
def test_missing_environment_says_what_to_pass(monkeypatch, missing, name):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv(missing)
    with pytest.raises(RuntimeError, match=f"{name} was not given and the {missing} environment variable is not "
                                           f"set; pass num_replicas= and rank="):
        DistributedSampler(range(4))


def test_bad_environment_value(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(RuntimeError, match="the WORLD_SIZE environment variable should be an integer, got 'two'"):
        DistributedSampler(range(4), rank=0)


@pytest.mark.parametrize("rank", [2, 3, -1, 1.0, "0"])
def test_invalid_rank(rank):
    with pytest.raises(ValueError, match=rf"Invalid rank {rank}, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=rank)


@pytest.mark.parametrize("replicas", [0, -1, 2.0, True])
def test_invalid_num_replicas(replicas):
    with pytest.raises(ValueError, match=f"num_replicas should be a positive integer value, but got "
                                         f"num_replicas={replicas}"):
        DistributedSampler(range(4), num_replicas=replicas, rank=0)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 60), st.integers(1, 9), st.booleans(), st.booleans(), st.integers(0, 5))
def test_partition_property(n, replicas, drop_last, shuffle, epoch):
    samplers = [DistributedSampler(range(n), replicas, r, shuffle=shuffle, drop_last=drop_last)
                for r in range(replicas)]
    for s in samplers:
        s.set_epoch(epoch)
    parts = [list(s) for s in samplers]
    per_rank = n // replicas if drop_last else -(-n // replicas)
    assert all(len(p) == len(s) == per_rank for p, s in zip(parts, samplers))
    flat = list(itertools.chain(*parts))
    assert all(type(i) is int and 0 <= i < n for i in flat)
    if drop_last:
        assert len(set(flat)) == len(flat)  # disjoint
    elif n:
        counts = collections.Counter(flat)
        assert set(counts) == set(range(n))  # covering,
        assert max(counts.values()) - min(counts.values()) <= 1  # repeating evenly, only to pad
