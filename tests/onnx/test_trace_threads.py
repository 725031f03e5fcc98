"""The export trace belongs to the thread that runs it: ops other threads run meanwhile are neither recorded nor
slowed into the traced path, and two threads can trace at the same time."""
import threading
from concurrent.futures import ThreadPoolExecutor

import ember
import ember.onnx
from ember.onnx._trace import trace

TIMEOUT = 30


def _in_thread(fn):
    """Run ``fn`` in a new thread (whose context has no trace); a function that waits for its result."""
    pool = ThreadPoolExecutor(1)
    future = pool.submit(fn)
    pool.shutdown(wait=False)
    return lambda: future.result(TIMEOUT)


def _model_waiting_for(started: threading.Event, resume: threading.Event):
    def model(x):
        y = x + 1
        started.set()  # the trace is active now: let the other thread run its ops
        assert resume.wait(TIMEOUT)
        return y * 2
    return model


def _other_thread_ops(started: threading.Event, resume: threading.Event):
    assert started.wait(TIMEOUT)
    try:
        z = ember.ones(3).exp().neg()
        z += 1  # in-place arithmetic on this thread's (untraced) fast path
        return (z.sin() * 3).tolist()
    finally:
        resume.set()


def test_a_trace_records_only_its_own_threads_ops():
    started, resume = threading.Event(), threading.Event()
    join = _in_thread(lambda: trace(_model_waiting_for(started, resume), (ember.ones(2),)))
    others = _other_thread_ops(started, resume)
    tr, outputs = join()
    assert [type(r.op).name_ for r in tr.records] == ["add", "mul"]
    assert outputs[0].tolist() == [4.0, 4.0]
    assert others == ((1 - ember.ones(3).exp()).sin() * 3).tolist()


def test_two_threads_trace_at_once():
    barrier = threading.Barrier(2, timeout=TIMEOUT)

    def model(op):
        def run(x):
            y = op(x)
            barrier.wait()  # both traces are active here
            y = op(y)
            barrier.wait()
            return y
        return run
    join_a = _in_thread(lambda: trace(model(lambda t: t.exp()), (ember.ones(2),)))
    join_b = _in_thread(lambda: trace(model(lambda t: t.neg()), (ember.ones(2),)))
    (tr_a, _), (tr_b, _) = join_a(), join_b()
    assert [type(r.op).name_ for r in tr_a.records] == ["exp", "exp"]
    assert [type(r.op).name_ for r in tr_b.records] == ["neg", "neg"]
