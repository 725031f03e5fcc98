"""Helpers for core tests: float64 inputs and gradchecks on a device."""
import numpy as np

import ember


def rand64(*shape, device="cpu", low=-1.0, high=1.0, seed=0, requires_grad=True):
    """A float64 tensor of uniform values in [low, high) (NumPy-seeded, so any backend gets the same values)."""
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.uniform(low, high, size=shape), dtype=ember.float64, device=device,
                        requires_grad=requires_grad)


def check_grads(fn, *inputs, gradgrad=False, **kw):
    """Assert gradcheck (and optionally gradgradcheck) of ``fn`` at ``inputs``."""
    assert ember.autograd.gradcheck(fn, inputs, **kw)
    if gradgrad:
        assert ember.autograd.gradgradcheck(fn, inputs, **kw)
