"""``RemovableHandle``: what every ``register_*hook`` returns (tensors, graph nodes, modules, optimizers); PyTorch's
``torch.utils.hooks``. Defined in ``ember._hooks``, below the tensor, which registers hooks itself.

>>> import ember
>>> x = ember.ones(2, requires_grad=True)
>>> handle = x.register_hook(lambda g: g * 2)
>>> handle.remove()
"""
from .._hooks import RemovableHandle, add_hook

__all__ = ["RemovableHandle", "add_hook"]
