"""ember.onnx: export models to ONNX (trace the ops, lower each to ONNX nodes), verify them in onnxruntime, load ONNX models back as ember modules. Needs the extra ember-core[onnx]."""
