"""ONNX lowerings of the tensor ops: arithmetic, pointwise, activations, matmul, shapes and views, reductions, softmax, comparisons, indexing."""

LOWERINGS: dict = {}
