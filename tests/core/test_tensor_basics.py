"""Tensor state and the Python protocol: shape/size/numel, item/tolist, conversions, truth value, len/iter, repr."""
import pickle

import pytest

import ember


def test_shape_size_dim_numel(device):
    t = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    assert t.shape == ember.Size([2, 3]) and isinstance(t.shape, ember.Size)
    assert repr(t.shape) == "ember.Size([2, 3])"
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-1) == 3
    assert t.dim() == t.ndim == t.ndimension() == 2
    assert t.numel() == t.nelement() == ember.numel(t) == t.shape.numel() == 6
    assert t.element_size() == t.itemsize == 4 and t.nbytes == 24
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        t.size(2)


def test_size_slicing_keeps_size_type():
    s = ember.zeros(2, 3, 4).shape
    assert s[1:] == ember.Size([3, 4]) and isinstance(s[1:], ember.Size)
    assert s[0] == 2 and isinstance(s[0], int)
    assert isinstance(s + ember.Size([5]), ember.Size)


def test_item_and_tolist(device):
    assert ember.tensor(3, device=device).item() == 3 and isinstance(ember.tensor(3).item(), int)
    assert ember.tensor([2.5], device=device).item() == 2.5
    assert ember.tensor(True, device=device).item() is True
    assert ember.tensor([[1, 2]], device=device).tolist() == [[1, 2]]
    assert ember.tensor(2.0, device=device).tolist() == 2.0
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ember.tensor([1.0, 2.0], device=device).item()


def test_python_number_conversions():
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor(7.9)) == 7
    assert [10, 20, 30][ember.tensor(1)] == 20
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(ember.ones(2))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(ember.ones(2))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ember.tensor(1.0)]
    assert f"{ember.tensor(2.5):.2f}" == "2.50"


def test_truth_value():
    assert bool(ember.tensor([1.5])) and not bool(ember.tensor(0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ember.ones(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(ember.tensor([]))


def test_is_nonzero():
    assert ember.is_nonzero(ember.tensor([1.5])) and not ember.is_nonzero(ember.tensor([0]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        ember.is_nonzero(ember.tensor([1, 2]))


def test_len_and_iteration():
    t = ember.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ember.tensor(1.0))


def test_is_tensor_and_type_queries():
    t = ember.ones(2)
    assert ember.is_tensor(t) and not ember.is_tensor([1.0]) and not ember.is_tensor(1.0)
    assert t.is_floating_point() and not ember.tensor([1]).is_floating_point()
    assert t.type() == "ember.FloatTensor" and ember.tensor([1]).type() == "ember.LongTensor"
    assert t.type(ember.float64).dtype is ember.float64
    assert ember.ones(2, dtype=ember.int32).type_as(t).dtype is ember.float32


@pytest.mark.parametrize("method, dtype", [
    ("float", ember.float32), ("double", ember.float64), ("half", ember.float16), ("bfloat16", ember.bfloat16),
    ("int", ember.int32), ("long", ember.int64), ("short", ember.int16), ("char", ember.int8),
    ("byte", ember.uint8), ("bool", ember.bool),
])
def test_cast_methods(method, dtype):
    t = getattr(ember.tensor([0.0, 1.0, 2.0]), method)()
    assert t.dtype is dtype
    want = [0.0, 1.0, 1.0] if dtype is ember.bool else [0.0, 1.0, 2.0]
    assert t.to(ember.float32).tolist() == want


@pytest.mark.parametrize("make, text", [
    (lambda: ember.zeros(2, 3, dtype=ember.float64),
     "tensor([[0., 0., 0.],\n        [0., 0., 0.]], dtype=ember.float64)"),
    (lambda: ember.tensor([1, 2], dtype=ember.int32), "tensor([1, 2], dtype=ember.int32)"),
    (lambda: ember.tensor([True, False]), "tensor([ True, False])"),
    (lambda: ember.tensor(3.5), "tensor(3.5000)"),
    (lambda: ember.tensor([1.0, 2.5]), "tensor([1.0000, 2.5000])"),
    (lambda: ember.tensor([100.0, 2.5]), "tensor([100.0000,   2.5000])"),
    (lambda: ember.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: ember.tensor([]), "tensor([])"),
    (lambda: ember.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: ember.tensor([[3, 5], [10, 5]]), "tensor([[ 3,  5],\n        [10,  5]])"),
    (lambda: ember.ones(2, requires_grad=True), "tensor([1., 1.], requires_grad=True)"),
    (lambda: ember.ones(2, requires_grad=True) * 2, "tensor([2., 2.], grad_fn=<MulBackward0>)"),
    (lambda: ember.ones(2, device="strict"), "tensor([1., 1.], device='strict')"),
])
def test_repr_matches_pytorch_layout(make, text):
    assert repr(make()) == text


def test_tensors_hash_by_identity_and_are_not_pickled():
    a, b = ember.ones(1), ember.ones(1)
    assert len({a, b, a}) == 2
    with pytest.raises(TypeError, match="ember.save"):
        pickle.dumps(a)


def test_memory_is_shared_by_views_not_by_clones():
    a = ember.arange(6.0)
    v = a.view(2, 3)
    c = a.clone()
    assert v.data_ptr() == a.data_ptr() and c.data_ptr() != a.data_ptr()
    a.numpy()[0] = 42.0
    assert v[0, 0].item() == 42.0 and c[0].item() == 0.0


def test_deepcopy_copies_leaves_with_grad_and_keeps_sharing_inside_one_copy():
    import copy
    t = ember.ones(2, requires_grad=True)
    (t * 2).sum().backward()
    state = copy.deepcopy({"a": t, "b": t, "c": ember.arange(3)})
    assert state["a"] is state["b"] and state["a"] is not t
    assert state["a"].requires_grad and state["a"].grad.tolist() == [2.0, 2.0]
    state["a"].data.fill_(5.0)
    assert t.tolist() == [1.0, 1.0] and state["c"].tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="graph leaves.*MulBackward0"):
        copy.deepcopy(t * 2)


def test_sibling_packages_resolve_as_attributes_after_import_ember(monkeypatch):
    import subprocess
    import sys
    code = "import ember; print(ember.optim.__name__, ember.nn.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["ember.optim", "ember.nn"], out.stderr
    monkeypatch.setitem(sys.modules, "ember.tune", None)  # as if ember-tune were not installed
    monkeypatch.delattr(ember, "tune", raising=False)
    with pytest.raises(AttributeError, match="install ember-tune"):
        ember.tune  # noqa: B018
