"""ember model -> ember.onnx.export -> ember.onnx.load: the loaded module computes what the original did."""
import numpy as np
import pytest

import ember
import ember.nn.models
import ember.onnx
from ember import nn
from ember.onnx._import import load

from .test_tensor_lowerings import CASES as TENSOR_OP_CASES


class RecurrentHead(nn.Module):
    def __init__(self, cell, **options):
        super().__init__()
        self.rnn = cell(3, 4, num_layers=2, batch_first=True, bidirectional=True, **options)
        self.head = nn.Linear(2 * options.get("proj_size", 4), 2)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class EmbeddingConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.conv = nn.Conv1d(6, 4, 3, padding=1)
        self.norm = nn.LayerNorm(4)

    def forward(self, tokens):
        h = self.conv(self.emb(tokens).transpose(1, 2))
        return ember.cat([nn.functional.gelu(h).mean(-1), self.norm(h.transpose(1, 2)).amax(1)], 1)


def mlp():
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3), nn.Softmax(-1))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 5))


def upsampling():
    return nn.Sequential(nn.Conv2d(2, 3, 3, stride=2), nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                                                             output_padding=1),
                         nn.Upsample(scale_factor=2, mode="bilinear"), nn.AvgPool2d(2), nn.Dropout(),
                         nn.LeakyReLU(0.1), nn.Flatten(), nn.LogSoftmax(1))


MODELS = {
    "mlp": (mlp, lambda n: ember.randn(n, 5)),
    "cnn": (cnn, lambda n: ember.randn(n, 1, 6, 6)),
    "upsampling": (upsampling, lambda n: ember.randn(n, 2, 9, 9)),
    "lstm": (lambda: RecurrentHead(nn.LSTM), lambda n: ember.randn(n, 5, 3)),
    "gru": (lambda: RecurrentHead(nn.GRU), lambda n: ember.randn(n, 5, 3)),
    "rnn": (lambda: RecurrentHead(nn.RNN), lambda n: ember.randn(n, 5, 3)),
    "transformer-encoder": (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True),
                            lambda n: ember.randn(n, 5, 8)),
    "embedding-conv1d-layernorm": (EmbeddingConv, lambda n: ember.randint(0, 10, (n, 7))),
    "lstm-proj_size-scan": (lambda: RecurrentHead(nn.LSTM, proj_size=3), lambda n: ember.randn(n, 5, 3)),
    "resnet18": (lambda: nn.models.resnet18(num_classes=3), lambda n: ember.randn(n, 3, 32, 32)),
}


def exported(name, tmp_path):
    build, make_input = MODELS[name]
    ember.manual_seed(0)
    model = build().eval()
    if name == "cnn":  # non-trivial running statistics
        model[1].running_mean.copy_(ember.randn(4) * 0.1)
        model[1].running_var.copy_(ember.rand(4) + 0.5)
    path = tmp_path / f"{name}.onnx"
    ember.onnx.export(model, (make_input(2),), str(path), input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    return model, make_input, path


@pytest.mark.parametrize("name", list(MODELS))
def test_loaded_model_matches_the_original_at_two_batch_sizes(name, tmp_path):
    model, make_input, path = exported(name, tmp_path)
    loaded = load(path)
    for batch in (2, 3):
        x = make_input(batch)
        expected = model(x).detach().numpy()
        np.testing.assert_allclose(loaded(x).detach().numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["cnn", "lstm", "resnet18"])
def test_weights_come_back_under_their_names(name, tmp_path):
    model, make_input, path = exported(name, tmp_path)
    loaded = load(path)
    original = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    state = loaded.state_dict()
    for key, value in original.items():
        np.testing.assert_array_equal(state[key].numpy(), value.numpy())
    assert {key for key, _ in loaded.named_parameters()} >= {key for key, _ in model.named_parameters()}
    # new weights for the original architecture load into the imported module by the same keys
    with ember.no_grad():
        for p in model.parameters():
            p.add_(0.1)
    loaded.load_state_dict({k: v for k, v in model.state_dict().items() if k in original}, strict=False)
    x = make_input(4)
    np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn, inputs", [c[1:3] for c in TENSOR_OP_CASES], ids=[c[0] for c in TENSOR_OP_CASES])
def test_every_tensor_op_lowering_loads_back(fn, inputs):
    """The export tests' tensor-op cases (tests/onnx/test_tensor_lowerings.py), exported and loaded back."""
    loaded = load(ember.onnx.build_model(fn, inputs))
    got, expected = loaded(*inputs), fn(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-5)
