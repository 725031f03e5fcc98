"""nn layers and a training loop on ``cuda``: on the CuPy stand-in in CI, on the real GPU where one is."""
import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F


def test_layers_match_the_cpu(cuda_device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 5), nn.LayerNorm(5), nn.Dropout(0.0))
    x = ember.randn(2, 3, 8, 8)
    want = model(x)
    got = model.to(cuda_device)(x.to(cuda_device))
    assert got.device.type == "cuda" and next(model.parameters()).device.type == "cuda"
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_training_step_lowers_the_loss(cuda_device):
    ember.manual_seed(1)
    ember.cuda.manual_seed_all(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(cuda_device)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    x = ember.randn(32, 8, device=cuda_device)
    y = ember.randint(0, 3, (32,), device=cuda_device)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.9
    assert all(p.grad.device.type == "cuda" for p in model.parameters())


def test_training_on_the_second_gpu_keeps_everything_there(cuda_standin):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 2)).to("cuda:1")
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = ember.randn(16, 4, device="cuda:1"), ember.randint(0, 2, (16,), device="cuda:1")
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    arrays = [p._data for p in model.parameters()] + [p.grad._data for p in model.parameters()]
    arrays += [v._data for state in opt.state.values() for v in state.values()
               if isinstance(v, ember.Tensor) and v.device.type == "cuda"]  # (the step count is on the CPU)
    assert {a.device.id for a in arrays} == {1} and ember.cuda.current_device() == 0
