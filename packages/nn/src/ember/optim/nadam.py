"""NAdam: Adam with Nesterov momentum and a momentum schedule."""
from __future__ import annotations

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    lerp_,
    new_step_tensor,
    params_with_grad,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  else  g = g + weight_decay * p
        mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))     (and mu_{t+1} likewise)
        P = P * mu_t                                               (the product of the mu's so far)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / d - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / d

    State per parameter: ``'step'``, ``'mu_product'`` (P, a 0-d tensor like ``'step'``,
    kept in float32 as PyTorch keeps it), ``'exp_avg'`` (m) and ``'exp_avg_sq'`` (v).
    ``decoupled_weight_decay=True`` is NAdamW.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.NAdam([w], lr=0.1)
    >>> w.grad = ember.tensor([1.0]); opt.step()
    >>> w
    tensor([0.8944], requires_grad=True)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (eps >= 0.0, "epsilon value", eps),
                      (0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0]),
                      (0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1]),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay),
                      (momentum_decay >= 0.0, "momentum_decay value", momentum_decay))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, eps, weight_decay = float(group["lr"]), group["eps"], group["weight_decay"]
                beta1, beta2 = (float(b) for b in group["betas"])
                momentum_decay = group["momentum_decay"]
                decoupled = group["decoupled_weight_decay"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["mu_product"] = new_step_tensor(1.0)
                        state["exp_avg"] = ember.zeros_like(p)
                        state["exp_avg_sq"] = ember.zeros_like(p)
                    t = advance_step(state["step"])
                    p_array = array(p)
                    if decoupled and weight_decay != 0:
                        p_array *= 1 - lr * weight_decay
                    g = grad_array(p, group["maximize"], 0 if decoupled else weight_decay)
                    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
                    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
                    product = array(state["mu_product"])
                    product *= mu  # in the state's own precision, as PyTorch's
                    mu_product = float(product)
                    m, v = array(state["exp_avg"]), array(state["exp_avg_sq"])
                    lerp_(m, g, 1 - beta1)
                    v *= beta2
                    v += g * g * (1 - beta2)
                    denom = array_namespace(p).sqrt(v / (1 - beta2 ** t))
                    denom += eps
                    p_array += g / denom * (-lr * (1.0 - mu) / (1.0 - mu_product))
                    p_array += m / denom * (-lr * mu_next / (1.0 - mu_product * mu_next))
                    mark_modified(p, state["mu_product"], state["exp_avg"], state["exp_avg_sq"])
        return loss
