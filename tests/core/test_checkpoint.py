"""ember.utils.checkpoint: gradients equal the plain run's (float64, dropout replays its mask), both variants'
rules (which tensors get gradients, kwargs, grad()), errors, and a lower memory peak on a deep stack."""
import warnings

import pytest

import ember
import ember.nn.functional as F
from ember.utils.checkpoint import checkpoint, checkpoint_sequential

F64 = ember.float64


def _params(n=3, seed=0):
    ember.manual_seed(seed)
    w1 = ember.randn(4, 5, dtype=F64, requires_grad=True)
    w2 = ember.randn(5, 3, dtype=F64, requires_grad=True)
    return w1, w2


def _block(w1, w2):
    """Several inputs, a non-tensor and a keyword argument, dropout, and a tuple with a non-tensor out."""
    def block(x, h, scale, shift=0.0):
        a = F.dropout((x @ w1).tanh() + h, p=0.4, training=True)
        y = (a @ w2) * scale + shift
        return y, a.sum(), "tag"
    return block


def _grads(run):
    """``run()``'s output grads, after one backward from a fixed random seed."""
    w1, w2 = _params()
    x = ember.randn(6, 4, dtype=F64, requires_grad=True)
    h = ember.randn(6, 5, dtype=F64, requires_grad=True)
    ember.manual_seed(11)
    y, s, tag = run(_block(w1, w2), x, h)
    assert tag == "tag"
    (y.sin().sum() + 3 * s).backward()
    after = ember.rand(1).item()  # the generator's state once the step ran
    return [t.grad for t in (w1, w2, x, h)], after


def _close(got, want):
    for g, w in zip(got, want):
        assert g is not None and w is not None
        assert (g - w).abs().max().item() < 1e-12


def test_gradients_equal_the_plain_run_with_dropout_several_inputs_and_kwargs():
    want, after = _grads(lambda f, x, h: f(x, h, 2.0, shift=0.5))
    got, got_after = _grads(lambda f, x, h: checkpoint(f, x, h, 2.0, use_reentrant=False, shift=0.5))
    _close(got, want)
    assert got_after == after  # the recomputation left the random generator where the plain run did


def test_reentrant_gradients_equal_the_plain_run():
    want, after = _grads(lambda f, x, h: f(x, h, 2.0))
    got, got_after = _grads(lambda f, x, h: checkpoint(f, x, h, 2.0, use_reentrant=True))
    _close(got, want)
    assert got_after == after


def test_without_preserving_the_rng_state_dropout_draws_another_mask():
    want, _ = _grads(lambda f, x, h: f(x, h, 2.0))
    got, _ = _grads(lambda f, x, h: checkpoint(f, x, h, 2.0, use_reentrant=False, preserve_rng_state=False))
    assert max((g - w).abs().max().item() for g, w in zip(got, want)) > 1e-3


def test_the_forward_keeps_no_graph_and_backward_reruns_the_function():
    calls = []
    w1, w2 = _params()

    def f(x):
        calls.append(ember.is_grad_enabled())
        return (x @ w1).tanh() @ w2

    x = ember.randn(2, 4, dtype=F64)
    y = checkpoint(f, x, use_reentrant=False)
    assert y.grad_fn.name() == "CheckpointBackward"
    assert {id(node.variable) for node, _ in y.grad_fn.next_functions} == {id(w1), id(w2)}
    y.sum().backward()
    assert len(calls) == 2 and w1.grad is not None  # parameters get gradients though x requires none
    y = checkpoint(f, x.requires_grad_(), use_reentrant=True)
    assert calls[2] is False and y.grad_fn.name() == "_ReentrantCheckpointBackward"


def test_reentrant_needs_an_input_that_requires_grad():
    w1, _ = _params()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lambda x: x @ w1, ember.ones(1, 4, dtype=F64), use_reentrant=True)
    assert not y.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert checkpoint(lambda x: x @ w1, ember.ones(1, 4, dtype=F64), use_reentrant=False).grad_fn is not None


def test_use_reentrant_should_be_passed():
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        y = checkpoint(lambda t: t * 2, x)
    assert y.grad_fn.name() == "_ReentrantCheckpointBackward"  # PyTorch's default
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential([ember.sin], 1, x)


def test_bad_arguments_say_what_was_expected():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: power"):
        checkpoint(lambda t, power: t ** power, x, use_reentrant=True, power=2)
    with pytest.raises(ValueError, match="context_fn"):
        checkpoint(lambda t: t, x, use_reentrant=True, context_fn=lambda: (None, None))
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', 'none'\], but got 'x'"):
        checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="x")
    with pytest.raises(TypeError, match="function must be callable, got int"):
        checkpoint(3, x, use_reentrant=False)
    with pytest.raises(TypeError, match="must return a tensor or a tuple/list .* got dict"):
        checkpoint(lambda t: {"y": t * 2}, x, use_reentrant=False)
    for segments in (0, 3, 1.5):
        with pytest.raises(ValueError, match=f"segments must be an int from 1 to the number of functions \\(2\\), "
                                             f"got {segments}"):
            checkpoint_sequential([ember.sin, ember.cos], segments, x, use_reentrant=False)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential([ember.sin], 1, x, use_reentrant=False, foo=1)


def test_grad_works_through_the_non_reentrant_variant_only():
    w1, _ = _params()
    x = ember.randn(3, 4, dtype=F64, requires_grad=True)
    gx, gw = ember.autograd.grad(checkpoint(lambda t: (t @ w1).exp(), x, use_reentrant=False).sum(), [x, w1])
    wx, ww = ember.autograd.grad((x @ w1).exp().sum(), [x, w1])
    _close([gx, gw], [wx, ww])
    assert w1.grad is None
    y = checkpoint(lambda t: (t @ w1).exp(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="use_reentrant=True, ember.utils.checkpoint is incompatible with .grad()"):
        ember.autograd.grad(y.sum(), x)


def test_double_backward_through_a_checkpoint():
    x = ember.tensor([0.5, -1.0], dtype=F64, requires_grad=True)
    g, = ember.autograd.grad(checkpoint(lambda t: t ** 3, x, use_reentrant=False).sum(), x, create_graph=True)
    g2, = ember.autograd.grad(g.sum(), x)
    assert g.tolist() == [0.75, 3.0] and g2.tolist() == [3.0, -6.0]


def test_a_captured_tensor_passes_its_gradient_on_to_the_outer_graph():
    a = ember.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    c = a * 3  # made outside the function, used inside it: its graph must survive the recomputation
    x = ember.tensor([0.5, -1.0], dtype=F64, requires_grad=True)
    (checkpoint(lambda t: (t * c).sin(), x, use_reentrant=False).sum() + 2 * c.sum()).backward()
    xd = x.detach()
    _close([a.grad, x.grad], [(xd * 3 * a.detach()).cos() * xd * 3 + 6, (xd * 3 * a.detach()).cos() * 3 * a.detach()])


def test_retain_graph_reruns_and_a_freed_checkpoint_says_so():
    x = ember.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = checkpoint(lambda t: t ** 2, x, use_reentrant=False)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_an_input_changed_in_place_before_backward_is_an_error():
    x = ember.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = checkpoint(lambda t: t ** 2, x, use_reentrant=False)
    with ember.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*CheckpointBackward"):
        y.sum().backward()


def test_a_rerun_that_computes_something_else_is_an_error():
    calls = []

    def f(t):
        calls.append(1)
        return t * 2 if len(calls) == 1 else t[:1] * 2

    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"output 0 of the recomputation has shape \(1,\).*forward's had \(3,\)"):
        checkpoint(f, x, use_reentrant=False).sum().backward()


def test_outputs_views_and_passed_through_inputs():
    x = ember.tensor([[0.5, -1.0]], dtype=F64, requires_grad=True)
    same, view = checkpoint(lambda t: [t, (t * 2).view(-1)], x, use_reentrant=False)
    assert same is x and view.grad_fn.name() == "CheckpointBackward" and view.shape == (2,)
    (view * ember.tensor([1.0, 3.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [[2.0, 6.0]]


def test_context_fn_wraps_the_forward_and_the_recomputation():
    seen = []

    class Mark:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            seen.append(self.name)

        def __exit__(self, *exc):
            return False

    x = ember.ones(2, requires_grad=True)
    y = checkpoint(lambda t: t * 2, x, use_reentrant=False, context_fn=lambda: (Mark("fwd"), Mark("re")))
    assert seen == ["fwd"]
    y.sum().backward()
    assert seen == ["fwd", "re"]


def test_under_no_grad_the_function_just_runs():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert checkpoint(lambda t: t * 2, x, use_reentrant=False).grad_fn is None


def test_checkpoint_sequential_takes_a_sequential_and_gives_the_plain_gradients():
    ember.manual_seed(0)
    model = ember.nn.Sequential(*[m for _ in range(3) for m in (ember.nn.Linear(4, 4), ember.nn.Tanh(),
                                                                   ember.nn.Dropout(0.3))]).double()
    x = ember.randn(5, 4, dtype=F64)
    grads = {}
    for segments in (None, 1, 2, 4):
        model.zero_grad()
        ember.manual_seed(3)
        y = model(x) if segments is None else checkpoint_sequential(model, segments, x, use_reentrant=False)
        y.pow(2).sum().backward()
        grads[segments] = [p.grad.clone() for p in model.parameters()]
    for segments in (1, 2, 4):
        _close(grads[segments], grads[None])


def test_checkpointing_a_deep_stack_lowers_the_memory_peak():
    # 8 residual blocks that widen 32 -> 256 inside: a block keeps 9x its input's bytes for backward (its input and
    # the widened relu output); a checkpointed segment keeps only its input
    ember.manual_seed(0)
    weights = [((ember.randn(32, 256) * 0.1).requires_grad_(), (ember.randn(256, 32) * 0.1).requires_grad_())
               for _ in range(8)]
    blocks = [lambda h, up=up, down=down: (h @ up).relu() @ down + h for up, down in weights]
    x = ember.randn(512, 32)

    def step(segments):
        for up, down in weights:
            up.grad = down.grad = None
        base = ember.memory_allocated()
        ember.reset_peak_memory_stats()
        if segments:
            y = checkpoint_sequential(blocks, segments, x, use_reentrant=False)
        else:
            y = x
            for block in blocks:
                y = block(y)
        y.sum().backward()
        del y
        grads = [w.grad for pair in weights for w in pair]
        return ember.max_memory_allocated() - base, ember.memory_allocated() - base, grads

    plain_peak, plain_left, plain_grads = step(0)
    assert plain_peak > 8 * 512 * 256 * 4  # every block's wide activation was held at once
    for segments, most in ((4, 0.55), (8, 0.45)):  # measured: 0.48 and 0.39 of the plain peak
        peak, left, grads = step(segments)
        _close(grads, plain_grads)
        assert left == plain_left  # the .grad tensors only: nothing of the checkpoints is left behind
        assert peak < most * plain_peak, (segments, peak, plain_peak)
