"""ASGD: stochastic gradient descent that also keeps the running average of the iterates."""
from __future__ import annotations

import ember
from ember._sibling_api import array, mark_modified

from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    new_step_tensor,
    params_with_grad,
)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD (Polyak and Juditsky), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p  if mu == 1  else  ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t)**alpha;   mu = 1 / max(1, t - t0)

    State per parameter: ``'step'``, ``'eta'`` and ``'mu'`` (0-d tensors like ``'step'``,
    float32 as PyTorch keeps them, so ``eta`` is rounded to float32 between steps) and
    ``'ax'``, the average, which the parameters can be set to for evaluation.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.ASGD([w], lr=0.5, lambd=0.0, t0=0)
    >>> for _ in range(2):
    ...     w.grad = ember.tensor([1.0]); opt.step()
    >>> w, opt.state[w]['ax']  # 1 - 0.5 - 0.5; ax: 0.5 then 0.5 + 1/1 * (0 - 0.5)
    (tensor([0.], requires_grad=True), tensor([0.]))
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, lambd, alpha, t0 = float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["eta"] = new_step_tensor(lr)
                        state["mu"] = new_step_tensor(1.0)
                        state["ax"] = ember.zeros_like(p)
                    t = advance_step(state["step"])
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    eta, mu = array(state["eta"]), array(state["mu"])
                    p_array, ax = array(p), array(state["ax"])
                    eta_value = float(eta)
                    p_array *= 1 - lambd * eta_value
                    p_array -= g * eta_value
                    if float(mu) != 1:
                        ax += (p_array - ax) * mu
                    else:
                        ax[...] = p_array
                    eta[...] = lr / ((1 + lambd * lr * t) ** alpha)
                    mu[...] = 1 / max(1, t - t0)
                    mark_modified(p, state["ax"], state["eta"], state["mu"])
        return loss
