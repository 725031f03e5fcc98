"""ember-numba's parallel kernels run on ember's thread count (``ember.set_num_threads``), not on every core."""
from __future__ import annotations

import numpy as np
import pytest

import ember

numba = pytest.importorskip("numba")
plugin = pytest.importorskip("ember_numba.plugin")


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


@pytest.mark.parametrize("count", [1, 2, 64])
def test_a_kernel_call_gives_numba_ember_s_thread_count(threads, count):
    ember.set_num_threads(count)
    p, g, b = np.ones(8, np.float32), np.ones(8, np.float32), np.ones(8, np.float32)
    f = np.float32
    kernel = ember._plugins.cpu_kernels()["sgd_update"]
    kernel(p, g, b, f(0.5), f(1), f(0.1), False, True)
    assert numba.get_num_threads() == min(count, numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(b, np.full(8, 1.5, np.float32))
    np.testing.assert_array_equal(p, np.full(8, 1 - np.float32(1.5) * np.float32(0.1), np.float32))


def test_numba_s_pool_start_leaves_the_thread_s_openmp_count_alone():
    """numba's OpenMP layer sets the launching thread's OpenMP thread count to every core; ember-onednn's kernels
    would then run on all of them. In a fresh process: one OpenMP thread before the first parallel kernel, and
    after it."""
    import subprocess
    import sys

    script = """
import ctypes, numpy as np, ember
from ember_numba import plugin
gomp = ctypes.CDLL("libgomp.so.1")
gomp.omp_set_num_threads(1)
ember.set_num_threads(1)
p = np.ones(1 << 16, np.float32)
ember._plugins.cpu_kernels()["sgd_update"](p, p.copy(), p.copy(), *map(np.float32, (0.5, 1, 0.1)), False, True)
import numba
print(numba.threading_layer(), gomp.omp_get_max_threads())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    layer, count = out.stdout.split()
    assert count == "1", (layer, count)


def test_a_serial_kernel_does_not_start_numba_s_pool():
    """The random transforms and the other one-thread kernels leave numba's thread pool unstarted (fresh process)."""
    import subprocess
    import sys

    script = """
import ember
from numba.np.ufunc import parallel
ember.manual_seed(0)
x = ember.randn(1 << 17)
print(parallel._is_initialized)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False"]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_of_the_pool_s_process_runs_the_kernels_serially(threads):
    """numba kills a forked child that launches a parallel kernel on GNU OpenMP after its parent did; the plugin
    runs a serial compile of the kernel there instead, with the same results."""
    import os

    ember.set_num_threads(2)
    f = np.float32
    kernel = ember._plugins.cpu_kernels()["sgd_update"]
    rng = np.random.default_rng(0)
    p0, g, b0 = (rng.standard_normal(1 << 16).astype(f) for _ in range(3))
    p, b = p0.copy(), b0.copy()
    kernel(p, g, b, f(0.9), f(1), f(0.1), False, True)  # the parent's pool starts here
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only for the parent's results
        q, c = p0.copy(), b0.copy()
        kernel(q, g, c, f(0.9), f(1), f(0.1), False, True)
        os._exit(0 if np.array_equal(q, p) and np.array_equal(c, b) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
