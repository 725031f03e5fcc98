"""SparseAdam, which in PyTorch takes only sparse gradients; ember has no sparse tensors, so it refuses every
gradient, with PyTorch's error, and says what to use instead."""
from __future__ import annotations

import ember

from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's Adam for sparse gradients (``nn.Embedding(sparse=True)``), which updates only the moments and
    parameter entries the sparse gradient holds.

    ember has no sparse tensors: ``nn.Embedding(sparse=True)`` gives a dense
    gradient, and a dense gradient cannot say which rows a sparse one would have
    held (a looked-up row whose gradient is zero still moves in PyTorch). So, as
    PyTorch's SparseAdam does for a dense gradient, ``step`` raises
    ``RuntimeError("SparseAdam does not support dense gradients, please consider
    Adam instead")``; ``Adam`` takes the dense gradient (and updates every row).
    The options are checked as PyTorch checks them, and the groups hold PyTorch's keys.

    >>> import ember
    >>> emb = ember.nn.Embedding(10, 3, sparse=True)
    >>> opt = ember.optim.SparseAdam(emb.parameters(), lr=0.01)
    >>> emb(ember.tensor([1, 2])).sum().backward()
    >>> opt.step()
    Traceback (most recent call last):
    RuntimeError: SparseAdam does not support dense gradients, please consider Adam instead (ember has no sparse \
tensors: nn.Embedding(sparse=True) gives a dense gradient, which ember.optim.Adam takes)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for ok, message in ((0.0 < lr, f"Invalid learning rate: {lr}"), (0.0 < eps, f"Invalid epsilon value: {eps}"),
                            (0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}"),
                            (0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")):
            if not ok:
                raise ValueError(message)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """Raises for the first parameter with a gradient (every ember gradient is dense); returns ``closure()``'s
        loss when no parameter has one."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead "
                                       "(ember has no sparse tensors: nn.Embedding(sparse=True) gives a dense "
                                       "gradient, which ember.optim.Adam takes)")
        return loss
