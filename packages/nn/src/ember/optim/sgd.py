"""SGD: stochastic gradient descent with optional momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

import numpy as np

import ember
from ember._sibling_api import array, array_namespace, from_array, mark_modified

from ._flat import check_fused, flat_batches, flat_kernel, kernel_for, uses_flat
from .optimizer import Optimizer, check_differentiable, check_options, grad_array, params_with_grad, pieces

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's algorithm.

    For each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        if momentum:  b = g on the first step, else b = momentum * b + (1 - dampening) * g
                      g = g + momentum * b if nesterov else b
        p = p - lr * g

    The momentum buffer is the state ``'momentum_buffer'``. ``foreach=True`` or
    ``fused=True`` (CPU, floating parameters) keep each group's buffers in one
    flat array and update all parameters in one pass over flat arrays, with
    bit-identical results; the default updates parameter by parameter (a large
    contiguous one in one compiled pass too, where ember-numba is installed).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> w  # 1 - 0.1*2 = 0.8; buffer 0.9*2 + 1.6 = 3.4; 0.8 - 0.34
    tensor([0.4600], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (momentum >= 0.0, "momentum value", momentum),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_differentiable(differentiable, fused, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for index, group in enumerate(self.param_groups):
                lr, momentum, nesterov = float(group["lr"]), group["momentum"], group["nesterov"]
                keep = 1 - group["dampening"]
                params = params_with_grad(group)
                if uses_flat(group):
                    if group.get("fused"):
                        check_fused(params)
                    batches, params = flat_batches(self, index, params, ("momentum_buffer",) if momentum else ())
                    for batch in batches:
                        self._flat_update(batch, group, momentum, keep, nesterov, lr)
                for p in params:
                    xp = array_namespace(p)
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    b = fresh = None
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        fresh = buf is None
                        if fresh:
                            buf = state["momentum_buffer"] = from_array(xp.asarray(g, copy=True), p.device, p.dtype)
                        else:
                            mark_modified(buf)
                        b = array(buf)
                    p_array = array(p)
                    kernel = None if fresh else kernel_for("sgd_update", p_array, g, b)
                    if kernel is not None:
                        _run_kernel(kernel, p_array.reshape(-1), g.reshape(-1), None if b is None else b.reshape(-1),
                                    momentum, keep, nesterov, lr)
                    else:
                        for piece in pieces(p_array, g, b):
                            self._update(xp, *piece, fresh, momentum, keep, nesterov, lr)
                    mark_modified(p)
        return loss

    def _flat_update(self, batch, group, momentum, keep, nesterov, lr):
        """The update of one flat batch: the same operations as the per-parameter one, over flat arrays."""
        p = batch.params_flat
        g = batch.grads_flat()
        if group["maximize"]:
            np.negative(g, out=g)
        if group["weight_decay"] != 0:
            g += group["weight_decay"] * p
        b = batch.buffers.get("momentum_buffer")
        kernel = flat_kernel("sgd_update", p)
        if kernel is not None:
            _run_kernel(kernel, p, g, b, momentum, keep, nesterov, lr)
        else:
            for piece in pieces(p, g, b):
                self._update(np, *piece, False, momentum, keep, nesterov, lr)
        mark_modified(*batch.params, *batch.tensors.get("momentum_buffer", ()))

    def _update(self, xp, p, g, b, fresh, momentum, keep, nesterov, lr):
        """One piece of one parameter's update, in place: ``b`` (the momentum buffer, None without momentum)
        takes in ``g`` unless it was ``fresh``ly made from it, then ``p -= lr * (b, or g + momentum * b)``."""
        scratch = self._scratch.take(xp, p)
        if b is not None:
            if not fresh:
                b *= momentum
                b += g if keep == 1 else scratch("multiply", g, keep)
            if nesterov:
                ahead = scratch("multiply", b, momentum)
                ahead += g
                g = ahead
            else:
                g = b
        p -= scratch("multiply", g, lr)


def _run_kernel(kernel, p, g, b, momentum, keep, nesterov, lr) -> None:
    """A plugin's compiled ``sgd_update`` over flat arrays (``b`` None without momentum), its scalars in their
    dtype, so that it rounds as :meth:`SGD._update` does."""
    f = p.dtype.type
    kernel(p, g, g if b is None else b, f(momentum), f(keep), f(lr), bool(nesterov), b is not None)
