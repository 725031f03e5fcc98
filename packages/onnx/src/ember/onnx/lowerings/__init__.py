"""ember's built-in ONNX lowerings, one module per op family, registered as a plugin like a third party's.

``ember.onnx`` registers this module (``ember.onnx.lowerings``) with
:func:`ember.register_plugin` when it is imported; each family module holds
``LOWERINGS = {op_name: lowering}``.
"""
import ember

from . import nn_ops, recurrent, tensor_ops

_FAMILIES = (tensor_ops, nn_ops, recurrent)


def merged() -> dict:
    """All built-in lowerings; an op lowered by two families is a bug named here."""
    found: dict = {}
    for family in _FAMILIES:
        for op, fn in family.LOWERINGS.items():
            if op in found:
                raise RuntimeError(f"op {op!r} is lowered by both {found[op].__module__} and {fn.__module__}")
            found[op] = fn
    return found


@ember.hookimpl
def ember_onnx_lowerings():
    return merged()
