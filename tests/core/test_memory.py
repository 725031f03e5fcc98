"""Memory accounting: bytes held by live tensors per device, the peak, and the tools around them."""
import gc

import pytest

import ember


@pytest.fixture(autouse=True)
def _collect():
    gc.collect()  # tensors of earlier tests that sit in reference cycles must not die mid-test
    yield


def test_allocation_grows_by_exactly_nbytes_and_del_frees_it(device):
    before = ember.memory_allocated(device)
    x = ember.zeros(10, 7, dtype=ember.float64, device=device)
    assert ember.memory_allocated(device) - before == 560 == x.nbytes
    y = ember.ones(3, dtype=ember.int32, device=device)
    assert ember.memory_allocated(device) - before == 560 + 12
    del x
    assert ember.memory_allocated(device) - before == 12
    del y
    assert ember.memory_allocated(device) == before


@pytest.mark.parametrize("dtype, itemsize", [(ember.float16, 2), (ember.bfloat16, 2), (ember.uint8, 1),
                                             (ember.bool, 1), (ember.int64, 8)])
def test_counts_each_dtype_by_its_item_size(dtype, itemsize):
    before = ember.memory_allocated()
    x = ember.zeros(100, dtype=dtype)
    assert ember.memory_allocated() - before == 100 * itemsize
    del x
    assert ember.memory_allocated() == before


def test_views_do_not_add(device):
    x = ember.zeros(4, 5, device=device)
    before = ember.memory_allocated(device)
    views = [x.view(20), x[1], x.detach(), x.t(), x.data, x.unsqueeze(0)]
    assert ember.memory_allocated(device) == before
    del x
    assert ember.memory_allocated(device) == before  # the views keep the storage alive
    del views
    assert ember.memory_allocated(device) == before - 80


def test_results_of_ops_are_counted():
    x = ember.ones(100)
    before = ember.memory_allocated()
    y = x * 2
    assert ember.memory_allocated() - before == 400
    del y
    assert ember.memory_allocated() == before


def test_peak_and_reset(device):
    ember.reset_peak_memory_stats(device)
    base = ember.memory_allocated(device)
    assert ember.max_memory_allocated(device) == base
    x = ember.zeros(1000, device=device)
    y = ember.zeros(500, device=device)
    del x, y
    assert ember.max_memory_allocated(device) == base + 6000
    assert ember.memory_allocated(device) == base
    ember.reset_peak_memory_stats(device)
    assert ember.max_memory_allocated(device) == base
    z = ember.zeros(10, device=device)
    assert ember.max_memory_allocated(device) == base + 40
    del z


def test_cpu_and_cpu0_are_the_same_device():
    x = ember.zeros(256, device="cpu:0")
    assert ember.memory_allocated("cpu") == ember.memory_allocated("cpu:0") == ember.memory_allocated()
    assert ember.max_memory_allocated("cpu") == ember.max_memory_allocated(ember.device("cpu", 0))
    before = ember.memory_allocated("cpu:0")
    del x
    assert before - ember.memory_allocated("cpu") == 1024


def test_logical_cpu_devices_are_counted_separately(two_cpus):
    cpu0, cpu1 = ember.memory_allocated("cpu:0"), ember.memory_allocated("cpu:1")
    x = ember.zeros(100, device="cpu:1")
    assert ember.memory_allocated("cpu:1") - cpu1 == 400
    assert ember.memory_allocated("cpu:0") == cpu0
    y = x.to("cpu:0")  # a copy on the other device
    assert ember.memory_allocated("cpu:0") - cpu0 == 400
    del x
    assert ember.memory_allocated("cpu:1") == cpu1
    assert ember.memory_allocated("cpu:0") - cpu0 == 400
    del y


def test_reserved_stats_cache_and_synchronize(device):
    x = ember.zeros(100, device=device)
    assert ember.memory_reserved(device) >= ember.memory_allocated(device) >= 400
    stats = ember.memory_stats(device)
    assert {k: stats[k] for k in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                                  "reserved_bytes.all.current")} == {
        "allocated_bytes.all.current": ember.memory_allocated(device),
        "allocated_bytes.all.peak": ember.max_memory_allocated(device),
        "reserved_bytes.all.current": ember.memory_reserved(device)}
    assert ember.empty_cache(device) is None
    assert ember.synchronize(device) is None
    assert ember.empty_cache() is None and ember.synchronize() is None
    del x


def test_unknown_devices_are_errors(two_cpus):
    with pytest.raises(RuntimeError, match="no ember backend for device type 'nope'"):
        ember.memory_reserved("nope")
    with pytest.raises(ValueError, match="a bare device index"):
        ember.memory_allocated(0)
    with pytest.raises(RuntimeError, match="device cpu:5 does not exist"):
        ember.synchronize("cpu:5")


def test_setting_data_moves_the_memory_count_instead_of_keeping_the_old_bytes():
    base = ember.memory_allocated()
    t = ember.zeros(1000)  # 4000 bytes
    t.data = ember.zeros(10, dtype=ember.float64)  # the old 4000 bytes are freed, the new 80 counted once
    assert ember.memory_allocated() - base == 80
    del t
    assert ember.memory_allocated() == base


def test_an_output_saved_for_backward_is_counted_until_backward_lets_it_go():
    import gc
    x = ember.randn(100, 100, requires_grad=True)
    base = ember.memory_allocated()
    y = ember.relu(x)  # ReLU keeps its output for backward
    loss = y.sum()
    held = ember.memory_allocated() - base
    del y
    gc.collect()
    assert ember.memory_allocated() - base == held == 100 * 100 * 4 + 4  # the node still holds y's array
    loss.backward()
    assert ember.memory_allocated() - base == x.grad.numel() * 4 + 4  # the saved array is gone; the grad came
    y = ember.relu(x)
    y.sum().backward()
    assert ember.memory_allocated() - base == 2 * (100 * 100 * 4) + 4  # y is still alive: counted once, on y
    del y
    gc.collect()
    assert ember.memory_allocated() - base == 100 * 100 * 4 + 4
