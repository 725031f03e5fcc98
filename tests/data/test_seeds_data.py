"""The Dataset & DataLoader section of the user's notes (seeds/000), with ``torch`` spelled ``ember``."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember
from ember.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


class BasicDataset(Dataset):
    """The notes' map-style dataset: load a table in __init__, one row per item (a CSV read with NumPy)."""

    def __init__(self, path):
        table = np.genfromtxt(path, delimiter=",", names=True)
        self.X = np.stack([table[name] for name in table.dtype.names if name != "label"], axis=1).astype(np.float32)
        self.y = table["label"].astype(np.int64)

    def __getitem__(self, idx):
        return self.X[idx], self.y[idx]

    def __len__(self):
        return len(self.X)


@pytest.fixture
def csv_path(tmp_path):
    path = tmp_path / "data.csv"
    rows = ["a,b,label"] + [f"{i},{i * 2},{i % 3}" for i in range(10)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_map_style_dataset_from_the_notes(csv_path):
    ds = BasicDataset(csv_path)
    assert len(ds) == 10
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.dtype == ember.float32 and x.shape == ember.Size([4, 2]) and y.tolist() == [0, 1, 2, 0]


def test_the_dataloader_signature_of_the_notes():
    params = inspect.signature(DataLoader).parameters
    expected = {"batch_size": 1, "shuffle": None, "sampler": None, "batch_sampler": None, "num_workers": 0,
                "collate_fn": None, "pin_memory": False, "drop_last": False, "timeout": 0, "worker_init_fn": None,
                "persistent_workers": False}
    assert {name: params[name].default for name in expected} == expected
    assert params["prefetch_factor"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["persistent_workers"].kind is inspect.Parameter.KEYWORD_ONLY


def test_every_argument_of_the_notes_in_one_call(csv_path):
    ds = BasicDataset(csv_path)
    with pytest.warns(UserWarning, match="pin_memory"):  # no CUDA here: pinning is a no-op
        loader = DataLoader(ds, batch_size=3, shuffle=False, sampler=None, batch_sampler=None, num_workers=2,
                            collate_fn=None, pin_memory=True, drop_last=True, timeout=30, worker_init_fn=None,
                            prefetch_factor=2, persistent_workers=True)
    assert [y.tolist() for _, y in loader] == [[0, 1, 2], [0, 1, 2], [0, 1, 2]] and len(loader) == 3


@pytest.mark.parametrize("make", [
    lambda ds: SequentialSampler(ds),
    lambda ds: RandomSampler(ds, replacement=True, num_samples=6),
    lambda ds: SubsetRandomSampler([1, 3, 5]),
    lambda ds: WeightedRandomSampler([0.0, 1.0] * 5, num_samples=8),
    lambda ds: DistributedSampler(ds, num_replicas=2, rank=1),
])
def test_each_sampler_of_the_notes_feeds_a_loader(csv_path, make):
    ds = BasicDataset(csv_path)
    sampler = make(ds)
    seen = [i for _, y in DataLoader(ds, batch_size=2, sampler=sampler) for i in y.tolist()]
    assert len(seen) == len(sampler)


def test_batch_sampler_of_the_notes(csv_path):
    ds = BasicDataset(csv_path)
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), batch_size=4, drop_last=False))
    assert [len(y) for _, y in loader] == [4, 4, 2]


def test_distributed_data_parallel_recipe_of_the_notes(csv_path):
    """DDP: a DistributedSampler instead of shuffle, and pin_memory on; the ranks share the data out."""
    ds = BasicDataset(csv_path)
    seen = []
    for rank in range(2):
        with pytest.warns(UserWarning, match="pin_memory"):
            loader = DataLoader(ds, batch_size=5, shuffle=False,
                                sampler=DistributedSampler(ds, num_replicas=2, rank=rank), pin_memory=True)
        seen.append([i for x, _ in loader for i in x[:, 0].tolist()])
    assert sorted(seen[0] + seen[1]) == [float(i) for i in range(10)] and set(seen[0]).isdisjoint(seen[1])
