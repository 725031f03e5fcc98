"""dtypes: PyTorch's type promotion (not NumPy's), bfloat16, dtype inference, NumPy interop, finfo/iinfo."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
D = {n: getattr(ember, n) for n in NAMES}

# PyTorch's promote_types table, row i / column j = promote_types(NAMES[i], NAMES[j]); checked by hand against
# torch 2.13. It differs from NumPy: uint8+int8 -> int16 alike, but int64+float16 -> float16 (NumPy: float64)
# and float16+bfloat16 -> float32 (NumPy has no bfloat16).
PROMOTE_TABLE = """
bool     uint8    int8     int16    int32    int64    float16  bfloat16 float32  float64
uint8    uint8    int16    int16    int32    int64    float16  bfloat16 float32  float64
int8     int16    int8     int16    int32    int64    float16  bfloat16 float32  float64
int16    int16    int16    int16    int32    int64    float16  bfloat16 float32  float64
int32    int32    int32    int32    int32    int64    float16  bfloat16 float32  float64
int64    int64    int64    int64    int64    int64    float16  bfloat16 float32  float64
float16  float16  float16  float16  float16  float16  float16  float32  float32  float64
bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 float32  bfloat16 float32  float64
float32  float32  float32  float32  float32  float32  float32  float32  float32  float64
float64  float64  float64  float64  float64  float64  float64  float64  float64  float64
"""
TABLE = {(NAMES[i], NAMES[j]): cell
         for i, row in enumerate(PROMOTE_TABLE.split("\n")[1:-1]) for j, cell in enumerate(row.split())}


def _category(name):
    return 0 if name == "bool" else (2 if name.startswith(("float", "bfloat")) else 1)


def expected_result(operands):
    """Reference rule (verified by hand on all pairs in torch): tensors with dims, then zero-dim tensors, then
    Python scalars; each later group only counts when its category (bool < int < float) is strictly higher."""
    groups = {"dim": [], "zero": [], "scalar": []}
    for kind, name in operands:
        groups[kind].append(name)
    result = None
    for kind in ("dim", "zero", "scalar"):
        if not groups[kind]:
            continue
        g = groups[kind][0]
        for name in groups[kind][1:]:
            g = TABLE[g, name]
        if result is None:
            result = g
        elif _category(g) > _category(result):
            result = TABLE[result, g]
    return result


SCALARS = {"bool": True, "int64": 1, "float32": 2.5}  # a Python value and the dtype it stands for alone


def make_operand(kind, name):
    if kind == "scalar":
        return SCALARS[name]
    shape = (2,) if kind == "dim" else ()
    return ember.ones(shape, dtype=D[name])


# -- the table -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_promote_types_table(a, b):
    assert ember.promote_types(D[a], D[b]) is D[TABLE[a, b]]


def test_table_is_symmetric():
    assert all(TABLE[a, b] == TABLE[b, a] for a in NAMES for b in NAMES)


@pytest.mark.parametrize("operands, want", [
    ([("dim", "int32"), ("scalar", "float32")], "float32"),        # int32 + 2.5
    ([("dim", "uint8"), ("dim", "int8")], "int16"),
    ([("dim", "float16"), ("dim", "bfloat16")], "float32"),
    ([("zero", "int64"), ("dim", "float16")], "float16"),          # a 0-dim of lower category does not win
    ([("zero", "bool"), ("scalar", "int64")], "int64"),            # bool + 1
    ([("dim", "bool"), ("scalar", "int64")], "int64"),
    ([("dim", "int8"), ("zero", "int64")], "int8"),                # same category: the dim tensor wins
    ([("dim", "int8"), ("zero", "float64")], "float64"),           # higher category: promote with it
    ([("dim", "float16"), ("zero", "float64")], "float16"),
    ([("dim", "uint8"), ("scalar", "bool")], "uint8"),
    ([("dim", "bool"), ("scalar", "bool")], "bool"),
    ([("dim", "bool"), ("scalar", "float32")], "float32"),
    ([("zero", "int32"), ("zero", "int64")], "int64"),
    ([("zero", "int32"), ("scalar", "float32")], "float32"),
    ([("zero", "float16"), ("zero", "float64")], "float64"),
    ([("zero", "bool"), ("dim", "uint8")], "uint8"),
    ([("zero", "float64"), ("dim", "int32")], "float64"),
    ([("dim", "int16"), ("scalar", "float32"), ("zero", "float64")], "float64"),
])
def test_result_type_with_scalars_and_zero_dim(operands, want):
    assert expected_result(operands) == want  # the reference rule agrees with the hand-checked value
    values = [make_operand(k, n) for k, n in operands]
    assert ember.result_type(*values) is D[want]


@pytest.mark.parametrize("operands, want", [
    ([("dim", "int32"), ("scalar", "float32")], "float32"),
    ([("dim", "uint8"), ("dim", "int8")], "int16"),
    ([("dim", "float16"), ("dim", "bfloat16")], "float32"),
    ([("zero", "int64"), ("dim", "float16")], "float16"),
    ([("zero", "bool"), ("scalar", "int64")], "int64"),
    ([("dim", "int8"), ("zero", "float64")], "float64"),
])
def test_binary_ops_follow_promotion(operands, want):
    a, b = (make_operand(k, n) for k, n in operands)
    assert (a + b).dtype is D[want]
    assert (a * b).dtype is D[want]
    assert (b + a).dtype is D[want]


def test_default_dtype_governs_python_floats():
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.ones(2, dtype=ember.int32) + 2.5).dtype is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="floating-point"):
        ember.set_default_dtype(ember.int64)


kind_and_dtype = st.one_of(
    st.tuples(st.sampled_from(["dim", "zero"]), st.sampled_from(NAMES)),
    st.tuples(st.just("scalar"), st.sampled_from(sorted(SCALARS))),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(kind_and_dtype, min_size=1, max_size=4).filter(lambda ops: any(k != "scalar" for k, _ in ops)))
def test_result_type_matches_reference_rule(operands):
    values = [make_operand(k, n) for k, n in operands]
    assert ember.result_type(*values) is D[expected_result(operands)]


@settings(max_examples=150, deadline=None)
@given(kind_and_dtype, kind_and_dtype)
def test_add_result_dtype_matches_reference_rule(a, b):
    if a[0] == b[0] == "scalar":
        return
    out = make_operand(*a) + make_operand(*b)
    assert out.dtype is D[expected_result([a, b])]


# -- dtype objects ---------------------------------------------------------------------------------------------

def test_dtype_objects_and_aliases():
    assert repr(ember.float32) == "ember.float32"
    assert ember.float is ember.float32 and ember.double is ember.float64 and ember.half is ember.float16
    assert ember.long is ember.int64 and ember.int is ember.int32 and ember.short is ember.int16
    assert ember.bool.is_floating_point is False and ember.bfloat16.is_floating_point
    assert ember.float32.itemsize == 4 and ember.bfloat16.itemsize == 2
    assert not ember.float32.is_complex


# -- bfloat16 --------------------------------------------------------------------------------------------------

def test_bfloat16_uses_ml_dtypes():
    t = ember.tensor([1.5, -2.0], dtype=ember.bfloat16)
    assert t.numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    assert t.dtype is ember.bfloat16 and t.element_size() == 2
    assert t.tolist() == [1.5, -2.0]
    assert repr(t) == "tensor([ 1.5000, -2.0000], dtype=ember.bfloat16)"
    assert (t + t).dtype is ember.bfloat16 and (t + t).tolist() == [3.0, -4.0]
    assert ember.from_numpy(np.ones(2, dtype=ml_dtypes.bfloat16)).dtype is ember.bfloat16


def test_bfloat16_rounds_like_bfloat16():
    t = ember.tensor([1.0 + 2 ** -9], dtype=ember.bfloat16)  # below bfloat16's resolution
    assert t.item() == 1.0
    assert t.to(ember.float32).dtype is ember.float32


# -- ember.tensor and ember.Tensor -------------------------------------------------------------------------------

@pytest.mark.parametrize("data, want", [
    ([1, 2], ember.int64),
    (3, ember.int64),
    ([1.0, 2.0], ember.float32),
    (2.5, ember.float32),
    ([1, 2.5], ember.float32),
    ([True, False], ember.bool),
    ([True, 1], ember.int64),
    ([], ember.float32),
    (np.array([1.0, 2.0]), ember.float64),
    (np.float64(2.0), ember.float64),
    (np.array([1, 2], dtype=np.int32), ember.int32),
    (np.array([1, 2], dtype=np.uint8), ember.uint8),
    (np.array([1.0], dtype=np.float16), ember.float16),
])
def test_tensor_infers_dtype(data, want):
    assert ember.tensor(data).dtype is want


@pytest.mark.parametrize("data", [[2**63], 2**64 - 1, [[2**63, 2**63 + 1]]])
def test_tensor_refuses_python_ints_past_int64(data):
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        ember.tensor(data)
    assert ember.tensor([2**63 - 1]).item() == 2**63 - 1


def test_tensor_copies_its_data():
    a = np.array([1.0, 2.0])
    t = ember.tensor(a)
    a[0] = 100.0
    assert t.tolist() == [1.0, 2.0]
    u = ember.tensor(t)
    assert u.data_ptr() != t.data_ptr()


def test_tensor_explicit_dtype_and_nested_lists():
    t = ember.tensor([[1, 2], [3, 4]], dtype=ember.float64)
    assert t.dtype is ember.float64 and t.shape == (2, 2)
    with pytest.raises(ValueError, match="equal lengths"):
        ember.tensor([[1, 2], [3]])


def test_legacy_Tensor_constructor_is_float32():
    t = ember.Tensor([1, 2])
    assert t.dtype is ember.float32 and t.tolist() == [1.0, 2.0]
    u = ember.Tensor(2, 3)
    assert u.dtype is ember.float32 and u.shape == ember.Size([2, 3])
    assert ember.Tensor().shape == (0,)
    assert ember.Tensor(ember.Size([4])).shape == (4,)
    assert isinstance(t, ember.Tensor) and ember.is_tensor(u)


def test_legacy_Tensor_copies_numpy_data():
    a = np.array([1, 2], dtype=np.int64)
    t = ember.Tensor(a)
    a[0] = 9
    assert t.tolist() == [1.0, 2.0]


# -- NumPy interop -----------------------------------------------------------------------------------------------

def test_from_numpy_shares_memory_both_ways():
    a = np.zeros(3)
    t = ember.from_numpy(a)
    assert t.dtype is ember.float64
    a[0] = 5.0
    assert t.tolist() == [5.0, 0.0, 0.0]
    t.numpy()[1] = 7.0
    assert a[1] == 7.0


def test_numpy_shares_memory_with_the_tensor():
    t = ember.ones(3)
    n = t.numpy()
    n[2] = 4.0
    assert t.tolist() == [1.0, 1.0, 4.0]
    t.add_(1)
    assert n.tolist() == [2.0, 2.0, 5.0]


def test_from_numpy_errors():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex128"):
        ember.from_numpy(np.ones(2, dtype=np.complex128))


def test_numpy_of_tensor_that_requires_grad_errors():
    t = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad. "
                                           r"Use tensor.detach\(\).numpy\(\) instead."):
        t.numpy()
    assert t.detach().numpy().tolist() == [1.0, 1.0]


def test_numpy_of_non_cpu_tensor_errors(device):
    t = ember.ones(2, device=device)
    if device == "cpu":
        assert t.numpy().tolist() == [1.0, 1.0]
    else:
        with pytest.raises(TypeError, match=r"Use Tensor.cpu\(\) to copy the tensor to host memory first"):
            t.numpy()
        assert t.cpu().numpy().tolist() == [1.0, 1.0]


# -- finfo / iinfo -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bits, eps, big, tiny, resolution", [
    ("float16", 16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    ("bfloat16", 16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
    ("float32", 32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
    ("float64", 64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
])
def test_finfo(name, bits, eps, big, tiny, resolution):
    fi = ember.finfo(D[name])
    assert (fi.bits, fi.eps, fi.max, fi.min, fi.tiny, fi.smallest_normal) == (bits, eps, big, -big, tiny, tiny)
    assert fi.resolution == pytest.approx(resolution)
    assert fi.dtype is D[name]


def test_finfo_default_is_default_dtype():
    assert ember.finfo().eps == ember.finfo(ember.float32).eps


@pytest.mark.parametrize("name, bits, lo, hi", [
    ("uint8", 8, 0, 255), ("int8", 8, -128, 127), ("int16", 16, -32768, 32767),
    ("int32", 32, -2147483648, 2147483647), ("int64", 64, -9223372036854775808, 9223372036854775807),
])
def test_iinfo(name, bits, lo, hi):
    ii = ember.iinfo(D[name])
    assert (ii.bits, ii.min, ii.max) == (bits, lo, hi)


def test_finfo_iinfo_reject_the_wrong_kind():
    with pytest.raises(TypeError, match="floating point"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match="integer"):
        ember.iinfo(ember.float32)


@pytest.mark.parametrize("name, dtype", [
    ("FloatTensor", ember.float32), ("DoubleTensor", ember.float64), ("HalfTensor", ember.float16),
    ("BFloat16Tensor", ember.bfloat16), ("ByteTensor", ember.uint8), ("CharTensor", ember.int8),
    ("ShortTensor", ember.int16), ("IntTensor", ember.int32), ("LongTensor", ember.int64),
    ("BoolTensor", ember.bool),
])
def test_legacy_typed_constructors(name, dtype):
    cls = getattr(ember, name)
    t = cls([0, 1])
    assert t.dtype is dtype and type(t) is ember.Tensor and t.tolist() in ([0, 1], [0.0, 1.0], [False, True])
    other = ember.int64 if dtype is ember.float64 else ember.float64
    assert isinstance(t, cls) and not isinstance(ember.ones(1, dtype=other), cls)
    u = cls(2, 3)
    assert u.shape == (2, 3) and u.dtype is dtype


def test_ml_dtypes_is_imported_only_when_bfloat16_is_first_used():
    import subprocess
    import sys
    code = ("import sys, ember; before = 'ml_dtypes' in sys.modules; "
            "x = ember.ones(2, dtype=ember.bfloat16) * 2; "
            "print(before, 'ml_dtypes' in sys.modules, x.dtype, x.tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "ember.bfloat16", "[2.0,", "2.0]"]
