"""Budgets and timeouts with the Tuner: TuneConfig(time_budget_s, trial_timeout_s), stoppers ending trials and
the whole experiment, and a restore that extends the budget."""
import json
import os
import re
import time

import pytest

from ember import tune


def endless(config):
    """Reports forever, a checkpoint every 5 steps; the loss falls with the step."""
    step = 0
    while True:
        step += 1
        time.sleep(0.02)
        tune.report({"loss": (config["x"] - 0.3) ** 2 + 1.0 / step, "step": step},
                    checkpoint={"step": step} if step % 5 == 0 else None)


def sleeper(config):
    """Hangs forever in trial x > 0.5 (after one report); returns at once in the others."""
    tune.report({"loss": abs(config["x"])})
    if config["x"] > 0.5:
        while True:
            time.sleep(60)


def noisy(config):
    """30 reports of a loss that settles at x from step ``settle`` (5 unless configured)."""
    for step in range(1, 31):
        time.sleep(0.01)
        tune.report({"loss": config["x"] + (1.0 / step if step < config.get("settle", 5) else 0.0)})


def runs(tmp_path, name, **kwargs):
    return tune.RunConfig(storage_path=str(tmp_path), name=name, verbose=0, **kwargs)


def journal(path):
    with open(os.path.join(path, "journal.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.timeout(120)
def test_time_budget_ends_the_experiment_within_budget_with_its_best_result_and_a_restore_extends_it(tmp_path):
    cc = tune.CheckpointConfig(num_to_keep=1, checkpoint_score_attribute="loss", checkpoint_score_order="min")
    tuner = tune.Tuner(endless, param_space={"x": tune.uniform(-1.0, 1.0)},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=20, seed=3,
                                                   max_concurrent_trials=2, time_budget_s=5),
                       run_config=runs(tmp_path, "budget", checkpoint_config=cc))
    started = time.monotonic()
    grid = tuner.fit()
    took = time.monotonic() - started
    assert took < 5 + 2, took
    assert {r.status for r in grid} == {"TERMINATED"} and 1 <= len(grid) <= 2  # endless: only the first two ran
    best = grid.get_best_result()
    assert best.metrics["step"] > 10 and best.checkpoint is not None and os.path.exists(best.checkpoint)
    assert best.checkpoint.endswith(f"checkpoint_{best.metrics['step'] // 5 * 5:06d}.safetensors")
    path = os.path.join(str(tmp_path), "budget")
    assert journal(path)[-1]["e"] == "halt" and journal(path)[-1]["why"] == "time_budget_s=5 spent"

    # the budget counts over all runs: the recorded one is spent, fit returns at once with the same trials
    again = tune.Tuner.restore(path, endless)
    started = time.monotonic()
    assert len(again.fit()) == len(grid) and time.monotonic() - started < 2
    # 3 s more: new trials run (those the budget stopped stay TERMINATED with their results)
    more = tune.Tuner.restore(path, endless, time_budget_s=took + 3)
    assert more.tune_config.time_budget_s == took + 3
    started = time.monotonic()
    extended = more.fit()
    assert 2 < time.monotonic() - started < 3 + 2
    assert len(extended) > len(grid) and {r.status for r in extended} == {"TERMINATED"}
    assert [r.metrics for r in extended][:len(grid)] == [r.metrics for r in grid]
    assert tune.Tuner.restore(path, endless).tune_config.time_budget_s == took + 3  # recorded for the next


@pytest.mark.timeout(120)
def test_a_hung_trial_is_killed_at_its_timeout_recorded_as_errored_and_retried_per_max_failures(tmp_path):
    space = {"x": tune.grid_search([0.1, 0.9, 0.2])}
    tuner = tune.Tuner(sleeper, param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=3,
                                                   trial_timeout_s=1.5),
                       run_config=runs(tmp_path, "hung", failure_config=tune.FailureConfig(max_failures=1)))
    started = time.monotonic()
    grid = tuner.fit()
    took = time.monotonic() - started
    assert took < 2 * (1.5 + 2) + 5, took  # two runs of the hung trial, each killed (SIGTERM) at its timeout
    by_x = {r.config["x"]: r for r in grid}
    hung = by_x[0.9]
    assert hung.status == "ERROR" and hung.num_failures == 2  # its first run, then its one retry
    killed_after = re.fullmatch(r"trial 00001 exceeded trial_timeout_s=1\.5: its run was killed after (\d+\.\d) s",
                                hung.error)
    assert killed_after and 1.5 <= float(killed_after[1]) < 3.0, hung.error
    assert len(hung.metrics_history) == 1
    for x in (0.1, 0.2):
        assert by_x[x].status == "TERMINATED" and by_x[x].num_failures == 0 and by_x[x].metrics["loss"] == x


@pytest.mark.timeout(120)
def test_stoppers_end_trials_and_the_experiment_and_are_rebuilt_by_restore(tmp_path):
    stop = tune.CombinedStopper(tune.MaximumIterationStopper(max_iter=20),
                                tune.TrialPlateauStopper("loss", std=1e-6, num_results=3, grace_period=3))
    tuner = tune.Tuner(noisy, param_space={"x": 0.5, "settle": tune.grid_search([5, 99])},
                       tune_config=tune.TuneConfig(metric="loss", mode="min"),
                       run_config=runs(tmp_path, "plateau", stop=stop))
    grid = tuner.fit()
    # settled from step 5: three equal values at steps 5, 6, 7; never settled: stopped at 20 iterations
    assert [len(r.metrics_history) for r in grid] == [7, 20]
    assert journal(os.path.join(str(tmp_path), "plateau"))[0]["spec"]["stop"]["json"]["stopper"] == "CombinedStopper"
    restored = tune.Tuner.restore(os.path.join(str(tmp_path), "plateau"), noisy)
    assert isinstance(restored.run_config.stop, tune.CombinedStopper)

    # ExperimentPlateauStopper: the two best losses equal (top=2) ends the experiment before its 6 trials ran
    tuner = tune.Tuner(noisy, param_space={"x": tune.grid_search([0.1] * 6)},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1),
                       run_config=runs(tmp_path, "experiment", stop=tune.ExperimentPlateauStopper(
                           "loss", std=1e-9, top=2, mode="min")))
    grid = tuner.fit()
    assert len(grid) == 1 and grid[0].status == "TERMINATED" and len(grid[0].metrics_history) == 6
    last = journal(os.path.join(str(tmp_path), "experiment"))[-1]
    assert last == {"e": "halt", "why": "ExperimentPlateauStopper.stop_all() returned True", "time": last["time"]}

    # TimeoutStopper: the whole experiment ends after 2 s, its endless trials stopped
    tuner = tune.Tuner(endless, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=4,
                                                   max_concurrent_trials=2),
                       run_config=runs(tmp_path, "timeout", stop=tune.TimeoutStopper(2)))
    started = time.monotonic()
    grid = tuner.fit()
    assert time.monotonic() - started < 2 + 2 and {r.status for r in grid} == {"TERMINATED"}
