"""The batch-norm layers under PyTorch's module path ``torch.nn.modules.batchnorm``.

ember defines them in ``normalization`` (with LayerNorm and GroupNorm); this module re-exports them, with their
base class ``_BatchNorm``, which programs import to find batch-norm layers (``isinstance(m, _BatchNorm)``).

>>> from ember import nn
>>> from ember.nn.modules.batchnorm import BatchNorm2d, _BatchNorm
>>> isinstance(nn.BatchNorm1d(3), _BatchNorm), BatchNorm2d is nn.BatchNorm2d
(True, True)
"""
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm  # noqa: F401 (re-exported)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
