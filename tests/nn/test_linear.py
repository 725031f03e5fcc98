"""F.linear, F.bilinear, Linear, Bilinear, Identity, Flatten, Unflatten.

Values are checked against NumPy references written here (a loop over output units for linear, explicit sums
for bilinear); gradients by float64 finite differences, with double backward for linear. Messages and reprs were
checked against PyTorch 2.13 by hand.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember import nn
from tests.core.helpers import check_grads, rand64


def linear_reference(x, w, b=None):
    """One output unit at a time: out[..., o] = sum_i x[..., i] * w[o, i] + b[o]."""
    out = np.stack([(x * w[o]).sum(axis=-1) for o in range(w.shape[0])], axis=-1)
    return out if b is None else out + b


def bilinear_reference(x1, x2, w, b=None):
    out = np.zeros(x1.shape[:-1] + (w.shape[0],))
    for o in range(w.shape[0]):
        for i in range(w.shape[1]):
            for j in range(w.shape[2]):
                out[..., o] += x1[..., i] * w[o, i, j] * x2[..., j]
    return out if b is None else out + b


# -- F.linear ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 5, 3), (2, 1, 2, 3)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_reference(device, shape, with_bias):
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=shape), rng.normal(size=(2, 3)), rng.normal(size=2)
    out = F.linear(ember.tensor(x, device=device), ember.tensor(w, device=device),
                   ember.tensor(b, device=device) if with_bias else None)
    assert out.shape == shape[:-1] + (2,)
    np.testing.assert_allclose(out.numpy(force=True), linear_reference(x, w, b if with_bias else None), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=3), n_in=st.integers(1, 4), n_out=st.integers(1, 4))
def test_linear_shapes_property(batch, n_in, n_out):
    rng = np.random.default_rng(len(batch) + n_in * 7 + n_out * 31)
    x = rng.normal(size=(*batch, n_in)).astype(np.float32)
    w, b = rng.normal(size=(n_out, n_in)).astype(np.float32), rng.normal(size=n_out).astype(np.float32)
    out = F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    assert out.dtype == ember.float32 and out.shape == (*batch, n_out)
    np.testing.assert_allclose(out.numpy(), linear_reference(x, w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 2, 3)])
def test_linear_gradcheck_and_gradgradcheck(device, shape):
    x = rand64(*shape, device=device, seed=1)
    w = rand64(2, 3, device=device, seed=2)
    b = rand64(2, device=device, seed=3)
    check_grads(F.linear, x, w, b, gradgrad=True)
    check_grads(lambda x, w: F.linear(x, w), x, w, gradgrad=True)


def test_linear_grad_fn_names():
    x = ember.ones(2, 3, requires_grad=True)
    assert F.linear(x, ember.ones(4, 3), ember.ones(4)).grad_fn.name() == "AddmmBackward0"
    assert F.linear(x, ember.ones(4, 3)).grad_fn.name() == "MmBackward0"


def test_linear_gradient_penalty_through_double_backward():
    # d/dx sum(W x) = column sums of W, independent of x; the penalty ||grad||^2 depends on W only:
    # d/dW sum_i (sum_o W[o, i])^2 = 2 * (column sum of W) for every row
    w = ember.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
    x = ember.ones(1, 2, requires_grad=True)
    (g,) = ember.autograd.grad(F.linear(x, w).sum(), x, create_graph=True)
    (g * g).sum().backward()
    assert w.grad.tolist() == [[8.0, 2.0], [8.0, 2.0]]


def test_linear_bad_input():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 4x3\)"):
        F.linear(ember.ones(2, 5), ember.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 2x4\)"):
        F.linear(ember.ones(3), ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="both arguments to linear need to be at least 1D"):
        F.linear(ember.ones(()), ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        F.linear(ember.ones(2, 3), ember.ones(4, 3, dtype=ember.float64))
    with pytest.raises(TypeError, match=r"linear\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        F.linear([1.0], ember.ones(4, 3))
    with pytest.raises(RuntimeError, match=r"expected bias of shape \[4\]"):
        F.linear(ember.ones(2, 3), ember.ones(4, 3), ember.ones(3))


# -- F.bilinear --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_bilinear_matches_reference_and_gradcheck(batch):
    rng = np.random.default_rng(5)
    x1, x2 = rng.normal(size=batch + (2,)), rng.normal(size=batch + (3,))
    w, b = rng.normal(size=(4, 2, 3)), rng.normal(size=4)
    out = F.bilinear(ember.tensor(x1), ember.tensor(x2), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(out.numpy(), bilinear_reference(x1, x2, w, b), rtol=1e-12)
    check_grads(F.bilinear, rand64(*batch, 2, seed=1), rand64(*batch, 3, seed=2), rand64(4, 2, 3, seed=3),
                rand64(4, seed=4))


def test_bilinear_bad_input():
    cases = [((ember.ones(2, 3), ember.ones(3, 4), ember.ones(5, 3, 4)),
              "input batch dimensions do not match at dim 0: got 2 and 3"),
             ((ember.ones(2, 2), ember.ones(2, 4), ember.ones(5, 3, 4)),
              "input1 size does not match weight size: got 2 but expected 3"),
             ((ember.ones(2, 3), ember.ones(2, 5), ember.ones(5, 3, 4)),
              "input2 size does not match weight size: got 5 but expected 4"),
             ((ember.ones(2, 3), ember.ones(2, 4), ember.ones(5, 3, 4), ember.ones(4)),
              "bias size does not match weight size: got 4 but expected 5")]
    for args, message in cases:
        with pytest.raises(RuntimeError) as info:
            F.bilinear(*args)
        assert str(info.value) == "bilinear(): " + message


# -- Linear / Bilinear modules -----------------------------------------------------------------------------------

def test_linear_module_parameters_and_repr():
    fc = nn.Linear(4, 3)
    assert fc.weight.shape == (3, 4) and fc.bias.shape == (3,) and type(fc.weight) is nn.Parameter
    assert repr(fc) == "Linear(in_features=4, out_features=3, bias=True)"
    no_bias = nn.Linear(3, 2, bias=False)
    assert no_bias.bias is None and repr(no_bias) == "Linear(in_features=3, out_features=2, bias=False)"
    assert list(no_bias.state_dict()) == ["weight"]
    assert nn.Linear(3, 2, dtype=ember.float64).weight.dtype == ember.float64
    x = ember.tensor(np.random.default_rng(0).normal(size=(5, 4)), dtype=ember.float32)
    expected = linear_reference(x.numpy(), fc.weight.detach().numpy(), fc.bias.detach().numpy())
    np.testing.assert_allclose(fc(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_linear_module_on_each_backend(device):
    fc = nn.Linear(3, 2, device=device)
    assert fc.weight.device.type == device and fc.bias.device.type == device
    x = ember.ones(4, 3, device=device)
    fc(x).sum().backward()
    np.testing.assert_allclose(fc.weight.grad.numpy(force=True), np.full((2, 3), 4.0))
    moved = nn.Linear(3, 2).to(device)
    assert moved(x).device.type == device


def test_linear_default_init_is_uniform_within_one_over_sqrt_fan_in():
    ember.manual_seed(0)
    fc = nn.Linear(16, 400)
    bound = 1 / math.sqrt(16)
    w, b = fc.weight.detach().numpy(), fc.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # uniform(-a, a): mean 0, variance a^2 / 3 (6400 draws: a loose 5-sigma band)
    assert abs(w.mean()) < 5 * bound / math.sqrt(3 * w.size)
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.1
    ember.manual_seed(0)
    again = nn.Linear(16, 400)
    np.testing.assert_array_equal(again.weight.detach().numpy(), w)
    assert nn.Linear(0, 2).bias.tolist() == [0.0, 0.0]


def test_linear_module_wrong_input_names_the_layer():
    with pytest.raises(RuntimeError) as info:
        nn.Linear(4, 3)(ember.ones(2, 5))
    assert str(info.value) == ("Linear(in_features=4, out_features=3, bias=True): expected input with last "
                               "dimension 4, got shape ember.Size([2, 5]) (mat1 and mat2 shapes cannot be "
                               "multiplied (2x5 and 4x3))")


def test_linear_module_gradients():
    fc = nn.Linear(3, 2).double()
    x = rand64(4, 3)
    fc(x).sum().backward()
    np.testing.assert_allclose(fc.weight.grad.numpy(), np.tile(x.detach().numpy().sum(0), (2, 1)))
    np.testing.assert_allclose(fc.bias.grad.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), np.tile(fc.weight.detach().numpy().sum(0), (4, 1)))


def test_bilinear_module():
    bl = nn.Bilinear(2, 3, 4)
    assert bl.weight.shape == (4, 2, 3) and bl.bias.shape == (4,)
    assert repr(bl) == "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"
    assert repr(nn.Bilinear(1, 2, 3, bias=False)) == \
        "Bilinear(in1_features=1, in2_features=2, out_features=3, bias=False)"
    assert np.abs(bl.weight.detach().numpy()).max() <= 1 / math.sqrt(2)
    x1, x2 = ember.ones(5, 2), ember.ones(5, 3)
    expected = bilinear_reference(x1.numpy(), x2.numpy(), bl.weight.detach().numpy(), bl.bias.detach().numpy())
    np.testing.assert_allclose(bl(x1, x2).detach().numpy(), expected, rtol=1e-5)


# -- Identity, Flatten, Unflatten --------------------------------------------------------------------------------

def test_identity():
    x = ember.ones(2)
    assert nn.Identity()(x) is x and nn.Identity(3, k=4)(x) is x and repr(nn.Identity()) == "Identity()"


def test_flatten_and_unflatten():
    x = ember.arange(24.0).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    np.testing.assert_array_equal(nn.Flatten()(x).numpy(), x.numpy().reshape(2, 12))
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    un = nn.Unflatten(1, (3, 4))
    assert repr(un) == "Unflatten(dim=1, unflattened_size=(3, 4))"
    np.testing.assert_array_equal(un(nn.Flatten()(x)).numpy(), x.numpy())
    assert nn.Unflatten(-1, [2, -1])(x).shape == (2, 3, 2, 2)
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 3)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type str at "
                                        "pos 1"):
        nn.Unflatten(1, (2, "a"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        nn.Flatten()(ember.ones(2))
