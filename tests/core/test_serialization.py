"""ember.save / ember.load: safetensors checkpoints (round trips, layout, hostile files, subsets, atomicity)."""
import io
import json
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections import OrderedDict

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.errors import CheckpointError


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def file_keys(path):
    with safetensors.safe_open(str(path), "np") as f:
        return set(f.keys())


def handmade(header: dict, buffer: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file built byte by byte from the format description (independent of ember's writer)."""
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + buffer


# -- round trips -------------------------------------------------------------------------------------------------
def test_checkpoint_dict_round_trip(tmp_path):
    w = ember.randn(3, 4)
    obj = {"epoch": 3, "model_state_dict": {"fc.weight": w, "fc.bias": ember.zeros(4)},
           "optimizer_state_dict": {"state": {0: {"step": ember.tensor(2.0), "exp_avg": ember.ones(3, 4)}},
                                    "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
           "loss": 0.25}
    path = tmp_path / "ckpt.safetensors"
    ember.save(obj, path)
    back = ember.load(path)
    assert list(back) == list(obj)
    assert back["epoch"] == 3 and back["loss"] == 0.25
    assert np.array_equal(back["model_state_dict"]["fc.weight"].numpy(), w.numpy())
    assert list(back["optimizer_state_dict"]["state"]) == [0]  # int keys stay ints
    assert back["optimizer_state_dict"]["param_groups"][0] == {"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}
    assert ember.load(str(path))["epoch"] == 3  # str paths too


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64,
                                   ember.int32, ember.int16, ember.int8, ember.uint8, ember.bool])
@pytest.mark.parametrize("shape", [(), (0, 3), (2, 3, 4)])
def test_every_dtype_and_shape_round_trips_bit_exactly(dtype, shape):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape) * 50
    t = ember.tensor(values).to(dtype)
    back = roundtrip({"t": t})["t"]
    assert back.dtype is dtype and back.shape == t.shape
    assert back.numpy().tobytes() == t.numpy().tobytes()


def test_special_float_values_are_kept_bit_exactly():
    for dtype in (ember.float32, ember.bfloat16, ember.float16):
        t = ember.tensor([math.inf, -math.inf, math.nan, -0.0, 1e-3]).to(dtype)
        assert roundtrip(t).numpy().tobytes() == t.numpy().tobytes()


def test_plain_values_and_containers_keep_their_types():
    obj = {"int": -7, "big": 2 ** 70, "float": 1.5, "whole_float": 2.0, "inf": math.inf, "-inf": -math.inf,
           "str": "héllo ✓", "bool": True, "none": None, "tuple": (1, (2.0, "x"), []), "list": [[], {}, ()],
           "odict": OrderedDict([("b", 1), ("a", 2)]), "int_keys": {0: "a", 10: "b"},
           "odd_keys": {1.5: 1, None: 2, (1, "x"): 3, "1": 4, 1: 5},
           "dtype": ember.bfloat16, "device": ember.device("cpu", 1), "size": ember.Size([2, 3])}
    back = roundtrip(obj)
    nan = roundtrip([math.nan])[0]
    assert math.isnan(nan)
    assert back == {**obj, "size": (2, 3)}
    assert type(back["whole_float"]) is float and type(back["int"]) is int and type(back["bool"]) is bool
    assert type(back["tuple"]) is tuple and type(back["tuple"][1]) is tuple and type(back["odict"]) is OrderedDict
    assert list(back["odd_keys"]) == [1.5, None, (1, "x"), "1", 1]
    assert roundtrip(5) == 5 and roundtrip(None) is None and roundtrip([1, (2,)]) == [1, (2,)]


def test_top_level_tensor_and_list_of_tensors():
    t = ember.arange(6).reshape(2, 3)
    assert np.array_equal(roundtrip(t).numpy(), t.numpy())
    a, b = roundtrip([t, t + 1])
    assert np.array_equal(b.numpy(), t.numpy() + 1) and np.array_equal(a.numpy(), t.numpy())


def test_requires_grad_is_stored_but_grads_are_not():
    # as PyTorch: a tensor (even a non-leaf) that requires grad loads as a leaf that requires grad, without .grad
    p = ember.randn(3, requires_grad=True)
    (p * 2).sum().backward()
    back = roundtrip({"p": p, "twice": p * 2, "plain": p.detach()})
    assert back["p"].requires_grad and back["p"].grad is None and back["p"].is_leaf
    assert back["twice"].requires_grad and back["twice"].is_leaf and back["twice"].tolist() == (p * 2).tolist()
    assert not back["plain"].requires_grad
    assert np.array_equal(back["p"].detach().numpy(), p.detach().numpy())


def test_numpy_arrays_and_scalars_come_back_as_numpy():
    obj = {"a": np.arange(12, dtype=np.uint16).reshape(3, 4), "b": np.zeros((2, 0), np.float64),
           "bf": np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16), "f": np.float32(2.5), "i": np.int64(-3),
           "big_endian": np.arange(3, dtype=">i4")}
    back = roundtrip(obj)
    for k in ("a", "b", "bf"):
        assert type(back[k]) is np.ndarray and back[k].dtype == obj[k].dtype
        assert back[k].shape == obj[k].shape and back[k].tobytes() == obj[k].tobytes()
    assert type(back["f"]) is np.float32 and back["f"] == 2.5
    assert type(back["i"]) is np.int64 and back["i"] == -3
    assert back["big_endian"].tolist() == [0, 1, 2]


def test_unsupported_values_raise_type_error_naming_the_entry():
    with pytest.raises(TypeError, match=r"entry model\.thing.*lambda"):
        roundtrip({"model": {"thing": lambda x: x}})
    with pytest.raises(TypeError, match="dtype object"):
        roundtrip({"a": np.array([None])})
    with pytest.raises(TypeError, match=r"entry a\.0 of type _thread\.lock: a built-in type"):
        roundtrip({"a": [threading.Lock()]})


# -- file layout --------------------------------------------------------------------------------------------------
def test_strided_tensors_and_arrays_are_written_with_the_right_values(tmp_path):
    def base():  # a block of its own for each entry (views of one block would be stored as one span)
        return ember.arange(24, dtype=ember.float32).reshape(4, 6)

    def np_base():
        return np.arange(24, dtype=np.int64).reshape(4, 6)

    obj = {"transposed": base().T, "stepped": base()[:, ::2], "np_transposed": np_base().T,
           "np_stepped": np_base()[::-2], "bf16_t": base().to(ember.bfloat16).T}
    path = tmp_path / "strided.safetensors"
    ember.save(obj, path)
    back = ember.load(path)
    plain = safetensors.numpy.load_file(str(path))  # the file itself holds the right values
    expected = {"transposed": np.arange(24.0).reshape(4, 6).T, "stepped": np.arange(24.0).reshape(4, 6)[:, ::2],
                "np_transposed": np.arange(24).reshape(4, 6).T, "np_stepped": np.arange(24).reshape(4, 6)[::-2],
                "bf16_t": np.arange(24.0).reshape(4, 6).T}
    for k, want in expected.items():
        got = back[k] if isinstance(back[k], np.ndarray) else back[k].to(ember.float64).numpy()
        assert np.array_equal(got, want), k
        assert np.array_equal(plain[k].astype(np.float64), want), k


def test_plain_state_dict_file_is_an_ordinary_safetensors_file(tmp_path):
    sd = {"fc.weight": ember.randn(4, 3), "fc.bias": ember.randn(4), "bn.num_batches_tracked": ember.tensor(7)}
    path = tmp_path / "sd.safetensors"
    ember.save(sd, path)
    plain = safetensors.numpy.load_file(str(path))
    assert set(plain) == set(sd)
    for k, t in sd.items():
        assert plain[k].dtype == t.numpy().dtype and np.array_equal(plain[k], t.numpy())
    with open(path, "rb") as f:  # the data buffer starts 8-byte aligned, as safetensors writes it
        assert (8 + struct.unpack("<Q", f.read(8))[0]) % 8 == 0


def test_a_safetensors_file_without_ember_metadata_loads_as_a_flat_dict(tmp_path):
    path = tmp_path / "pt.safetensors"
    arrays = {"layer.0.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "flag": np.array([True, False]),
              "half": np.array([1.5], np.float16), "bf": np.array([[2.5]], ml_dtypes.bfloat16)}
    safetensors.numpy.save_file(arrays, str(path), metadata={"format": "pt"})  # what PyTorch's save_file writes
    back = ember.load(path)
    assert set(back) == set(arrays)
    assert back["bf"].dtype is ember.bfloat16 and back["half"].dtype is ember.float16
    for k, arr in arrays.items():
        assert ember.is_tensor(back[k]) and back[k].numpy().tobytes() == arr.tobytes()


def test_tensors_sharing_memory_are_saved_once_and_load_as_one_object(tmp_path):
    w = ember.randn(5, 5)
    other = ember.randn(2)
    obj = {"encoder.weight": w, "decoder.weight": w, "detached": w.detach(), "other": other,
           "nested": [w, {"x": w}], "view": w.T}
    path = tmp_path / "tied.safetensors"
    ember.save(obj, path)
    assert file_keys(path) == {"encoder.weight", "other"}  # w once, its transposed view included
    back = ember.load(path)
    e = back["encoder.weight"]
    assert back["decoder.weight"] is e and back["detached"] is e and back["nested"][0] is e
    assert back["nested"][1]["x"] is e
    assert np.array_equal(back["view"].numpy(), w.numpy().T) and np.array_equal(e.numpy(), w.numpy())
    assert np.shares_memory(back["view"].numpy(), e.numpy())
    a = np.ones(3)
    back = roundtrip({"a": a, "b": a})
    assert back["a"] is back["b"]


def test_views_of_one_block_are_stored_once_as_its_span(tmp_path):
    base = ember.arange(40, dtype=ember.float32).reshape(4, 10)
    first, second = base[1:3].chunk(2, dim=1)  # the block's rows 1-2 only
    arr = np.arange(30, dtype=np.int16).reshape(5, 6)
    bf_all = base.to(ember.bfloat16)
    obj = {"first": first, "second": second, "col": base[1:3, 4], "np": arr[::-2, 1], "np_t": arr.T,
           "bf": bf_all[2, ::3], "bf_all": bf_all}
    path = tmp_path / "views.safetensors"
    ember.save(obj, path)
    with safetensors.safe_open(str(path), "np") as f:
        assert set(f.keys()) == {"first", "np", "bf"}
        assert f.get_tensor("first").shape == (20,)  # elements 10..29 (rows 1-2) of the block, nothing more
    back = ember.load(path)
    reference = np.arange(40, dtype=np.float32).reshape(4, 10)
    np_ref = np.arange(30, dtype=np.int16).reshape(5, 6)
    assert np.array_equal(back["first"].numpy(), reference[1:3, :5])
    assert np.array_equal(back["second"].numpy(), reference[1:3, 5:])
    assert np.array_equal(back["col"].numpy(), reference[1:3, 4])
    assert np.array_equal(back["np"], np_ref[::-2, 1]) and np.array_equal(back["np_t"], np_ref.T)
    assert np.array_equal(back["bf"].to(ember.float32).numpy(), reference[2, ::3])
    assert np.array_equal(back["bf_all"].to(ember.float32).numpy(), reference)
    back["first"].numpy()[0, 4] = -1.0  # the views share memory again
    assert back["col"].numpy()[0] == -1.0


def test_views_with_another_dtype_or_far_apart_are_stored_separately(tmp_path):
    a = np.arange(4, dtype=np.float32)
    back = roundtrip({"a": a, "bits": a.view(np.int32)})
    assert np.array_equal(back["a"], a) and np.array_equal(back["bits"], a.view(np.int32))
    big = ember.arange(10_000.0).reshape(100, 100)
    ember.save({"head": big[0], "tail": big[-1]}, tmp_path / "rows.safetensors")  # not the 98 rows between
    assert file_keys(tmp_path / "rows.safetensors") == {"head", "tail"}
    assert os.path.getsize(tmp_path / "rows.safetensors") < 4000


def test_colliding_flat_names_are_kept_apart(tmp_path):
    obj = {"a.b": ember.zeros(1), "a": {"b": ember.ones(1)}, 0: ember.full((1,), 2.0), "0": ember.full((1,), 3.0),
           "__metadata__": ember.full((1,), 4.0)}
    back = roundtrip(obj)
    got = [back["a.b"].item(), back["a"]["b"].item(), back[0].item(), back["0"].item(), back["__metadata__"].item()]
    assert got == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_rng_state_round_trips():
    ember.manual_seed(123)
    ember.rand(3)
    state = roundtrip({"rng_state": ember.get_rng_state()})["rng_state"]
    expected = ember.rand(4)
    ember.manual_seed(9)
    ember.set_rng_state(state)
    assert np.array_equal(ember.rand(4).numpy(), expected.numpy())
    assert ember.initial_seed() == 123


# -- hostile and broken files ----------------------------------------------------------------------------------------
GOOD_HEADER = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
GOOD_BUFFER = struct.pack("<2f", 1.0, 2.0)


def test_the_handmade_reference_file_loads():
    assert ember.load(io.BytesIO(handmade(GOOD_HEADER, GOOD_BUFFER)))["w"].tolist() == [1.0, 2.0]


def _meta(root, version=1):
    return {"__metadata__": {"ember": json.dumps({"version": version, "root": root})}}


HOSTILE = {
    "empty file": (b"", "truncated"),
    "truncated length": (b"\x10\x00\x00", "truncated"),
    "header length larger than the file": (handmade(GOOD_HEADER, GOOD_BUFFER, length=10 ** 6), "larger than"),
    "huge header length": (handmade(GOOD_HEADER, GOOD_BUFFER, length=2 ** 63), "larger than"),
    "truncated data": (handmade(GOOD_HEADER, GOOD_BUFFER[:5]), "past the end"),
    "invalid JSON": (struct.pack("<Q", 10) + b"{not json}", "not valid JSON"),
    "JSON list": (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    "duplicate names": (struct.pack("<Q", 16) + b'{"a": 1, "a": 2}', "duplicate"),
    "unknown dtype": (handmade({"w": {"dtype": "F128", "shape": [2], "data_offsets": [0, 8]}}, GOOD_BUFFER),
                      "unknown dtype 'F128'"),
    "shape does not match bytes": (handmade({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},
                                            GOOD_BUFFER), "needs 12 bytes"),
    "negative dim": (handmade({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, GOOD_BUFFER),
                     "invalid shape"),
    "absurd dims": (handmade({"w": {"dtype": "F32", "shape": [0, 2 ** 70], "data_offsets": [0, 0]}}),
                    "invalid shape"),
    "huge dims with a zero": (handmade({"w": {"dtype": "F32", "shape": [0, 2 ** 61, 2 ** 61],
                                              "data_offsets": [0, 0]}}), "too large"),
    "offsets out of range": (handmade({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}},
                                      GOOD_BUFFER), "past the end"),
    "reversed offsets": (handmade({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, GOOD_BUFFER),
                         "invalid data_offsets"),
    "overlapping tensors": (handmade({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                      "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, GOOD_BUFFER),
                            "overlaps"),
    "gap between tensors": (handmade({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, GOOD_BUFFER),
                            "gap"),
    "bytes no tensor owns": (handmade(GOOD_HEADER, GOOD_BUFFER + b"junk"), "no tensor owns"),
    "extra field": (handmade({"w": {**GOOD_HEADER["w"], "exec": "rm -rf"}}, GOOD_BUFFER), "exactly"),
    "bad bool bytes": (handmade({"w": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x00\x07"),
                       "bool data"),
    "metadata not str to str": (handmade({**GOOD_HEADER, "__metadata__": {"ember": 5}}, GOOD_BUFFER),
                                "strings to strings"),
    "metadata JSON invalid": (handmade({**GOOD_HEADER, "__metadata__": {"ember": "{oops"}}, GOOD_BUFFER),
                              "metadata is not valid JSON"),
    "metadata names a missing tensor": (handmade({**GOOD_HEADER, **_meta({"list": [{"tensor": "w"},
                                                                                  {"tensor": "nope"}]})},
                                                 GOOD_BUFFER),
                                        "does not hold"),
    "metadata misses a tensor": (handmade({**GOOD_HEADER, **_meta({"list": []})}, GOOD_BUFFER),
                                 "not in the metadata"),
    "metadata node unknown": (handmade({**GOOD_HEADER, **_meta({"list": [{"tensor": "w"}, {"eval": "x"}]})},
                                       GOOD_BUFFER), "unexpected node"),
    "view outside its tensor": (handmade({**GOOD_HEADER, **_meta({"tensor": "w", "view": [1, [2], [1]]})},
                                         GOOD_BUFFER), "reaches outside"),
    "view going backwards": (handmade({**GOOD_HEADER, **_meta({"tensor": "w", "view": [0, [2], [-1]]})},
                                      GOOD_BUFFER), "reaches outside"),
    "view malformed": (handmade({**GOOD_HEADER, **_meta({"tensor": "w", "view": [0, [2], "x"]})}, GOOD_BUFFER),
                       "invalid view"),
    "metadata too deep": (handmade({**GOOD_HEADER, "__metadata__": {
        "ember": '{"version": 1, "root": ' + '{"list": [' * 50000 + "]}" * 50000 + "}"}}, GOOD_BUFFER), "metadata"),
    "metadata from the future": (handmade({**GOOD_HEADER, **_meta({"tensor": "w"}, version=99)}, GOOD_BUFFER),
                                 "version 99"),
    "zip PyTorch file": (b"PK\x03\x04" + b"\x00" * 60, "looks like a PyTorch pickle file"),
    "legacy PyTorch pickle": (b"\x80\x02\x8a\x0alZ\xfc\x9cF\xf9 j\xa8P\x19.", "looks like a PyTorch pickle file"),
    "npy file": (b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'}", "NumPy .npy"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_raise_a_checkpoint_error_naming_path_and_problem(tmp_path, case):
    data, problem = HOSTILE[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as info:
        ember.load(path)
    assert str(path) in str(info.value) and problem in str(info.value)
    assert isinstance(info.value, ember.EmberError)
    with pytest.raises(CheckpointError, match="BytesIO"):  # file objects are named by their type
        ember.load(io.BytesIO(data))


def test_pickle_message_tells_what_to_do(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(HOSTILE["zip PyTorch file"][0])
    with pytest.raises(CheckpointError, match="ember never loads pickles — save it with safetensors"):
        ember.load(path)


def test_a_directory_or_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="directory"):
        ember.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.safetensors")


def _valid_file() -> bytes:
    buf = io.BytesIO()
    ember.save({"epoch": 2, "sd": {"w": ember.arange(4, dtype=ember.float32), "b": ember.tensor([True, False])},
                "opt": {"state": {0: {"step": 3.0}}, "groups": [(0.1, None)]}}, buf)
    return buf.getvalue()


VALID = _valid_file()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(1, len(VALID)))
def test_fuzz_corrupted_files_load_or_raise_checkpoint_error(corruptions, cut):
    data = bytearray(VALID)
    for pos, value in corruptions:
        data[pos] = value
    for candidate in (bytes(data), bytes(data[:cut])):
        try:
            ember.load(io.BytesIO(candidate))
        except CheckpointError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.integers(8, len(VALID) - 1), st.sampled_from(list(b'{}[]",:0123456789-eE.tnfu\\ ')))
def test_fuzz_header_punctuation(pos, value):
    data = bytearray(VALID)
    data[pos] = value
    try:
        ember.load(io.BytesIO(bytes(data)))
    except CheckpointError:
        pass


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
                    | st.sampled_from(["tensor", "list", "dict", "odict", "tuple", "float", "dtype", "device", "w",
                                       "nan", "float32", "npscalar", "ndarray"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["tensor", "list", "dict", "odict", "tuple", "float", "dtype", "device",
                                         "ndarray", "npscalar", "view", "x"]), inner, max_size=3),
                    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(JSON, st.one_of(st.none(), st.lists(st.text(max_size=4), max_size=2)))
def test_fuzz_random_metadata_loads_or_raises_checkpoint_error(root, keys):
    data = handmade({**GOOD_HEADER, **_meta(root)}, GOOD_BUFFER)
    try:
        ember.load(io.BytesIO(data), keys=keys)
    except (CheckpointError, KeyError):
        pass


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=3), JSON, max_size=3))
def test_fuzz_random_header_entries(header):
    try:
        ember.load(io.BytesIO(handmade(header, GOOD_BUFFER)))
    except CheckpointError:
        pass


# -- subsets, devices, file objects -----------------------------------------------------------------------------------
class CountingBytesIO(io.BytesIO):
    """Counts the bytes read, to show which tensors were never touched."""

    bytes_read = 0

    def read(self, n=-1):
        out = super().read(n)
        self.bytes_read += len(out)
        return out

    def readinto(self, b):
        n = super().readinto(b)
        self.bytes_read += n
        return n


def test_keys_loads_a_subset_without_reading_the_rest():
    big = ember.zeros(250_000)  # 1 MB
    buf = CountingBytesIO()
    ember.save({"epoch": 4, "model": {"fc.weight": ember.ones(2, 2), "fc.bias": ember.ones(2)},
                "optimizer": {"state": {0: {"exp_avg": big}}}, "history": [1, 2]}, buf)
    buf.seek(0)
    back = ember.load(buf, keys=["epoch", "model.fc.weight", "history"])
    assert back == {"epoch": 4, "model": {"fc.weight": back["model"]["fc.weight"]}, "history": [1, 2]}
    assert back["model"]["fc.weight"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert buf.bytes_read < 10_000
    buf.seek(0)
    assert list(ember.load(buf, keys="model")["model"]) == ["fc.weight", "fc.bias"]
    buf.seek(0)
    assert ember.load(buf, keys=["optimizer.state.0"])["optimizer"]["state"][0]["exp_avg"].shape == (250_000,)
    buf.seek(0)
    with pytest.raises(KeyError, match="'model.conv'"):
        ember.load(buf, keys=["model.conv"])


def test_keys_on_a_plain_safetensors_file(tmp_path):
    path = tmp_path / "plain.safetensors"
    safetensors.numpy.save_file({"a.weight": np.ones(2, np.float32), "b.weight": np.zeros(3, np.float32)}, str(path))
    assert list(ember.load(path, keys=["b.weight"])) == ["b.weight"]
    assert list(ember.load(path, keys=["a"])) == ["a.weight"]  # a module prefix takes its parameters


def test_map_location_places_tensors(two_cpus):
    t = ember.arange(3.0)
    assert roundtrip({"t": t}, map_location="cpu:1")["t"].device == ember.device("cpu", 1)
    assert roundtrip({"t": t}, map_location=ember.device("cpu:1"))["t"].device == ember.device("cpu", 1)
    assert roundtrip({"t": t})["t"].device == ember.device("cpu")
    on_1 = t.to("cpu:1")
    assert roundtrip(on_1).device == ember.device("cpu")  # default: the CPU, whatever the saved device
    assert roundtrip([on_1, t], map_location={"cpu:1": "cpu:1"})[0].device == ember.device("cpu", 1)
    seen = []
    back = roundtrip({"a": on_1}, map_location=lambda tensor, saved: seen.append(saved) or tensor * 2)
    assert seen == ["cpu:1"] and back["a"].tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="map_location"):
        roundtrip(t, map_location=3)


def test_map_location_to_another_backend():
    if "strict" not in ember.list_backends():
        pytest.fail("the strict example backend is not installed")
    t = ember.arange(3.0, device="strict")
    back = roundtrip({"t": t, "again": t}, map_location="strict")
    assert back["t"].device.type == "strict" and back["t"].tolist() == [0.0, 1.0, 2.0]
    assert back["again"] is back["t"]
    assert roundtrip(t).device.type == "cpu"


def test_file_objects_at_an_offset_and_weights_only():
    buf = io.BytesIO(b"prefix")
    buf.seek(0, io.SEEK_END)
    ember.save({"x": ember.ones(2)}, buf)
    buf.seek(6)
    assert ember.load(buf)["x"].tolist() == [1.0, 1.0]
    buf.seek(6)
    assert ember.load(buf, weights_only=False)["x"].tolist() == [1.0, 1.0]  # accepted, changes nothing
    with pytest.raises(TypeError, match="path or a binary file object"):
        ember.load(3)
    with pytest.raises(TypeError, match="binary mode"):
        ember.load(io.StringIO("text"))


# -- atomic writes ----------------------------------------------------------------------------------------------------
def test_a_failed_save_leaves_the_old_file_and_no_temporary_files(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    ember.save({"v": 1}, path)
    with pytest.raises(TypeError):
        ember.save({"v": 2, "bad": object()}, path)
    assert ember.load(path) == {"v": 1}
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


WRITER = textwrap.dedent("""
    import sys, ember
    path = sys.argv[1]
    i = 0
    while True:
        ember.save({"version": i, "data": ember.full((1_000_000,), float(i))}, path)
        print(i, flush=True)
        i += 1
""")


@pytest.mark.slow
def test_a_writer_killed_mid_save_leaves_a_complete_checkpoint(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    for delay in (0.05, 0.17):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline()  # one complete version exists
            assert first.strip() == "0" or path.exists()
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        back = ember.load(path)
        assert back["data"].shape == (1_000_000,)
        assert np.all(back["data"].numpy() == back["version"])
