"""PyTorch's names that ember gives too: in-place functions at top level, and Tensor methods."""
import pytest

import ember


def test_in_place_functions_exist_at_top_level_as_in_pytorch():
    x = ember.zeros(3)
    assert ember.fill_(x, 2.0) is x and x.tolist() == [2.0] * 3
    assert ember.zero_(x) is x and x.tolist() == [0.0] * 3
    y = ember.tensor([-1.0, 0.5, 3.0])
    assert ember.clamp_(y, 0, 1) is y and y.tolist() == [0.0, 0.5, 1.0]
    assert ember.index_put_(x, (ember.tensor([1]),), ember.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("name", [
    "view", "transpose", "t", "permute", "expand", "squeeze", "unsqueeze", "narrow", "flatten", "unflatten",
    "reshape", "contiguous", "clone", "add_", "mul_", "sub_", "div_", "zero_", "fill_", "clamp_", "copy_",
    "scatter_", "scatter_add_", "index_add_", "masked_fill_", "uniform_", "normal_", "chunk", "split",
    "index_select", "gather", "scatter", "take_along_dim", "flip", "roll", "repeat", "tile", "tril", "triu",
    "masked_fill", "logsumexp", "norm", "cumsum", "cumprod", "softmax", "log_softmax", "isclose", "allclose", "equal",
    "sort", "argsort", "topk", "unique", "mm", "bmm", "matmul", "dot", "outer", "retain_grad", "register_hook",
    "register_post_accumulate_grad_hook", "detach", "detach_", "requires_grad_",
])
def test_listed_ops_are_tensor_methods(name):
    assert callable(getattr(ember.ones(2, 2), name))
