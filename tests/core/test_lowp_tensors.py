"""float16 and bfloat16 tensors: conversions with PyTorch's semantics, saving and loading them bit for bit, and
printing as PyTorch prints them (all checked by hand against PyTorch 2.13)."""
import ml_dtypes
import numpy as np
import pytest

import ember
from ember.autograd.function import Op
from ember.backends import reduced_casts

#: NaNs with payloads and both signs, infinities, subnormals (smallest, largest, negative), the largest finite
#: number, signed zeros and one
BITS = np.array([0x7E01, 0xFE55, 0x7FFF, 0x7C00, 0xFC00, 0x0001, 0x03FF, 0x8001, 0x7BFF, 0x0000, 0x8000, 0x3C00,
                 0x7F80, 0xFF80, 0x7FC1, 0x0040], dtype=np.uint16)
NATIVE = {ember.float16: np.float16, ember.bfloat16: ml_dtypes.bfloat16}


@pytest.mark.parametrize("native", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_fast_casts_give_numpys_bits(native):
    every = np.arange(1 << 16, dtype=np.uint16).view(native)  # every float16/bfloat16 value, NaN payloads too
    assert np.array_equal(reduced_casts.widen(every).view(np.uint32), every.astype(np.float32).view(np.uint32))
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    near = rng.integers(0x33000000, 0x47800000, 1 << 18, dtype=np.uint64).astype(np.uint32)  # float16's range
    x = np.concatenate([bits, near, near | 0x80000000, [0x7F800000, 0xFF800000, 0x477FF000, 0x477FEFFF]]).view(
        np.float32)
    with np.errstate(all="ignore"):
        got, want = reduced_casts.narrow(x, np.dtype(native)), x.astype(native)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))  # NaN included: a quiet NaN of its sign
    # rounding in the input's own memory gives the same bits, but a NaN becomes the quiet NaN of its sign
    in_place = reduced_casts.narrow(x.copy(), np.dtype(native), scratch=True).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(in_place[~nan], want.view(np.uint16)[~nan])
    quiet = 0x7E00 if native is np.float16 else 0x7FC0
    assert np.array_equal(in_place[nan], (x[nan].view(np.uint32) >> 16).astype(np.uint16) & 0x8000 | quiet)
    small = np.array([1.0, 2.5], np.float32)  # below MIN_SIZE: NumPy's own cast
    assert reduced_casts.narrow(small, np.dtype(native)).tolist() == [1.0, 2.5]


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_save_and_load_keep_every_bit(tmp_path, dtype):
    t = ember.from_numpy(BITS.view(NATIVE[dtype]).copy())
    path = tmp_path / "lowp.safetensors"
    ember.save({"t": t, "nested": {"strided": t[1::3], "matrix": t.reshape(4, 4).T}}, path)
    back = ember.load(path)
    assert back["t"].dtype is dtype and back["nested"]["matrix"].dtype is dtype
    assert np.array_equal(back["t"].numpy().view(np.uint16), BITS)
    assert np.array_equal(back["nested"]["strided"].numpy().view(np.uint16), BITS[1::3])
    assert np.array_equal(back["nested"]["matrix"].numpy().view(np.uint16), BITS.reshape(4, 4).T)


def test_conversions_follow_pytorch():
    x = ember.tensor([1.0, 2.5], requires_grad=True)
    h = x.half()
    assert h.dtype is ember.float16 and h.requires_grad and h.grad_fn.name() == "ToCopyBackward0"
    h.float().sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [1.0, 1.0]
    b = x.detach().bfloat16()
    assert b.dtype is ember.bfloat16 and b.float().dtype is ember.float32 and b.double().dtype is ember.float64
    assert b.bfloat16() is b and b.to(ember.bfloat16) is b  # already that dtype: the same tensor
    assert ember.tensor([1, 2]).half().dtype is ember.float16 and ember.tensor([1, 2]).to(ember.bfloat16).tolist() \
        == [1.0, 2.0]
    assert ember.tensor([70000.0]).half().tolist() == [float("inf")]  # past float16's largest, as PyTorch
    assert ember.tensor([1.0 + 2 ** -9]).bfloat16().item() == 1.0  # rounded to nearest even
    assert ember.tensor([3.14159]).bfloat16().half().item() == 3.140625  # through bfloat16's rounding


@pytest.mark.parametrize("dtype, made, printed", [
    (ember.float16, [1.0, 2.0], "tensor([1., 2.], dtype=ember.float16)"),
    (ember.float16, [1.5e-3, 65504.0, float("inf"), float("nan")],
     "tensor([1.5001e-03, 6.5504e+04,        inf,        nan], dtype=ember.float16)"),
    (ember.bfloat16, [1.5e-3, 65504.0, float("inf"), float("nan")],
     "tensor([1.5030e-03, 6.5536e+04,        inf,        nan], dtype=ember.bfloat16)"),
    (ember.bfloat16, [[1e-5, 1e4]], "tensor([[1.0014e-05, 9.9840e+03]], dtype=ember.bfloat16)"),
    (ember.bfloat16, 3.25, "tensor(3.2500, dtype=ember.bfloat16)"),
    (ember.float16, [], "tensor([], dtype=ember.float16)"),
], ids=lambda v: str(v)[:20])
def test_printing_matches_pytorch(dtype, made, printed):
    assert repr(ember.tensor(made, dtype=dtype)) == printed


def test_a_result_the_kernel_still_holds_is_not_rounded_in_place():
    kept = []

    class Keep(Op):  # a forward that keeps its float32 result: run_reduced_float must not round it in place
        name_ = "tests.lowp_keep"

        @staticmethod
        def forward(ctx, xp, a):
            out = a * 2
            kept.append(out)
            return out

    x = ember.linspace(0, 1, 5000).bfloat16()
    y = Keep.apply(x)
    assert y.dtype is ember.bfloat16 and kept[0].dtype == np.float32
    assert np.array_equal(kept[0], x.float().numpy() * 2)  # still the float32 values
