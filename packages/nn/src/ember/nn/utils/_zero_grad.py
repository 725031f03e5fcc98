"""What ``Module.zero_grad`` and ``Optimizer.zero_grad`` both do to a set of parameters."""
from __future__ import annotations


def zero_grads(parameters, set_to_none: bool = True) -> None:
    """Set each parameter's ``.grad`` to None, or (``set_to_none=False``) zero it in place, cut off any graph."""
    for p in parameters:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if g.grad_fn is not None:
            g.detach_()
        else:
            g.requires_grad_(False)
        g.zero_()
