"""A ctypes binding of the few oneDNN 3.x C calls ember-onednn uses: memory descriptors, convolution, LSTM and max
pooling primitive descriptors, reorders, memory objects over NumPy buffers, and execution on one CPU stream.

The enum values are oneDNN 3.x's (``dnnl_types.h``, ``dnnl_common_types.h``); :mod:`._library` refuses another
major version. Every call that returns a ``dnnl_status_t`` is checked: a failure raises :class:`DnnlError` naming
the call and the status.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_int, c_int64, c_size_t, c_uint, c_void_p

# -- enum values of oneDNN 3.x ----------------------------------------------------------------------------------
SUCCESS = 0
STATUS = {1: "out of memory", 2: "invalid arguments", 3: "unimplemented", 4: "last implementation reached",
          5: "runtime error", 6: "not required"}
F32 = 3  # dnnl_f32
TAG_ANY = 1  # dnnl_format_tag_any; dnnl_a, dnnl_ab, ... follow: the plain tag of an n-d array is n + 1
FORWARD_TRAINING = 64
FORWARD_INFERENCE = 96
BACKWARD = 128
POOLING_MAX = 0x1FF
CONVOLUTION_DIRECT = 1
LEFT2RIGHT, RIGHT2LEFT = 1, 2  # dnnl_rnn_direction_t (0 is undef in 3.x)
CPU = 1  # dnnl_cpu
STREAM_IN_ORDER = 1
QUERY_EXEC_ARG_MD = 255
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_BIAS = 1, 17, 33, 41
ARG_DIFF_SRC, ARG_DIFF_DST, ARG_DIFF_WEIGHTS, ARG_DIFF_BIAS = 129, 145, 161, 169
# an RNN's arguments: "layer" is the sequence, "iter" the recurrent state (and "iter_c" an LSTM's cell state)
ARG_SRC_ITER, ARG_SRC_ITER_C, ARG_DST_ITER, ARG_DST_ITER_C, ARG_WEIGHTS_ITER = 2, 3, 18, 19, 34
ARG_WORKSPACE = 64
DIFF = 128  # ARG_DIFF_X is ARG_X + DIFF
MAX_NDIMS = 12

Dims = c_int64 * MAX_NDIMS


class ExecArg(ctypes.Structure):
    """``dnnl_exec_arg_t``: an argument index and a memory object."""

    _fields_ = [("arg", c_int), ("memory", c_void_p)]


class DnnlError(RuntimeError):
    """A oneDNN call returned an error status."""


_P = c_void_p
_PP = POINTER(c_void_p)
#: name -> argument types of each call used (all return dnnl_status_t unless listed in _RESTYPES)
_SIGNATURES = {
    "dnnl_engine_create": (_PP, c_int, c_size_t),
    "dnnl_stream_create": (_PP, _P, c_uint),
    "dnnl_memory_desc_create_with_tag": (_PP, c_int, Dims, c_int, c_int),
    "dnnl_memory_desc_create_with_strides": (_PP, c_int, Dims, c_int, Dims),
    "dnnl_memory_desc_destroy": (_P,),
    "dnnl_memory_desc_equal": (_P, _P),
    "dnnl_memory_desc_get_size": (_P,),
    "dnnl_convolution_forward_primitive_desc_create": (_PP, _P, c_int, c_int, _P, _P, _P, _P, Dims, Dims, Dims,
                                                       Dims, _P),
    "dnnl_convolution_backward_data_primitive_desc_create": (_PP, _P, c_int, _P, _P, _P, Dims, Dims, Dims, Dims,
                                                             _P, _P),
    "dnnl_convolution_backward_weights_primitive_desc_create": (_PP, _P, c_int, _P, _P, _P, _P, Dims, Dims, Dims,
                                                                Dims, _P, _P),
    # (pd, engine, prop kind, direction, src layer/iter/iter_c, weights layer/iter/peephole/projection, bias,
    #  dst layer/iter/iter_c[, the diff of each of those], flags[, hint], attr)
    "dnnl_lstm_forward_primitive_desc_create": (_PP, _P, c_int, c_int) + (_P,) * 11 + (c_uint, _P),
    "dnnl_lstm_backward_primitive_desc_create": (_PP, _P, c_int, c_int) + (_P,) * 22 + (c_uint, _P, _P),
    # (pd, engine, prop kind, algorithm, src, dst, strides, kernel, dilation, padding_l, padding_r, attr)
    "dnnl_pooling_forward_primitive_desc_create": (_PP, _P, c_int, c_int, _P, _P, Dims, Dims, Dims, Dims, Dims, _P),
    "dnnl_reorder_primitive_desc_create": (_PP, _P, _P, _P, _P, _P),
    "dnnl_primitive_desc_query_md": (_P, c_int, c_int),
    "dnnl_primitive_desc_destroy": (_P,),
    "dnnl_primitive_create": (_PP, _P),
    "dnnl_primitive_destroy": (_P,),
    "dnnl_primitive_execute": (_P, _P, c_int, _P),
    "dnnl_memory_create": (_PP, _P, _P, _P),
    "dnnl_memory_set_data_handle": (_P, _P),
    "dnnl_memory_destroy": (_P,),
}
_RESTYPES = {"dnnl_memory_desc_equal": c_int, "dnnl_memory_desc_get_size": c_size_t,
             "dnnl_primitive_desc_query_md": c_void_p}


def dims(values) -> Dims:
    """A ``dnnl_dims_t`` holding ``values`` (the rest zero)."""
    return Dims(*values)


class Binding:
    """oneDNN's calls on one CPU engine and one in-order stream.

    Handles are plain ``int`` addresses; each ``create_*`` method returns one that the caller destroys with
    :meth:`destroy` (or keeps for the life of the process).
    """

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = _RESTYPES.get(name, c_int)
        self.engine = self._out("dnnl_engine_create", CPU, 0)
        self.stream = self._out("dnnl_stream_create", self.engine, STREAM_IN_ORDER)

    def check(self, status: int, call: str) -> None:
        if status != SUCCESS:
            raise DnnlError(f"oneDNN's {call} failed: {STATUS.get(status, f'status {status}')}")

    def _out(self, call: str, *args) -> int:
        """Call ``call(&handle, *args)`` and return the handle."""
        handle = c_void_p()
        self.check(getattr(self.lib, call)(byref(handle), *args), call)
        return handle.value

    # -- memory descriptors -----------------------------------------------------------------------------------
    def memory_desc(self, shape, plain: bool = True) -> int:
        """A float32 descriptor of ``shape``: row-major (C order), or any layout the primitive prefers."""
        return self._out("dnnl_memory_desc_create_with_tag", len(shape), dims(shape), F32,
                         len(shape) + 1 if plain else TAG_ANY)

    def strided_memory_desc(self, shape, strides) -> int:
        """A float32 descriptor of ``shape`` with the given element ``strides`` (a view's layout)."""
        return self._out("dnnl_memory_desc_create_with_strides", len(shape), dims(shape), F32, dims(strides))

    def query_md(self, pd: int, arg: int) -> int:
        """The descriptor the primitive of ``pd`` wants for argument ``arg`` (owned by ``pd``)."""
        md = self.lib.dnnl_primitive_desc_query_md(pd, QUERY_EXEC_ARG_MD, arg)
        if not md:
            raise DnnlError(f"oneDNN's primitive descriptor has no memory descriptor for argument {arg}")
        return md

    def same_layout(self, a: int, b: int) -> bool:
        return bool(self.lib.dnnl_memory_desc_equal(a, b))

    def size(self, md: int) -> int:
        """Bytes a memory of descriptor ``md`` takes."""
        return self.lib.dnnl_memory_desc_get_size(md)

    # -- primitives -----------------------------------------------------------------------------------------------
    def convolution_pd(self, kind: str, mds: dict, geometry, hint: int | None = None) -> int:
        """A convolution primitive descriptor: ``kind`` is ``"forward"``, ``"backward_data"`` or
        ``"backward_weights"``; ``mds`` maps argument indices to descriptors; ``geometry`` gives
        ``(strides, dilations, padding_l, padding_r)`` in oneDNN's convention (dilation 0 is none)."""
        strides, dilations, pad_l, pad_r = (dims(v) for v in geometry)
        if kind == "forward":
            return self._out("dnnl_convolution_forward_primitive_desc_create", self.engine, FORWARD_TRAINING,
                             CONVOLUTION_DIRECT, mds[ARG_SRC], mds[ARG_WEIGHTS], mds.get(ARG_BIAS), mds[ARG_DST],
                             strides, dilations, pad_l, pad_r, None)
        if kind == "backward_data":
            return self._out("dnnl_convolution_backward_data_primitive_desc_create", self.engine,
                             CONVOLUTION_DIRECT, mds[ARG_DIFF_SRC], mds[ARG_WEIGHTS], mds[ARG_DIFF_DST], strides,
                             dilations, pad_l, pad_r, hint, None)
        return self._out("dnnl_convolution_backward_weights_primitive_desc_create", self.engine, CONVOLUTION_DIRECT,
                         mds[ARG_SRC], mds[ARG_DIFF_WEIGHTS], None, mds[ARG_DIFF_DST], strides, dilations, pad_l,
                         pad_r, hint, None)

    def lstm_pd(self, kind: str, mds: dict, reverse: bool, hint: int | None = None) -> int:
        """An LSTM primitive descriptor (one layer, one direction, no peephole or projection): ``kind`` is
        ``"forward"`` (training: it fills the workspace the backward reads) or ``"backward"`` (with the forward's as
        ``hint``); ``mds`` maps argument indices to descriptors, the diffs included for the backward."""
        direction = RIGHT2LEFT if reverse else LEFT2RIGHT
        order = (ARG_SRC, ARG_SRC_ITER, ARG_SRC_ITER_C, ARG_WEIGHTS, ARG_WEIGHTS_ITER, None, None, ARG_BIAS, ARG_DST,
                 ARG_DST_ITER, ARG_DST_ITER_C)
        descs = [None if arg is None else mds[arg] for arg in order]
        if kind == "forward":
            return self._out("dnnl_lstm_forward_primitive_desc_create", self.engine, FORWARD_TRAINING, direction,
                             *descs, 0, None)
        diffs = [None if arg is None else mds[arg + DIFF] for arg in order]
        return self._out("dnnl_lstm_backward_primitive_desc_create", self.engine, BACKWARD, direction, *descs,
                         *diffs, 0, hint, None)

    def max_pooling_pd(self, mds: dict, geometry) -> int:
        """A max pooling primitive descriptor for inference (no workspace): ``geometry`` is ``(strides, kernel,
        dilations, padding_l, padding_r)`` in oneDNN's convention (dilation 0 is none)."""
        return self._out("dnnl_pooling_forward_primitive_desc_create", self.engine, FORWARD_INFERENCE, POOLING_MAX,
                         mds[ARG_SRC], mds[ARG_DST], *(dims(v) for v in geometry), None)

    def reorder_pd(self, src_md: int, dst_md: int) -> int:
        return self._out("dnnl_reorder_primitive_desc_create", src_md, self.engine, dst_md, self.engine, None)

    def primitive(self, pd: int) -> int:
        return self._out("dnnl_primitive_create", pd)

    def memory(self, md: int) -> int:
        """A memory object of descriptor ``md`` with no buffer yet: a plan sets one per call
        (``dnnl_memory_set_data_handle``) and runs its primitives (``dnnl_primitive_execute``: on the CPU stream they
        run at once, in the calling thread and its OpenMP pool)."""
        return self._out("dnnl_memory_create", md, self.engine, None)

    def destroy(self, kind: str, handle: int) -> None:
        """Destroy a handle of ``kind`` ``"memory_desc"``, ``"primitive_desc"``, ``"primitive"`` or ``"memory"``."""
        if handle:
            getattr(self.lib, f"dnnl_{kind}_destroy")(handle)
