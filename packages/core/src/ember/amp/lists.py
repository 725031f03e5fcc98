"""Autocast's op lists: for each device type, which ops run in the lower dtype, which in float32, which promote.

Data only, keyed by device type and by ember op name (``Op.name_``). The lists follow PyTorch 2.13, checked by
hand: the CPU lists by running each op under ``torch.autocast("cpu", dtype=...)`` with float32 and low-precision
inputs and reading the output dtype; the CUDA lists from PyTorch's ``autocast_mode.h`` (``AT_FORALL_*``) and its
cuDNN RNN autocast. A few names are of functions made of several ember ops that PyTorch autocasts as one
(``l1_loss``, ...): those functions pass their inputs through ``autocast_inputs``. An op in no list runs on the
dtypes it is given (its inputs' type promotion applies).

Policies, as PyTorch names them:

- ``LOWER`` (``lower_precision_fp``): floating inputs are cast to the region's dtype (bfloat16 or float16).
- ``FP32`` (``fp32``): floating inputs are cast to float32. On CUDA this also stands for PyTorch's
  ``fp32_set_opt_dtype`` (``softmax``, ``sum``, ``prod``, ... : ember's wrappers apply a ``dtype=`` argument
  before the op runs, so the op always sees float32).
- ``PROMOTE`` (``promote``): floating inputs are cast to the widest floating dtype among them.
- ``BANNED``: the op refuses to run under autocast (PyTorch's CUDA ``binary_cross_entropy``).

Only floating inputs on the region's device type are cast, never float64 ones (PyTorch's ``is_eligible``). A
policy may hold only for some attribute values: ``(FP32, "mode", ("reflect", "replicate"))`` is float32 when the
op's ``mode`` attribute is one of those, and no policy otherwise.

>>> from ember.amp.lists import OP_LISTS, LOWER
>>> OP_LISTS["cpu"]["mm"] == LOWER
True
"""
from __future__ import annotations

__all__ = ["LOWER", "FP32", "PROMOTE", "BANNED", "OP_LISTS", "DEFAULT_DTYPE", "SUPPORTED_DTYPES"]

LOWER = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"
BANNED = "banned"


def _table(**policies: tuple) -> dict:
    """``{op name: policy}`` from ``policy=(op names...)`` groups."""
    return {name: policy for policy, names in policies.items() for name in names}


# PyTorch's CPU lists (AutocastCPU). einsum, tensordot, lstm and rnn are not on the list themselves, but in PyTorch
# they run through ops that are (bmm, mm, mkldnn_rnn_layer), so their output is in the lower dtype. PyTorch's CPU
# GRU is on no list; ember's nn.GRU projects its input with linear first, so it runs in the lower dtype too.
_CPU = {
    **_table(
        lower_precision_fp=("convolution", "mm", "bmm", "matmul", "addmm", "baddbmm", "linear", "linear_no_bias",
                            "einsum", "tensordot", "lstm", "rnn"),
        fp32=("prod", "prod_dim", "binarycrossentropy", "binarycrossentropywithlogits", "crossentropy", "nllloss",
              "mseloss", "smoothl1loss", "huberloss", "kldiv", "linalginvex", "linalgsolveex", "linalgcholeskyex",
              "linalgqr", "linalgsvd", "linalgeigh",
              # functions made of several ember ops (ember.amp.autocast_mode.autocast_inputs)
              "l1_loss", "soft_margin_loss", "poisson_nll_loss", "cosine_embedding_loss", "margin_ranking_loss"),
        promote=("cat", "stack"),
    ),
    "pad": (FP32, "mode", ("reflect", "replicate")),  # reflection_pad*, replication_pad*; circular keeps its dtype
}

# PyTorch's CUDA lists (Autocast: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
# AT_FORALL_PROMOTE; the cuDNN RNNs cast to the lower dtype; binary_cross_entropy is banned). crossentropy is
# log_softmax then nll_loss in PyTorch, both float32 there.
_CUDA = _table(
    lower_precision_fp=("convolution", "mm", "mv", "bmm", "matmul", "addmm", "baddbmm", "linear", "linear_no_bias",
                        "einsum", "lstm", "gru", "rnn"),
    fp32=("acos", "asin", "cosh", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
          "tan", "pow", "pow_tensor", "pow_scalar_base", "softplus", "layer_norm", "group_norm", "nllloss", "kldiv",
          "smoothl1loss", "huberloss", "mseloss", "binarycrossentropywithlogits", "crossentropy", "logsumexp",
          "upsample", "l1_loss", "soft_margin_loss", "poisson_nll_loss", "cosine_embedding_loss",
          "margin_ranking_loss",
          # fp32_set_opt_dtype
          "prod", "prod_dim", "softmax", "logsoftmax", "cumprod", "cumsum", "linalgvectornorm", "sum", "sum_dim"),
    promote=("atan2", "dot", "tensordot", "indexput", "scatteradd"),
    banned=("binarycrossentropy",),
)

#: device type -> {op name: policy}
OP_LISTS: dict[str, dict] = {"cpu": _CPU, "cuda": _CUDA}

#: the dtype ``autocast(device_type)`` uses when none is given (by name: this module imports nothing)
DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16"}

#: the dtypes an autocast region of each device type accepts
SUPPORTED_DTYPES = {"cpu": ("bfloat16", "float16"), "cuda": ("bfloat16", "float16")}
