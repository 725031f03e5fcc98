"""ember-numba: compiled CPU kernels for ember, a plugin registered through the ``ember`` entry-point group.

Installed, it gives the CPU generator's bulk transforms (``ember.rand``, ``randn``, ``randint``, ``randperm``,
``bernoulli``, dropout's mask, ``normal_``, ``uniform_`` from 65,536 values up) as numba kernels that produce the
same numbers as ember's NumPy transforms, which are PyTorch's for the same seed. Nothing is compiled before the
first such draw; the compiled code is cached on disk (numba's ``cache=True``), so later processes start at once.

>>> import ember
>>> from ember_numba import plugin
>>> sorted(plugin.ember_cpu_random_kernels())
['bernoulli', 'integers', 'normal', 'permutation', 'uniform']
"""
