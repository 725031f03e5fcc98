"""AdamW: Adam with decoupled weight decay."""
from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameters directly (``p *= 1 - lr * weight_decay``) instead of
    adding to the gradient, so that it never enters the moment estimates (Loshchilov and Hutter).

    Same options and state as :class:`Adam` (``weight_decay`` defaults to 0.01);
    its groups hold ``decoupled_weight_decay=True``, as PyTorch's do.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = ember.tensor([1.0]); opt.step()
    >>> w  # decayed to 1 * (1 - 0.05) = 0.95, then Adam's first step of lr = 0.1
    tensor([0.8500], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
