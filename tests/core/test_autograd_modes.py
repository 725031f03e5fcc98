"""Grad modes: no_grad, enable_grad, inference_mode, set_grad_enabled (context, decorator, call, per thread)."""
import threading

import pytest

import ember


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    yield
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def _x():
    return ember.ones(2, requires_grad=True)


def test_no_grad_context():
    x = _x()
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert (x * 2).requires_grad


def test_no_grad_decorator():
    @ember.no_grad()
    def double(t):
        return t * 2

    assert double.__name__ == "double"
    assert not double(_x()).requires_grad
    assert ember.is_grad_enabled()


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError("boom")
    assert ember.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = _x()
    with ember.no_grad():
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad


def test_enable_grad_decorator_inside_no_grad():
    @ember.enable_grad()
    def double(t):
        return t * 2

    with ember.no_grad():
        assert double(_x()).requires_grad


def test_set_grad_enabled_as_context():
    x = _x()
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with ember.no_grad():
        with ember.set_grad_enabled(True):
            assert (x * 2).requires_grad


def test_set_grad_enabled_as_plain_call():
    x = _x()
    try:
        ember.set_grad_enabled(False)
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_set_grad_enabled_as_decorator_does_not_switch_at_definition():
    @ember.set_grad_enabled(False)
    def double(t):
        return t * 2

    assert ember.is_grad_enabled()
    assert not double(_x()).requires_grad
    assert ember.is_grad_enabled()


def test_set_grad_enabled_rejects_non_bool():
    with pytest.raises(TypeError, match="bool"):
        ember.set_grad_enabled("no")


def test_inference_mode_context_and_decorator():
    x = _x()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        assert not (x * 2).requires_grad

    @ember.inference_mode()
    def double(t):
        return t * 2

    assert not double(x).requires_grad


def test_inference_mode_false_records_again():
    x = _x()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad
    with ember.inference_mode():
        with ember.inference_mode(False):  # PyTorch: grad mode on, inference mode off
            assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
            assert (x * 2).requires_grad
        assert ember.is_inference_mode_enabled()


def test_grad_mode_names_under_autograd():
    assert ember.autograd.no_grad is ember.no_grad
    assert ember.autograd.set_grad_enabled is ember.set_grad_enabled
    assert ember.autograd.inference_mode is ember.inference_mode


def test_grad_mode_is_thread_local():
    x = _x()
    seen = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        with ember.no_grad():
            started.set()
            release.wait(5)
            seen["worker"] = (x * 2).requires_grad

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    seen["main"] = (x * 2).requires_grad  # the other thread's no_grad must not leak here
    release.set()
    t.join(5)
    assert seen == {"main": True, "worker": False}


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
        t.start()
        t.join(5)
    assert seen == [True]


def test_weight_update_under_no_grad_keeps_leaf():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with ember.no_grad():
        w2 = w - 0.1 * w.grad
    assert w2.is_leaf and not w2.requires_grad
    assert w2.tolist() == pytest.approx([0.8, 1.6])


def test_grad_off_names_exactly_the_threads_with_grad_mode_off():
    """Ops skip the thread-local read of the grad mode while GRAD_OFF is empty: it must hold every thread whose
    grad mode is off, through every way of switching it (and a backward, which turns it off while it runs)."""
    from ember.autograd.grad_mode import GRAD_OFF

    x = _x()
    me = threading.get_ident()
    base = set(GRAD_OFF)  # empty, unless a thread of an earlier test ended with grad mode off
    assert me not in base
    with ember.no_grad():
        assert GRAD_OFF == base | {me} and not (x * 2).requires_grad
        with ember.enable_grad():
            assert GRAD_OFF == base and (x * 2).requires_grad
        with ember.inference_mode():
            assert GRAD_OFF == base | {me}
    assert GRAD_OFF == base
    ember.set_grad_enabled(False)
    assert GRAD_OFF == base | {me} and not (x + x).requires_grad and not x.relu().requires_grad
    ember.set_grad_enabled(True)
    assert GRAD_OFF == base
    seen = []
    (x * x).sum().backward(create_graph=False)  # grad mode off inside, back on after
    assert GRAD_OFF == base
    x.register_hook(lambda g: seen.append((set(GRAD_OFF), (g * 2).requires_grad)) or None)
    (x * x).sum().backward()
    assert seen == [(base | {me}, False)] and GRAD_OFF == base
    with pytest.raises(RuntimeError):
        with ember.no_grad():
            raise RuntimeError("restored on the way out")
    assert GRAD_OFF == base
    assert (x * 2).requires_grad


def test_another_thread_with_grad_off_leaves_this_threads_ops_recording():
    from ember.autograd.grad_mode import GRAD_OFF

    x = _x()
    base = set(GRAD_OFF)
    started, release = threading.Event(), threading.Event()

    def worker():
        with ember.no_grad():
            started.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    try:
        assert len(GRAD_OFF - base) == 1  # the worker: this thread reads its own mode, which is on
        assert (x + x).requires_grad and (x * x).requires_grad and x.sum().requires_grad
    finally:
        release.set()
        t.join(5)
    assert GRAD_OFF == base
