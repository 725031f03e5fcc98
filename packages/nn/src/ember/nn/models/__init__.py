"""ember.nn.models: ready-made architectures laid out like torchvision's, so weights load by key.

No builder ever downloads anything: ``weights=`` takes the path of a safetensors file you supply (for example
one written from PyTorch with ``safetensors.torch.save_file(model.state_dict(), path)``).

>>> import ember
>>> import ember.nn.models as models
>>> models.resnet18(num_classes=10).fc
Linear(in_features=512, out_features=10, bias=True)
"""
from ._weights import load_weights  # noqa: F401
from .resnet import *  # noqa: F401,F403
from .small import *  # noqa: F401,F403

__all__ = resnet.__all__ + small.__all__ + ["load_weights"]  # noqa: F405
