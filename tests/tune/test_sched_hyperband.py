"""HyperBandScheduler (synchronous) on scripted results: bracket sizes, pause at the rung, promotion of the
best n/eta, partly filled brackets, errored trials, min and max mode."""
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.tune import Decision, HyperBandScheduler, registry

C, P, S = Decision.CONTINUE, Decision.PAUSE, Decision.STOP


def make(mode="min", **kwargs):
    hb = HyperBandScheduler(**{"max_t": 9, "reduction_factor": 3, **kwargs})
    hb.setup(metric="m", mode=mode)
    return hb


def add(hb, *trials):
    for trial in trials:
        hb.on_trial_add(trial, {})


def report(hb, trial, value, t):
    return hb.on_result(trial, {"m": value, "training_iteration": t})


def split(decisions):
    """(sorted ids told CONTINUE, sorted ids told STOP)"""
    return (sorted(t for t, d in decisions.items() if d == C), sorted(t for t, d in decisions.items() if d == S))


def test_bracket_sizes_of_the_paper():
    # Li et al. 2018, R = 81, eta = 3: (n_i, r_i) for s = 4 .. 0
    assert HyperBandScheduler(max_t=81, reduction_factor=3).bracket_plan == [
        [(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)],
        [(34, 3), (11, 9), (3, 27), (1, 81)],
        [(15, 9), (5, 27), (1, 81)],
        [(8, 27), (2, 81)],
        [(5, 81)],
    ]


def test_bracket_sizes_other_arguments():
    assert HyperBandScheduler(max_t=27, reduction_factor=3).bracket_plan == [
        [(27, 1), (9, 3), (3, 9), (1, 27)], [(12, 3), (4, 9), (1, 27)], [(6, 9), (2, 27)], [(4, 27)]]
    # grace_period raises the smallest budget: s_max = 2 instead of 4
    assert HyperBandScheduler(max_t=81, grace_period=9).bracket_plan == [
        [(9, 9), (3, 27), (1, 81)], [(5, 27), (1, 81)], [(3, 81)]]
    # budgets need not be whole: R = 10, eta = 2 -> s_max = 3 and the first rung at 10/8
    assert HyperBandScheduler(max_t=10, reduction_factor=2).bracket_plan == [
        [(8, 1.25), (4, 2.5), (2, 5), (1, 10)], [(6, 2.5), (3, 5), (1, 10)], [(4, 5), (2, 10)], [(4, 10)]]
    assert HyperBandScheduler(max_t=1).bracket_plan == [[(1, 1)]]


@given(st.integers(1, 2000), st.sampled_from([2, 3, 4, 5]), st.integers(1, 5))
@settings(max_examples=100, deadline=None)
def test_bracket_plan_properties(max_t, eta, grace):
    if grace > max_t:
        return
    plan = HyperBandScheduler(max_t=max_t, reduction_factor=eta, grace_period=grace).bracket_plan
    s_max = len(plan) - 1
    assert grace * eta ** s_max <= max_t < grace * eta ** (s_max + 1)
    for s, rungs in zip(range(s_max, -1, -1), plan):
        assert len(rungs) == s + 1 and rungs[-1][1] == max_t
        n = rungs[0][0]
        assert n == math.ceil((s_max + 1) * eta ** s / (s + 1))
        assert [count for count, _ in rungs] == [n // eta ** i for i in range(s + 1)]
        assert all(math.isclose(b * eta, c) for (_, b), (_, c) in zip(rungs, rungs[1:]))
        assert rungs[0][1] >= grace and rungs[-1][0] >= 1


@pytest.mark.parametrize("mode", ["min", "max"])
def test_pause_at_the_rung_then_promote_the_best_third(mode):
    sign = 1 if mode == "min" else -1
    hb = make(mode)  # bracket s=2: 9 trials at 1, 3 at 3, 1 at 9
    trials = [f"t{i}" for i in range(9)]
    add(hb, *trials)
    losses = [0.5, 0.2, 0.9, 0.4, 0.1, 0.8, 0.7, 0.3, 0.6]
    for trial, loss in list(zip(trials, losses))[:8]:
        assert report(hb, trial, sign * loss, t=1) == P
        assert hb.take_decisions() == {}
        assert hb.choose_trial_to_run(trials, searcher_finished=False) is None  # the rung is not full
    # the last arrival (0.6, not in the best three) completes the rung and is stopped at once
    assert report(hb, "t8", sign * 0.6, t=1) == S
    assert split(hb.take_decisions()) == (["t1", "t4", "t7"], ["t0", "t2", "t3", "t5", "t6"])
    assert hb.take_decisions() == {}  # each decision is handed out once
    # promoted trials are resumed in the order of the paused list, before any new trial
    paused = ["t1", "t4", "t7"]
    assert hb.choose_trial_to_run(paused, searcher_finished=False) == "t1"
    assert hb.choose_trial_to_run(paused[1:], searcher_finished=False) == "t4"
    assert hb.choose_trial_to_run(paused[2:], searcher_finished=False) == "t7"
    assert hb.choose_trial_to_run([], searcher_finished=False) is None
    # the next rung: budget 3, keeps 1
    assert report(hb, "t1", sign * 0.2, t=2) == C
    assert report(hb, "t1", sign * 0.15, t=3) == P
    assert report(hb, "t4", sign * 0.3, t=3) == P
    assert report(hb, "t7", sign * 0.05, t=3) == C  # completes the rung, and is the best: on at once
    assert split(hb.take_decisions()) == ([], ["t1", "t4"])
    assert report(hb, "t7", sign * 0.04, t=8) == C
    assert report(hb, "t7", sign * 0.03, t=9) == S  # max_t


def test_the_trial_that_completes_a_rung_is_paused_when_it_is_not_decisive():
    hb = make()
    add(hb, *"abcdefghi")
    for trial in "abcdefgh":
        assert report(hb, trial, 0.5, t=1) == P
    hb.on_complete("i", None, error=True)  # the rung completes without a result from "i"
    # 8 trials: the best floor(8/3) = 2, ties broken by order of arrival
    assert split(hb.take_decisions()) == (["a", "b"], list("cdefgh"))


def test_brackets_fill_in_order_and_a_new_round_starts():
    hb = make()  # brackets of 9 (budget 1), 5 (budget 3), 3 (budget 9)
    trials = [f"t{i:02d}" for i in range(18)]
    add(hb, *trials)
    first = [report(hb, t, 0.5, t=1) for t in trials]
    assert first[:9] == [P] * 8 + [S]  # bracket s=2 pauses at 1; its 9th completes the rung, and loses the tie
    assert split(hb.take_decisions()) == (trials[:3], trials[3:8])
    assert first[9:17] == [C] * 8  # brackets s=1 (first rung 3) and s=0 (max_t 9) run on
    assert first[17] == P  # the 18th trial starts a new round: bracket s=2 again
    # bracket s=1: 5 at 3, keeps 1; the last to arrive is the best and goes on at once
    assert [report(hb, t, v, t=3) for t, v in zip(trials[9:14], [0.5, 0.6, 0.7, 0.8, 0.1])] == [P, P, P, P, C]
    assert split(hb.take_decisions()) == ([], trials[9:13])
    assert [report(hb, t, 0.5, t=9) for t in trials[14:17]] == [S, S, S]


def test_searcher_finished_with_a_partly_filled_bracket():
    hb = make()
    add(hb, "a", "b", "c", "d")  # 4 of the 9 planned
    for trial, loss in zip("abcd", [0.4, 0.1, 0.3, 0.2]):
        assert report(hb, trial, loss, t=1) == P
    assert hb.choose_trial_to_run(list("abcd"), searcher_finished=False) is None
    # the searcher is done: the rung closes with 4 trials and keeps floor(4/3) = 1
    assert hb.choose_trial_to_run(list("abcd"), searcher_finished=True) == "b"
    assert split(hb.take_decisions()) == ([], ["a", "c", "d"])
    # rung 3 has 1 trial (3 planned): it keeps max(1, floor(1/3)) = 1, decided when b arrives
    assert report(hb, "b", 0.1, t=3) == C
    assert report(hb, "b", 0.1, t=9) == S


def test_searcher_finished_while_trials_of_the_rung_still_run():
    hb = make()
    add(hb, "a", "b", "c")
    assert report(hb, "a", 0.3, t=1) == P
    assert hb.choose_trial_to_run(["a"], searcher_finished=True) is None  # b and c are on their way
    assert hb.take_decisions() == {}
    assert report(hb, "b", 0.1, t=1) == P
    assert report(hb, "c", 0.2, t=1) == S  # completes the rung of 3: keeps floor(3/3) = 1
    assert split(hb.take_decisions()) == (["b"], ["a"])
    # a new trial after that (the searcher had more after all) opens the next bracket, s=1 (first rung 3)
    add(hb, "d")
    assert report(hb, "d", 0.9, t=1) == C
    assert report(hb, "d", 0.9, t=3) == P


def test_errored_trials_leave_their_rungs():
    hb = make(max_t=27)  # bracket s=3: 27 at 1, 9 at 3, 3 at 9, 1 at 27
    trials = [f"t{i:02d}" for i in range(27)]
    add(hb, *trials)
    for i, trial in enumerate(trials):
        report(hb, trial, i, t=1)  # t00 best
    promoted, stopped = split(hb.take_decisions())  # t26, the last to arrive, was stopped at once
    assert promoted == trials[:9] and stopped == trials[9:26]
    for trial in promoted:
        assert hb.choose_trial_to_run([trial], searcher_finished=False) == trial
    # two promoted trials error (one before, one after the others arrive at rung 3)
    hb.on_complete("t00", None, error=True)
    assert hb.take_decisions() == {}
    for trial in promoted[1:7]:
        assert report(hb, trial, 1.0, t=3) == P
    hb.on_complete("t07", None, error=True)
    assert hb.take_decisions() == {}  # t08 is still on its way
    assert report(hb, "t08", 0.5, t=3) == C  # 7 left of 9: keeps floor(7/3) = 2; t08 best, t01 next
    assert split(hb.take_decisions()) == (["t01"], ["t02", "t03", "t04", "t05", "t06"])
    # every trial of a rung erroring ends the bracket quietly
    hb.on_complete("t01", None, error=True)
    hb.on_complete("t08", None, error=True)
    assert hb.take_decisions() == {}


def test_on_complete_after_stop_is_harmless_and_decisions_skip_ended_trials():
    hb = make()
    add(hb, *"abcdefghi")
    for trial in "abcdefgh":
        report(hb, trial, ord(trial), t=1)
    hb.on_complete("a", None)  # ended by the experiment while paused (e.g. its stop criteria)
    assert report(hb, "i", 0.0, t=1) == C  # completes the rung: 8 left of 9 -> keeps 2
    decisions = hb.take_decisions()
    assert "a" not in decisions and split(decisions) == (["b"], list("cdefgh"))
    for trial in "cdefgh":
        hb.on_complete(trial, None)
    assert hb.take_decisions() == {}
    assert report(hb, "c", 0.0, t=2) == S  # a stopped trial stays stopped


def test_stop_last_trials_false_lets_trials_run_past_max_t():
    hb = make(stop_last_trials=False)
    add(hb, *[f"t{i}" for i in range(14)])  # t9..t13: bracket s=1, first rung 3
    assert report(hb, "t13", 0.5, t=3) == P
    add(hb, "x", "y", "z")  # bracket s=0: straight to max_t
    assert [report(hb, "x", 0.5, t=t) for t in (1, 9, 10, 50)] == [C, C, C, C]


def test_a_paused_trial_may_not_report():
    hb = make()
    add(hb, "a", "b")
    report(hb, "a", 0.1, t=1)
    with pytest.raises(RuntimeError, match="paused at its rung .budget 1.; resume only the trials the scheduler"):
        report(hb, "a", 0.1, t=2)


def test_state_dict_round_trip_is_json_and_continues_identically():
    hb = make()
    add(hb, *"abcdefgh")
    for trial, loss in zip("abcdefgh", [0.5, float("nan"), 0.3, float("-inf"), 0.1, 0.7, 0.2, 0.6]):
        report(hb, trial, loss, t=1)
    state = json.loads(json.dumps(hb.state_dict(), allow_nan=False))
    again = make()
    again.load_state_dict(state)
    assert again.state_dict() == state
    for scheduler in (hb, again):
        scheduler.on_trial_add("i", {})
        assert report(scheduler, "i", 0.4, t=1) == S
    assert hb.take_decisions() == again.take_decisions() == {"d": C, "e": C, "g": C, "a": S, "h": S, "f": S,
                                                             "b": S, "c": S}
    with pytest.raises(ValueError, match="reduction_factor: saved 3, now 2"):
        make(reduction_factor=2).load_state_dict(state)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"reduction_factor": 1}, ValueError, "reduction_factor must be > 1"),
    ({"reduction_factor": True}, TypeError, "reduction_factor must be a number"),
    ({"grace_period": 100}, ValueError, "grace_period .* must not exceed max_t"),
    ({"max_t": 0}, ValueError, "max_t must be a finite number > 0"),
    ({"max_t": float("inf")}, ValueError, "max_t must be a finite number > 0"),
    ({"stop_last_trials": 1}, TypeError, "stop_last_trials must be a bool"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        HyperBandScheduler(**{"max_t": 9, **kwargs})


def test_bad_use_and_registration():
    assert registry.get("scheduler", "hyperband") is HyperBandScheduler
    hb = make()
    with pytest.raises(ValueError, match="never added"):
        report(hb, "ghost", 0.1, t=1)
    with pytest.raises(ValueError, match="never added"):
        hb.on_complete("ghost", None)
    add(hb, "a")
    with pytest.raises(ValueError, match="already added"):
        add(hb, "a")
