"""The datasets ``bench_data.py`` loads, NumPy only, so ember's and PyTorch's DataLoader read the same class.

Both are map-style datasets (``__len__``, ``__getitem__``); neither imports ember
or torch, so a worker process of either library can unpickle and run them.
"""
from __future__ import annotations

import numpy as np


def mnist_like(n: int = 60_000, features: int = 784, classes: int = 10, seed: int = 0):
    """``n`` float32 rows of ``features`` values and their int64 labels, for a ``TensorDataset``."""
    rng = np.random.default_rng(seed)
    return rng.random((n, features), dtype=np.float32), rng.integers(0, classes, size=n, dtype=np.int64)


class AugmentedImages:
    """``n`` 3x32x32 uint8 images, each read with a random crop (pad 4, crop 32) and a random horizontal flip.

    The CIFAR-10 training transform in NumPy. The randomness comes from NumPy's
    global generator, which both DataLoaders seed per worker, so every pass
    and every worker draws fresh augmentations.
    """

    def __init__(self, n: int = 20_000, size: int = 32, pad: int = 4, classes: int = 10, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, size=(n, 3, size, size), dtype=np.uint8)
        self.labels = rng.integers(0, classes, size=n).tolist()  # Python ints, as a decoded label would be
        self.size, self.pad = size, pad

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        p, s = self.pad, self.size
        padded = np.pad(self.images[i], ((0, 0), (p, p), (p, p)))
        top, left = np.random.randint(0, 2 * p + 1, size=2)
        image = padded[:, top:top + s, left:left + s]
        if np.random.random() < 0.5:
            image = image[:, :, ::-1]
        return np.ascontiguousarray(image), self.labels[i]
