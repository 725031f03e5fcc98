"""Pinned host memory: a documented no-op with only the CPU backend, real pinning through a backend that has it."""
import numpy as np
import pytest

import ember
from ember.backends import Backend
from ember.backends.cpu import BACKEND as CPU


class PinningBackend(Backend):
    """A fake accelerator whose "pinned" memory is a fresh NumPy copy it remembers."""

    xp = CPU.xp
    dtypes = CPU.dtypes

    def __init__(self, name, available=True, count=1):
        self.name, self.available, self.count = name, available, count
        self.pinned = []

    def is_available(self):
        return self.available

    def device_count(self):
        return self.count

    def from_numpy(self, array, device):
        return array

    def to_numpy(self, array):
        return array

    def pin_memory(self, array):
        out = np.array(array, copy=True)
        self.pinned.append(out)
        return out


class BackendPlugin:
    def __init__(self, backend):
        self.backend = backend

    @ember.hookimpl
    def ember_backends(self):
        return [self.backend]


@pytest.fixture
def register_backend():
    """Register fake backends for one test; unregister them after."""
    names = []

    def register(backend):
        names.append(ember.register_plugin(BackendPlugin(backend), f"test-{backend.name}"))
        return backend
    yield register
    for name in names:
        ember.unregister_plugin(name)


@pytest.fixture
def gpu(register_backend):
    return register_backend(PinningBackend("fakegpu"))


# -- only the CPU backend (and the strict example plugin, which has no pinned memory) ----------------------------

def test_without_a_pinning_backend_pin_memory_is_a_no_op():
    assert not ember.memory.can_pin_memory()
    x = ember.tensor([1.0, 2.0])
    assert x.pin_memory() is x
    assert not x.is_pinned()


def test_creation_with_pin_memory_works_unpinned_without_a_pinning_backend():
    x = ember.tensor([[1, 2], [3, 4]], pin_memory=True)
    assert x.tolist() == [[1, 2], [3, 4]] and not x.is_pinned()
    e = ember.empty(3, pin_memory=True, requires_grad=True)
    assert e.shape == (3,) and e.is_leaf and e.requires_grad and not e.is_pinned()


def test_a_backend_without_pinned_memory_does_not_count():
    assert "strict" in ember.list_backends()
    assert type(ember.device("strict").backend).pin_memory is Backend.pin_memory
    assert ember.memory.pinning_backend() is None


def test_pinning_a_tensor_that_is_not_on_the_cpu_is_an_error(device):
    x = ember.ones(2, device=device)
    if device == "cpu":
        assert x.pin_memory() is x
        return
    with pytest.raises(RuntimeError, match=rf"cannot pin 'ember.FloatTensor' on device '{device}': only CPU tensors"):
        x.pin_memory()
    with pytest.raises(RuntimeError, match="only CPU tensors can be pinned"):
        ember.tensor([1.0], device=device, pin_memory=True)


# -- a backend with pinned memory ------------------------------------------------------------------------------

def test_can_pin_memory_once_a_backend_has_pinned_memory(gpu):
    assert ember.memory.can_pin_memory()
    assert ember.memory.pinning_backend() is gpu


def test_pin_memory_copies_into_the_backends_pinned_memory(gpu):
    x = ember.arange(6, dtype=ember.int32).reshape(2, 3)
    y = x.pin_memory()
    assert y is not x and y.is_pinned() and not x.is_pinned()
    assert y.device == ember.device("cpu") and y.dtype is ember.int32 and y.tolist() == x.tolist()
    assert len(gpu.pinned) == 1 and y.data_ptr() == gpu.pinned[0].__array_interface__["data"][0]
    assert y.data_ptr() != x.data_ptr()
    assert y.pin_memory() is y  # already pinned: nothing to do
    assert len(gpu.pinned) == 1


def test_views_of_pinned_memory_are_pinned_and_new_results_are_not(gpu):
    y = ember.zeros(2, 3).pin_memory()
    assert all(v.is_pinned() for v in (y[0], y.view(6), y.t(), y.detach(), y.data))
    assert not (y + 1).is_pinned()
    assert not y.clone().is_pinned()


def test_pin_memory_is_differentiable(gpu):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.pin_memory()
    assert y.is_pinned() and y.grad_fn.name() == "PinMemoryBackward0"
    (y * ember.tensor([3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_creation_with_pin_memory_gives_a_pinned_leaf(gpu):
    x = ember.tensor([1.0, 2.0], pin_memory=True, requires_grad=True)
    assert x.is_pinned() and x.is_leaf and x.requires_grad and x.tolist() == [1.0, 2.0]
    e = ember.empty(2, 2, dtype=ember.float64, pin_memory=True)
    assert e.is_pinned() and e.dtype is ember.float64 and e.shape == (2, 2)
    assert not ember.empty(2).is_pinned()


def test_pinned_tensors_count_in_cpu_memory(gpu):
    before = ember.memory_allocated()
    y = ember.zeros(100).pin_memory()
    assert ember.memory_allocated() - before == 400 == y.nbytes
    del y
    assert ember.memory_allocated() == before


def test_a_tensor_on_the_pinning_backends_own_device_cannot_be_pinned(gpu):
    x = ember.ones(2, device="fakegpu")
    with pytest.raises(RuntimeError, match="on device 'fakegpu': only CPU tensors can be pinned"):
        x.pin_memory()


@pytest.mark.parametrize("available, count", [(False, 1), (True, 0)])
def test_a_pinning_backend_without_a_usable_device_does_not_pin(register_backend, available, count):
    register_backend(PinningBackend("absentgpu", available=available, count=count))
    assert not ember.memory.can_pin_memory()
    x = ember.ones(2)
    assert x.pin_memory() is x


def test_unregistering_the_backend_ends_pinning():
    name = ember.register_plugin(BackendPlugin(PinningBackend("shortgpu")), "test-shortgpu")
    try:
        assert ember.memory.can_pin_memory()
    finally:
        ember.unregister_plugin(name)
    assert not ember.memory.can_pin_memory()
    assert ember.ones(1).pin_memory().is_pinned() is False
