"""APIs that real PyTorch programs use and that stopped them on ember: ``ember.autograd.Variable``,
``ember.accelerator``, ``ember.backends.cudnn`` / ``mps``, the ``Tensor.is_cuda`` family, ``Tensor.new_*`` and
PyTorch's grad_fn class names. Expected values read off PyTorch 2.13."""
import pytest

import ember
from ember.autograd import Variable
from ember.backends.backend import Backend


# -- Variable --------------------------------------------------------------------------------------------------------
def test_variable_returns_a_tensor_sharing_data_without_history():
    t = ember.ones(2)
    v = Variable(t, requires_grad=True)
    assert type(v) is ember.Tensor and v is not t
    assert v.requires_grad and not t.requires_grad and v.is_leaf and v.grad_fn is None
    assert v.data_ptr() == t.data_ptr()
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    b = ember.ones(2, requires_grad=True) * 2
    plain = Variable(b)
    assert plain.grad_fn is None and not plain.requires_grad


def test_every_tensor_is_a_variable_and_bad_data_is_refused():
    assert isinstance(ember.zeros(1), Variable) and not isinstance([1], Variable)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        Variable(ember.ones(1), volatile=True)


# -- accelerator -----------------------------------------------------------------------------------------------------
class _Fake(Backend):
    """A non-CPU backend with two devices (NumPy arrays underneath, as the CPU's)."""

    name = "fakeacc"

    def __init__(self, count):
        super().__init__()
        self.count, self.synced = count, []

    def device_count(self):
        return self.count

    def is_available(self):
        return True

    def synchronize(self, device):
        self.synced.append(str(device))


@pytest.fixture
def no_accelerator(monkeypatch):
    cpu = ember._plugins.backends()["cpu"]
    monkeypatch.setattr(ember.accelerator, "_backends", lambda: {"cpu": cpu})


class _FakePlugin:
    def __init__(self, backend):
        self.backend = backend

    @ember.hookimpl
    def ember_backends(self):
        return [self.backend]


@pytest.fixture
def fake_accelerator(monkeypatch):
    fake = _Fake(2)
    name = ember.register_plugin(_FakePlugin(fake), "test-fake-accelerator")
    # the example strict backend sorts after it: only the fake one and the CPU are seen
    monkeypatch.setattr(ember.accelerator, "_current", {})
    try:
        yield fake
    finally:
        ember.unregister_plugin(name)


def test_accelerator_without_one_answers_as_pytorch_on_a_cpu_machine(no_accelerator):
    assert ember.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is None
    assert ember.accelerator.device_count() == 0
    for fn in (ember.accelerator.current_device_index, ember.accelerator.synchronize):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            fn()


def test_accelerator_answers_with_the_installed_non_cpu_backend(fake_accelerator):
    acc = ember.accelerator
    assert acc.is_available() and acc.device_count() == 2
    assert acc.current_accelerator() == ember.device("fakeacc")
    assert acc.current_device_index() == 0
    with acc.device_index(1):
        assert acc.current_device_index() == 1
        acc.synchronize()
    assert acc.current_device_index() == 0
    assert fake_accelerator.synced == ["fakeacc:1"]
    with pytest.raises(RuntimeError, match="Invalid device index 2: the fakeacc accelerator has 2 device"):
        acc.set_device_index(2)


def test_the_example_strict_backend_plugin_counts_as_an_accelerator():
    # the test environment installs examples/plugins' array-api-strict backend, a non-CPU backend like a GPU's
    assert ember.accelerator.current_accelerator() == ember.device("strict")
    x = ember.ones(3, device="strict")
    before = ember.accelerator.memory_allocated()
    y = ember.ones(5, device="strict")
    assert ember.accelerator.memory_allocated() - before == 20
    del x, y


# -- cudnn and mps switches --------------------------------------------------------------------------------------------
def test_cudnn_switches_are_settable_and_report_no_cudnn_here():
    cudnn = ember.backends.cudnn
    assert (cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32) == (False, False, True, True)
    assert cudnn.is_available() is False and cudnn.version() is None
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True):
        assert cudnn.benchmark and cudnn.deterministic
    assert not cudnn.benchmark and not cudnn.deterministic
    cudnn.benchmark = True  # what training scripts do
    try:
        assert ember.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False


# -- the Tensor.is_* family ------------------------------------------------------------------------------------------
def test_device_and_layout_predicates():
    t = ember.ones(2)
    assert t.is_cpu and not (t.is_cuda or t.is_xpu or t.is_mps or t.is_meta or t.is_ipu or t.is_xla)
    assert not (t.is_sparse or t.is_sparse_csr or t.is_quantized or t.is_mkldnn or t.is_nested)
    assert not t.is_conj() and not t.is_neg()
    assert t.is_signed() and not ember.ones(1, dtype=ember.uint8).is_signed()
    assert not ember.ones(1, dtype=ember.bool).is_signed()
    s = ember.ones(2, device="strict")
    assert not s.is_cpu and not s.is_cuda


# -- Tensor.new_* ----------------------------------------------------------------------------------------------------
def test_new_factories_take_dtype_and_device_from_the_tensor():
    t = ember.ones(2, 3, dtype=ember.float64, requires_grad=True)
    z = t.new_zeros(2)
    assert z.tolist() == [0.0, 0.0] and z.dtype == ember.float64 and not z.requires_grad
    assert t.new_zeros((2, 2)).shape == (2, 2)
    assert t.new_ones(3, dtype=ember.int32).tolist() == [1, 1, 1]
    assert t.new_full((2,), 7).tolist() == [7.0, 7.0] and t.new_full((2,), 7).dtype == ember.float64
    assert t.new_empty(2, 1).shape == (2, 1)
    assert t.new_tensor([1, 2]).dtype == ember.float64
    assert t.new_zeros(2, requires_grad=True).requires_grad
    s = ember.ones(1, device="strict")
    assert s.new_zeros(2).device == s.device
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        copy = t.new_tensor(t)
    assert copy.grad_fn is None and not copy.requires_grad


# -- grad_fn class names ---------------------------------------------------------------------------------------------
def test_grad_fn_classes_carry_pytorchs_names():
    x = ember.ones(2, requires_grad=True)
    assert type((x + 1).grad_fn).__name__ == "AddBackward0"
    assert type((x * x).sum().grad_fn).__name__ == "SumBackward0"
    assert type(x.exp().grad_fn).__name__ == "ExpBackward0"
    assert type(x.exp().grad_fn).__qualname__ == "Exp"  # the op's code is still found by its own name
