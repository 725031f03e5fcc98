"""Normalisation layers: BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm, GroupNorm.

>>> import ember
>>> from ember import nn
>>> bn = nn.BatchNorm2d(64)
>>> bn
BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
>>> list(bn.state_dict())
['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
"""
from __future__ import annotations

import numbers

import ember
from ember import no_grad

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm"]


def _affine_params(module, shape, affine, bias, factory):
    """Register ``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None for those switched off."""
    if affine:
        module.weight = Parameter(ember.ones(shape, **factory))
    else:
        module.register_parameter("weight", None)
    if affine and bias:
        module.bias = Parameter(ember.zeros(shape, **factory))
    else:
        module.register_parameter("bias", None)


class _BatchNorm(Module):
    """Batch normalisation over dim 1 with running statistics; subclasses say which input ranks they take."""

    _version = 2
    #: the input ranks the layer accepts and how PyTorch words them in its error
    _ranks: tuple = ()
    _rank_words = ""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_params(self, num_features, affine, bias, factory)
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, **factory))
            self.register_buffer("running_var", ember.ones(num_features, **factory))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, and the weight to ones and bias to zeros."""
        self.reset_running_stats()
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def _check_input(self, input) -> None:
        if input.ndim not in self._ranks:
            raise ValueError(f"expected {self._rank_words} input (got {input.ndim}D input): {self._get_name()}"
                             f"({self.num_features}) got input of size {list(input.shape)}")
        if (self.affine or self.track_running_stats) and input.shape[1] != self.num_features:
            raise RuntimeError(f"{self._get_name()}({self.num_features}): expected input with {self.num_features} "
                               f"channels (dim 1), got input of size {list(input.shape)}")

    def forward(self, input):
        self._check_input(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average: every batch counts the same
                factor = 1.0 / float(self.num_batches_tracked.item())
        # batch statistics in training, and in evaluation too when there are no running statistics
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep_running else None,
                            self.running_var if keep_running else None, self.weight, self.bias, use_batch_stats,
                            factor, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            # a checkpoint without the counter (PyTorch < 0.4.1) keeps the current count (0 when fresh)
            current = self.num_batches_tracked
            state_dict[key] = current if current is not None else ember.tensor(0, dtype=ember.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs, per channel ``C``.

    In training the batch's mean and (biased) variance normalise the input,
    and ``running_mean``/``running_var`` follow them with ``momentum`` (the
    unbiased variance; ``momentum=None`` gives a cumulative average); in
    evaluation (``eval()``) the running statistics are used.

    >>> import ember
    >>> bn = ember.nn.BatchNorm1d(2)
    >>> bn(ember.tensor([[1.0, 0.0], [3.0, 0.0]]))
    tensor([[-1.0000,  0.0000],
            [ 1.0000,  0.0000]], grad_fn=<NativeBatchNormBackward0>)
    >>> bn.running_mean, bn.running_var, bn.num_batches_tracked
    (tensor([0.2000, 0.0000]), tensor([1.1000, 0.9000]), tensor(1))
    """

    _ranks = (2, 3)
    _rank_words = "2D or 3D"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs, per channel ``C`` (see :class:`BatchNorm1d`).

    >>> import ember
    >>> ember.nn.BatchNorm2d(3).eval()(ember.ones(1, 3, 2, 2)).shape
    ember.Size([1, 3, 2, 2])
    """

    _ranks = (4,)
    _rank_words = "4D"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` inputs, per channel ``C`` (see :class:`BatchNorm1d`).

    >>> import ember
    >>> ember.nn.BatchNorm3d(2)(ember.randn(2, 2, 1, 2, 2)).shape
    ember.Size([2, 2, 1, 2, 2])
    """

    _ranks = (5,)
    _rank_words = "5D"


class LayerNorm(Module):
    """Normalise over the trailing dimensions given by ``normalized_shape`` (an int or a shape), then scale by
    ``weight`` and shift by ``bias`` (both of that shape) when ``elementwise_affine``.

    >>> import ember
    >>> ln = ember.nn.LayerNorm(2)
    >>> ln
    LayerNorm((2,), eps=1e-05, elementwise_affine=True, bias=True)
    >>> ln(ember.tensor([[1.0, 3.0]]))
    tensor([[-1.0000,  1.0000]], grad_fn=<NativeLayerNormBackward0>)
    """

    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, self.normalized_shape, elementwise_affine, bias, {"device": device, "dtype": dtype})

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input):
        try:
            return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)
        except RuntimeError as exc:
            raise RuntimeError(f"{self._get_name()}{self.normalized_shape}: {exc}") from None

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the ``num_channels`` channels into ``num_groups`` groups and normalise each group of each sample;
    ``affine`` adds a per-channel ``weight`` and ``bias``.

    >>> import ember
    >>> gn = ember.nn.GroupNorm(2, 4)
    >>> gn
    GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
    >>> gn(ember.tensor([[1.0, 3.0, 5.0, 5.0]]))
    tensor([[-1.0000,  1.0000,  0.0000,  0.0000]], grad_fn=<NativeGroupNormBackward0>)
    """

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_params(self, num_channels, affine, bias, {"device": device, "dtype": dtype})

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input):
        if input.ndim >= 2 and input.shape[1] != self.num_channels:
            raise RuntimeError(f"{self._get_name()}({self.num_groups}, {self.num_channels}): expected input with "
                               f"{self.num_channels} channels (dim 1), got input of size {list(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
