"""ember.optim: optimizers with PyTorch's names, options and state dicts; schedulers in ``lr_scheduler``.

>>> import ember
>>> w = ember.tensor([1.0], requires_grad=True)
>>> opt = ember.optim.SGD([w], lr=0.5)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w
tensor([0.], requires_grad=True)
"""
from . import lr_scheduler  # noqa: F401
from .adadelta import *  # noqa: F401,F403
from .adafactor import *  # noqa: F401,F403
from .adagrad import *  # noqa: F401,F403
from .adam import *  # noqa: F401,F403
from .adamax import *  # noqa: F401,F403
from .adamw import *  # noqa: F401,F403
from .asgd import *  # noqa: F401,F403
from .lbfgs import *  # noqa: F401,F403
from .muon import *  # noqa: F401,F403
from .nadam import *  # noqa: F401,F403
from .optimizer import *  # noqa: F401,F403
from .radam import *  # noqa: F401,F403
from .rmsprop import *  # noqa: F401,F403
from .rprop import *  # noqa: F401,F403
from .sgd import *  # noqa: F401,F403
from .sparse_adam import *  # noqa: F401,F403
