"""Losses as ops, one module per group; ``ember.nn.functional`` exports every name in ``__all__``.

- ``loss_regression``: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``poisson_nll_loss``
- ``loss_classification``: ``cross_entropy``, ``nll_loss``, ``kl_div``
- ``loss_binary``: ``binary_cross_entropy``, ``binary_cross_entropy_with_logits``, ``soft_margin_loss``
- ``loss_embedding``: ``margin_ranking_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``

Every loss takes ``reduction`` ('none', 'mean' or 'sum'; ``kl_div`` also
'batchmean') and PyTorch's deprecated ``size_average``/``reduce`` flags where
PyTorch does.

>>> import ember
>>> import ember.nn.functional as F
>>> F.cross_entropy(ember.tensor([[0.0, 0.0]]), ember.tensor([1]), label_smoothing=0.5)
tensor(0.6931)
"""
from .loss_binary import binary_cross_entropy, binary_cross_entropy_with_logits, soft_margin_loss
from .loss_classification import cross_entropy, kl_div, nll_loss
from .loss_embedding import cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss
from .loss_regression import huber_loss, l1_loss, mse_loss, poisson_nll_loss, smooth_l1_loss

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss", "cross_entropy", "nll_loss",
           "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss",
           "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss"]
