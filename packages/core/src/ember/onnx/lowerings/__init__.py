"""ember's built-in ONNX lowerings, one module per op family, registered as a plugin like a third party's."""
