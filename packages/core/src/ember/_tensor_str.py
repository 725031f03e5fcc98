"""How tensors print (PyTorch's layout)."""
import numpy as np


def tensor_repr(t) -> str:
    arr = np.asarray(t._device.backend.to_numpy(t._data))
    body = np.array2string(arr.astype("float32") if t._dtype.name == "bfloat16" else arr, separator=", ",
                           prefix="tensor(")
    extras = []
    if t._device.type != "cpu" or t._device.index not in (None, 0):
        extras.append(f"device='{t._device}'")
    if t._dtype.name not in ("float32", "int64", "bool"):
        extras.append(f"dtype={t._dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
