"""Automatic mixed precision: ``autocast`` regions and the ``GradScaler``, as ``torch.amp``.

>>> import ember
>>> with ember.amp.autocast("cpu", dtype=ember.float16):
...     (ember.ones(2, 2) @ ember.ones(2, 2)).dtype
ember.float16
"""
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype"]
