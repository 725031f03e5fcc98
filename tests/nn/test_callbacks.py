"""ember.nn.callbacks: EarlyStopping and BestCheckpoints (keep the best k), checked against plain references."""
import math
import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.nn.callbacks import BestCheckpoints, EarlyStopping, ModelCheckpoint


def reference_stop_index(values, mode, patience, min_delta):
    """The step (0-based) at which training stops, or None: a plain scan over the history."""
    sign = 1 if mode == "min" else -1
    best_index = None
    for i, v in enumerate(values):
        if best_index is None or sign * v < sign * values[best_index] - min_delta:
            best_index = i
        elif i - best_index >= patience:
            return i
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20).map(lambda n: n / 4), min_size=1, max_size=15), st.sampled_from(["min", "max"]),
       st.integers(1, 4), st.sampled_from([0.0, 0.25, 0.5]))
def test_early_stopping_matches_a_plain_scan(values, mode, patience, min_delta):
    stopper = EarlyStopping(monitor="m", mode=mode, patience=patience, min_delta=min_delta)
    stopped = next((i for i, v in enumerate(values) if stopper.step(v)), None)
    assert stopped == reference_stop_index(values, mode, patience, min_delta)
    seen = values[:len(values) if stopped is None else stopped + 1]
    first_best = reference_best(seen, mode, min_delta)
    assert stopper.best == first_best
    assert stopper.should_stop == (stopped is not None)


def reference_best(values, mode, min_delta):
    best = values[0]
    for v in values[1:]:
        if (v < best - min_delta) if mode == "min" else (v > best + min_delta):
            best = v
    return best


def test_early_stopping_reads_tensors_and_metric_dicts():
    stopper = EarlyStopping(monitor="val_loss", patience=1)
    assert not stopper.step(ember.tensor(0.5))
    assert not stopper.step({"val_loss": ember.tensor([0.4]), "acc": 0.9})
    assert stopper.step({"val_loss": 0.45}) and stopper.best == pytest.approx(0.4)
    assert "val_loss did not improve" in stopper.stop_reason
    with pytest.raises(KeyError, match="no 'val_loss'"):
        stopper.step({"loss": 1.0})
    with pytest.raises(ValueError, match="one number"):
        stopper.step(ember.ones(2))
    with pytest.raises(TypeError, match="must be a number"):
        stopper.step("low")


def test_early_stopping_thresholds_and_non_finite_values():
    stopper = EarlyStopping(patience=10)
    assert not stopper.step(1.0) and stopper.step(math.nan)
    assert "not finite" in stopper.stop_reason and stopper.stopped_step == 2
    lenient = EarlyStopping(patience=2, check_finite=False)
    assert [lenient.step(v) for v in (1.0, math.nan, math.nan)] == [False, False, True]
    target = EarlyStopping(mode="max", stopping_threshold=0.95, patience=10)
    assert [target.step(v) for v in (0.5, 0.9, 0.95)] == [False, False, True]
    assert "stopping threshold" in target.stop_reason
    diverging = EarlyStopping(divergence_threshold=10.0, patience=10)
    assert [diverging.step(v) for v in (1.0, 5.0, 10.5)] == [False, False, True]
    assert "divergence threshold" in diverging.stop_reason


def test_early_stopping_bad_arguments():
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        EarlyStopping(mode="minimum")
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=-1)


def test_early_stopping_state_survives_a_checkpoint(tmp_path):
    values = [1.0, 0.8, 0.9, 0.85, 0.7, 0.95, 0.96, 0.97]
    straight = EarlyStopping(patience=3)
    expected = [straight.step(v) for v in values]
    first = EarlyStopping(patience=3)
    got = [first.step(v) for v in values[:3]]
    ember.save({"early_stopping": first.state_dict()}, tmp_path / "ckpt.safetensors")
    resumed = EarlyStopping(patience=3)
    resumed.load_state_dict(ember.load(tmp_path / "ckpt.safetensors")["early_stopping"])
    got += [resumed.step(v) for v in values[3:]]
    assert got == expected == [False] * 7 + [True]
    assert (resumed.best, resumed.wait) == (straight.best, straight.wait)


# -- BestCheckpoints -------------------------------------------------------------------------------------------------
def reference_kept(scores, k, mode):
    """Indices of the checkpoints kept: the k best, earlier first among equals, NaN worst."""
    def key(i):
        s = scores[i]
        return (math.inf if math.isnan(s) else (s if mode == "min" else -s), i)
    order = sorted(range(len(scores)), key=key)
    return set(order if k == -1 else order[:k])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.9, math.nan]), min_size=1, max_size=8),
       st.integers(-1, 3), st.sampled_from(["min", "max"]))
def test_best_checkpoints_keeps_the_best_k_on_disk(scores, k, mode):
    with tempfile.TemporaryDirectory() as tmp:
        keeper = BestCheckpoints(tmp, monitor="score", mode=mode, save_top_k=k, filename="step={epoch}.safetensors")
        for i, s in enumerate(scores):
            keeper.step({"score": s}, {"step": i, "w": ember.full((2,), float(i))})
        kept = reference_kept(scores, k, mode)
        assert sorted(os.listdir(tmp)) == sorted(f"step={i}.safetensors" for i in kept)
        assert sorted(keeper.best_k_models) == sorted(os.path.join(tmp, f"step={i}.safetensors") for i in kept)
        if kept:
            best = min(kept, key=lambda i: (math.inf if math.isnan(scores[i]) else
                                            (scores[i] if mode == "min" else -scores[i]), i))
            loaded = ember.load(keeper.best_model_path)
            assert loaded["step"] == best and loaded["w"].tolist() == [float(best)] * 2
            assert keeper.best_model_score == scores[best] or math.isnan(scores[best])
        else:
            assert keeper.best_model_path is None and keeper.best_model_score is None


def test_default_filename_and_save_last(tmp_path):
    keeper = BestCheckpoints(tmp_path, save_top_k=1, save_last=True)
    saved = keeper.step({"epoch": 0, "val_loss": ember.tensor(0.5)}, {"e": 0})
    assert saved == str(tmp_path / "epoch=0-0.5000.safetensors")
    assert keeper.step({"epoch": 1, "val_loss": 0.75}, {"e": 1}) is None
    assert sorted(os.listdir(tmp_path)) == ["epoch=0-0.5000.safetensors", "last.safetensors"]
    assert keeper.last_model_path == str(tmp_path / "last.safetensors")
    assert ember.load(keeper.last_model_path) == {"e": 1}
    assert keeper.kth_best_model_path == keeper.best_model_path


def test_none_kept_with_top_k_zero_and_missing_fields(tmp_path):
    keeper = BestCheckpoints(tmp_path, save_top_k=0)
    assert keeper.step({"val_loss": 0.1}, {}) is None and os.listdir(tmp_path) == []
    keeper = BestCheckpoints(tmp_path, monitor="acc", mode="max")
    with pytest.raises(KeyError, match=r"uses \{val_loss\}"):
        keeper.step({"acc": 0.9}, {})
    with pytest.raises(KeyError, match="no 'acc'"):
        keeper.step({"val_loss": 0.9}, {})
    with pytest.raises(ValueError, match="save_top_k"):
        BestCheckpoints(tmp_path, save_top_k=-2)
    with pytest.raises(ValueError, match="mode"):
        BestCheckpoints(tmp_path, mode="up")


def test_equal_names_get_versions_and_a_single_best_file_is_replaced(tmp_path):
    two = BestCheckpoints(tmp_path / "two", save_top_k=2, filename="best.safetensors")
    for v in (0.5, 0.4, 0.3):
        two.step({"val_loss": v}, {"v": v})
    assert {ember.load(p)["v"] for p in two.best_k_models} == {0.4, 0.3}
    assert all(os.path.exists(p) for p in two.best_k_models) and len(os.listdir(tmp_path / "two")) == 2
    one = BestCheckpoints(tmp_path / "one", save_top_k=1, filename="best.safetensors")
    for v in (0.5, 0.4, 0.45, 0.3):
        one.step({"val_loss": v}, {"v": v})
    assert os.listdir(tmp_path / "one") == ["best.safetensors"]
    assert ember.load(one.best_model_path) == {"v": 0.3}


def test_best_checkpoints_resume_from_state_dict(tmp_path):
    first = BestCheckpoints(tmp_path, save_top_k=2, filename="e{epoch}.safetensors")
    for v in (0.5, 0.4, 0.6):
        first.step({"val_loss": v}, {"v": v})
    ember.save({"callback": first.state_dict()}, tmp_path / "state.safetensors")
    resumed = ModelCheckpoint(tmp_path, save_top_k=2, filename="e{epoch}.safetensors")
    resumed.load_state_dict(ember.load(tmp_path / "state.safetensors")["callback"])
    resumed.step({"val_loss": 0.3}, {"v": 0.3})
    assert sorted(os.listdir(tmp_path)) == ["e1.safetensors", "e3.safetensors", "state.safetensors"]
    assert resumed.best_model_path == str(tmp_path / "e3.safetensors")
    assert ModelCheckpoint is BestCheckpoints
