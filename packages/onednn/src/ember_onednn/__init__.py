"""ember-onednn: oneDNN's convolution and LSTM kernels (the library PyTorch runs on the CPU) for ember's CPU backend.

Installed, it registers through the ``ember`` entry-point group a plugin whose kernels replace ember's built-in ones
(``ember.Claim(..., priority=1)``) for the ops ``convolution``, ``convolution_backward``,
``convolutionweightgrad`` and ``lstm``: every float32 1-D and 2-D convolution, transposed convolution and their
gradients, with any stride, padding, dilation and groups, and every float32 LSTM layer without a projection, forward
and backward, run on oneDNN, called through ctypes on the NumPy arrays in place. Other dtypes keep ember's kernels.
Large float32 matrix products run on oneDNN's GEMM (the CPU kernel ``gemm_float32``), on the same OpenMP pool.
``python -m ember info`` says whether it is in use, and why not.

>>> import ember
>>> from ember_onednn import plugin
>>> plugin.TOPIC
'oneDNN kernels'
"""
