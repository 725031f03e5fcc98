"""ember.nn: modules, layers, losses and initialisation with PyTorch's names.

>>> import ember
>>> from ember import nn
>>> nn.Sequential(nn.Linear(4, 2), nn.ReLU())(ember.ones(3, 4)).shape
ember.Size([3, 2])
"""
from . import callbacks, functional, init, models, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
