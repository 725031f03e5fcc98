"""ember.onnx.load on models that PyTorch's exporter wrote (tests/fixtures/make_torch_onnx_fixtures.py)."""
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.onnx._import import load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch_onnx"
NAMES = ["resnet_block", "lstm_tagger", "gru_tagger"]


@pytest.mark.parametrize("name", NAMES)
def test_matches_pytorch_at_two_batch_sizes(name):
    module = load(FIXTURES / f"{name}.onnx")
    recorded = np.load(FIXTURES / f"{name}.io.npz", allow_pickle=False)
    for batch in (2, 3):
        out = module(ember.from_numpy(recorded[f"input_b{batch}"]))
        np.testing.assert_allclose(out.detach().numpy(), recorded[f"output_b{batch}"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_pytorch_names_survive_and_the_model_trains(name):
    module = load(FIXTURES / f"{name}.onnx")
    keys = set(module.state_dict())
    assert {"fc.weight", "fc.bias"} <= keys if name == "resnet_block" else {"emb.weight", "head.bias"} <= keys
    recorded = np.load(FIXTURES / f"{name}.io.npz", allow_pickle=False)
    x = ember.from_numpy(recorded["input_b3"])
    optimizer = ember.optim.SGD(module.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        out = module(x)  # resnet: logits, pulled to 0; taggers: log-probabilities, class 0 pushed up
        loss = nn.functional.mse_loss(out, ember.zeros(out.shape)) if name == "resnet_block" else -out[..., 0].mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.75 * losses[0]
