"""ember.autocast: each op's output dtype on the CPU against PyTorch 2.13's, nesting, enabled=False, the decorator,
mixed-dtype promotion, the weight-cast cache, gradients' dtype, and regions of another device type.

The expected dtypes were read by hand from PyTorch 2.13 (``torch.autocast("cpu", dtype=...)`` with float32 inputs
and with inputs already in the region's dtype): ``LOWER`` ops give the region's dtype for both, ``FP32`` ops give
float32 for both, ``KEEP`` ops give their input's dtype.
"""
from __future__ import annotations

import threading

import pytest

import ember
import ember.nn.functional as F
from ember.amp.lists import OP_LISTS

LOWER, FP32, KEEP = "lower", "fp32", "keep"


def _t(*shape):
    return lambda d: (ember.rand(*shape) + 0.5).to(d)


A, B, V, IMG, SEQ, SQ = _t(3, 4), _t(4, 5), _t(4), _t(2, 3, 8, 8), _t(2, 3, 8), _t(4, 4)


def _classes():
    return ember.tensor([0, 1, 2])


def _signs():
    return ember.tensor([1.0, -1.0, 1.0])


# (name, what PyTorch 2.13 does with it under CPU autocast, the call on inputs of dtype d)
CASES = [
    ("mm", LOWER, lambda d: ember.mm(A(d), B(d))),
    ("matmul", LOWER, lambda d: ember.matmul(_t(2, 3, 4)(d), B(d))),
    ("bmm", LOWER, lambda d: ember.bmm(_t(2, 3, 4)(d), _t(2, 4, 5)(d))),
    ("baddbmm", LOWER, lambda d: ember.baddbmm(_t(2, 3, 5)(d), _t(2, 3, 4)(d), _t(2, 4, 5)(d))),
    ("addmm", LOWER, lambda d: ember.addmm(_t(3, 5)(d), A(d), B(d))),
    ("einsum", LOWER, lambda d: ember.einsum("ij,jk->ik", A(d), B(d))),
    ("tensordot", LOWER, lambda d: ember.tensordot(A(d), B(d), dims=1)),
    ("linear", LOWER, lambda d: F.linear(A(d), _t(5, 4)(d), _t(5)(d))),
    ("linear without bias", LOWER, lambda d: F.linear(A(d), _t(5, 4)(d))),
    ("conv1d", LOWER, lambda d: F.conv1d(SEQ(d), _t(4, 3, 3)(d))),
    ("conv2d", LOWER, lambda d: F.conv2d(IMG(d), _t(4, 3, 3, 3)(d), _t(4)(d))),
    ("conv_transpose1d", LOWER, lambda d: F.conv_transpose1d(SEQ(d), _t(3, 4, 3)(d))),
    ("conv_transpose2d", LOWER, lambda d: F.conv_transpose2d(IMG(d), _t(3, 4, 3, 3)(d))),
    ("nn.LSTM", LOWER, lambda d: ember.nn.LSTM(3, 4).to(d)(_t(5, 2, 3)(d))[0]),
    ("nn.RNN", LOWER, lambda d: ember.nn.RNN(3, 4).to(d)(_t(5, 2, 3)(d))[0]),
    ("cross_entropy", FP32, lambda d: F.cross_entropy(A(d), _classes())),
    ("nll_loss", FP32, lambda d: F.nll_loss(A(d), _classes())),
    ("mse_loss", FP32, lambda d: F.mse_loss(A(d), A(d))),
    ("l1_loss", FP32, lambda d: F.l1_loss(A(d), A(d))),
    ("smooth_l1_loss", FP32, lambda d: F.smooth_l1_loss(A(d), A(d))),
    ("huber_loss", FP32, lambda d: F.huber_loss(A(d), A(d))),
    ("kl_div", FP32, lambda d: F.kl_div(A(d), A(d), reduction="batchmean")),
    ("binary_cross_entropy", FP32, lambda d: F.binary_cross_entropy(ember.rand(3, 4).to(d), ember.rand(3, 4).to(d))),
    ("binary_cross_entropy_with_logits", FP32, lambda d: F.binary_cross_entropy_with_logits(A(d), A(d) - 0.5)),
    ("soft_margin_loss", FP32, lambda d: F.soft_margin_loss(A(d), A(d))),
    ("poisson_nll_loss", FP32, lambda d: F.poisson_nll_loss(A(d), A(d))),
    ("margin_ranking_loss", FP32, lambda d: F.margin_ranking_loss(A(d)[:, 0], A(d)[:, 1], _signs())),
    ("cosine_embedding_loss", FP32, lambda d: F.cosine_embedding_loss(A(d), A(d), _signs())),
    ("prod", FP32, lambda d: ember.prod(A(d))),
    ("prod over a dim", FP32, lambda d: ember.prod(A(d), 1)),
    ("pad reflect", FP32, lambda d: F.pad(IMG(d), (1, 1, 1, 1), mode="reflect")),
    ("pad replicate", FP32, lambda d: F.pad(IMG(d), (1, 1, 1, 1), mode="replicate")),
    ("inverse", FP32, lambda d: ember.inverse(SQ(d) + 4 * ember.eye(4).to(d))),
    ("mv", KEEP, lambda d: ember.mv(A(d), V(d))),
    ("dot", KEEP, lambda d: ember.dot(V(d), V(d))),
    # PyTorch: float32 in, float32 out (its CPU GRU kernel is on no list); ember's nn.GRU projects its input with
    # F.linear first, so the whole layer runs in the lower dtype, as nn.LSTM and nn.RNN do in both
    ("nn.GRU", LOWER, lambda d: ember.nn.GRU(3, 4).to(d)(_t(5, 2, 3)(d))[0]),
    ("cumprod", KEEP, lambda d: ember.cumprod(A(d), 1)),
    ("cumsum", KEEP, lambda d: ember.cumsum(A(d), 1)),
    ("sum", KEEP, lambda d: ember.sum(A(d))),
    ("sum over a dim", KEEP, lambda d: ember.sum(A(d), 1)),
    ("mean", KEEP, lambda d: ember.mean(A(d))),
    ("var", KEEP, lambda d: ember.var(A(d))),
    ("logsumexp", KEEP, lambda d: ember.logsumexp(A(d), 1)),
    ("softmax", KEEP, lambda d: F.softmax(A(d), 1)),
    ("log_softmax", KEEP, lambda d: F.log_softmax(A(d), 1)),
    ("layer_norm", KEEP, lambda d: F.layer_norm(A(d), (4,))),
    ("group_norm", KEEP, lambda d: F.group_norm(IMG(d), 3)),
    ("batch_norm", KEEP, lambda d: F.batch_norm(IMG(d), ember.zeros(3).to(d), ember.ones(3).to(d))),
    ("linalg.vector_norm", KEEP, lambda d: ember.linalg.vector_norm(A(d))),
    ("exp", KEEP, lambda d: ember.exp(A(d))),
    ("log", KEEP, lambda d: ember.log(A(d))),
    ("pow", KEEP, lambda d: ember.pow(A(d), 2.0)),
    ("pow of tensors", KEEP, lambda d: ember.pow(A(d), A(d))),
    ("sqrt", KEEP, lambda d: ember.sqrt(A(d))),
    ("tanh", KEEP, lambda d: ember.tanh(A(d))),
    ("sigmoid", KEEP, lambda d: ember.sigmoid(A(d))),
    ("gelu", KEEP, lambda d: F.gelu(A(d))),
    ("relu", KEEP, lambda d: F.relu(A(d))),
    ("add", KEEP, lambda d: A(d) + A(d)),
    ("mul", KEEP, lambda d: A(d) * A(d)),
    ("max_pool2d", KEEP, lambda d: F.max_pool2d(IMG(d), 2)),
    ("avg_pool2d", KEEP, lambda d: F.avg_pool2d(IMG(d), 2)),
    ("interpolate nearest", KEEP, lambda d: F.interpolate(IMG(d), scale_factor=2)),
    ("pad circular", KEEP, lambda d: F.pad(IMG(d), (1, 1, 1, 1), mode="circular")),
    ("pad constant", KEEP, lambda d: F.pad(IMG(d), (1, 1, 1, 1))),
    ("cat", KEEP, lambda d: ember.cat([A(d), A(d)])),
    ("stack", KEEP, lambda d: ember.stack([A(d), A(d)])),
    ("dropout", KEEP, lambda d: F.dropout(A(d), 0.5)),
    ("embedding", KEEP, lambda d: F.embedding(ember.tensor([0, 1]), A(d))),
]

LOW = [ember.bfloat16, ember.float16]

def _expected(kind, region, given):
    return {LOWER: region, FP32: ember.float32, KEEP: given}[kind]


@pytest.mark.parametrize("region", LOW, ids=str)
@pytest.mark.parametrize("name,kind,call", CASES, ids=[c[0] for c in CASES])
def test_each_ops_output_dtype_on_the_cpu_is_pytorchs(name, kind, call, region):
    for given in (ember.float32, region):
        with ember.autocast("cpu", dtype=region):
            out = call(given)
        assert out.dtype is _expected(kind, region, given), (name, kind, region, given)


@pytest.mark.parametrize("name,kind,call", CASES, ids=[c[0] for c in CASES])
def test_outside_a_region_ops_keep_float32(name, kind, call):
    assert call(ember.float32).dtype is ember.float32


def test_the_cpu_and_cuda_lists_differ_as_pytorchs():
    cpu, cuda = OP_LISTS["cpu"], OP_LISTS["cuda"]
    for name in ("softmax", "logsoftmax", "layer_norm", "exp", "log", "pow", "sum"):
        assert name not in cpu and cuda[name] == "fp32"
    assert "mv" not in cpu and cuda["mv"] == "lower_precision_fp"
    assert cpu["cat"] == "promote" and "cat" not in cuda
    assert cuda["binarycrossentropy"] == "banned" and cpu["binarycrossentropy"] == "fp32"


def test_every_listed_name_is_an_op_or_a_function_that_casts_through_autocast_inputs():
    from ember.autograd.function import OPS
    composite = {"l1_loss", "soft_margin_loss", "poisson_nll_loss", "cosine_embedding_loss", "margin_ranking_loss"}
    for table in OP_LISTS.values():
        assert set(table) - set(OPS) == composite


def test_mixed_inputs_of_a_lower_op_are_all_cast():
    w = ember.rand(5, 4)
    x = ember.rand(3, 4).bfloat16()
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(x, w)  # outside a region, as PyTorch
    with ember.autocast("cpu", dtype=ember.float16):
        assert F.linear(x, w, ember.rand(5)).dtype is ember.float16
        assert ember.mm(ember.rand(3, 4), ember.rand(4, 2).bfloat16()).dtype is ember.float16
        assert F.conv2d(IMG(ember.bfloat16), _t(4, 3, 3, 3)(ember.float32)).dtype is ember.float16


def test_losses_take_a_low_precision_input_with_float32_targets_and_weights():
    low, classes = A(ember.bfloat16), _classes()
    with pytest.raises(RuntimeError, match="expected scalar type BFloat16 but found Float"):
        F.nll_loss(low, classes, weight=V(ember.float32))  # outside a region, as PyTorch
    with ember.autocast("cpu"):
        assert F.cross_entropy(low, classes, weight=V(ember.float32)).dtype is ember.float32
        assert F.nll_loss(low, classes, weight=V(ember.float32)).dtype is ember.float32
        assert F.binary_cross_entropy(ember.rand(3, 4).bfloat16(), ember.rand(3, 4)).dtype is ember.float32
        assert F.mse_loss(low, A(ember.float32)).dtype is ember.float32


def test_float64_and_integer_inputs_are_never_cast():
    with ember.autocast("cpu"):
        assert ember.mm(A(ember.float64), B(ember.float64)).dtype is ember.float64
        assert F.mse_loss(A(ember.float64), A(ember.float64)).dtype is ember.float64
        ints = ember.ones(2, 2, dtype=ember.int64)
        assert ember.mm(ints, ints).dtype is ember.int64


def test_a_promote_op_runs_in_the_widest_input_dtype():
    with ember.autocast("cpu"):
        assert ember.cat([A(ember.float32), A(ember.bfloat16)]).dtype is ember.float32
        assert ember.stack([A(ember.float16), A(ember.float16)]).dtype is ember.float16
        # PyTorch raises on bfloat16 with float16 here; ember promotes both to float32
        assert ember.cat([A(ember.bfloat16), A(ember.float16)]).dtype is ember.float32
        assert F.mse_loss(A(ember.float32), A(ember.bfloat16)).dtype is ember.float32


def test_nested_regions_and_enabled_false_restore_the_outer_state():
    a, b = A(ember.float32), B(ember.float32)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu", dtype=ember.float16):
        assert ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") is ember.float16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(a, b).dtype is ember.float32
        with ember.autocast("cpu"):  # no dtype: the enclosing region's, as PyTorch
            assert ember.mm(a, b).dtype is ember.float16
        with ember.autocast("cpu", dtype=ember.bfloat16):
            assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert ember.mm(a, b).dtype is ember.float16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16 and ember.get_autocast_dtype("cuda") is ember.float16
    assert ember.mm(a, b).dtype is ember.float32


def test_a_region_is_left_on_an_exception():
    with pytest.raises(ZeroDivisionError):
        with ember.autocast("cpu"):
            1 / 0
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(A(ember.float32), B(ember.float32)).dtype is ember.float32


def test_the_decorator_form_turns_autocast_on_for_each_call_only():
    @ember.autocast("cpu", dtype=ember.float16)
    def product(a, b):
        assert ember.is_autocast_enabled("cpu")
        return a @ b

    assert product(A(ember.float32), B(ember.float32)).dtype is ember.float16
    assert product(A(ember.float32), B(ember.float32)).dtype is ember.float16
    assert not ember.is_autocast_enabled("cpu")


def test_ember_amp_autocast_is_the_same_class():
    assert ember.amp.autocast is ember.autocast
    assert ember.amp.is_autocast_available("cpu") and not ember.amp.is_autocast_available("tpu")


def test_a_cuda_region_leaves_cpu_tensors_alone():
    with ember.autocast("cuda"):
        assert ember.is_autocast_enabled("cuda") and not ember.is_autocast_enabled("cpu")
        assert ember.mm(A(ember.float32), B(ember.float32)).dtype is ember.float32
        assert F.softmax(A(ember.bfloat16), 1).dtype is ember.bfloat16  # float32 on CUDA tensors, not on these


def test_a_region_is_per_thread():
    seen = []
    with ember.autocast("cpu", dtype=ember.float16):
        worker = threading.Thread(target=lambda: seen.append(ember.mm(A(ember.float32), B(ember.float32)).dtype))
        worker.start()
        worker.join()
        assert ember.mm(A(ember.float32), B(ember.float32)).dtype is ember.float16
    assert seen == [ember.float32]


def test_gradients_reach_float32_parameters_in_float32():
    lin = ember.nn.Linear(4, 3)
    x = ember.rand(5, 4)
    with ember.autocast("cpu", dtype=ember.float16):
        y = lin(x)
        loss = F.mse_loss(y, ember.zeros(5, 3))
    assert y.dtype is ember.float16 and loss.dtype is ember.float32
    loss.backward()
    assert lin.weight.grad.dtype is ember.float32 and lin.bias.grad.dtype is ember.float32
    # the same gradient as float32 training, within float16's precision
    ref = ember.nn.Linear(4, 3)
    ref.load_state_dict(lin.state_dict())
    F.mse_loss(ref(x), ember.zeros(5, 3)).backward()
    assert ember.allclose(lin.weight.grad, ref.weight.grad, rtol=1e-2, atol=1e-2)


def test_backward_inside_the_region_gives_float32_gradients_too():
    conv = ember.nn.Conv2d(2, 3, 3)
    with ember.autocast("cpu", dtype=ember.float16):
        out = conv(ember.rand(2, 2, 5, 5))
        assert out.grad_fn.next_functions[1][0].name() == "ToCopyBackward0"  # the cast is an op of the graph
        F.relu(out).float().mean().backward()
    assert conv.weight.grad.dtype is ember.float32 and conv.bias.grad.dtype is ember.float32


def test_a_weight_is_cast_once_per_region_and_the_cache_is_dropped_on_exit():
    w = ember.rand(4, 4, requires_grad=True)
    x = ember.rand(2, 4)
    with ember.autocast("cpu"):
        y1, y2 = x @ w, x @ w
        cast_1, cast_2 = y1.grad_fn.next_functions[1][0], y2.grad_fn.next_functions[1][0]
        assert cast_1 is cast_2  # one cast node for both uses, as PyTorch
        with ember.no_grad():
            w.mul_(2.0)  # a changed weight is cast again
        assert (x @ w).grad_fn.next_functions[1][0] is not cast_1
    with ember.autocast("cpu"):
        assert (x @ w).grad_fn.next_functions[1][0] is not cast_1
    with ember.autocast("cpu", cache_enabled=False):
        assert (x @ w).grad_fn.next_functions[1][0] is not (x @ w).grad_fn.next_functions[1][0]
    with ember.autocast("cpu"):
        with ember.no_grad():
            x @ w  # a cast without a graph is not kept ...
        y3 = x @ w  # ... so this one still leads back to w
    assert y3.requires_grad
    (y1.float().sum() + y2.float().sum()).backward()
    assert w.grad.dtype is ember.float32
    assert ember.allclose(w.grad, x.sum(0).unsqueeze(1).expand(4, 4) * 2, rtol=1e-2)


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="no op lists for device type 'tpu'"):
        ember.autocast("tpu")
    with pytest.raises(TypeError, match="device_type to be a string"):
        ember.autocast(ember.device("cpu"))
    with pytest.raises(ValueError, match=r"supports dtypes ember.bfloat16, ember.float16, got ember.float64"):
        ember.autocast("cpu", dtype=ember.float64)
    with pytest.raises(TypeError, match="enabled to be a bool"):
        ember.autocast("cpu", enabled="yes")
