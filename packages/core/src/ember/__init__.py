"""ember: a deep-learning framework with PyTorch's names and semantics.

>>> import ember
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
import warnings as _warnings
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)  # ember.nn, ember.data, ... come from sibling distributions

from importlib.metadata import PackageNotFoundError as _NotFound, version as _version  # noqa: E402

try:
    __version__ = _version("ember-core")
except _NotFound:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from ._dtype import *  # noqa: E402,F401,F403
from ._dtype import bool_  # noqa: E402,F401
from ._device import device  # noqa: E402,F401
from ._size import Size  # noqa: E402,F401
from . import autograd  # noqa: E402,F401  (before _tensor: autograd's modules import it)
from ._tensor import Tensor, is_tensor  # noqa: E402,F401
from .errors import EmberError, DeviceMismatchError, PluginError, UnsupportedOpError  # noqa: E402,F401
from ._plugins import hookimpl, register_plugin, unregister_plugin, list_backends, get_plugin_manager  # noqa
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,  # noqa: E402,F401
                       is_inference_mode_enabled)
from .ops import _common  # noqa: E402,F401
from .ops.arith import *  # noqa: E402,F401,F403
from .ops.conversion import *  # noqa: E402,F401,F403
from .ops.creation import *  # noqa: E402,F401,F403
from .ops.reduction import *  # noqa: E402,F401,F403
from .ops.view import *  # noqa: E402,F401,F403
from .ops.slicing import *  # noqa: E402,F401,F403
from .ops.pointwise import *  # noqa: E402,F401,F403
from .ops.activation import *  # noqa: E402,F401,F403
from .ops.binary_math import *  # noqa: E402,F401,F403
from .ops.bitwise import *  # noqa: E402,F401,F403
from .ops.minmax import *  # noqa: E402,F401,F403
from .ops.statistics import *  # noqa: E402,F401,F403
from .ops.comparison import *  # noqa: E402,F401,F403
from .ops.softmax import *  # noqa: E402,F401,F403
from .ops.shape import *  # noqa: E402,F401,F403
from .ops.indexing import *  # noqa: E402,F401,F403
from .ops.gather import *  # noqa: E402,F401,F403
from .ops.inplace import *  # noqa: E402,F401,F403
from .ops.matmul import *  # noqa: E402,F401,F403
from .ops.sorting import *  # noqa: E402,F401,F403
from .ops.random_ops import *  # noqa: E402,F401,F403
from .ops.predicates import *  # noqa: E402,F401,F403
# the layers' ops (ember.nn.functional gathers them); at the top level only the names PyTorch has there with the
# same signature (torch.batch_norm and torch.embedding take their arguments in another order than F's)
from .ops import padding as _padding, interpolate as _interpolate, loss as _loss, recurrent as _recurrent  # noqa
from .ops.convolution import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: E402,F401
from .ops.pooling import max_pool1d, max_pool2d, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d  # noqa
from .ops.normalization import layer_norm, group_norm  # noqa: E402,F401
from .ops.dropout import alpha_dropout, feature_alpha_dropout  # noqa: E402,F401
from .random import *  # noqa: E402,F401,F403
from .memory import *  # noqa: E402,F401,F403
from .serialization import save, load  # noqa: E402,F401
from ._tensor_str import set_printoptions, get_printoptions, printoptions  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from .linalg import det, inverse, slogdet, tensor_norm as norm  # noqa: E402,F401
from . import backends  # noqa: E402,F401
from .backends import cpu as _cpu  # noqa: E402,F401

globals()["bool"] = bool_

_SIBLINGS = ("nn", "optim", "data", "parallel", "tune", "onnx")


def __getattr__(name):
    """``ember.nn``, ``ember.optim``, ...: imported on first use, as ``torch.optim`` works after ``import torch``."""
    if name in _SIBLINGS:
        import importlib
        try:
            return importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ember.{name}":
                raise
            dist = {"optim": "nn", "onnx": "core[onnx]"}.get(name, name)
            raise AttributeError(f"module 'ember' has no attribute {name!r}: install ember-{dist} "
                                 f"(`pip install ember-{dist}`) to get ember.{name}") from None
    raise AttributeError(f"module 'ember' has no attribute {name!r}")

# 1/0, log(0), overflow: results are inf/nan as in PyTorch, which stays silent about them; NumPy would warn
# from inside ember's ops. Only warnings raised in ember's own modules are silenced.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember(\.|$)")
