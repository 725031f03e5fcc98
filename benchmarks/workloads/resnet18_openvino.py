"""Workload 4c: the ResNet-18 inference of workload 4, with ember's model compiled by ``ember.compile(model,
example_inputs, backend="openvino")`` (the exported graph compiled by OpenVINO's CPU plugin, float32;
``ember-onnx[openvino]``) against PyTorch's eager model.
"""
from .resnet18_compiled import compiled_step

NAME = "resnet18_openvino"
TITLE = "resnet18 forward as resnet18, ember.compile(backend='openvino') against PyTorch eager"
TARGETS = (0.75, 0.8)


def setup(lib):
    """ember: the model compiled by OpenVINO; torch: eager."""
    return compiled_step(lib, "openvino", "inference_num_threads")
