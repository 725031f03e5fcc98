"""detach / detach_ / .data, retain_grad, tensor hooks, post-accumulate hooks (also on leaves no name refers to),
graph-node hooks."""
import gc
import weakref

import numpy as np
import pytest

import ember
from ember._sibling_api import queue_callback

# -- detach, detach_, .data ------------------------------------------------------------------------------------

def test_detach_shares_data_but_not_the_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr()
    d.numpy()[0] = 5.0
    assert x.tolist() == [5.0, 2.0]


def test_detach_of_non_leaf_stops_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (y.detach() * y).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]  # d/dx (const(2x) * 2x) = 2 * const(2x)


def test_detach_shares_the_version_counter():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert d._version == x._version == 0
    d.add_(1)
    assert x._version == d._version == 1
    assert x.tolist() == [2.0, 3.0]


def test_in_place_change_through_detach_is_caught_in_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    y.detach().mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_data_shares_memory_but_not_version_counter():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    d.mul_(10)
    assert x.tolist() == [10.0, 20.0]
    assert x._version == 0  # changes through .data are invisible to autograd, as in PyTorch


def test_data_setter_swaps_the_values():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.data = ember.tensor([7.0, 8.0])
    assert x.tolist() == [7.0, 8.0] and x.requires_grad and x.is_leaf
    with pytest.raises(TypeError, match="Tensor"):
        x.data = [1.0]


def test_detach_in_place_makes_a_leaf():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


def test_detach_in_place_refuses_views_of_tensors_that_require_grad():
    x = ember.ones(4, requires_grad=True)
    v = x.view(2, 2)
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead."):
        v.detach_()


# -- retain_grad -------------------------------------------------------------------------------------------------

def test_retain_grad_keeps_non_leaf_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = x * 4
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad and not z.retains_grad and not x.retains_grad
    (y * y + z).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert z.grad is None
    assert not y.grad.requires_grad


def test_retain_grad_accumulates():
    x = ember.tensor([1.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    (y * 2).sum().backward(retain_graph=True)
    (y * 2).sum().backward()
    assert y.grad.tolist() == [4.0]


def test_retain_grad_on_leaf_is_a_no_op_and_needs_requires_grad():
    x = ember.ones(1, requires_grad=True)
    x.retain_grad()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ember.ones(1).retain_grad()


# -- tensor hooks -----------------------------------------------------------------------------------------------

def test_leaf_hook_sees_and_replaces_the_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 10

    x.register_hook(hook)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [30.0, 30.0]


def test_hook_returning_none_keeps_the_gradient():
    x = ember.tensor([1.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.item()))
    (x * 2).sum().backward()
    assert calls == [2.0] and x.grad.tolist() == [2.0]


def test_hook_handle_remove():
    x = ember.tensor([1.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()  # removing twice is harmless
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_several_hooks_run_in_registration_order():
    x = ember.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [30.0]


def test_hook_on_non_leaf_changes_what_flows_upstream():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 0.5

    y.register_hook(hook)
    (y * y).sum().backward()
    assert seen == [[4.0, 8.0]]               # dL/dy = 2y
    assert x.grad.tolist() == [4.0, 8.0]      # halved, then times dy/dx = 2


def test_hook_on_non_leaf_and_retain_grad():
    x = ember.tensor([1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    (y * 1).sum().backward()
    assert x.grad.tolist() == [6.0]


def test_register_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(2).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="callable"):
        ember.ones(2, requires_grad=True).register_hook(3)


def test_hook_freezes_a_parameter_by_zeroing_its_gradient():
    # the seed's "freeze by a hook": the gradient of the frozen tensor is replaced by zeros
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 0)
    (w * w).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0]


# -- post-accumulate-grad hooks --------------------------------------------------------------------------------

def test_post_accumulate_grad_hook_runs_after_grad_is_stored():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(t):
        assert t is w
        seen.append(t.grad.tolist())

    handle = w.register_post_accumulate_grad_hook(hook)
    (w * 2).sum().backward()
    (w * 2).sum().backward()
    assert seen == [[2.0, 2.0], [4.0, 4.0]]
    handle.remove()
    (w * 2).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_only_on_leaves():
    y = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)


# -- a leaf no name refers to any more: the graph keeps it, with its hooks, as in PyTorch ---------------------

def _accumulator(y):
    """The AccumulateGrad node of the leaf in ``y = (leaf <op> other).sum()``."""
    return y.grad_fn.next_functions[0][0].next_functions[0][0]


def test_post_accumulate_grad_hook_fires_on_a_leaf_with_no_name():
    w = ember.ones(2, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append((t.shape, t.grad.tolist())))
    y = (w * 2).sum()
    del w
    y.backward(retain_graph=True)
    y.backward()
    assert seen == [((2,), [2.0, 2.0]), ((2,), [4.0, 4.0])]  # the same leaf, accumulating, as PyTorch


def test_tensor_hook_fires_on_a_leaf_with_no_name_and_its_result_is_stored():
    w = ember.ones(2, requires_grad=True)
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 10

    w.register_hook(hook)
    y = (w * 3).sum()
    del w
    y.backward()
    assert seen == [[3.0, 3.0]]
    assert _accumulator(y).variable.grad.tolist() == [30.0, 30.0]


def test_a_leaf_with_no_name_gets_its_grad_through_the_graph():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (w + 1).sum()  # AddBackward saves no tensor: only the AccumulateGrad node holds the leaf
    assert y.grad_fn.next_functions[0][0]._saved == ()
    del w
    leaf = _accumulator(y).variable
    assert leaf.tolist() == [1.0, 2.0] and leaf.grad is None
    y.backward()
    assert leaf.grad.tolist() == [1.0, 1.0]


def test_hooks_outlive_the_graph_on_a_named_leaf():
    w = ember.ones(2, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    w.register_hook(lambda g: g + 1)
    y = (w * 2).sum()
    first = _accumulator(y)
    y.backward()
    del y, first  # the graph and its AccumulateGrad are gone; the hooks live on the leaf
    y = (w * 2).sum()
    y.backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]


def test_live_graphs_share_one_accumulator_and_a_hook_fires_once_per_backward():
    w = ember.ones(2, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.tolist()))
    y1, y2 = w * 2, w * 3
    assert y1.grad_fn.next_functions[0][0] is y2.grad_fn.next_functions[0][0]
    del w
    (y1 + y2).sum().backward()
    assert calls == [[5.0, 5.0]]


def test_a_leaf_and_its_graph_are_freed_with_the_graph_without_the_cycle_collector():
    gc.disable()
    try:
        w = ember.ones(2, requires_grad=True)
        w.register_hook(lambda g: g)
        w.register_post_accumulate_grad_hook(lambda t: None)
        y = (w * 2).sum()
        leaf, acc, node = weakref.ref(w), weakref.ref(_accumulator(y)), weakref.ref(y.grad_fn)
        del w
        y.backward()
        assert leaf() is not None and acc() is not None  # the graph holds them
        del y
        assert leaf() is None and acc() is None and node() is None  # freed by reference counting alone
        w = ember.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        leaf = weakref.ref(w)
        del w
        assert leaf() is None  # a leaf whose graph is gone is freed with its last name, as before
    finally:
        gc.enable()


def test_create_graph_cycle_through_the_grad_is_collected():
    # PyTorch warns that backward(create_graph=True) makes a cycle parameter -> .grad -> graph -> parameter
    # that it cannot free; here the cycle is made of Python objects, which the cycle collector frees
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    leaf = weakref.ref(w)
    del w
    gc.collect()
    assert leaf() is None


# -- when post-accumulate-grad hooks fire: as soon as the leaf's gradient is complete, as PyTorch's engine -----

def _three_layer_step(ws, events):
    h = ember.ones(2)
    for i, w in enumerate(ws):
        h = (h * w).tanh()
        h.register_hook(lambda g, i=i: events.append(f"layer{i}"))
    loss = h.sum()
    loss.backward()
    return loss


def test_post_accumulate_grad_hooks_fire_during_backward_while_the_last_steps_graph_is_alive():
    # a training loop keeps the last step's loss (so its graph and its AccumulateGrad nodes) while the next
    # forward runs; each leaf's hook must still fire as soon as its layer is done (what DDP's buckets rely on)
    ws = [ember.ones(2, requires_grad=True) for _ in range(3)]
    events = []
    for i, w in enumerate(ws):
        w.register_post_accumulate_grad_hook(lambda t, i=i: events.append(f"acc{i}"))
    loss = None
    for _ in range(3):
        events.clear()
        loss = _three_layer_step(ws, events)  # noqa: F841 (the name keeps the graph alive into the next step)
        assert events == ["layer2", "acc2", "layer1", "acc1", "layer0", "acc0"]  # PyTorch 2.13's order


def test_post_accumulate_grad_hook_fires_once_per_backward_with_graphs_in_flight():
    # a 1F1B-like schedule: forwards and backwards of micro-batches interleave, the leaf used twice in each;
    # gradients printed by PyTorch 2.13
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))

    def loss(k):
        return ((ember.ones(2) * k * w).tanh() * w).sum()

    l1, l2 = loss(1), loss(2)
    l1.backward()
    l3 = loss(3)
    l2.backward()
    l3.backward()
    np.testing.assert_allclose(seen, [[1.181569, 1.105329], [2.286898, 2.110022], [3.31155, 3.110157]], atol=1e-6)


def test_post_accumulate_grad_hook_waits_for_every_path_to_the_leaf():
    w = ember.ones(2, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    a = w * 2
    b = (w * 3).exp().log()  # a longer path, made later: its nodes run first
    (a + b + w).sum().backward()
    assert seen == [[6.0, 6.0]]


# -- graph-node hooks ------------------------------------------------------------------------------------------

def test_node_post_hook_sees_inputs_and_outputs_and_can_replace():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    seen = {}

    def hook(grad_inputs, grad_outputs):
        seen["in"] = [g.tolist() for g in grad_inputs]
        seen["out"] = [g.tolist() for g in grad_outputs]
        return (grad_inputs[0] * 0, grad_inputs[1])

    handle = y.grad_fn.register_hook(hook)
    y.sum().backward()
    assert seen == {"in": [[3.0, 4.0], [1.0, 2.0]], "out": [[1.0, 1.0]]}
    assert a.grad.tolist() == [0.0, 0.0] and b.grad.tolist() == [1.0, 2.0]
    handle.remove()


def test_node_prehook_can_replace_incoming_gradients():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []

    def prehook(grad_outputs):
        seen.append(grad_outputs[0].tolist())
        return (grad_outputs[0] * 2,)

    y.grad_fn.register_prehook(prehook)
    y.sum().backward()
    assert seen == [[1.0, 1.0]]
    assert x.grad.tolist() == [6.0, 6.0]


def test_node_metadata_and_name():
    y = ember.ones(1, requires_grad=True) * 2
    y.grad_fn.metadata["tag"] = "mine"
    assert y.grad_fn.metadata == {"tag": "mine"}
    assert y.grad_fn.name() == "MulBackward0"
    assert isinstance(y.grad_fn, ember.autograd.Node)


def test_gradients_match_numpy_through_hooks_and_retain():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4)
    x = ember.tensor(a, requires_grad=True)
    h = x * x
    h.retain_grad()
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    np.testing.assert_allclose(h.grad.numpy(), np.ones(4))


# -- final callbacks (what DistributedDataParallel waits for its buckets in) ------------------------------------

def test_queue_callback_runs_once_after_the_whole_backward_and_may_queue_more():
    w1, w2 = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    events = []

    def second():
        events.append("second")

    def first():
        events.append(("first", w1.grad.tolist(), w2.grad.tolist()))  # both complete
        queue_callback(second)

    w2.register_post_accumulate_grad_hook(lambda t: queue_callback(first))
    ((w1 * 2).exp().sum() + (w2 * 3).sum()).backward()  # w2's gradient is complete before w1's
    assert events == [("first", [pytest.approx(2 * np.exp(2))] * 2, [3.0, 3.0]), "second"]
    events.clear()
    (w1 * 2).sum().backward()  # callbacks belong to one backward
    assert events == []


def test_queue_callback_outside_a_backward_is_an_error():
    with pytest.raises(RuntimeError, match="only be installed during backward pass"):
        queue_callback(print)
