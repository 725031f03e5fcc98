"""Updating a parameter piece by piece (``ember.optim.optimizer.PIECE``) gives bit for bit the whole-array
update, for every option that changes the arithmetic; scratch arrays never leak between parameters."""
import numpy as np
import pytest

import ember
from ember.optim import optimizer

CASES = [
    (ember.optim.SGD, dict(lr=0.01)),
    (ember.optim.SGD, dict(lr=0.01, momentum=0.9)),
    (ember.optim.SGD, dict(lr=0.01, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    (ember.optim.SGD, dict(lr=0.01, momentum=0.9, nesterov=True, maximize=True)),
    (ember.optim.Adam, dict(lr=0.01)),
    (ember.optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    (ember.optim.AdamW, dict(lr=0.01)),
]


def _train(cls, options, piece, monkeypatch):
    monkeypatch.setattr(optimizer, "PIECE", piece)
    ember.manual_seed(0)
    params = [ember.randn(30, 70, requires_grad=True), ember.randn(700, requires_grad=True),
              ember.randn(5, requires_grad=True)]
    opt = cls(params, **options)
    rng = np.random.default_rng(1)
    for _ in range(3):
        for p in params:
            p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        opt.step()
    state = [v.detach().numpy() for s in opt.state.values() for v in s.values() if isinstance(v, ember.Tensor)]
    return [p.detach().numpy() for p in params] + state


@pytest.mark.parametrize("cls, options", CASES)
def test_pieces_match_the_whole_array_update(cls, options, monkeypatch):
    whole = _train(cls, options, 1 << 30, monkeypatch)
    pieces = _train(cls, options, 64, monkeypatch)  # 700 and 2100 elements: uneven last pieces
    assert len(whole) == len(pieces)
    for a, b in zip(whole, pieces):
        np.testing.assert_array_equal(a, b)


def test_non_contiguous_parameters_are_updated_whole(monkeypatch):
    monkeypatch.setattr(optimizer, "PIECE", 4)
    base = ember.zeros(6, 4)
    p = base.t().detach().requires_grad_()  # a transposed view: not C-contiguous
    p.grad = ember.ones(4, 6)
    ember.optim.SGD([p], lr=0.5, momentum=0.9).step()
    assert p.tolist() == [[-0.5] * 6] * 4
