"""PopulationBasedTraining: the explore rule, which trial exploits which, the copied checkpoint, and restore."""
import json
import os
import shutil

import numpy as np
import pytest

from ember import tune
from ember.tune import Decision, PopulationBasedTraining, registry
from ember.tune.schedulers.pbt import explore

C, P = Decision.CONTINUE, Decision.PAUSE
LRS = [0.1, 0.2, 0.4, 0.8, 1.6]


class ScriptedRng:
    """Stands in for numpy's Generator: ``random()`` and ``integers(n)`` return the scripted values in turn."""

    def __init__(self, randoms=(), ints=()):
        self.randoms, self.ints = list(randoms), list(ints)

    def random(self):
        return self.randoms.pop(0)

    def integers(self, n):
        value = self.ints.pop(0)
        assert 0 <= value < n
        return value


# ---------------------------------------------------------------- explore


def test_explore_perturbs_continuous_values_by_the_drawn_factor_and_keeps_ints_ints():
    config = {"lr": 0.5, "layers": 10, "name": "x"}
    mutations = {"lr": tune.uniform(0, 1), "layers": tune.randint(1, 20)}
    # lr: 0.9 >= 0.25 -> perturb, factor index 0 (x1.2); layers: 0.3 -> perturb, factor index 1 (x0.8)
    new = explore(config, mutations, ScriptedRng([0.9, 0.3], [0, 1]), 0.25)
    assert new == {"lr": 0.6, "layers": 8, "name": "x"} and isinstance(new["layers"], int)
    assert config == {"lr": 0.5, "layers": 10, "name": "x"}  # the source's config is left alone


def test_explore_resamples_with_resample_probability():
    rng = np.random.default_rng(0)
    new = explore({"lr": 5.0}, {"lr": tune.uniform(0, 1)}, rng, resample_probability=1.0)
    assert 0 <= new["lr"] < 1  # a fresh sample from the domain, not 5 * factor
    assert explore({"lr": 5.0}, {"lr": lambda: 42}, rng, resample_probability=1.0) == {"lr": 42}


def test_explore_moves_list_values_to_a_neighbour_clipped_at_the_ends():
    mutations = {"lr": LRS}
    assert explore({"lr": 0.4}, mutations, ScriptedRng([0.9, 0.7]), 0.25) == {"lr": 0.8}  # 0.7 >= .5: up
    assert explore({"lr": 0.4}, mutations, ScriptedRng([0.9, 0.2]), 0.25) == {"lr": 0.2}  # down
    assert explore({"lr": 1.6}, mutations, ScriptedRng([0.9, 0.7]), 0.25) == {"lr": 1.6}  # clipped at the top
    assert explore({"lr": 0.4}, mutations, ScriptedRng([0.1], [4]), 0.25) == {"lr": 1.6}  # resampled: entry 4
    assert explore({"lr": 3.0}, mutations, ScriptedRng([0.9], [0]), 0.25) == {"lr": 0.1}  # not in the list
    act = {"act": tune.choice(["relu", "tanh", "gelu"])}  # a choice domain is its list of categories
    assert explore({"act": "relu"}, act, ScriptedRng([0.9, 0.7]), 0.25) == {"act": "tanh"}


def test_explore_nested_dicts_and_custom_explore_fn():
    config = {"opt": {"lr": 1.0, "beta": 0.9}}
    new = explore(config, {"opt": {"lr": tune.uniform(0, 2)}}, ScriptedRng([0.9], [1]), 0.25,
                  custom_explore_fn=lambda c: {**c, "tag": "explored"})
    assert new == {"opt": {"lr": 0.8, "beta": 0.9}, "tag": "explored"}


def test_explore_statistics_match_ray_rule():
    rng = np.random.default_rng(1)
    values = [explore({"lr": 1.0}, {"lr": tune.uniform(10, 11)}, rng, 0.25)["lr"] for _ in range(4000)]
    counts = {"x1.2": sum(np.isclose(v, 1.2) for v in values), "x0.8": sum(np.isclose(v, 0.8) for v in values),
              "resampled": sum(10 <= v < 11 for v in values)}
    assert sum(counts.values()) == 4000
    assert abs(counts["resampled"] / 4000 - 0.25) < 0.03
    assert abs(counts["x1.2"] / 4000 - 0.375) < 0.03


def test_explore_errors_name_the_key():
    with pytest.raises(KeyError, match="'momentum'"):
        explore({"lr": 1.0}, {"momentum": [0.9]}, np.random.default_rng(0))
    with pytest.raises(TypeError, match="cannot perturb name='adam'"):
        explore({"name": "adam"}, {"name": lambda: "sgd"}, ScriptedRng([0.9], [0]))


# ---------------------------------------------------------------- the scheduler on scripted results


def test_names_defaults_arguments_and_registration():
    assert registry.get("scheduler", "pbt") is PopulationBasedTraining
    pbt = PopulationBasedTraining(hyperparam_mutations={"lr": LRS})
    assert (pbt.time_attr, pbt.perturbation_interval, pbt.quantile_fraction, pbt.resample_probability,
            pbt.perturbation_factors, pbt.log_config, pbt.synch) == ("training_iteration", 60.0, 0.25, 0.25,
                                                                   (1.2, 0.8), True, False)
    with pytest.raises(ValueError, match="hyperparam_mutations or custom_explore_fn"):
        PopulationBasedTraining()
    with pytest.raises(ValueError, match="quantile_fraction must be in"):
        PopulationBasedTraining(hyperparam_mutations={"lr": LRS}, quantile_fraction=0.6)
    pbt.setup("loss", "min")
    with pytest.raises(ValueError, match=r"\['lr'\], which trial 0's config has not"):
        pbt.on_trial_add("0", {"x": 1})


def scripted(n=8, **kwargs):
    pbt = PopulationBasedTraining(**{"perturbation_interval": 4, "hyperparam_mutations": {"lr": LRS},
                                     "seed": 0, **kwargs})
    pbt.setup("loss", "min")
    for i in range(n):
        pbt.on_trial_add(str(i), {"lr": LRS[i % 5]})
    return pbt


def checkpoint_and_report(pbt, trial_id, loss, t):
    pbt.on_checkpoint(trial_id, t)
    return pbt.on_result(trial_id, {"loss": loss, "training_iteration": t})


def test_bottom_quantile_exploits_the_top_quantile_at_perturbation_points_only():
    pbt = scripted()
    # no decision between perturbation points
    assert pbt.on_result("7", {"loss": 9.0, "training_iteration": 3}) is C
    # losses 0..7 reported by trials 0..7 in turn (asynchronously, as Ray Tune does): each newcomer is the
    # worst so far, so in the bottom quantile; the top quantile is ceil(n * 0.25) (at most n // 2) of the n
    # scored so far: trial 0 for n <= 4, trials 0 and 1 for n = 5..8
    decisions = [checkpoint_and_report(pbt, str(i), float(i), 4) for i in range(8)]
    assert decisions == [C] + [P] * 7
    exploits = pbt.take_exploits()
    assert sorted(exploits) == [str(i) for i in range(1, 8)]
    assert [exploits[str(i)][0] for i in (1, 2, 3)] == ["0", "0", "0"]
    assert {exploits[str(i)][0] for i in range(4, 8)} <= {"0", "1"}
    assert all(config["lr"] in LRS for _, config in exploits.values())  # a neighbour, or resampled
    assert pbt.num_perturbations == 7
    assert pbt.take_exploits() == {}
    assert [(e["target"], e["source"]) for e in pbt.policy_log] == [(t, s) for t, (s, _) in exploits.items()]
    assert pbt.describe_trial("1") == "copied trial 0 at t=4, resumes with the explored config"
    assert pbt.describe_trial("0") == "next perturbation at t=8"
    # an exploiting trial resumes at the time of the source's checkpoint (4): its next perturbation is at 8
    assert pbt.on_result("6", {"loss": 99.0, "training_iteration": 7}) is C
    assert pbt.on_result("6", {"loss": 99.0, "training_iteration": 8}) is P


def test_a_source_without_checkpoint_is_not_exploited_and_ended_trials_leave_the_population():
    pbt = scripted(n=4, quantile_fraction=0.5)
    assert [pbt.on_result(str(i), {"loss": float(i), "training_iteration": 4}) for i in range(4)] == [C, C, C, C]
    assert pbt.take_exploits() == {}  # nobody had a checkpoint
    pbt = scripted(n=3, quantile_fraction=0.5)
    checkpoint_and_report(pbt, "0", 0.0, 4)
    pbt.on_complete("0", {"loss": 0.0})
    # "0" ended: of the live trials only "1" is scored, too few for quantiles
    assert pbt.on_result("1", {"loss": 1.0, "training_iteration": 4}) is C


def test_max_mode_exploits_the_lowest_scores():
    pbt = PopulationBasedTraining(perturbation_interval=1, hyperparam_mutations={"lr": LRS}, seed=0,
                                  quantile_fraction=0.5)
    pbt.setup("acc", "max")
    for i, acc in enumerate([0.9, 0.1]):
        pbt.on_trial_add(str(i), {"lr": 0.1})
        pbt.on_checkpoint(str(i), 1)
        pbt.on_result(str(i), {"acc": acc, "training_iteration": 1})
    assert [(t, s) for t, (s, _) in pbt.take_exploits().items()] == [("1", "0")]


def test_synch_waits_for_the_whole_population():
    pbt = scripted(n=4, synch=True, quantile_fraction=0.5)
    for i in range(4):
        assert checkpoint_and_report(pbt, str(i), float(i), 4) is P
        if i < 3:
            assert pbt.choose_trial_to_run([str(j) for j in range(i + 1)], True) is None
            assert pbt.take_decisions() == {} and pbt.take_exploits() == {}
    assert pbt.choose_trial_to_run(["0", "1", "2", "3"], False) is None  # new trials may still come
    assert pbt.take_decisions() == {}
    pbt.choose_trial_to_run(["0", "1", "2", "3"], True)
    assert sorted(pbt.take_exploits()) == ["2", "3"]
    assert pbt.take_decisions() == {str(i): C for i in range(4)}


# ---------------------------------------------------------------- in an experiment


def drive(exp, iterations=12, honour_checkpoint=True):
    """Every trial runs at once, stepped in turn. Trial state ``w`` grows by ``lr`` a step; it is
    checkpointed every step and, when ``honour_checkpoint``, resumed from the checkpoint."""
    running = {}
    while not exp.is_finished():
        while (trial := exp.ask()) is not None:
            w = tune.Checkpoint(trial.checkpoint).to_dict()["w"] if trial.checkpoint and honour_checkpoint else 0.0
            running[trial.trial_id] = [trial, w]
        if not running:
            continue
        # one step of the trial furthest behind (ties: the lowest id), so the order of reports depends only
        # on the trials' states, and a run restored after a kill continues in the order of the original
        trial_id = min(running, key=lambda tid: (running[tid][0].run_iteration, tid))
        trial, w = running[trial_id]
        w = running[trial_id][1] = w + trial.config["lr"]
        decision = exp.report(trial, {"w": w, "lr": trial.config["lr"]}, checkpoint={"w": w})
        if decision is not C:
            del running[trial_id]
        elif trial.run_iteration >= iterations:
            exp.tell(trial)
            del running[trial_id]
    exp.close()
    return exp


def make(path, name="pbt", **kwargs):
    pbt = PopulationBasedTraining(perturbation_interval=4, hyperparam_mutations={"lr": LRS}, quantile_fraction=0.25,
                                  **kwargs)
    # every checkpoint kept: the kill tests copy the finished folder, which must hold what a killed run's would
    return tune.Experiment({"lr": tune.grid_search(LRS[:4])}, "w", "max", scheduler=pbt, seed=1,
                           storage_path=str(path), name=name, checkpoint_config=tune.CheckpointConfig(num_to_keep=None))


def summary(exp):
    return [(t.trial_id, t.status, t.config, [(r["training_iteration"], r["w"], r["lr"]) for r in t.results])
            for t in exp.trials]


def exploit_records(path):
    with open(os.path.join(path, "journal.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["e"] == "exploit"]


def test_the_worst_trial_resumes_from_the_best_trials_checkpoint_with_a_neighbouring_lr(tmp_path):
    exp = drive(make(tmp_path))
    records = exploit_records(exp.path)
    # trials 0..3 (lr 0.1, 0.2, 0.4, 0.8) report in turn. At t=4 trial 0 reports first, alone; the others
    # are better. At t=8 trial 0 (w=0.8) is the bottom quantile (1 of 4) and copies the top one, trial 3,
    # whose latest checkpoint is of iteration 7 (w=5.6), with lr 0.8 moved to 0.4 or 1.6 (or resampled)
    first = records[0]
    assert (first["t"], first["src"], first["i"]) == ("00000", "00003", 7)
    assert first["ck"] == "trial_00000/exploit_000007_from_00003.safetensors"
    trial = exp.get_trial("00000")
    after = [r for r in trial.results if r["training_iteration"] == 8]
    assert after[0]["w"] == pytest.approx(5.6 + after[0]["lr"])  # resumed from the copied state
    assert after[0]["lr"] == first["c"]["lr"] != 0.1
    assert trial.config == [r for r in records if r["t"] == "00000"][-1]["c"]
    assert tune.Checkpoint(os.path.join(exp.path, first["ck"])).to_dict()["w"] == pytest.approx(5.6)
    # the policy log holds every exploit the journal has, and results show the new configs
    assert [(e["target"], e["source"], e["new_config"]) for e in exp.scheduler.policy_log] == \
        [(r["t"], r["src"], r["c"]) for r in records]
    grid = exp.results()
    assert {r.config["lr"] for r in grid} <= set(LRS)


def test_a_trainable_that_ignores_checkpoints_does_not_get_the_state(tmp_path):
    ignored = drive(make(tmp_path), honour_checkpoint=False)
    assert exploit_records(ignored.path)[0]["t"] == "00000"
    eighth = [r for r in ignored.get_trial("00000").results if r["training_iteration"] == 8][0]
    assert eighth["w"] == eighth["lr"]  # the exploit changed its config; its state started again from 0


def test_kill_and_restore_mid_run_replays_the_same_decisions(tmp_path):
    full = drive(make(tmp_path, "full"))
    expected, expected_exploits = summary(full), exploit_records(full.path)
    assert len(expected_exploits) >= 2
    with open(os.path.join(full.path, "journal.jsonl"), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    cuts = sorted({i for i, line in enumerate(lines) if b'"e":"exploit"' in line} | set(range(5, len(lines), 17)))
    for n in cuts:
        for extra in (0, 1):  # killed just before the line, or just after it
            killed = os.path.join(tmp_path, f"killed{n}_{extra}")
            shutil.copytree(full.path, killed)
            with open(os.path.join(killed, "journal.jsonl"), "wb") as f:
                f.writelines(lines[:n + extra])
            restored = tune.Experiment.restore(killed)  # the scheduler rebuilt from the journal's JSON
            drive(restored)
            assert summary(restored) == expected, f"killed after line {n + extra}"
            got = [{k: v for k, v in r.items() if k != "time"} for r in exploit_records(killed)]
            assert got == [{k: v for k, v in r.items() if k != "time"} for r in expected_exploits]
            again = tune.Experiment.restore(killed)  # restored twice: the exploits written late replay too
            assert summary(again) == expected and again.is_finished()
            again.close()


def test_restore_with_a_differently_seeded_scheduler_is_a_journal_error(tmp_path):
    full = drive(make(tmp_path, "full"))
    with pytest.raises(tune.journal.JournalError, match="exploit"):
        tune.Experiment.restore(full.path, scheduler=PopulationBasedTraining(
            perturbation_interval=4, hyperparam_mutations={"lr": LRS}, quantile_fraction=0.25, seed=12345))


def test_synch_in_an_experiment(tmp_path):
    exp = drive(make(tmp_path, "synch", synch=True))
    records = exploit_records(exp.path)
    # every trial waits at t=4, 8, 12; then the worst (1 of 4) copies the best's checkpoint of that time
    assert [(r["t"], r["src"], r["i"]) for r in records][:1] == [("00000", "00003", 4)]
    assert all(r["i"] in (4, 8, 12) for r in records) and len(records) == 3
    fifth = exp.get_trial("00000").results[4]
    assert fifth["w"] == pytest.approx(3.2 + fifth["lr"])
    assert all(t.status == "TERMINATED" for t in exp.trials)


def grower(config):
    """w grows by lr each step (of 0.05 s: the trials keep pace); checkpointed every step and resumed from it."""
    import time
    checkpoint = tune.get_checkpoint()
    state = {"w": 0.0, "step": 0} if checkpoint is None else checkpoint.to_dict()
    for step in range(int(state["step"]) + 1, 13):
        time.sleep(0.05)
        state = {"w": float(state["w"]) + config["lr"], "step": step}
        tune.report({"w": state["w"], "lr": config["lr"], "start": checkpoint.path if checkpoint else ""},
                    checkpoint=state)


@pytest.mark.timeout(180)
def test_tuner_trials_resume_from_the_copied_checkpoint_with_the_new_config(tmp_path):
    pbt = PopulationBasedTraining(perturbation_interval=4, hyperparam_mutations={"lr": LRS}, seed=3)
    tuner = tune.Tuner(grower, param_space={"lr": tune.grid_search(LRS[:4])},
                       tune_config=tune.TuneConfig(metric="w", mode="max", scheduler=pbt, max_concurrent_trials=4,
                                                   seed=0),
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="pbt", verbose=0))
    grid = tuner.fit()
    assert grid.num_errors == 0 and grid.num_terminated == 4
    records = exploit_records(os.path.join(tmp_path, "pbt"))
    assert records and pbt.num_perturbations == len(records)
    # the last exploit of each trial that left steps to run (an earlier one's results may be re-run; a copy of a
    # source's final checkpoint, which a loaded machine can make, leaves the resumed run nothing to report)
    last_of_each = {record["t"]: record for record in records if record["i"] < 12}
    final = {record["t"]: record for record in records}  # a later exploit, of a final checkpoint, sets the config
    assert last_of_each
    for record in last_of_each.values():
        target = next(r for r in grid if r.metrics["trial_id"] == record["t"])
        resumed = [m for m in target.metrics_history if m["start"].endswith(os.path.basename(record["ck"]))]
        first = min(resumed, key=lambda m: m["training_iteration"])
        # its run began from the source's state at that iteration, with the explored lr
        source_w = tune.Checkpoint(os.path.join(tmp_path, "pbt", record["ck"])).to_dict()["w"]
        assert first["training_iteration"] == record["i"] + 1 and first["lr"] == record["c"]["lr"]
        assert first["w"] == pytest.approx(float(source_w) + record["c"]["lr"])
        assert target.config == final[record["t"]]["c"]


@pytest.mark.parametrize("change", [{"ck": "../victim.safetensors"}, {"src": "00002"}, {"c": {"lr": 99.0}},
                                    {"t": "00009"}])
def test_a_tampered_exploit_record_is_a_journal_error_and_touches_no_file(tmp_path, change):
    full = drive(make(tmp_path, "full"))
    victim = tmp_path / "victim.safetensors"
    victim.write_bytes(b"keep")
    path = os.path.join(full.path, "journal.jsonl")
    with open(path) as f:
        records = [json.loads(line) for line in f]
    index = next(i for i, r in enumerate(records) if r["e"] == "exploit")
    records[index].update(change)
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    with pytest.raises(tune.journal.JournalError, match=f"line {index + 1}"):
        tune.Experiment.restore(full.path)
    assert victim.read_bytes() == b"keep"


def test_state_dict_round_trip_continues_with_the_same_draws():
    pbt = scripted()
    for i in range(4):
        checkpoint_and_report(pbt, str(i), float(i), 4)
    pbt.take_exploits()
    state = json.loads(json.dumps(pbt.state_dict()))  # JSON-safe
    copy = scripted()
    copy.load_state_dict(state)
    for scheduler in (pbt, copy):
        for i in range(4, 8):
            checkpoint_and_report(scheduler, str(i), float(i), 4)
    assert pbt.take_exploits() == copy.take_exploits() != {}
