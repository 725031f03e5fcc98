"""The errors ember.distributed raises, with torch.distributed's names.

Both are ``RuntimeError``\\ s, as PyTorch's are, so ``except RuntimeError`` catches them.

>>> import ember.distributed as dist
>>> issubclass(dist.DistBackendError, dist.DistError), issubclass(dist.DistError, RuntimeError)
(True, True)
"""
from __future__ import annotations

__all__ = ["DistError", "DistBackendError"]


class DistError(RuntimeError):
    """An error of the distributed package: arguments that disagree across ranks, a process group used wrongly."""


class DistBackendError(DistError):
    """An error from a process group's backend while it communicates: an operation that did not complete within the
    group's timeout (naming the operation and, where it can be known, the ranks that did not arrive), or a group
    that an earlier failure left unusable."""
