"""``Op.apply1`` and ``Op.apply2``, the short paths of the hot ops, record exactly what ``Op.apply`` records, and
hand every unusual call (views whose base changed, float16, autocast, export traces, errors) to it."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember.autograd import function
from ember.autograd.grad_mode import DETOURS
from ember.ops.activation import Relu
from ember.ops.arith import Add, Div, Mul, Neg, Sub
from ember.ops.comparison import Lt
from ember.ops.reduction import Sum
from ember.ops.view import Expand

Exp = ember.exp.op


def _leaf(shape, requires_grad=True, dtype=ember.float64, seed=0):
    data = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    return ember.tensor(data, dtype=dtype, requires_grad=requires_grad)


def _record(t):
    """What a graph node holds for ``t``: its class name, edges (leaves by identity), needs, shapes, saved."""
    fn = t.grad_fn
    if fn is None:
        return t.requires_grad, None
    edges = tuple((id(n), nr) if n is not None else None for n, nr in fn._next)
    saved = tuple(id(s) for s in fn._saved)
    return (t.requires_grad, type(fn).__name__, edges, fn.needs_input_grad, getattr(fn, "in_shapes", None), saved,
            fn._saved_versions)


def _same_call(cls, *inputs):
    """``cls.applyN(*inputs)`` against ``cls.apply(*inputs)``: equal values, dtype and graph record."""
    fast = (cls.apply1 if len(inputs) == 1 else cls.apply2)(*inputs)
    slow = cls.apply(*inputs)
    assert fast.dtype == slow.dtype and fast.shape == slow.shape
    np.testing.assert_array_equal(fast.numpy() if not fast.requires_grad else fast.detach().numpy(),
                                  slow.detach().numpy())
    assert _record(fast) == _record(slow)
    return fast, slow


BINARY = [Add, Sub, Mul, Div]
SHAPES = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 2))]


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True), (False, False)], ids=str)
def test_apply2_on_two_tensors_records_what_apply_records(cls, shapes, needs):
    a, b = _leaf(shapes[0], needs[0], seed=1), _leaf(shapes[1], needs[1], seed=2)
    fast, slow = _same_call(cls, a, b)
    if fast.requires_grad:
        ga = ember.autograd.grad(fast.sum(), [t for t in (a, b) if t.requires_grad])
        gs = ember.autograd.grad(slow.sum(), [t for t in (a, b) if t.requires_grad])
        for x, y in zip(ga, gs):
            np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.__name__)
@pytest.mark.parametrize("number", [2, 0.5, True])
def test_apply2_with_a_python_number_records_what_apply_records(cls, number):
    a = _leaf((2, 3))
    fast, _ = _same_call(cls, a, number)
    assert fast.grad_fn._next[1] == (None, 0) and fast.grad_fn.needs_input_grad == (True, False)


def test_apply2_on_an_intermediate_result_links_its_node():
    a = _leaf((2, 2))
    h = a * 3
    fast, slow = _same_call(Mul, h, h)
    assert fast.grad_fn._next == ((h.grad_fn, 0), (h.grad_fn, 0))
    (g,) = ember.autograd.grad(fast.sum(), [a])
    np.testing.assert_allclose(g.numpy(), 18 * a.detach().numpy())


def test_apply2_gives_bool_results_without_history():
    a, b = _leaf((3,), seed=1), _leaf((3,), seed=2)
    fast, _ = _same_call(Lt, a, b)
    assert fast.dtype == ember.bool and not fast.requires_grad and fast.grad_fn is None


@pytest.mark.parametrize("cls", [Sum, Neg, Exp, Relu], ids=lambda c: c.__name__)
@pytest.mark.parametrize("requires_grad", [True, False])
def test_apply1_records_what_apply_records(cls, requires_grad):
    a = _leaf((2, 3), requires_grad)
    fast, slow = _same_call(cls, a)
    if requires_grad:
        (gf,) = ember.autograd.grad(fast.sum(), [a])
        (gs,) = ember.autograd.grad(slow.sum(), [a])
        np.testing.assert_array_equal(gf.numpy(), gs.numpy())


@pytest.mark.parametrize("requires_grad", [True, False])
def test_attributes_and_views_go_through_the_short_paths_as_through_apply(requires_grad):
    a, b = _leaf((3, 1), requires_grad, seed=1), _leaf((3, 4), requires_grad, seed=2)
    fast, slow = Mul.apply2(a, b, {"scale": 3.0}), Mul.apply(a, b, scale=3.0)
    np.testing.assert_array_equal(fast.detach().numpy(), (a.detach().numpy() * b.detach().numpy()) * 3)
    assert _record(fast) == _record(slow)
    view, general = Expand.apply1(a, {"shape": (2, 3, 4)}), Expand.apply(a, shape=(2, 3, 4))
    assert view.shape == (2, 3, 4) and view._base is a and view._view_of == general._view_of
    assert _record(view) == _record(general) and view.grad_fn is not None if requires_grad else view.grad_fn is None
    if requires_grad:
        (gf,) = ember.autograd.grad((view * view).sum(), [a])
        np.testing.assert_allclose(gf.numpy(), 2 * 8 * a.detach().numpy())


def test_fast_paths_record_nothing_under_no_grad():
    a, b = _leaf((2,)), _leaf((2,))
    with ember.no_grad():
        assert Add.apply2(a, b).grad_fn is None and Sum.apply1(a).grad_fn is None


def test_a_view_whose_base_changed_in_place_gets_the_bases_new_history():
    x = _leaf((2, 3))
    base = x * 1
    row = base[0]
    base.mul_(2)  # row's recorded history is stale until the general path refreshes it
    (g,) = ember.autograd.grad((row + row).sum(), [x], retain_graph=True)
    np.testing.assert_array_equal(g.numpy(), [[4, 4, 4], [0, 0, 0]])
    row = base[1]
    base.mul_(1)
    (g,) = ember.autograd.grad(Sum.apply1(row), [x])
    np.testing.assert_array_equal(g.numpy(), [[0, 0, 0], [2, 2, 2]])


def test_float16_takes_the_general_paths_float32_compute():
    a = ember.tensor([1000.0, 0.1], dtype=ember.float16)
    b = ember.tensor([0.01, 3.0], dtype=ember.float16)
    np.testing.assert_array_equal(Mul.apply2(a, b).numpy(), Mul.apply(a, b).numpy())
    np.testing.assert_array_equal(Exp.apply1(b).numpy(), Exp.apply(b).numpy())


def test_errors_are_the_general_paths():
    a, b = _leaf((2, 3)), _leaf((4,))
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        Add.apply2(a, b)


def test_apply2_hands_each_call_to_apply_while_an_autocast_region_or_trace_is_on(monkeypatch):
    calls = []
    general = function.Op.apply.__func__

    def spy(cls, *inputs, **attrs):
        calls.append(cls.name_)
        return general(cls, *inputs, **attrs)

    monkeypatch.setattr(function.Op, "apply", classmethod(spy))
    a, b = _leaf((2,), dtype=ember.float32), _leaf((2,), dtype=ember.float32)
    a + b
    assert calls == []
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert DETOURS[0] == 1
        a + b
        a.sum()
    assert calls == ["add", "sum"] and DETOURS[0] == 0
    calls.clear()
    token = function.start_trace(object())  # any trace object: apply hands calls to its run
    try:
        assert DETOURS[0] == 1
    finally:
        function.end_trace(token)
    assert DETOURS[0] == 0


def test_an_autocast_region_in_another_thread_sends_this_threads_calls_the_general_way():
    a, b = _leaf((2,), dtype=ember.float32), _leaf((2,), dtype=ember.float32)
    inside, leave = threading.Event(), threading.Event()

    def region():
        with ember.autocast("cpu", dtype=ember.bfloat16):
            inside.set()
            leave.wait(10)

    worker = threading.Thread(target=region)
    worker.start()
    try:
        assert inside.wait(10)
        assert DETOURS[0] == 1
        out = Mul.apply2(a, b)  # this thread has no region: float32, as without one
        assert out.dtype == ember.float32 and out.grad_fn.name() == "MulBackward0"
    finally:
        leave.set()
        worker.join(10)
    assert DETOURS[0] == 0


def test_the_output_memory_is_counted_and_given_back():
    a, b = _leaf((64,)), _leaf((64,))
    before = ember.memory_allocated()
    out = Add.apply2(a, b)
    assert ember.memory_allocated() == before + 64 * 8
    del out
    assert ember.memory_allocated() == before


def test_apply2_calls_the_backend_function_directly_unless_a_plugin_kernel_replaces_the_op():
    a, b = _leaf((3,)), _leaf((3,))
    assert Add.array_function == "add" and Sub.array_function == "subtract"
    np.testing.assert_array_equal((a + b).detach().numpy(), a.detach().numpy() + b.detach().numpy())
    assert Add._direct["cpu"] is np.add

    class Doubled:
        @ember.hookimpl
        def ember_op_kernels(self, backend):
            return {"add": lambda ctx, xp, x, y: 2 * (x + y)} if backend.name == "cpu" else {}

    name = ember.register_plugin(Doubled(), "doubled-add")
    try:
        assert Add._direct == {}  # the registry changed: resolved again
        np.testing.assert_array_equal((a + b).detach().numpy(), 2 * (a.detach().numpy() + b.detach().numpy()))
        assert "cpu" not in Add._direct
    finally:
        ember.unregister_plugin(name)
    np.testing.assert_array_equal((a + b).detach().numpy(), a.detach().numpy() + b.detach().numpy())


def test_an_op_with_a_forward_of_its_own_does_not_inherit_the_backend_function():
    class AddTwice(Add):
        name_ = "tests.fast_paths.add_twice"

        @staticmethod
        def forward(ctx, xp, a, b):
            return xp.add(a, xp.add(b, b))

    class AddAgain(Add):  # the base's forward: its backend function too
        name_ = "tests.fast_paths.add_again"

    assert AddTwice.array_function is None and AddAgain.array_function == "add"
    a, b = _leaf((3,)), _leaf((3,))
    np.testing.assert_array_equal(AddTwice.apply2(a, b).detach().numpy(), (a + 2 * b).detach().numpy())
    np.testing.assert_array_equal(AddAgain.apply2(a, b).detach().numpy(), (a + b).detach().numpy())
