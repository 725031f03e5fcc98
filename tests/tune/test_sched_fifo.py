"""FIFOScheduler, and where every scheduler takes metric, mode and time_attr from."""
import pytest

from ember.tune import ASHAScheduler, Decision, FIFOScheduler, HyperBandScheduler, MedianStoppingRule, registry


def test_fifo_always_continues_and_never_pauses():
    fifo = registry.resolve("scheduler", None)
    assert isinstance(fifo, FIFOScheduler)
    fifo.setup(metric="loss", mode="max")
    fifo.on_trial_add("a", {})
    assert [fifo.on_result("a", {"loss": v, "training_iteration": t}) for t, v in enumerate([3, 2, 1], 1)] \
        == [Decision.CONTINUE] * 3
    assert fifo.take_decisions() == {}
    assert fifo.choose_trial_to_run([], searcher_finished=True) is None


@pytest.mark.parametrize("cls", [ASHAScheduler, HyperBandScheduler, MedianStoppingRule])
def test_metric_and_mode_from_the_constructor_or_the_experiment(cls):
    given = cls(metric="acc", mode="max")
    given.setup(metric=None, mode=None)
    assert (given.metric, given.mode) == ("acc", "max")
    same = cls(metric="acc", mode="max")
    same.setup(metric="acc", mode="max")
    assert (same.metric, same.mode) == ("acc", "max")
    filled = cls(metric="acc")
    filled.setup(metric="acc", mode="min")
    assert filled.mode == "min"
    with pytest.raises(ValueError, match="built with metric='acc' but the experiment uses metric='loss'"):
        cls(metric="acc").setup(metric="loss", mode="min")
    with pytest.raises(ValueError, match="built with mode='max' but the experiment uses mode='min'"):
        cls(mode="max").setup(metric="loss", mode="min")
    with pytest.raises(ValueError, match="needs a metric: pass metric= to the scheduler or to the experiment"):
        cls().setup(metric=None, mode="min")


@pytest.mark.parametrize("cls", [ASHAScheduler, HyperBandScheduler, MedianStoppingRule])
def test_the_constructors_time_attr_is_used(cls):
    scheduler = cls(time_attr="epoch")
    scheduler.setup(metric="loss", mode="min", time_attr="training_iteration")
    assert scheduler.time_attr == "epoch"
