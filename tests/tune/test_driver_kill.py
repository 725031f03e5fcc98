"""Kill a running Tuner (SIGKILL, its trial processes with it) at several points, restore it each time:
no finished trial is lost, the trial count is right, and the configurations are those of an unkilled run."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ember import tune

NUM_SAMPLES, STEPS = 6, 5

TRAINABLE = '''
import time
from ember import tune

SPACE = {"x": tune.uniform(-1.0, 1.0), "opt": tune.choice([{"name": "sgd", "momentum": tune.uniform(0.0, 0.9)},
                                                          {"name": "adam"}])}


def loss(config, step):
    return (config["x"] - 0.3) ** 2 + 1.0 / step


def trainable(config):
    start = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        start = int(checkpoint.to_dict()["step"])
    for step in range(start + 1, %(steps)d + 1):
        time.sleep(0.05)
        tune.report({"loss": loss(config, step)}, checkpoint={"step": step} if step %% 2 == 0 else None)
''' % {"steps": STEPS}

SCRIPT = '''
import os, sys
from ember import tune
from kill_trainable import SPACE, trainable

if __name__ == "__main__":  # trial processes (forkserver, spawn) import this file again
    storage = sys.argv[2]
    if sys.argv[1] == "run":
        tuner = tune.Tuner(trainable, param_space=SPACE,
                           tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=%(n)d, seed=7,
                                                       max_concurrent_trials=2),
                           run_config=tune.RunConfig(storage_path=storage, name="exp", verbose=0))
    else:
        tuner = tune.Tuner.restore(os.path.join(storage, "exp"), trainable)
    tuner.fit().to_json(os.path.join(storage, "results.json"))
''' % {"n": NUM_SAMPLES}


def journal_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def finished_trials(exp_dir, scratch):
    """{trial_id: (config, [(iteration, loss)])} of the trials finished in the journal (read from a copy,
    so the experiment itself is left as the kill left it)."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(exp_dir, scratch)
    exp = tune.Experiment.restore(scratch)
    exp.close()
    return {t.trial_id: (t.config, [(r["training_iteration"], r["loss"]) for r in t.results])
            for t in exp.trials if t.is_finished}


@pytest.mark.timeout(180)
def test_sigkill_at_several_points_then_restore(tmp_path):
    (tmp_path / "kill_trainable.py").write_text(TRAINABLE)
    (tmp_path / "kill_script.py").write_text(textwrap.dedent(SCRIPT))
    storage = tmp_path / "store"
    exp_dir = storage / "exp"
    journal = exp_dir / "journal.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}

    def start(mode):
        log = open(tmp_path / f"log_{mode}_{time.monotonic_ns()}.txt", "w")
        return subprocess.Popen([sys.executable, str(tmp_path / "kill_script.py"), mode, str(storage)], env=env,
                                cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    finished = {}
    for i, lines_more in enumerate((4, 14, 14)):  # kill after this many more journal lines
        target = journal_lines(journal) + lines_more
        proc = start("run" if i == 0 else "restore")
        deadline = time.monotonic() + 60
        try:
            while journal_lines(journal) < target and proc.poll() is None:
                assert time.monotonic() < deadline, "the tuner did not reach the kill point in time"
                time.sleep(0.005)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver, the forkserver and the trials
            proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
        now = finished_trials(str(exp_dir), str(tmp_path / "scratch"))
        assert all(now.get(k) == v for k, v in finished.items()), f"kill {i}: a finished trial was lost or changed"
        finished = now
    assert len(finished) < NUM_SAMPLES

    proc = start("restore")
    assert proc.wait(timeout=90) == 0, "".join(p.read_text() for p in sorted(tmp_path.glob("log_*.txt")))
    with open(storage / "results.json") as f:
        trials = json.load(f)["trials"]

    reference = tune.Experiment(_space(), "loss", "min", num_samples=NUM_SAMPLES, seed=7)  # as in TRAINABLE
    expected_configs = [reference.ask().config for _ in range(NUM_SAMPLES)]
    assert len(trials) == NUM_SAMPLES
    assert [t["trial_id"] for t in trials] == [f"{i:05d}" for i in range(NUM_SAMPLES)]
    assert [t["config"] for t in trials] == expected_configs
    for t in trials:
        assert t["status"] == "TERMINATED"
        history = [(m["training_iteration"], m["loss"]) for m in t["metrics_history"]]
        assert history == [(s, (t["config"]["x"] - 0.3) ** 2 + 1.0 / s) for s in range(1, STEPS + 1)]
        if t["trial_id"] in finished:
            assert (t["config"], history) == finished[t["trial_id"]]


def _space():
    return {"x": tune.uniform(-1.0, 1.0), "opt": tune.choice([{"name": "sgd", "momentum": tune.uniform(0.0, 0.9)},
                                                             {"name": "adam"}])}
