"""How ember tensors cross to worker processes started with ``spawn`` or ``forkserver``.

``pickle.dumps(tensor)`` stays an error (ember never pickles tensors to files), but multiprocessing's own
pickler may send a CPU tensor to a child process by value, so a dataset holding tensors works with every
start method.
"""
from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import ember


def _rebuild_tensor(array, requires_grad):
    return ember.from_numpy(array).requires_grad_(requires_grad)


def _reduce_tensor(t):
    if t.device.type != "cpu":
        raise TypeError(f"a tensor on {t.device} cannot be sent to a DataLoader worker process; "
                        "keep the dataset's tensors on the CPU and move batches in the main process")
    return _rebuild_tensor, (t.detach().numpy(), t.requires_grad)


def register() -> None:
    ForkingPickler.register(ember.Tensor, _reduce_tensor)
