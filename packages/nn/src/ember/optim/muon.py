"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration, for 2-D parameters."""
from __future__ import annotations

import math

import ember
from ember._sibling_api import array, array_namespace, mark_modified, numpy_dtype

from .optimizer import Optimizer, lerp_, params_with_grad

__all__ = ["Muon"]

#: PyTorch's defaults: the quintic Newton-Schulz coefficients and the number of iterations
DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    """Muon (Keller Jordan et al.), PyTorch's algorithm, for matrices (the hidden layers' weights; biases,
    embeddings and the like belong to another optimizer such as AdamW).

    For each parameter ``p`` (``A x B``) with gradient ``g``::

        b = momentum * b + (1 - momentum) * g
        u = (1 - momentum) * g + momentum * b  if nesterov  else  b
        O = NS(u): u / ||u||, then ns_steps times  X = a X + (b' (X X^T) + c (X X^T)^2) X   (on the wide side)
        p = p * (1 - lr * weight_decay) - lr' * O

    with ``(a, b', c) = ns_coefficients`` and ``lr' = lr * sqrt(max(1, A / B))``
    (``adjust_lr_fn=None`` or ``"original"``) or ``lr * 0.2 * sqrt(max(A, B))``
    (``"match_rms_adamw"``). As in PyTorch, the Newton-Schulz iteration runs in
    bfloat16: every product is computed in float32 and rounded to bfloat16, which
    gives PyTorch's numbers. State per parameter: ``'momentum_buffer'`` (b).

    >>> import ember
    >>> w = ember.zeros(2, 3, requires_grad=True)
    >>> opt = ember.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> w.grad = ember.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]); opt.step()
    >>> w  # orthogonalised: both rows move by about lr, whatever their gradients' scale (PyTorch's numbers)
    tensor([[-0.1117,  0.0000,  0.0000],
            [ 0.0000, -0.0691,  0.0000]], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=DEFAULT_NS_COEFFICIENTS, eps=1e-7, ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for ok, message in ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                            (0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}"),
                            (0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}"),
                            (adjust_lr_fn in (None, "original", "match_rms_adamw"),
                             f"Adjust learning rate function {adjust_lr_fn} is not supported")):
            if not ok:
                raise ValueError(message)
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.shape}")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, momentum, weight_decay = float(group["lr"]), group["momentum"], group["weight_decay"]
                for p in params_with_grad(group):
                    if p.grad.dim() != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = ember.zeros_like(p.grad)
                    xp = array_namespace(p)
                    g, buf = array(p.grad), array(state["momentum_buffer"])
                    lerp_(buf, g, 1 - momentum)
                    if group["nesterov"]:
                        update = xp.asarray(g, copy=True)
                        lerp_(update, buf, momentum)
                    else:
                        update = buf
                    ortho = newton_schulz(xp, update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                    p_array = array(p)
                    p_array *= 1 - lr * weight_decay
                    p_array -= xp.astype(ortho, p_array.dtype) * _adjusted_lr(lr, group["adjust_lr_fn"], p.shape)
                    mark_modified(p, state["momentum_buffer"])
        return loss


def _adjusted_lr(lr: float, adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr * math.sqrt(max(1, rows / cols))


def newton_schulz(xp, grad, coefficients, steps: int, eps: float):
    """The Newton-Schulz orthogonalisation of the matrix ``grad`` (as float32 arrays holding bfloat16 values)."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    bf16 = numpy_dtype(ember.bfloat16)

    def rounded(x):  # to bfloat16 (through float32, as PyTorch casts) and back to float32 for the next product
        return xp.astype(xp.astype(xp.astype(x, xp.float32), bf16), xp.float32)

    tall = grad.shape[0] > grad.shape[1]
    x = rounded(grad)
    if tall:
        x = x.T
    x = rounded(x / max(float(rounded(xp.linalg.vector_norm(x))), eps))
    for _ in range(steps):
        gram = rounded(x @ x.T)
        gram_update = rounded(b * gram + c * (gram @ gram))
        x = rounded(a * x + gram_update @ x)
    return x.T if tall else x
