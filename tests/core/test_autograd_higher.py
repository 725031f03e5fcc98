"""ember.autograd.grad, create_graph / double backward, gradcheck and gradgradcheck."""
import math

import numpy as np
import pytest

import ember
from tests.core.helpers import check_grads, rand64

# -- ember.autograd.grad ---------------------------------------------------------------------------------------

def test_grad_returns_tuple_and_leaves_dot_grad_alone(device):
    x = ember.tensor([1.0, 2.0], requires_grad=True, device=device)
    y = ember.tensor([3.0, 4.0], requires_grad=True, device=device)
    gx, gy = ember.autograd.grad((x * y).sum(), [x, y])
    assert gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
    assert x.grad is None and y.grad is None
    assert not gx.requires_grad


def test_grad_of_non_leaf_input():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    (gh,) = ember.autograd.grad((h * h).sum(), h)
    assert gh.tolist() == [6.0, 12.0]


def test_grad_with_grad_outputs():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad(x * x, x, grad_outputs=ember.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 40.0]


def test_grad_unused_input_errors_without_allow_unused():
    x = ember.ones(2, requires_grad=True)
    unused = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph. Set allow_unused=True"):
        ember.autograd.grad((x * 2).sum(), [x, unused])


def test_grad_allow_unused_gives_none():
    x = ember.ones(2, requires_grad=True)
    unused = ember.ones(2, requires_grad=True)
    gx, gu = ember.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gu is None


def test_grad_materialize_grads_gives_zeros():
    x = ember.ones(2, requires_grad=True)
    unused = ember.ones(3, requires_grad=True)
    _, gu = ember.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.0, 0.0, 0.0]


def test_grad_input_that_does_not_require_grad_errors():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.autograd.grad((x * 2).sum(), [ember.ones(2)])


def test_grad_frees_graph_unless_retained():
    x = ember.ones(2, requires_grad=True)
    y = (x * x).sum()
    ember.autograd.grad(y, x, retain_graph=True)
    ember.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ember.autograd.grad(y, x)


# -- create_graph and double backward ---------------------------------------------------------------------------

def test_second_and_third_derivative_of_cube(device):
    x = ember.tensor(2.0, requires_grad=True, device=device)
    y = x ** 3
    (g1,) = ember.autograd.grad(y, x, create_graph=True)
    assert g1.requires_grad and g1.item() == 12.0       # 3 x^2
    (g2,) = ember.autograd.grad(g1, x, create_graph=True)
    assert g2.item() == 12.0                              # 6 x
    (g3,) = ember.autograd.grad(g2, x)
    assert g3.item() == 6.0


def test_backward_create_graph_makes_grad_differentiable():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]  # d/dx sum(3x^2) = 6x


def test_grad_of_grad_of_sin():
    x = ember.tensor([0.0, 0.5, 1.0], dtype=ember.float64, requires_grad=True)
    (g1,) = ember.autograd.grad(x.sin().sum(), x, create_graph=True)
    (g2,) = ember.autograd.grad(g1.sum(), x)
    np.testing.assert_allclose(g1.detach().numpy(), np.cos([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(g2.numpy(), -np.sin([0.0, 0.5, 1.0]))


def test_mixed_second_derivative():
    x = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    y = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    f = x * x * y
    (gx,) = ember.autograd.grad(f, x, create_graph=True)      # 2xy
    (gxy,) = ember.autograd.grad(gx, y)                       # 2x
    assert gx.item() == 12.0 and gxy.item() == 4.0


def test_gradient_penalty_style_double_backward():
    w = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.5, 0.25], dtype=ember.float64, requires_grad=True)
    out = (w * x * x).sum()
    (gx,) = ember.autograd.grad(out, x, create_graph=True)    # 2 w x
    penalty = (gx * gx).sum()                                 # 4 w^2 x^2
    penalty.backward()
    np.testing.assert_allclose(w.grad.numpy(), [8 * 1.0 * 0.25, 8 * -2.0 * 0.0625])
    np.testing.assert_allclose(x.grad.numpy(), [8 * 1.0 * 0.5, 8 * 4.0 * 0.25])


def test_no_graph_is_built_during_plain_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x ** 3).sum(), x)
    assert g.grad_fn is None and not g.requires_grad


# -- gradcheck / gradgradcheck ---------------------------------------------------------------------------------

def test_gradcheck_and_gradgradcheck_pass_on_correct_ops(device):
    a = rand64(3, 4, device=device, seed=1)
    b = rand64(4, device=device, seed=2, low=0.5, high=1.5)
    check_grads(lambda u, v: (u * v + u / v - v ** 3).sum(dim=0), a, b, gradgrad=True)
    check_grads(lambda u: u.mean(), a, gradgrad=True)
    check_grads(lambda u: u.view(12).expand(2, 12) * 2, a, gradgrad=True)


class _WrongBackward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 3  # should be 2x


class _WrongSecondDerivative(ember.autograd.Function):
    """Right first derivative, but its backward is not differentiable correctly (treats x as constant)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * (x * x).detach()


def test_gradcheck_reports_a_wrong_backward():
    x = rand64(4, seed=3)
    assert ember.autograd.gradcheck(_WrongBackward.apply, (x,), raise_exception=False) is False
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(_WrongBackward.apply, (x,))


def test_gradgradcheck_reports_a_wrong_double_backward():
    x = rand64(3, seed=4)
    assert ember.autograd.gradcheck(_WrongSecondDerivative.apply, (x,))
    assert ember.autograd.gradgradcheck(_WrongSecondDerivative.apply, (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="requires_grad=True"):
        ember.autograd.gradcheck(lambda t: t * 2, (rand64(2, requires_grad=False),))


def test_gradcheck_warns_for_float32_inputs():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    with pytest.warns(UserWarning, match="float64"):
        ember.autograd.gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-2)


def test_gradcheck_with_non_tensor_and_multiple_outputs():
    x = rand64(3, seed=5)
    assert ember.autograd.gradcheck(lambda t, k: (t * k, t.sum()), (x, 2.5))


def test_double_backward_math_is_exact_for_polynomial():
    x = ember.tensor([1.5], dtype=ember.float64, requires_grad=True)
    (g1,) = ember.autograd.grad((x ** 4).sum(), x, create_graph=True)
    (g2,) = ember.autograd.grad(g1.sum(), x)
    assert math.isclose(g1.item(), 4 * 1.5 ** 3) and math.isclose(g2.item(), 12 * 1.5 ** 2)
