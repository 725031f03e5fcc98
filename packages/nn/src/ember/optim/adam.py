"""Adam, with AMSGrad and (for AdamW) decoupled weight decay."""
from __future__ import annotations

import math

import numpy as np

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from ._flat import check_fused, flat_batches, flat_kernel, kernel_for, uses_flat
from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    new_step_tensor,
    params_with_grad,
    pieces,
)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma and Ba), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  else  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                         (amsgrad; then v_max stands for v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: ``'step'`` (a 0-d tensor), ``'exp_avg'`` (m),
    ``'exp_avg_sq'`` (v) and ``'max_exp_avg_sq'`` with amsgrad. ``foreach=True`` or ``fused=True`` (CPU,
    floating parameters) keep each group's moments in one flat array per name
    and update all parameters in one pass over flat arrays, with bit-identical
    results; the default updates parameter by parameter (a large contiguous one
    in one compiled pass too, where ember-numba is installed). ``capturable`` is
    accepted for PyTorch's signature.

    >>> import ember
    >>> w = ember.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> w  # Adam's first step moves each coordinate by lr against its gradient's sign
    tensor([ 0.9000, -0.9000], requires_grad=True)
    >>> opt.state[w]['step']
    tensor(1.)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (eps >= 0.0, "epsilon value", eps),
                      (0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0]),
                      (0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1]),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        check_differentiable(differentiable, fused, foreach)
        super().__init__(params, defaults)

    def _state_of(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = new_step_tensor()
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for index, group in enumerate(self.param_groups):
                lr, eps, amsgrad = float(group["lr"]), group["eps"], group["amsgrad"]
                beta1, beta2 = (float(b) for b in group["betas"])
                weight_decay = group["weight_decay"]
                decoupled = group.get("decoupled_weight_decay", False)
                params = params_with_grad(group)
                steps = {p: advance_step(self._state_of(p, amsgrad)["step"]) for p in params}
                if uses_flat(group):
                    if group.get("fused"):
                        check_fused(params)
                    names3 = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                    names = names3 if amsgrad else names3[:2]
                    batches, params = flat_batches(self, index, params, names, steps.get)
                    for batch in batches:
                        self._flat_update(batch, group, steps[batch.params[0]], names, lr, beta1, beta2)
                for p in params:
                    state = self.state[p]
                    t = steps[p]
                    p_array = array(p)
                    if decoupled and weight_decay != 0:
                        p_array *= 1 - lr * weight_decay
                    g = grad_array(p, group["maximize"], 0 if decoupled else weight_decay)
                    xp = array_namespace(p)
                    v_max = state["max_exp_avg_sq"] if amsgrad else None
                    scales = (1 - beta1, beta2, lr / (1 - beta1 ** t), math.sqrt(1 - beta2 ** t), eps)
                    arrays = (p_array, g, array(state["exp_avg"]), array(state["exp_avg_sq"]),
                              None if v_max is None else array(v_max))
                    kernel = kernel_for("adam_update", *arrays)
                    if kernel is not None:
                        _run_kernel(kernel, *(None if a is None else a.reshape(-1) for a in arrays), scales)
                    else:
                        for piece in pieces(*arrays):
                            self._update(xp, *piece, *scales)
                    mark_modified(p, state["exp_avg"], state["exp_avg_sq"], *([v_max] if amsgrad else []))
        return loss

    def _flat_update(self, batch, group, t, names, lr, beta1, beta2):
        """The update of one flat batch at step ``t``: the same operations as the per-parameter one, over flat
        arrays (a plugin's compiled kernel, or :meth:`_update` piece by piece)."""
        eps, weight_decay = group["eps"], group["weight_decay"]
        decoupled = group.get("decoupled_weight_decay", False)
        p_flat, g = batch.params_flat, batch.grads_flat()
        if decoupled and weight_decay != 0:
            p_flat *= 1 - lr * weight_decay
        if group["maximize"]:
            np.negative(g, out=g)
        if not decoupled and weight_decay != 0:
            g += weight_decay * p_flat
        scales = (1 - beta1, beta2, lr / (1 - beta1 ** t), math.sqrt(1 - beta2 ** t), eps)
        m, v, v_max = batch.buffers["exp_avg"], batch.buffers["exp_avg_sq"], batch.buffers.get("max_exp_avg_sq")
        kernel = flat_kernel("adam_update", p_flat)
        if kernel is not None:
            _run_kernel(kernel, p_flat, g, m, v, v_max, scales)
        else:
            for piece in pieces(p_flat, g, m, v, v_max):
                self._update(np, *piece, *scales)
        mark_modified(*batch.params, *(v for name in names for v in batch.tensors[name]))

    def _update(self, xp, p, g, m, v, v_max, keep_g, beta2, step_size, bias2_sqrt, eps):
        """One piece of one parameter's update, in place: the moments ``m`` and ``v`` (and ``v_max``) take in
        ``g``, then ``p -= step_size * m / (sqrt(v) / bias2_sqrt + eps)``. Two scratch arrays, no other."""
        scratch = self._scratch.take(xp, m)
        tmp = scratch("subtract", g, m)
        tmp *= keep_g
        m += tmp
        tmp = scratch("multiply", g, g)
        tmp *= 1 - beta2
        v *= beta2
        v += tmp
        if v_max is not None:
            v_max[...] = xp.maximum(v_max, v)
            v = v_max
        denom = self._scratch.take(xp, m, 1)("sqrt", v)
        denom /= bias2_sqrt
        denom += eps
        update = scratch("multiply", m, -step_size)
        update /= denom
        p += update


def _run_kernel(kernel, p, g, m, v, v_max, scales) -> None:
    """A plugin's compiled ``adam_update`` over flat arrays (``v_max`` None without amsgrad), its scalars in their
    dtype, so that it rounds as :meth:`Adam._update` does; ``scales`` as that method takes them."""
    keep_g, beta2, step_size, bias2_sqrt, eps = scales
    f = p.dtype.type
    kernel(p, g, m, v, v if v_max is None else v_max, v_max is not None, f(keep_g), f(1 - beta2), f(beta2),
           f(-step_size), f(bias2_sqrt), f(eps))
