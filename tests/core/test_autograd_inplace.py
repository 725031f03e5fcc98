"""Version counters and in-place errors in autograd; cross-device autograd on logical CPU devices."""
import pytest

import ember

# -- in-place changes and the version counter -------------------------------------------------------------------

def test_in_place_ops_bump_the_version():
    x = ember.ones(3)
    assert x._version == 0
    x.add_(1)
    x.mul_(2)
    assert x._version == 2 and x.tolist() == [4.0, 4.0, 4.0]


def test_modifying_a_saved_input_makes_backward_raise():
    x = ember.ones(2, 3, requires_grad=True)
    y = x * 1
    z = y * y                  # MulBackward0 saves y at version 0
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    msg = str(info.value)
    assert "one of the variables needed for gradient computation has been modified by an inplace operation" in msg
    assert "[2, 3]" in msg
    assert "is at version 1; expected version 0 instead" in msg
    assert "MulBackward0" in msg


def test_modifying_a_saved_input_names_the_op_that_saved_it():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    s = y.sin()
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead.*SinBackward0"):
        s.sum().backward()


def test_modifying_a_saved_output_makes_backward_raise():
    x = ember.ones(3, requires_grad=True)
    y = x.exp()                # ExpBackward0 saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*version 1; expected version 0"):
        y.sum().backward()


def test_two_in_place_changes_report_both_versions():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    z = y * y
    y.add_(1)
    y.add_(1)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0 instead"):
        z.sum().backward()


def test_in_place_on_a_value_not_saved_is_fine():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y + 1                  # AddBackward0 saves nothing
    y.mul_(3)
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_in_place_on_non_leaf_is_differentiable():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_in_place_on_leaf_that_requires_grad_raises():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        w.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        w.mul_(2)
    assert w.tolist() == [1.0, 1.0] and w._version == 0


def test_in_place_on_leaf_under_no_grad_is_the_sgd_step():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with ember.no_grad():
        w.sub_(0.5 * w.grad)
    assert w.tolist() == [0.0, 0.0]
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_in_place_through_a_view_bumps_the_base_version():
    base = ember.ones(4)
    v = base.view(2, 2)
    v.add_(1)
    assert base._version == v._version == 1
    assert base.tolist() == [2.0, 2.0, 2.0, 2.0]


def test_retain_graph_still_checks_versions():
    x = ember.ones(2, requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    z.backward(retain_graph=True)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# -- cross-device autograd ----------------------------------------------------------------------------------------



def test_to_another_logical_cpu_is_differentiable(two_cpus):
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a.to("cpu:1")
    assert b.device == ember.device("cpu", 1) and b.grad_fn.name() == "ToCopyBackward0"
    assert b.data_ptr() != a.data_ptr()      # a move is a copy, never shared memory
    (b * 3).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]
    assert a.grad.device == a.device         # the gradient lands on the source device


def test_gradient_flows_through_a_round_trip(two_cpus):
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    w = ember.tensor([2.0, 5.0], device="cpu:1", requires_grad=True)
    y = (a.to("cpu:1") * w).to("cpu")
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 5.0] and a.grad.device == ember.device("cpu")
    assert w.grad.tolist() == [1.0, 2.0] and w.grad.device == ember.device("cpu:1")


def test_mixing_devices_in_one_op_names_both(two_cpus):
    a = ember.ones(2)
    b = ember.ones(2, device="cpu:1")
    with pytest.raises(RuntimeError, match=r"expected all tensors to be on the same device.*cpu and cpu:1"):
        a + b
    with pytest.raises(ember.DeviceMismatchError, match="cpu:1 and cpu"):
        b * a


def test_cpu_and_cpu0_are_the_same_device(two_cpus):
    a = ember.ones(2, device="cpu")
    b = ember.ones(2, device="cpu:0")
    assert (a + b).tolist() == [2.0, 2.0]
    assert a.to("cpu:0") is a


def test_to_other_backend_is_differentiable():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a.to("strict")
    (b * b).sum().backward()
    assert a.grad.tolist() == [2.0, 4.0] and a.grad.device == ember.device("cpu")


def test_cast_and_move_together_is_differentiable(two_cpus):
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a.to("cpu:1", ember.float64)
    assert b.dtype == ember.float64 and b.device == ember.device("cpu:1")
    (b * 2).sum().backward()
    assert a.grad.dtype == ember.float32 and a.grad.device == ember.device("cpu")
    assert a.grad.tolist() == [2.0, 2.0]
