"""``SyncBatchNorm``: batch normalisation whose batch statistics are those of all ranks' batches together, with
PyTorch's name and ``convert_sync_batchnorm``.

In training, each rank's per-channel sums travel in one all-reduce (then the sums of squared deviations in a
second, for an exact variance), so every rank normalises with the mean and variance of the concatenated batch;
ranks may hold batches of different sizes. The all-reduces are differentiable (their gradient is the all-reduce of
the gradient), so gradients equal BatchNorm's on the concatenated batch. In evaluation, or on a single rank, it
is a plain BatchNorm.
"""
from __future__ import annotations

import ember
import ember.distributed as dist
from ember.autograd import Function

# nn's base of the BatchNorm layers: SyncBatchNorm is one of them (as in PyTorch), and convert_sync_batchnorm finds
# the layers to convert by it
from ember.nn.modules.normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """The sum over the ranks of ``group``, differentiable: the gradient is the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        out = x.detach().clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over dim 1 of inputs of 2 or more dimensions, with the batch statistics of all ranks of
    ``process_group`` (None: the default group) in training.

    >>> import ember
    >>> from ember.parallel import SyncBatchNorm
    >>> bn = SyncBatchNorm(3)
    >>> bn
    SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> bn(ember.ones(2, 3)).shape  # no process group: a plain BatchNorm
    ember.Size([2, 3])
    """

    _ranks = (2, 3, 4, 5, 6)
    _rank_words = "at least 2D"

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        if not self.training or not dist.is_initialized() or dist.get_world_size(self.process_group) == 1:
            return super().forward(input)
        self._check_input(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        channels = input.shape[1]
        dims = [0, *range(2, input.ndim)]
        shape = [1, channels] + [1] * (input.ndim - 2)
        # the count in float32 (float64 for float64 input) on the input's device: in bf16 or fp16 counts round
        count_dtype = ember.float64 if input.dtype == ember.float64 else ember.float32
        count = ember.tensor([float(input.numel() // max(channels, 1))], dtype=count_dtype, device=input.device)
        sums = _AllReduceSum.apply(ember.cat([input.sum(dims).to(count_dtype), count]), self.process_group)
        total = float(sums[channels].item())
        if total <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel over all ranks in training, "
                             f"got input of size {list(input.shape)} and {int(total)} values in all")
        mean = (sums[:channels] / total).to(input.dtype)
        centred = input - mean.reshape(shape)
        var = _AllReduceSum.apply((centred * centred).sum(dims), self.process_group) / total
        out = centred * (var + self.eps).rsqrt().reshape(shape)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None:
            with ember.no_grad():
                self.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
                self.running_var.mul_(1 - factor).add_(var.detach() * (total / (total - 1) * factor))
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer in it replaced by a SyncBatchNorm holding the same parameters
        (the same tensors) and buffers; ``module`` itself if it is not one.

        >>> import ember
        >>> from ember import nn
        >>> from ember.parallel import SyncBatchNorm
        >>> net = SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4)))
        >>> type(net[1]).__name__
        'SyncBatchNorm'
        """
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            like = module.running_mean if module.running_mean is not None else module.weight
            factory = {} if like is None else {"device": like.device, "dtype": like.dtype}
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None, **factory)
            if module.weight is not None:
                converted.weight = module.weight
            if module.bias is not None:
                converted.bias = module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(converted, name, getattr(module, name))
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
