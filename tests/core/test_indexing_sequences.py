"""Indexing and index assignment with a Python ``range`` and with the other sequences PyTorch accepts (nested lists,
tuples mixing ranges, slices, tensors, Ellipsis and None). Shapes and values read off PyTorch 2.13."""
import warnings

import numpy as np
import pytest

import ember

Y = np.arange(24).reshape(2, 3, 4)


def y():
    return ember.tensor(Y)


@pytest.mark.parametrize("key,numpy_key,shape", [
    (range(1, 2), [1], (1, 3, 4)),
    ((range(2), slice(None), range(2)), ([0, 1], slice(None), [0, 1]), (2, 3)),
    ((Ellipsis, None, range(3)), (Ellipsis, None, [0, 1, 2]), (2, 3, 1, 3)),
    ((range(1), slice(None), ember.tensor([0, 1])), ([0], slice(None), [0, 1]), (2, 3)),
    ((0, range(0, 3, 2)), (0, [0, 2]), (2, 4)),
    (([0, 1], [1, 2]), ([0, 1], [1, 2]), (2, 4)),
    (range(0), [], (0, 3, 4)),
])
def test_get_with_ranges_and_mixed_tuples(key, numpy_key, shape):
    got = y()[key]
    assert tuple(got.shape) == shape
    np.testing.assert_array_equal(got.numpy(), Y[numpy_key])


@pytest.mark.parametrize("key,shape", [
    ([[0, 1]], (2, 3, 4)),           # a list holding a list: the tuple ([0, 1],)
    ([[0, 1], [1, 0]], (2, 4)),      # the tuple ([0, 1], [1, 0])
    ([0, slice(None)], (3, 4)),      # the tuple (0, :)
    ([ember.tensor([0, 1]), ember.tensor([1, 2])], (2, 4)),
    ([ember.tensor([0, 1]), 0], (2, 4)),
])
def test_a_list_holding_sequences_slices_or_tensors_is_a_tuple_with_pytorchs_warning(key, shape):
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing is deprecated"):
        got = y()[key]
    assert tuple(got.shape) == shape
    np.testing.assert_array_equal(got.numpy(), Y[tuple(k.tolist() if isinstance(k, ember.Tensor) else k
                                                        for k in key)])


def test_a_list_of_numbers_stays_an_index_array_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y()[[1, 0, 1]].shape == (3, 3, 4)


def test_assignment_through_ranges():
    t = y().clone()
    t[range(2)] = 0
    assert t.sum().item() == 0
    t = y().clone()
    t[:, range(1, 3)] = ember.tensor(5)
    assert t.sum().item() == 140  # PyTorch's figure
    t = y().clone()
    t[range(2), 0, range(1, 3)] += 100
    expected = Y.copy()
    expected[[0, 1], 0, [1, 2]] += 100
    np.testing.assert_array_equal(t.numpy(), expected)


def test_range_index_is_differentiable():
    x = ember.arange(6.0, requires_grad=True)
    x[range(1, 4)].sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]


def test_an_index_out_of_range_is_named_as_pytorch_names_it():
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 2"):
        y()[range(3, 6)]
