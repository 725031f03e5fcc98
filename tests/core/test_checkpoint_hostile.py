"""ember.load on hostile and unusual files: one CheckpointError naming the file and the problem, bounded headers."""
import io
import json
import struct
import sys
import time

import numpy as np
import pytest
import safetensors.numpy

import ember
from ember.errors import CheckpointError
from ember.serialization import _decoder


def handmade(header: dict, buffer: bytes = b"", length: int | None = None) -> bytes:
    """A safetensors file built byte by byte from the format description (independent of ember's writer)."""
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + buffer


def with_meta(root, header=None, version=2) -> dict:
    return {**(header or {}), "__metadata__": {"ember": json.dumps({"version": version, "root": root})}}


ONE = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
FOUR = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}


def view_file(view, header=FOUR, size=16):
    return handmade(with_meta({"tensor": "a", "device": "cpu", "view": view}, header), bytes(size))


HOSTILE = {
    "dtype is a list": (handmade({"a": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
                        "unknown dtype ['F32']"),
    "dtype is a dict": (handmade({"a": {"dtype": {"F32": 1}, "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
                        "unknown dtype {'F32': 1}"),
    "dtype is a number": (handmade({"a": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}}, bytes(4)),
                          "unknown dtype 4"),
    "shape of floats": (handmade({"a": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}, bytes(4)),
                        "invalid shape"),
    "shape of bools": (handmade({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, bytes(4)),
                       "invalid shape"),
    "shape huge": (handmade({"a": {"dtype": "F32", "shape": [2 ** 70], "data_offsets": [0, 4]}}, bytes(4)),
                   "invalid shape"),
    "shape a string": (handmade({"a": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}, bytes(4)),
                       "invalid shape"),
    "offsets huge": (handmade({"a": {"dtype": "F32", "shape": [1], "data_offsets": [2 ** 70, 2 ** 70 + 4]}},
                              bytes(4)), "past the end"),
    "offsets negative": (handmade({"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}, bytes(4)),
                         "invalid data_offsets"),
    "offsets floats": (handmade({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.0, 4.0]}}, bytes(4)),
                       "invalid data_offsets"),
    "metadata a list": (handmade({**ONE, "__metadata__": []}, bytes(4)), "strings to strings"),
    "view offset huge": (view_file([2 ** 70, [1], [1]]), "invalid view"),
    "view stride huge": (view_file([0, [1], [2 ** 70]]), "invalid view"),
    "view stride overflows bytes": (view_file([0, [2], [2 ** 62]]), "invalid view"),
    "zero-stride view of 2**60 elements": (view_file([0, [2 ** 58], [0]]), "more than the 4 its storage holds"),
    "zero-stride view of 2**80 elements": (view_file([0, [2 ** 40, 2 ** 40], [0, 0]]), "more than the 4"),
    "zero-stride view of 5 elements": (view_file([0, [5], [0]]), "has 5 elements, more than the 4"),
    "empty view starting far away": (view_file([2 ** 50, [0], [1]]), "starts outside"),
    "view of bools": (view_file([0, [True], [1]]), "invalid view"),
    "non-UTF-8 header": (struct.pack("<Q", 6) + b'{"\xff":1}', "not valid JSON"),
    "header ends mid-string": (struct.pack("<Q", 5) + b'{"abc', "not valid JSON"),
    "int with 5000 digits": (handmade({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(4))
                             .replace(b"[0,4]", b"[0," + b"4" * 5000 + b"]"), "header"),
    "header length larger than the file": (handmade(ONE, bytes(4), length=1000), "larger than"),
    "truncated data": (handmade(ONE, bytes(2)), "past the end"),
    "truncated mid-header": (handmade(ONE, bytes(4))[:20], "larger than"),
    "header nested deeply": (struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000, "not a JSON object"),
    "entry nested deeply": (handmade({"a": None}).replace(b"null", b"[" * 100_000 + b"]" * 100_000)
                            .replace(struct.pack("<Q", 10), struct.pack("<Q", 200_009)), "header"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_each_malformed_file_raises_one_checkpoint_error_naming_file_and_problem(tmp_path, case):
    data, problem = HOSTILE[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as info:
        ember.load(path)
    assert str(path) in str(info.value) and problem in str(info.value), str(info.value)[:300]
    assert len(str(info.value)) < 1500  # a message, not a dump of the file


def test_a_legit_broadcast_view_is_saved_as_a_copy_and_loads_equal():
    x = ember.arange(3, dtype=ember.float32)
    buf = io.BytesIO()
    ember.save({"x": x, "wide": x.expand(1000, 3)}, buf)  # the view reaches every element 1000 times
    buf.seek(0)
    back = ember.load(buf)
    assert np.array_equal(back["wide"].numpy(), np.broadcast_to(np.arange(3, dtype=np.float32), (1000, 3)))
    assert len(buf.getvalue()) > 1000 * 3 * 4


def test_views_that_do_not_repeat_elements_still_share_memory():
    w = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    buf = io.BytesIO()
    ember.save({"w": w, "wt": w.T, "row": w[1]}, buf)
    buf.seek(0)
    back = ember.load(buf)
    back["w"].add_(1)
    assert back["wt"].tolist() == [[1, 4], [2, 5], [3, 6]] and back["row"].tolist() == [4, 5, 6]


# -- unsigned dtypes ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,code", [("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")])
def test_unsigned_safetensors_dtypes_ember_lacks_raise_a_checkpoint_error_saying_what_to_do(tmp_path, dtype, code):
    assert not hasattr(ember, dtype)  # (were ember to gain it, the file would load as that dtype)
    path = tmp_path / "u.safetensors"
    safetensors.numpy.save_file({"ok": np.arange(3, dtype=np.int32), "x": np.arange(3, dtype=dtype)}, str(path))
    with pytest.raises(CheckpointError) as info:
        ember.load(path)
    message = str(info.value)
    assert str(path) in message and f"'x' has safetensors dtype {code} ({dtype})" in message
    assert "safetensors.numpy.load_file" in message and "int64" in message
    assert ember.load(path, keys=["ok"])["ok"].tolist() == [0, 1, 2]  # the others still load


def test_unsigned_numpy_arrays_in_ember_checkpoints_still_round_trip():
    buf = io.BytesIO()
    ember.save({"a": np.arange(4, dtype=np.uint16), "b": np.uint64(2 ** 64 - 1)}, buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back["a"].dtype == np.uint16 and back["a"].tolist() == [0, 1, 2, 3] and back["b"] == 2 ** 64 - 1


# -- header size and parse time ------------------------------------------------------------------------------------
def test_the_header_limit_is_checked_before_the_header_is_read(tmp_path):
    assert ember.serialization.MAX_HEADER_BYTES == 100_000_000

    class Reads(io.BytesIO):
        asked = 0

        def read(self, n=-1):
            self.asked += n if n >= 0 else 0
            return super().read(n)

    data = handmade({f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(200)},
                    bytes(200))
    f = Reads(data)
    with pytest.raises(CheckpointError, match=r"the header is \d+ bytes, more than the limit of 1000 bytes"):
        ember.load(f, max_header_bytes=1000)
    assert f.asked <= 16  # the length and the first bytes (to recognize a foreign file), not the header
    assert len(ember.load(io.BytesIO(data), max_header_bytes=len(data))) == 200
    with pytest.raises(ValueError, match="max_header_bytes"):
        ember.load(io.BytesIO(data), max_header_bytes="big")


def test_the_default_limit_follows_the_module_constant(monkeypatch, tmp_path):
    path = tmp_path / "a.safetensors"
    ember.save({"w": ember.zeros(2)}, path)
    monkeypatch.setattr(ember.serialization, "MAX_HEADER_BYTES", 16)
    with pytest.raises(CheckpointError, match="more than the limit of 16 bytes"):
        ember.load(path)


def _colliding(n, tag):
    """ember metadata with a set (or dict) of ``n`` ints that all hash to 0 (Python's int hash is not randomized)."""
    keys = [i * (sys.hash_info.modulus) for i in range(n)]
    root = {tag: keys if tag == "set" else [[k, 0] for k in keys]}
    return handmade(with_meta(root))


@pytest.mark.parametrize("tag", ["set", "dict"])
def test_keys_flooding_one_hash_are_refused_at_once_instead_of_quadratic_time(tag):
    small = _colliding(_decoder.MAX_SAME_HASH, tag)
    assert len(ember.load(io.BytesIO(small))) == _decoder.MAX_SAME_HASH  # up to the limit, they load
    t0 = time.process_time()
    with pytest.raises(CheckpointError, match="same hash"):
        ember.load(io.BytesIO(_colliding(40_000, tag)))  # before: about 10 s of CPU, quadratic in the count
    assert time.process_time() - t0 < 5


def _header_calls(data):
    """Python function calls made while ember.load reads ``data``: a count free of timing noise."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        ember.load(io.BytesIO(data))
    finally:
        sys.setprofile(None)
    return calls


def _many_entries(n):
    header = {f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(n)}
    root = {"dict": [[f"t{i}", {"tensor": f"t{i}", "device": "cpu"}] for i in range(n)]}
    return handmade(with_meta(root, header, version=1), bytes(n))


def test_parsing_is_linear_in_the_header():
    small, big = _many_entries(2_000), _many_entries(16_000)  # 0.2 and 1.7 MB of header
    ratio = _header_calls(big) / _header_calls(small)
    assert ratio < 8 * 1.1, ratio  # 8 times the entries: 8 times the work
    t_small = min(_timed(small) for _ in range(3))
    t_big = min(_timed(big) for _ in range(3))
    assert t_big < 8 * 4 * t_small + 0.5, (t_small, t_big)  # generous: quadratic would be 64 times


def _timed(data):
    t0 = time.process_time()
    ember.load(io.BytesIO(data))
    return time.process_time() - t0
