"""RMSprop, with optional momentum and the centered variant."""
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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), PyTorch's algorithm.

    For each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        centered:  a = alpha * a + (1 - alpha) * g;  d = sqrt(v - a * a) + eps   else  d = sqrt(v) + eps
        momentum:  b = momentum * b + g / d;  p = p - lr * b                    else  p = p - lr * g / d

    State per parameter: ``'step'``, ``'square_avg'`` (v), ``'momentum_buffer'``
    (b, with momentum) and ``'grad_avg'`` (a, when centered).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.RMSprop([w], lr=0.01, alpha=0.75)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> w  # v = 0.25 * 4 = 1, so the step is lr * 2 / 1
    tensor([0.9800], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (eps >= 0.0, "epsilon value", eps),
                      (momentum >= 0.0, "momentum value", momentum),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay),
                      (alpha >= 0.0, "alpha value", alpha))
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def _state_of(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = new_step_tensor()
            state["square_avg"] = ember.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = ember.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, alpha, eps, momentum = float(group["lr"]), group["alpha"], group["eps"], group["momentum"]
                for p in params_with_grad(group):
                    state = self._state_of(p, group)
                    advance_step(state["step"])
                    xp = array_namespace(p)
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    v = array(state["square_avg"])
                    scratch = self._scratch.take(xp, v)
                    tmp = scratch("multiply", g, g)
                    tmp *= 1 - alpha
                    v *= alpha
                    v += tmp
                    touched = [p, state["square_avg"]]
                    if group["centered"]:
                        a = array(state["grad_avg"])
                        tmp = scratch("subtract", g, a)
                        tmp *= 1 - alpha
                        a += tmp
                        spare = self._scratch.take(xp, v, 1)
                        denom = spare("sqrt", spare("subtract", v, scratch("multiply", a, a)))
                        touched.append(state["grad_avg"])
                    else:
                        denom = self._scratch.take(xp, v, 1)("sqrt", v)
                    denom += eps
                    if momentum > 0:
                        b = array(state["momentum_buffer"])
                        b *= momentum
                        b += scratch("divide", g, denom)
                        p_array = array(p)
                        p_array -= scratch("multiply", b, lr)
                        touched.append(state["momentum_buffer"])
                    else:
                        update = scratch("multiply", g, -lr)
                        update /= denom
                        p_array = array(p)
                        p_array += update
                    mark_modified(*touched)
        return loss
