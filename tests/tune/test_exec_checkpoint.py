"""tune.Checkpoint, atomic checkpoint files, and keeping the best k (CheckpointManager)."""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.serialization import _format
from ember.tune import Checkpoint
from ember.tune.checkpoint import CheckpointManager, checkpoint_path, write_checkpoint


def test_write_and_load(tmp_path):
    ckpt = write_checkpoint({"epoch": 2, "w": ember.arange(4)}, str(tmp_path / "trial"), iteration=12)
    assert ckpt.path == str(tmp_path / "trial" / "checkpoint_000012.safetensors")
    data = Checkpoint(ckpt.path).to_dict()
    assert data["epoch"] == 2 and ember.equal(data["w"], ember.arange(4))
    assert ckpt == Checkpoint(ckpt.path) and os.fspath(ckpt) == ckpt.path


def test_from_dict_is_written_on_report(tmp_path):
    ckpt = write_checkpoint(Checkpoint.from_dict({"a": 1}), str(tmp_path), iteration=1)
    assert Checkpoint(ckpt.path).to_dict() == {"a": 1}


def test_a_checkpoint_file_elsewhere_is_copied_in(tmp_path):
    own = tmp_path / "mine.safetensors"
    ember.save({"b": 2}, str(own))
    ckpt = write_checkpoint(Checkpoint(str(own)), str(tmp_path / "trial"), iteration=3)
    assert ckpt.path == checkpoint_path(str(tmp_path / "trial"), 3)
    assert ckpt.to_dict() == {"b": 2} and own.exists()
    assert not [f for f in os.listdir(tmp_path / "trial") if f.endswith(".tmp")]
    mask = os.umask(0o022)
    os.umask(mask)
    # a new file's permissions, as open(path, "w") gives them (not the temporary file's 0600)
    assert os.stat(ckpt.path).st_mode & 0o777 == 0o666 & ~mask


def test_clear_errors(tmp_path):
    with pytest.raises(TypeError, match="from_dict"):
        Checkpoint({"a": 1})
    with pytest.raises(TypeError, match="expects a dict"):
        Checkpoint.from_dict([1])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Checkpoint(str(tmp_path / "gone.safetensors")).to_dict()
    with pytest.raises(TypeError, match="no path"):
        os.fspath(Checkpoint.from_dict({}))


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    trial_dir = str(tmp_path)
    write_checkpoint({"v": ember.zeros(3)}, trial_dir, iteration=1)

    def broken(out, arrays, meta):
        out.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(_format, "write_file", broken)
    with pytest.raises(OSError, match="disk full"):
        write_checkpoint({"v": ember.ones(3)}, trial_dir, iteration=1)
    monkeypatch.undo()
    assert os.listdir(trial_dir) == ["checkpoint_000001.safetensors"]  # no temporary file left either
    assert ember.equal(Checkpoint(checkpoint_path(trial_dir, 1)).to_dict()["v"], ember.zeros(3))


def _fill(tmp_path, manager, scores):
    deleted = []
    for it, score in enumerate(scores, start=1):
        path = write_checkpoint({"it": it}, str(tmp_path), it).path
        deleted += manager.register(path, None if score is None else {"acc": score})
    return deleted


def _names(paths):
    return sorted(os.path.basename(p)[len("checkpoint_"):-len(".safetensors")] for p in paths)


def test_keep_best_k_max(tmp_path):
    m = CheckpointManager(num_to_keep=2, score_attribute="acc", score_order="max")
    _fill(tmp_path, m, [0.1, 0.9, 0.5, 0.3, 0.8])
    assert _names(m.paths) == ["000002", "000005"]
    assert _names(os.listdir(tmp_path)) == ["000002", "000005"]
    assert m.best.endswith("000002.safetensors") and m.latest.endswith("000005.safetensors")


def test_keep_best_k_min_keeps_the_latest_until_finish(tmp_path):
    m = CheckpointManager(num_to_keep=2, score_attribute="acc", score_order="min")
    _fill(tmp_path, m, [0.5, 0.1, 0.2, 0.9])
    assert _names(m.paths) == ["000002", "000003", "000004"]  # best two, and the latest (the trial may resume)
    assert _names(m.finish()) == ["000004"]
    assert _names(os.listdir(tmp_path)) == ["000002", "000003"]


def test_without_score_the_newest_are_kept(tmp_path):
    m = CheckpointManager(num_to_keep=2)
    _fill(tmp_path, m, [None] * 5)
    assert _names(os.listdir(tmp_path)) == ["000004", "000005"]


def test_missing_score_ranks_last(tmp_path):
    m = CheckpointManager(num_to_keep=1, score_attribute="acc")
    _fill(tmp_path, m, [0.3, None, float("nan"), 0.2])
    m.finish()
    assert _names(os.listdir(tmp_path)) == ["000001"]


def test_keep_all_and_bad_arguments(tmp_path):
    m = CheckpointManager()
    assert _fill(tmp_path, m, [1, 2, 3]) == [] and m.finish() == []
    with pytest.raises(ValueError, match="num_to_keep"):
        CheckpointManager(num_to_keep=0)
    with pytest.raises(ValueError, match="checkpoint_score_order must be 'min' or 'max'"):
        CheckpointManager(num_to_keep=1, score_order="best")


def test_state_dict_round_trip(tmp_path):
    m = CheckpointManager(num_to_keep=1, score_attribute="acc")
    _fill(tmp_path, m, [0.5, None])
    m2 = CheckpointManager(num_to_keep=1, score_attribute="acc")
    m2.load_state_dict(m.state_dict())
    assert m2.paths == m.paths
    assert _names(m2.finish()) == ["000002"]


@settings(max_examples=40, deadline=None)
@given(scores=st.lists(st.floats(-10, 10), min_size=1, max_size=12), k=st.integers(1, 4),
       order=st.sampled_from(["max", "min"]))
def test_kept_are_the_best_k_plus_latest(tmp_path_factory, scores, k, order):
    tmp = tmp_path_factory.mktemp("ck")
    m = CheckpointManager(num_to_keep=k, score_attribute="acc", score_order=order)
    _fill(tmp, m, scores)
    sign = 1 if order == "max" else -1
    ranked = sorted(range(len(scores)), key=lambda i: (sign * scores[i], i), reverse=True)
    expected = {i + 1 for i in ranked[:k]} | {len(scores)}
    assert {int(n) for n in _names(os.listdir(tmp))} == expected
    m.finish()
    assert {int(n) for n in _names(os.listdir(tmp))} == {i + 1 for i in ranked[:k]}
