"""Workload 4b: the ResNet-18 inference of workload 4, with ember's model compiled by ``ember.compile(model,
example_inputs)`` (the exported graph in one onnxruntime session; ember-onnx) against PyTorch's eager model.
"""
from . import resnet18

NAME = "resnet18_compiled"
TITLE = "resnet18 forward as resnet18, ember.compile(backend='onnxruntime') against PyTorch eager"
TARGETS = (0.75, 0.8)


def compiled_step(lib, backend, threads_option):
    """ember: the model compiled by ``backend``, its threads as NumPy's (``OMP_NUM_THREADS``, when set, given as
    the backend's option ``threads_option``); torch: eager."""
    if lib.__name__ != "ember":
        return resnet18.setup(lib)
    import os

    lib.manual_seed(0)
    model = lib.nn.models.resnet18().eval()
    x = lib.randn(resnet18.BATCH, 3, resnet18.SIZE, resnet18.SIZE)
    threads = os.environ.get("OMP_NUM_THREADS")
    options = {threads_option: int(threads)} if threads else None
    compiled = lib.compile(model, x, backend=backend, options=options)

    def step():
        return compiled(x)
    return step


def setup(lib):
    """ember: the model in onnxruntime; torch: eager."""
    return compiled_step(lib, "onnxruntime", "intra_op_num_threads")
