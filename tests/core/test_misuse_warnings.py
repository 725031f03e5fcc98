"""PyTorch's warnings for likely mistakes, and ember's own name in its messages."""
import warnings

import pytest

import ember


@pytest.mark.parametrize("name, call", [
    ("std", lambda: ember.tensor([1.0]).std()),
    ("var", lambda: ember.tensor([1.0]).var()),
    ("std", lambda: ember.tensor([1.0, 2.0]).std(correction=2)),
    ("var", lambda: ember.tensor([[1.0, 2.0]]).var(dim=0)),
    ("var_mean", lambda: ember.var_mean(ember.tensor([1.0]))),
    ("std_mean", lambda: ember.std_mean(ember.tensor([1.0]))),
])
def test_spread_with_no_degrees_of_freedom_warns(name, call):
    with pytest.warns(UserWarning, match=rf"^{name}\(\): degrees of freedom is <= 0"):
        call()


def test_spread_with_degrees_of_freedom_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.tensor([1.0, 2.0]).std()
        ember.tensor([1.0]).var(correction=0)


def test_grad_of_a_non_leaf_warns():
    a = ember.ones(2, requires_grad=True)
    b = a * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
        assert b.grad is None
    c = a * 3
    c.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert a.grad is None and c.grad is None


@pytest.mark.parametrize("shape, words", [((3,), "dimension other than 2"), ((2, 3, 4), "dimension other than 2"),
                                          ((), "deprecated on 0-D tensors")])
def test_T_on_a_tensor_that_is_not_2d_warns(shape, words):
    x = ember.zeros(shape)
    with pytest.warns(UserWarning, match=words):
        assert x.T.shape == tuple(reversed(shape))


def test_T_on_a_matrix_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.zeros(2, 3).T.shape == (3, 2)


def test_cat_of_nothing_raises_value_error_with_embers_name():
    with pytest.raises(ValueError, match=r"^ember\.cat\(\): expected a non-empty list of Tensors$"):
        ember.cat([])


def test_take_along_dim_message_names_ember():
    with pytest.raises(RuntimeError, match=r"^ember\.take_along_dim\(\)"):
        ember.take_along_dim(ember.zeros(2, 2), ember.zeros(2, dtype=ember.int64), dim=0)
