"""The seed notes' tensor manipulation snippets (seeds/004: indexing, view, item, squeeze, unsqueeze, stack, cat,
chunk, split, the NumPy bridge), torch replaced by ember.

The notes print random tensors; the tests feed those printed values back in as literals, so every later print
in the note is deterministic and is compared with ember's repr (whitespace aside: the notes lost their layout).
Each random call itself is checked for shape, dtype and repeatability under ``ember.manual_seed``.
"""
import re

import numpy as np
import pytest

import ember


def same_print(obj, printed):
    """``repr(obj)`` (or ``str`` for NumPy arrays, as ``print`` shows them) equals the note, whitespace aside."""
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    text = str(obj) if isinstance(obj, np.ndarray) else repr(obj)
    assert squash(text) == squash(printed.replace("torch.", "ember."))


def seeded(make):
    """``make()`` twice under the same seed: same values; returns the first."""
    ember.manual_seed(1234)
    first = make()
    ember.manual_seed(1234)
    assert make().tolist() == first.tolist()
    return first


# -- indexing ---------------------------------------------------------------------------------------------------------

def test_indexing_like_numpy():
    x = ember.Tensor([[1, 2],
                      [3, 4]])
    same_print(x, "tensor([[1., 2.], [3., 4.]])")
    same_print(x[0, 0], "tensor(1.)")
    same_print(x[0, 1], "tensor(2.)")
    same_print(x[1, 0], "tensor(3.)")
    same_print(x[1, 1], "tensor(4.)")
    same_print(x[:, 0], "tensor([1., 3.])")
    same_print(x[:, 1], "tensor([2., 4.])")
    same_print(x[0:, ], "tensor([[1., 2.], [3., 4.]])")
    same_print(x[1:, ], "tensor([[3., 4.]])")


# -- view -------------------------------------------------------------------------------------------------------------

X45 = [[-0.7728, -0.2897, 0.4124, 0.5375, -0.1071],
       [-0.9390, 0.2011, 1.2789, 0.4421, -0.5015],
       [-1.1650, -0.0090, -0.8004, -1.2330, -0.6752],
       [2.1249, -0.1179, 1.3059, -0.7011, -0.9007]]


def test_view_random_draw():
    x = seeded(lambda: ember.randn(4, 5))
    assert x.shape == (4, 5) and x.dtype is ember.float32
    assert x.view(20).data_ptr() == x.data_ptr()


def test_view_flat_and_inferred():
    x = ember.tensor(X45)
    same_print(x, """tensor([[-0.7728, -0.2897, 0.4124, 0.5375, -0.1071], [-0.9390, 0.2011, 1.2789, 0.4421, -0.5015],
                  [-1.1650, -0.0090, -0.8004, -1.2330, -0.6752], [ 2.1249, -0.1179, 1.3059, -0.7011, -0.9007]])""")
    y = x.view(20)
    same_print(y, """tensor([-0.7728, -0.2897, 0.4124, 0.5375, -0.1071, -0.9390, 0.2011, 1.2789, 0.4421, -0.5015,
                  -1.1650, -0.0090, -0.8004, -1.2330, -0.6752, 2.1249, -0.1179, 1.3059, -0.7011, -0.9007])""")
    # PyTorch wraps long rows at 80 columns (layout checked by hand against torch)
    assert repr(y) == ("tensor([-0.7728, -0.2897,  0.4124,  0.5375, -0.1071, -0.9390,  0.2011,  1.2789,\n"
                       "         0.4421, -0.5015, -1.1650, -0.0090, -0.8004, -1.2330, -0.6752,  2.1249,\n"
                       "        -0.1179,  1.3059, -0.7011, -0.9007])")
    z = x.view(5, -1)
    same_print(z, """tensor([[-0.7728, -0.2897, 0.4124, 0.5375], [-0.1071, -0.9390, 0.2011, 1.2789],
                  [ 0.4421, -0.5015, -1.1650, -0.0090], [-0.8004, -1.2330, -0.6752, 2.1249],
                  [-0.1179, 1.3059, -0.7011, -0.9007]])""")


# -- item --------------------------------------------------------------------------------------------------------------

def test_item_of_one_element():
    x = seeded(lambda: ember.randn(1))
    assert isinstance(x.item(), float) and x.dtype is ember.float32
    x = ember.tensor([1.277359962463379])    # the note's draw
    same_print(x, "tensor([1.2774])")
    assert x.item() == 1.277359962463379
    same_print(x.dtype, "torch.float32")


def test_item_of_two_elements_is_an_error():
    x = ember.tensor([0.0611, 1.4374])
    same_print(x, "tensor([0.0611, 1.4374])")
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        x.item()


# -- squeeze / unsqueeze -----------------------------------------------------------------------------------------------

def test_squeeze():
    assert seeded(lambda: ember.rand(1, 3, 3)).shape == (1, 3, 3)
    tensor = ember.tensor([[[0.0392, 0.7365, 0.6342], [0.0100, 0.8090, 0.9958], [0.7539, 0.5699, 0.7608]]])
    same_print(tensor.shape, "torch.Size([1, 3, 3])")
    t = tensor.squeeze()
    same_print(t, "tensor([[0.0392, 0.7365, 0.6342], [0.0100, 0.8090, 0.9958], [0.7539, 0.5699, 0.7608]])")
    same_print(t.shape, "torch.Size([3, 3])")


def test_unsqueeze():
    assert seeded(lambda: ember.rand(3, 3)).shape == (3, 3)
    t = ember.tensor([[0.5524, 0.1440, 0.4846], [0.2184, 0.9014, 0.7250], [0.3931, 0.5965, 0.5375]])
    assert repr(t) == ("tensor([[0.5524, 0.1440, 0.4846],\n"
                       "        [0.2184, 0.9014, 0.7250],\n"
                       "        [0.3931, 0.5965, 0.5375]])")
    tensor = t.unsqueeze(dim=0)
    same_print(tensor, "tensor([[[0.5524, 0.1440, 0.4846], [0.2184, 0.9014, 0.7250], [0.3931, 0.5965, 0.5375]]])")
    same_print(tensor.shape, "torch.Size([1, 3, 3])")
    tensor = t.unsqueeze(dim=2)
    same_print(tensor, """tensor([[[0.5524], [0.1440], [0.4846]],
                                  [[0.2184], [0.9014], [0.7250]],
                                  [[0.3931], [0.5965], [0.5375]]])""")
    same_print(tensor.shape, "torch.Size([3, 3, 1])")
    assert repr(tensor).startswith("tensor([[[0.5524],\n         [0.1440],\n         [0.4846]],\n\n        [[0.2184],")


# -- stack, cat --------------------------------------------------------------------------------------------------------

def test_stack():
    x = ember.FloatTensor([1, 4])
    same_print(x, "tensor([1., 4.])")
    y = ember.FloatTensor([2, 5])
    same_print(y, "tensor([2., 5.])")
    z = ember.FloatTensor([3, 6])
    same_print(z, "tensor([3., 6.])")
    same_print(ember.stack([x, y, z]), "tensor([[1., 4.], [2., 5.], [3., 6.]])")


A133 = [[[-1.7695, -0.2903, 0.4430], [0.3225, 0.1929, -1.0278], [-0.0181, -0.9933, -0.5745]]]
B133 = [[[-1.3281, -0.4906, 0.9417], [0.2281, -1.8169, -1.2794], [0.3738, 0.5299, 0.6709]]]


def test_cat_along_each_dim():
    assert seeded(lambda: ember.randn(1, 3, 3)).shape == (1, 3, 3)
    a, b = ember.tensor(A133), ember.tensor(B133)
    same_print(a, "tensor([[[-1.7695, -0.2903, 0.4430], [ 0.3225, 0.1929, -1.0278], [-0.0181, -0.9933, -0.5745]]])")
    same_print(b, "tensor([[[-1.3281, -0.4906, 0.9417], [ 0.2281, -1.8169, -1.2794], [ 0.3738, 0.5299, 0.6709]]])")
    c = ember.cat((a, b), dim=0)
    same_print(c, """tensor([[[-1.7695, -0.2903, 0.4430], [ 0.3225, 0.1929, -1.0278], [-0.0181, -0.9933, -0.5745]],
                             [[-1.3281, -0.4906, 0.9417], [ 0.2281, -1.8169, -1.2794], [ 0.3738, 0.5299, 0.6709]]])""")
    same_print(c.size(), "torch.Size([2, 3, 3])")
    c = ember.cat((a, b), dim=1)
    same_print(c, """tensor([[[-1.7695, -0.2903, 0.4430], [ 0.3225, 0.1929, -1.0278], [-0.0181, -0.9933, -0.5745],
                              [-1.3281, -0.4906, 0.9417], [ 0.2281, -1.8169, -1.2794], [ 0.3738, 0.5299, 0.6709]]])""")
    same_print(c.size(), "torch.Size([1, 6, 3])")
    c = ember.cat((a, b), dim=2)
    same_print(c, """tensor([[[-1.7695, -0.2903, 0.4430, -1.3281, -0.4906, 0.9417],
                              [ 0.3225, 0.1929, -1.0278, 0.2281, -1.8169, -1.2794],
                              [-0.0181, -0.9933, -0.5745, 0.3738, 0.5299, 0.6709]]])""")
    same_print(c.size(), "torch.Size([1, 3, 6])")


# -- chunk, split ------------------------------------------------------------------------------------------------------

def test_chunk_into_three():
    assert seeded(lambda: ember.rand(3, 6)).shape == (3, 6)
    tensor = ember.tensor([[0.8200, 0.7136, 0.2481, 0.1293, 0.3285, 0.0107],
                           [0.1430, 0.7973, 0.2399, 0.2357, 0.9373, 0.7700],
                           [0.7829, 0.3611, 0.1083, 0.1073, 0.1682, 0.2560]])
    t1, t2, t3 = ember.chunk(tensor, 3, dim=1)
    same_print(t1, "tensor([[0.8200, 0.7136], [0.1430, 0.7973], [0.7829, 0.3611]])")
    same_print(t2, "tensor([[0.2481, 0.1293], [0.2399, 0.2357], [0.1083, 0.1073]])")
    same_print(t3, "tensor([[0.3285, 0.0107], [0.9373, 0.7700], [0.1682, 0.2560]])")


def test_split_by_size():
    tensor = ember.tensor([[0.2841, 0.3690, 0.0738, 0.0565, 0.3440, 0.4109],
                           [0.9499, 0.1583, 0.8721, 0.4317, 0.8453, 0.0869],
                           [0.8356, 0.8379, 0.9858, 0.3761, 0.5226, 0.8162]])
    t1, t2 = ember.split(tensor, 3, dim=1)
    same_print(t1, "tensor([[0.2841, 0.3690, 0.0738], [0.9499, 0.1583, 0.8721], [0.8356, 0.8379, 0.9858]])")
    same_print(t2, "tensor([[0.0565, 0.3440, 0.4109], [0.4317, 0.8453, 0.0869], [0.3761, 0.5226, 0.8162]])")


# -- torch <-> numpy ---------------------------------------------------------------------------------------------------

def test_numpy_follows_in_place_add_on_the_tensor():
    a = ember.ones(7)
    same_print(a, "tensor([1., 1., 1., 1., 1., 1., 1.])")
    b = a.numpy()
    same_print(b, "[1. 1. 1. 1. 1. 1. 1.]")
    a.add_(1)
    same_print(a, "tensor([2., 2., 2., 2., 2., 2., 2.])")
    same_print(b, "[2. 2. 2. 2. 2. 2. 2.]")


def test_tensor_follows_numpy_out_parameter():
    a = np.ones(7)
    b = ember.from_numpy(a)
    np.add(a, 1, out=a)
    same_print(a, "[2. 2. 2. 2. 2. 2. 2.]")
    same_print(b, "tensor([2., 2., 2., 2., 2., 2., 2.], dtype=torch.float64)")
