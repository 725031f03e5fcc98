"""A model converted with ``Module.bfloat16()`` / ``.half()`` trains in that dtype: forward, backward and the
optimizer's step keep the parameters, gradients and optimizer state in it, and the loss goes down."""
import pytest

import ember
from ember import nn


@pytest.mark.parametrize("dtype, convert", [(ember.bfloat16, "bfloat16"), (ember.float16, "half")], ids=str)
def test_a_reduced_precision_model_trains_in_its_dtype(dtype, convert):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    getattr(model, convert)()
    assert model[1].num_batches_tracked.dtype is ember.int64  # floating parameters and buffers only
    # SGD: Adam's eps (1e-8) is 0 in float16, and PyTorch's float16 Adam gives NaN on this model too
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ember.randn(16, 1, 8, 8).to(dtype)
    y = ember.randint(0, 3, (16,))
    losses = []
    for _ in range(15):
        opt.zero_grad()
        out = model(x)
        assert out.dtype is dtype
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype is dtype and p.grad.dtype is dtype for p in model.parameters())
    assert all(state["momentum_buffer"].dtype is dtype for state in opt.state.values())
    assert model[1].running_var.dtype is dtype
    assert losses[-1] < 0.01 * losses[0], losses  # PyTorch: 0.92 to 0.0004 (both dtypes)
