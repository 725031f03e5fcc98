"""ember-numba: compiled CPU kernels for ember, a plugin registered through the ``ember`` entry-point group.

Installed, it gives the CPU backend's inner loops that NumPy runs in several passes as numba kernels with the
same results (hook ``ember_cpu_kernels``): the random generator's bulk transforms (``ember.rand``, ``randn``,
``randint``, ``randperm``, ``bernoulli``, dropout's mask, ``normal_``, ``uniform_``: PyTorch's numbers for the
seed), the float16 conversions (every float16 op on the CPU computes in float32; both from 65,536 values up) and
the updates of SGD and Adam (a flat buffer's with ``fused=True``/``foreach=True``, else each parameter's, from 4,096
values), max pooling's per-dimension stage and its gradient, batch norm's per-channel map at inference, ReLU and
its gradient (from 65,536), and cross entropy's forward and backward over class indices (from 1,024).
Nothing is imported or compiled before the first such loop; numba caches the compiled code on disk.

>>> import ember
>>> from ember_numba import plugin
>>> sorted(plugin.ember_cpu_kernels())[:3]
['adam_update', 'channel_affine', 'cross_entropy']
"""
