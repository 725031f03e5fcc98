"""Loss modules: thin wrappers over the losses of ``ember.nn.functional``, with PyTorch's constructor arguments.

``reduction`` is 'mean' (default), 'sum' or 'none'; the deprecated
``size_average``/``reduce`` flags still map to it (with PyTorch's warning).
Class weights are buffers (``weight``, ``pos_weight``), so they move with
``.to()`` and appear in ``state_dict()`` when set.

>>> import ember
>>> from ember import nn
>>> loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
>>> loss_fn
CrossEntropyLoss()
>>> loss_fn(ember.zeros(2, 3), ember.tensor([0, 2]))
tensor(1.0986)
"""
from __future__ import annotations

from ember._sibling_api import get_reduction

from .. import functional as F
from .module import Module

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "PoissonNLLLoss", "NLLLoss", "CrossEntropyLoss",
           "KLDivLoss", "BCELoss", "BCEWithLogitsLoss", "SoftMarginLoss", "MarginRankingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss"]


class _Loss(Module):
    """A loss with a ``reduction``, taken from the deprecated ``size_average``/``reduce`` when either is given."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = get_reduction(reduction, size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with per-class ``weight``, kept as a buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|`` (see ``F.l1_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.L1Loss()(ember.tensor([1.0, -3.0]), ember.tensor([0.0, 0.0]))
    tensor(2.)
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error ``(input - target) ** 2`` (see ``F.mse_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.MSELoss(reduction="sum")(ember.tensor([1.0, 2.0]), ember.tensor([0.0, 0.0]))
    tensor(5.)
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic for ``|input - target| < beta``, linear beyond (see ``F.smooth_l1_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.SmoothL1Loss(beta=2.0, reduction="none")(ember.tensor([1.0, 3.0]), ember.tensor([0.0, 0.0]))
    tensor([0.2500, 2.0000])
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic for ``|input - target| < delta``, linear with slope ``delta`` beyond (see ``F.huber_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.HuberLoss(delta=2.0, reduction="none")(ember.tensor([1.0, 3.0]), ember.tensor([0.0, 0.0]))
    tensor([0.5000, 4.0000])
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class PoissonNLLLoss(_Loss):
    """Negative log likelihood of a Poisson-distributed target (see ``F.poisson_nll_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.PoissonNLLLoss()(ember.tensor([0.0]), ember.tensor([2.0]))
    tensor(1.)
    """

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-08,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of class-index targets given log-probabilities (see ``F.nll_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.NLLLoss()(ember.tensor([[-0.5, -2.0], [-3.0, -0.1]]), ember.tensor([0, 1]))
    tensor(0.3000)
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities (see ``F.cross_entropy``).

    >>> import ember
    >>> from ember import nn
    >>> loss_fn = nn.CrossEntropyLoss(weight=ember.tensor([1.0, 3.0]), ignore_index=-1)
    >>> list(loss_fn.state_dict())
    ['weight']
    >>> loss_fn(ember.zeros(3, 2), ember.tensor([0, 1, -1]))
    tensor(0.6931)
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of ``target`` from log-probabilities ``input`` (see ``F.kl_div``);
    ``reduction='batchmean'`` gives the true divergence.

    >>> import ember
    >>> from ember import nn
    >>> p = ember.tensor([[0.25, 0.75]])
    >>> nn.KLDivLoss(reduction="batchmean")(p.log(), p)
    tensor(0.)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities (see ``F.binary_cross_entropy``).

    >>> import ember
    >>> from ember import nn
    >>> nn.BCELoss()(ember.tensor([0.5, 0.5]), ember.tensor([1.0, 0.0]))
    tensor(0.6931)
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, numerically stable, with ``pos_weight`` for the positive class
    (see ``F.binary_cross_entropy_with_logits``).

    >>> import ember
    >>> from ember import nn
    >>> loss_fn = nn.BCEWithLogitsLoss(pos_weight=ember.tensor([2.0]))
    >>> list(loss_fn.state_dict())
    ['pos_weight']
    >>> loss_fn(ember.zeros(2, 1), ember.ones(2, 1))
    tensor(1.3863)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-target * input))`` (see ``F.soft_margin_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.SoftMarginLoss()(ember.tensor([0.0]), ember.tensor([1.0]))
    tensor(0.6931)
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -target * (input1 - input2) + margin)`` (see ``F.margin_ranking_loss``).

    >>> import ember
    >>> from ember import nn
    >>> nn.MarginRankingLoss(margin=1.0)(ember.tensor([2.0]), ember.tensor([1.5]), ember.tensor([1.0]))
    tensor(0.5000)
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for similar pairs (target 1), ``max(0, cos - margin)`` for dissimilar ones (target -1)
    (see ``F.cosine_embedding_loss``).

    >>> import ember
    >>> from ember import nn
    >>> x = ember.tensor([[1.0, 0.0]])
    >>> nn.CosineEmbeddingLoss()(x, ember.tensor([[0.0, 1.0]]), ember.tensor([1.0]))
    tensor(1.)
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, d(anchor, positive) - d(anchor, negative) + margin)`` with the ``p``-norm distance
    (see ``F.triplet_margin_loss``).

    >>> import ember
    >>> from ember import nn
    >>> a = ember.zeros(1, 2)
    >>> nn.TripletMarginLoss(eps=0.0)(a, ember.tensor([[0.0, 1.0]]), ember.tensor([[0.0, 3.0]]))
    tensor(0.)
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)
