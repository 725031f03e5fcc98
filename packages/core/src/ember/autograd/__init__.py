"""Automatic differentiation: ``backward``, ``grad``, ``Function``, grad modes, ``gradcheck``, anomaly mode.

>>> import ember
>>> x = ember.tensor([2.0], requires_grad=True)
>>> ember.autograd.grad((x ** 3).sum(), x)
(tensor([12.]),)
"""
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx
from .grad_mode import (
                        enable_grad,
                        inference_mode,
                        is_grad_enabled,
                        is_inference_mode_enabled,
                        no_grad,
                        set_grad_enabled,
)
from .gradcheck import gradcheck, gradgradcheck
from .gradients import backward, grad
from .node import Node
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "Variable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "gradcheck", "gradgradcheck"]
