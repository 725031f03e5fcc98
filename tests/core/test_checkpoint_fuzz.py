"""A bounded fuzzer over valid checkpoints: the only outcomes are a correct load or one CheckpointError.

The corpus holds a tensor of every ember dtype, NumPy arrays of every safetensors dtype, and ember's metadata
(views sharing memory, objects, shared references, sets, Size, defaultdict, non-finite floats). Each file is
mutated with a fixed seed: bytes flipped, cut, inserted and removed, the header length rewritten, numbers
swapped for hostile ones, and nodes of the header's and the metadata's JSON replaced. A load that succeeds must
make no tensor holding more bytes than the file (the memory bound) and, for an unchanged file, give back what
was saved. Time and memory stay bounded: no load may take a second of CPU, nor the run raise the peak memory by
more than a few hundred MB. Run with ``-s`` to see the counts by outcome.
"""
import io
import json
import math
import random
import resource
import struct
import time
from collections import Counter, OrderedDict, defaultdict

import numpy as np
import safetensors.numpy
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.errors import CheckpointError
from ember.serialization import _format

SEED = 19
BYTE_MUTATIONS = 20000
TREE_MUTATIONS = 20000
MAX_LOAD_SECONDS = 1.0
MAX_RSS_GROWTH_MB = 300

HOSTILE_NUMBERS = [0, 1, -1, 2, 3, 7, 8, 2 ** 31, 2 ** 32 + 4, 2 ** 58, 2 ** 62, 2 ** 63, 2 ** 64 + 1, 10 ** 30,
                   -(2 ** 63), 1.5, 1e308]
HOSTILE_VALUES = HOSTILE_NUMBERS + [None, True, False, "", "F32", "U64", "BF16", "tensor", "cpu", "nan", [], {},
                                    [0], [0, 4], [[0]], {"tensor": "w"}, {"list": []}, {"ref": 0}, ["F32"],
                                    {"dtype": "F32"}, [2 ** 40, 2 ** 40], [0, [2 ** 58], [0]], "x" * 300, "I64",
                                    "BOOL", "ember.nn.parameter:Parameter", "os:system", "builtins:eval",
                                    {"object": "ember.nn.modules.linear:Linear", "id": 9, "attrs": {}},
                                    {"global": "ember:zeros"}, {"set": [{"list": []}]}, {"size": [-1]},
                                    {"defaultdict": [], "factory": "list"}, {"dtype": "uint16"}]


def _corpus() -> dict:
    """name -> (bytes of a valid file, what it holds: "ember" for ember's own files, which save back to the same
    bytes, ``{name: ndarray}`` for plain safetensors files, None for files ember must refuse as a whole)."""
    files = {}
    for dtype in (ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.int32,
                  ember.int16, ember.int8, ember.uint8, ember.bool):
        t = (ember.arange(12) % 2).to(dtype).reshape(3, 4)
        files[f"tensor {dtype.name}"] = {"t": t, "scalar": t[1, 1].clone(), "empty": ember.zeros(0, 3, dtype=dtype)}
    arrays = {code: np.arange(6).astype(_format.numpy_dtype(code)).reshape(2, 3) % 2
              for code in _format.CODE_TO_NUMPY}
    files["numpy arrays of every safetensors dtype"] = {"arrays": arrays, "scalars": [np.uint64(2 ** 64 - 1),
                                                                                      np.float16(0.5)]}
    w = ember.arange(20, dtype=ember.float32).reshape(4, 5)
    lin = ember.nn.Linear(3, 2)
    files["views and objects"] = {
        "w": w, "wt": w.T, "chunks": list(w.chunk(2, dim=1)), "row": w[2], "model": lin, "again": lin,
        "param": ember.nn.Parameter(ember.ones(2)), "set": {1, 2.5, "a"}, "size": ember.Size([2, 3]),
        "counter": Counter("aab"), "dd": defaultdict(list, {"k": [1]}), "od": OrderedDict(b=1, a=2),
        "floats": [math.inf, -math.inf, 0.1], "dtype": ember.int16, "device": ember.device("cpu"),
        "int keys": {0: {"step": 3}, (1, 2): None},
    }
    out = {}
    for name, obj in files.items():
        buf = io.BytesIO()
        ember.save(obj, buf)
        out[name] = (buf.getvalue(), "ember")
    for code in _format.CODE_TO_NUMPY:  # plain safetensors files, as the safetensors library writes them
        np_dtype = _format.numpy_dtype(code)
        arrays = {"x": (np.arange(6) % 2).astype(np_dtype).reshape(3, 2), "e": np.zeros((0,), np_dtype)}
        out[f"plain {code}"] = (safetensors.numpy.save(arrays), None if code in ("U16", "U32", "U64") else arrays)
    return out


CORPUS = _corpus()


def _split(data: bytes):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _join(header, buffer: bytes) -> bytes:
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw)) + raw + buffer


def _nodes(tree, path=()):
    """Every (path, node) of a JSON tree."""
    yield path, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, path + (i,))


def _replace(tree, path, value):
    if not path:
        return value
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return tree


def _mutate_tree(rng, data: bytes) -> bytes:
    """Replace one node of the header's JSON, or of ember's metadata inside it, by a hostile value."""
    header, buffer = _split(data)
    meta = header.get("__metadata__", {}).get("ember")
    if meta is not None and rng.random() < 0.6:
        doc = json.loads(meta)
        path, _ = rng.choice(list(_nodes(doc)))
        doc = _replace(doc, path, rng.choice(HOSTILE_VALUES))
        header["__metadata__"]["ember"] = json.dumps(doc)
    else:
        path, _ = rng.choice(list(_nodes(header)))
        header = _replace(header, path, rng.choice(HOSTILE_VALUES))
    if rng.random() < 0.2:  # and sometimes the data too
        buffer = buffer[:rng.randrange(len(buffer) + 1)] if rng.random() < 0.5 else buffer + b"\x01" * 4
    return _join(header, buffer)


def _mutate_bytes(rng, data: bytes) -> bytes:
    d = bytearray(data)
    n = struct.unpack("<Q", data[:8])[0]
    kind = rng.randrange(6)
    if kind == 0:  # flip a few bytes, mostly in the header
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(8, 8 + n) if rng.random() < 0.8 else rng.randrange(len(d))
            d[pos] = rng.randrange(256)
    elif kind == 1:  # cut the file
        del d[rng.randrange(len(d)):]
    elif kind == 2:  # rewrite the header length
        d[:8] = struct.pack("<Q", rng.choice([0, 1, n - 1, n + 1, n + 8, 2 ** 63, len(d), rng.randrange(2 ** 64)]))
    elif kind == 3:  # insert or remove bytes inside the header, keeping the length field
        pos = rng.randrange(8, 8 + n)
        if rng.random() < 0.5:
            d[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
        else:
            del d[pos:pos + rng.randint(1, 3)]
    elif kind == 4:  # swap a number in the header for a hostile one, fixing the length
        text = d[8:8 + n].decode("utf-8", "replace")
        spots = [i for i, c in enumerate(text) if c.isdigit() and (i == 0 or not text[i - 1].isdigit())]
        if spots:
            i = rng.choice(spots)
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            text = text[:i] + str(rng.choice(HOSTILE_NUMBERS)) + text[j:]
            raw = text.encode()
            d = bytearray(struct.pack("<Q", len(raw)) + raw + bytes(d[8 + n:]))
    else:  # change the data bytes (bools that are not 0/1, NaN patterns)
        if len(d) > 8 + n:
            for _ in range(rng.randint(1, 4)):
                d[rng.randrange(8 + n, len(d))] = rng.choice([0, 1, 2, 0x7F, 0xFF])
    return bytes(d)


def _largest_tensor_bytes(obj, seen=None) -> int:
    """The most bytes any tensor or array reached from ``obj`` describes (views count their full extent)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, ember.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, np.ndarray):
        return obj.size * obj.itemsize
    if isinstance(obj, dict):
        return max([0] + [max(_largest_tensor_bytes(k, seen), _largest_tensor_bytes(v, seen))
                          for k, v in obj.items()])
    if isinstance(obj, (list, tuple, set, frozenset)):
        return max([0] + [_largest_tensor_bytes(v, seen) for v in obj])
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return _largest_tensor_bytes(vars(obj), seen)
    return 0


def _as_saved(back, data: bytes, expected) -> bool:
    """Whether ``back`` is what ``data`` holds (see :func:`_corpus` for ``expected``)."""
    if expected == "ember":
        again = io.BytesIO()
        ember.save(back, again)
        return again.getvalue() == data
    return set(back) == set(expected) and all(
        back[k].numpy().dtype == v.dtype and back[k].shape == v.shape and back[k].numpy().tobytes() == v.tobytes()
        for k, v in expected.items())


def _outcome(data: bytes, original: bytes, expected) -> str:
    t0 = time.process_time()
    try:
        back = ember.load(io.BytesIO(data))
    except CheckpointError:
        outcome = "CheckpointError"
    except Exception as exc:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        return f"FAIL {type(exc).__name__}: {str(exc)[:200]}"
    else:
        if _largest_tensor_bytes(back) > len(data):
            return "FAIL a loaded tensor is larger than the file"
        if data == original:
            if expected is None or not _as_saved(back, data, expected):
                return "FAIL the unchanged file did not load back as saved"
            outcome = "correct load (unchanged file)"
        else:
            outcome = "correct load (a changed file that is still valid)"
    if time.process_time() - t0 > MAX_LOAD_SECONDS:
        return f"FAIL a load took {time.process_time() - t0:.1f} s of CPU"
    return outcome


def test_fuzz_every_dtype_and_metadata_loads_correctly_or_raises_checkpoint_error():
    rng = random.Random(SEED)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    counts: Counter = Counter()
    failures = []
    names = sorted(CORPUS)
    for name in names:
        data, expected = CORPUS[name]
        outcome = _outcome(data, data, expected)
        if expected is None and outcome == "CheckpointError":
            outcome = "CheckpointError (unchanged file of a dtype ember lacks)"
        counts[outcome.split(":")[0]] += 1
        if outcome.startswith("FAIL"):
            failures.append((name, outcome))
    for i in range(BYTE_MUTATIONS + TREE_MUTATIONS):
        name = rng.choice(names)
        data, expected = CORPUS[name]
        mutated = _mutate_bytes(rng, data) if i < BYTE_MUTATIONS else _mutate_tree(rng, data)
        outcome = _outcome(mutated, data, expected)
        counts[outcome.split(":")[0]] += 1
        if outcome.startswith("FAIL"):
            failures.append((name, i, outcome, mutated[:300]))
    elapsed = time.monotonic() - t0
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    print(f"\ncheckpoint fuzz: {sum(counts.values())} files in {elapsed:.1f} s, peak RSS +{growth_mb:.0f} MB")
    for outcome, n in counts.most_common():
        print(f"  {n:5d}  {outcome}")
    assert not failures, failures[:5]
    assert counts["CheckpointError"] > 1000 and counts["correct load (a changed file that is still valid)"] > 50
    assert growth_mb < MAX_RSS_GROWTH_MB


STORAGE = 24


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(-30, 30), st.lists(st.tuples(st.integers(0, 7), st.integers(-30, 30)), max_size=4))
def test_fuzz_views_load_exactly_the_elements_they_name_or_are_refused(offset, dims):
    shape, strides = [n for n, _ in dims], [s for _, s in dims]
    header = {"w": {"dtype": "I32", "shape": [STORAGE], "data_offsets": [0, 4 * STORAGE]},
              "__metadata__": {"ember": json.dumps({"version": 1, "root": {"tensor": "w", "view":
                                                                            [offset, shape, strides]}})}}
    storage = np.arange(STORAGE, dtype=np.int32)
    data = _join(header, storage.tobytes())
    count = math.prod(shape)
    reach = [offset + sum(i * s for i, s in zip(index, strides)) for index in np.ndindex(*shape)]
    fits = count <= STORAGE and all(0 <= r < STORAGE for r in reach) and (count or 0 <= offset <= STORAGE)
    try:
        back = ember.load(io.BytesIO(data))
    except CheckpointError:
        assert not fits
    else:
        assert fits
        assert back.numpy().reshape(-1).tolist() == reach and back.shape == tuple(shape)
