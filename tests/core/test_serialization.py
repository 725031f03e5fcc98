"""ember.save / ember.load: safetensors checkpoints (round trips, layout, hostile files, subsets, atomicity)."""
import io
import math
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.errors import CheckpointError


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def test_checkpoint_dict_round_trip(tmp_path):
    w = ember.randn(3, 4)
    obj = {"epoch": 3, "model_state_dict": {"fc.weight": w, "fc.bias": ember.zeros(4)},
           "optimizer_state_dict": {"state": {0: {"step": ember.tensor(2.0), "exp_avg": ember.ones(3, 4)}},
                                    "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
           "loss": 0.25}
    path = tmp_path / "ckpt.safetensors"
    ember.save(obj, path)
    back = ember.load(path)
    assert list(back) == list(obj)
    assert back["epoch"] == 3 and back["loss"] == 0.25
    assert np.array_equal(back["model_state_dict"]["fc.weight"].numpy(), w.numpy())
    assert list(back["optimizer_state_dict"]["state"]) == [0]  # int keys stay ints
    assert back["optimizer_state_dict"]["param_groups"][0]["betas"] == (0.9, 0.999)
