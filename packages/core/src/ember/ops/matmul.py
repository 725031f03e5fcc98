"""Matrix products: ``mm``, ``bmm``, ``mv``, ``matmul`` (``@``), ``dot``, ``outer``, ``tensordot``,
``addmm``, ``baddbmm`` and ``einsum``.

``mm``, ``bmm``, ``mv`` and ``dot`` take exactly the ranks their names say and
never broadcast; ``matmul`` promotes 1-D operands and broadcasts batch
dimensions. As in PyTorch, the operands must share a dtype (no promotion).

>>> import ember
>>> a = ember.tensor([[1., 2.], [3., 4.]])
>>> a @ ember.tensor([1., 1.])
tensor([3., 7.])
>>> ember.mm(a, a)
tensor([[ 7., 10.],
        [15., 22.]])
"""
from __future__ import annotations

from ..amp.autocast_mode import autocast_casts
from ..autograd.function import Op
from ._common import Tensor, sum_to, tensor_method, wrap_dim
from ._einsum import einsum

__all__ = ["mm", "bmm", "mv", "matmul", "dot", "inner", "vdot", "outer", "ger", "tensordot", "addmm", "baddbmm",
           "einsum"]


# -- checks -----------------------------------------------------------------------------------------------
def _dims_str(t):
    return "x".join(str(s) for s in t.shape)


def _same_dtype(a, b, op="mm"):
    if a._dtype is not b._dtype and not autocast_casts(op, a):  # autocast casts them to one dtype in Op.apply
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_short(a)} != {_short(b)}")


def _short(t):
    return t._dtype.scalar_type_name.lower()


def _need_tensor(fn, name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


# -- ops --------------------------------------------------------------------------------------------------
class Mm(Op):
    name_ = "mm"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        op = type(ctx)  # Mm or Bmm
        return (op.apply(g, b.mT) if need[0] else None,
                op.apply(a.mT, g) if need[1] else None)


class Bmm(Mm):
    """Batched ``mm`` (3-D operands); only its name differs."""

    name_ = "bmm"


class Mv(Op):
    name_ = "mv"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, v):
        return xp.matmul(a, v)

    @staticmethod
    def backward(ctx, g):
        a, v = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (outer(g, v) if need[0] else None,
                Mv.apply(a.mT, g) if need[1] else None)


class Dot(Op):
    name_ = "dot"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.asarray(xp.sum(a * b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g * b if need[0] else None,
                g * a if need[1] else None)


class Matmul(Op):
    """Batched, broadcasting matmul; 1-D operands get a dimension added and removed again."""
    name_ = "matmul"
    saves_inputs = True
    backward_name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, xp, a, b):
        vec_a, vec_b = a.ndim == 1, b.ndim == 1
        if vec_a:
            a = xp.reshape(a, (1, a.shape[0]))
        if vec_b:
            b = xp.reshape(b, (b.shape[0], 1))
        out = xp.matmul(a, b)
        ctx.padded = (vec_a or vec_b) and out.shape
        if ctx.padded:
            out = xp.reshape(out, out.shape[:-2] + out.shape[-2:][vec_a:2 - vec_b])
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        a2 = a.reshape(1, -1) if a.ndim == 1 else a
        b2 = b.reshape(-1, 1) if b.ndim == 1 else b
        if ctx.padded:
            g = g.reshape(ctx.padded)
        ga = sum_to(matmul(g, b2.mT), a2.shape).reshape(a.shape) if need[0] else None
        gb = sum_to(matmul(a2.mT, g), b2.shape).reshape(b.shape) if need[1] else None
        return ga, gb


class TensorDot(Op):
    name_ = "tensordot"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b, dims_a=(), dims_b=()):
        ctx.dims_a, ctx.dims_b = dims_a, dims_b
        return xp.tensordot(a, b, axes=(list(dims_a), list(dims_b)))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da, db = ctx.dims_a, ctx.dims_b
        free_a = [i for i in range(a.ndim) if i not in da]
        free_b = [i for i in range(b.ndim) if i not in db]
        na = len(free_a)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            # contracting g's free-b axes with b leaves free_a, then b's summed axes in b's order
            t = _tensordot(g, b, list(range(na, g.ndim)), free_b)
            ga = t.permute(_inverse(free_a + [da[db.index(k)] for k in sorted(db)]))
        if ctx.needs_input_grad[1]:
            t = _tensordot(a, g, free_a, list(range(na)))
            gb = t.permute(_inverse([db[da.index(k)] for k in sorted(da)] + free_b))
        return ga, gb


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _tensordot(a, b, dims_a, dims_b):
    return TensorDot.apply(a, b, dims_a=tuple(dims_a), dims_b=tuple(dims_b))


class Addmm(Op):
    """``beta * input + alpha * (mat1 @ mat2)``; also batched (``baddbmm``)."""
    name_ = "addmm"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, c, a, b, beta=1, alpha=1):
        ctx.beta, ctx.alpha, ctx.c_shape = beta, alpha, c.shape
        prod = xp.matmul(a, b)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:  # PyTorch ignores input (even NaN/inf) when beta is 0
            return prod
        return prod + (c if beta == 1 else c * beta)

    @staticmethod
    def backward(ctx, g):
        c, a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        gc = ga = gb = None
        if need[0]:
            gc = sum_to(g if ctx.beta == 1 else g * ctx.beta, ctx.c_shape)
        ga_scale = g if ctx.alpha == 1 else g * ctx.alpha
        if need[1]:
            ga = matmul(ga_scale, b.mT)
        if need[2]:
            gb = matmul(a.mT, ga_scale)
        return gc, ga, gb


class Baddbmm(Addmm):
    name_ = "baddbmm"
    pass


# -- public functions -------------------------------------------------------------------------------------
@tensor_method()
def mm(input, mat2):
    """Product of two matrices (2-D only; no broadcasting: use :func:`matmul` for that).

    >>> import ember
    >>> ember.mm(ember.ones(2, 3), ember.ones(3, 1)).shape
    ember.Size([2, 1])
    """
    _need_tensor("mm", "mat2", mat2)
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims_str(input)} and {_dims_str(mat2)})")
    _same_dtype(input, mat2)
    return Mm.apply(input, mat2)


@tensor_method()
def bmm(input, mat2):
    """Batched product of ``(b, n, m)`` and ``(b, m, p)`` tensors (3-D only, no broadcasting).

    >>> import ember
    >>> ember.bmm(ember.ones(4, 2, 3), ember.ones(4, 3, 5)).shape
    ember.Size([4, 2, 5])
    """
    _need_tensor("bmm", "mat2", mat2)
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_batch2(input, mat2)
    _same_dtype_scalar(input, mat2)
    return Bmm.apply(input, mat2)


def _check_batch2(a, b):
    want = [a.shape[0], a.shape[2]]
    if [b.shape[0], b.shape[1]] != want:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {want} "
                           f"but got: {[b.shape[0], b.shape[1]]}.")


def _same_dtype_scalar(a, b, op="bmm"):
    if a._dtype is not b._dtype and not autocast_casts(op, a):  # autocast casts them to one dtype in Op.apply
        raise RuntimeError(f"expected scalar type {a._dtype.scalar_type_name} but found {b._dtype.scalar_type_name}")


@tensor_method()
def mv(input, vec):
    """Matrix-vector product (``input`` 2-D, ``vec`` 1-D).

    >>> import ember
    >>> ember.mv(ember.ones(2, 3), ember.ones(3))
    tensor([3., 3.])
    """
    _need_tensor("mv", "vec", vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({_dims_str(input)}), "
                           f"vec ({vec.shape[0]})")
    if input._dtype is not vec._dtype and not autocast_casts("mv", input):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {input._dtype.scalar_type_name}, "
                           f"{input._dtype.scalar_type_name}, and {vec._dtype.scalar_type_name}")
    return Mv.apply(input, vec)


@tensor_method()
def dot(input, tensor):
    """Inner product of two 1-D tensors of the same length and dtype.

    >>> import ember
    >>> ember.dot(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
    tensor(11.)
    """
    _need_tensor("dot", "tensor", tensor)
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        n, m = input.shape[0], tensor.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
                           f"number of elements, but got {n} and {m} elements respectively")
    if input._dtype is not tensor._dtype and not autocast_casts("dot", input):
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input._dtype.scalar_type_name} "
                           f"and {tensor._dtype.scalar_type_name}")
    return Dot.apply(input, tensor)


vdot = dot  # real dtypes only, so no conjugation
Tensor.vdot = dot


@tensor_method()
def inner(input, other):
    """Sum of products over the last dimension of each (a dot product for 1-D tensors).

    >>> import ember
    >>> ember.inner(ember.tensor([1., 2.]), ember.tensor([[1., 0.], [0., 1.]]))
    tensor([1., 2.])
    """
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return tensordot(input, other, dims=([input.ndim - 1], [other.ndim - 1]))


@tensor_method()
def matmul(input, other):
    """Matrix product with PyTorch's rules: 1-D operands are treated as vectors and batch dims broadcast.

    >>> import ember
    >>> ember.matmul(ember.ones(5, 2, 3), ember.ones(3, 4)).shape
    ember.Size([5, 2, 4])
    >>> ember.matmul(ember.ones(3), ember.ones(3))
    tensor(3.)
    """
    _need_tensor("matmul", "other", other)
    na, nb = input.ndim, other.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    if na == 1 and nb == 1:
        return dot(input, other)
    if na == 2 and nb == 2:
        return mm(input, other)
    if na == 2 and nb == 1:
        return mv(input, other)
    if na == 1 and nb == 2:
        if input.shape[0] != other.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{input.shape[0]} and "
                               f"{_dims_str(other)})")
        _same_dtype(input, other)
        return Mm.apply(input.reshape(1, -1), other).reshape(-1)
    _check_batched(input, other)
    return Matmul.apply(input, other)


def _check_batched(a, b):
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        if b.ndim == 1:
            rows = 1
            for s in a.shape[:-1]:
                rows *= s
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k_a}), vec ({k_b})")
        batch = list(b.shape[:-2]) or [1]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch[-1] if a.ndim > 2 else 1}, {k_a}] but got: "
                           f"[{batch[-1] if b.ndim > 2 else 1}, {k_b}].")
    broadcast_batch(a.shape[:-2], b.shape[:-2])
    _same_dtype_scalar(a, b, "matmul")


def broadcast_batch(batch_a, batch_b) -> tuple:
    """The broadcast of two batch shapes, or PyTorch's error for sizes that do not broadcast."""
    n = max(len(batch_a), len(batch_b))
    a, b = (1,) * (n - len(batch_a)) + tuple(batch_a), (1,) * (n - len(batch_b)) + tuple(batch_b)
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
    return tuple(max(x, y) if x and y else 0 for x, y in zip(a, b))


@tensor_method("__matmul__")
def _matmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


@tensor_method("__rmatmul__")
def _rmatmul_op(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


@tensor_method()
def outer(input, vec2):
    """Outer product of two 1-D tensors (``input[i] * vec2[j]``).

    >>> import ember
    >>> ember.outer(ember.tensor([1., 2.]), ember.tensor([1., 10.]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    _need_tensor("outer", "vec2", vec2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return input.reshape(-1, 1) * vec2


ger = outer
Tensor.ger = outer


def tensordot(a, b, dims=2):
    """Sum of products over ``dims``: the last ``dims`` of ``a`` with the first ``dims`` of ``b`` (an int), or
    the dimensions listed in a pair ``([dims of a], [dims of b])``.

    >>> import ember
    >>> ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5)).shape
    ember.Size([2, 5])
    >>> ember.tensordot(ember.ones(2, 3), ember.ones(3, 2), dims=([0], [1])).shape
    ember.Size([3, 3])
    """
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
        dims_a = [wrap_dim(d, a.ndim) for d in dims_a]
        dims_b = [wrap_dim(d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                               f"{da} and second has size {b.shape[db]} in dim {db}")
    if a._dtype is not b._dtype and not autocast_casts("tensordot", a):
        raise RuntimeError("both inputs should have same dtype")
    return _tensordot(a, b, dims_a, dims_b)


def _check_scaled(name, c, a, b, rank):
    for arg, t in (("mat1" if rank == 2 else "batch1", a), ("mat2" if rank == 2 else "batch2", b)):
        if t.ndim != rank:
            raise RuntimeError(f"{arg} must be a {'matrix' if rank == 2 else '3D tensor'}")
    if rank == 2 and a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims_str(a)} and {_dims_str(b)})")
    if rank == 3:
        _check_batch2(a, b)
    out = tuple(a.shape[:-1]) + (b.shape[-1],)
    cs = tuple(c.shape)
    if len(cs) > rank or any(x != y and x != 1 for x, y in zip(cs[::-1], out[::-1])):
        raise RuntimeError(f"{name}: the shape of input {list(cs)} does not broadcast to the product's "
                           f"shape {list(out)}")
    for t in (a, b):
        if t._dtype is not c._dtype and not autocast_casts(name, c):
            raise RuntimeError(f"{name}: expected all tensors to have the same dtype, but got "
                               f"{c._dtype.scalar_type_name} and {t._dtype.scalar_type_name}")


@tensor_method()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape.

    >>> import ember
    >>> ember.addmm(ember.ones(2), ember.ones(3, 2), ember.ones(2, 2), alpha=2).shape
    ember.Size([3, 2])
    """
    _check_scaled("addmm", input, mat1, mat2, 2)
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


@tensor_method()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``, ``input`` broadcast to the product's shape.

    >>> import ember
    >>> ember.baddbmm(ember.zeros(2, 1, 1), ember.ones(2, 3, 4), ember.ones(2, 4, 5)).shape
    ember.Size([2, 3, 5])
    """
    _check_scaled("baddbmm", input, batch1, batch2, 3)
    return Baddbmm.apply(input, batch1, batch2, beta=beta, alpha=alpha)
