"""ONNX lowerings of the layer ops: linear, convolution, pooling, normalisation, dropout, embedding, padding, interpolation."""

LOWERINGS: dict = {}
