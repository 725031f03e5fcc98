"""ember.cuda streams and events on the CuPy stand-in."""
import pytest

import ember


def test_stream_context_makes_the_stream_current(cuda_standin):
    s = ember.cuda.Stream()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        y = ember.ones(3, device="cuda") * 2
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    s.synchronize()
    assert s.query() and y.tolist() == [2.0, 2.0, 2.0]
    with ember.cuda.stream(None):  # changes nothing
        assert ember.cuda.current_stream() == ember.cuda.default_stream()


def test_stream_on_another_device(cuda_standin):
    s = ember.cuda.Stream("cuda:1")
    assert s.device == ember.device("cuda:1") and s.cuda_stream != 0
    with ember.cuda.stream(s):
        assert ember.cuda.current_device() == 1 and ember.cuda.current_stream(1) == s
    assert ember.cuda.current_device() == 0


def test_events_time_and_order_work(cuda_standin):
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    ember.ones(1000, device="cuda").sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    s = ember.cuda.Stream()
    s.wait_event(end)
    end.wait(s)
    s.wait_stream(ember.cuda.current_stream())
    assert isinstance(s.record_event(), ember.cuda.Event)


def test_elapsed_time_errors(cuda_standin):
    plain, timed = ember.cuda.Event(), ember.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(timed)
    with pytest.raises(RuntimeError, match="both events recorded"):
        timed.elapsed_time(ember.cuda.Event(enable_timing=True))


def test_synchronize(cuda_standin):
    ember.cuda.synchronize()
    ember.cuda.synchronize("cuda:1")
    ember.memory.synchronize("cuda:0")
