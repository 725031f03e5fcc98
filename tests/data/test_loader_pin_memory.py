"""pin_memory=True: batches land in pinned host memory where a device backend has it."""
from __future__ import annotations

import warnings

import pytest

import ember
from ember.data import DataLoader, TensorDataset
from tests.core.test_pin_memory import BackendPlugin, PinningBackend


@pytest.fixture
def pinning():
    backend = PinningBackend("fakepin")
    name = ember.register_plugin(BackendPlugin(backend), "test-data-fakepin")
    yield backend
    ember.unregister_plugin(name)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_batches_are_pinned_when_a_backend_can_pin(pinning, num_workers):
    ds = TensorDataset(ember.arange(6.0), ember.arange(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cannot pin" warning: this machine can pin now
        loader = DataLoader(ds, batch_size=4, num_workers=num_workers, pin_memory=True)
    batches = list(loader)
    assert [x.tolist() for x, _ in batches] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
    assert all(t.is_pinned() for batch in batches for t in batch)
    assert len(pinning.pinned) == 4  # two tensors in each of two batches


def test_batches_are_not_pinned_without_pin_memory(pinning):
    (x, _), = DataLoader(TensorDataset(ember.arange(2.0), ember.arange(2)), batch_size=2)
    assert not x.is_pinned() and pinning.pinned == []
