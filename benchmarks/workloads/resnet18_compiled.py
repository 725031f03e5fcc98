"""Workload 4b: the ResNet-18 inference of workload 4, with ember's model compiled by ``ember.compile(model,
example_inputs)`` (the exported graph in one onnxruntime session; ember-onnx) against PyTorch's eager model.
"""
from . import resnet18

NAME = "resnet18_compiled"
TITLE = "resnet18 forward as resnet18, ember.compile(backend='onnxruntime') against PyTorch eager"
TARGETS = (0.75, 0.8)


def setup(lib):
    """ember: the compiled model (onnxruntime's threads as NumPy's: ``OMP_NUM_THREADS`` when set); torch: eager."""
    if lib.__name__ != "ember":
        return resnet18.setup(lib)
    import os

    lib.manual_seed(0)
    model = lib.nn.models.resnet18().eval()
    x = lib.randn(resnet18.BATCH, 3, resnet18.SIZE, resnet18.SIZE)
    threads = os.environ.get("OMP_NUM_THREADS")
    options = {"intra_op_num_threads": int(threads)} if threads else None
    compiled = lib.compile(model, x, options=options)

    def step():
        return compiled(x)
    return step
