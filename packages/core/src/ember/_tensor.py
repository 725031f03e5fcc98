"""The ``Tensor`` class: an array on a device plus its autograd state.

Ops live in ``ember/ops/`` and attach themselves as methods (``x.exp()``,
``x + y``); this module holds only the state, the properties and the autograd
entry points.

>>> import ember
>>> x = ember.tensor([[1.0, 2.0]], requires_grad=True)
>>> x
tensor([[1., 2.]], requires_grad=True)
>>> x.shape, x.dtype
(ember.Size([1, 2]), ember.float32)
"""
from __future__ import annotations

import numbers
import warnings
import weakref

import numpy as np

from . import _alloc
from . import _dtype as dt
from ._device import as_device
from ._hooks import add_hook
from ._size import Size
from ._tensor_str import tensor_repr
from .backends.backend import on_device

__all__ = ["Tensor", "is_tensor"]


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead.")

class Tensor:
    """A multi-dimensional array on a device, with autograd.

    ``ember.Tensor(data)`` makes a float32 tensor from data (like
    ``torch.Tensor``); ``ember.Tensor(2, 3)`` an uninitialised 2x3 one. Prefer
    ``ember.tensor(data)``, which infers the dtype.
    """

    # Set on every tensor; the autograd and view state below is set only where it differs from the
    # class default (most tensors are plain results), which keeps making a tensor cheap.
    __slots__ = ("_data", "_device", "_dtype", "_vc", "_nbytes", "__dict__", "__weakref__")
    _requires_grad = False
    grad_fn = None
    _output_nr = 0
    _grad = None
    _base = None          # the tensor whose storage a view shares
    _view_of = None       # (view op, attrs[, parent's record]) to replay a view on its base
    _vv = 0               # version at which a view's history was last set
    _hooks = None
    _post_acc_hooks = None
    _grad_acc = None      # weak reference to this leaf's AccumulateGrad node (which holds the leaf)
    _pinned = False       # set on a tensor that ``pin_memory()`` made in page-locked host memory
    _post_acc_hooks_in_use = False  # set on the class by the first post-accumulate-grad hook (see autograd.engine)

    def __new__(cls, *args, device=None):
        return cls._make(*legacy_tensor_data(args, device))

    # -- construction (internal) ----------------------------------------------
    @classmethod
    def _make(cls, data, device, dtype=None):
        """Wrap a backend array that this tensor owns (memory is counted for ``device``; ``Op.apply2`` does the same
        inline)."""
        t = object.__new__(cls)
        if isinstance(data, _np_generic):
            data = _np_asarray(data)  # NumPy gives scalars for 0-dim results; a tensor needs an array
        t._data = data
        t._device = device
        if dtype is None:
            native = data.dtype
            hit = _BY_ID.get(id(native))  # hashing a NumPy dtype is slow; its identity is not
            dtype = hit[1] if hit is not None and hit[0] is native else _lookup_dtype(device, native)
        t._dtype = dtype
        t._vc = [0]
        n = t._nbytes = data.size * dtype.itemsize
        mem = device.mem
        now = mem[0] = mem[0] + n
        if now > mem[2]:  # a new peak, the limit or the memory history: see ember._alloc
            _grew(t, n, device)
        return t

    @classmethod
    def _make_view(cls, base, data, view_of=None):
        """A tensor sharing ``base``'s storage and version counter (memory not counted twice)."""
        t = object.__new__(cls)
        t._data = data
        t._device = base._device
        native = data.dtype
        t._dtype = base._dtype if native is base._data.dtype or native == base._data.dtype \
            else _lookup_dtype(base._device, native)
        t._vc = vc = base._vc
        t._base = base._base if base._base is not None else base
        if view_of is not None:
            # a view of a view records the whole chain from the base: (op, attrs, parent's record)
            t._view_of = view_of if base._view_of is None else view_of + (base._view_of,)
        t._nbytes = 0
        t._vv = vc[0]
        return t

    @classmethod
    def _sharing(cls, data, device, dtype, vc):
        """A tensor over an array some other tensor owns, with its version counter (memory not counted again)."""
        t = object.__new__(cls)
        t._data, t._device, t._dtype, t._vc, t._nbytes = data, device, dtype, vc, 0
        return t

    def __del__(self):  # replaced by _recording_del while the memory history records (see record_frees)
        try:
            self._device.mem[0] -= self._nbytes
        except AttributeError:  # half-built tensor, or interpreter shutdown
            pass

    def _detached_copy(self):
        """A contiguous copy without autograd history (used for fresh ``.grad`` values)."""
        xp = self._device.backend.xp
        try:
            with on_device(self._device):
                data = xp.asarray(self._data, copy=True)
        except MemoryError as exc:
            raise _alloc.from_memory_error(exc, self._device, self._data.shape, self._dtype) from exc
        return Tensor._make(data, self._device, self._dtype)

    def _alias_for_output(self):
        """A new tensor object over the same data and version counter, without autograd state."""
        return Tensor._make_view(self, self._data)

    # -- properties -----------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension (negative ``dim`` counts from the end)."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.size) * self._dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    # the other device types PyTorch asks about (True only on a backend plugin of that name)
    is_xpu = property(lambda self: self._device.type == "xpu", doc="Whether the tensor is on an Intel GPU.")
    is_mps = property(lambda self: self._device.type == "mps", doc="Whether the tensor is on an Apple GPU.")
    is_meta = property(lambda self: self._device.type == "meta", doc="Whether the tensor is a meta tensor.")
    is_ipu = property(lambda self: self._device.type == "ipu", doc="Whether the tensor is on a Graphcore IPU.")
    is_xla = property(lambda self: self._device.type == "xla", doc="Whether the tensor is on an XLA device.")
    is_vulkan = property(lambda self: self._device.type == "vulkan", doc="Whether the tensor is on Vulkan.")
    is_mtia = property(lambda self: self._device.type == "mtia", doc="Whether the tensor is on an MTIA device.")
    is_maia = property(lambda self: self._device.type == "maia", doc="Whether the tensor is on a MAIA device.")
    # layouts and kinds ember does not have: every tensor is dense, strided and unquantized
    is_sparse = property(lambda self: False, doc="False: ember's tensors are dense.")
    is_sparse_csr = property(lambda self: False, doc="False: ember's tensors are dense.")
    is_quantized = property(lambda self: False, doc="False: ember has no quantized tensors.")
    is_mkldnn = property(lambda self: False, doc="False: ember's tensors are in the strided layout.")
    is_nested = property(lambda self: False, doc="False: ember has no nested tensors.")

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (False for ``uint8`` and ``bool``)."""
        return self._dtype.is_signed

    def is_conj(self) -> bool:
        """False: ember has no lazily conjugated (complex) tensors."""
        return False

    def is_neg(self) -> bool:
        """False: ember has no lazily negated tensors."""
        return False

    def get_device(self) -> int:
        """Device index (-1 for the CPU, as in PyTorch)."""
        return -1 if self._device.type == "cpu" and self._device.index is None else (self._device.index or 0)

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def _is_view(self):
        return self._base is not None

    def is_pinned(self) -> bool:
        """Whether this tensor's memory is page-locked host memory (made by :meth:`pin_memory`; views share it).

        >>> import ember
        >>> ember.zeros(2).is_pinned()
        False
        """
        owner = self._base if self._base is not None else self
        return owner._pinned

    def data_ptr(self) -> int:
        """Address of the first element."""
        return self._device.backend.data_ptr(self._data)

    # -- autograd state --------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True):
        """Set whether autograd records ops on this (leaf) tensor; returns ``self``."""
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self._dtype!r}")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        grad = self._grad
        if grad is None and self.grad_fn is not None and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                                   f"vs. the tensor's {list(self.shape)}")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"assigned grad has data of a different type: {value._dtype!r} "
                                   f"vs. the tensor's {self._dtype!r}")
        self._grad = value

    @property
    def data(self):
        """This tensor's data as a new tensor outside autograd (shares memory, not the version counter)."""
        t = Tensor._make_view(self, self._data)
        t._vc = [0]
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._take_over(value)

    def _take_over(self, new):
        """Hold ``new``'s array, dtype and device (``self.data = new``), keeping the memory count right."""
        if new is self:
            return
        old_device, old_bytes = self._device, self._nbytes
        self._data, self._dtype, self._device = new._data, new._dtype, new._device
        if (new._base if new._base is not None else new) is self:
            return  # a view of self's own memory: still counted by self
        old_device.mem[0] -= old_bytes
        _alloc.freed(self, old_bytes, old_device)
        self._nbytes = 0
        self._count_memory_of(new)

    def _count_memory_of(self, source):
        """Count the bytes of ``source``'s storage, which this tensor now holds too, in place of its owner.

        The owner keeps this tensor alive from then on, so the bytes stay counted
        exactly once for as long as either of them lives.
        """
        owner = source._base if source._base is not None else source
        if owner._nbytes and owner is not self:
            self._nbytes, owner._nbytes = owner._nbytes, 0
            owner._accounted_by = self
            if _alloc.HISTORY is not None:
                _alloc.HISTORY.moved(owner, self)

    def detach(self):
        """A tensor sharing this one's data and version counter, cut off from the graph."""
        return Tensor._make_view(self, self._data)

    def detach_(self):
        """Cut this tensor off the graph in place (it becomes a leaf)."""
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        fn = self.grad_fn
        if fn._retained is None:
            fn._retained = {}
        fn._retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        fn = self.grad_fn
        return bool(fn is not None and fn._retained and self._output_nr in fn._retained
                    and fn._retained[self._output_nr]() is self)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; returning a tensor replaces it.

        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> x.sum().backward(); x.grad
        tensor([10., 10.])
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn.add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = {}
        return add_hook(self._hooks, hook)

    @property
    def _backward_hooks(self):
        """The hooks ``register_hook`` added, ``{handle id: hook}`` in order, or None (PyTorch's name for them)."""
        fn = self.grad_fn
        hooks = (fn._tensor_hooks or {}).get(self._output_nr) if fn is not None else self._hooks
        return None if hooks is None else dict(hooks)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after a leaf's ``.grad`` has been accumulated."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        Tensor._post_acc_hooks_in_use = True
        return add_hook(self._post_acc_hooks, hook)

    # -- Python protocol -------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        n = self._data.size
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        value = self._device.backend.to_numpy(self._data).reshape(()).item()
        if self._dtype.is_floating_point:
            return float(value)
        return bool(value) if self._dtype is dt.bool_ else int(value)

    def tolist(self):
        """Nested Python lists of the values (a number for a zero-dim tensor)."""
        arr = self._device.backend.to_numpy(self._data)
        if self._dtype is dt.bfloat16:
            arr = arr.astype("float32")
        return arr.tolist()

    def numpy(self, *, force: bool = False):
        """A NumPy array sharing memory with this CPU tensor (``force=True`` copies from other devices)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return self._device.backend.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        arr = self.detach().numpy(force=True)
        return arr if dtype is None else arr.astype(dtype)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self):
        n = self._data.size
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __index__(self):
        if self._dtype.category != dt.INTEGER or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def _scalar(self, what):
        if self._data.size != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars "
                             f"(this one has {self._data.size} elements); cannot convert to {what}")
        return self.item()

    def __hash__(self):
        return id(self)

    def __repr__(self):
        cls = type(self)
        # a Parameter prints as a plain tensor (its module adds "Parameter containing:"), a user subclass by name
        return tensor_repr(self, "tensor" if cls is Tensor or cls.__name__ == "Parameter" else cls.__name__)

    def __format__(self, spec):
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self)

    def __reduce__(self):
        raise TypeError("ember tensors are not pickled; save them with ember.save(obj, path) (safetensors)")

    def __deepcopy__(self, memo):
        """``copy.deepcopy``: a new leaf with copied data, the same ``requires_grad`` and a copied ``.grad``.

        As in PyTorch, only graph leaves can be deep-copied (``copy.deepcopy(model.state_dict())``).
        """
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               f"protocol at the moment; this one was made by {self.grad_fn.name()}. Deep-copy "
                               "t.detach() instead")
        if id(self) not in memo:
            new = self.detach().clone()
            if self._requires_grad:
                new.requires_grad_(True)
            if self._grad is not None:
                new._grad = self._grad.__deepcopy__(memo)
            memo[id(self)] = new
        return memo[id(self)]

    __array_priority__ = 1000


Tensor.__module__ = "ember"


_BY_ID: dict = {}
_np_generic, _np_asarray = np.generic, np.asarray
_grew = _alloc.grew
_alloc.tensor_type = Tensor  # what the report of an OutOfMemoryError looks for among the live objects
_plain_del = Tensor.__del__


def _recording_del(self):
    """``Tensor.__del__`` while the memory history records: the free is an event."""
    try:
        n = self._nbytes
        device = self._device
        device.mem[0] -= n
        _alloc.freed(self, n, device)
    except AttributeError:  # half-built tensor, or interpreter shutdown
        pass


def record_frees(on: bool) -> None:
    """Give the memory history (``on``) every tensor's free, or stop (the plain ``__del__`` costs nothing more)."""
    Tensor.__del__ = _recording_del if on else _plain_del  # type: ignore[method-assign]


def _lookup_dtype(device, native):
    """The ember dtype of a backend's native dtype, remembered by the native object's identity."""
    backend = device._backend or device.backend
    dtype = backend.from_native[native]
    if backend.dtypes.get(dtype) is native:  # a backend's own singleton dtype object: safe to remember
        _BY_ID[id(native)] = (native, dtype)
    return dtype


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def is_tensor(obj) -> bool:
    """True if ``obj`` is an ember Tensor (or a subclass such as Parameter)."""
    return isinstance(obj, Tensor)


def size_from_args(size, fn="zeros") -> tuple:
    """``(2, 3)``, ``((2, 3),)`` or ``([2, 3],)`` as a shape tuple, with a clear error otherwise."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"{fn}(): argument 'size' must be a tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{fn}(): Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def to_numpy_data(data):
    """``data`` (a tensor, nested sequences that may hold tensors, a NumPy array or scalar) as a NumPy array."""
    if isinstance(data, Tensor):
        return data.detach().numpy(force=True)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.stack([to_numpy_data(x) for x in data])
    try:
        return np.asarray(data)
    except ValueError as exc:
        raise ValueError(f"could not make a tensor from {type(data).__name__}: {exc} "
                         "(nested sequences must have equal lengths)") from None


def legacy_tensor_data(args, device, dtype=dt.float32):
    """``ember.Tensor(data)`` (a copy of data as ``dtype``) or ``ember.Tensor(2, 3)`` (uninitialised): the
    array, device and dtype of the new tensor."""
    device = as_device(device)
    backend = device.backend
    if not args:
        data = backend.xp.empty((0,), dtype=backend.native_dtype(dtype))
    elif all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args) or \
            (len(args) == 1 and isinstance(args[0], Size)):
        data = backend.xp.empty(size_from_args(args, "Tensor"), dtype=backend.native_dtype(dtype))
    elif len(args) == 1:
        data = backend.asarray(to_numpy_data(args[0]), dtype, device)
    else:
        raise TypeError(f"Tensor(): expected sizes (ints) or one data argument, got {args!r}")
    return data, device, dtype
