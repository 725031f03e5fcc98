"""End to end: an MLP and a small CNN learn synthetic tasks to a stated accuracy in a fixed number of steps.

The data are made here (no downloads); seeds are fixed, so each run is the same run.
"""
import numpy as np

import ember
import ember.nn.functional as F
from ember import nn


def accuracy(logits, labels) -> float:
    return (logits.argmax(1) == labels).float().mean().item()


def spirals(n_per_class: int, classes: int, rng) -> tuple:
    """Interleaved 2-D spirals, one arm per class: not linearly separable."""
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.1, 1.0, n_per_class)
        theta = c * 2 * np.pi / classes + 3.0 * r + rng.normal(0, 0.1, n_per_class)
        xs.append(np.stack([r * np.cos(theta), r * np.sin(theta)], 1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def test_mlp_learns_three_spirals_to_95_percent_in_400_steps():
    ember.manual_seed(0)
    x, y = spirals(100, 3, np.random.default_rng(0))
    x, y = ember.from_numpy(x), ember.from_numpy(y)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    assert accuracy(model(x), y) < 0.6
    for _ in range(400):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    with ember.no_grad():
        assert accuracy(model(x), y) >= 0.95, f"final loss {loss.item():.3f}"


def bars(n: int, rng) -> tuple:
    """8x8 images with one bright bar, horizontal (class 0) or vertical (class 1), on noise."""
    images = rng.normal(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 2, n)
    where = rng.integers(0, 8, n)
    for i in range(n):
        if labels[i] == 0:
            images[i, 0, where[i], :] += 1.0
        else:
            images[i, 0, :, where[i]] += 1.0
    return images, labels


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(16 * 3 * 3, 2)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(self.drop(x.flatten(1)))


def test_small_cnn_learns_bar_orientation_to_95_percent_in_60_steps():
    ember.manual_seed(0)
    rng = np.random.default_rng(1)
    train_x, train_y = bars(256, rng)
    test_x, test_y = bars(256, rng)
    model = SmallCNN()
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(60):
        batch = slice((step % 8) * 32, (step % 8) * 32 + 32)
        opt.zero_grad()
        loss = F.cross_entropy(model(ember.from_numpy(train_x[batch])), ember.from_numpy(train_y[batch]))
        loss.backward()
        opt.step()
    model.eval()
    with ember.no_grad():
        acc = accuracy(model(ember.from_numpy(test_x)), ember.from_numpy(test_y))
    assert acc >= 0.95, f"held-out accuracy {acc:.3f}"
    assert model.bn.num_batches_tracked.item() == 60
