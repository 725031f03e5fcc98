"""With a DistributedSampler whose set_epoch is never called, the loader advances the epoch itself and says so once."""
from __future__ import annotations

import warnings

import pytest

from ember.data import BatchSampler, DataLoader, DistributedSampler

from .datasets_for_tests import Echo


def order(loader):
    return [i for b in loader for i in b.tolist()]


def test_the_loader_advances_the_epoch_when_the_user_never_does_and_warns_once():
    sampler = DistributedSampler(Echo(40), num_replicas=2, rank=0, shuffle=True, seed=0)
    loader = DataLoader(Echo(40), batch_size=5, sampler=sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = order(loader)  # the first pass is epoch 0, as the user set up: no warning
    with pytest.warns(UserWarning, match=r"set_epoch\(\) was never called.*now 1"):
        second = order(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        third = order(loader)
    assert sampler.epoch == 2 and len({tuple(first), tuple(second), tuple(third)}) == 3
    reference = DistributedSampler(Echo(40), num_replicas=2, rank=0, shuffle=True, seed=0)
    reference.set_epoch(1)
    assert second == list(reference)


def test_the_loader_leaves_the_epoch_alone_once_the_user_sets_it():
    sampler = DistributedSampler(Echo(40), num_replicas=2, rank=1, shuffle=True, seed=0)
    loader = DataLoader(Echo(40), batch_size=5, sampler=sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            sampler.set_epoch(7)
            assert order(loader) == list(sampler)
    assert sampler.epoch == 7


def test_a_distributed_sampler_inside_a_batch_sampler_is_advanced_too():
    sampler = DistributedSampler(Echo(20), num_replicas=1, rank=0, shuffle=True, seed=3)
    loader = DataLoader(Echo(20), batch_sampler=BatchSampler(sampler, 4, drop_last=False))
    first = order(loader)
    with pytest.warns(UserWarning, match="set_epoch"):
        second = order(loader)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
