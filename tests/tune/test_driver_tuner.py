"""The Tuner with the local executor: trials in processes, failures, checkpoints, progress, restore."""
import os

import pytest

from ember import tune

SPACE = {"x": tune.uniform(-1.0, 1.0), "depth": tune.randint(1, 4)}


def quadratic(config):
    """Five reports, a checkpoint every second one; resumes from its checkpoint."""
    start = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        start = int(ckpt.to_dict()["step"])
    for step in range(start + 1, 6):
        value = (config["x"] - 0.3) ** 2 + 1.0 / step
        tune.report({"loss": value, "acc": -value}, checkpoint={"step": step} if step % 2 == 0 else None)


def flaky(config):
    """Fails on the first attempt of every trial (a marker file remembers attempts); trial x > 0.5 always."""
    marker = os.path.join(config["marker_dir"], tune.get_trial_id())
    first = not os.path.exists(marker)
    open(marker, "a").close()
    if first or config["x"] > 0.5:
        raise ValueError(f"bad luck for x={config['x']:.3f}")
    tune.report({"loss": abs(config["x"])})


def stepper(config):
    """Checkpoints every step; notes in its folder the step each run started from."""
    checkpoint = tune.get_checkpoint()
    start = 0 if checkpoint is None else int(checkpoint.to_dict()["step"])
    with open(os.path.join(config["log_dir"], f"starts_{tune.get_trial_id()}.txt"), "a") as f:
        f.write(f"{start}\n")
    for step in range(start + 1, 10):
        tune.report({"loss": (config["x"] - 0.3) ** 2 + 1.0 / step}, checkpoint={"step": step})


def runs(tmp_path, name, **tune_kwargs):
    return tune.RunConfig(storage_path=str(tmp_path), name=name, verbose=0, **tune_kwargs)


@pytest.mark.timeout(120)
def test_fit_random_search_with_asha(tmp_path):
    tuner = tune.Tuner(quadratic, param_space=SPACE,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=8, seed=0,
                                                   max_concurrent_trials=2,
                                                   scheduler=tune.ASHAScheduler(max_t=5, grace_period=1,
                                                                                reduction_factor=2)),
                       run_config=runs(tmp_path, "asha"))
    grid = tuner.fit()
    assert len(grid) == 8 and grid.num_terminated == 8 and grid.num_errors == 0
    assert [r.metrics for r in tuner.fit()] == [r.metrics for r in grid]  # done: fit again gives the results
    lengths = sorted(len(r.metrics_history) for r in grid)
    assert lengths[0] < 5 and lengths[-1] == 5  # ASHA dropped some early, the best ran to max_t
    reference = tune.Experiment(SPACE, "loss", "min", num_samples=8, seed=0)
    assert [r.config for r in grid] == [reference.ask().config for _ in range(8)]
    best = grid.get_best_result()
    assert best.metrics["loss"] == min(r.metrics["loss"] for r in grid)
    for r in grid:
        assert [m["training_iteration"] for m in r.metrics_history] == list(range(1, len(r.metrics_history) + 1))
        assert r.path == os.path.join(str(tmp_path), "asha", f"trial_{r.trial_id}")


@pytest.mark.timeout(120)
def test_fit_with_hyperband_pauses_and_resumes_trials_from_their_checkpoints(tmp_path):
    # max_t=3, eta=3: bracket 1 runs 3 trials to 1 and promotes one to 3; bracket 0 runs 2 trials to 3.
    # One at a time, so the first two trials pause at 1 and the third completes the rung; with seed 0 the
    # first trial is the best of the three: it is promoted, and resumes from its checkpoint.
    space = {"x": tune.uniform(-1, 1), "log_dir": str(tmp_path)}
    reference = tune.Experiment(space, "loss", "min", num_samples=5, seed=0)
    xs = [reference.ask().config["x"] for _ in range(3)]
    assert min(range(3), key=lambda i: (xs[i] - 0.3) ** 2) == 0
    tuner = tune.Tuner(stepper, param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=5, seed=0,
                                                   max_concurrent_trials=1,
                                                   scheduler=tune.HyperBandScheduler(max_t=3, reduction_factor=3)),
                       run_config=runs(tmp_path, "hb"))
    grid = tuner.fit()
    starts = {r.trial_id: (tmp_path / f"starts_{r.trial_id}.txt").read_text().split() for r in grid}
    seen = f"{grid.table()}\nerrors: {grid.errors}\nstarts: {starts}"
    assert grid.num_terminated == 5, seen
    assert [len(r.metrics_history) for r in grid] == [3, 1, 1, 3, 3], seen
    assert starts == {"00000": ["0", "1"], "00001": ["0"], "00002": ["0"], "00003": ["0"], "00004": ["0"]}, seen
    for r in grid:
        assert [m["training_iteration"] for m in r.metrics_history] == list(range(1, len(r.metrics_history) + 1))
        times = [m["time_total_s"] for m in r.metrics_history]
        assert times == sorted(times)  # the resumed run's clock goes on from the paused one's


@pytest.mark.timeout(120)
def test_errored_trials_retried_and_recorded_with_traceback(tmp_path):
    space = {"x": tune.grid_search([0.1, 0.9, -0.2]), "marker_dir": str(tmp_path)}
    tuner = tune.Tuner(flaky, param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=2),
                       run_config=runs(tmp_path, "flaky", failure_config=tune.FailureConfig(max_failures=2)))
    grid = tuner.fit()
    by_x = {r.config["x"]: r for r in grid}
    assert by_x[0.9].status == "ERROR" and by_x[0.9].num_failures == 3
    assert "ValueError: bad luck for x=0.900" in by_x[0.9].error and "Traceback" in by_x[0.9].error
    for x in (0.1, -0.2):  # failed once, retried, finished: the failure did not stop the others
        assert by_x[x].status == "TERMINATED" and by_x[x].num_failures == 1 and by_x[x].metrics["loss"] == abs(x)
    assert grid.get_best_result().config["x"] == 0.1


@pytest.mark.timeout(120)
def test_best_k_checkpoints_stop_criteria_progress_and_restore_of_a_finished_run(tmp_path, capsys):
    cc = tune.CheckpointConfig(num_to_keep=1, checkpoint_score_attribute="acc", checkpoint_score_order="max")
    run_config = tune.RunConfig(storage_path=str(tmp_path), name="keep", checkpoint_config=cc,
                                stop={"training_iteration": 4}, progress_interval=0)
    tuner = tune.Tuner(tune.with_resources(quadratic, {"cpu": 1}), param_space=SPACE,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=3, seed=1),
                       run_config=run_config)
    grid = tuner.fit()
    for r in grid:
        assert len(r.metrics_history) == 4  # stopped by the criterion
        kept = sorted(f for f in os.listdir(r.path) if f.endswith(".safetensors"))
        assert kept == ["checkpoint_000004.safetensors"]  # acc rises with the step: the best is the last
        assert r.checkpoint == os.path.join(r.path, "checkpoint_000004.safetensors")
    out = capsys.readouterr().out
    # the last progress table's title (plain text, or a rich table that may wrap it)
    assert "3 trials: 0 running, 0 paused, 0 pending, 3 terminated, 0 errored" in out and "best loss=" in out
    assert "experiment finished" in out
    assert not [f for f in os.listdir(tmp_path / "keep") if f.endswith(".pkl")]  # restore reads the journal only
    with pytest.raises(ValueError, match="ran the trainable '.*quadratic', not '.*flaky'"):
        tune.Tuner.restore(os.path.join(str(tmp_path), "keep"), flaky)
    restored = tune.Tuner.restore(os.path.join(str(tmp_path), "keep"), quadratic)
    again = restored.fit()
    assert [(r.config, r.metrics["loss"]) for r in again] == [(r.config, r.metrics["loss"]) for r in grid]


def test_tuner_arguments_are_checked():
    with pytest.raises(ValueError, match="TuneConfig.metric=..., mode="):
        tune.Tuner(quadratic, param_space=SPACE)
    with pytest.raises(TypeError, match="trainable must be a function"):
        tune.Tuner(3, param_space=SPACE, tune_config=tune.TuneConfig(metric="loss", mode="min"))
    with pytest.raises(ValueError, match="resources must be a dict with keys 'cpu' and/or 'gpu'"):
        tune.with_resources(quadratic, {"tpu": 1})
    with pytest.raises(ValueError, match=r"resources\['gpu'\] must be a number >= 0"):
        tune.with_resources(quadratic, {"gpu": -1})
    wrapped = tune.with_resources(tune.with_resources(quadratic, {"cpu": 2}), {"gpu": 1})
    assert wrapped.resources == {"cpu": 1, "gpu": 1} and wrapped.trainable is quadratic
    assert wrapped.__name__ == "quadratic"


@pytest.mark.timeout(120)
def test_an_ask_tell_experiment_continues_with_a_tuner(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=3, seed=4, storage_path=str(tmp_path), name="mixed")
    first = exp.ask()
    exp.tell(first, {"loss": 123.0})
    second = exp.ask()  # left running: the Tuner restarts it
    exp.close()
    grid = tune.Tuner.restore(exp.path, quadratic).fit()
    assert [r.trial_id for r in grid] == ["00000", "00001", "00002"] and grid.num_terminated == 3
    assert grid[0].metrics["loss"] == 123.0 and len(grid[0].metrics_history) == 1
    assert grid[1].config == second.config and len(grid[1].metrics_history) == 5
