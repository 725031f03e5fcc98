"""In-place ops: version counter, leaf/overlap errors, history rebasing (also through views), setitem."""
import numpy as np
import pytest

import ember
from tests.core.helpers import check_grads, rand64


def test_each_inplace_op_bumps_the_shared_version(device):
    x = ember.zeros(2, 3, device=device)
    v = x[0]
    ops = [lambda t: t.add_(1), lambda t: t.sub_(1, alpha=2), lambda t: t.mul_(2), lambda t: t.div_(2),
           lambda t: t.zero_(), lambda t: t.fill_(3), lambda t: t.copy_(ember.ones(3, device=device)),
           lambda t: t.masked_fill_(ember.tensor([True, False, True], device=device), 0.0),
           lambda t: t.index_add_(0, ember.tensor([0], device=device), ember.ones(1, device=device)),
           lambda t: t.scatter_(0, ember.tensor([1], device=device), 5.0),
           lambda t: t.scatter_add_(0, ember.tensor([1], device=device), ember.ones(1, device=device)),
           lambda t: t.__setitem__(0, 2.0)]
    for i, op in enumerate(ops, 1):
        result = op(v)
        assert result is v or (result is None and i == len(ops))  # __setitem__ returns None
        assert v._version == x._version == i
    assert x[1].tolist() == [0.0, 0.0, 0.0]


def test_values_match_numpy(device):
    a = np.arange(6.0).reshape(2, 3)
    x = ember.tensor(a, device=device)
    x.add_(ember.tensor([1.0, 2.0, 3.0], device=device), alpha=2).mul_(3).sub_(1).div_(2)
    np.testing.assert_allclose(x.numpy(force=True), ((a + 2 * np.array([1, 2, 3])) * 3 - 1) / 2)
    y = ember.ones(2, 3, device=device)
    y += 1
    y *= ember.full((3,), 2.0, device=device)
    y -= 1
    y /= 3
    np.testing.assert_allclose(y.numpy(force=True), np.ones((2, 3)))


def test_python_augmented_assignment_keeps_identity():
    x = ember.zeros(3)
    x_id = id(x)
    x += 1
    assert id(x) == x_id and x._version == 1


def test_int_tensor_rejects_float_result(device):
    x = ember.zeros(3, dtype=ember.int64, device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.add_(1.5)
    x.add_(ember.ones(3, dtype=ember.int32, device=device))  # int into int is fine
    assert x.tolist() == [1, 1, 1]


def test_broadcast_shape_error(device):
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        ember.zeros(3, device=device).add_(ember.ones(2, 3, device=device))


def test_leaf_requiring_grad_errors_outside_no_grad(device):
    w = ember.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        w.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        w[0] = 5.0
    with ember.no_grad():
        w.mul_(2)
        w[0] = 5.0
    assert w.tolist() == [5.0, 2.0, 2.0] and w.is_leaf and w.grad_fn is None


def test_writing_into_an_expanded_tensor_errors():
    x = ember.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single "
                                           "memory location"):
        x.add_(1)


def test_modified_saved_tensor_makes_backward_raise(device):
    x = rand64(3, device=device)
    y = x * 2
    z = y * y  # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[float64 tensor \[3\]\].*"
                                           r"is at version 1; expected version 0 instead \(saved by MulBackward0\)"):
        z.sum().backward()


def test_modified_saved_output_makes_backward_raise(device):
    x = rand64(2, 2, device=device)
    y = x.exp()  # saves its output
    y[0, 0] = 0.0
    with pytest.raises(RuntimeError, match=r"\[float64 tensor \[2, 2\]\].*is at version 1; expected version 0 "
                                           r"instead \(saved by ExpBackward0\)"):
        y.sum().backward()


def test_version_check_sees_writes_through_views(device):
    x = rand64(2, 3, device=device)
    y = x * 1
    z = y.exp().mul(y)  # MulBackward0 saves y
    y.t()[0, 1].mul_(2)
    with pytest.raises(RuntimeError, match="expected version 0 instead"):
        z.sum().backward()


@pytest.mark.parametrize("fn", [
    lambda t, s: (t * 1).add_(s, alpha=2), lambda t, s: (t * 1).sub_(s), lambda t, s: (t + 1).mul_(s),
    lambda t, s: (t + 2).div_(s + 3), lambda t, s: (t * 1).mul_(2.5), lambda t, s: (t * 1).copy_(s),
    lambda t, s: (t * 1).copy_(s[0]), lambda t, s: (t * 1).fill_(s[0, 0]), lambda t, s: (t * 1).zero_() + s,
    lambda t, s: (t * 1).masked_fill_(t > 0, s[1, 1]),
    lambda t, s: (t * 1).scatter_(1, ember.tensor([[2], [0]], device=t.device), s),
    lambda t, s: (t * 1).scatter_(1, ember.tensor([[1], [0]], device=t.device), s, reduce="add"),
    lambda t, s: (t * 1).scatter_add_(0, ember.tensor([[1, 1, 0]], device=t.device), s),
    lambda t, s: (t * 1).index_add_(1, ember.tensor([2, 2, 0], device=t.device), s, alpha=-1),
    lambda t, s: (t * 1).index_put_((ember.tensor([1, 1], device=t.device), ember.tensor([0, 2], device=t.device)),
                                    s[0, :2], accumulate=True),
    lambda t, s: t.clone().mul_(s).add_(t),
])
def test_inplace_grads(device, fn):
    check_grads(fn, rand64(2, 3, device=device, seed=1), rand64(2, 3, device=device, seed=2), gradgrad=True)


def _write_through_views(t, s):
    y = t * 1
    y[0].mul_(s[0])  # a view of a non-leaf
    y.t()[1:, 1].add_(s[1, 1:])  # a view of a view
    return y


def _setitem_mix(t, s):
    y = t.clone()
    y[0, 1:] = s[1, :2] * 3
    y[:, 0] = 0.5
    y[[1, 1], [2, 0]] = s[0, :2]
    y[y > 10] = 0.0
    y[..., None, 1] = s[:, 2:]
    return y


def _setitem_into_fresh(t, s):
    y = ember.zeros(3, 3, dtype=ember.float64, device=t.device)
    y[1:] = t
    y[0, ::2] = s[0, :2]
    return y * y


@pytest.mark.parametrize("fn", [_write_through_views, _setitem_mix, _setitem_into_fresh])
def test_grads_through_views_and_setitem(device, fn):
    check_grads(fn, rand64(2, 3, device=device, seed=3), rand64(2, 3, device=device, seed=4), gradgrad=True)


def test_setitem_gives_overwritten_region_zero_grad(device):
    x = rand64(2, 3, device=device)
    v = rand64(3, device=device, seed=9)
    y = x * 1
    y[1] = v * 2
    assert y.grad_fn.name() == "CopySlices" and y[1].grad_fn.name() == "SelectBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert v.grad.tolist() == [2.0, 2.0, 2.0]


def test_setitem_advanced_grad_fn_and_grads(device):
    x = rand64(4, device=device)
    v = rand64(2, device=device, seed=3)
    y = x * 1
    y[[0, 3]] = v
    assert y.grad_fn.name() == "IndexPutBackward0"
    y.backward(ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64, device=device))
    assert x.grad.tolist() == [0.0, 2.0, 3.0, 0.0] and v.grad.tolist() == [1.0, 4.0]


def test_inplace_on_view_rebases_base_and_view():
    x = ember.ones(2, 2, requires_grad=True)
    y = x * 1
    v = y[0]
    v.mul_(3)
    assert y.grad_fn.name() == "CopySlices" and v.grad_fn.name() == "SelectBackward0"
    assert v._version == y._version == 1
    y.sum().backward()
    assert x.grad.tolist() == [[3.0, 3.0], [1.0, 1.0]]


def test_inplace_with_grad_input_into_plain_tensor(device):
    w = rand64(3, device=device)
    buf = ember.zeros(3, dtype=ember.float64, device=device)
    buf.add_(w * 2)
    assert buf.requires_grad and not buf.is_leaf and buf.grad_fn.name() == "AddBackward0"
    buf.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_setitem_values_and_broadcast(device):
    x = ember.zeros(3, 4, device=device)
    x[0] = 1.0
    x[1, 1:3] = ember.tensor([2.0, 3.0], device=device)
    x[:, -1] = ember.tensor([[7.0, 8.0, 9.0]], device=device)  # a leading 1 is dropped, as in PyTorch
    x[2, [0, 1]] = 5.0
    x[x == 0] = -1.0
    x[[2], 2] = [6.0]
    assert x.tolist() == [[1, 1, 1, 7], [-1, 2, 3, 8], [5, 5, 6, 9]]
    with pytest.raises(RuntimeError, match="shape mismatch|doesn't match the broadcast shape"):
        x[0] = ember.ones(3, device=device)


def test_copy_across_dtypes_and_devices(device):
    dst = ember.zeros(2, 2, device=device)
    dst.copy_(ember.tensor([[1, 2], [3, 4]]))  # int64 on cpu -> float32 on device
    assert dst.dtype == ember.float32 and dst.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    src = rand64(2, device="cpu")
    out = ember.zeros(2, 2, dtype=ember.float64, device=device)
    out.copy_(src)
    out.sum().backward()
    assert src.grad.device.type == "cpu" and src.grad.tolist() == [2.0, 2.0]


def test_clamp_inplace(device):
    x = ember.tensor([-2.0, 0.5, 3.0], device=device)
    assert x.clamp_(-1, 1).tolist() == [-1.0, 0.5, 1.0] and x._version == 1
    check_grads(lambda t: (t * 1).clamp_(-0.5, 0.5), rand64(5, device=device))


def test_no_grad_inplace_leaves_history_alone():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    fn = y.grad_fn
    with ember.no_grad():
        y.add_(1)
    assert y.grad_fn is fn and y._version == 1


def test_scatter_inplace_reduce_multiply_on_cpu():
    x = ember.full((3,), 2.0)
    x.scatter_(0, ember.tensor([0, 0, 2]), 3.0, reduce="multiply")
    assert x.tolist() == [18.0, 2.0, 6.0]


def test_view_made_before_an_inplace_change_of_its_base_sees_the_new_history():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    v = x[:2]
    x.mul_(3)
    v.sum().backward()
    assert a.grad.tolist() == [3.0, 3.0, 0.0]


def test_view_of_a_plain_tensor_gets_history_written_into_its_base():
    w = ember.tensor([5.0, 6.0], requires_grad=True)
    y = ember.zeros(3)
    u = y[1:]
    y[:2] = w
    u.sum().backward()
    assert w.grad.tolist() == [0.0, 1.0]


def test_inplace_ops_work_on_zero_dim_results_of_reductions_and_pointwise_ops(device):
    total = ember.ones(3, device=device).sum()
    total.add_(1)
    square = ember.tensor(2.0, device=device) * ember.tensor(3.0, device=device)
    square.mul_(2)
    assert total.item() == 4.0 and square.item() == 12.0
    assert total._version == 1 and square._version == 1


def test_optimizer_style_updates_under_no_grad_change_the_leaf_in_place(device):
    w = ember.ones(3, device=device, requires_grad=True)
    g = ember.tensor([1.0, 2.0, 3.0], device=device)
    before = w._version
    with ember.no_grad():
        same = w.add_(g, alpha=-0.5).mul_(2.0).sub_(1)
    assert same is w and w.requires_grad and w.grad_fn is None
    assert w.tolist() == [0.0, -1.0, -2.0] and w._version == before + 3
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the broadcast shape"):
        with ember.no_grad():
            w.add_(ember.ones(2, 3, device=device))
