"""The ops that have no ONNX lowering, each with the reason: ``NOT_EXPORTABLE = {op_name: reason}``.

Every op (``ember.autograd.function.OPS``) either has a lowering in this
package or is listed here; a test holds the two lists together, so a new op
must choose. ``ember.onnx.export`` quotes the reason when a model uses one.

>>> from ember.onnx.lowerings.not_exportable import NOT_EXPORTABLE
>>> NOT_EXPORTABLE["bernoulli"]
"draws from ember's random generator, whose stream an ONNX graph cannot reproduce"
"""
from __future__ import annotations

__all__ = ["NOT_EXPORTABLE"]

_BACKWARD = "the gradient of another op: it runs only inside backward passes, which an export never traces"
_RANDOM = "draws from ember's random generator, whose stream an ONNX graph cannot reproduce"
_IN_PLACE = "writes into an existing tensor; the trace follows in-place arithmetic only"
_VALUE_SHAPED = "its output's shape depends on the input's values"
_NO_ONNX_OP = "ONNX has no operator for this matrix factorisation or solver"
_HOST = "places memory on the host for the device; a graph has no devices"
_NOT_YET = "not lowered yet (an ONNX composition exists; add it to ember.onnx.lowerings)"

_GROUPS = {
    _BACKWARD: ("avg_pool_backward", "basicindexbackward", "convolutionweightgrad", "diagonalbackward",
                "max_pool_backward", "max_pool_select", "narrowalongdim", "padalongdim", "permutealongdim",
                "resample", "resampletranspose"),
    _RANDOM: ("bernoulli", "bernoulliscalar", "normalfloattensor", "normaltensorfloat", "normaltensortensor",
              "bernoullirefill1", "bernoullirefill2", "exponentialrefill0", "normalrefill0", "randomrefill0",
              "randomrefill1", "randomrefill2", "uniformrefill0"),
    _IN_PLACE: ("copy", "fill", "filltensor", "zero", "indexput"),
    _VALUE_SHAPED: ("nonzero", "unique2", "uniquedim"),
    _NO_ONNX_OP: ("linalgcholeskyex", "linalgeigh", "linalginvex", "linalgqr", "linalgslogdet", "linalgsolveex",
                  "linalgsvd"),
    _HOST: ("pinmemory",),
    _NOT_YET: (
        # pointwise and binary arithmetic
        "atan2", "bitwiseleftshift", "bitwiserightshift", "copysign", "deg2rad", "floordivide", "fmax", "fmin",
        "hypot", "isclose", "lerp", "lerp_scalar", "logaddexp", "logaddexp2", "logit", "nantonum", "rad2deg",
        "remainder", "remainder_scalar", "sgn", "signbit", "sinc", "xlogy",
        # reductions, statistics, sorting
        "countnonzero", "cumprod", "kthvalue", "median", "median_all", "nanmedian", "nanmedian_all", "nansum",
        "sort", "sortstable", "std", "stdmean", "topk", "var", "varmean",
        # shapes, indexing, scatter
        "diagonal", "indexadd", "padsequence", "roll", "scatter", "scatteradd", "scattermultiply", "scattervalue",
        "tensordot",
        # losses (training-time ops) and linear algebra with an ONNX counterpart
        "binarycrossentropy", "binarycrossentropywithlogits", "crossentropy", "huberloss", "kldiv", "mseloss",
        "nllloss", "smoothl1loss", "linalgdet", "linalgvectornorm",
    ),
}

#: op name -> why ``ember.onnx.export`` cannot lower it
NOT_EXPORTABLE: dict[str, str] = {name: reason for reason, names in _GROUPS.items() for name in names}
