"""Whole models exported and run in onnxruntime (issue 4): an MNIST-style CNN, resnet18, an LSTM model and a
TransformerEncoderLayer agree with ember within 1e-5 (float32), with a dynamic batch axis run at two batch
sizes, and the exported graph uses the standard ONNX operators for their layers."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.models import resnet18

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

DYNAMIC = {"input": {0: "batch"}, "output": {0: "batch"}}


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def verify_two_batches(model, make_input, batches=(2, 5)):
    """``ember.onnx.verify`` with a dynamic batch, run at both batch sizes; the largest differences."""
    first, second = (make_input(b) for b in batches)
    diffs = ember.onnx.verify(model, (first,), input_names=["input"], output_names=["output"],
                              dynamic_axes=DYNAMIC, other_args=[(second,)], rtol=1e-5, atol=1e-5)
    assert all(d <= 1e-5 for d in diffs)
    return diffs


def exported(tmp_path, model, x):
    """The exported model (dynamic batch), checked."""
    path = tmp_path / "model.onnx"
    ember.onnx.export(model, (x,), str(path), input_names=["input"], output_names=["output"], dynamic_axes=DYNAMIC)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    return proto


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


def mnist_cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))


def test_mnist_cnn(tmp_path):
    model = mnist_cnn().eval()
    verify_two_batches(model, lambda b: ember.randn(b, 1, 28, 28), batches=(1, 3))
    ops = op_types(exported(tmp_path, model, ember.randn(1, 1, 28, 28)))
    assert ops.count("Conv") == 2 and ops.count("Gemm") == 2 and "MaxPool" in ops


def _nontrivial_batch_norms(model):
    """Running statistics and affine parameters away from their defaults, so eval-mode BN is really tested."""
    with ember.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(ember.randn(c) * 0.1)
                m.running_var.copy_(ember.rand(c) * 0.5 + 0.75)
                m.weight.copy_(ember.rand(c) * 0.5 + 0.75)
                m.bias.copy_(ember.randn(c) * 0.1)
    return model


def test_resnet18(tmp_path):
    model = _nontrivial_batch_norms(resnet18(num_classes=10)).eval()  # its ReLUs work in place, as torchvision's
    verify_two_batches(model, lambda b: ember.randn(b, 3, 32, 32), batches=(1, 2))
    proto = exported(tmp_path, model, ember.randn(1, 3, 32, 32))
    ops = op_types(proto)
    assert ops.count("Conv") == 20 and ops.count("BatchNormalization") == 20
    assert "GlobalAveragePool" in ops and "Gemm" in ops
    # parameters and buffers are initializers under their state-dict keys
    names = {i.name for i in proto.graph.initializer}
    assert {"conv1.weight", "layer4.1.bn2.running_var", "fc.bias"} <= names


class LSTMClassifier(nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM (batch first) -> linear on the last step."""

    def __init__(self, vocab=20, dim=8, hidden=12, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1, :])


def test_lstm_model(tmp_path):
    model = LSTMClassifier().eval()
    verify_two_batches(model, lambda b: ember.randint(0, 20, (b, 7)))
    ops = op_types(exported(tmp_path, model, ember.randint(0, 20, (2, 7))))
    assert ops.count("LSTM") == 4 and "Gather" in ops


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 10, num_layers=2, batch_first=True)
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        out, h = self.gru(x)
        return self.head(out[:, -1]) + h[-1].sum(-1, keepdim=True)


def test_gru_model(tmp_path):
    model = GRUModel().eval()
    verify_two_batches(model, lambda b: ember.randn(b, 9, 6))
    assert op_types(exported(tmp_path, model, ember.randn(2, 9, 6))).count("GRU") == 2


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer(tmp_path, norm_first):
    model = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True,
                                       norm_first=norm_first).eval()
    verify_two_batches(model, lambda b: ember.randn(b, 6, 16))
    ops = op_types(exported(tmp_path, model, ember.randn(2, 6, 16)))
    assert ops.count("LayerNormalization") == 2 and "Softmax" in ops and "MatMul" in ops


def test_wrong_batch_size_would_fail_without_the_dynamic_axis(tmp_path):
    # the same CNN exported with a fixed batch of 1 rejects a batch of 3: the dynamic axis above is real
    model = mnist_cnn().eval()
    path = tmp_path / "fixed.onnx"
    ember.onnx.export(model, (ember.randn(1, 1, 28, 28),), str(path), input_names=["input"])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="(?i)dimension|shape"):
        session.run(None, {"input": np.zeros((3, 1, 28, 28), dtype=np.float32)})
