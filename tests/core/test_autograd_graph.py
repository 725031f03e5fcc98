"""Autograd graph basics: leaves, requires_grad, .grad accumulation, grad_fn names, next_functions,
backward with an external gradient, retain_graph."""
import numpy as np
import pytest

import ember
from ember.autograd.node import AccumulateGrad

# -- leaves and requires_grad ---------------------------------------------------------------------------------

def test_leaves_and_is_leaf(device):
    x = ember.ones(2, requires_grad=True, device=device)
    c = ember.ones(2, device=device)
    y = x * 2
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and y.requires_grad
    # an op on tensors that need no grad makes another leaf
    assert (c * 2).is_leaf and not (c * 2).requires_grad


def test_requires_grad_flag_and_method(device):
    x = ember.zeros(3, device=device)
    assert x.requires_grad is False
    assert x.requires_grad_() is x
    assert x.requires_grad is True
    x.requires_grad = False
    assert x.requires_grad is False
    assert ember.tensor([1.0], requires_grad=True, device=device).requires_grad


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.bool])
def test_only_float_tensors_can_require_grad(dtype):
    x = ember.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        x.requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ember.tensor([1, 2], requires_grad=True)
    assert x.requires_grad_(False) is x  # switching it off is always fine


def test_requires_grad_of_non_leaf_can_only_stay_on():
    y = ember.ones(2, requires_grad=True) * 2
    assert y.requires_grad_(True) is y
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="var_no_grad = var.detach()"):
        y.requires_grad = False


def test_non_float_results_never_require_grad():
    x = ember.tensor([1.5, 2.5], requires_grad=True)
    mask = x > 1
    assert not mask.requires_grad and mask.is_leaf and mask.grad_fn is None


# -- accumulation ---------------------------------------------------------------------------------------------

def test_grad_accumulates_across_backward_calls(device):
    x = ember.tensor([1.0, 2.0], requires_grad=True, device=device)
    assert x.grad is None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(force=True), [2.0, 4.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(force=True), [5.0, 7.0])
    assert x.grad.device == x.device and x.grad.dtype == x.dtype
    assert not x.grad.requires_grad


def test_grad_can_be_reset_and_assigned():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad = ember.zeros(2)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = ember.zeros(3)
    with pytest.raises(TypeError, match="Tensor or None"):
        x.grad = [1.0, 2.0]


def test_same_leaf_used_twice_sums_gradients(device):
    x = ember.tensor([3.0], requires_grad=True, device=device)
    (x * x + x).sum().backward()
    assert x.grad.tolist() == [7.0]


def test_gradient_flows_through_broadcast(device):
    x = ember.ones(2, 3, requires_grad=True, device=device)
    b = ember.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    (x * b).sum().backward()
    assert b.grad.tolist() == [2.0, 2.0, 2.0]
    assert x.grad.tolist() == [[1.0, 2.0, 3.0]] * 2


# -- grad_fn names and next_functions ------------------------------------------------------------------------

def _x():
    return ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)


@pytest.mark.parametrize("make, name", [
    (lambda x: x + x, "AddBackward0"),
    (lambda x: x + 1, "AddBackward0"),
    (lambda x: x - 1, "SubBackward0"),
    (lambda x: 1 - x, "RsubBackward1"),
    (lambda x: x * x, "MulBackward0"),
    (lambda x: x / 2, "DivBackward0"),
    (lambda x: -x, "NegBackward0"),
    (lambda x: x.sum(), "SumBackward0"),
    (lambda x: x.sum(dim=0), "SumBackward1"),
    (lambda x: x.mean(), "MeanBackward0"),
    (lambda x: x.mean(dim=1), "MeanBackward1"),
    (lambda x: x ** 2, "PowBackward0"),
    (lambda x: x ** ember.tensor(2.0), "PowBackward1"),
    (lambda x: 2 ** x, "PowBackward2"),
    (lambda x: x.view(4), "ViewBackward0"),
    (lambda x: x.expand(3, 2, 2), "ExpandBackward0"),
    (lambda x: x.to(ember.float64), "ToCopyBackward0"),
    (lambda x: x.exp(), "ExpBackward0"),
    (lambda x: x.sin(), "SinBackward0"),
    (lambda x: x.sqrt(), "SqrtBackward0"),
    (lambda x: x.t(), "TBackward0"),
    (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
    (lambda x: x @ x, "MmBackward0"),
])
def test_grad_fn_names_match_pytorch(make, name):
    y = make(_x())
    assert y.grad_fn.name() == name
    assert f"grad_fn=<{name}>" in repr(y)
    assert repr(y.grad_fn).startswith(f"<{name} object at 0x")


def test_next_functions_point_to_accumulate_grad_at_leaves():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    c = ember.ones(2)
    s = a + b
    (fa, na), (fb, nb) = s.grad_fn.next_functions
    assert isinstance(fa, AccumulateGrad) and fa.name() == "AccumulateGrad"
    assert fa.variable is a and fb.variable is b and na == nb == 0
    # the same leaf's accumulator is shared by every op that uses it
    assert (a * 3).grad_fn.next_functions[0][0] is fa
    # inputs that need no grad (tensors or Python scalars) have no edge
    assert (a + c).grad_fn.next_functions[1] == (None, 0)
    assert (a + 1).grad_fn.next_functions[1] == (None, 0)


def test_next_functions_chain_through_the_graph():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    z = (y + 1).sum()
    add_fn, nr = z.grad_fn.next_functions[0]
    assert add_fn is not None and add_fn.name() == "AddBackward0" and nr == 0
    mul_fn = add_fn.next_functions[0][0]
    assert mul_fn is y.grad_fn and mul_fn.name() == "MulBackward0"
    assert mul_fn.next_functions[0][0].variable is x


# -- backward with and without an external gradient ----------------------------------------------------------

def test_backward_non_scalar_needs_gradient():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_backward_with_external_gradient(device):
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    y = x * x
    y.backward(gradient=ember.tensor([1.0, 0.1, 0.01], device=device))
    np.testing.assert_allclose(x.grad.numpy(force=True), [2.0, 0.4, 0.06], rtol=1e-6)


def test_backward_gradient_shape_must_match():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(2))


def test_backward_one_element_non_scalar_is_implicit():
    x = ember.ones(1, requires_grad=True)
    (x * 4).backward()
    assert x.grad.tolist() == [4.0]


def test_backward_on_tensor_without_graph_errors():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ember.ones(1).backward()


def test_backward_with_inputs_only_fills_those():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 3.0]
    assert b.grad is None


def test_ember_autograd_backward_function_with_several_roots():
    x = ember.ones(2, requires_grad=True)
    ember.autograd.backward([(x * 2).sum(), (x * 3).sum()])
    assert x.grad.tolist() == [5.0, 5.0]


# -- retain_graph -----------------------------------------------------------------------------------------------

def test_second_backward_without_retain_graph_errors():
    x = ember.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_graph_without_saved_tensors_can_be_walked_twice():
    # like PyTorch, only freed *saved* values make the second pass fail
    x = ember.ones(2, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_gradients_from_all_consumers_are_summed_before_a_node_runs():
    # a diamond, a leaf used at several depths, and two roots where one feeds the other
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b, c = a * 3, a * 4
    y = (b + c + x).sum()
    z = (a * a).sum()
    ember.autograd.backward([y, z], retain_graph=True)
    # dy/dx = 2*3 + 2*4 + 1 = 15; dz/dx = 2a*2 = 8x
    assert x.grad.tolist() == [15.0 + 8.0, 15.0 + 16.0]
    (g,) = ember.autograd.grad((a * b).sum(), x)  # a*b = 12 x^2
    assert g.tolist() == [24.0, 48.0]
