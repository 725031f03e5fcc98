"""Pinned memory, non_blocking copies, memory statistics and out-of-memory on the CuPy stand-in."""
import pytest

import ember


def test_pin_memory_goes_through_cupys_pinned_pool(cuda_standin):
    pool = cuda_standin.get_default_pinned_memory_pool()
    before = pool.allocations
    assert ember.memory.can_pin_memory()
    x = ember.arange(4.0)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p[1:].is_pinned()
    assert pool.allocations == before + 1 and p.pin_memory() is p
    assert ember.equal(p, x)
    assert ember.tensor([1.0], pin_memory=True).is_pinned()


def test_non_blocking_copy_from_pinned_memory(cuda_standin, monkeypatch):
    calls = []
    real = cuda_standin.asarray
    monkeypatch.setattr(cuda_standin, "asarray", lambda a, *args, **kw: calls.append(kw) or real(a, *args, **kw))
    p = ember.arange(3.0).pin_memory()
    y = p.to("cuda", non_blocking=True)
    z = p.cuda(non_blocking=False)
    w = ember.arange(3.0).to("cuda", non_blocking=True)  # pageable: the copy waits
    assert calls == [{"blocking": False}, {"blocking": True}, {"blocking": True}]
    assert y.tolist() == z.tolist() == w.tolist() == [0.0, 1.0, 2.0]


def test_memory_statistics_come_from_the_pool(cuda_standin):
    pool = cuda_standin.get_default_memory_pool()
    ember.cuda.empty_cache()
    base = ember.cuda.memory_allocated()
    ember.cuda.reset_peak_memory_stats()
    x = ember.zeros(1000, device="cuda")
    assert ember.cuda.memory_allocated() - base == 4000
    assert ember.cuda.memory_reserved() == pool.total_bytes() >= pool.used_bytes() >= 4000
    y = ember.zeros(1000, device="cuda:1")
    assert ember.cuda.memory_allocated(1) >= 4000 and ember.cuda.memory_reserved("cuda:1") >= 4000
    del x
    assert ember.cuda.max_memory_allocated() - base == 4000 and ember.cuda.memory_allocated() == base
    assert ember.cuda.memory_reserved() >= 4000  # cached by the pool ...
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() == pool.used_bytes()  # ... until empty_cache
    assert ember.cuda.memory_stats(1)["reserved_bytes.all.current"] >= 4000
    del y


def test_cupys_out_of_memory_becomes_embers(cuda_standin):
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(1 << 29, device="cuda")  # 2 GiB on a 1 GiB stand-in GPU
    e = info.value
    assert e.device == ember.device("cuda") and e.requested_bytes == 1 << 31
    assert "cuda backend could not allocate" in str(e) and "Out of memory allocating" in str(e)
    with pytest.raises(ember.cuda.OutOfMemoryError):
        ember.zeros(1 << 28, dtype=ember.float64).to("cuda:1")
    assert ember.cuda.memory_stats()["num_ooms"] >= 1


def test_per_process_memory_fraction_uses_the_gpus_total(cuda_standin):
    ember.cuda.set_per_process_memory_fraction(0.5, 1)
    try:
        assert ember.memory.get_memory_limit("cuda:1") == 1 << 29
    finally:
        ember.memory.set_memory_limit(None, "cuda:1")


def test_out_of_memory_inside_an_op_reports_cupys_request(cuda_standin, monkeypatch):
    monkeypatch.setattr(cuda_standin.cuda.runtime, "TOTAL_MEMORY", 1 << 20)  # a 1 MiB GPU
    x = ember.empty(200_000, device="cuda")  # 800 KB
    with pytest.raises(ember.OutOfMemoryError) as info:
        x + 1
    assert info.value.requested_bytes == 800_000 and info.value.op == "add"
