"""MedianStoppingRule on scripted results."""
import json

import pytest

from ember.tune import Decision, MedianStoppingRule, registry

C, S = Decision.CONTINUE, Decision.STOP


def make(mode="min", **kwargs):
    rule = MedianStoppingRule(**{"time_attr": "training_iteration", "grace_period": 2, "min_samples_required": 2,
                                 **kwargs})
    rule.setup(metric="loss", mode=mode)
    return rule


def feed(rule, trial, losses, sign=1, start=1):
    return [rule.on_result(trial, {"loss": sign * v, "training_iteration": t})
            for t, v in enumerate(losses, start)]


def test_defaults_and_registration():
    rule = MedianStoppingRule()  # Ray Tune's defaults
    assert (rule.time_attr, rule.grace_period, rule.min_samples_required) == ("time_total_s", 60.0, 3)
    assert registry.get("scheduler", "median") is MedianStoppingRule


@pytest.mark.parametrize("mode", ["min", "max"])
def test_a_scripted_run(mode):
    sign = 1 if mode == "min" else -1
    rule = make(mode)
    # (values are exact in binary, so ties are exact) running averages: A 1.0, 0.75, 0.75, 0.625;
    # B 1.5, 1.25, 1.25, 1.125 (too few others to judge either)
    assert feed(rule, "A", [1.0, 0.5, 0.75, 0.25], sign) == [C] * 4
    assert feed(rule, "B", [1.5, 1.0, 1.25, 0.75], sign) == [C] * 4
    # C: t=1 in the grace period; t=2 and t=3: best 1.0 vs median(0.75, 1.25) = 1.0: equal is not worse
    assert feed(rule, "C", [1.0, 1.5, 1.5], sign) == [C, C, C]
    # D: t=2 median(A 0.75, B 1.25, C 1.25) = 1.25; t=3 median(0.75, 1.25, 1.333) = 1.25; t=4 only A and B
    # got that far: median(0.625, 1.125) = 0.875, and D's best 0.9 is worse
    assert feed(rule, "D", [0.9, 0.9, 0.9, 0.9], sign) == [C, C, C, S]


def test_running_averages_are_taken_up_to_the_same_time():
    rule = make(time_attr="time_total_s", grace_period=0, min_samples_required=1)
    for t, loss in [(10, 1.0), (20, 0.5), (30, 0.0)]:
        rule.on_result("A", {"loss": loss, "time_total_s": t})
    rule.on_result("late", {"loss": 5.0, "time_total_s": 40})  # started after time 25: not compared there
    # A's average up to time 25 is (1.0 + 0.5) / 2 = 0.75
    assert rule.on_result("B", {"loss": 0.7, "time_total_s": 25}) == C
    assert rule.on_result("D", {"loss": 0.8, "time_total_s": 25}) == S
    # others that did not get as far do not count: at time 35 only "late" did, whose average is 5.0
    assert rule.on_result("B", {"loss": 0.7, "time_total_s": 35}) == C


def test_the_best_result_so_far_is_what_is_compared():
    rule = make(min_samples_required=1)
    feed(rule, "A", [1.0, 1.0, 1.0])
    assert feed(rule, "B", [0.1, 3.0, 3.0]) == [C, C, C]  # its best, 0.1, beats A's average 1.0


def test_state_dict_round_trip():
    rule = make()
    feed(rule, "A", [1.0, float("inf"), 0.6])
    feed(rule, "B", [1.2, 1.0, float("nan")])  # NaN counts as the worst: as bad as an infinite loss
    feed(rule, "E", [0.5, 0.5, 0.5])
    state = json.loads(json.dumps(rule.state_dict(), allow_nan=False))
    again = make()
    again.load_state_dict(state)
    assert again.state_dict() == state
    for scheduler in (rule, again):
        # losses: t=2: median(A inf, B 1.1, E 0.5) = 1.1 beats 2.0; t=3: median(inf, inf, 0.5) = inf does not
        assert feed(scheduler, "C", [2.0, 2.0, 2.0]) == [C, S, C]
    with pytest.raises(ValueError, match="grace_period: saved 2, now 5"):
        make(grace_period=5).load_state_dict(state)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"grace_period": -1}, ValueError, "grace_period must be a finite number >= 0"),
    ({"min_samples_required": 0}, ValueError, "min_samples_required must be an int >= 1"),
    ({"min_samples_required": 2.5}, ValueError, "min_samples_required must be an int >= 1"),
    ({"mode": "lowest"}, ValueError, "mode must be"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        MedianStoppingRule(**kwargs)


def test_time_may_not_go_back():
    rule = make()
    feed(rule, "A", [1.0, 0.9])
    with pytest.raises(ValueError, match="training_iteration=1.0, earlier than its previous result"):
        rule.on_result("A", {"loss": 0.8, "training_iteration": 1})
