"""Matrix products and einsum: values vs NumPy, shapes, errors, gradients (gradcheck and gradgradcheck)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.core.helpers import check_grads, rand64


def t64(*shape, device, seed=0):
    return rand64(*shape, device=device, seed=seed)


# -- values and grad_fn names ------------------------------------------------------------------------------
@pytest.mark.parametrize("sa, sb, name", [
    ((2, 3), (3, 4), "MmBackward0"), ((3,), (3,), "DotBackward0"), ((2, 3), (3,), "MvBackward0"),
    ((4, 2, 3), (4, 3, 5), "UnsafeViewBackward0"), ((5, 1, 2, 3), (4, 3, 2), "UnsafeViewBackward0"),
    ((4, 2, 3), (3,), "UnsafeViewBackward0"), ((3,), (4, 3, 2), "UnsafeViewBackward0")])
def test_matmul_values_and_grad_fn(device, sa, sb, name):
    a, b = t64(*sa, device=device), t64(*sb, device=device, seed=1)
    out = a @ b
    np.testing.assert_allclose(out.numpy(force=True),
                               np.matmul(a.detach().numpy(force=True), b.detach().numpy(force=True)))
    assert out.grad_fn.name() == name
    assert out.device == a.device


@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)),
                                    ((2, 1, 2, 3), (4, 3, 2)), ((2, 2, 3), (3,)), ((3,), (2, 3, 2))])
def test_matmul_gradgradcheck(device, sa, sb):
    check_grads(ember.matmul, t64(*sa, device=device), t64(*sb, device=device, seed=1), gradgrad=True)


def test_mm_bmm_mv_dot_gradgradcheck(device):
    check_grads(ember.mm, t64(2, 3, device=device), t64(3, 4, device=device, seed=1), gradgrad=True)
    check_grads(ember.bmm, t64(2, 2, 3, device=device), t64(2, 3, 4, device=device, seed=1), gradgrad=True)
    check_grads(ember.mv, t64(2, 3, device=device), t64(3, device=device, seed=1), gradgrad=True)
    check_grads(ember.dot, t64(3, device=device), t64(3, device=device, seed=1), gradgrad=True)


def test_rmatmul_and_integer_matmul(device):
    a = ember.tensor([[1, 2], [3, 4]], device=device)
    assert (a @ a).tolist() == [[7, 10], [15, 22]]
    assert (a @ a).dtype == ember.int64
    assert a.__rmatmul__(ember.tensor([1, 1], device=device)).tolist() == [4, 6]
    with pytest.raises(TypeError):
        a @ 3


def test_outer_inner_tensordot(device):
    a, b = t64(3, device=device), t64(4, device=device, seed=1)
    out = ember.outer(a, b)
    assert out.grad_fn.name() == "MulBackward0"
    np.testing.assert_allclose(out.numpy(force=True),
                               np.outer(a.detach().numpy(force=True), b.detach().numpy(force=True)))
    check_grads(ember.outer, a, b)
    x, y = t64(2, 3, 4, device=device), t64(4, 5, 2, device=device, seed=1)
    nx, ny = x.detach().numpy(force=True), y.detach().numpy(force=True)
    out = ember.tensordot(x, y, dims=([2, 0], [0, 2]))
    np.testing.assert_allclose(out.numpy(force=True), np.tensordot(nx, ny, axes=([2, 0], [0, 2])))
    check_grads(lambda p, q: ember.tensordot(p, q, dims=([2, 0], [0, 2])), x, y, gradgrad=True)
    check_grads(lambda p, q: ember.tensordot(p, q, dims=1), x, y)
    check_grads(lambda p, q: ember.tensordot(p, q, dims=([0, 1], [1, 0])), x, t64(3, 2, device=device))
    check_grads(ember.inner, t64(2, 3, device=device), t64(4, 3, device=device, seed=1))


def test_addmm_baddbmm(device):
    c, a, b = t64(4, device=device, seed=2), t64(3, 2, device=device), t64(2, 4, device=device, seed=1)
    out = ember.addmm(c, a, b, beta=0.5, alpha=2)
    assert out.grad_fn.name() == "AddmmBackward0"
    expect = 0.5 * c.detach().numpy(force=True) + 2 * a.detach().numpy(force=True) @ b.detach().numpy(force=True)
    np.testing.assert_allclose(out.numpy(force=True), expect)
    check_grads(lambda x, y, z: ember.addmm(x, y, z, beta=0.5, alpha=2), c, a, b, gradgrad=True)
    c3, a3, b3 = t64(2, 1, 4, device=device), t64(2, 3, 2, device=device), t64(2, 2, 4, device=device, seed=1)
    assert ember.baddbmm(c3, a3, b3).grad_fn.name() == "BaddbmmBackward0"
    check_grads(lambda x, y, z: ember.baddbmm(x, y, z, alpha=3), c3, a3, b3)
    nan = ember.full((3, 4), float("nan"), dtype=ember.float64, device=device)
    assert not np.isnan(ember.addmm(nan, a, b, beta=0).numpy(force=True)).any()


# -- errors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, sa, sb, msg", [
    (ember.mm, (2, 3), (2, 3), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"),
    (ember.mm, (3,), (3, 2), "self must be a matrix"),
    (ember.mm, (2, 3), (3,), "mat2 must be a matrix"),
    (ember.bmm, (2, 3), (3, 2), "batch1 must be a 3D tensor"),
    (ember.bmm, (1, 2, 3), (1, 2, 3), r"Expected size for first two dimensions of batch2 tensor to be: \[1, 3\] "
                                      r"but got: \[1, 2\]"),
    (ember.dot, (2, 3), (2, 3), "1D tensors expected, but got 2D and 2D tensors"),
    (ember.dot, (3,), (2,), "inconsistent tensor size"),
    (ember.outer, (2, 3), (3,), "outer: Expected 1-D argument self, but got 2-D"),
    (ember.matmul, (), (2, 2), "both arguments to matmul need to be at least 1D, but they are 0D and 2D"),
    (ember.matmul, (4, 2, 3), (5, 3, 2), r"The size of tensor a \(4\) must match the size of tensor b \(5\) at "
                                         r"non-singleton dimension 0"),
    (ember.matmul, (3,), (2, 2), r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 2x2\)"),
    (ember.matmul, (4, 2, 3), (2,), r"size mismatch, got input \(8\), mat \(8x3\), vec \(2\)"),
    (ember.mv, (2, 3), (2,), r"size mismatch, got input \(2\), mat \(2x3\), vec \(2\)"),
])
def test_shape_errors(device, fn, sa, sb, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn(ember.ones(sa, device=device), ember.ones(sb, device=device))


def test_dtype_errors(device):
    f, d = ember.ones(2, 2, device=device), ember.ones(2, 2, dtype=ember.float64, device=device)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        ember.mm(f, d)
    with pytest.raises(RuntimeError,
                       match="dot : expected both vectors to have same dtype, but found Float and Double"):
        ember.dot(f.reshape(-1), d.reshape(-1))
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ember.tensordot(f, f, dims=([0], [0, 1]))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        ember.tensordot(ember.ones(3, 2, device=device), ember.ones(3, 4, device=device), dims=1)


# -- einsum ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,kj", [(2, 3), (4, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("ij,ij->ij", [(2, 3), (1, 3)]), ("i,j,k->ijk", [(2,), (3,), (2,)]),
    ("i j , k j -> i k", [(2, 3), (4, 3)]), ("...i->...", [(2, 3, 4)]), ("ab...,b->a...", [(2, 3, 4), (3,)])])
def test_einsum_values_and_gradients(eq, shapes):
    ops = [rand64(*s, seed=i) for i, s in enumerate(shapes)]
    out = ember.einsum(eq, *ops)
    np.testing.assert_allclose(out.detach().numpy(), np.einsum(eq.replace(" ", ""), *[o.detach().numpy() for o in ops]))
    check_grads(lambda *xs: ember.einsum(eq, *xs), *ops, gradgrad=len(ops) <= 2)


def test_einsum_list_form_and_strict_backend(device):
    a, b = t64(2, 3, device=device), t64(3, device=device, seed=1)
    if device == "strict":
        with pytest.raises(ember.UnsupportedOpError, match="'einsum'.*'strict'"):
            ember.einsum("ij,j->i", [a, b])
        return
    np.testing.assert_allclose(ember.einsum("ij,j->i", [a, b]).detach().cpu().numpy(), (a @ b).detach().cpu().numpy())


@pytest.mark.parametrize("eq, shapes, msg", [
    ("ij,kjl->ik", [(2, 3), (2, 3)], r"the number of subscripts in the equation \(3\) does not match the number of "
                                     r"dimensions \(2\) for operand 1 and no ellipsis was given"),
    ("ij->ik", [(2, 3)], "output subscript k does not appear in the equation for any input operand"),
    ("ij,ij->ij", [(2, 3), (2, 2)], "subscript j has size 2 for operand 1 which does not broadcast with previously "
                                    "seen size 3"),
    ("ii->i", [(3, 2)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("ij->ii", [(2, 2)], "output subscript i appears more than once in the output"),
    ("i1->i", [(2, 2)], "invalid subscript given at index 1"),
])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.einsum(eq, *[ember.ones(s) for s in shapes])


# -- property tests against NumPy ---------------------------------------------------------------------------
batch = st.lists(st.integers(1, 3), max_size=3)


@settings(max_examples=40, deadline=None)
@given(batch_a=batch, batch_b=batch, n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3),
       vec_a=st.booleans(), vec_b=st.booleans(), data=st.data())
def test_matmul_broadcasting_matches_numpy(batch_a, batch_b, n, k, m, vec_a, vec_b, data):
    # make the batch shapes broadcastable by setting some sizes to 1
    bb = [1 if data.draw(st.booleans()) else s for s in batch_b]
    ba = list(batch_a)
    for i in range(1, min(len(ba), len(bb)) + 1):
        if ba[-i] != bb[-i] and bb[-i] != 1:
            ba[-i] = 1
    sa = (k,) if vec_a else tuple(ba) + (n, k)
    sb = (k,) if vec_b else tuple(bb) + (k, m)
    a, b = np.random.default_rng(0).standard_normal(sa), np.random.default_rng(1).standard_normal(sb)
    out = ember.matmul(ember.tensor(a), ember.tensor(b))
    assert tuple(out.shape) == np.matmul(a, b).shape
    np.testing.assert_allclose(out.numpy(), np.matmul(a, b), rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_einsum_matches_numpy(sizes, data):
    letters = "abcd"[:len(sizes)]
    terms = [data.draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3, unique=True).map("".join))
             for _ in range(data.draw(st.integers(1, 3)))]
    used = sorted(set("".join(terms)))
    out = "".join(data.draw(st.permutations(used))[:data.draw(st.integers(0, len(used)))])
    eq = ",".join(terms) + "->" + out
    ops = [np.random.default_rng(i).standard_normal([sizes[letters.index(c)] for c in t]) for i, t in enumerate(terms)]
    got = ember.einsum(eq, *[ember.tensor(o) for o in ops])
    np.testing.assert_allclose(got.numpy(), np.einsum(eq, *ops), rtol=1e-10, atol=1e-10)
