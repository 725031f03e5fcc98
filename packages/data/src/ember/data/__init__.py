"""ember.data: datasets, samplers, collate and the DataLoader, with PyTorch's names and semantics.

>>> import ember
>>> from ember.data import DataLoader, TensorDataset
>>> ds = TensorDataset(ember.arange(10.0).reshape(5, 2), ember.arange(5))
>>> x, y = next(iter(DataLoader(ds, batch_size=4)))
>>> x.shape, y.tolist()
(ember.Size([4, 2]), [0, 1, 2, 3])
"""
from . import _reductions
from .collate import *  # noqa: F401,F403
from .dataloader import *  # noqa: F401,F403
from .dataset import *  # noqa: F401,F403
from .distributed import *  # noqa: F401,F403
from .sampler import *  # noqa: F401,F403
from .worker_info import *  # noqa: F401,F403

_reductions.register()
