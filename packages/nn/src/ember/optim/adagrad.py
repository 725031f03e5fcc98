"""Adagrad: per-coordinate learning rates from the accumulated squared gradients."""
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

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        s = s + g * g                                  (s starts at initial_accumulator_value)
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)

    State per parameter, made with the optimizer (as PyTorch does): ``'step'`` and ``'sum'`` (s).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.Adagrad([w], lr=0.5)
    >>> w.grad = ember.tensor([3.0]); opt.step()
    >>> w  # s = 9, so the step is 0.5 * 3 / 3
    tensor([0.5000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (lr_decay >= 0.0, "lr_decay value", lr_decay),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay),
                      (initial_accumulator_value >= 0.0, "initial_accumulator_value value",
                       initial_accumulator_value),
                      (eps >= 0.0, "epsilon value", eps))
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        check_differentiable(differentiable, fused, foreach)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group) -> None:
        state = self.state[p]
        state["step"] = new_step_tensor()
        state["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, lr_decay, eps = float(group["lr"]), group["lr_decay"], group["eps"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:  # a parameter of a group added after construction
                        self._init_state(p, group)
                    t = advance_step(state["step"])
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    s = array(state["sum"])
                    xp = array_namespace(p)
                    scratch = self._scratch.take(xp, s)
                    s += scratch("multiply", g, g)
                    denom = self._scratch.take(xp, s, 1)("sqrt", s)
                    denom += eps
                    update = scratch("multiply", g, -(lr / (1 + (t - 1) * lr_decay)))
                    update /= denom
                    p_array = array(p)
                    p_array += update
                    mark_modified(p, state["sum"])
        return loss
