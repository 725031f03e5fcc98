"""Schedulers driven by a small simulated experiment: synthetic learning curves, a fixed number of workers,
and a loop that obeys every decision (PAUSE: the trial waits until the scheduler resumes it; STOP: it ends).

Checks that the best trial reaches max_t, that the early-stopping schedulers spend less than FIFO, that
nothing is left paused at the end, and that a state_dict saved mid-run (through JSON) continues with the very
same decisions.
"""
import json

import numpy as np
import pytest

from ember.tune import (
    ASHAScheduler,
    Decision,
    FIFOScheduler,
    HyperBandScheduler,
    MedianStoppingRule,
    RandomSearcher,
    SearchSpace,
    uniform,
)

MAX_T = 27


def make_curves(n, seed, best=None, second=None):
    """``n`` learning curves ``loss(t) = a + c / t``; trial ``best`` (default: a random one) is the best at
    every iteration, ``second`` (if given) the second best, the others cross each other.
    Returns (curves, index of the best)."""
    rng = np.random.default_rng(seed)
    a, c = rng.uniform(0.1, 1.0, n), rng.uniform(0.5, 2.0, n)
    best = int(rng.integers(n)) if best is None else best
    a[best], c[best] = 0.0, 0.4
    if second is not None:
        a[second], c[second] = 0.01, 0.41
    return [lambda t, a=a[i], c=c[i]: float(a + c / t) for i in range(n)], best


class Simulation:
    """A run of ``curves`` through ``scheduler`` on ``workers`` slots; every running trial does one iteration
    per tick. ``errors`` maps a trial index to the iteration at which it raises. A paused trial told CONTINUE
    is resumed when :meth:`choose_trial_to_run` names it, or with ``resume_on_continue`` (as the experiment
    does) at once, before any other."""

    def __init__(self, scheduler, curves, *, workers=4, mode="min", errors=None, restore_at=None, rebuild=None,
                 resume_on_continue=False):
        self.scheduler, self.curves, self.workers, self.mode = scheduler, curves, workers, mode
        self.resume_on_continue, self.resumable = resume_on_continue, []
        self.errors, self.restore_at, self.rebuild = errors or {}, restore_at, rebuild
        self.progress, self.last = {}, {}
        self.running, self.paused, self.ended = [], [], set()
        self.log, self.used, self.next_index, self.restored = [], 0, 0, False
        scheduler.setup(metric="loss", mode=mode)

    def metric(self, index, t):
        loss = self.curves[index](t)
        return loss if self.mode == "min" else -loss

    def end(self, trial_id, error=False):
        self.ended.add(trial_id)
        self.scheduler.on_complete(trial_id, self.last.get(trial_id), error=error)
        self.drain()

    def drain(self):
        decisions = self.scheduler.take_decisions()
        for trial_id, decision in decisions.items():
            assert trial_id not in self.ended, f"a decision ({decision}) about {trial_id}, which had ended"
            self.log.append((trial_id, "told", decision.value))
            if decision == Decision.STOP:
                (self.paused if trial_id in self.paused else self.running).remove(trial_id)
                self.end(trial_id)
            elif decision == Decision.CONTINUE:
                assert trial_id in self.paused or trial_id in self.running
                if self.resume_on_continue and trial_id in self.paused:
                    self.paused.remove(trial_id)
                    self.resumable.append(trial_id)
            else:
                self.running.remove(trial_id)
                self.paused.append(trial_id)

    def fill(self):
        while len(self.running) < self.workers:
            if self.resumable:
                self.resume(self.resumable.pop(0))
                continue
            finished = self.next_index >= len(self.curves)
            chosen = self.scheduler.choose_trial_to_run(list(self.paused), finished)
            self.drain()
            if chosen is not None:
                assert chosen in self.paused, f"asked to resume {chosen}, which is not paused"
                self.paused.remove(chosen)
                self.resume(chosen)
            elif not finished:
                trial_id = f"{self.next_index:05d}"
                self.next_index += 1
                self.scheduler.on_trial_add(trial_id, {"index": int(trial_id)})
                self.progress[trial_id] = 0
                self.running.append(trial_id)
            else:
                return

    def resume(self, trial_id):
        self.running.append(trial_id)
        self.log.append((trial_id, "resumed", self.progress[trial_id]))

    def tick(self):
        for trial_id in list(self.running):
            if trial_id not in self.running:  # stopped by a decision earlier in this tick
                continue
            t = self.progress[trial_id] = self.progress[trial_id] + 1
            self.used += 1
            index = int(trial_id)
            if self.errors.get(index) == t:
                self.running.remove(trial_id)
                self.log.append((trial_id, "error", t))
                self.end(trial_id, error=True)
                continue
            result = self.last[trial_id] = {"loss": self.metric(index, t), "training_iteration": t}
            decision = self.scheduler.on_result(trial_id, result)
            self.log.append((trial_id, t, decision.value))
            if decision == Decision.PAUSE:
                self.running.remove(trial_id)
                self.paused.append(trial_id)
            elif decision == Decision.STOP or t >= MAX_T:  # at MAX_T the trainable returns by itself
                self.running.remove(trial_id)
                self.end(trial_id)
            self.drain()

    def run(self):
        for step in range(10_000):
            if step == self.restore_at:
                self.restore()
            self.fill()
            if not self.running:
                break
            self.tick()
        else:
            raise AssertionError("the simulation did not end")
        assert not self.paused and not self.resumable, f"trials left paused at the end: {self.paused}"
        assert len(self.ended) == len(self.curves)
        return self

    def restore(self):
        """Replace the scheduler by a fresh one loaded from the old one's state (through strict JSON)."""
        state = json.loads(json.dumps(self.scheduler.state_dict(), allow_nan=False))
        fresh = self.rebuild()
        fresh.setup(metric="loss", mode=self.mode)
        fresh.load_state_dict(state)
        assert json.dumps(fresh.state_dict()) == json.dumps(state)
        self.scheduler, self.restored = fresh, True

    def reached_max_t(self):
        return {trial_id for trial_id, t in self.progress.items() if t >= MAX_T}


SCHEDULERS = {
    "fifo": lambda: FIFOScheduler(),
    "median": lambda: MedianStoppingRule(time_attr="training_iteration", grace_period=3, min_samples_required=3),
    "hyperband": lambda: HyperBandScheduler(max_t=MAX_T, reduction_factor=3),
    "asha": lambda: ASHAScheduler(max_t=MAX_T, grace_period=1, reduction_factor=3),
    "asha-brackets": lambda: ASHAScheduler(max_t=MAX_T, grace_period=1, reduction_factor=3, brackets=3),
}
#: the most each may spend, as a fraction of FIFO's budget (every trial to MAX_T), on these curves
BUDGET = {"fifo": 1.0, "median": 0.8, "hyperband": 0.3, "asha": 0.3, "asha-brackets": 0.5}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_trial_reaches_max_t_and_budget_is_saved(name, seed):
    curves, best = make_curves(100, seed)
    sim = Simulation(SCHEDULERS[name](), curves).run()
    assert f"{best:05d}" in sim.reached_max_t()
    fifo = len(curves) * MAX_T
    assert sim.used <= BUDGET[name] * fifo
    if name != "fifo":
        assert sim.used < fifo and len(sim.reached_max_t()) < len(curves)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_max_mode_makes_the_same_decisions(name):
    curves, _ = make_curves(60, seed=5)
    low = Simulation(SCHEDULERS[name](), curves, mode="min").run()
    high = Simulation(SCHEDULERS[name](), curves, mode="max").run()
    assert low.log == high.log


def test_hyperband_trials_at_max_t_follow_the_brackets():
    # max_t=27, eta=3: brackets of 27, 12, 6 and 4 trials, of which 1, 1, 2 and 4 reach max_t; 100 trials
    # are two rounds (2 * 49) and a last bracket of 2 trials closed when the searcher finished (1 goes through)
    curves, best = make_curves(100, seed=3)
    sim = Simulation(HyperBandScheduler(max_t=MAX_T, reduction_factor=3), curves).run()
    assert len(sim.reached_max_t()) == 2 * (1 + 1 + 2 + 4) + 1
    resumed = [entry for entry in sim.log if entry[1] == "resumed"]
    assert resumed and all(entry[2] in (1, 3, 9) for entry in resumed)  # resumed only from rung budgets


@pytest.mark.parametrize("workers", [1, 4, 16])
def test_hyperband_resumes_the_same_whether_told_or_chosen(workers):
    curves, best = make_curves(100, seed=4)
    chosen = Simulation(HyperBandScheduler(max_t=MAX_T, reduction_factor=3), curves, workers=workers).run()
    told = Simulation(HyperBandScheduler(max_t=MAX_T, reduction_factor=3), curves, workers=workers,
                      resume_on_continue=True).run()
    assert f"{best:05d}" in told.reached_max_t()
    assert told.reached_max_t() == chosen.reached_max_t() and told.used == chosen.used


@pytest.mark.parametrize("workers", [1, 3, 16])
def test_hyperband_with_errored_trials_ends_cleanly(workers):
    # trial 31 is second best: in its bracket (trials 27-38: 12 at budget 3, 4 at 9, 1 at 27) it is promoted
    # from the first rung with the best (30), then errors on its way to the second
    curves, best = make_curves(60, seed=7, best=30, second=31)
    errors = {**{i: 1 for i in range(0, 60, 7) if i != best}, 31: 5}
    sim = Simulation(HyperBandScheduler(max_t=MAX_T, reduction_factor=3), curves, workers=workers,
                     errors=errors).run()
    assert f"{best:05d}" in sim.reached_max_t()
    assert sum(1 for entry in sim.log if entry[1] == "error") == len(errors)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@pytest.mark.parametrize("restore_at", [3, 11, 30])
def test_state_dict_round_trip_mid_run_gives_the_same_decisions(name, restore_at):
    curves, _ = make_curves(50, seed=11)
    errors = {4: 2, 17: 1}
    plain = Simulation(SCHEDULERS[name](), curves, errors=errors).run()
    restored = Simulation(SCHEDULERS[name](), curves, errors=errors, restore_at=restore_at,
                          rebuild=SCHEDULERS[name]).run()
    assert restored.restored and restored.log == plain.log


@pytest.mark.parametrize("name", ["median", "hyperband", "asha"])
def test_a_state_saved_when_schedulers_kept_scores_is_refused(name):
    scheduler = SCHEDULERS[name]()
    scheduler.setup(metric="loss", mode="min")
    state = scheduler.state_dict()
    assert state["settings"]["values"] == "losses"
    del state["settings"]["values"]  # what a scheduler that ranked scores (higher is better) saved
    with pytest.raises(ValueError, match=f"saved by an earlier ember.tune, whose {type(scheduler).__name__} kept "
                                         r"scores \(higher is better\) where it now keeps losses"):
        SCHEDULERS[name]().load_state_dict(state)


@pytest.mark.parametrize("mode, expected", [("min", 2.5), ("max", -2.5)])
def test_searchers_and_schedulers_share_one_sign_convention_lower_is_better(mode, expected):
    searcher, scheduler = RandomSearcher(), FIFOScheduler()
    searcher.setup(SearchSpace({"x": uniform(0, 1)}), metric="m", mode=mode)
    scheduler.setup(metric="m", mode=mode)
    assert searcher.loss({"m": 2.5}) == scheduler.loss({"m": 2.5}) == expected
