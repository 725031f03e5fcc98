"""Out of memory, explained: memory caps, ember.OutOfMemoryError and its report."""
import gc
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd.function import Op
from ember.errors import EmberError
from ember.serialization import _format as serialization_format


@pytest.fixture(autouse=True)
def _clean():
    gc.collect()  # tensors of earlier tests in reference cycles must not die mid-test
    yield
    for dev in ("cpu", "cpu:1", "strict", "cuda"):
        ember.memory.set_memory_limit(None, dev)
    ember.memory.record_memory_history(None)


def _cap(extra, device="cpu"):
    """Cap ``device`` at what it holds now plus ``extra`` bytes."""
    ember.memory.set_memory_limit(ember.memory_allocated(device) + extra, device)


def _line():
    return sys._getframe(1).f_lineno


def test_the_error_is_a_runtime_error_under_both_names():
    assert issubclass(ember.OutOfMemoryError, RuntimeError)
    assert issubclass(ember.OutOfMemoryError, EmberError)
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError


def test_a_cap_refuses_what_passes_it_and_the_count_stays(device):
    _cap(4000, device)
    before = ember.memory_allocated(device)
    x = ember.zeros(1000, device=device)  # exactly the cap
    assert ember.memory_allocated(device) == before + 4000
    with pytest.raises(ember.OutOfMemoryError) as info:
        x + 1  # an op's result
    assert ember.memory_allocated(device) == before + 4000
    with pytest.raises(ember.OutOfMemoryError):
        ember.ones(1, device=device)  # a creation function
    assert ember.memory_allocated(device) == before + 4000
    e = info.value
    assert (e.requested_bytes, e.shape, e.dtype, e.op) == (4000, (1000,), ember.float32, "add")
    assert e.limit == before + 4000 and e.allocated == before + 4000 and e.device == ember.device(device)
    del info, e  # the traceback holds the failed call's frames, and x in them
    del x
    y = ember.ones(1000, device=device)  # fits again once x is gone
    del y
    assert ember.memory_allocated(device) == before


def test_report_names_the_largest_tensor_by_shape_without_history():
    big = ember.zeros(300, 700)
    small = ember.zeros(10, 10)
    _cap(1_000_000)
    before = ember.memory_allocated()
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.ones(1000, 1000)
    e = info.value
    assert ember.memory_allocated() == before
    top = e.top_tensors[0]
    assert (top["shape"], top["dtype"], top["bytes"]) == ((300, 700), ember.float32, 840_000)
    assert top["names"] == ["big"] and top["op"] is None and top["frames"] == []
    text = str(e)
    assert "tried to allocate 3.81 MiB (shape [1000, 1000], float32) in op 'ones'" in text
    assert "[300, 700] float32  named big" in text
    assert "record_memory_history() records the op and line" in text
    assert f"test_memory_oom.py:{_line() - 10}" in text  # the line that asked
    del big, small


def test_report_names_the_largest_tensors_origin_with_history():
    ember.memory.record_memory_history()
    big = ember.randn(300, 700); made_at = _line()  # noqa: E702
    _cap(100_000)
    with pytest.raises(ember.OutOfMemoryError) as info:
        big @ big.T  # 300x300: 360,000 bytes
    e = info.value
    top = e.top_tensors[0]
    assert top["shape"] == (300, 700) and top["op"] == "randn"
    assert top["frames"][0]["line"] == made_at and top["frames"][0]["filename"] == __file__
    assert e.op in ("mm", "matmul") and e.requested_bytes == 360_000
    assert f"made by 'randn' at {__file__}:{made_at}" in str(e)
    # the last memory events come with it: the refused allocation is the last
    assert e.history[-1]["action"] == "oom" and e.history[-1]["size"] == 360_000
    assert any(ev["action"] == "alloc" and ev["shape"] == [300, 700] for ev in e.history)
    assert "memory events (oldest first):" in str(e)
    del big


def test_report_lists_every_remedy_and_the_named_tensors():
    x = ember.zeros(50_000)
    _cap(10)
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.zeros(1000)
    text = str(info.value)
    for remedy in ("ember.utils.find_max_batch_size", "with ember.no_grad():", "`del x`", "ember.memory.empty_cache()",
                   "ember.bfloat16", "ember.utils.checkpoint"):
        assert remedy in text
    del x


def test_report_counts_what_autograd_keeps_for_backward():
    a = ember.randn(100, 100, requires_grad=True)
    b = a * a  # keeps a (40,000 bytes) for backward
    c = b.exp()  # keeps its output (40,000 bytes) for backward
    _cap(0)
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.zeros(10)
    assert info.value.saved_bytes == 80_000
    assert "autograd keeps 78.12 KiB for backward" in str(info.value)
    ember.memory.set_memory_limit(None)
    c.sum().backward()  # frees what was kept
    _cap(0)
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.zeros(10)
    assert info.value.saved_bytes == 0
    del a, b, c


def test_a_model_that_fails_midway_leaves_nothing_allocated():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x = ember.randn(128, 64)
    _cap(128 * 512 * 4 + 1000)  # the first layer's output fits, its ReLU's does not
    before = ember.memory_allocated()
    try:
        model(x).sum().backward()
    except ember.OutOfMemoryError as e:
        assert e.op == "relu" and e.shape == (128, 512)
    else:
        pytest.fail("the cap did not stop the forward")
    assert ember.memory_allocated() == before
    ember.memory.set_memory_limit(None)
    model(x).sum().backward()  # and the model still trains without the cap


def test_numpys_memory_error_becomes_an_out_of_memory_error():
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.zeros(2**50)  # 4 PiB: more than any address space
    e = info.value
    assert isinstance(e.__cause__, MemoryError)
    assert e.requested_bytes == 2**52 and e.shape == (2**50,) and e.op == "zeros"
    assert "the cpu backend could not allocate it" in str(e)
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.randn(2**25, 2**25)
    assert info.value.requested_bytes == 2**52 and isinstance(info.value.__cause__, MemoryError)


class _Hungry(Op):
    name_ = "test.hungry"

    @staticmethod
    def forward(ctx, xp, a):
        raise np._core._exceptions._ArrayMemoryError((10**6, 10**6), np.dtype("float64"))


def test_an_ops_memory_error_becomes_an_out_of_memory_error_naming_the_op():
    with pytest.raises(ember.OutOfMemoryError) as info:
        _Hungry.apply(ember.ones(2))
    e = info.value
    assert e.op == "test.hungry" and e.shape == (10**6, 10**6) and e.requested_bytes == 8 * 10**12
    assert e.dtype == ember.float64
    assert isinstance(e.__cause__, MemoryError)


def test_caps_are_per_device_and_counted_in_memory_stats(two_cpus):
    ooms = ember.memory_stats("cpu:1")["num_ooms"]
    _cap(100, "cpu:1")
    x = ember.zeros(1000, device="cpu:0")  # another device: not capped
    with pytest.raises(ember.OutOfMemoryError):
        ember.zeros(1000, device="cpu:1")
    assert ember.memory_stats("cpu:1")["num_ooms"] == ooms + 1
    assert ember.memory.get_memory_limit("cpu:1") == ember.memory_allocated("cpu:1") + 100
    assert ember.memory.get_memory_limit("cpu:0") is None
    del x


def test_a_cap_below_the_peak_still_holds():
    x = ember.zeros(100_000)
    del x  # the peak is now at least 400,000 bytes above what is allocated
    _cap(1000)
    with pytest.raises(ember.OutOfMemoryError):
        ember.zeros(1000)
    ember.memory.reset_peak_memory_stats()
    with pytest.raises(ember.OutOfMemoryError):
        ember.zeros(1000)
    y = ember.zeros(250)
    del y


def test_fraction_of_the_machines_memory():
    total = ember.device("cpu").backend.total_memory(ember.device("cpu"))
    assert total > 2**20
    ember.memory.set_per_process_memory_fraction(0.25)
    assert ember.memory.get_memory_limit() == int(total * 0.25)
    ember.memory.set_memory_limit(0)  # 0 removes the cap, as None does
    assert ember.memory.get_memory_limit() is None


@pytest.mark.parametrize("bad", [-1, 1.5, "1GB", True])
def test_bad_limits_are_clear_errors(bad):
    with pytest.raises(ValueError, match="set_memory_limit expects a number of bytes"):
        ember.memory.set_memory_limit(bad)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half", None])
def test_bad_fractions_are_clear_errors(bad):
    with pytest.raises(ValueError, match="a fraction between 0 and 1"):
        ember.memory.set_per_process_memory_fraction(bad)


def test_a_backend_without_a_total_says_to_cap_in_bytes():
    with pytest.raises(RuntimeError, match="does not report the total memory of strict.*set_memory_limit"):
        ember.memory.set_per_process_memory_fraction(0.5, "strict")


def test_memory_stats_has_pytorchs_keys():
    stats = ember.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "active_bytes.all.current",
                "requested_bytes.all.current", "reserved_bytes.all.current", "num_ooms", "num_alloc_retries"):
        assert key in stats
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"] == ember.memory_allocated()


def test_loading_a_checkpoint_the_host_cannot_hold_raises_out_of_memory(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    ember.save({"w": ember.ones(1000)}, path)

    def refuse(*args, **kwargs):
        raise MemoryError("Unable to allocate 3.91 KiB for an array with shape (1000,) and data type float32")
    monkeypatch.setattr(serialization_format, "read_array", refuse)
    with pytest.raises(ember.OutOfMemoryError, match="could not allocate it"):
        ember.load(path)
