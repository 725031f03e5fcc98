"""oneDNN primitives for one shape each, run on NumPy arrays in place.

A :class:`Primitive` (a convolution's pass, a pooling) or an LSTM's pair of them is built once per shape and
cached (:class:`PlanCache`) by the kernels that use it (:mod:`._conv`, :mod:`._lstm`, :mod:`._pool`). A
convolution's is created with oneDNN's preferred ("any") layouts, which for most shapes are blocked ones (channels
in blocks of 8 or 16): that is where oneDNN is fast. Each NumPy array is described as what it is (C-order NCHW /
OIHW, or GOIHW for groups); where the primitive wants exactly that, the array is passed in place (zero copy), and
otherwise a reorder copies it into (or out of) a scratch buffer (:class:`Execution`). The scratch buffers are not
the plan's: each thread has one set (:class:`Arena`), grown to the largest primitive it ran, so that cached plans
of many shapes hold no activations.
"""
from __future__ import annotations

import collections
import ctypes
import threading

import numpy as np

from . import _dnnl as d

#: buffers handed to oneDNN are aligned to this many bytes (its own allocations use 64)
ALIGN = 64


def _aligned(nbytes: int) -> np.ndarray:
    """A uint8 buffer of ``nbytes`` bytes starting at an ``ALIGN``-byte boundary."""
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes]


class Arena(threading.local):
    """Scratch buffers of one thread, one per slot (a primitive's reordered arguments), grown as needed.

    >>> arena = Arena()
    >>> a = arena.address(0, 1000)
    >>> arena.address(0, 10) == a, a % ALIGN
    (True, 0)
    """

    def __init__(self):
        self.buffers: list = []

    def address(self, slot: int, nbytes: int) -> int:
        """The address of slot ``slot``'s buffer, of at least ``nbytes`` bytes (aligned to ``ALIGN``)."""
        while len(self.buffers) <= slot:
            self.buffers.append(_aligned(0))
        if self.buffers[slot].nbytes < nbytes:
            self.buffers[slot] = None  # the old one goes first: less memory held at once
            self.buffers[slot] = _aligned(nbytes)
        return self.buffers[slot].ctypes.data


class _Operand:
    """One array argument: the memory over the user's array, and, where the primitive wants another layout, a
    memory of that layout over a scratch buffer, and the reorder between the two."""

    def __init__(self, dnnl: d.Binding, pd: int, arg: int, user_md: int, output: bool):
        self.arg, self.output = arg, output
        self.user = dnnl.memory(user_md)
        inner_md = dnnl.query_md(pd, arg)
        self.inner = self.reorder = self.reorder_args = None
        self.nbytes = 0
        if not dnnl.same_layout(user_md, inner_md):
            self.nbytes = dnnl.size(inner_md)
            self.inner = dnnl.memory(inner_md)
            src, dst = (inner_md, user_md) if output else (user_md, inner_md)
            rpd = dnnl.reorder_pd(src, dst)
            try:
                self.reorder = dnnl.primitive(rpd)
            finally:
                dnnl.destroy("primitive_desc", rpd)
            pair = (self.inner, self.user) if output else (self.user, self.inner)
            self.reorder_args = (d.ExecArg * 2)((d.ARG_SRC, pair[0]), (d.ARG_DST, pair[1]))

    @property
    def memory(self) -> int:
        """The memory the primitive reads or writes."""
        return self.user if self.inner is None else self.inner

    def handles(self):
        return [("memory", self.user), ("memory", self.inner), ("primitive", self.reorder)]


class Execution:
    """A primitive of one primitive descriptor with its operands, run on NumPy arrays in place.

    ``user_mds`` maps oneDNN argument indices to descriptors of the user's arrays (C-order, or a view's strides);
    ``outputs`` names the arguments the primitive writes, and ``accumulated`` those it adds into (an RNN's weight
    gradients): their scratch buffers are zeroed before each run, and their arrays must hold zeros. The caller
    serialises runs (the memory objects are the execution's) and destroys it with :meth:`destroy`.
    """

    def __init__(self, dnnl: d.Binding, pd: int, user_mds: dict, outputs: tuple, accumulated: tuple = ()):
        self.dnnl = dnnl
        self.primitive = dnnl.primitive(pd)
        self._handles: list = [("primitive", self.primitive)]
        try:
            self.operands = []
            for arg, md in user_mds.items():
                self.operands.append(_Operand(dnnl, pd, arg, md, arg in outputs))
                self._handles += self.operands[-1].handles()
        except BaseException:
            self.destroy()
            raise
        self.args = (d.ExecArg * len(self.operands))(*((op.arg, op.memory) for op in self.operands))
        self._before = [op for op in self.operands if op.reorder and not op.output]
        self._after = [op for op in self.operands if op.reorder and op.output]
        # what run() does, as plain tuples for the ctypes calls: the user arrays' memories, the scratch memories
        # (and whether to zero them), and the executions (reorders in, the primitive, reorders out)
        self._users = [(op.user, op.arg) for op in self.operands]
        self._inner = [(op.inner, op.nbytes, op.arg in accumulated) for op in self.operands if op.reorder]
        self._steps = ([(op.reorder, op.reorder_args, 2) for op in self._before]
                       + [(self.primitive, self.args, len(self.operands))]
                       + [(op.reorder, op.reorder_args, 2) for op in self._after])

    def run(self, arrays: dict, arena: Arena) -> None:
        """Execute on ``arrays`` (argument index -> C-contiguous NumPy array; outputs are written), with this
        thread's ``arena`` for the reordered arguments."""
        dnnl = self.dnnl
        set_address, execute, stream = dnnl.lib.dnnl_memory_set_data_handle, dnnl.lib.dnnl_primitive_execute, \
            dnnl.stream
        status = 0
        for memory, arg in self._users:
            status |= set_address(memory, arrays[arg].ctypes.data)
        for slot, (memory, nbytes, zeroed) in enumerate(self._inner):
            address = arena.address(slot, nbytes)
            if zeroed:
                ctypes.memset(address, 0, nbytes)
            status |= set_address(memory, address)
        dnnl.check(status, "dnnl_memory_set_data_handle")
        for primitive, args, count in self._steps:
            status = execute(primitive, stream, count, args)
            if status:
                dnnl.check(status, "dnnl_primitive_execute")

    @property
    def copies(self) -> int:
        """How many arguments go through a reorder (0: every array is used in place)."""
        return len(self._before) + len(self._after)

    def destroy(self) -> None:
        for kind, handle in self._handles:
            self.dnnl.destroy(kind, handle)
        self._handles = []


class Primitive:
    """A primitive over arrays of fixed shapes, all in C order; :meth:`run` executes it, one call at a time.

    ``make_pd(mds, made)`` gets the arrays' descriptors (argument index -> descriptor) and returns a primitive
    descriptor; anything else it creates (descriptors in the layouts the primitive may choose, a forward pass's
    descriptor as a backward's hint) it appends to ``made`` as ``(kind, handle)``, destroyed once the primitive is
    made. Creating it raises :class:`~._dnnl.DnnlError` where oneDNN has no implementation.
    """

    def __init__(self, dnnl: d.Binding, make_pd, shapes: dict, outputs: tuple):
        self._lock = threading.Lock()  # the memory objects are the primitive's: one execution at a time
        self.execution = None
        mds = {arg: dnnl.memory_desc(shape) for arg, shape in shapes.items()}
        made = [("memory_desc", md) for md in mds.values()]
        try:
            pd = make_pd(mds, made)
            made.append(("primitive_desc", pd))
            self.execution = Execution(dnnl, pd, mds, outputs)
        finally:
            for kind, handle in reversed(made):
                dnnl.destroy(kind, handle)

    def run(self, arrays: dict, arena: Arena) -> None:
        """Execute on ``arrays`` (argument index -> C-contiguous NumPy array; outputs are written), with this
        thread's ``arena`` for the reordered arguments."""
        with self._lock:
            self.execution.run(arrays, arena)

    @property
    def copies(self) -> int:
        """How many arguments go through a reorder (0: every array is used in place)."""
        return self.execution.copies

    def __del__(self):
        try:
            if self.execution is not None:
                self.execution.destroy()
        except Exception:  # at interpreter exit the library may be gone already
            pass


class PlanCache:
    """Plans by key, built on first use by ``build(*key)``; a key oneDNN has no implementation for maps to None
    (remembered). The least recently used plan goes first beyond ``size`` plans (each holds primitives, no data)."""

    def __init__(self, build, size: int):
        self._build, self._size = build, size
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._plans:
                self._plans.move_to_end(key)
                return self._plans[key]
        try:
            plan = self._build(*key)
        except d.DnnlError:
            plan = None
        with self._lock:
            self._plans[key] = plan
            if len(self._plans) > self._size:
                self._plans.popitem(last=False)
        return plan
