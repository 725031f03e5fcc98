"""What only a real GPU shows (marker ``cuda``; skipped without one): asynchronous copies from pinned memory,
event timing, CuPy's own out-of-memory error, several GPUs."""
import pytest

import ember
from tests.conftest import require_gpu

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def _gpu():
    require_gpu()


def test_non_blocking_copies_on_a_side_stream():
    src = ember.arange(1 << 20, dtype=ember.int64).pin_memory()  # an exact sum
    assert src.is_pinned()
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        dst = src.to("cuda", non_blocking=True)
        total = dst.sum()
    s.synchronize()
    assert total.item() == (1 << 20) * ((1 << 20) - 1) // 2


def test_event_timing_of_a_matmul():
    a = ember.randn(2048, 2048, device="cuda")
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        a = a @ a / 2048
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0.0 and end.query()


def test_cupys_out_of_memory_becomes_embers():
    total = ember.cuda.get_device_properties().total_memory
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(total, dtype=ember.float32, device="cuda")  # four times the GPU's memory
    assert "cuda backend could not allocate" in str(info.value)
    ember.cuda.empty_cache()


def test_memory_statistics_and_empty_cache():
    ember.cuda.empty_cache()
    before = ember.cuda.memory_reserved()
    x = ember.empty(1 << 26, device="cuda")
    assert ember.cuda.memory_reserved() >= before + (1 << 28)
    del x
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() <= before


def test_properties_and_second_gpu():
    props = ember.cuda.get_device_properties(0)
    assert props.total_memory > 0 and props.major >= 5 and props.multi_processor_count > 0
    if ember.cuda.device_count() > 1:
        with ember.cuda.device(1):
            y = ember.ones(3, device="cuda:1") * 2
        assert y._data.device.id == 1 and y.to("cuda:0")._data.device.id == 0
