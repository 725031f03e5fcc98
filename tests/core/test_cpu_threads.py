"""ember.set_num_threads / get_num_threads and the CPU parallel-for: threaded kernels give the one-thread results
bit for bit, errors in a slice reach the caller, nested calls run inline."""
import os
import threading

import numpy as np
import pytest
import threadpoolctl

import ember
import ember.nn.functional as F
from ember.backends import cpu_threads

from .helpers import check_grads


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


def _run(n, fn, shape, seed=0):
    ember.set_num_threads(n)
    ember.manual_seed(seed)
    x = ember.randn(*shape, requires_grad=True)
    y = fn(x)
    y.backward(ember.randn(*y.shape))
    return y.detach().numpy().copy(), x.grad.numpy().copy()


CASES = {
    "relu": (lambda x: ember.relu(x), (64, 32, 26, 26)),
    "relu of a transposed view": (lambda x: ember.relu(x.transpose(0, 1)), (64, 32, 26, 26)),
    "max_pool2d 2": (lambda x: F.max_pool2d(x, 2), (64, 64, 24, 24)),
    "max_pool2d with ties": (lambda x: F.max_pool2d(x.round(), 2), (64, 64, 24, 24)),
    "max_pool2d 3/2/1 with NaN": (lambda x: F.max_pool2d(ember.where(x > 2, float("nan"), x), 3, 2, 1),
                                  (64, 64, 24, 24)),
    "max_pool2d indices": (lambda x: F.max_pool2d(x, 2, return_indices=True)[1].float() + F.max_pool2d(x, 2),
                           (64, 64, 24, 24)),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, 2), (64, 64, 500)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), (64, 64, 24, 24)),
}


@pytest.mark.parametrize("name", CASES)
def test_two_threads_give_the_one_thread_outputs_and_gradients_bit_for_bit(name, threads):
    fn, shape = CASES[name]
    assert np.prod(shape) >= cpu_threads.MIN_ITEMS  # the threaded path runs
    one, two = _run(1, fn, shape), _run(2, fn, shape)
    for a, b in zip(one, two):
        assert np.array_equal(a, b, equal_nan=True)


def test_max_pool_without_grad_mode_is_bit_identical_too(threads):
    x = ember.randn(64, 64, 24, 24)
    with ember.no_grad():
        ember.set_num_threads(1)
        one = F.max_pool2d(x, 2).numpy()
        ember.set_num_threads(2)
        assert np.array_equal(one, F.max_pool2d(x, 2).numpy())


@pytest.mark.parametrize("fn", [ember.relu, lambda x: F.max_pool2d(x, 2), lambda x: F.max_pool2d(x, 3, 2, 1)])
def test_gradchecks_pass_on_the_threaded_path(fn, threads, monkeypatch):
    monkeypatch.setattr(cpu_threads, "MIN_ITEMS", 0)
    ember.set_num_threads(2)
    x = ember.randn(3, 2, 6, 6, dtype=ember.float64, requires_grad=True)
    check_grads(fn, x, gradgrad=True)


def test_set_num_threads_sets_numpy_s_blas_pool(threads):
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    assert {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"} <= {1}


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)])
def test_set_num_threads_refuses_bad_counts(bad, error):
    with pytest.raises(error, match="set_num_threads"):
        ember.set_num_threads(bad)


def test_an_error_in_another_thread_s_slice_is_raised_in_the_caller(threads):
    ember.set_num_threads(2)
    main = threading.get_ident()

    def part(start, stop):
        if threading.get_ident() != main:
            raise ZeroDivisionError(f"slice {start}:{stop}")

    with pytest.raises(ZeroDivisionError, match="slice 5:10") as info:
        cpu_threads.parallel_for(10, part, size=cpu_threads.MIN_ITEMS)
    assert info.traceback[-1].name == "part"


def test_a_call_from_a_pool_thread_runs_inline(threads):
    ember.set_num_threads(2)
    seen = []

    def inner(start, stop):
        seen.append((threading.get_ident(), start, stop))

    def outer(start, stop):
        cpu_threads.parallel_for(4, inner, size=cpu_threads.MIN_ITEMS)

    cpu_threads.parallel_for(2, outer, size=cpu_threads.MIN_ITEMS)
    pool_calls = [s for s in seen if s[0] != threading.get_ident()]
    # the caller's nested call split (2:4 went to the pool); the pool thread's ran whole, inline
    assert sorted((a, b) for _, a, b in pool_calls) == [(0, 4), (2, 4)]
    assert len(seen) == 3


def test_small_work_runs_inline(threads):
    ember.set_num_threads(2)
    idents = []
    cpu_threads.parallel_for(8, lambda a, b: idents.append(threading.get_ident()), size=cpu_threads.MIN_ITEMS - 1)
    assert idents == [threading.get_ident()]


@pytest.mark.parametrize("fn, shape, small", [
    (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (64, 64, 24, 24), (3, 2, 6, 6)),
    (lambda x: F.avg_pool2d(x, 2, divisor_override=3), (64, 64, 24, 24), (3, 2, 6, 6)),
    (lambda x: F.avg_pool1d(x, 2), (64, 64, 600), (3, 2, 6))])
def test_threaded_average_pools_match_one_thread_and_pass_gradchecks(fn, shape, small, threads, monkeypatch):
    one, two = _run(1, fn, shape), _run(2, fn, shape)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
    monkeypatch.setattr(cpu_threads, "MIN_ITEMS", 0)
    check_grads(fn, ember.randn(*small, dtype=ember.float64, requires_grad=True), gradgrad=True)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_pool_of_its_own(threads):
    ember.set_num_threads(2)
    x = ember.randn(64, 32, 26, 26)
    expected = ember.relu(x).numpy()  # the parent's pool has started
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads are gone; a hang would end in TimeoutError, not a pass
        os._exit(0 if np.array_equal(ember.relu(x).numpy(), expected) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
