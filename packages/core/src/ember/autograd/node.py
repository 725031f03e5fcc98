"""Graph nodes (``grad_fn``): the base :class:`Node` and :class:`AccumulateGrad` for leaves.

A node knows the edges to the nodes of its inputs (``next_functions``), the
tensors it saved for backward (with their versions, to catch in-place changes),
and hooks. Built-in ops are nodes too (``ember.autograd.function.Op``).
"""
from __future__ import annotations

import itertools
import weakref
from sys import getrefcount
from typing import Any

from numpy import ndarray

from .._hooks import add_hook
from .._tensor import Tensor

_seq = itertools.count()
_new_object = object.__new__
_weak = weakref.ref

FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
             "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
             "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
             "or if you need to access saved tensors after calling backward.")


class Node:
    """A node of the backward graph; ``tensor.grad_fn`` is one.

    >>> import ember
    >>> y = ember.ones(2, requires_grad=True) * 3
    >>> y.grad_fn.name()
    'MulBackward0'
    """

    backward_name = "Node"
    #: the edges as recorded: ``(node, output_nr)``, ``(None, 0)`` for an input that needs no gradient, or
    #: ``(leaf, 0)`` with the leaf tensor itself (its AccumulateGrad node is made only when someone looks, see
    #: :attr:`next_functions`: a forward step through a leaf then makes no node object at all)
    _next: tuple = ()
    _saved: tuple = ()
    _saved_versions: tuple = ()
    _freed = False
    _pre_hooks: dict | None = None     # {id: fn(grad_outputs)}
    _post_hooks: dict | None = None    # {id: fn(grad_inputs, grad_outputs)}
    _tensor_hooks: dict | None = None  # {output_nr: {id: fn(grad)}} from tensor.register_hook on outputs
    _retained: dict | None = None      # {output_nr: weakref to a tensor that retains its grad}
    _anomaly_trace = None
    _out_meta: tuple | None = None     # ((shape, dtype, device), ...) of outputs, for nodes with several
    _metadata: dict | None = None

    def name(self) -> str:
        return self.backward_name

    @property
    def next_functions(self) -> tuple:
        """``((node, output_nr), ...)``: where this node's gradients go, one edge per input (``(None, 0)`` for an
        input that needs none); a leaf's edge is its :class:`AccumulateGrad` node, the same object as long as
        the graph lives."""
        edges = self._next
        if any(isinstance(fn, Tensor) for fn, _ in edges):
            edges = self._next = tuple((grad_accumulator(fn), 0) if isinstance(fn, Tensor) else (fn, nr)
                                       for fn, nr in edges)
        return edges

    @next_functions.setter
    def next_functions(self, edges) -> None:
        self._next = tuple(edges)

    def __repr__(self):
        return f"<{self.backward_name} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        md = self._metadata
        if md is None:
            md = self._metadata = {}
        return md

    # -- saved tensors ----------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` for backward; an in-place change to one before then is an error."""
        self._saved = tensors
        self._saved_versions = tuple(t._vc[0] if hasattr(t, "_vc") else None for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(FREED_MSG)
        for t, v in zip(self._saved, self._saved_versions):
            if v is not None and t._vc[0] != v:
                raise RuntimeError(_version_error(self, t, v))
        return self._saved

    # -- hooks ------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward; it may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return add_hook(self._pre_hooks, fn)

    def add_tensor_hook(self, output_nr: int, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return add_hook(self._tensor_hooks.setdefault(output_nr, {}), fn)

    def release(self) -> None:
        """Free what was saved for backward (after a backward without ``retain_graph``)."""
        self._freed = True
        self._saved = ()

    def apply_backward(self, grads: list) -> tuple:
        """Gradients for the inputs given those of the outputs; subclasses implement."""
        raise NotImplementedError


def _version_error(node, t, expected) -> str:
    kind = f"{t.dtype.name} tensor {list(t.shape)}".replace("ember.", "")
    origin = f", which is output {t._output_nr} of {t.grad_fn.name()}," if t.grad_fn is not None else ""
    return (f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{kind}]{origin} is at version {t._vc[0]}; expected version {expected} instead "
            f"(saved by {node.name()}). Hint: avoid the in-place change, or clone() the tensor before it.")


def grad_accumulator(leaf) -> "AccumulateGrad":
    """The leaf tensor's :class:`AccumulateGrad` node: the one a live graph already uses, else a new one.

    As in PyTorch, the node holds its leaf and the leaf refers to its node only weakly: a graph keeps the
    leaves it accumulates into alive, with their hooks, even once no name refers to them, and frees them
    with itself (no reference cycle). A leaf outside every graph gets a new node on its next use.
    """
    ref = leaf._grad_acc
    if ref is not None:
        acc = ref()
        if acc is not None:
            return acc
    acc = _new_object(AccumulateGrad)  # no __init__ call: every forward step makes one per leaf it uses
    acc.variable = leaf
    acc.seq = next(_seq)
    leaf._grad_acc = _weak(acc)
    return acc


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds incoming gradients into ``leaf.grad``.

    It holds its leaf (``variable``), so a graph keeps the leaves it accumulates into alive, hooks and all,
    as in PyTorch; here the leaf has no name of its own left:

    >>> import ember
    >>> y = (ember.ones(2, requires_grad=True) * 3).sum()
    >>> acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    >>> y.backward(); acc.variable.grad
    tensor([3., 3.])
    """

    backward_name = "AccumulateGrad"
    #: the leaf tensor, held strongly (the leaf refers to this node weakly); made by :func:`grad_accumulator`
    variable: Any
    seq: int

    def accumulate(self, grad, create_graph: bool) -> None:
        """Add ``grad`` into the leaf's ``.grad`` (see :func:`accumulate`)."""
        accumulate(self.variable, grad, create_graph)

    def release(self) -> None:
        pass


def accumulate(leaf, grad, create_graph: bool) -> None:
    """Add ``grad`` into ``leaf.grad``, after the leaf's tensor hooks and before its post-accumulate-grad hooks.

    A first ``.grad`` is ``grad`` itself when nothing else can see it (as PyTorch's AccumulateGrad steals a
    gradient no one else holds), else a copy: the caller (the engine) passes its last reference, so ``grad``
    counts at most :data:`_STEALABLE_REFS` references here.
    """
    hooked = bool(leaf._hooks)
    if hooked:
        for hook in tuple(leaf._hooks.values()):
            new = hook(grad)
            if new is not None:
                grad = new
    old = leaf._grad
    if create_graph:
        leaf._grad = grad if old is None else old + grad
    elif old is None:
        # post-accumulate-grad hooks run after .grad is set and see only the leaf: they do not stop adoption
        stealable = not hooked and getrefcount(grad) <= _STEALABLE_REFS
        leaf._grad = grad if stealable and _owns_plain_array(grad) else grad._detached_copy()
    elif old._requires_grad:
        leaf._grad = (old + grad).detach()
    else:
        old._data += grad._data
        old._vc[0] += 1
    if leaf._post_acc_hooks:
        for hook in tuple(leaf._post_acc_hooks.values()):
            hook(leaf)


#: references to a stealable gradient inside ``accumulate``: the engine's local, the argument, getrefcount's
_STEALABLE_REFS = 3


def _owns_plain_array(g) -> bool:
    """Whether ``g`` is a plain tensor that alone owns a C-contiguous NumPy array (what a copy would be)."""
    data = g._data
    # references to the array: the tensor's slot, the local ``data``, getrefcount's argument
    return (type(data) is ndarray and data.base is None and data.flags.c_contiguous and g._base is None
            and not g._requires_grad and getrefcount(data) <= 3)
