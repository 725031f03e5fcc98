"""``ember.onnx.verify``: export a model, run it in onnxruntime and compare with ember's own output."""
from __future__ import annotations

import numpy as np

from ember import Tensor, no_grad

from ._export import as_args, build_model
from ._trace import flatten_outputs
from .errors import VerificationError


def verify(model, args, rtol: float = 1e-5, atol: float = 1e-5, input_names=None, output_names=None,
           dynamic_axes=None, other_args=(), opset_version: int = 17) -> list:
    """Export ``model`` for ``args``, run the ONNX model in onnxruntime, compare with ember; the differences.

    The ONNX model is also run on each of ``other_args`` (e.g. another batch
    size along a dynamic axis). Returns the largest absolute difference per
    output (over all argument sets); raises :class:`~ember.onnx.VerificationError`
    with the largest difference when an output differs by more than
    ``atol + rtol * |ember's value|`` or has another shape or dtype. The model
    runs in eval mode (its mode is restored afterwards).

    >>> import ember
    >>> diffs = ember.onnx.verify(lambda x: (x * 2).relu().sum(1), ember.tensor([[1.0, -2.0], [3.0, 4.0]]))
    >>> diffs
    [0.0]
    """
    import onnxruntime

    import onnx

    args = as_args(args)
    proto = build_model(model, args, input_names, output_names, dynamic_axes, opset_version)
    try:
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise VerificationError(f"ember.onnx.verify: the exported model fails onnx.checker: {exc}") from exc
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    diffs: list = []
    for case in (args,) + tuple(as_args(a) for a in other_args):
        expected = _ember_outputs(model, case)
        feed = dict(zip(names, (t.detach().cpu().numpy() for t in case if isinstance(t, Tensor))))
        got = session.run(None, feed)
        if len(got) != len(expected):
            raise VerificationError(f"ember.onnx.verify: onnxruntime gave {len(got)} outputs, ember {len(expected)}")
        for k, (e, o) in enumerate(zip(expected, got)):
            d = _compare(k, e, np.asarray(o), rtol, atol)
            if k < len(diffs):
                diffs[k] = max(diffs[k], d)
            else:
                diffs.append(d)
    return diffs


def _ember_outputs(model, args) -> list:
    modules = list(model.modules()) if hasattr(model, "modules") and hasattr(model, "train") else []
    modes = [(m, m.training) for m in modules]
    try:
        for m in modules:
            m.training = False
        with no_grad():
            return [t.detach().cpu().numpy() for t in flatten_outputs(model(*args))]
    finally:
        for m, mode in modes:
            m.training = mode


def _compare(k, expected, got, rtol, atol) -> float:
    if expected.shape != got.shape:
        raise VerificationError(f"ember.onnx.verify: output {k} has shape {list(got.shape)} in onnxruntime but "
                                f"{list(expected.shape)} in ember")
    if expected.dtype != got.dtype:
        raise VerificationError(f"ember.onnx.verify: output {k} has dtype {got.dtype} in onnxruntime but "
                                f"{expected.dtype} in ember")
    if expected.size == 0:
        return 0.0
    e64, g64 = expected.astype(np.float64), got.astype(np.float64)
    diff = np.abs(e64 - g64)
    same_nan = np.isnan(e64) & np.isnan(g64)
    same_inf = np.isinf(e64) & (e64 == g64)
    diff = np.where(same_nan | same_inf, 0.0, diff)
    worst = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
    bad = diff > atol + rtol * np.abs(np.where(same_inf, 0.0, e64))
    if bad.any():
        raise VerificationError(f"ember.onnx.verify: output {k} differs between ember and onnxruntime: max "
                                f"absolute difference {worst:.3g} at {int(bad.sum())} of {bad.size} elements "
                                f"(rtol={rtol}, atol={atol})")
    return worst
