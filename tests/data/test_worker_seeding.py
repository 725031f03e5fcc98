"""Each worker seeds random, NumPy and ember from the loader's base seed and its id: distinct, reproducible."""
from __future__ import annotations

import pytest

import ember
from ember.data import DataLoader

from .datasets_for_tests import WhoAmI

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]

GENERATORS = ("random", "numpy", "ember")


def draws(loader):
    """{(worker, nth item of that worker): (random, numpy, ember)} for one pass."""
    out, nth = {}, {}
    for d in loader:
        k = nth[d["worker"]] = nth.get(d["worker"], -1) + 1
        out[d["worker"], k] = tuple(d[g] for g in GENERATORS)
    return out


def loader(**kwargs):
    return DataLoader(WhoAmI(), batch_size=None, num_workers=3, **kwargs)


def test_workers_draw_different_numbers_from_every_generator():
    one = draws(loader())
    for g in range(len(GENERATORS)):
        firsts = {one[w, 0][g] for w in range(3)}
        assert len(firsts) == 3, f"workers share a {GENERATORS[g]} seed"


def test_each_pass_draws_new_numbers_with_or_without_persistent_workers():
    for kwargs in ({}, {"persistent_workers": True}):
        ldr = loader(**kwargs)
        a, b = draws(ldr), draws(ldr)
        assert a.keys() == b.keys()
        assert all(a[k][g] != b[k][g] for k in a for g in range(3)), kwargs


def test_the_same_manual_seed_gives_the_same_pass():
    ember.manual_seed(123)
    a = draws(loader())
    ember.manual_seed(123)
    b = draws(loader())
    ember.manual_seed(124)
    c = draws(loader())
    assert a == b and a != c


def test_the_same_generator_seed_gives_the_same_pass_whatever_the_global_seed():
    ember.manual_seed(1)
    a = draws(loader(generator=ember.Generator().manual_seed(9)))
    ember.manual_seed(2)
    b = draws(loader(generator=ember.Generator().manual_seed(9)))
    assert a == b
