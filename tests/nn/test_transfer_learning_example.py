"""examples/transfer_learning.py: runs end to end with good accuracy, and its freezing really freezes."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transfer_learning.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("transfer_learning_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_example_runs_and_reaches_good_accuracy():
    proc = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    pretrain = float(re.search(r"pretrain on digits 0-4: test accuracy ([\d.]+)", out).group(1))
    before_head = float(re.search(r"before training: test accuracy ([\d.]+)", out).group(1))
    frozen = float(re.search(r"head trained: test accuracy ([\d.]+)", out).group(1))
    final = float(re.search(r"^final accuracy ([\d.]+)$", out, re.M).group(1))
    assert pretrain >= 0.95 and before_head < 0.5 and frozen >= 0.9 and final >= 0.95, out
    sums = re.search(r"checksum before (\S+) (\S+) after (\S+) (\S+) unchanged True", out)
    assert sums and sums.group(1, 2) == sums.group(3, 4), out
    assert "backbone lr 0.001, head lr 0.005" in out


def snapshot(module):
    return {name: p.detach().numpy().copy() for name, p in module.named_parameters()}


def test_frozen_backbone_does_not_change_and_the_head_does(example, tmp_path):
    ember.manual_seed(0)
    path = tmp_path / "pretrained.safetensors"
    pretrained = example.DigitNet(num_classes=5)
    ember.save(pretrained.state_dict(), path)
    model = example.transfer(path)
    for name, p in pretrained.backbone.named_parameters():  # the backbone came from the file
        np.testing.assert_array_equal(model.backbone.get_parameter(name).detach().numpy(), p.detach().numpy())
    assert all(not p.requires_grad for p in model.backbone.parameters())
    assert all(p.requires_grad for p in model.head.parameters())
    backbone, head = snapshot(model.backbone), snapshot(model.head)
    train_set, _ = example.digit_split([5, 6, 7, 8, 9])
    subset = (train_set[0][:64], train_set[1][:64])
    example.train(model, ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1), subset, 1)
    for name, value in snapshot(model.backbone).items():
        np.testing.assert_array_equal(value, backbone[name], err_msg=name)
    assert all(p.grad is None for p in model.backbone.parameters())
    assert all(not np.array_equal(value, head[name]) for name, value in snapshot(model.head).items())


def test_fine_tuning_uses_parameter_groups_with_their_own_learning_rates(example, tmp_path):
    ember.manual_seed(0)
    path = tmp_path / "pretrained.safetensors"
    ember.save(example.DigitNet(num_classes=5).state_dict(), path)
    model = example.transfer(path)
    optimizer = example.fine_tune_optimizer(model, backbone_lr=1e-4, head_lr=1e-2)
    assert all(p.requires_grad for p in model.parameters())
    backbone_group, head_group = optimizer.param_groups
    assert (backbone_group["lr"], head_group["lr"]) == (1e-4, 1e-2)
    assert [id(p) for p in backbone_group["params"]] == [id(p) for p in model.backbone.parameters()]
    assert [id(p) for p in head_group["params"]] == [id(p) for p in model.head.parameters()]
    backbone = snapshot(model.backbone)
    train_set, _ = example.digit_split([5, 6, 7, 8, 9])
    example.train(model, optimizer, (train_set[0][:64], train_set[1][:64]), 1)
    assert any(not np.array_equal(value, backbone[name]) for name, value in snapshot(model.backbone).items())


def test_digit_split_renumbers_labels_and_keeps_only_the_asked_digits(example):
    (train_images, train_labels), (test_images, test_labels) = example.digit_split([5, 6, 7, 8, 9])
    assert train_images.shape[1:] == (1, 8, 8) and train_images.dtype == np.float32
    assert 0 <= train_images.min() and train_images.max() <= 1
    assert set(np.unique(train_labels)) == set(np.unique(test_labels)) == {0, 1, 2, 3, 4}
    assert len(train_labels) + len(test_labels) == 1797 - 901  # sklearn's digits: 901 images of 0-4
