"""ember.nn.functional: the layers of ember.nn as functions (``import ember.nn.functional as F``).

The compute-heavy functions are ops of ember-core (``ember.ops.convolution``,
``ember.ops.pooling``, ``ember.ops.loss``, ...); this module gathers them under
PyTorch's functional names, next to the few that are compositions.
"""
from ember.ops.convolution import *  # noqa: F401,F403
from ember.ops.dropout import *  # noqa: F401,F403
from ember.ops.embedding import *  # noqa: F401,F403
from ember.ops.interpolate import *  # noqa: F401,F403
from ember.ops.loss import *  # noqa: F401,F403
from ember.ops.normalization import *  # noqa: F401,F403
from ember.ops.padding import *  # noqa: F401,F403
from ember.ops.pooling import *  # noqa: F401,F403

from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
