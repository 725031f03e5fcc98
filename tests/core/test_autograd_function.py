"""User-defined ember.autograd.Function, and anomaly mode."""
import numpy as np
import pytest

import ember
from tests.core.helpers import check_grads, rand64


class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ScaledAdd(ember.autograd.Function):
    """a + k * b with a Python number k; records which inputs needed a gradient."""

    seen_needs = None

    @staticmethod
    def forward(ctx, a, k, b):
        ctx.k = k
        ScaledAdd.seen_needs = ctx.needs_input_grad
        return a + b * k

    @staticmethod
    def backward(ctx, g):
        ga = g if ctx.needs_input_grad[0] else None
        gb = g * ctx.k if ctx.needs_input_grad[2] else None
        return ga, None, gb


class SplitSign(ember.autograd.Function):
    """Two outputs: x * 2 and a non-differentiable mask-like float tensor."""

    @staticmethod
    def forward(ctx, x):
        doubled = x * 2
        positive = (x * 0) + 1
        ctx.mark_non_differentiable(positive)
        return doubled, positive

    @staticmethod
    def backward(ctx, g_doubled, g_positive):
        return g_doubled * 2


def test_function_forward_backward_and_grad_fn(device):
    x = ember.tensor([1.0, 2.0], requires_grad=True, device=device)
    y = Cube.apply(x)
    assert y.tolist() == [1.0, 8.0]
    assert y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_function_gradcheck_and_double_backward(device):
    x = rand64(4, device=device, seed=7)
    check_grads(Cube.apply, x, gradgrad=True)


def test_function_without_grad_returns_plain_output():
    y = Cube.apply(ember.tensor([2.0]))
    assert y.grad_fn is None and not y.requires_grad and y.tolist() == [8.0]
    with ember.no_grad():
        assert Cube.apply(ember.tensor([2.0], requires_grad=True)).grad_fn is None


def test_function_forward_runs_without_recording():
    recorded = []

    class Probe(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inner = x * 2
            recorded.append(inner.requires_grad)
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    Probe.apply(ember.ones(1, requires_grad=True))
    assert recorded == [False]


def test_needs_input_grad_and_non_tensor_args():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0])
    y = ScaledAdd.apply(a, 10.0, b)
    assert ScaledAdd.seen_needs == (True, False, False)
    assert y.tolist() == [31.0, 42.0]
    y.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]
    b2 = ember.tensor([3.0, 4.0], requires_grad=True)
    ScaledAdd.apply(ember.tensor([1.0, 2.0]), 10.0, b2).sum().backward()
    assert ScaledAdd.seen_needs == (False, False, True)
    assert b2.grad.tolist() == [10.0, 10.0]


def test_mark_non_differentiable():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    doubled, positive = SplitSign.apply(x)
    assert doubled.requires_grad and not positive.requires_grad
    doubled.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_wrong_shape_gradient_is_an_error():
    class BadShape(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ember.ones(5)

    with pytest.raises(RuntimeError, match=r"BadShapeBackward returned an invalid gradient at index 0 - got \[5\] "
                                           r"but expected shape compatible with \[3\]"):
        BadShape.apply(ember.ones(3, requires_grad=True)).sum().backward()


def test_wrong_number_of_gradients_is_an_error():
    class TooFew(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    class TooMany(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients \(expected 2, got 1\)"):
        TooFew.apply(a, a).sum().backward()
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients \(expected 1, got 2\)"):
        TooMany.apply(a).sum().backward()


def test_saved_tensor_modified_in_place_is_caught():
    x = ember.ones(3, requires_grad=True)
    h = x * 1
    y = Cube.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_function_saved_tensors_freed_after_backward():
    x = ember.ones(2, requires_grad=True)
    y = Cube.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


# -- anomaly mode --------------------------------------------------------------------------------------------------

class NanBackward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_anomaly_mode_names_the_op_whose_backward_made_nan():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = (x / x).sum()  # d/da = 1/0 = inf, d/db = -0/0 = nan: the second output
        with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' returned nan values in its 1th output"):
            y.backward()
    assert not ember.autograd.is_anomaly_enabled()


def test_anomaly_mode_points_at_the_forward_call():
    x = ember.tensor([1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = NanBackward.apply(x) * 2
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    msg = str(info.value)
    assert "Function 'NanBackwardBackward' returned nan values" in msg
    assert "y = NanBackward.apply(x) * 2" in msg  # the traceback of the forward names this line


def test_sqrt_at_zero_is_flagged_by_anomaly_mode():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values"):
            y.backward()


def test_set_detect_anomaly_call_and_context():
    assert not ember.autograd.is_anomaly_enabled()
    with ember.autograd.set_detect_anomaly(True):
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled()
    finally:
        ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled()


def test_without_anomaly_mode_nan_gradients_pass_silently():
    x = ember.tensor([0.0], requires_grad=True)
    (x / x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()
