"""``ember.compile``: a model made into a faster callable by a compiler backend that a plugin gives (hook
``ember_compilers``; ember-onnx gives ``"onnxruntime"``, which runs the exported graph in one onnxruntime session,
and ``"openvino"`` where OpenVINO is installed).

>>> import ember
>>> sorted(ember.list_compilers()) == sorted(ember.collect_claims("ember_compilers"))
True
"""
from __future__ import annotations

from ._plugins import collect_claims

__all__ = ["compile", "list_compilers"]

#: the distribution that gives each of ember's own compiler backends, for the error when it is missing
_FROM = {"onnxruntime": "ember-onnx", "openvino": "ember-onnx[openvino]"}


def list_compilers() -> list[str]:
    """The names :func:`compile` accepts as ``backend``: those the installed plugins give."""
    return list(collect_claims("ember_compilers", "the compiler backend {key}"))


def compile(model, example_inputs=None, *, backend: str = "onnxruntime", options: dict | None = None):  # noqa: A001
    """``model`` compiled by ``backend``: a callable that takes the model's inputs and gives its outputs.

    ``example_inputs`` (a tensor or a tuple of tensors) are the inputs the compiler traces the model with; a
    backend may need them (``"onnxruntime"`` does, as ``torch.export`` does). ``options`` go to the backend
    as they are. The backends come from plugins (hook ``ember_compilers``); :func:`list_compilers` names
    those installed. With ``"onnxruntime"`` (distribution ember-onnx) the compiled model runs the exported
    ONNX graph in onnxruntime for inference: see :func:`ember.onnx.compile_onnxruntime`; ``"openvino"`` (the
    extra ``ember-onnx[openvino]``) compiles the same graph with OpenVINO: see :func:`ember.onnx.compile_openvino`.

    >>> import ember
    >>> net = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU()).eval()
    >>> fast = ember.compile(net, ember.randn(2, 4))
    >>> x = ember.randn(2, 4)
    >>> ember.allclose(fast(x), net(x).detach(), atol=1e-6)
    True
    """
    compilers = collect_claims("ember_compilers", "the compiler backend {key}")
    if backend not in compilers:
        hint = f" (`pip install {_FROM[backend]}` gives it)" if backend in _FROM else ""
        raise ValueError(f"ember.compile: no compiler backend {backend!r}{hint}; installed: "
                         f"{sorted(compilers) or 'none'}. Backends come from plugins (hook ember_compilers)")
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    compiler = compilers[backend][0]
    return compiler(model, None if example_inputs is None else tuple(example_inputs), options)
