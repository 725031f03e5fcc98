"""ember quickstart: a small neural network learns to tell three interleaved spirals apart.

Everything is the PyTorch you know, with ``torch`` spelled ``ember``: shuffled
mini-batches from ``ember.data``, a model built from ``ember.nn`` layers, a loss
from ``ember.nn.functional``, an optimizer and a learning-rate schedule from
``ember.optim``.

    python examples/quickstart.py
"""
import math

import ember
import ember.nn.functional as F
from ember import nn
from ember.data import DataLoader, TensorDataset

ember.manual_seed(0)

# --- data: 3 spiral arms of 200 points each in 2-D; the label is the arm ------------
classes, per_class = 3, 200
r = ember.linspace(0.1, 1.0, per_class).repeat(classes)
label = ember.arange(classes).repeat_interleave(per_class)
theta = label * (2 * math.pi / classes) + 3.0 * r + 0.1 * ember.randn(classes * per_class)
x = ember.stack([r * ember.cos(theta), r * ember.sin(theta)], dim=1)  # (600, 2)
loader = DataLoader(TensorDataset(x, label), batch_size=60, shuffle=True)


# --- model ----------------------------------------------------------------------------
class SpiralNet(nn.Module):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


model = SpiralNet()
print(model)
optimizer = ember.optim.Adam(model.parameters(), lr=0.01)
scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)

# --- training: 10 mini-batches per epoch ------------------------------------------------
for epoch in range(41):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(yb)
    scheduler.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch:2d}   loss {total / len(x):.4f}   lr {scheduler.get_last_lr()[0]:.4f}")

model.eval()
with ember.no_grad():
    accuracy = (model(x).argmax(dim=1) == label).float().mean().item()
print(f"accuracy {accuracy:.3f}   parameters {sum(p.numel() for p in model.parameters())}")
