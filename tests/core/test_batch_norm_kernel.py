"""The CPU backend's ``batch_norm`` kernel (running statistics) gives, bit for bit, what the op's array-API forward
gives, in one compiled pass where a plugin compiles it (ember-numba) and through that forward otherwise."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends.cpu_kernels import normalization
from ember.ops.normalization import BatchNormInference


class Ctx:
    """What an op's context is to a kernel: attributes set on it."""


def _arrays(shape, dtype, affine, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    stats = [rng.standard_normal(c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype)]
    params = [rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)] if affine else [None, None]
    return x, *stats, *params


@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 7), (3, 8, 16, 16), (2, 2, 3, 4, 5), (4, 16, 32, 32), (2, 64, 2000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_the_kernel_equals_the_op_forward_bit_for_bit(shape, dtype, affine):
    arrays = _arrays(shape, dtype, affine)
    ctx, ref_ctx = Ctx(), Ctx()
    got = normalization.batch_norm(ctx, np, *arrays, eps=1e-3)
    ref = BatchNormInference.forward(ref_ctx, np, *arrays, eps=1e-3)
    assert got.dtype == ref.dtype == dtype and ctx.eps == ref_ctx.eps == 1e-3
    np.testing.assert_array_equal(got, ref)


def test_the_compiled_pass_serves_large_inputs():
    pytest.importorskip("ember_numba")
    assert ember._plugins.cpu_kernel("channel_affine", 4 * 16 * 32 * 32) is not None  # the shapes above reach it


def test_a_strided_input_runs_the_op_forward():
    x, *rest = _arrays((3, 8, 16, 32), np.float32, True)
    view = x[..., ::2]
    np.testing.assert_array_equal(normalization.batch_norm(Ctx(), np, view, *rest),
                                  BatchNormInference.forward(Ctx(), np, view, *rest))


def test_eval_batch_norm_module_uses_it_and_differentiates():
    bn = ember.nn.BatchNorm2d(4).eval()
    bn.running_mean.copy_(ember.tensor([0.1, -0.2, 0.3, 0.0]))
    x = ember.randn(2, 4, 8, 8, requires_grad=True)
    out = bn(x)
    scale = (bn.weight / (bn.running_var + bn.eps).sqrt()).detach().numpy()
    expect = (x.detach().numpy() - bn.running_mean.numpy()[:, None, None]) * scale[:, None, None] + \
        bn.bias.detach().numpy()[:, None, None]
    np.testing.assert_allclose(out.detach().numpy(), expect, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(scale[:, None, None], x.shape), rtol=1e-6)
