"""Loss modules: PyTorch's constructor arguments and defaults, reprs, weight buffers, the deprecated
size_average/reduce flags, and forward equal to the functional form."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from tests.core.helpers import rand64


def _np(t):
    return t.detach().numpy(force=True)


# the attributes PyTorch 2.13 gives a default-constructed module (read by hand from vars(module))
DEFAULTS = {
    nn.MSELoss: {"reduction": "mean"},
    nn.L1Loss: {"reduction": "mean"},
    nn.SmoothL1Loss: {"reduction": "mean", "beta": 1.0},
    nn.HuberLoss: {"reduction": "mean", "delta": 1.0},
    nn.PoissonNLLLoss: {"reduction": "mean", "log_input": True, "full": False, "eps": 1e-08},
    nn.NLLLoss: {"reduction": "mean", "ignore_index": -100, "weight": None},
    nn.CrossEntropyLoss: {"reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0, "weight": None},
    nn.KLDivLoss: {"reduction": "mean", "log_target": False},
    nn.BCELoss: {"reduction": "mean", "weight": None},
    nn.BCEWithLogitsLoss: {"reduction": "mean", "weight": None, "pos_weight": None},
    nn.SoftMarginLoss: {"reduction": "mean"},
    nn.MarginRankingLoss: {"reduction": "mean", "margin": 0.0},
    nn.CosineEmbeddingLoss: {"reduction": "mean", "margin": 0.0},
    nn.TripletMarginLoss: {"reduction": "mean", "margin": 1.0, "p": 2.0, "eps": 1e-06, "swap": False},
}


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_defaults_and_repr(cls):
    module = cls()
    for name, value in DEFAULTS[cls].items():
        assert getattr(module, name) == value
    assert repr(module) == f"{cls.__name__}()"  # PyTorch's loss modules print no arguments
    assert list(module.parameters()) == [] and list(module.state_dict()) == []


def _inputs(seed=0):
    x = rand64(3, 4, low=-2, high=2, seed=seed)
    y = rand64(3, 4, low=-2, high=2, seed=seed + 1, requires_grad=False)
    p = rand64(3, 4, low=0.05, high=0.95, seed=seed + 2)
    q = rand64(3, 4, low=0.05, high=0.95, seed=seed + 3, requires_grad=False)
    signs = ember.tensor(np.where(np.random.default_rng(seed).random(3) > 0.5, 1.0, -1.0), dtype=ember.float64)
    return x, y, p, q, signs


def _cases():
    x, y, p, q, signs = _inputs()
    w = ember.tensor([0.5, 1.0, 2.0, 1.5], dtype=ember.float64)
    t = ember.tensor([0, 3, 2])
    return [  # (module, its call, the functional form it must equal)
        (nn.MSELoss(reduction="sum"), (x, y), lambda: F.mse_loss(x, y, reduction="sum")),
        (nn.L1Loss(reduction="none"), (x, y), lambda: F.l1_loss(x, y, reduction="none")),
        (nn.SmoothL1Loss(beta=0.5), (x, y), lambda: F.smooth_l1_loss(x, y, beta=0.5)),
        (nn.HuberLoss(delta=0.5, reduction="sum"), (x, y), lambda: F.huber_loss(x, y, delta=0.5, reduction="sum")),
        (nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4), (p, q * 4),
         lambda: F.poisson_nll_loss(p, q * 4, log_input=False, full=True, eps=1e-4)),
        (nn.NLLLoss(weight=w, ignore_index=3), (x, t), lambda: F.nll_loss(x, t, weight=w, ignore_index=3)),
        (nn.CrossEntropyLoss(weight=w, ignore_index=2, label_smoothing=0.2, reduction="none"), (x, t),
         lambda: F.cross_entropy(x, t, weight=w, ignore_index=2, label_smoothing=0.2, reduction="none")),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), (x, y),
         lambda: F.kl_div(x, y, reduction="batchmean", log_target=True)),
        (nn.BCELoss(weight=w), (p, q), lambda: F.binary_cross_entropy(p, q, weight=w)),
        (nn.BCEWithLogitsLoss(weight=w, pos_weight=w * 2), (x, q),
         lambda: F.binary_cross_entropy_with_logits(x, q, weight=w, pos_weight=w * 2)),
        (nn.SoftMarginLoss(reduction="sum"), (x, y.sign()), lambda: F.soft_margin_loss(x, y.sign(), reduction="sum")),
        (nn.MarginRankingLoss(margin=0.3), (x[:, 0], y[:, 0], signs),
         lambda: F.margin_ranking_loss(x[:, 0], y[:, 0], signs, margin=0.3)),
        (nn.CosineEmbeddingLoss(margin=0.1), (x, y, signs), lambda: F.cosine_embedding_loss(x, y, signs, margin=0.1)),
        (nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True), (x, y, p),
         lambda: F.triplet_margin_loss(x, y, p, margin=0.5, p=1.0, swap=True)),
    ]


@pytest.mark.parametrize("index", range(14))
def test_forward_equals_functional(index):
    module, args, functional = _cases()[index]
    out = module(*args)
    np.testing.assert_array_equal(_np(out), _np(functional()))
    assert out.requires_grad


def test_weights_are_buffers():
    w = ember.tensor([1.0, 2.0, 3.0])
    for cls in (nn.CrossEntropyLoss, nn.NLLLoss, nn.BCELoss):
        module = cls(weight=w)
        assert dict(module.named_buffers()) == {"weight": w} and list(module.state_dict()) == ["weight"]
        assert module.double().weight.dtype == ember.float64
    module = nn.BCEWithLogitsLoss(pos_weight=w)
    assert list(module.state_dict()) == ["pos_weight"] and module.weight is None
    module = nn.BCEWithLogitsLoss(weight=w, pos_weight=w * 2)
    assert list(module.state_dict()) == ["weight", "pos_weight"]
    fresh = nn.CrossEntropyLoss(weight=ember.zeros(3))
    fresh.load_state_dict(nn.CrossEntropyLoss(weight=w).state_dict())
    assert fresh.weight.tolist() == [1.0, 2.0, 3.0]
    logits, target = ember.zeros(2, 3), ember.tensor([1, 2])
    assert fresh(logits, target).item() == pytest.approx(np.log(3))  # weighted mean of equal losses


@pytest.mark.parametrize("kwargs,want", [({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                                         ({"size_average": True}, "mean"), ({"reduce": True}, "mean")])
def test_deprecated_flags_set_reduction(kwargs, want):
    for cls in (nn.MSELoss, nn.CrossEntropyLoss, nn.BCEWithLogitsLoss, nn.KLDivLoss, nn.TripletMarginLoss):
        with pytest.warns(UserWarning, match=f"please use reduction='{want}' instead") as record:
            module = cls(**kwargs)
        assert module.reduction == want and record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nn.HuberLoss(reduction="sum").reduction == "sum"


def test_bad_arguments():
    module = nn.MSELoss(reduction="avg")  # as PyTorch, the reduction is checked when the loss is computed
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        module(ember.ones(2), ember.ones(2))
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0, got 0.0 instead"):
        nn.TripletMarginLoss(margin=0.0)


def test_training_step_reaches_the_parameters():
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    x, t = ember.randn(8, 4), ember.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    before = loss_fn(model(x), t).item()
    for _ in range(20):
        model.zero_grad()
        loss = loss_fn(model(x), t)
        loss.backward()
        with ember.no_grad():
            for param in model.parameters():
                param -= 0.5 * param.grad
    assert loss_fn(model(x), t).item() < before
