"""Classification losses: ``cross_entropy`` (class indices or class probabilities), ``nll_loss``, ``kl_div``.

With class-index targets, ``cross_entropy`` is one fused op: its forward takes
the log-softmax over the class dimension (1, or 0 for an unbatched input) and
picks each target's entry, with class weights, ``ignore_index`` and label
smoothing folded in; its backward is ``softmax - one_hot`` scaled per element.
Inputs may have extra dimensions, ``(N, C, d1, d2, ...)`` with targets
``(N, d1, d2, ...)``. The 'mean' reduction divides by the summed weights of the
targets that are not ignored, as PyTorch does.

>>> import ember
>>> import ember.nn.functional as F
>>> logits = ember.tensor([[0.0, 0.0], [0.0, 0.0]])
>>> F.cross_entropy(logits, ember.tensor([0, 1]))
tensor(0.6931)
"""
from __future__ import annotations

from .. import _dtype as dt
from ..amp.autocast_mode import autocast_casts
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ..backends.cpu_kernels.loss import cross_entropy_grad, cross_entropy_rows
from ._common import Tensor, promote
from .loss_common import (
    broadcast_pair,
    check_tensor,
    constant_argument,
    dtype_name,
    get_reduction,
    grad_scale,
    reduce_array,
    reduce_tensor,
    warn_at_caller,
)
from .pointwise import not_implemented_for

__all__ = ["cross_entropy", "nll_loss", "kl_div"]


# -- arrays: targets, weights, reductions ------------------------------------------------------------------
def _class_shape(ndim: int, n_classes: int) -> tuple:
    """The shape that lines a per-class vector up with dimension 1 of an ``ndim``-dim input."""
    return (1, n_classes) + (1,) * (ndim - 2)


def _remember_targets(ctx, xp, x, target, weight, ignore_index, may_ignore):
    """Keep on ``ctx`` what forward and backward need about the targets: ``safe`` (ignored entries set to class
    0, so they can index), ``keep`` (the mask of counted entries; None when all count) and ``w`` (each entry's
    weight, its class's weight and 0 where ignored; None when all are 1)."""
    ctx.xp, ctx.shape, ctx.dtype = xp, x.shape, x.dtype
    keep = w = None
    if may_ignore:
        keep = target != ignore_index
        safe = xp.where(keep, target, xp.zeros_like(target))
    else:
        safe = target
    if weight is not None:
        w = xp.reshape(xp.take(weight, xp.reshape(safe, (-1,))), safe.shape)
        if keep is not None:
            w = xp.where(keep, w, xp.zeros_like(w))
    elif keep is not None:
        w = xp.astype(keep, x.dtype)
    ctx.safe, ctx.keep, ctx.w = safe, keep, w


def _pick(xp, a, safe):
    """``a[n, safe[n, ...], ...]``: each target's entry along the class dimension 1."""
    if a.ndim == 2:  # flat positions n * C + t: one take, much cheaper than take_along_axis on NumPy
        n, c = a.shape
        return xp.take(xp.reshape(a, (-1,)), xp.arange(n, dtype=safe.dtype) * c + safe)
    return xp.squeeze(xp.take_along_axis(a, xp.expand_dims(safe, axis=1), axis=1), axis=1)


def _reduce(ctx, xp, losses, reduction):
    """``losses`` reduced; 'mean' divides by the summed weights of the kept targets (``ctx.denom``)."""
    ctx.reduction = reduction
    if reduction == "mean":
        ctx.denom = float(xp.sum(ctx.w)) if ctx.w is not None else losses.size
        return xp.sum(losses) / ctx.denom
    return reduce_array(xp, losses, reduction)


def _per_element(ctx, g, factor, tensors):
    """The incoming gradient scaled by the reduction and by ``factor`` (a per-element array or None), with a
    class axis to broadcast over: an ember tensor when ``tensors`` (create_graph), else an array."""
    if tensors:
        c = g / ctx.denom if ctx.reduction == "mean" else g
        if factor is not None:
            c = c * Tensor._make(factor, g._device)
        return c.unsqueeze(1) if c.ndim else c
    c = g._data / ctx.denom if ctx.reduction == "mean" else g._data
    if factor is not None:
        c = c * factor
    return ctx.xp.expand_dims(c, axis=1) if c.ndim else c


def _one_hot(ctx):
    """A float ``(N, C, d1, ...)`` array with 1 at each (safe) target class."""
    xp = ctx.xp
    classes = xp.reshape(xp.arange(ctx.shape[1], dtype=ctx.safe.dtype), _class_shape(len(ctx.shape), ctx.shape[1]))
    return xp.astype(xp.expand_dims(ctx.safe, axis=1) == classes, ctx.dtype)


def _backward_mode(g):
    """Whether backward builds ember ops (create_graph: the gradient is differentiated again), and how it
    turns a constant array into an operand of that kind."""
    if STATE.enabled:
        return True, (lambda a: Tensor._make(a, g._device))
    return False, (lambda a: a)


# -- ops ------------------------------------------------------------------------------------------------------
class NllLoss(Op):
    """``-weight[t] * logp[n, t]`` for each target ``t``, reduced; logp's second derivative is zero."""

    name_ = "nllloss"

    @staticmethod
    def forward(ctx, xp, logp, target, weight, ignore_index=-100, reduction="mean", may_ignore=True):
        _remember_targets(ctx, xp, logp, target, weight, ignore_index, may_ignore)
        picked = _pick(xp, logp, ctx.safe)
        return _reduce(ctx, xp, -picked if ctx.w is None else -picked * ctx.w, reduction)

    @staticmethod
    def backward(ctx, g):
        tensors, operand = _backward_mode(g)
        grad = -(operand(_one_hot(ctx)) * _per_element(ctx, g, ctx.w, tensors))
        return (grad if tensors else Tensor._make(grad, g._device)), None, None


def _softmax_minus_target(probs, hot, coef, ls=0.0, spread=None, class_w=1.0, total_w=1.0):
    """The cross-entropy gradient ``coef * (softmax - one_hot)``, or with label smoothing ``ls`` the softmax
    scaled by the soft target's total minus the soft target ``(1-ls) coef one_hot + spread * class_w``.
    Written with operators only, so it runs on arrays (first order) and on ember tensors (create_graph)."""
    if not ls:
        return (probs - hot) * coef
    nll = coef * (1 - ls)
    return probs * (nll + spread * total_w) - hot * nll - spread * class_w


class CrossEntropy(Op):
    """log-softmax over dimension 1 and the negative log-likelihood of the targets, in one op.

    With label smoothing ``ls`` over ``C`` classes, each kept element's loss is
    ``(1 - ls) * w[t] * -logp[t] + ls / C * sum_c(w[c] * -logp[c])``.
    """

    name_ = "crossentropy"
    backward_name = "NllLossBackward0"  # the node PyTorch's cross_entropy ends in
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, target, weight, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                may_ignore=True):
        _remember_targets(ctx, xp, x, target, weight, ignore_index, may_ignore)
        ctx.label_smoothing = label_smoothing
        compiled = None if may_ignore or weight is not None or label_smoothing else cross_entropy_rows(x, target)
        if compiled is not None:  # the CPU backend's one pass (a plugin's kernel)
            ctx.logp, losses = compiled
            return _reduce(ctx, xp, losses, reduction)
        # an all -inf (or +inf) row gives NaN, as in PyTorch
        z = x - xp.max(x, axis=1, keepdims=True)
        ctx.logp = logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
        picked = _pick(xp, logp, ctx.safe)
        losses = -picked if ctx.w is None else -picked * ctx.w
        if label_smoothing:
            n_classes = x.shape[1]
            per_class = logp if weight is None else logp * xp.reshape(weight, _class_shape(x.ndim, n_classes))
            smooth = -xp.sum(per_class, axis=1)
            if ctx.keep is not None:
                smooth = smooth * xp.astype(ctx.keep, x.dtype)
            losses = (1 - label_smoothing) * losses + (label_smoothing / n_classes) * smooth
        return _reduce(ctx, xp, losses, reduction)

    @staticmethod
    def backward(ctx, g):
        x, _, weight = ctx.saved_tensors
        tensors, operand = _backward_mode(g)
        xp = ctx.xp
        coef = _per_element(ctx, g, ctx.w, tensors)
        ls = ctx.label_smoothing
        compiled = None if tensors or ls or ctx.w is not None else cross_entropy_grad(ctx.logp, ctx.safe, coef)
        if compiled is not None:
            return Tensor._make(compiled, g._device), None, None
        probs = x.softmax(1) if tensors else xp.exp(ctx.logp)
        if not ls:
            grad = _softmax_minus_target(probs, operand(_one_hot(ctx)), coef)
        else:
            n_classes = ctx.shape[1]
            keep = None if ctx.keep is None else xp.astype(ctx.keep, ctx.dtype)
            spread = _per_element(ctx, g, keep, tensors) * (ls / n_classes)
            if weight is None:
                class_w, total_w = 1.0, float(n_classes)
            else:
                class_w = operand(xp.reshape(weight._data, _class_shape(len(ctx.shape), n_classes)))
                total_w = float(xp.sum(weight._data))
            grad = _softmax_minus_target(probs, operand(_one_hot(ctx)), coef, ls, spread, class_w, total_w)
        return (grad if tensors else Tensor._make(grad, g._device)), None, None


# -- argument checks -----------------------------------------------------------------------------------------
def _class_index_layout(input, target):
    """``input`` as ``(N, C, ...)`` and its int64 ``target`` checked against it (PyTorch's messages), and
    whether the input was unbatched ``(C,)``."""
    ishape, tshape = input._data.shape, target._data.shape
    nd, tnd = len(ishape), len(tshape)
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd <= 2 and tnd > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if nd == 1 and tnd == 1 and tshape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {tshape[0]}")
    if nd >= 2 and tnd >= 1 and tshape[0] != ishape[0]:
        raise ValueError(f"Expected input batch_size ({ishape[0]}) to match target batch_size ({tshape[0]}).")
    if nd >= 2 and tuple(tshape) != tuple(ishape[:1] + ishape[2:]):
        raise RuntimeError(f"Expected target size {list(ishape[:1] + ishape[2:])}, got {list(tshape)}")
    if target._dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dtype_name(target)}")
    if target._dtype is dt.uint8:
        target = target.to(dt.int64)
    if nd == 1:
        return input.unsqueeze(0), target.reshape(1), True
    return input, target, False


def _float_input(fn, input):
    if not input._dtype.is_floating_point:
        raise not_implemented_for(fn, input._dtype)


def _class_weight(fn, weight, n_classes, input, prefix=""):
    if weight is None:
        return None
    check_tensor(fn, "weight", 3, weight)
    if weight._data.ndim != 1 or weight.shape[0] != n_classes:
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if weight._dtype is not input._dtype and not autocast_casts(  # under autocast the op casts both to float32
            CrossEntropy.name_ if fn == "cross_entropy" else NllLoss.name_, input):
        raise RuntimeError(f"expected scalar type {dtype_name(input)} but found {dtype_name(weight)}")
    return weight


def _check_targets(target, n_classes, ignore_index) -> bool:
    """PyTorch's ``IndexError`` naming the first target (not ``ignore_index``) outside ``[0, n_classes)``;
    returns whether any target may equal ``ignore_index`` (False lets the op skip masking)."""
    xp = target._device.backend.xp
    flat = xp.reshape(target._data, (-1,))
    if flat.shape[0] == 0:
        return False
    lo, hi = int(xp.min(flat)), int(xp.max(flat))
    if lo >= 0 and hi < n_classes:
        return lo <= ignore_index <= hi
    bad = ((flat < 0) | (flat >= n_classes)) & (flat != ignore_index)
    if bool(xp.any(bad)):
        raise IndexError(f"Target {int(flat[int(xp.argmax(xp.astype(bad, xp.int8)))])} is out of bounds.")
    return True


def _index_targets(fn, input, target, weight, ignore_index):
    """The checked ``(input, target, weight, unbatched, may_ignore)`` of a class-index loss."""
    input, target, unbatched = _class_index_layout(input, target)
    _float_input(fn, input)
    n_classes = input._data.shape[1]
    weight = _class_weight(fn, weight, n_classes, input)
    constant_argument(fn, "weight", weight)
    return input, target, weight, unbatched, _check_targets(target, n_classes, ignore_index)


# -- public functions --------------------------------------------------------------------------------------------
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy between ``softmax(input)`` over dimension 1 (0 for an unbatched ``(C,)`` input) and
    ``target``: class indices (int64, shape ``(N, d1, ...)``) or class probabilities (float, input's shape).

    ``weight`` rescales each class; targets equal to ``ignore_index`` count for nothing (class indices only);
    ``label_smoothing`` mixes the target with the uniform distribution over classes.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> logits = ember.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> F.cross_entropy(logits, ember.tensor([0, 2]), reduction="none")
    tensor([0.2395, 1.0986])
    >>> F.cross_entropy(logits, ember.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), reduction="none")
    tensor([0.2395, 1.0986])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    check_tensor("cross_entropy", "input", 1, input)
    check_tensor("cross_entropy", "target", 2, target)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input._data.shape == target._data.shape:
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing)
    input, target, weight, unbatched, may_ignore = _index_targets("cross_entropy", input, target, weight,
                                                                   ignore_index)
    out = CrossEntropy.apply(input, target, weight, ignore_index=int(ignore_index), reduction=reduction,
                             label_smoothing=float(label_smoothing), may_ignore=may_ignore)
    return out.reshape(()) if unbatched and reduction == "none" else out


def _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing):
    if not target._dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{dtype_name(target)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    nd = input._data.ndim
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    _float_input("cross_entropy", input)
    class_dim = 0 if nd == 1 else 1
    n_classes = input.shape[class_dim]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = input.log_softmax(class_dim) * target
    if weight is not None:
        weight = _class_weight("cross_entropy", weight, n_classes, input, prefix="cross_entropy: ")
        terms = terms * weight.reshape((n_classes,) + (1,) * (nd - class_dim - 1))
    losses = -terms.sum(class_dim)
    if reduction == "mean":
        return losses.sum() / (input.numel() / n_classes)
    return reduce_tensor(losses, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class-index ``target`` given log-probabilities ``input`` (``(N, C, ...)``
    or ``(C,)``): ``-weight[t] * input[n, t]``; 'mean' divides by the summed weights of kept targets.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> logp = ember.tensor([[-0.5, -1.0], [-2.0, -0.1]])
    >>> F.nll_loss(logp, ember.tensor([1, 0]), reduction="none")
    tensor([1., 2.])
    >>> F.nll_loss(logp, ember.tensor([1, 0]), weight=ember.tensor([3.0, 1.0]))
    tensor(1.7500)
    """
    reduction = get_reduction(reduction, size_average, reduce)
    check_tensor("nll_loss", "input", 1, input)
    check_tensor("nll_loss", "target", 2, target)
    input, target, weight, unbatched, may_ignore = _index_targets("nll_loss", input, target, weight, ignore_index)
    out = NllLoss.apply(input, target, weight, ignore_index=int(ignore_index), reduction=reduction,
                        may_ignore=may_ignore)
    return out.reshape(()) if unbatched and reduction == "none" else out


class KlDiv(Op):
    name_ = "kldiv"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, t, reduction="mean", log_target=False):
        ctx.reduction, ctx.log_target = reduction, log_target
        if log_target:
            losses = xp.exp(t) * (t - a)
        else:  # xlogy(t, t) - t * a: t log t is 0 where t == 0 (log(t + 1) there, no where: slow on NumPy)
            losses = t * (xp.log(t + xp.astype(t == 0, t.dtype)) - a)
        return reduce_array(xp, losses, reduction)

    @staticmethod
    def backward(ctx, g):
        a, t = ctx.saved_tensors
        scale = grad_scale(g, ctx.reduction, a.shape)
        need = ctx.needs_input_grad
        if ctx.log_target:
            p = t.exp()
            return (-(p * scale) if need[0] else None), ((p * (t - a + 1) * scale) if need[1] else None)
        # d/dt: log(t) + 1 - a, written with t / t so that t == 0 gives NaN as PyTorch's xlogy gradient does
        return (-(t * scale) if need[0] else None), (((t.log() + t / t - a) * scale) if need[1] else None)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log(target) - input)`` with ``input`` given as
    log-probabilities (and ``target`` too when ``log_target``). ``reduction='batchmean'`` divides the sum by
    the batch size (the true KL divergence); 'mean' divides by the element count, and warns as PyTorch does.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> p = ember.tensor([[0.5, 0.5]])
    >>> F.kl_div(p.log(), p, reduction="batchmean")
    tensor(0.)
    """
    if size_average is not None or reduce is not None:
        reduction = get_reduction(reduction, size_average, reduce)
    else:
        reduction = get_reduction(reduction, allowed=("none", "mean", "sum", "batchmean"))
        if reduction == "mean":
            warn_at_caller("reduction: 'mean' divides the total loss by both the batch size and the support size."
                           "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                           "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    check_tensor("kl_div", "input", 1, input)
    check_tensor("kl_div", "target", 2, target)
    if not input._dtype.is_floating_point or not target._dtype.is_floating_point:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    a, t = broadcast_pair(*promote(input, target), warn=False)
    out = KlDiv.apply(a, t, reduction="sum" if reduction == "batchmean" else reduction, log_target=bool(log_target))
    if reduction == "batchmean" and input._data.ndim:
        return out / input.shape[0]
    return out
