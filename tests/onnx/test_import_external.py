"""ember.onnx.load reads external data only from a known folder (base_dir), and never from outside it."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.onnx import OnnxImportError, load

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def add_model(tensor=None):
    """``y = x + w``, ``w`` an initializer (external when ``tensor`` is given as such)."""
    w = numpy_helper.from_array(W, "w") if tensor is None else tensor
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def external_w(location, offset=None, length=None):
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3])
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value=location)
    for key, value in (("offset", offset), ("length", length)):
        if value is not None:
            tensor.external_data.add(key=key, value=str(value))
    return tensor


def saved(folder):
    """A model saved with its weight in ``folder/w.bin``; returns the path of the ``.onnx`` file."""
    folder.mkdir(exist_ok=True)
    (folder / "w.bin").write_bytes(W.tobytes())
    return write_model(folder, "w.bin")


def result(module):
    return module(ember.zeros(2, 3)).detach().numpy()


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The working directory is another folder, holding a decoy ``w.bin`` of other values."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "w.bin").write_bytes(np.full(6, 99.0, np.float32).tobytes())
    monkeypatch.chdir(cwd)
    return cwd


def test_a_path_reads_external_data_from_its_own_folder(tmp_path, elsewhere):
    path = saved(tmp_path / "model")
    np.testing.assert_array_equal(result(load(path)), W)
    with open(path, "rb") as handle:  # a named file too
        np.testing.assert_array_equal(result(load(handle)), W)


@pytest.mark.parametrize("form", ["bytes", "proto"])
def test_bytes_or_proto_with_external_data_need_base_dir(tmp_path, elsewhere, form):
    path = saved(tmp_path / "model")
    proto = onnx.load(path, load_external_data=False)
    source = proto.SerializeToString() if form == "bytes" else proto
    with pytest.raises(OnnxImportError, match="initializer 'w': its data is in the external file 'w.bin'.*"
                                              "pass base_dir="):
        load(source)  # not the decoy in the working directory
    np.testing.assert_array_equal(result(load(source, base_dir=tmp_path / "model")), W)
    assert proto.graph.initializer[0].data_location == TensorProto.EXTERNAL  # the caller's proto is left as it was


def test_a_proto_with_its_data_loaded_needs_no_base_dir(tmp_path, elsewhere):
    np.testing.assert_array_equal(result(load(onnx.load(saved(tmp_path / "model")))), W)


def write_model(folder, location, offset=None, length=None):
    folder.mkdir(exist_ok=True)
    path = folder / "m.onnx"
    onnx.save_model(add_model(external_w(location, offset, length)), path)
    return path


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin"])
def test_dot_dot_out_of_base_dir_is_refused(tmp_path, location):
    (tmp_path / "secret.bin").write_bytes(W.tobytes())
    path = write_model(tmp_path / "model", location)
    with pytest.raises(OnnxImportError, match="initializer 'w': its external data location .* outside base_dir"):
        load(path)
    with pytest.raises(OnnxImportError, match="outside base_dir"):
        load(onnx.load(path, load_external_data=False).SerializeToString(), base_dir=tmp_path / "model")


def test_an_absolute_location_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(W.tobytes())
    path = write_model(tmp_path / "model", str(secret))
    with pytest.raises(OnnxImportError, match="initializer 'w': its external data location .* must be a path "
                                              "relative to base_dir"):
        load(path)


def test_a_symlink_leading_out_is_refused_one_staying_inside_is_read(tmp_path):
    (tmp_path / "secret.bin").write_bytes(W.tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    os.symlink(tmp_path / "secret.bin", model_dir / "link.bin")
    with pytest.raises(OnnxImportError, match="resolves to .*secret.bin', outside base_dir"):
        load(write_model(model_dir, "link.bin"))
    (model_dir / "data").mkdir()
    (model_dir / "data" / "w.bin").write_bytes(W.tobytes())
    os.symlink(model_dir / "data" / "w.bin", model_dir / "inside.bin")
    np.testing.assert_array_equal(result(load(write_model(model_dir, "inside.bin"))), W)


def test_a_range_past_the_end_of_the_file_is_refused(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "w.bin").write_bytes(W.tobytes())
    with pytest.raises(OnnxImportError, match=r"initializer 'w': its external data \(offset 16, length 24\) lies "
                                              "outside the 24 bytes"):
        load(write_model(model_dir, "w.bin", offset=16, length=24))
    with pytest.raises(OnnxImportError, match="external data file .*missing.bin' does not exist"):
        load(write_model(model_dir, "missing.bin"))
    np.testing.assert_array_equal(result(load(write_model(model_dir, "w.bin", offset=0, length=24))), W)
