"""ASHAScheduler on scripted results: rung boundaries, the top-1/eta rule in min and max mode, brackets."""
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.tune import ASHAScheduler, AsyncHyperBandScheduler, Decision, registry

C, S = Decision.CONTINUE, Decision.STOP


def make(mode="min", **kwargs):
    asha = ASHAScheduler(**{"max_t": 9, "grace_period": 1, "reduction_factor": 3, **kwargs})
    asha.setup(metric="m", mode=mode)
    return asha


def report(asha, trial, value, t=1):
    return asha.on_result(trial, {"m": value, "training_iteration": t})


def test_names_defaults_and_registration():
    assert AsyncHyperBandScheduler is ASHAScheduler
    assert registry.get("scheduler", "asha") is ASHAScheduler
    asha = ASHAScheduler()  # Ray Tune's defaults
    assert (asha.time_attr, asha.max_t, asha.grace_period, asha.reduction_factor, asha.brackets,
            asha.stop_last_trials) == ("training_iteration", 100, 1, 4, 1, True)
    assert asha.rungs == [[1, 4, 16, 64]]


def test_rungs_per_bracket():
    assert make(max_t=81, brackets=3).rungs == [[1, 3, 9, 27], [3, 9, 27], [9, 27]]
    assert make(max_t=10, reduction_factor=2.5).rungs == [[1, 2.5, 6.25]]
    assert make(max_t=8, grace_period=2, reduction_factor=2, brackets=3).rungs == [[2, 4], [4], []]


@pytest.mark.parametrize("mode", ["min", "max"])
def test_top_one_over_eta_on_a_scripted_sequence(mode):
    # losses at the first rung (budget 1), in order of arrival; with k recorded (this one included) a trial
    # goes on when fewer than ceil(k/3) recorded results are better than its own
    losses = {"a": 0.5, "b": 0.7, "c": 0.3, "d": 0.4, "e": 0.9, "f": 0.45, "g": 0.2}
    # a: k=1, 0 better < 1 -> on | b: k=2, 1 better (a) >= 1 -> stop | c: k=3, 0 better -> on
    # d: k=4, 1 better (c) < 2 -> on | e: k=5, 4 better -> stop | f: k=6, 2 better (c, d) >= 2 -> stop
    # g: k=7, 0 better < 3 -> on
    expected = {"a": C, "b": S, "c": C, "d": C, "e": S, "f": S, "g": C}
    sign = 1 if mode == "min" else -1
    asha = make(mode)
    for trial, loss in losses.items():
        asha.on_trial_add(trial, {})
        assert report(asha, trial, sign * loss) == expected[trial], trial


def test_nothing_is_judged_between_rungs_and_the_second_rung_has_its_own_record():
    asha = make(max_t=27)  # rungs 1, 3, 9
    for trial in "abcd":
        asha.on_trial_add(trial, {})
    assert [report(asha, t, v) for t, v in zip("abcd", [0.4, 0.3, 0.2, 0.25])] == [C, C, C, C]
    # iteration 2 is below the rung at 3: no judgement, however bad
    assert report(asha, "a", 100.0, t=2) == C
    # rung 3: a arrives first with a bad value and goes on; b, worse than a, is stopped (k=2, one better)
    assert report(asha, "a", 5.0, t=3) == C
    assert report(asha, "b", 6.0, t=3) == S
    assert report(asha, "c", 1.0, t=3) == C  # k=3, none better
    assert report(asha, "d", 2.0, t=3) == C  # k=4, one better < ceil(4/3) = 2


def test_a_tie_with_the_best_goes_on_and_nan_is_the_worst():
    asha = make()
    for trial in "abcd":
        asha.on_trial_add(trial, {})
    assert report(asha, "a", 0.5) == C
    assert report(asha, "b", 0.5) == C  # none strictly better
    assert report(asha, "c", float("nan")) == S
    assert report(asha, "d", 0.6) == S


def test_a_result_past_several_rungs_is_judged_at_each():
    asha = make(max_t=27)  # rungs 1, 3, 9
    for trial in "abc":
        asha.on_trial_add(trial, {})
    assert report(asha, "a", 0.5, t=1) == C
    assert report(asha, "a", 0.4, t=3) == C
    # b jumps from nothing to time 4: judged at rung 1 (better than a's 0.5: goes on), then at rung 3, where
    # 0.45 is worse than a's 0.4
    assert report(asha, "b", 0.45, t=4) == S
    # c jumps past rungs 1 and 3 with the best value, and is recorded at both
    assert report(asha, "c", 0.1, t=5) == C
    asha.on_trial_add("d", {})
    # d reaches time 3: at rung 1 (a 0.5, b 0.45, c 0.1) one is better, fewer than ceil(4/3) = 2: on; at
    # rung 3 (a 0.4, b 0.45, c 0.1) two are better: stopped
    assert report(asha, "d", 0.42, t=3) == S


def test_stop_at_max_t_and_stop_last_trials():
    asha = make()
    asha.on_trial_add("a", {})
    assert report(asha, "a", 0.5, t=1) == C
    assert report(asha, "a", 0.5, t=8) == C
    assert report(asha, "a", 0.5, t=9) == S
    assert report(asha, "a", 0.5, t=10) == S  # stopped for good
    free = make(stop_last_trials=False)
    free.on_trial_add("a", {})
    assert [report(free, "a", 0.5, t=t) for t in (1, 9, 10, 30)] == [C, C, C, C]


def test_brackets_share_trials_in_hyperband_proportions():
    asha = make(max_t=81, brackets=3)  # 4 halvings: shares 81/5 : 27/4 : 9/3 = 16.2 : 6.75 : 3
    n = 2595  # 1620 : 675 : 300
    for i in range(n):
        asha.on_trial_add(str(i), {})
    # every result at time 1 is worse than all before it: in bracket 0 (first rung 1) all but the first
    # are stopped; brackets 1 and 2 (first rungs 3 and 9) judge nothing at time 1
    decisions = [report(asha, str(i), float(i)) for i in range(n)]
    # arrivals go to the bracket furthest behind its share: brackets 0, 1, 0, 0, 2, ...
    assert decisions[:5] == [C, C, S, S, C]
    in_bracket_0 = decisions.count(S) + 1
    assert abs(in_bracket_0 - 1620) <= 1


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=60),
       st.sampled_from([2, 3, 4, 2.5]))
@settings(max_examples=60, deadline=None)
def test_rule_matches_a_brute_force_count(losses, eta):
    asha = make(max_t=100, reduction_factor=eta)
    for i, loss in enumerate(losses):
        asha.on_trial_add(str(i), {})
        seen = losses[: i + 1]
        better = sum(v < loss for v in seen)
        decision = report(asha, str(i), loss)
        assert decision == (C if better < math.ceil(len(seen) / eta) else S)
        if loss == min(seen):
            assert decision == C  # the best so far always goes on


def test_state_dict_is_json_and_refuses_other_arguments():
    asha = make(max_t=27)
    for trial, value in zip("abc", [0.3, float("inf"), 0.1]):
        asha.on_trial_add(trial, {})
        report(asha, trial, value)
    state = json.loads(json.dumps(asha.state_dict(), allow_nan=False))
    again = make(max_t=27)
    again.load_state_dict(state)
    assert again.state_dict() == state
    asha.on_trial_add("d", {})
    again.on_trial_add("d", {})
    assert report(asha, "d", 0.35) == report(again, "d", 0.35) == S  # a (0.3) and c (0.1) are better
    with pytest.raises(ValueError, match="max_t: saved 27, now 81"):
        make(max_t=81).load_state_dict(state)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"reduction_factor": 1}, ValueError, "reduction_factor must be > 1"),
    ({"reduction_factor": 0.5}, ValueError, "reduction_factor must be > 1"),
    ({"grace_period": 10, "max_t": 9}, ValueError, "grace_period .* must not exceed max_t"),
    ({"grace_period": 0}, ValueError, "grace_period must be a finite number > 0"),
    ({"max_t": -1}, ValueError, "max_t must be a finite number > 0"),
    ({"max_t": "9"}, TypeError, "max_t must be a number"),
    ({"brackets": 0}, ValueError, "brackets must be an int >= 1"),
    ({"brackets": 4, "reduction_factor": 3}, ValueError, "brackets=4 is too many.*at most 3"),
    ({"stop_last_trials": "yes"}, TypeError, "stop_last_trials must be a bool"),
    ({"mode": "maximise"}, ValueError, "mode must be 'min', 'max' or None"),
    ({"time_attr": ""}, TypeError, "time_attr must be"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ASHAScheduler(**{"max_t": 9, **kwargs})


def test_bad_use():
    asha = make()
    with pytest.raises(ValueError, match="never added"):
        report(asha, "ghost", 0.1)
    asha.on_trial_add("a", {})
    with pytest.raises(ValueError, match="already added"):
        asha.on_trial_add("a", {})
    with pytest.raises(ValueError, match="has no 'm' .*metric.*'loss'"):
        asha.on_result("a", {"loss": 0.1, "training_iteration": 1})
    with pytest.raises(ValueError, match="has no 'training_iteration' .*time_attr"):
        asha.on_result("a", {"m": 0.1})
