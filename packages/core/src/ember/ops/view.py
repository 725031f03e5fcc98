"""Ops whose result shares storage with the input: ``view``, ``reshape`` (when it can), ``expand``,
``permute``/``transpose``/``t``/``T``/``mT``/``movedim``, ``squeeze``, ``flatten``/``unflatten``; and the
memory-layout queries ``stride``, ``storage_offset``, ``is_contiguous`` with ``contiguous`` and ``clone``.

A view shares its base's memory and version counter, so an in-place change
through one is seen (and version-checked) through the other. Views are made by
the backend's own array views: NumPy always shares memory; a backend whose
arrays may copy (the array API allows it) still gives the right values and
gradients, but writes through such a "view" are only guaranteed to reach the
base where the backend shares memory (``array_api_strict`` does in practice).

>>> import ember
>>> x = ember.zeros(2, 3); v = x.view(6); v[0] = 1.0
>>> x[0, 0]
tensor(1.)
"""
from __future__ import annotations

import math
import warnings

from ..autograd.function import Op
from ._common import Tensor, sum_to, tensor_method, wrap_dim

__all__ = ["reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis",
           "squeeze", "flatten", "unflatten", "clone"]


def infer_shape(shape, numel, fn="view") -> tuple:
    """Resolve one ``-1`` in ``shape`` and check that the element count matches."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class View(Op):
    name_ = "view"
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        try:
            return xp.reshape(a, shape, copy=False)
        except (ValueError, AttributeError, TypeError):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
                               ) from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Reshape(Op):
    name_ = "reshape"
    backward_name = "ReshapeAliasBackward0"

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        return xp.reshape(a, shape, copy=True)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Expand(Op):
    name_ = "expand"
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        return xp.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, g):
        return sum_to(g, ctx.shape)


@tensor_method()
def view(self, *shape):
    """The same data with another shape, sharing memory; ``-1`` infers one size.

    Raises if the strides do not allow it (use :func:`reshape`), or if given
    a dtype (reinterpreting bytes is not supported).
    """
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        raise TypeError(f"view(): expected a shape (ints), got {shape[0]!r}; "
                        "reinterpreting memory as another dtype is not supported")
    return View.apply(self, shape=infer_shape(shape, self._data.size))


@tensor_method()
def reshape(input, *shape):
    """``input`` with a new shape: a view when the strides allow, a copy otherwise."""
    shape = infer_shape(shape, input._data.size, "reshape")
    try:
        return View.apply(input, shape=shape)
    except RuntimeError:
        return Reshape.apply(input, shape=shape)


@tensor_method()
def expand(self, *sizes):
    """A broadcast view with size-1 dimensions repeated (no copy); ``-1`` keeps a size."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    nd = self._data.ndim
    if len(sizes) < nd:
        raise RuntimeError(f"expand(ember.{self.dtype.name} {list(self.shape)}, size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({nd})")
    lead = len(sizes) - nd
    shape = []
    for i, s in enumerate(sizes):
        own = self._data.shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise RuntimeError("expand(): -1 is not allowed in a leading, non-existing dimension")
            s = own
        elif own is not None and own != s and own != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({own}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(self.shape)}")
        shape.append(int(s))
    shape = tuple(shape)
    if shape == tuple(self._data.shape):
        return View.apply(self, shape=shape)
    return Expand.apply(self, shape=shape)


@tensor_method()
def expand_as(self, other):
    return self.expand(other.shape)



# -- permutations -----------------------------------------------------------------
class Permute(Op):
    name_ = "permute"
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, dims=None):
        ctx.dims = dims
        return xp.permute_dims(a, dims)

    @staticmethod
    def backward(ctx, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return Permute.apply(g, dims=tuple(inverse))


class Transpose(Permute):
    name_ = "transpose"
    pass


class T(Permute):
    name_ = "t"
    pass


def _perm_dims(dims, ndim, fn="permute"):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if len(dims) != ndim:
        raise RuntimeError(f"{fn}(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError(f"{fn}(): duplicate dims are not allowed.")
    return dims


@tensor_method()
def permute(input, *dims):
    """A view with the dimensions reordered: ``x.permute(2, 0, 1)``.

    >>> import ember
    >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
    ember.Size([4, 2, 3])
    """
    return Permute.apply(input, dims=_perm_dims(dims, input._data.ndim))


@tensor_method("transpose", "swapaxes", "swapdims")
def transpose(input, dim0, dim1):
    """A view with dimensions ``dim0`` and ``dim1`` swapped.

    >>> import ember
    >>> ember.zeros(2, 3).transpose(0, 1).shape
    ember.Size([3, 2])
    """
    nd = input._data.ndim
    dims = list(range(nd))
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    dims[d0], dims[d1] = d1, d0
    return Transpose.apply(input, dims=tuple(dims))


swapaxes = swapdims = transpose


@tensor_method()
def t(input):
    """The transpose of a matrix (a 0-d or 1-d tensor comes back as a view of itself).

    >>> import ember
    >>> ember.tensor([[1, 2, 3]]).t()
    tensor([[1],
            [2],
            [3]])
    """
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return T.apply(input, dims=tuple(range(nd))[::-1])


def _T(self):
    """All dimensions reversed (a view); PyTorch's deprecation warning unless the tensor is 2-D."""
    nd = self._data.ndim
    if nd == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
    elif nd != 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                      "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                      "matrices or `x.permute(*ember.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                      "tensor.", UserWarning, stacklevel=2)
    return Permute.apply(self, dims=tuple(range(nd))[::-1])


def _mT(self):
    """The last two dimensions swapped (a view); needs at least 2 dimensions."""
    nd = self._data.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return transpose(self, -2, -1)


Tensor.T = property(_T)
Tensor.mT = property(_mT)


@tensor_method("movedim", "moveaxis")
def movedim(input, source, destination):
    """A view with dimension(s) ``source`` moved to position(s) ``destination``, the others kept in order.

    >>> import ember
    >>> ember.zeros(2, 3, 4).movedim(0, -1).shape
    ember.Size([3, 4, 2])
    """
    nd = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    src = tuple(wrap_dim(d, nd) for d in src)
    dst = tuple(wrap_dim(d, nd) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    order = [None] * nd
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(nd) if d not in src)
    dims = tuple(o if o is not None else next(rest) for o in order)
    return Permute.apply(input, dims=dims)


moveaxis = movedim


# -- size-1 dimensions and flattening ---------------------------------------------
class Squeeze(Op):
    name_ = "squeeze"
    is_view = True
    backward_name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, xp, a, dims=()):
        ctx.shape = a.shape
        return xp.squeeze(a, axis=dims) if dims else a[...]

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class SqueezeDim(Squeeze):
    name_ = "squeezedim"
    backward_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    name_ = "squeezedims"
    backward_name = "SqueezeBackward2"


@tensor_method()
def squeeze(input, dim=None):
    """A view without size-1 dimensions (all of them, or those among ``dim``: an int or a tuple).

    A ``dim`` whose size is not 1 is left alone, as in PyTorch.

    >>> import ember
    >>> ember.zeros(1, 3, 1).squeeze().shape
    ember.Size([3])
    """
    shape = input._data.shape
    nd = len(shape)
    if dim is None:
        return Squeeze.apply(input, dims=tuple(i for i, s in enumerate(shape) if s == 1))
    if isinstance(dim, int):
        d = wrap_dim(dim, nd)
        return SqueezeDim.apply(input, dims=(d,) if nd and shape[d] == 1 else ())
    dims = tuple(wrap_dim(d, nd) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return SqueezeDims.apply(input, dims=tuple(sorted(d for d in dims if nd and shape[d] == 1)))


@tensor_method()
def flatten(input, start_dim=0, end_dim=-1):
    """Dimensions ``start_dim`` .. ``end_dim`` merged into one (a view when the strides allow).

    >>> import ember
    >>> ember.zeros(2, 3, 4).flatten(1).shape
    ember.Size([2, 12])
    """
    shape = input._data.shape
    nd = len(shape)
    if nd == 0:
        return input.reshape(1)
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    return input.reshape(shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


@tensor_method()
def unflatten(input, dim, sizes):
    """Dimension ``dim`` split into ``sizes`` (one may be -1), as a view.

    >>> import ember
    >>> ember.zeros(2, 12).unflatten(1, (3, -1)).shape
    ember.Size([2, 3, 4])
    """
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        inner = infer_shape(sizes, shape[d])
    except RuntimeError:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shape[d]}) in the input tensor") from None
    return input.view(shape[:d] + inner + shape[d + 1:])


@tensor_method()
def view_as(self, other):
    """``self.view(other.shape)``."""
    return self.view(other.shape)


@tensor_method()
def reshape_as(self, other):
    """``self.reshape(other.shape)``."""
    return self.reshape(other.shape)


# -- memory layout ----------------------------------------------------------------
def _byte_strides(t):
    arr = t._data
    strides = getattr(arr, "strides", None)
    if strides is None:
        arr = t._device.backend.to_numpy(arr)
        strides = arr.strides
    return strides


@tensor_method("stride")
def stride(self, dim=None):
    """Steps in elements between neighbours along each dimension (or along ``dim``).

    >>> import ember
    >>> x = ember.zeros(2, 3)
    >>> x.stride(), x.t().stride()
    ((3, 1), (1, 3))
    """
    size = self._dtype.itemsize
    strides = tuple(s // size for s in _byte_strides(self))
    return strides if dim is None else strides[wrap_dim(dim, len(strides))]


@tensor_method()
def storage_offset(self):
    """Where this tensor's first element sits in its base's storage, in elements.

    >>> import ember
    >>> ember.arange(6)[2:].storage_offset()
    2
    """
    base = self._base
    if base is None or self._data.size == 0:
        return 0
    backend = self._device.backend
    return (backend.data_ptr(self._data) - backend.data_ptr(base._data)) // self._dtype.itemsize


@tensor_method()
def is_contiguous(self, memory_format=None):
    """True if the elements lie in memory in row-major order without gaps (size-1 dims don't matter).

    >>> import ember
    >>> x = ember.zeros(2, 3)
    >>> x.is_contiguous(), x.t().is_contiguous()
    (True, False)
    """
    shape = self._data.shape
    if self._data.size == 0:
        return True
    expected = self._dtype.itemsize
    for n, s in zip(reversed(shape), reversed(_byte_strides(self))):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


class Clone(Op):
    name_ = "clone"

    @staticmethod
    def forward(ctx, xp, a, contiguous=False):
        if contiguous and a.ndim > 1:
            return xp.reshape(xp.reshape(a, (-1,), copy=True), a.shape)
        return xp.asarray(a, copy=True)

    @staticmethod
    def backward(ctx, g):
        return g


@tensor_method()
def clone(input, *, memory_format=None):
    """A copy with its own memory, differentiable (``CloneBackward0``).

    >>> import ember
    >>> x = ember.zeros(2); y = x.clone(); y[0] = 1.0
    >>> x
    tensor([0., 0.])
    """
    return Clone.apply(input, contiguous=memory_format is not None and "contiguous" in str(memory_format))


@tensor_method()
def contiguous(self, memory_format=None):
    """``self`` if it is contiguous, else a row-major copy (differentiable).

    >>> import ember
    >>> ember.zeros(2, 3).t().contiguous().is_contiguous()
    True
    """
    if is_contiguous(self):
        return self
    return Clone.apply(self, contiguous=True)
