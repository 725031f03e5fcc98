"""ONNX tensors (initializers, Constant values) as NumPy arrays, external data read only from inside ``base_dir``.

A tensor whose data lies in an external file names it by a ``location``
relative to the model's folder. ember reads it only when ``base_dir`` is
known (a model loaded from a path, or ``base_dir=`` given) and the file,
links resolved, lies inside it: an absolute location, ``..`` or a symlink
that leads out is refused.
"""
from __future__ import annotations

import os

import numpy as np

from onnx import TensorProto, helper, numpy_helper

from .errors import OnnxImportError


def external_info(tensor) -> dict:
    return {entry.key: entry.value for entry in tensor.external_data}


def external_file(tensor, base_dir, where: str) -> str:
    """The real path of ``tensor``'s external data file, checked to lie inside ``base_dir``."""
    location = external_info(tensor).get("location", "")
    if base_dir is None:
        raise OnnxImportError(f"{where}: its data is in the external file {location!r}, and a model given as bytes "
                              "or an onnx.ModelProto has no folder; pass base_dir= (the folder the model's external "
                              "data lies in) to ember.onnx.load")
    if not location:
        raise OnnxImportError(f"{where}: its external data names no location")
    if os.path.isabs(location) or "\0" in location:
        raise OnnxImportError(f"{where}: its external data location {location!r} must be a path relative to "
                              f"base_dir {base_dir!r}")
    root = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, path]) != root:
        raise OnnxImportError(f"{where}: its external data location {location!r} resolves to {path!r}, outside "
                              f"base_dir {root!r}; ember.onnx.load reads external data only from inside base_dir")
    if not os.path.isfile(path):
        raise OnnxImportError(f"{where}: its external data file {path!r} does not exist (or is not a file)")
    return path


def _external_bytes(tensor, base_dir, where: str) -> bytes:
    path = external_file(tensor, base_dir, where)
    info = external_info(tensor)
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise OnnxImportError(f"{where}: its external data offset/length {info} are not integers") from None
    size = os.path.getsize(path)
    end = size if length is None else offset + length
    if offset < 0 or (length is not None and length < 0) or end > size:
        raise OnnxImportError(f"{where}: its external data (offset {offset}, length {length}) lies outside the "
                              f"{size} bytes of {path!r}")
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(end - offset)


def element_count(tensor, where: str) -> int:
    """The number of elements ``tensor``'s dims declare; negative dims are refused."""
    if any(d < 0 for d in tensor.dims):
        raise OnnxImportError(f"{where}: its dims {list(tensor.dims)} include a negative size")
    count = 1
    for d in tensor.dims:
        count *= d
    return count


def tensor_array(tensor, base_dir, where: str) -> np.ndarray:
    """The NumPy value of the ``TensorProto`` ``tensor``; ``where`` names it in errors."""
    count = element_count(tensor, where)
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"{where}: its element type {tensor.data_type} is not an ONNX tensor type") from None
    if tensor.data_location == TensorProto.EXTERNAL:
        data = _external_bytes(tensor, base_dir, where)
        local = TensorProto()
        local.CopyFrom(tensor)
        del local.external_data[:]
        local.data_location = TensorProto.DEFAULT
        local.raw_data = data
        tensor = local
    if tensor.HasField("raw_data") and tensor.data_type != TensorProto.STRING \
            and len(tensor.raw_data) != count * itemsize:
        type_name = helper.tensor_dtype_to_string(tensor.data_type).replace("TensorProto.", "")
        raise OnnxImportError(f"{where}: its dims {list(tensor.dims)} need {count * itemsize} bytes of "
                              f"{type_name}, its data has {len(tensor.raw_data)}")
    try:
        array = numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise OnnxImportError(f"{where}: its data does not match its dims {list(tensor.dims)} and element type "
                              f"({error})") from None
    if array.size != count:
        raise OnnxImportError(f"{where}: its data holds {array.size} elements, its dims {list(tensor.dims)} "
                              f"declare {count}")
    return array
