"""Transfer learning end to end on scikit-learn's bundled digits (8x8 images; nothing is downloaded).

1. Pretrain a small CNN on the digits 0-4 and save it with ``ember.save`` (a safetensors file).
2. For the new task, digits 5-9: build the same network, load the pretrained weights, replace the head,
   freeze the backbone with ``requires_grad_(False)`` and train only the head.
3. Unfreeze the backbone and fine-tune everything with two parameter groups: the backbone with a smaller
   learning rate than the head.

Each stage prints the test accuracy; the frozen stage also prints a checksum of the backbone before and after,
which must be equal. Run: ``python examples/transfer_learning.py`` (about 10 s on two cores).
"""
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import ember
from ember import nn

SEED = 0
BATCH_SIZE = 32


class DigitNet(nn.Module):
    """A convolutional backbone (1x8x8 image -> 128 features) and a linear head."""

    def __init__(self, num_classes):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
            nn.Flatten())
        self.head = nn.Linear(32 * 2 * 2, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def digit_split(digits, test_fraction=0.25, seed=SEED):
    """Train and test sets ``(images, labels)`` of the given digits; labels renumbered from 0, pixels in [0, 1]."""
    data = load_digits()
    keep = np.isin(data.target, digits)
    images = (data.images[keep] / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8
    labels = np.searchsorted(np.asarray(digits), data.target[keep]).astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


def train(model, optimizer, data, epochs, seed=SEED):
    """Mini-batch training with cross-entropy; returns the last epoch's mean loss."""
    images, labels = data
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        losses = []
        for batch in np.array_split(rng.permutation(len(labels)), max(1, len(labels) // BATCH_SIZE)):
            optimizer.zero_grad()
            loss = loss_fn(model(ember.from_numpy(images[batch])), ember.from_numpy(labels[batch]))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return float(np.mean(losses))


def accuracy(model, data):
    images, labels = data
    model.eval()
    with ember.no_grad():
        predicted = model(ember.from_numpy(images)).argmax(dim=1).numpy()
    return float((predicted == labels).mean())


def checksum(module):
    """A fingerprint of a module's parameters: sum of all values, and sum of all squared values."""
    values = [p.detach().numpy().astype(np.float64) for p in module.parameters()]
    return sum(v.sum() for v in values), sum((v * v).sum() for v in values)


def pretrain(path, epochs=15):
    """Trains DigitNet on digits 0-4, saves its state dict to ``path``; returns the test accuracy."""
    ember.manual_seed(SEED)
    train_set, test_set = digit_split([0, 1, 2, 3, 4])
    model = DigitNet(num_classes=5)
    train(model, ember.optim.Adam(model.parameters(), lr=1e-2), train_set, epochs)
    ember.save(model.state_dict(), path)
    return accuracy(model, test_set)


def transfer(path, num_classes=5):
    """The pretrained network with a fresh head for ``num_classes`` and its backbone frozen."""
    model = DigitNet(num_classes=5)
    model.load_state_dict(ember.load(path))
    model.head = nn.Linear(model.head.in_features, num_classes)  # replace the head: new task, new classes
    model.backbone.requires_grad_(False)
    return model


def fine_tune_optimizer(model, backbone_lr=1e-3, head_lr=5e-3):
    """Unfreezes the backbone; Adam with two parameter groups, the backbone's learning rate the smaller."""
    model.backbone.requires_grad_(True)
    return ember.optim.Adam([{"params": model.backbone.parameters(), "lr": backbone_lr},
                             {"params": model.head.parameters()}], lr=head_lr)


def main():
    ember.manual_seed(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits_0_4.safetensors")
        print(f"pretrain on digits 0-4: test accuracy {pretrain(path):.3f}")
        train_set, test_set = digit_split([5, 6, 7, 8, 9])
        model = transfer(path)

    print(f"new head on digits 5-9, before training: test accuracy {accuracy(model, test_set):.3f}")
    before = checksum(model.backbone)
    trainable = [p for p in model.parameters() if p.requires_grad]
    train(model, ember.optim.Adam(trainable, lr=1e-2), train_set, epochs=10)
    after = checksum(model.backbone)
    print(f"frozen backbone, head trained: test accuracy {accuracy(model, test_set):.3f}")
    print(f"backbone checksum before {before[0]:.6f} {before[1]:.6f} after {after[0]:.6f} {after[1]:.6f} "
          f"unchanged {before == after}")

    optimizer = fine_tune_optimizer(model)
    train(model, optimizer, train_set, epochs=10)
    print(f"fine-tuned (backbone lr {optimizer.param_groups[0]['lr']}, head lr {optimizer.param_groups[1]['lr']}): "
          f"test accuracy {accuracy(model, test_set):.3f}")
    print(f"final accuracy {accuracy(model, test_set):.3f}")


if __name__ == "__main__":
    main()
