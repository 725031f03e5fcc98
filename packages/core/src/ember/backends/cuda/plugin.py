"""The ``cuda`` backend's plugin module, registered through ember-core's ``ember`` entry point exactly as a
third party's plugin is (``[project.entry-points.ember] cuda = "ember.backends.cuda.plugin"``).

Importing it imports no CuPy: the backend registers always and answers ``is_available() == False`` and
``device_count() == 0`` where CuPy does not import or sees no GPU.
"""
from __future__ import annotations

from ..._plugins import hookimpl
from .backend import BACKEND
from .kernels import kernels


@hookimpl
def ember_backends():
    return [BACKEND]


@hookimpl
def ember_op_kernels(backend):
    """The kernels that beat the ops' array-API forwards on CuPy (:mod:`ember.backends.cuda.kernels`)."""
    return kernels() if backend.name == "cuda" else {}
