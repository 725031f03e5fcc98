"""Weights written by PyTorch load into the same ember architecture and give PyTorch's outputs, and back.

The fixture files in tests/fixtures/torch/ were made by tests/fixtures/make_torch_fixtures.py with PyTorch
2.13: ``<name>.safetensors`` is ``safetensors.torch.save_file(model.state_dict())``, ``<name>.io.safetensors``
holds the inputs, PyTorch's outputs (eval mode) and the architecture as JSON in the metadata.
"""
import json
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import ember
import ember.nn.models
from ember import nn
from tests.fixtures.seeded_weights import seeded_state_dict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch"

#: every fixture with a weights file; a missing file fails the test rather than shrinking the list
LAYER_FIXTURES = [
    "linear", "linear_nobias", "bilinear", "conv1d", "conv2d", "conv2d_reflect_nobias", "conv_transpose1d",
    "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_pools", "pools_1d", "batch_norm1d", "batch_norm2d",
    "layer_norm", "group_norm", "prelu", "embedding", "rnn", "lstm", "gru", "multihead_attention",
    "transformer_encoder_layer", "small_cnn", "multihead_attention_kdim_vdim", "rnn_cell", "lstm_cell", "gru_cell",
    "lstm_proj", "batch_norm3d",
]


def read_io(name):
    """(inputs, outputs, spec) of a fixture: NumPy arrays in order, and the metadata's architecture."""
    path = FIXTURES / f"{name}.io.safetensors"
    with safetensors.safe_open(path, framework="numpy") as f:
        spec = json.loads(f.metadata()["spec"])
    arrays = safetensors.numpy.load_file(path)

    def ordered(prefix):
        return [arrays[f"{prefix}_{i}"] for i in range(sum(k.startswith(prefix) for k in arrays))]
    return ordered("input"), ordered("output"), spec


def build(layers):
    modules = [getattr(nn, name)(**kwargs) for name, kwargs in layers]
    return modules[0] if len(modules) == 1 else nn.Sequential(*modules)


def flatten(output):
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in flatten(item)]
    return [output]


def run(model, inputs):
    with ember.no_grad():
        return [t.numpy() for t in flatten(model(*[ember.from_numpy(x) for x in inputs]))]


def load_fixture_weights(model, name):
    arrays = safetensors.numpy.load_file(FIXTURES / f"{name}.safetensors")
    model.load_state_dict({k: ember.from_numpy(v) for k, v in arrays.items()}, strict=True)
    return arrays


def assert_outputs_match(ours, theirs):
    assert len(ours) == len(theirs)
    for got, expected in zip(ours, theirs):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", LAYER_FIXTURES)
def test_pytorch_weights_give_pytorchs_outputs(name):
    inputs, expected, spec = read_io(name)
    model = build(spec["layers"])
    load_fixture_weights(model, name)
    assert_outputs_match(run(model.eval(), inputs), expected)


@pytest.mark.parametrize("name", LAYER_FIXTURES)
def test_ember_state_dict_has_pytorchs_keys_shapes_and_dtypes(name):
    """What ember writes is what PyTorch wrote: same keys in the same order, shapes and dtypes, so PyTorch
    loads ember's file; and a file ember writes with safetensors.numpy reads back identically."""
    _, _, spec = read_io(name)
    theirs = safetensors.numpy.load_file(FIXTURES / f"{name}.safetensors")
    model = build(spec["layers"])
    ours = {k: v.numpy() for k, v in model.state_dict().items()}
    assert sorted(ours) == sorted(theirs)
    for key, value in ours.items():
        assert (value.shape, value.dtype) == (theirs[key].shape, theirs[key].dtype), key


ROUND_TRIP = ["batch_norm2d", "embedding", "lstm", "transformer_encoder_layer", "small_cnn"]


@pytest.mark.parametrize("name", ROUND_TRIP)
@pytest.mark.parametrize("writer", ["safetensors.numpy", "ember.save"])
def test_weights_round_trip_through_an_ember_written_file(name, writer, tmp_path):
    _, _, spec = read_io(name)
    model = build(spec["layers"])
    theirs = load_fixture_weights(model, name)
    path = tmp_path / "ember.safetensors"
    if writer == "ember.save":
        ember.save(model.state_dict(), path)
    else:
        safetensors.numpy.save_file({k: v.numpy().copy() for k, v in model.state_dict().items()}, path)
    back = safetensors.numpy.load_file(path)
    assert sorted(back) == sorted(theirs)
    for key, value in theirs.items():
        assert (back[key].shape, back[key].dtype) == (value.shape, value.dtype), key
        np.testing.assert_array_equal(back[key], value)


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_ember_load_reads_pytorchs_file(name):
    inputs, expected, spec = read_io(name)
    model = build(spec["layers"])
    model.load_state_dict(ember.load(FIXTURES / f"{name}.safetensors"), strict=True)
    assert_outputs_match(run(model.eval(), inputs), expected)


def test_batch_norm_fixture_has_trained_running_statistics():
    """Guards the fixture itself: running stats moved away from (0, 1) and batches were counted."""
    arrays = safetensors.numpy.load_file(FIXTURES / "batch_norm2d.safetensors")
    assert np.abs(arrays["running_mean"]).min() > 1e-3 and np.abs(arrays["running_var"] - 1).min() > 1e-3
    assert arrays["num_batches_tracked"] == 3


def test_embedding_fixture_looks_up_indices():
    inputs, expected, _ = read_io("embedding")
    weights = safetensors.numpy.load_file(FIXTURES / "embedding.safetensors")["weight"]
    np.testing.assert_array_equal(expected[0], weights[inputs[0]])  # NumPy indexing as the reference


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_resnet_with_seeded_weights_gives_pytorchs_output(name):
    """The fixture script filled its hand-written torchvision-layout ResNet with the same NumPy-seeded arrays
    (the weights are too large to commit); ember's model must give PyTorch's logits."""
    inputs, expected, spec = read_io(name)
    model = getattr(ember.nn.models, spec["model"])(**spec["kwargs"])
    shapes = {k: (tuple(v.shape), v.numpy().dtype.name) for k, v in model.state_dict().items()}
    assert {k: list(shape) for k, (shape, _) in shapes.items()} == spec["state_dict_shapes"]
    state = seeded_state_dict(shapes, spec["seed"])
    model.load_state_dict({k: ember.from_numpy(v) for k, v in state.items()}, strict=True)
    assert_outputs_match(run(model.eval(), inputs), expected)
