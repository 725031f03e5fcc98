"""ONNX export of a model whose parameters and inputs are on ``cuda`` (stand-in in CI, the GPU where one is)."""
import numpy as np
import onnxruntime as ort

import ember
import ember.nn as nn
import ember.onnx


def test_export_from_gpu_tensors_matches(cuda_device, tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(cuda_device).eval()
    x = ember.randn(3, 4, device=cuda_device)
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, (x,), path, input_names=["x"])
    out = ort.InferenceSession(str(path)).run(None, {"x": x.cpu().numpy()})[0]
    np.testing.assert_allclose(out, model(x).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
