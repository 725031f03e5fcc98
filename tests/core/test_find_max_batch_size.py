"""ember.utils.find_max_batch_size with a step that runs out of memory above a threshold (it raises
ember.OutOfMemoryError itself, after allocating, as a capped device would): the exact largest size, the tries
made, memory freed between tries, other errors passed on unchanged."""
import gc

import pytest

import ember
from ember.utils import BatchSizeSearch, find_max_batch_size

ROW = 1000 * 4  # bytes of one row of the batch below


class Step:
    """A training step that fits up to ``limit`` rows; records the sizes asked for and the bytes allocated
    when each call began (memory must be back at the start level before every try)."""

    def __init__(self, limit):
        self.limit, self.sizes, self.allocated_at_start = limit, [], []

    def __call__(self, batch_size):
        self.sizes.append(batch_size)
        self.allocated_at_start.append(ember.memory_allocated())
        x = ember.ones(batch_size, 1000)  # held by this frame when the error is raised
        if batch_size > self.limit:
            raise ember.OutOfMemoryError(f"batch of {batch_size} rows does not fit")
        (x * 2).sum()


def test_doubles_then_bisects_to_the_exact_largest_size():
    step = Step(37)
    gc.collect()  # garbage of earlier tests would be freed by the search's own collections, under our count
    before = ember.memory_allocated()
    found = find_max_batch_size(step)
    assert found.batch_size == 37
    assert step.sizes == [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]
    assert [t.size for t in found.tries] == step.sizes
    assert [t.ok for t in found.tries] == [s <= 37 for s in step.sizes]
    for size, ok, peak in found.tries:
        assert peak >= before + size * ROW  # the batch itself was held at the peak
    # every try began from the memory level before the search, failed ones included: nothing was left behind
    assert step.allocated_at_start == [before] * len(step.sizes)
    assert ember.memory_allocated() == before


def test_a_start_above_the_limit_bisects_below_it():
    step = Step(37)
    assert find_max_batch_size(step, start=100).batch_size == 37
    assert step.sizes == [100, 50, 25, 37, 43, 40, 38]


def test_stops_at_max_without_running_out():
    step = Step(10_000)
    found = find_max_batch_size(step, start=3, max=20)
    assert found.batch_size == 20 and step.sizes == [3, 6, 12, 20] and all(t.ok for t in found.tries)
    assert find_max_batch_size(Step(10_000), start=5, max=5).batch_size == 5


def test_the_limit_at_a_power_of_two_and_at_one():
    assert find_max_batch_size(Step(64)).batch_size == 64
    assert find_max_batch_size(Step(1), start=16).batch_size == 1


def test_other_errors_from_the_step_pass_through_at_once_unchanged():
    calls = []
    error = ValueError("shapes do not match")

    def step(batch_size):
        calls.append(batch_size)
        if batch_size == 4:
            raise error

    with pytest.raises(ValueError) as info:
        find_max_batch_size(step)
    assert info.value is error and calls == [1, 2, 4]


def test_not_even_one_row_fits():
    with pytest.raises(ember.OutOfMemoryError, match="not even a batch of 1 fits on cpu"):
        find_max_batch_size(Step(0), start=4)


def test_a_failed_try_whose_tensors_are_kept_elsewhere_warns():
    kept = []

    def step(batch_size):
        kept.append(ember.ones(batch_size, 10))
        if batch_size > 2:
            raise ember.OutOfMemoryError("too big")

    with pytest.warns(RuntimeWarning) as record:
        assert find_max_batch_size(step).batch_size == 2
    assert [str(w.message)[:80] for w in record] == [
        f"find_max_batch_size: {n * 40} bytes allocated by the step that ran out of memory (batch size {n})"[:80]
        for n in (4, 3)]


def test_the_result_prints_as_a_table_of_tries():
    found = find_max_batch_size(Step(5), start=4)
    assert isinstance(found, BatchSizeSearch)
    lines = repr(found).splitlines()
    assert lines[0] == "BatchSizeSearch(batch_size=5, device=device(type='cpu'), 4 tries)"
    assert lines[1].split() == ["size", "result", "peak", "memory"]
    assert lines[2].split()[:2] == ["4", "ran"] and lines[3].split()[:4] == ["8", "out", "of", "memory"]
    assert lines[3].endswith("KiB")


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(TypeError, match="step_fn must be callable as step_fn\\(batch_size\\), got int"):
        find_max_batch_size(3)
    with pytest.raises(ValueError, match="start must be a positive int, got 0"):
        find_max_batch_size(Step(3), start=0)
    with pytest.raises(ValueError, match=r"max must be None or an int >= start \(4\), got 2"):
        find_max_batch_size(Step(3), start=4, max=2)


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(ember.OutOfMemoryError, RuntimeError) and issubclass(ember.OutOfMemoryError, ember.EmberError)


def test_finds_the_exact_largest_batch_under_a_real_memory_limit():
    gc.collect()
    base = ember.memory_allocated()
    ember.memory.set_memory_limit(base + 37 * ROW + ROW // 2)  # 37 rows fit, 38 do not

    def step(batch_size):
        activations = ember.empty(batch_size, 1000)  # float32: ROW bytes a row
        return activations.sum()
    try:
        found = find_max_batch_size(step, max=1000)
    finally:
        ember.memory.set_memory_limit(None)
    assert found.batch_size == 37
    assert [t.ok for t in found.tries] == [t.size <= 37 for t in found.tries]
    assert ember.memory_allocated() == base  # nothing of the failed tries is left
