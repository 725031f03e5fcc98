"""Rprop: resilient backpropagation, steps from the signs of successive gradients only."""
from __future__ import annotations

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    new_step_tensor,
    params_with_grad,
)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller and Braun), PyTorch's algorithm (no weight backtracking).

    For each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``), element by element::

        s = sign(g * g_prev)
        step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0), *step_sizes)
        g = 0 where s < 0                       (and that zero is the next g_prev)
        p = p - sign(g) * step_size;   g_prev = g

    State per parameter: ``'step'``, ``'prev'`` (g_prev, starting at 0) and
    ``'step_size'`` (starting at ``lr``).

    >>> import ember
    >>> w = ember.tensor([1.0, 1.0], requires_grad=True)
    >>> opt = ember.optim.Rprop([w], lr=0.1)
    >>> for g in ([1.0, 1.0], [2.0, -1.0]):
    ...     w.grad = ember.tensor(g); opt.step()
    >>> w  # 1 - 0.1 - 0.12 (same sign: step * 1.2), 1 - 0.1 + 0 (sign flip: step * 0.5, no move)
    tensor([0.7800, 0.9000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr))
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                etaminus, etaplus = group["etas"]
                step_size_min, step_size_max = group["step_sizes"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["prev"] = ember.zeros_like(p)
                        state["step_size"] = ember.full_like(p, float(group["lr"]))
                    advance_step(state["step"])
                    xp = array_namespace(p)
                    g = grad_array(p, group["maximize"])
                    prev, step_size = array(state["prev"]), array(state["step_size"])
                    sign = xp.sign(g * prev)
                    factor = xp.where(sign > 0, xp.asarray(etaplus, dtype=g.dtype),
                                      xp.where(sign < 0, xp.asarray(etaminus, dtype=g.dtype),
                                               xp.asarray(1, dtype=g.dtype)))
                    step_size *= factor
                    step_size[...] = xp.clip(step_size, step_size_min, step_size_max)
                    g = xp.where(factor == etaminus, xp.zeros_like(g), g)
                    p_array = array(p)
                    p_array -= xp.sign(g) * step_size
                    prev[...] = g
                    mark_modified(p, state["prev"], state["step_size"])
        return loss
