"""Learning-rate schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, LinearLR,
OneCycleLR, SequentialLR and ReduceLROnPlateau, with PyTorch's arguments, values and state dicts.

>>> import ember
>>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
>>> sched = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
>>> sorted(sched.state_dict())[:3]
['_get_lr_called_within_step', '_is_initial', '_last_lr']
"""
from .base import LRScheduler
from .composite import SequentialLR
from .decay import CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR, StepLR
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau

_LRScheduler = LRScheduler  # the name older PyTorch code subclasses

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LinearLR",
           "OneCycleLR", "SequentialLR", "ReduceLROnPlateau"]
