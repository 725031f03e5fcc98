"""Gradients and grad_fn names of rounding, remainder/fmod, stable sort, fill/masked_fill with a tensor value,
split with sizes and scatter: gradchecks on every backend, names as in PyTorch."""
import pytest

import ember
from tests.core.helpers import check_grads, rand64


# -- grad_fn names ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, name", [
    (lambda x: x.split([1, 2])[0], "SplitWithSizesBackward0"), (lambda x: x.split(2)[0], "SplitBackward0"),
    (lambda x: x.clone().fill_(2.0), "FillBackward2"), (lambda x: x.clone().fill_(ember.tensor(2.0)), "FillBackward3"),
    (lambda x: x.clone().zero_(), "ZeroBackward0"), (lambda x: x.masked_fill(x > 0, 1.0), "MaskedFillBackward0"),
    (lambda x: x.masked_fill(x > 0, ember.tensor(1.0)), "MaskedFillBackward1"),
])
def test_grad_fn_names_match_pytorch(fn, name):
    assert fn(ember.ones(3, requires_grad=True)).grad_fn.name() == name


# -- gradchecks ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_rounding_gradients(device, name):
    x = rand64(2, 3, device=device, low=0.2, high=0.8) * 4  # away from integers and half-integers
    x = x.detach().requires_grad_()
    check_grads(getattr(ember, name), x, gradgrad=True)


def test_round_with_decimals_gradient(device):
    x = (rand64(2, 3, device=device, low=0.11, high=0.14) + 0.0).detach().requires_grad_()
    assert ember.round(x, decimals=1).grad_fn.name() == "RoundBackward1"
    check_grads(lambda t: ember.round(t, decimals=1), x, gradgrad=True)


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainder_fmod_gradient_wrt_the_dividend(device, name):
    a = rand64(3, 1, device=device, low=0.2, high=0.8)
    check_grads(lambda t: getattr(ember, name)(t * 3, 1.3), a, gradgrad=True)


def test_stable_sort_gradient(device):
    x = rand64(2, 4, device=device)
    assert ember.sort(x, stable=True).values.grad_fn.name() == "SortBackward1"
    check_grads(lambda t: ember.sort(t, dim=0, stable=True, descending=True).values, x, gradgrad=True)


def test_fill_and_masked_fill_with_tensor_value_gradients(device):
    x, v = rand64(2, 3, device=device), rand64(device=device, seed=1)
    check_grads(lambda t, s: t.clone().fill_(s), x, v, gradgrad=True)
    check_grads(lambda t, s: t.masked_fill(t > 0, s), x, v, gradgrad=True)


def test_split_with_sizes_gradient(device):
    x = rand64(2, 5, device=device)
    check_grads(lambda t: [p * (i + 1) for i, p in enumerate(t.split([1, 4, 0], 1))], x, gradgrad=True)


def test_scatter_multiply_has_no_derivative_as_in_pytorch():
    x = ember.ones(2, 3, requires_grad=True)
    out = x.clone().scatter_(1, ember.tensor([[0], [2]]), 2.0, reduce="multiply")
    assert out.tolist() == [[2.0, 1.0, 1.0], [1.0, 1.0, 2.0]]
    with pytest.raises(RuntimeError, match="the derivative for 'scatter' with reduce='multiply' is not implemented"):
        out.sum().backward()
