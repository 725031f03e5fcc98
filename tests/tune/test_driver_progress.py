"""The live progress view: in place with rich, a status line per interval without; ETA; why trials pause."""
import io
import os
import subprocess
import sys
import textwrap

import pytest

from ember import tune
from ember.tune.progress import ProgressReporter


def _experiment(scheduler=None, num_samples=3, view=None):
    exp = tune.Experiment({"lr": tune.loguniform(1e-4, 1e-1), "depth": tune.randint(1, 4)}, "loss", "min",
                          num_samples=num_samples, seed=0, scheduler=scheduler)
    if view is not None:  # set up before any trial ended, as in a fresh run
        view.setup(total_num_samples=num_samples, experiment=exp)
    a, b = exp.ask(), exp.ask()
    exp.report(a, {"loss": 0.25, "acc": 0.75, "epoch_s": 1.5})
    exp.tell(a)
    exp.report(b, {"loss": 0.5, "acc": 0.5, "epoch_s": 1.25})
    return exp


def _view(exp, use_rich, **kwargs):
    view = ProgressReporter(interval=3600, out=io.StringIO(), use_rich=use_rich, **kwargs)
    view.setup(num_samples=exp.num_samples, total_num_samples=exp.num_samples, experiment=exp)
    return view


def test_plain_text_prints_one_status_line_per_interval_and_the_table_once_at_the_end():
    exp = _experiment()
    view = _view(exp, use_rich=False)
    view.on_step_end(1, exp.trials)
    view.on_step_end(2, exp.trials)  # within the interval: nothing
    lines = view.out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[0:00:00") and "1/3 trials ended" in lines[0]
    assert "2 trials: 1 running, 0 paused, 0 pending, 1 terminated, 0 errored | best loss=0.25" in lines[0]
    lr = exp.trials[0].config["lr"]
    assert f"lr={lr:.4g}," in lines[0] and repr(lr) not in lines[0]  # configs to 4 significant digits
    view.on_experiment_end(exp.trials)
    text = view.out.getvalue()
    table = text.splitlines()[2:]
    assert table[0].split() == ["trial_id", "status", "lr", "depth", "loss", "training_iteration", "acc", "epoch_s"]
    assert table[1].split()[:3] == ["00000", "TERMINATED", f"{lr:.4g}"] and table[2].split()[1] == "RUNNING"
    assert "experiment finished" not in text  # an experiment without storage has no folder to name


def test_rich_redraws_in_place(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich's width: no wrapped line
    exp = _experiment()
    view = _view(exp, use_rich=True)
    view.update(exp.trials, force=True)
    first = view.out.getvalue()
    assert "best loss=0.25" in first and "TERMINATED" in first and "epoch_s" in first
    exp.report(exp.trials[1], {"loss": 0.125, "acc": 0.9, "epoch_s": 1.0})
    view.update(exp.trials, force=True)
    second = view.out.getvalue()[len(first):]
    assert "\x1b[1A" in second and "\x1b[2K" in second  # cursor up, erase line: the view is redrawn where it was
    assert "best loss=0.125" in second
    view.on_experiment_end(exp.trials)
    assert view._live is None


def test_eta_from_the_pace_of_ended_trials_and_the_time_budget():
    view = ProgressReporter(out=io.StringIO(), use_rich=False)
    exp = _experiment(num_samples=5, view=view)
    assert view.eta(exp.trials, elapsed=10.0) == pytest.approx(40.0)  # 1 of 5 ended in 10 s
    view.time_budget_s = 25.0
    assert view.eta(exp.trials, elapsed=10.0) == pytest.approx(15.0)  # the budget ends first
    assert "about 0:00:15 left" in view.status_line(exp.trials, 10.0)
    fresh = ProgressReporter(out=io.StringIO(), use_rich=False)
    assert fresh.eta(exp.trials, 10.0) is None  # nothing known: no estimate
    fresh.setup(total_num_samples=5, experiment=exp)  # a restore: the trial ended before is no pace
    assert fresh.eta(exp.trials, 10.0) is None


def test_hyperband_paused_trials_say_they_wait_at_the_rung_barrier():
    exp = _experiment(scheduler=tune.HyperBandScheduler(max_t=9, reduction_factor=3), num_samples=9)
    # both trials reached the first rung's budget (t=1) and wait there for the 7 others of the bracket
    view = _view(exp, use_rich=False)
    header, rows = view.table_cells(exp.trials)
    assert header[-1] == "scheduler"
    by_id = {row[0]: row for row in rows}
    assert [t.status for t in exp.trials] == ["PAUSED", "PAUSED"]
    assert by_id[exp.trials[1].trial_id][-1] == "bracket 0, rung 1/3 (t=1): waits at the rung barrier, 2 of 9 " \
                                                "trials arrived"
    assert "2 paused (at a rung barrier: resumed when their rung is complete)" in view.status_line(exp.trials, 1)


def test_asha_says_which_rung_comes_next():
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, "loss", "min", num_samples=2, seed=0,
                          scheduler=tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3))
    trial = exp.ask()
    view = _view(exp, use_rich=False)
    assert view.table_cells(exp.trials)[1][0][-1] == "bracket 0, next rung 1/2 at t=1"
    exp.report(trial, {"loss": 0.5})
    assert view.table_cells(exp.trials)[1][0][-1] == "bracket 0, next rung 2/2 at t=3"


@pytest.mark.timeout(120)
def test_a_script_piped_on_stdin_gets_the_notebook_error(tmp_path):
    script = textwrap.dedent(f"""
        from ember import tune
        def trainable(config):
            tune.report({{"loss": config["x"]}})
        tuner = tune.Tuner(trainable, param_space={{"x": tune.uniform(0, 1)}},
                           tune_config=tune.TuneConfig(metric="loss", mode="min"),
                           run_config=tune.RunConfig(storage_path={str(tmp_path)!r}, name="piped", verbose=0))
        tuner.fit()
        """)
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=100,
                          cwd=tmp_path)
    assert done.returncode == 1
    assert "TypeError: the trainable 'trainable' is defined in an interactive session" in done.stderr
    assert "piped on standard input as `python - <<EOF`" in done.stderr
    assert not os.path.exists(tmp_path / "piped")  # refused before the experiment was created
