"""parameters_to_vector / vector_to_parameters."""
import numpy as np
import pytest

import ember
from ember.nn.utils import parameters_to_vector, vector_to_parameters


def make_params():
    rng = np.random.default_rng(0)
    return [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in ((2, 3), (4,), (1, 2, 2))]


def test_round_trip():
    params = make_params()
    arrays = [p.detach().numpy().copy() for p in params]
    vec = parameters_to_vector(params)
    assert vec.shape == (14,)
    np.testing.assert_array_equal(vec.detach().numpy(), np.concatenate([a.ravel() for a in arrays]))
    new = ember.arange(14.0, dtype=ember.float64)
    vector_to_parameters(new, params)
    pieces = np.split(np.arange(14.0), [6, 10])
    for p, piece, a in zip(params, pieces, arrays):
        assert p.shape == a.shape and p.requires_grad and p.is_leaf
        np.testing.assert_array_equal(p.detach().numpy(), piece.reshape(a.shape))
    new[0] = 100.0  # as in PyTorch, the parameters now share memory with the vector
    assert params[0][0, 0].item() == 100.0


def test_parameters_to_vector_is_differentiable_and_takes_non_contiguous_params():
    w = ember.ones(3, 2, requires_grad=True)
    vec = parameters_to_vector([w.T])  # a non-leaf, non-contiguous view is flattened in its own order
    (vec * ember.arange(6.0)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(6.0).reshape(2, 3).T)


def test_errors(two_cpus):
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        vector_to_parameters([1.0, 2.0], make_params())
    a, b = ember.zeros(2, device="cpu:0"), ember.zeros(2, device="cpu:1")
    with pytest.raises(TypeError, match="Found two parameters on different devices"):
        parameters_to_vector([a, b])
    with pytest.raises(TypeError, match="Found two parameters on different devices"):
        vector_to_parameters(ember.zeros(4), [a, b])
