"""nn.Transformer loaded with PyTorch's weights gives PyTorch's outputs for every mask combination.

The fixtures in tests/fixtures/torch/transformer_<config>*.safetensors were made by
tests/fixtures/make_transformer_fixtures.py with PyTorch 2.13 (eval mode): the state dict, and per case the
inputs, the masks passed (under their forward-argument names) and PyTorch's output.
"""
import json
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import ember
from ember import nn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch"
CONFIGS = ["post", "pre_gelu_batch_first", "no_bias"]
MASK_ARGUMENTS = ("src_key_padding_mask", "tgt_key_padding_mask", "memory_key_padding_mask", "src_mask", "tgt_mask",
                  "memory_mask")


def _fixture(config):
    io_path = FIXTURES / f"transformer_{config}.io.safetensors"
    with safetensors.safe_open(io_path, framework="numpy") as f:
        meta = {k: json.loads(v) for k, v in f.metadata().items()}
    weights = safetensors.numpy.load_file(FIXTURES / f"transformer_{config}.safetensors")
    return meta, weights, safetensors.numpy.load_file(io_path)


def _model(config):
    meta, weights, arrays = _fixture(config)
    model = nn.Transformer(**meta["config"]).eval()
    model.load_state_dict({k: ember.from_numpy(v) for k, v in weights.items()})
    return model, meta, arrays


@pytest.mark.parametrize("config", CONFIGS)
def test_state_dict_keys_and_shapes_are_pytorchs(config):
    meta, weights, _ = _fixture(config)
    model = nn.Transformer(**meta["config"])
    state = model.state_dict()
    assert list(state) == meta["keys"]
    assert {k: tuple(v.shape) for k, v in state.items()} == {k: v.shape for k, v in weights.items()}


@pytest.mark.parametrize("config", CONFIGS)
def test_outputs_match_pytorch_for_every_mask_combination(config):
    model, meta, arrays = _model(config)
    assert set(meta["cases"]) >= {"plain", "all_masks_bool", "float_masks", "per_head_masks", "unbatched"}
    for case, spec in meta["cases"].items():
        masks = {}
        for name in spec.get("masks", []):
            argument = next(a for a in MASK_ARGUMENTS if name.startswith(a))
            masks[argument] = ember.from_numpy(arrays[f"{case}.{name}"])
        with ember.no_grad():
            out = model(ember.from_numpy(arrays[f"{case}.src"]), ember.from_numpy(arrays[f"{case}.tgt"]), **masks,
                        **spec.get("flags", {}))
        want = arrays[f"{case}.out"]
        assert out.shape == want.shape, case
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5, err_msg=f"{config}: {case}")


def test_float64_model_with_pytorchs_float32_weights_agrees_too():
    model, meta, arrays = _model("post")
    model = model.double()
    src, tgt, mask = (ember.from_numpy(arrays[f"causal_tgt.{k}"]).double() for k in ("src", "tgt", "tgt_mask"))
    out = model(src, tgt, tgt_mask=mask)
    assert out.dtype == ember.float64
    np.testing.assert_allclose(out.detach().numpy(), arrays["causal_tgt.out"], rtol=1e-5, atol=1e-5)
