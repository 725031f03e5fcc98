"""cross_entropy (class indices and class probabilities), nll_loss and kl_div: values against NumPy
references, PyTorch's semantics for weights, ignore_index and label smoothing, gradients (first and second),
dtypes and errors."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64

REDUCTIONS = ["none", "mean", "sum"]
N_CLASSES = 4


def _np(t):
    return t.detach().numpy(force=True)


def np_log_softmax_rows(rows):
    out = np.empty_like(rows)
    for i, r in enumerate(rows):
        m = r.max()
        out[i] = r - (m + math.log(sum(math.exp(v - m) for v in r)))
    return out


def np_class_rows(x):
    """``(N, C, d1, ...)`` as ``(N * d1 * ..., C)`` rows, in the order of the targets' flattening."""
    return np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def np_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                     log_probs=False):
    """PyTorch's cross entropy (or nll_loss when ``log_probs``), one row at a time."""
    x = np.asarray(x, dtype=np.float64)
    target = np.asarray(target)
    unbatched = x.ndim == 1
    if unbatched:
        x, target = x[None], target.reshape(1, *target.shape)
    n_classes = x.shape[1]
    logp = np_class_rows(x) if log_probs else np_log_softmax_rows(np_class_rows(x))
    w = np.ones(n_classes) if weight is None else np.asarray(weight, dtype=np.float64)
    ls = label_smoothing
    if target.shape == x.shape:  # class probabilities, mixed with the uniform distribution
        probs = np_class_rows(target) * (1 - ls) + ls / n_classes
        losses = [-np.sum(w * probs[i] * logp[i]) for i in range(len(logp))]
        count, out_shape = len(logp), x.shape[:1] + x.shape[2:]
    else:
        losses, count = [], 0.0
        for i, y in enumerate(target.reshape(-1)):
            if y == ignore_index:
                losses.append(0.0)
                continue
            losses.append((1 - ls) * -w[y] * logp[i, y] + ls / n_classes * -np.sum(w * logp[i]))
            count += w[y]
        out_shape = target.shape
    losses = np.array(losses)
    if reduction == "none":
        return losses.reshape(out_shape)[0] if unbatched else losses.reshape(out_shape)
    return losses.sum() if reduction == "sum" else losses.sum() / count


def _targets(shape, seed, ignore=None):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, N_CLASSES, size=shape)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore  # every third target ignored
    return t


def _weight(device, seed=9):
    return ember.tensor(np.random.default_rng(seed).uniform(0.2, 2.0, N_CLASSES), dtype=ember.float64,
                        device=device)


OPTIONS = {  # name: (use weight, ignore_index or None, label_smoothing)
    "plain": (False, None, 0.0),
    "weight": (True, None, 0.0),
    "ignore": (False, -100, 0.0),
    "ignore_in_range": (False, 1, 0.0),
    "weight_ignore": (True, -100, 0.0),
    "smoothing": (False, None, 0.1),
    "weight_ignore_smoothing": (True, -100, 0.3),
}


def _case(option, extra_dims, device, seed=0):
    use_weight, ignore, ls = OPTIONS[option]
    shape = (3, N_CLASSES) + (2,) * extra_dims
    x = rand64(*shape, device=device, low=-3, high=3, seed=seed)
    t = _targets(shape[:1] + shape[2:], seed + 1, ignore)
    kwargs = {"label_smoothing": ls}
    if ignore is not None:
        kwargs["ignore_index"] = ignore
    if use_weight:
        kwargs["weight"] = _weight(device)
    return x, t, kwargs


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("extra_dims", [0, 1, 2])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_indices_match_numpy(option, extra_dims, reduction, device):
    x, t, kwargs = _case(option, extra_dims, device)
    out = F.cross_entropy(x, ember.tensor(t, device=device), reduction=reduction, **kwargs)
    ref_kwargs = dict(kwargs, weight=None if "weight" not in kwargs else _np(kwargs["weight"]))
    want = np_cross_entropy(_np(x), t, reduction=reduction, **ref_kwargs)
    assert tuple(out.shape) == np.shape(want)
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)
    if not kwargs["label_smoothing"]:
        nll = F.nll_loss(x.log_softmax(1), ember.tensor(t, device=device), reduction=reduction,
                         **{k: v for k, v in kwargs.items() if k != "label_smoothing"})
        np.testing.assert_allclose(_np(nll), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("extra_dims", [0, 1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_probabilities_match_numpy(extra_dims, weighted, label_smoothing, reduction, device):
    shape = (3, N_CLASSES) + (2,) * extra_dims
    x = rand64(*shape, device=device, low=-3, high=3, seed=1)
    p = rand64(*shape, device=device, low=0, high=1, seed=2)
    p = p / p.sum(1, keepdim=True)
    w = _weight(device) if weighted else None
    out = F.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=label_smoothing)
    want = np_cross_entropy(_np(x), _np(p), None if w is None else _np(w), reduction=reduction,
                            label_smoothing=label_smoothing)
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)
    check_grads(lambda a, b: F.cross_entropy(a, b, weight=w, reduction=reduction, label_smoothing=label_smoothing),
                x, p, gradgrad=reduction == "mean")


def test_hand_value_checked_against_pytorch():
    # read from PyTorch 2.13 by hand: (2, 3, 2) logits, weight, ignore_index=-1 and label_smoothing=0.2
    x = ember.tensor([[[1.0, -0.5], [2.0, 0.0], [0.5, 1.5]], [[0.1, 0.3], [-1.0, 0.2], [2.0, -2.0]]],
                     requires_grad=True)
    t = ember.tensor([[2, 0], [-1, 1]])
    w = ember.tensor([0.5, 2.0, 1.0])
    loss = F.cross_entropy(x, t, weight=w, ignore_index=-1, label_smoothing=0.2)
    loss.backward()
    assert loss.item() == pytest.approx(1.3359929, rel=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [[[0.058742, -0.105782], [0.147471, -0.008374],
                                                 [-0.206214, 0.114156]],
                                                [[0.0, 0.251715], [0.0, -0.258859], [0.0, 0.007144]]], atol=2e-6)
    none = F.cross_entropy(x, t, weight=w, ignore_index=-1, label_smoothing=0.2, reduction="none")
    np.testing.assert_allclose(none.detach().numpy(), [[1.813181, 1.260692], [0.0, 1.602102]], atol=2e-6)
    assert F.nll_loss(x, t, weight=w, ignore_index=-1).item() == pytest.approx(-0.185714, abs=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unbatched_input(reduction, device):
    x = rand64(N_CLASSES, device=device, seed=3)
    for target in (ember.tensor(2, device=device), ember.tensor([2], device=device)):
        out = F.cross_entropy(x, target, reduction=reduction, label_smoothing=0.1)
        assert out.shape == ()
        assert out.item() == pytest.approx(np_cross_entropy(_np(x), 2, reduction=reduction, label_smoothing=0.1))
    p = ember.tensor([0.1, 0.2, 0.3, 0.4], dtype=ember.float64, device=device)
    out = F.cross_entropy(x, p, reduction=reduction)
    assert out.shape == () and out.item() == pytest.approx(np_cross_entropy(_np(x), _np(p), reduction=reduction))
    nll = F.nll_loss(x, ember.tensor(1, device=device), weight=_weight(device), reduction=reduction)
    weighted = -_np(x)[1] * _np(_weight(device))[1]
    assert nll.shape == () and nll.item() == pytest.approx(weighted / _np(_weight(device))[1] if reduction == "mean"
                                                           else weighted)
    check_grads(lambda a: F.cross_entropy(a, ember.tensor(2, device=device), reduction=reduction), x)


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_gradients(option, reduction, device):
    x, t, kwargs = _case(option, 1, device, seed=4)
    target = ember.tensor(t, device=device)
    check_grads(lambda a: F.cross_entropy(a, target, reduction=reduction, **kwargs), x)
    kwargs.pop("label_smoothing")
    check_grads(lambda a: F.nll_loss(a, target, reduction=reduction, **kwargs), x)


@pytest.mark.parametrize("option", ["plain", "weight_ignore", "weight_ignore_smoothing", "smoothing"])
@pytest.mark.parametrize("extra_dims", [0, 1])
def test_cross_entropy_double_backward(option, extra_dims, device):
    x, t, kwargs = _case(option, extra_dims, device, seed=5)
    target = ember.tensor(t, device=device)
    for reduction in ("mean", "none"):
        check_grads(lambda a: F.cross_entropy(a, target, reduction=reduction, **kwargs), x, gradgrad=True)
    kwargs.pop("label_smoothing")
    check_grads(lambda a: F.nll_loss(a.log_softmax(1), target, **kwargs), x, gradgrad=True)


def test_first_order_and_create_graph_backwards_agree():
    """The first-order backward runs on arrays; with create_graph it is built from ember ops: same values."""
    for option in OPTIONS:
        x, t, kwargs = _case(option, 1, "cpu", seed=6)
        for reduction in REDUCTIONS:
            loss = F.cross_entropy(x, ember.tensor(t), reduction=reduction, **kwargs)
            g = ember.ones(loss.shape, dtype=ember.float64) * 0.7
            plain, = ember.autograd.grad(loss, x, g, retain_graph=True)
            graph, = ember.autograd.grad(loss, x, g, create_graph=True)
            assert not plain.requires_grad and graph.requires_grad
            np.testing.assert_allclose(_np(plain), _np(graph), rtol=1e-13, atol=1e-15)


def test_ignored_targets():
    x = rand64(3, N_CLASSES, seed=7)
    ignored = ember.tensor([-100, -100, -100])
    assert math.isnan(F.cross_entropy(x, ignored).item())  # 0 / 0, as PyTorch
    assert F.cross_entropy(x, ignored, reduction="sum").item() == 0.0
    assert math.isnan(F.nll_loss(x, ignored, weight=_weight("cpu")).item())
    t = ember.tensor([1, -100, 3])
    g, = ember.autograd.grad(F.cross_entropy(x, t, label_smoothing=0.2), x)
    assert _np(g)[1].tolist() == [0.0] * N_CLASSES and np.abs(_np(g)[0]).sum() > 0
    # an ignore_index that is a class of the input: those targets count for nothing
    loss = F.cross_entropy(x, ember.tensor([1, 2, 1]), ignore_index=1, reduction="none")
    assert _np(loss)[[0, 2]].tolist() == [0.0, 0.0] and _np(loss)[1] > 0


def test_masked_logits_and_extreme_values():
    x = ember.tensor([[0.0, -math.inf, 0.0]], requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor([0]))
    loss.backward()
    assert loss.item() == pytest.approx(math.log(2)) and x.grad.tolist() == [[-0.5, 0.0, 0.5]]  # as PyTorch
    big = ember.tensor([[1000.0, -1000.0], [-1000.0, 1000.0]])
    assert F.cross_entropy(big, ember.tensor([0, 0]), reduction="none").tolist() == [0.0, 2000.0]


def test_float32_stays_float32_and_byte_targets(device):
    x = ember.ones(3, N_CLASSES, device=device, requires_grad=True)
    for target in (ember.tensor([0, 1, 3], device=device), ember.tensor([0, 1, 3], dtype=ember.uint8, device=device)):
        for kwargs in ({}, {"label_smoothing": 0.1, "weight": ember.ones(N_CLASSES, device=device)}):
            loss = F.cross_entropy(x, target, **kwargs)
            g, = ember.autograd.grad(loss, x)
            assert loss.dtype == ember.float32 and g.dtype == ember.float32
            assert loss.item() == pytest.approx(math.log(N_CLASSES))
    assert F.nll_loss(x, ember.tensor([0, 1, 3], device=device)).dtype == ember.float32


def test_grad_fn_names_and_weight_without_gradient():
    x = rand64(2, 3, seed=1)
    t = ember.tensor([0, 2])
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"  # as PyTorch, whose cross_entropy ends in it
    assert F.nll_loss(x, t).grad_fn.name() == "NllLossBackward0"
    w = ember.ones(3, dtype=ember.float64, requires_grad=True)
    for fn, name in ((F.cross_entropy, "cross_entropy"), (F.nll_loss, "nll_loss")):
        with pytest.raises(RuntimeError, match=f"The function '{name}' is not differentiable with respect to "
                                               "argument 'weight'. This input cannot have requires_grad True."):
            fn(x, t, weight=w)
        with ember.no_grad():
            fn(x, t, weight=w)


@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
def test_class_index_errors(fn):
    x = ember.zeros(3, N_CLASSES)
    t = ember.tensor([0, 1, 3])
    cases = [
        (IndexError, r"Target 5 is out of bounds\.", (x, ember.tensor([0, 5, 1])), {}),
        (IndexError, r"Target -1 is out of bounds\.", (x, ember.tensor([0, -1, 1])), {}),
        (IndexError, r"Target 7 is out of bounds\.", (ember.zeros(2, N_CLASSES, 3), ember.full((2, 3), 7)), {}),
        (IndexError, r"Target 9 is out of bounds\.", (x, ember.tensor([-100, 9, 1])), {}),  # ignored ones skipped
        (ValueError, r"Expected input batch_size \(3\) to match target batch_size \(2\)\.",
         (x, ember.tensor([0, 1])), {}),
        (RuntimeError, r"Expected target size \[2, 3\], got \[2, 2\]",
         (ember.zeros(2, N_CLASSES, 3), ember.zeros(2, 2, dtype=ember.int64)), {}),
        (RuntimeError, r"0D or 1D target tensor expected, multi-target not supported",
         (x, ember.zeros(3, 2, dtype=ember.int64)), {}),
        (ValueError, r"For 1D input, 1D target must have size 1, but got target size: 3", (x[0], t), {}),
        (RuntimeError, r"expected target dtype to be Long or Byte, but got Float", (x, ember.tensor([0.0, 1, 3])), {}),
        (RuntimeError, r"expected target dtype to be Long or Byte, but got Int",
         (x, ember.tensor([0, 1, 3], dtype=ember.int32)), {}),
        (RuntimeError, r"weight tensor should be defined either for all 4 classes or no classes but got weight "
                       r"tensor of shape: \[3\]", (x, t), {"weight": ember.ones(3)}),
        (RuntimeError, r"weight tensor should be defined either for all 4 classes or no classes but got weight "
                       r"tensor of shape: \[4, 1\]", (x, t), {"weight": ember.ones(4, 1)}),
        (RuntimeError, r"expected scalar type Float but found Double", (x, t), {"weight": ember.ones(4).double()}),
        (ValueError, r"avg is not a valid value for reduction", (x, t), {"reduction": "avg"}),
        (TypeError, r"argument 'target' \(position 2\) must be Tensor, not list", (x, [0, 1, 3]), {}),
        (NotImplementedError, r"not implemented for 'Long'", (ember.zeros(3, 4, dtype=ember.int64), t), {}),
    ]
    for error, message, args, kwargs in cases:
        with pytest.raises(error, match=message):
            fn(*args, **kwargs)
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(ember.tensor(1.0), ember.tensor(0))


def test_cross_entropy_specific_errors():
    x = ember.zeros(3, N_CLASSES)
    t = ember.tensor([0, 1, 3])
    for ls in (1.5, -0.1):
        with pytest.raises(RuntimeError, match=f"label_smoothing must be between 0.0 and 1.0. Got: {ls}"):
            F.cross_entropy(x, t, label_smoothing=ls)
    probs = ember.full((3, N_CLASSES), 0.25)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, probs, ignore_index=1)
    assert F.cross_entropy(x, probs, ignore_index=-5).item() == pytest.approx(math.log(N_CLASSES))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, "
                                           "got Long"):
        F.cross_entropy(x, ember.zeros(3, N_CLASSES, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"cross_entropy: weight tensor should be defined either for all 4 "
                                           r"classes or no classes but got weight tensor of shape: \[3\]"):
        F.cross_entropy(x, probs, weight=ember.ones(3))
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert F.cross_entropy(x, t, reduce=False).shape == (3,)


# -- kl_div --------------------------------------------------------------------------------------------------------
def np_kl_div(x, t, log_target):
    out = np.zeros(np.broadcast_shapes(x.shape, t.shape))
    xs, ts = np.broadcast_to(x, out.shape), np.broadcast_to(t, out.shape)
    for i in np.ndindex(out.shape):
        if log_target:
            out[i] = math.exp(ts[i]) * (ts[i] - xs[i])
        else:
            out[i] = 0.0 if ts[i] == 0 else ts[i] * (math.log(ts[i]) - xs[i])
    return out


@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean", "mean"])
def test_kl_div_matches_numpy(log_target, reduction, device):
    x = rand64(3, N_CLASSES, device=device, low=-3, high=0, seed=1)
    t = rand64(3, N_CLASSES, device=device, low=-2 if log_target else 0.05, high=1, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.kl_div(x, t, reduction=reduction, log_target=log_target)
        elems = np_kl_div(_np(x), _np(t), log_target)
        want = {"none": elems, "sum": elems.sum(), "batchmean": elems.sum() / 3, "mean": elems.mean()}[reduction]
        np.testing.assert_allclose(_np(out), want, rtol=1e-12)
        check_grads(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target), x, t, gradgrad=True)


def test_kl_div_semantics():
    # 'mean' warns as PyTorch does; batchmean of a 0-dim input is the sum (PyTorch divides only when dim > 0)
    x, t = ember.tensor([[-1.0, -2.0]]), ember.tensor([[0.5, 0.5]])
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size and the "
                                         "support size."):
        F.kl_div(x, t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.kl_div(x, t, reduction="batchmean").item() == pytest.approx(0.8068528)  # PyTorch, by hand
        assert F.kl_div(ember.tensor(-1.0), ember.tensor(0.5), reduction="batchmean").item() == pytest.approx(0.1534264)
    # a zero target contributes 0; its gradient wrt the target is NaN, as PyTorch's xlogy gives
    xg = ember.tensor([-1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
    tg = ember.tensor([0.0, 0.5, 2.0], dtype=ember.float64, requires_grad=True)
    out = F.kl_div(xg, tg, reduction="none")
    np.testing.assert_allclose(_np(out), [0.0, 0.653426, 0.386294], atol=1e-6)  # PyTorch, by hand
    gx, gt = ember.autograd.grad(out.sum(), (xg, tg))
    assert _np(gx).tolist() == [-0.0, -0.5, -2.0] and math.isnan(_np(gt)[0])
    np.testing.assert_allclose(_np(gt)[1:], [math.log(0.5) + 1 + 2.0, math.log(2.0) + 1 - 0.5])
    # broadcasting without a warning; integer inputs are refused
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.kl_div(ember.zeros(3, 4), ember.ones(4), reduction="none").shape == (3, 4)
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported."):
        F.kl_div(ember.zeros(3), ember.ones(3, dtype=ember.int64), reduction="sum")
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.kl_div(x, t, reduction="avg")
    assert F.kl_div(x.double(), t, reduction="sum").dtype == ember.float64
