"""The seed notes' tensor snippets (seeds/000 sections 1-2, 001, 003), torch replaced by ember.

Where a note prints a deterministic result, the test compares ember's repr with it, ignoring whitespace (the
notes lost their line breaks and alignment when they were copied). Random results are checked for shape, dtype
and determinism under ``ember.manual_seed``.
"""
import re

import numpy as np
import pytest

import ember


def same_print(obj, printed):
    """``repr(obj)`` equals what the note printed (with torch -> ember), whitespace aside."""
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    assert squash(repr(obj)) == squash(printed.replace("torch.", "ember."))


# -- seeds/000 1.1: basic tensor functions ------------------------------------------------------------------------

def test_list_to_tensor():
    data = [[3, 5], [10, 5]]
    x_data = ember.tensor(data)
    same_print(x_data, "tensor([[ 3, 5], [10, 5]])")
    assert repr(x_data) == "tensor([[ 3,  5],\n        [10,  5]])"


def test_ndarray_to_tensor_and_back():
    data = [[3, 5], [10, 5]]
    nd_array_ex = np.array(data)
    tensor_array = ember.from_numpy(nd_array_ex)
    same_print(tensor_array, "tensor([[ 3, 5], [10, 5]])")
    same_print(tensor_array.numpy(), "array([[ 3, 5], [10, 5]])")


def test_flatten_ones_like_shape_dtype():
    data = [[3, 5, 20], [10, 5, 50], [1, 5, 10]]
    x_data = ember.tensor(data)
    same_print(x_data.flatten(), "tensor([ 3, 5, 20, 10, 5, 50, 1, 5, 10])")
    same_print(ember.ones_like(x_data), "tensor([[1, 1, 1], [1, 1, 1], [1, 1, 1]])")
    same_print(x_data.shape, "torch.Size([3, 3])")
    same_print(x_data.dtype, "torch.int64")


def test_device_selection_snippet():
    device = ember.device("cpu")
    if ember.cuda.is_available():
        device = ember.device("cuda")
    assert ember.ones(1, device=device).device == device


def test_requires_grad_at_creation():
    data = [[1.0, 2.0], [3.0, 4.0]]
    t = ember.tensor(data, requires_grad=True)
    assert t.requires_grad and t.is_leaf


# -- seeds/000 1.2: view & reshape, squeeze & unsqueeze ---------------------------------------------------------

def test_view_shares_data_and_reshape_may_copy():
    x = ember.arange(6)
    v = x.view(2, 3)
    x.numpy()[0] = 100
    assert v[0, 0].item() == 100                 # view: always the same memory
    r = x.reshape(3, 2)
    assert r.tolist() == [[100, 1], [2, 3], [4, 5]]
    c = x.clone()
    x.numpy()[1] = -1
    assert c[1].item() == 1                      # clone: its own memory
    nc = x.view(2, 3).t()                        # not contiguous: reshape must copy, view refuses
    assert nc.reshape(6).tolist() == [100, 3, -1, 4, 2, 5]
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        nc.view(6)


def test_squeeze_unsqueeze_shapes():
    tensor_ex = ember.rand(size=(2, 1, 2))
    same_print(tensor_ex.squeeze().shape, "torch.Size([2, 2])")
    tensor_ex = ember.rand(size=(2, 2))
    same_print(tensor_ex.unsqueeze(0).shape, "torch.Size([1, 2, 2])")
    tensor_ex = ember.rand(size=(2, 2))
    same_print(tensor_ex.unsqueeze(1).shape, "torch.Size([2, 1, 2])")
    tensor_ex = ember.rand(size=(2, 2))
    same_print(tensor_ex.unsqueeze(2).shape, "torch.Size([2, 2, 1])")


# -- seeds/000 1.3: broadcasting, mm vs matmul vs dot -------------------------------------------------------------

def test_dot_mm_matmul():
    assert ember.dot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])).item() == 11.0
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 2D tensors"):
        ember.dot(ember.ones(2, 2), ember.ones(2, 2))
    a, b = ember.ones(2, 3), ember.ones(3, 4)
    assert ember.mm(a, b).shape == (2, 4) and (a @ b).tolist() == [[3.0] * 4] * 2
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(ember.ones(4, 2, 3), b)                         # mm does not broadcast
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        ember.mm(a, ember.ones(2, 3))
    assert ember.matmul(ember.ones(4, 2, 3), b).shape == (4, 2, 4)  # matmul does


# -- seeds/000 2.1: is_*, numel -----------------------------------------------------------------------------------

def test_is_tensor_is_nonzero():
    x = ember.tensor([0])
    assert ember.is_tensor(x) is True
    assert ember.is_nonzero(x) is False


def test_numel():
    a = ember.randn(1, 2, 3, 4, 5)
    assert ember.numel(a) == 120


# -- seeds/000 2.2: creation ops ----------------------------------------------------------------------------------

def test_creation_ops():
    a = np.arange(4.0)
    assert ember.from_numpy(a).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ember.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert ember.empty(2, 3).shape == (2, 3)
    assert ember.ones(2).tolist() == [1.0, 1.0]
    base = ember.ones(2, 3, dtype=ember.int32)
    for like in (ember.zeros_like(base), ember.empty_like(base), ember.ones_like(base)):
        assert like.shape == (2, 3) and like.dtype is ember.int32
    same_print(ember.arange(1, 2.5, 0.5), "tensor([1.0000, 1.5000, 2.0000])")
    same_print(ember.linspace(0, 1, 5), "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])")
    same_print(ember.full((2, 2), 7), "tensor([[7, 7], [7, 7]])")
    same_print(ember.full_like(ember.ones(2), 3), "tensor([3., 3.])")


# -- seeds/000 2.3: indexing, slicing, joining, mutating --------------------------------------------------------------

def test_index_select():
    A = ember.Tensor([[1, 2], [3, 4]])
    same_print(ember.index_select(A, 1, ember.tensor([0])), "tensor([[1.], [3.]])")


def test_gather():
    t = ember.tensor([[1, 2], [3, 4]])
    same_print(ember.gather(t, 1, ember.tensor([[0, 0], [1, 0]])), "tensor([[ 1, 1], [ 4, 3]])")


def test_cat_and_concat():
    x = ember.rand(1, 3)
    y = ember.rand(2, 3)
    same_print(ember.cat((x, y), 0).size(), "torch.Size([3, 3])")
    assert ember.concat((x, y), 0).tolist() == ember.cat((x, y), 0).tolist()


def test_chunk():
    same_print(ember.arange(13).chunk(6),
               "(tensor([0, 1, 2]), tensor([3, 4, 5]), tensor([6, 7, 8]), tensor([ 9, 10, 11]), tensor([12]))")
    t = ember.tensor([[1, 2, 3], [4, 5, 6]])
    same_print(ember.chunk(t, 2, 1), "(tensor([[1, 2], [4, 5]]), tensor([[3], [6]]))")


def test_scatter_():
    src = ember.arange(1, 11).reshape((2, 5))
    same_print(src, "tensor([[ 1, 2, 3, 4, 5], [ 6, 7, 8, 9, 10]])")
    index = ember.tensor([[0, 1, 2, 0]])
    out = ember.zeros(3, 5, dtype=src.dtype).scatter_(0, index, src)
    same_print(out, "tensor([[1, 0, 0, 4, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0]])")


def test_scatter_with_reduce():
    # "reduce에 add, multiple을 넣어서": values checked by hand against PyTorch
    src = ember.arange(1, 11).reshape((2, 5))
    index = ember.tensor([[0, 1, 2, 0], [0, 1, 2, 0]])
    added = ember.ones(3, 5, dtype=src.dtype).scatter_(0, index, src, reduce="add")
    same_print(added, "tensor([[ 8, 1, 1, 14, 1], [ 1, 10, 1, 1, 1], [ 1, 1, 12, 1, 1]])")
    multiplied = ember.ones(3, 5, dtype=src.dtype).scatter_(0, index, src, reduce="multiply")
    same_print(multiplied, "tensor([[ 6, 1, 1, 36, 1], [ 1, 14, 1, 1, 1], [ 1, 1, 24, 1, 1]])")


def test_stack():
    x = ember.rand(3, 1, 3)
    y = ember.rand(3, 1, 3)
    same_print(ember.stack((x, y), dim=2).size(), "torch.Size([3, 1, 2, 3])")


# -- seeds/000 2.4: random sampling ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: ember.rand(2, 3),
    lambda: ember.randn(2, 3),
    lambda: ember.randint(1, 10, (3, 3)),
    lambda: ember.rand(size=(2, 1, 2)),
])
def test_manual_seed_makes_random_ops_repeat(make):
    ember.manual_seed(0)
    first = make()
    ember.manual_seed(0)
    again = make()
    assert first.tolist() == again.tolist()
    assert make().tolist() != first.tolist()  # the generator moved on


def test_random_ops_shapes_dtypes_ranges():
    ember.manual_seed(1)
    r = ember.rand(1000)
    assert r.dtype is ember.float32 and 0.0 <= r.min().item() and r.max().item() < 1.0
    n = ember.randn(2, 3)
    assert n.dtype is ember.float32 and n.shape == (2, 3)
    a = ember.randint(1, 10, (3, 3))
    assert a.dtype is ember.int64 and a.shape == (3, 3)
    assert 1 <= a.min().item() and a.max().item() <= 9


def test_seed_returns_a_fresh_seed():
    s = ember.seed()
    assert isinstance(s, int)
    assert ember.initial_seed() == s
    ember.manual_seed(5)
    assert ember.initial_seed() == 5


# -- seeds/000 2.5-2.8: pointwise, comparison, allclose, einsum --------------------------------------------------------

def test_pointwise_sqrt_exp_pow():
    same_print(ember.sqrt(ember.tensor([4.0, 9.0])), "tensor([2., 3.])")
    same_print(ember.exp(ember.tensor([0.0, 1.0])), "tensor([1.0000, 2.7183])")
    same_print(ember.pow(ember.tensor([2.0, 3.0]), 2), "tensor([4., 9.])")


def test_argsort_of_the_printed_matrix():
    a = ember.tensor([[9, 5, 3], [6, 4, 2], [5, 8, 6]])  # the note's torch.randint(1, 10, (3, 3)) draw
    same_print(ember.argsort(a), "tensor([[2, 1, 0], [2, 1, 0], [0, 2, 1]])")


def test_eq_gt_ge():
    same_print(ember.eq(ember.tensor([1, 2]), ember.tensor([1, 3])), "tensor([ True, False])")
    same_print(ember.gt(ember.tensor([1, 2]), 1), "tensor([False, True])")
    same_print(ember.ge(ember.tensor([1, 2]), 1), "tensor([True, True])")


def test_allclose():
    assert ember.allclose(ember.tensor([10.1, 1e-9]), ember.tensor([10.0, 1e-08])) is False
    assert ember.allclose(ember.tensor([10000.0, 1e-08]), ember.tensor([10000.1, 1e-09])) is True


def test_einsum_outer_product():
    ember.manual_seed(0)
    x = ember.randn(5)
    y = ember.randn(4)
    out = ember.einsum("i,j->ij", x, y)
    assert out.shape == (5, 4)
    np.testing.assert_allclose(out.numpy(), np.outer(x.numpy(), y.numpy()), rtol=1e-6)


def test_einsum_batch_matmul():
    ember.manual_seed(0)
    As = ember.randn(3, 2, 5)
    Bs = ember.randn(3, 5, 4)
    out = ember.einsum("bij,bjk->bik", As, Bs)
    assert out.shape == (3, 2, 4)
    np.testing.assert_allclose(out.numpy(), (As @ Bs).numpy(), rtol=1e-5, atol=1e-6)


# -- seeds/000 OOM note: float32 -> float16 -----------------------------------------------------------------------

def test_float32_to_float16_halves_memory():
    t = ember.ones(8)
    h = t.half()
    assert h.dtype is ember.float16 and h.nbytes == t.nbytes // 2


# -- seeds/001: broadcasting and softmax ------------------------------------------------------------------------------

def test_broadcasting_example():
    a = ember.tensor([1, 2, 3])
    b = ember.tensor([[4, 5, 6], [7, 8, 9]])
    c = a + b
    same_print(c, "tensor([[ 5, 7, 9], [ 8, 10, 12]])")
    assert repr(c) == "tensor([[ 5,  7,  9],\n        [ 8, 10, 12]])"


def test_softmax_example():
    tensor = ember.FloatTensor([2.0, 1.0, 3.0, 4.0])
    soft_tensor = ember.softmax(tensor, dim=0)
    same_print(soft_tensor, "tensor([0.0871, 0.0321, 0.2369, 0.6439])")


def test_legacy_typed_constructors():
    assert ember.FloatTensor([1, 4]).dtype is ember.float32
    assert ember.LongTensor([1, 2, 4, 4, 5]).dtype is ember.int64


# -- seeds/003: Tensor vs tensor, index_select, gather ----------------------------------------------------------------

def test_Tensor_is_float_tensor_is_inferred_and_copies():
    data = np.array([1, 2], dtype=np.int64)
    big_t = ember.Tensor(data)
    small_t = ember.tensor(data)
    assert big_t.dtype is ember.float32                 # the class converts ints to float
    assert small_t.dtype is ember.int64                 # the function keeps ints
    data[0] = 9                                        # both copied the data
    assert big_t.tolist() == [1.0, 2.0] and small_t.tolist() == [1, 2]


def test_unbound_index_select_and_slicing():
    A = ember.Tensor([[1, 2], [3, 4]])
    picked = ember.Tensor.index_select(A, 1, ember.tensor([0]))
    same_print(picked, "tensor([[1.], [3.]])")
    same_print(A[:, 0], "tensor([1., 3.])")


def test_unbound_gather():
    A = ember.tensor([[1, 2], [3, 4]])
    same_print(ember.Tensor.gather(A, 1, ember.tensor([[0], [1]])), "tensor([[1], [4]])")
