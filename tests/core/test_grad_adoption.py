"""A leaf's first ``.grad`` is the gradient array itself when nothing else holds it, a copy otherwise: either
way no two gradients ever share memory, and no gradient shares memory with anything the user holds."""
import numpy as np

import ember


def _copies(monkeypatch):
    # adopting without a copy is a saving with no other visible effect: counting the copy helper's calls shows it
    made = []
    original = ember.Tensor._detached_copy

    def counting(self):
        made.append(self)
        return original(self)
    monkeypatch.setattr(ember.Tensor, "_detached_copy", counting)
    return made


def test_fresh_gradients_are_adopted_without_a_copy(monkeypatch):
    made = _copies(monkeypatch)
    w = ember.randn(3, 4, requires_grad=True)
    x = ember.randn(2, 4, requires_grad=True)
    ember.nn.functional.linear(x, w).sum().backward()
    assert made == []
    assert x.grad.shape == (2, 4) and w.grad.shape == (3, 4)
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(x.detach().numpy().sum(0), (3, 4)), rtol=1e-6)


def test_a_post_accumulate_grad_hook_does_not_stop_adoption(monkeypatch):
    made = _copies(monkeypatch)
    w = ember.randn(3, 4, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda leaf: seen.append(leaf.grad.numpy().copy()))
    ember.nn.functional.linear(ember.ones(2, 4), w).sum().backward()
    assert made == [] and len(seen) == 1
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 4), 2.0))
    np.testing.assert_allclose(seen[0], np.full((3, 4), 2.0))


def test_one_gradient_reaching_two_leaves_is_copied_for_each():
    a, b = ember.randn(3, requires_grad=True), ember.randn(3, requires_grad=True)
    (a + b).backward(ember.ones(3))  # AddBackward hands the same gradient to both
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad += 1
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_a_gradient_the_caller_holds_is_copied():
    a = ember.randn(3, requires_grad=True)
    gradient = ember.ones(3)
    a.backward(gradient)
    assert a.grad is not gradient and not np.shares_memory(a.grad.numpy(), gradient.numpy())
    a.backward(gradient)  # accumulates in place into a.grad, never into the caller's tensor
    assert gradient.tolist() == [1.0, 1.0, 1.0] and a.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_gradient_a_hook_keeps_is_copied():
    a = ember.randn(3, requires_grad=True)
    kept = []
    a.register_hook(lambda g: kept.append(g))
    (a * 2).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), kept[0].numpy())


def test_a_view_gradient_is_copied():
    w = ember.randn(4, 3, requires_grad=True)
    (ember.ones(2, 3) @ w.t()).sum().backward()  # w's gradient arrives through a transpose: a view
    assert w.grad.numpy().base is None  # the array behind .grad owns its memory: no view of the graph's gradient
    np.testing.assert_allclose(w.grad.numpy(), np.full((4, 3), 2.0))
