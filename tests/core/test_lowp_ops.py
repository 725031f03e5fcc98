"""The op suite in float16 and bfloat16 on the CPU backend: every op PyTorch runs in those dtypes gives the
float32 result rounded to them (within the dtype's tolerance), in the reduced dtype where PyTorch's result is,
with gradients in the reduced dtype close to float32's; linear algebra refuses them, as PyTorch's CPU does.

The calls are in ``lowp_cases.py``; the same table ran against PyTorch 2.13 by hand, which gave the same
output and gradient dtypes and the same refusals.
"""
import numpy as np
import pytest

import ember
import ember.nn.functional  # noqa: F401 - the cases call lib.nn.functional
import ember.nn.utils.rnn  # noqa: F401 - and pad_sequence
from ember.autograd.function import OPS, clear_kernel_cache
from tests.core.lowp_cases import CASES, REFUSED, Case, input_values, make_inputs

REDUCED = [ember.float16, ember.bfloat16]
#: relative tolerance of one op's result: about two units in the last place of each dtype
RTOL = {ember.float16: 2e-3, ember.bfloat16: 1.6e-2}
#: ops not in the table, and why
NOT_IN_TABLE = {
    # integer and bool only, in PyTorch too
    "bitwiseand", "bitwiseor", "bitwisexor", "bitwisenot", "bitwiseleftshift", "bitwiserightshift", "one_hot",
    "truncdivide",  # div(rounding_mode="trunc") of integers; floats go through div and trunc
    # run by the backward of ops in the table (tested there), or only by a second derivative
    "avg_pool_backward", "basicindexbackward", "convolution_backward", "convolutionweightgrad",
    "diagonalbackward", "max_pool_backward", "max_pool_select", "resampletranspose", "padalongdim",
    "narrowalongdim", "permutealongdim", "basicindex", "resample",
    # moves memory, no values computed (tests/core/test_pin_memory.py)
    "pinmemory",
    # refused in float16/bfloat16 (REFUSED below)
    "linalgcholeskyex", "linalgdet", "linalgslogdet", "linalginvex", "linalgsolveex", "linalgqr", "linalgsvd",
    "linalgeigh",
}


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _run(case: Case, dtype, grad: bool, compute=None):
    """``case`` on inputs in ``dtype``, converted to ``compute`` (if given) so that both runs see equal values."""
    ember.manual_seed(0)
    inputs = make_inputs(ember, case, dtype, grad)
    if compute is not None:
        inputs = [t.detach().to(compute).requires_grad_(t.requires_grad) if t.dtype is dtype else t for t in inputs]
    out = _first(case.fn(ember, *inputs))
    grads = []
    if grad and out.dtype.is_floating_point:
        weight = ember.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)), dtype=dtype)
        (out * weight.to(out.dtype)).sum().backward()
        grads = [t.grad for t in inputs if isinstance(t, ember.Tensor) and t.requires_grad]
    return out, grads


def _close(got, want, rtol, what):
    """``got`` within ``rtol`` of ``want``, relative to ``want``'s largest magnitude (cancellation-proof)."""
    got, want = got.detach().double().numpy(), want.detach().double().numpy()
    assert got.shape == want.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite]), what
    scale = max(1.0, float(np.abs(want[finite]).max())) if finite.any() else 1.0
    err = np.abs(got[finite] - want[finite])
    assert (err <= rtol * (np.abs(want[finite]) + scale)).all(), f"{what}: max error {err.max():.3g}"


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_in_reduced_dtype_matches_float32_rounded(case, dtype):
    out, grads = _run(case, dtype, case.grad)
    ref, ref_grads = _run(case, dtype, case.grad, compute=ember.float32)
    want_dtype = dtype if ref.dtype is ember.float32 and case.id != "to" else ref.dtype
    assert out.dtype is want_dtype, f"{case.id}: {out.dtype} from {dtype} inputs, PyTorch gives {want_dtype}"
    if case.random:
        assert out.shape == ref.shape and bool(ember.isfinite(out).all())
        return
    rtol = RTOL[dtype] * (4 if case.loose else 1)
    want = ref.to(dtype) if ref.dtype is ember.float32 else ref
    if not out.dtype.is_floating_point:
        assert out.tolist() == want.tolist(), case.id
    else:
        _close(out, want, rtol, f"{case.id} forward")
    assert len(grads) == len(ref_grads)
    for i, (g, rg) in enumerate(zip(grads, ref_grads)):
        assert g.dtype is dtype, f"{case.id}: gradient {i} is {g.dtype}, expected {dtype}"
        _close(g, rg.to(dtype), rtol * 4, f"{case.id} gradient {i}")


def test_every_op_is_in_the_table_or_excluded_with_a_reason():
    clear_kernel_cache()
    for case in CASES:
        _run(case, ember.bfloat16, case.grad)
    ours = {name for name, cls in OPS.items() if cls.__module__.startswith("ember.")}  # not tests' own ops
    ran = {name for name, cls in OPS.items() if cls._kernels.get("cpu")}
    missing = ours - ran - NOT_IN_TABLE
    assert not missing, f"ops not run in bfloat16 by any case of lowp_cases.py: {sorted(missing)}"
    assert not (NOT_IN_TABLE - set(OPS)), "NOT_IN_TABLE names ops that no longer exist"


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
@pytest.mark.parametrize("call", [c for _, c in REFUSED])
def test_linear_algebra_refuses_reduced_floats_as_pytorch(call, dtype):
    a = ember.tensor(input_values(Case("spd", None, ("s:3,3",)))[0], dtype=dtype)
    name = "Half" if dtype is ember.float16 else "BFloat16"
    with pytest.raises(RuntimeError, match=f"Low precision dtypes not supported. Got {name}"):
        call(ember, a)
    call(ember, a.float())  # float32 is fine


def test_a_reduction_over_many_elements_accumulates_in_float32():
    # 4096 times bfloat16(0.1) = 0.10009765625: a bfloat16 accumulator stops at 32 (where 0.1 is below half
    # its spacing; NumPy's own sum of a bfloat16 array gives 32); PyTorch gives 410, as ember does
    assert ember.full((4096,), 0.1, dtype=ember.bfloat16).sum().item() == 410.0
    assert ember.ones(70000, dtype=ember.float16).sum().item() == float("inf")  # 70000 > float16's max, as PyTorch
    assert ember.ones(60000, dtype=ember.float16).mean().item() == 1.0


def test_nan_to_num_uses_the_reduced_dtypes_own_limits():
    x = ember.tensor([float("inf"), -float("inf"), float("nan")])
    assert ember.nan_to_num(x.half()).tolist() == [65504.0, -65504.0, 0.0]
    big = float(ember.finfo(ember.bfloat16).max)
    assert ember.nan_to_num(x.bfloat16()).tolist() == [big, -big, 0.0]


def test_matmul_and_conv_stay_in_the_reduced_dtype():
    a = ember.randn(64, 784).bfloat16()
    b = ember.randn(784, 256).bfloat16()
    out = a @ b
    assert out.dtype is ember.bfloat16
    _close(out, (a.float() @ b.float()).bfloat16(), 1.6e-2, "matmul")
    x, w = ember.randn(2, 8, 10, 10).half(), ember.randn(4, 8, 3, 3).half()
    y = ember.nn.functional.conv2d(x, w)
    assert y.dtype is ember.float16
    _close(y, ember.nn.functional.conv2d(x.float(), w.float()).half(), 2e-3, "conv2d")


def test_mixed_float32_and_reduced_inputs_promote_as_pytorch():
    a, h, b = ember.ones(2), ember.ones(2).half(), ember.ones(2).bfloat16()
    assert (a + h).dtype is ember.float32 and (h + b).dtype is ember.float32 and (h * 2.5).dtype is ember.float16
    assert (b + ember.tensor(3)).dtype is ember.bfloat16  # an integer tensor does not widen a floating one


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_linear_backward_accumulates_in_float32(dtype):
    # the bias gradient sums 4096 ones: a float16/bfloat16 accumulator stops at 2048/256; PyTorch gives 4096
    x = ember.ones(4096, 2, dtype=dtype, requires_grad=True)
    w = ember.ones(3, 2, dtype=dtype, requires_grad=True)
    b = ember.zeros(3, dtype=dtype, requires_grad=True)
    ember.nn.functional.linear(x, w, b).sum().backward()
    assert b.grad.dtype is dtype and b.grad.tolist() == [4096.0] * 3
    assert w.grad.dtype is dtype and w.grad.tolist() == [[4096.0] * 2] * 3
    assert x.grad.dtype is dtype and x.grad[0].tolist() == [3.0, 3.0]


@pytest.mark.parametrize("dtype", REDUCED, ids=str)
def test_blocked_products_match_one_float32_product(dtype):
    # K = 4096 makes blocks of 64 columns (2 of them for 100 columns) and, with 80 rows, of 64 rows
    x, w, b = (ember.randn(*s).to(dtype) for s in ((2, 40, 4096), (100, 4096), (100,)))
    rtol = RTOL[dtype] * 4
    _close(ember.nn.functional.linear(x, w, b), (x.float() @ w.float().T + b.float()).to(dtype), rtol, "linear")
    _close(x @ w.T, (x.float() @ w.float().T).to(dtype), rtol, "matmul")
    _close(ember.mm(x[0], w.T), (x[0].float() @ w.float().T).to(dtype), rtol, "mm")
    assert (x @ w.T).dtype is dtype and ember.mm(x[0], w.T).shape == (40, 100)
