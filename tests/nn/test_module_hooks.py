"""Module hooks: forward pre-hooks and forward hooks (kwargs, prepend, always_call), full backward hooks and
backward pre-hooks (replacing gradients, in-place ops inside), legacy backward hooks, module-global hooks.

Behaviours (orders, None entries, messages) were checked against PyTorch 2.13 by hand; gradients are computed
by hand in the comments.
"""
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.modules import _hooks
from ember.nn.modules import module as module_mod
from ember.nn.utils.hooks import RemovableHandle


class MulAdd(nn.Module):
    """``(x * y, y + 1)``, with an in-place op on an intermediate inside."""

    def forward(self, x, y):
        x = x * 1
        x.mul_(2)
        return x * y, y + 1


def values(grads):
    return [None if g is None else g.tolist() for g in grads]


# -- forward -----------------------------------------------------------------------------------------------------

def test_forward_pre_hook_replaces_input_and_handle_removes_it():
    m = nn.Identity()
    handle = m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a single value is wrapped in a tuple
    assert isinstance(handle, RemovableHandle)
    assert m(ember.ones(1)).tolist() == [2.0]
    handle.remove()
    handle.remove()
    assert m(ember.ones(1)).tolist() == [1.0]
    with m.register_forward_pre_hook(lambda mod, args: (args[0] * 3,)):
        assert m(ember.ones(1)).tolist() == [3.0]
    assert m(ember.ones(1)).tolist() == [1.0]


def test_forward_hook_sees_input_and_replaces_output():
    lin = nn.Linear(2, 1)
    seen = []

    def hook(mod, args, output):
        seen.append((mod, args, output))
        return output + 5

    lin.register_forward_hook(hook)
    x = ember.ones(3, 2)
    out = lin(x)
    mod, args, raw = seen[0]
    assert mod is lin and args[0] is x
    np.testing.assert_allclose(out.detach().numpy(), raw.detach().numpy() + 5)
    assert out.grad_fn.name() == "AddBackward0"


def test_hooks_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Scale()
    seen = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 10.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append((kwargs, out.tolist())), with_kwargs=True)
    assert m(ember.ones(1), scale=2.0).tolist() == [10.0]
    assert seen == [({"scale": 10.0}, [10.0])]
    bad = Scale()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, "
                                           r"new_kwargs\), but got 3."):
        bad(ember.ones(1))


def test_prepend_orders_hooks():
    order = []
    m = nn.Identity()
    m.register_forward_hook(lambda *a: order.append(1))
    m.register_forward_hook(lambda *a: order.append(2), prepend=True)
    m.register_forward_pre_hook(lambda *a: order.append("p1"))
    m.register_forward_pre_hook(lambda *a: order.append("p2"), prepend=True)
    m(1)
    assert order == ["p2", "p1", 2, 1]


def test_always_call_hook_runs_when_forward_raises():
    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    calls = []
    b = Bad()
    b.register_forward_hook(lambda m, a, o: calls.append(("always", o)), always_call=True)
    b.register_forward_hook(lambda m, a, o: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        b(1)
    assert calls == [("always", None)]
    other = Bad()
    other.register_forward_hook(lambda *a: calls.append("removed"), always_call=True, with_kwargs=True).remove()
    with pytest.raises(ValueError, match="boom"):
        other(1)
    assert calls == [("always", None)]  # a removed always_call hook does not run
    # and leaves no bookkeeping behind (a module with none calls forward directly: nothing else shows that)
    assert not (other._forward_hooks or other._forward_hooks_always_called or other._forward_hooks_with_kwargs
                or other._call_hook_ids)


def test_global_forward_hooks_apply_to_every_module():
    seen = []
    handle = module_mod.register_module_forward_hook(lambda m, i, o: seen.append(type(m).__name__))
    pre = module_mod.register_module_forward_pre_hook(lambda m, i: seen.append("pre"))
    try:
        nn.Sequential(nn.Identity(), nn.Linear(1, 1))(ember.ones(1))
    finally:
        handle.remove()
        pre.remove()
    nn.Identity()(1)
    assert seen == ["pre", "pre", "Identity", "pre", "Linear", "Sequential"]
    # removal leaves no global bookkeeping behind (with none, every module calls forward directly: nothing else shows)
    assert not _hooks._global_forward_hooks and not _hooks._global_call_hook_ids


def test_no_hooks_means_forward_is_called_directly():
    calls = []

    class Spy(nn.Module):
        def forward(self, *args, **kwargs):
            calls.append((args, kwargs))
            return 7

    m = Spy()
    handle = m.register_forward_hook(lambda *a: None)
    handle.remove()
    # the direct call is a saving with no other visible effect: the empty hook-id table is what selects it
    assert not m._call_hook_ids and m(1, k=2) == 7 and calls == [((1,), {"k": 2})]


# -- backward ----------------------------------------------------------------------------------------------------

def test_full_backward_hook_sees_and_replaces_grad_input():
    m = MulAdd()
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", values(go))))

    def hook(mod, gi, go):
        log.append(("full", values(gi), values(go)))
        return gi[0] * 10, gi[1]

    m.register_full_backward_hook(hook)
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0, 4.0], requires_grad=True)
    a, b = m(x, y)
    assert a.grad_fn.name() == "BackwardHookFunctionBackward"
    (a.sum() + (b * 2).sum()).backward()
    # a = 2xy, b = y + 1: d/dx = 2y = [6, 8]; d/dy = 2x + 2 = [4, 6]; grad_outputs are [1, 1] and [2, 2]
    assert log == [("pre", [[1.0, 1.0], [2.0, 2.0]]),
                   ("full", [[6.0, 8.0], [4.0, 6.0]], [[1.0, 1.0], [2.0, 2.0]])]
    assert x.grad.tolist() == [60.0, 80.0] and y.grad.tolist() == [4.0, 6.0]


def test_backward_hooks_with_an_input_that_needs_no_grad_and_an_unused_output():
    m = MulAdd()
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", values(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", values(gi), values(go))))
    y = ember.tensor([3.0, 4.0], requires_grad=True)
    a, _ = m(ember.tensor([1.0, 2.0]), y)
    a.sum().backward()
    # as PyTorch: the second output's gradient is None; the first input's gradient is zeros
    assert log == [("pre", [[1.0, 1.0], None]), ("full", [[0.0, 0.0], [2.0, 4.0]], [[1.0, 1.0], None])]


def test_backward_pre_hook_replaces_grad_output():
    lin = nn.Linear(2, 1, bias=False)
    with ember.no_grad():
        lin.weight.copy_(ember.tensor([[2.0, 3.0]]))
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 4,))
    x = ember.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    assert x.grad.tolist() == [[8.0, 12.0]] and lin.weight.grad.tolist() == [[4.0, 4.0]]


def test_backward_hook_when_no_input_requires_grad_warns_and_gets_none():
    lin = nn.Linear(2, 1)
    got = []
    lin.register_full_backward_hook(lambda mod, gi, go: got.append((gi, values(go))))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect "
                                         "to module outputs since no inputs require gradients"):
        lin(ember.ones(1, 2)).sum().backward()
    assert got == [((None,), [[[1.0]]])]
    assert lin.weight.grad.tolist() == [[1.0, 1.0]]


def test_backward_hook_with_in_place_ops_inside():
    class Inner(nn.Module):
        def forward(self, x):
            y = x * 3
            y.add_(1)
            return y.clamp_(min=0)

    m = Inner()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((values(gi), values(go))))
    a = ember.tensor([1.0, -2.0], requires_grad=True)
    m(a).sum().backward()
    # y = max(3a + 1, 0): slope 3 where 3a + 1 > 0 (a = 1), 0 where not (a = -2)
    assert got == [([[3.0, 0.0]], [[1.0, 1.0]])] and a.grad.tolist() == [3.0, 0.0]


def test_module_changing_its_input_in_place_under_backward_hooks():
    class Double(nn.Module):
        def forward(self, x):
            return x.mul_(2)

    m = Double()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((values(gi), values(go))))
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    x = a * 1
    y = m(x)
    # x now holds 2a, and its history says so: z = sum(5x) + sum(3y) = sum(10a) + sum(6a)
    (x * 5 + y * 3).sum().backward()
    assert a.grad.tolist() == [16.0, 16.0]
    # the hook sees y's gradient (3) as grad_output, and as grad_input everything that flows through the
    # module's in-place op: 2 * 3 through y plus 2 * 5 through x, which the module changed
    assert got == [([[16.0, 16.0]], [[3.0, 3.0]])]
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        m(leaf)


def test_output_changed_in_place_after_the_module():
    class Twice(nn.Module):
        def forward(self, x):
            return x * 2

    m = Twice()
    got = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((values(gi), values(go))))
    a = ember.tensor([1.0, -2.0], requires_grad=True)
    y = m(a)
    y.mul_(5)
    y.sum().backward()
    assert got == [([[10.0, 10.0]], [[5.0, 5.0]])] and a.grad.tolist() == [10.0, 10.0]


def test_wrong_number_of_gradients_from_hooks():
    lin = nn.Linear(1, 1)
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but "
                                           "expected 1"):
        lin(ember.ones(1, requires_grad=True)).sum().backward()
    lin = nn.Linear(1, 1)
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 2, "
                                           "but expected 1"):
        lin(ember.ones(1, requires_grad=True)).sum().backward()


def test_full_and_legacy_backward_hooks_do_not_mix():
    lin = nn.Linear(1, 1)
    lin.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin.register_backward_hook(lambda *a: None)


def test_legacy_backward_hook_sees_the_last_op():
    class Scale(nn.Module):
        def forward(self, x):
            return x * 3

    m = Scale()
    got = []
    m.register_backward_hook(lambda mod, gi, go: got.append((mod, values(gi), values(go))))
    x = ember.ones(2, requires_grad=True)
    m(x).sum().backward()
    assert got == [(m, [[3.0, 3.0], None], [[1.0, 1.0]])]


def test_global_backward_hooks():
    seen = []
    h1 = module_mod.register_module_full_backward_hook(lambda m, gi, go: seen.append(("full", type(m).__name__)))
    h2 = module_mod.register_module_full_backward_pre_hook(lambda m, go: seen.append(("pre", type(m).__name__)))
    try:
        net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
        net(ember.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        h1.remove()
        h2.remove()
    assert seen == [("pre", "Sequential"), ("pre", "Linear"), ("full", "Linear"), ("pre", "Linear"),
                    ("full", "Linear"), ("full", "Sequential")]


def test_non_tensor_output_with_backward_hooks_warns():
    m = nn.Identity()
    m.register_full_backward_hook(lambda *a: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert m([1]) == [1]
    assert [str(w.message) for w in caught] == [
        "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but received "
        "<class 'list'>"]


def test_tensor_hook_on_a_parameter():
    lin = nn.Linear(2, 1)
    grads = []
    lin.weight.register_hook(lambda g: grads.append(g.tolist()))
    lin(ember.tensor([[1.0, 2.0]])).sum().backward()
    assert grads == [[[1.0, 2.0]]]
