"""Workload 4c: the ResNet-18 inference of workload 4, with ember's model compiled by ``ember.compile(model,
example_inputs, backend="openvino")`` (the exported graph compiled by OpenVINO's CPU plugin, float32;
``ember-onnx[openvino]``) against PyTorch's eager model.
"""
from . import resnet18

NAME = "resnet18_openvino"
TITLE = "resnet18 forward as resnet18, ember.compile(backend='openvino') against PyTorch eager"
TARGETS = (0.75, 0.8)


def setup(lib):
    """ember: the compiled model (OpenVINO's threads as NumPy's: ``OMP_NUM_THREADS`` when set); torch: eager."""
    if lib.__name__ != "ember":
        return resnet18.setup(lib)
    import os

    lib.manual_seed(0)
    model = lib.nn.models.resnet18().eval()
    x = lib.randn(resnet18.BATCH, 3, resnet18.SIZE, resnet18.SIZE)
    threads = os.environ.get("OMP_NUM_THREADS")
    options = {"inference_num_threads": int(threads)} if threads else None
    compiled = lib.compile(model, x, backend="openvino", options=options)

    def step():
        return compiled(x)
    return step
