"""``Op.backward_arrays``: a first-order backward run on the arrays gives the gradients, dtypes and shapes that
the op's tensor backward gives (which ``create_graph=True`` runs), and the engine uses it only when it may."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd.function import OPS

RNG = np.random.default_rng(7)


def _leaf(shape, dtype, low=0.2, high=0.9, requires_grad=True):
    return ember.tensor(RNG.uniform(low, high, shape), dtype=dtype, requires_grad=requires_grad)


def _unary(name):
    return lambda dtype: (getattr(ember, name), [_leaf((3, 4), dtype)])


#: op name -> dtype -> (function of the inputs, inputs); every op with ``backward_arrays`` has its cases here
CASES = {
    **{name: [_unary(name)] for name in ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1",
                                         "tan", "atan", "tanh", "atanh", "reciprocal", "deg2rad", "rad2deg")},
    "sigmoid": [lambda dtype: (ember.sigmoid, [_leaf((5,), dtype, -3, 3)])],
    "relu": [lambda dtype: (ember.relu, [_leaf((4, 5), dtype, -1, 1)]),
             lambda dtype: (ember.relu, [_leaf((300, 300), dtype, -1, 1)])],  # split over threads
    "mseloss": [lambda dtype: (F.mse_loss, [_leaf((4, 3), dtype), _leaf((4, 3), dtype)]),
                lambda dtype: (lambda a, b: F.mse_loss(a, b, reduction="sum"), [_leaf((4, 3), dtype),
                                                                                 _leaf((4, 3), dtype, False)]),
                lambda dtype: (lambda a, b: F.mse_loss(a, b, reduction="none"), [_leaf((4, 3), dtype, False),
                                                                                  _leaf((4, 3), dtype)]),
                lambda dtype: (F.mse_loss, [_leaf((), dtype), _leaf((), dtype)])],
    "mul": [lambda dtype: (lambda a, b: a * b, [_leaf((2, 3), dtype), _leaf((3,), dtype)]),
            lambda dtype: (lambda a, b: a * b, [_leaf((2, 1, 3), dtype), _leaf((4, 1), dtype)]),
            lambda dtype: (lambda a: a * a, [_leaf((3, 2), dtype)]),
            lambda dtype: (lambda a: a * 2.5, [_leaf((3, 2), dtype)]),
            lambda dtype: (lambda a, b: a * b, [_leaf((3,), dtype, requires_grad=False), _leaf((3,), dtype)]),
            lambda dtype: (lambda a, b: ember.mul(a, b) * 3, [_leaf((), dtype), _leaf((2,), dtype)])],
    "linear": [lambda dtype: (F.linear, [_leaf((4, 3), dtype), _leaf((2, 3), dtype), _leaf((2,), dtype)]),
               lambda dtype: (F.linear, [_leaf((5, 4, 3), dtype), _leaf((2, 3), dtype), _leaf((2,), dtype)]),
               lambda dtype: (F.linear, [_leaf((4, 3), dtype, requires_grad=False), _leaf((2, 3), dtype),
                                         _leaf((2,), dtype, requires_grad=False)])],
    "linear_no_bias": [lambda dtype: (F.linear, [_leaf((4, 3), dtype), _leaf((2, 3), dtype)]),
                       lambda dtype: (F.linear, [_leaf((3,), dtype), _leaf((2, 3), dtype)])],
}

PARAMS = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


def _grads(fn, inputs, seed, create_graph):
    out = fn(*inputs)
    wanted = [t for t in inputs if t.requires_grad]
    return out, ember.autograd.grad(out, wanted, ember.tensor(seed, dtype=out.dtype), create_graph=create_graph)


def test_every_op_with_backward_arrays_has_cases():
    """A new ``backward_arrays`` gets its cases above, or this fails naming the op."""
    with_arrays = {name for name, cls in OPS.items() if cls.backward_arrays is not None}
    assert with_arrays - set(CASES) == set()
    assert set(CASES) - with_arrays == set()  # and no case tests an op whose arrays path is gone


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name,i", PARAMS)
def test_arrays_backward_equals_tensor_backward(name, i, dtype):
    fn, inputs = CASES[name][i](dtype)
    seed = RNG.uniform(-1, 1, tuple(fn(*inputs).shape))
    out, plain = _grads(fn, inputs, seed, create_graph=False)
    assert type(out.grad_fn) is OPS[name]
    _, graphed = _grads(fn, inputs, seed, create_graph=True)
    for p, g in zip(plain, graphed):
        assert p.dtype == g.dtype == dtype and p.shape == g.shape
        assert p.grad_fn is None and not p.requires_grad
        np.testing.assert_array_equal(p.numpy(), g.detach().numpy())


def test_engine_runs_the_arrays_backward_only_without_create_graph(monkeypatch):
    """The arrays rule runs for a plain float32 backward; a double backward and float16 take the tensor rule."""
    calls = []
    tanh = ember.tanh.op
    rule = tanh.backward_arrays
    monkeypatch.setattr(tanh, "backward_arrays", staticmethod(lambda ctx, xp, g: calls.append(1) or rule(ctx, xp, g)))
    x = _leaf((3,), ember.float32)
    ember.tanh(x).sum().backward()
    assert calls == [1]
    (g,) = ember.autograd.grad(ember.tanh(x).sum(), [x], create_graph=True)
    assert calls == [1] and g.requires_grad  # the tensor rule built a graph
    (g2,) = ember.autograd.grad(g.sum(), [x])  # through tanh's saved output: its first-order rule, on arrays
    t = np.tanh(x.detach().numpy())
    np.testing.assert_allclose(g2.numpy(), -2 * t * (1 - t * t), rtol=1e-5)
    assert calls == [1, 1]
    half = _leaf((3,), ember.float16)
    ember.tanh(half).sum().backward()
    assert calls == [1, 1] and half.grad.dtype == ember.float16


def test_arrays_backward_memory_error_names_the_device(monkeypatch):
    """An allocation failure in an arrays rule becomes ember's out-of-memory error, as in a tensor op."""
    tanh = ember.tanh.op

    def failing(ctx, xp, g):
        raise MemoryError("no room")
    monkeypatch.setattr(tanh, "backward_arrays", staticmethod(failing))
    x = _leaf((3,), ember.float32)
    with pytest.raises(ember.OutOfMemoryError, match="cpu"):
        ember.tanh(x).sum().backward()


def test_first_grad_from_arrays_backward_is_adopted():
    """The fresh array an arrays rule returns becomes ``.grad`` without a copy, and memory stays exact."""
    before = ember.memory_allocated("cpu")
    x = _leaf((64,), ember.float32)
    ember.tanh(x).sum().backward()
    assert x.grad.numpy().base is None
    assert ember.memory_allocated("cpu") - before == 2 * 64 * 4  # x and its .grad
    del x
    assert ember.memory_allocated("cpu") == before
