"""DataLoader worker processes: sampler order, the prefetch bound, shared memory, worker info, persistence."""
from __future__ import annotations

import gc
import mmap
import multiprocessing
import os
import time

import numpy as np
import pytest

import ember
from ember.data import DataLoader, TensorDataset

from .datasets_for_tests import Echo, Images, ShardedRange, WhoAmI

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]


def flat(loader):
    return [i for b in loader for i in b.tolist()]


def child_pids() -> set[int]:
    """The live child processes of this one (joining any that exited): workers as the OS sees them."""
    return {p.pid for p in multiprocessing.active_children()}


def mapping_of(array) -> mmap.mmap | None:
    """The shared-memory mapping under a batch's array (None when it is ordinary memory)."""
    base = array.numpy()
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, mmap.mmap) else None


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_batches_come_back_in_sampler_order(num_workers):
    ember.manual_seed(7)
    single = [b.tolist() for b in DataLoader(Echo(53), batch_size=4, shuffle=True)]
    ember.manual_seed(7)
    multi = [b.tolist() for b in DataLoader(Echo(53), batch_size=4, shuffle=True, num_workers=num_workers)]
    assert multi == single and sorted(sum(multi, [])) == list(range(53))


def test_at_most_prefetch_factor_times_num_workers_batches_are_in_flight():
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(Echo(100, counter), batch_size=1, num_workers=2, prefetch_factor=3,
                        multiprocessing_context="fork")
    it = iter(loader)
    taken = [next(it).item() for _ in range(4)]
    expected = 4 + 3 * 2
    deadline = time.monotonic() + 10
    while counter.value < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time enough for a worker that would run ahead to do so
    assert taken == [0, 1, 2, 3] and counter.value == expected
    del it


def test_arrays_arrive_in_shared_memory_with_their_dtypes_and_values():
    batches = list(DataLoader(Images(), batch_size=5, num_workers=2))
    assert [len(b["name"]) for b in batches] == [5, 5, 5, 1]
    first = batches[0]
    assert first["u8"].dtype == ember.uint8 and first["u8"].shape == (5, 3, 4, 4)
    assert first["f32"].dtype == ember.float32 and first["i64"].dtype == ember.int64
    assert first["u8"][:, 0, 0, 0].tolist() == [0, 1, 2, 3, 4] and first["name"] == [f"item{i}" for i in range(5)]
    assert batches[3]["f32"].tolist() == [[15.0, 15.0]]
    for key in ("u8", "f32", "i64"):
        assert mapping_of(first[key]) is not None, f"{key} was not delivered in shared memory"


def test_slots_are_reused_and_nothing_is_left_in_dev_shm():
    loader = DataLoader(TensorDataset(ember.arange(4000.0).reshape(1000, 4)), batch_size=10, num_workers=2)
    ours = f"ember_{os.getpid()}_"  # every shared-memory name this process's loaders make starts so
    before = {p for p in os.listdir("/dev/shm") if p.startswith(ours)}
    total, maps = 0.0, {}
    for (x,) in loader:
        total += x.sum().item()
        maps[id(mapping_of(x))] = mapping_of(x)  # (held, so that no id is reused)
    assert total == sum(range(4000))
    assert len(maps) <= 2 * 6, "slots should be reused, not made anew for each of the 100 batches"
    assert {p for p in os.listdir("/dev/shm") if p.startswith(ours)} <= before


def test_a_batch_kept_by_the_user_is_never_overwritten():
    loader = DataLoader(TensorDataset(ember.arange(200.0)), batch_size=10, num_workers=2)
    kept = [x for (x,) in loader]
    assert [k.tolist() for k in kept] == [list(map(float, range(i, i + 10))) for i in range(0, 200, 10)]


def test_get_worker_info_inside_workers():
    items = [d for b in DataLoader(WhoAmI(), batch_size=None, num_workers=3) for d in [b]]
    assert {d["worker"] for d in items} == {0, 1, 2} and {d["num_workers"] for d in items} == {3}
    seeds = {d["worker"]: d["seed"] for d in items}
    assert len(set(seeds.values())) == 3 and seeds[1] == seeds[0] + 1
    assert ember.data.get_worker_info() is None


def test_an_iterable_dataset_shards_itself_by_worker():
    got = [b.tolist() for b in DataLoader(ShardedRange(0, 20), batch_size=4, num_workers=2)]
    # worker 0 reads 0..9, worker 1 reads 10..19; batches alternate between them
    assert got == [[0, 1, 2, 3], [10, 11, 12, 13], [4, 5, 6, 7], [14, 15, 16, 17], [8, 9], [18, 19]]


def test_an_iterable_dataset_with_unequal_shares():
    got = [b.tolist() for b in DataLoader(ShardedRange(0, 7), batch_size=2, num_workers=3)]
    assert sorted(sum(got, [])) == list(range(7)) and got[0] == [0, 1] and got[1] == [3, 4]


def test_persistent_workers_live_across_passes_and_start_over():
    loader = DataLoader(Echo(10), batch_size=3, num_workers=2, persistent_workers=True)
    before = child_pids()
    first = iter(loader)
    pids = child_pids() - before
    assert len(pids) == 2 and flat(first) == list(range(10))
    second = iter(loader)
    assert second is first and child_pids() - before == pids  # the same two workers, still alive
    assert next(second).tolist() == [0, 1, 2]  # abandon this pass half-way
    assert flat(iter(loader)) == list(range(10))
    it_loader = DataLoader(ShardedRange(0, 8), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(flat(it_loader)) == list(range(8)) and sorted(flat(it_loader)) == list(range(8))
    first._shutdown_workers()  # private: nothing public stops persistent workers at once (a dropped loader defers it)
    assert not pids & child_pids()


def test_workers_without_persistence_are_new_each_pass():
    loader = DataLoader(Echo(6), batch_size=3, num_workers=2)
    before = child_pids()
    a = iter(loader)
    a_pids = child_pids() - before
    b = iter(loader)
    b_pids = child_pids() - before - a_pids
    assert len(a_pids) == len(b_pids) == 2
    assert flat(a) == flat(b) == list(range(6))
    assert not (a_pids | b_pids) & child_pids()  # a finished pass joins its workers


def test_worker_init_fn_runs_in_each_worker():
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=_set_numpy_seed)
    draws = {d["worker"]: d["numpy"] for d in loader if d["index"] < 2}
    assert draws == {0: np.random.RandomState(100).rand(), 1: np.random.RandomState(101).rand()}


def _set_numpy_seed(worker_id):
    np.random.seed(100 + worker_id)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods_with_a_tensor_dataset(method):
    ds = TensorDataset(ember.arange(10.0), ember.arange(10))
    ctx = multiprocessing.get_context(method) if method == "forkserver" else method  # a name or a context object
    loader = DataLoader(ds, batch_size=5, num_workers=1, multiprocessing_context=ctx)
    got = [(x.tolist(), y.tolist()) for x, y in loader]
    assert got == [([0.0, 1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3, 4]), ([5.0, 6.0, 7.0, 8.0, 9.0], [5, 6, 7, 8, 9])]


def test_tensors_are_still_not_picklable_outside_multiprocessing():
    import pickle
    with pytest.raises(Exception, match="not pickled"):
        pickle.dumps(ember.ones(2))
    gc.collect()
