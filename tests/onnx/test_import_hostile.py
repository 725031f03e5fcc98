"""ember.onnx.load refuses malformed models at load time, always with OnnxImportError naming what is wrong."""
import collections
import random
import time

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.helper import make_node, make_tensor_value_info

import ember
from ember.onnx import OnnxImportError, UnsupportedImportError, load

from .hostile_models import HOSTILE, model, nested_scan_model
from .test_import import cnn_model, scan_model


def test_unsupported_is_an_import_error():
    assert issubclass(UnsupportedImportError, OnnxImportError)
    assert issubclass(UnsupportedImportError, NotImplementedError)


@pytest.mark.parametrize("source, message", [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_hostile_model_fails_at_load_naming_the_problem(source, message):
    with pytest.raises(OnnxImportError, match=message):
        load(source)


def test_hostile_corpus_outcomes_are_only_onnx_import_errors():
    assert len(HOSTILE) >= 30
    outcomes = collections.Counter()
    for _, source, _ in HOSTILE:
        try:
            load(source)
            outcomes["loaded"] += 1
        except OnnxImportError:
            outcomes["OnnxImportError"] += 1
        except Exception as error:  # noqa: BLE001  (counted: the assertion below names it)
            outcomes[type(error).__name__] += 1
    assert outcomes == {"OnnxImportError": len(HOSTILE)}


def test_nested_scans_with_constant_trip_counts_are_refused_at_load_quickly():
    model = nested_scan_model(length=40, depth=4)  # 40**4 = 2.56 million body runs
    assert len(model.SerializeToString()) < 1024
    start = time.perf_counter()
    with pytest.raises(OnnxImportError, match="Scan node 'scan4': 40 steps, run 64000 times by the enclosing "
                                              "Scans, make 2560000 body runs, more than max_scan_iterations"):
        load(model)
    assert time.perf_counter() - start < 1.0


def test_nested_scans_over_an_input_are_refused_at_call_before_running_quickly():
    module = load(nested_scan_model(length=40, depth=4, seq_input=True))  # trip counts unknown until called
    start = time.perf_counter()
    with pytest.raises(OnnxImportError, match="Scan node 'scan4': 40 steps, run 64000 times"):
        module(ember.zeros(40))
    assert time.perf_counter() - start < 1.0
    np.testing.assert_array_equal(module(ember.arange(5.0)).numpy(), np.arange(5.0))  # within the limit: runs


def test_nested_scans_within_a_raised_limit_run():
    runs = 6 + 6 ** 2 + 6 ** 3 + 6 ** 4  # every level's body runs count
    module = load(nested_scan_model(length=6, depth=4), max_scan_iterations=runs)
    assert module().tolist() == [0.0] * 6
    with pytest.raises(OnnxImportError, match="Scan node 'scan4': its 1296 body runs after 258 of other Scans "
                                              f"make {runs} in one call, more than max_scan_iterations={runs - 1}"):
        load(nested_scan_model(length=6, depth=4), max_scan_iterations=runs - 1)
    module = load(nested_scan_model(length=6, depth=4, seq_input=True), max_scan_iterations=runs - 1)
    with pytest.raises(OnnxImportError, match=f"Scan node 'scan4': its 6 body runs after {runs - 6} of other "
                                              "Scans make 1554 in one call"):
        module(ember.zeros(6))


def sibling_scans(count, seq_input):
    """``count`` Scans one after the other, each over ``seq`` (10 steps)."""
    body = helper.make_graph([make_node("Identity", ["e"], ["o"], name="copy")], "body",
                             [make_tensor_value_info("e", TensorProto.FLOAT, None)],
                             [make_tensor_value_info("o", TensorProto.FLOAT, None)])
    scans = [make_node("Scan", ["seq"], [f"y{i}"], body=body, num_scan_inputs=1, name=f"scan{i}")
             for i in range(count)]
    adds = [make_node("Add", [f"y{i}" if i == 1 else f"s{i - 1}", f"y{i}" if i > 1 else "y0"], [f"s{i}"],
                      name=f"add{i}") for i in range(1, count)]
    if seq_input:
        return model(scans + adds, inputs={"seq": [10]}, outputs=(f"s{count - 1}",))
    fill = make_node("ConstantOfShape", ["n"], ["seq"], name="fill")
    return model([fill] + scans + adds, inputs={}, outputs=(f"s{count - 1}",),
                 inits={"n": np.array([10], np.int64)})


def test_sibling_scans_add_up_to_the_limit():
    with pytest.raises(OnnxImportError, match="Scan node 'scan2': its 10 body runs after 20 of other Scans make 30 "
                                              "in one call, more than max_scan_iterations=25"):
        load(sibling_scans(3, seq_input=False), max_scan_iterations=25)
    assert load(sibling_scans(3, seq_input=False), max_scan_iterations=30)().tolist() == [0.0] * 10
    module = load(sibling_scans(3, seq_input=True), max_scan_iterations=25)
    with pytest.raises(OnnxImportError, match="Scan node 'scan2': its 10 body runs after 20 of other Scans"):
        module(ember.zeros(10))
    assert module(ember.ones(8)).tolist() == [3.0] * 8  # 24 runs: within the limit, and each call starts afresh
    assert module(ember.ones(8)).tolist() == [3.0] * 8


def mutated(data: bytes, rng) -> bytes:
    """``data`` with one to four random byte changes, deletions or insertions."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at, kind = rng.randrange(len(data)), rng.random()
        if kind < 0.6:
            data[at] = rng.randrange(256)
        elif kind < 0.8:
            del data[at:at + rng.randint(1, 8)]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(data)


def test_mutated_models_load_or_raise_onnx_import_error():
    """A bounded byte-mutation fuzz over valid models (a CNN, a Scan, one of each of a few ops)."""
    seeds = [cnn_model().SerializeToString(), scan_model().SerializeToString(),
             model([make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")],
                   inits={"w": np.ones((4, 3), np.float32)}).SerializeToString()]
    rng = random.Random(19)
    outcomes = collections.Counter()
    start = time.perf_counter()
    for _ in range(600):
        try:
            load(mutated(rng.choice(seeds), rng))
            outcomes["loaded"] += 1
        except OnnxImportError:
            outcomes["OnnxImportError"] += 1
    assert set(outcomes) <= {"loaded", "OnnxImportError"} and outcomes["OnnxImportError"] > 100, outcomes
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("suffix, text", [(".onnx", b"\xff\xff not a model"), (".textproto", b"garbage {{{"),
                                          (".json", b'{"graph": 3')])
def test_a_file_that_is_no_model_names_the_file(tmp_path, suffix, text):
    path = tmp_path / f"m{suffix}"
    path.write_bytes(text)
    with pytest.raises(OnnxImportError, match=f"'{path}' is not an ONNX model"):
        load(path)


def test_scanning_a_scalar_names_the_scan():
    module = load(nested_scan_model(length=3, depth=1, seq_input=True))
    with pytest.raises(OnnxImportError, match=r"Scan node 'scan1': a scan input of shape \[\] has no axis 0"):
        module(ember.tensor(1.0))
