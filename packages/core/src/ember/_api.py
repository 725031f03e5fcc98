"""The names of the top-level ``ember`` namespace, imported in the order the core needs.

``ember/__init__.py`` copies them into ``ember`` on first use of any of them, so that ``import ember.tune``
or another sibling stays cheap until ember is used.

>>> import ember
>>> ember.float32, ember.Size([2, 3])
(ember.float32, ember.Size([2, 3]))
"""
from importlib.metadata import PackageNotFoundError as _NotFound
from importlib.metadata import version as _version

try:
    __version__ = _version("ember-core")
except _NotFound:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from . import (
    accelerator,  # noqa: F401
    amp,  # noqa: F401
    autograd,  # noqa: F401
    backends,  # noqa: F401
    cuda,  # noqa: F401
    linalg,  # noqa: F401
)
from ._compile import compile, list_compilers  # noqa: F401
from ._device import device  # noqa: F401
from ._dtype import *  # noqa: F401,F403
from ._dtype import bool_  # noqa: F401
from ._plugins import (  # noqa: F401
    Claim,
    collect_claims,
    ensure_plugins,
    get_plugin_manager,
    hookimpl,
    list_backends,
    register_plugin,
    unregister_plugin,
)
from ._size import Size  # noqa: F401
from ._tensor import Tensor, is_tensor  # noqa: F401
from ._tensor_str import get_printoptions, printoptions, set_printoptions  # noqa: F401
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401
from .autograd import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .backends import cpu as _cpu  # noqa: F401
from .backends.cpu_threads import get_num_threads, set_num_threads  # noqa: F401
from .errors import DeviceMismatchError, EmberError, OutOfMemoryError, PluginError, UnsupportedOpError  # noqa: F401
from .linalg import det, inverse, slogdet  # noqa: F401
from .linalg import tensor_norm as norm  # noqa: F401
from .memory import *  # noqa: F401,F403
from .ops import _common  # noqa: F401

# the layers' ops (ember.nn.functional gathers them); at the top level only the names PyTorch has there with the
# same signature (torch.batch_norm and torch.embedding take their arguments in another order than F's)
from .ops import interpolate as _interpolate  # noqa: F401
from .ops import loss as _loss  # noqa: F401
from .ops import new_factories as _new_factories  # noqa: F401  (Tensor.new_zeros, ...)
from .ops import padding as _padding  # noqa: F401
from .ops import recurrent as _recurrent  # noqa: F401
from .ops.activation import *  # noqa: F401,F403
from .ops.arith import *  # noqa: F401,F403
from .ops.binary_float import *  # noqa: F401,F403
from .ops.binary_math import *  # noqa: F401,F403
from .ops.bitwise import *  # noqa: F401,F403
from .ops.comparison import *  # noqa: F401,F403
from .ops.conversion import *  # noqa: F401,F403
from .ops.convolution import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: F401
from .ops.creation import *  # noqa: F401,F403
from .ops.dropout import alpha_dropout, feature_alpha_dropout  # noqa: F401
from .ops.gather import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.inplace import *  # noqa: F401,F403
from .ops.matmul import *  # noqa: F401,F403
from .ops.minmax import *  # noqa: F401,F403
from .ops.normalization import group_norm, layer_norm  # noqa: F401
from .ops.pointwise import *  # noqa: F401,F403
from .ops.pooling import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    avg_pool1d,
    max_pool1d,
    max_pool2d,
)
from .ops.predicates import *  # noqa: F401,F403
from .ops.random_ops import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .ops.reduction_nan import *  # noqa: F401,F403
from .ops.shape import *  # noqa: F401,F403
from .ops.slicing import *  # noqa: F401,F403
from .ops.softmax import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.statistics import *  # noqa: F401,F403
from .ops.view import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .serialization import load, save  # noqa: F401
from .utils import checkpoint as _checkpoint  # noqa: F401  (ember.utils.checkpoint after `import ember`, as in torch)
from .utils.gpu_status import gpus  # noqa: F401

bool = bool_  # noqa: A001  (ember.bool, as torch.bool)

# PyTorch's out= on the functions whose PyTorch counterparts take it (the Tensor methods keep the plain functions)
from .ops.out import OUT_FUNCTIONS as _OUT_FUNCTIONS  # noqa: E402
from .ops.out import supports_out as _supports_out  # noqa: E402

_wrapped: dict = {}  # one wrapper per function, so that aliases (arcsin, asin) stay the same object
for _name in sorted(_OUT_FUNCTIONS):
    _fn = globals()[_name]
    globals()[_name] = _wrapped.setdefault(id(_fn), _supports_out(_fn))
del _wrapped, _fn, _name
_complete = True  # set last: a nested load while the imports above run copies only what is there so far
