"""What a reused trial process puts back before each trial, so that one trial's changes do not reach the next.

A worker process of :class:`~ember.tune.LocalExecutor` captures this state once, after it loaded the
trainable (and so the trainable's module), and restores it before every trial it runs: the trial starts
as it would have as the first trial of a fresh process. Restored: the working directory and the
environment (the driver's when the trial started), the random states of ember (every device's default
generator), NumPy's global generator and Python's :mod:`random`, ember's default dtype and grad mode.
What the trainable's module loaded (imports, data sets) is kept: that is what reuse is for.

>>> import os, random
>>> state = ProcessState.capture()
>>> a = random.random()
>>> state.restore(os.getcwd(), dict(os.environ))
>>> random.random() == a
True
"""
from __future__ import annotations

import os
import random

import numpy as np

import ember


class ProcessState:
    """A snapshot of the per-process state a trial may change (see the module docstring)."""

    def __init__(self, ember_seed, ember_rng, numpy_rng, python_rng, default_dtype, grad_enabled):
        self.ember_seed, self.ember_rng, self.numpy_rng = ember_seed, ember_rng, numpy_rng
        self.python_rng, self.default_dtype, self.grad_enabled = python_rng, default_dtype, grad_enabled

    @classmethod
    def capture(cls) -> ProcessState:
        return cls(ember.initial_seed(), ember.get_rng_state(), np.random.get_state(), random.getstate(),
                   ember.get_default_dtype(), ember.is_grad_enabled())

    def restore(self, cwd: str, env: dict) -> None:
        """Put the snapshot back, with ``cwd`` as working directory and ``env`` as the whole environment."""
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        ember.manual_seed(self.ember_seed)  # every device's generator, those made later included
        ember.set_rng_state(self.ember_rng)  # the CPU stream where it was
        np.random.set_state(self.numpy_rng)
        random.setstate(self.python_rng)
        ember.set_default_dtype(self.default_dtype)
        ember.set_grad_enabled(self.grad_enabled)
