"""Finite-difference checks of first and second derivatives.

>>> import ember
>>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
>>> ember.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
True
"""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from .gradients import grad


class GradcheckError(RuntimeError):
    """Analytical and numerical derivatives disagree."""


def _from_numpy(arr, like, requires_grad=False):
    """A new tensor holding ``arr`` with ``like``'s dtype and device."""
    device, dtype = like.device, like.dtype
    t = Tensor._make(device.backend.asarray(arr, dtype, device), device, dtype)
    return t.requires_grad_(requires_grad)


def _outputs(fn, inputs):
    out = fn(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def _numerical_jacobian(fn, inputs, i, eps):
    """d(all outputs, flattened)/d(input i), by central differences on a float64 copy."""
    x = inputs[i]
    base = np.array(x.detach().numpy(force=True), copy=True)

    def outputs_at(delta, k):
        arr = base.copy()
        arr.reshape(-1)[k] += delta
        args = list(inputs)
        args[i] = _from_numpy(arr, x, x.requires_grad)
        return [o.detach().numpy(force=True).astype(np.float64).ravel() for o in _outputs(fn, args)]

    cols = []
    for k in range(base.size):
        plus, minus = outputs_at(eps, k), outputs_at(-eps, k)
        cols.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
    if not cols:  # an empty input: no columns, one row per output element
        return np.zeros((sum(o.numel() for o in _outputs(fn, inputs)), 0))
    return np.stack(cols, axis=1)


def _analytical_jacobians(fn, inputs, diff):
    outs = _outputs(fn, inputs)
    sizes = [o.numel() for o in outs]
    rows = {i: [] for i in diff}
    for oi, o in enumerate(outs):
        for k in range(sizes[oi]):
            onehot = np.zeros(sizes[oi])
            onehot[k] = 1
            go = _from_numpy(onehot.reshape(tuple(o.shape)), o)
            if not o.requires_grad:
                for i in diff:
                    rows[i].append(np.zeros(inputs[i].numel()))
                continue
            gs = grad(o, [inputs[i] for i in diff], go, retain_graph=True, allow_unused=True)
            for i, g in zip(diff, gs):
                rows[i].append(np.zeros(inputs[i].numel()) if g is None
                               else g.detach().numpy(force=True).astype(np.float64).ravel())
    return {i: (np.stack(r) if r else np.zeros((0, inputs[i].numel()))) for i, r in rows.items()}


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """Compare ``func``'s autograd Jacobians with central finite differences.

    ``inputs`` that require grad should be float64. Returns True, or raises
    (``raise_exception=True``) with the first mismatching input and entries.
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    for i in diff:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"gradcheck: input {i} is {inputs[i].dtype}, not float64; the check may be imprecise",
                          stacklevel=2)
    analytical = _analytical_jacobians(func, inputs, diff)
    for i in diff:
        numerical = _numerical_jacobian(func, inputs, i, eps)
        a = analytical[i]
        if a.shape != numerical.shape or not np.allclose(a, numerical, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {i},\n"
                                 f"numerical:{numerical}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **_ignored):
    """Check second derivatives: gradcheck of ``v -> d(func)/d(inputs) . v`` built with ``create_graph``."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_from_numpy(rng.standard_normal(tuple(o.shape)), o, True) for o in outs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*args):
        ins, gos = args[:n], args[n:]
        res = grad(_outputs(func, ins), [ins[i] for i in diff], gos, create_graph=True, allow_unused=True)
        return tuple(r for r in res if r is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
