"""Finding and loading oneDNN (``libdnnl.so.3`` of the PyPI wheel ``onednn-cpu-gomp``), once per process.

:func:`load` returns the loaded library or raises :class:`Unavailable` whose message says why it cannot be used
(no wheel for this platform, no system libgomp, a version other than the one the binding was written for). The
environment variable ``EMBER_ONEDNN_LIBRARY`` names another ``libdnnl.so.3`` to load instead (a oneDNN 3.x built
with GNU OpenMP); set to an empty string, it turns the plugin off.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os

#: the wheel that ships the library, and the oneDNN versions whose enum values :mod:`._dnnl` spells
DISTRIBUTION = "onednn-cpu-gomp"
SUPPORTED = (3,)
ENV = "EMBER_ONEDNN_LIBRARY"


class Unavailable(RuntimeError):
    """oneDNN cannot be used in this process; the message says why."""


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]


#: dnnl_version_t's cpu_runtime for OpenMP (DNNL_RUNTIME_OMP)
_RUNTIME_OMP = 2


def library_path() -> str:
    """The path of the ``libdnnl.so.3`` to load: ``$EMBER_ONEDNN_LIBRARY``, else the one the wheel installed."""
    if ENV in os.environ:
        path = os.environ[ENV]
        if not path:
            raise Unavailable(f"turned off (${ENV} is set to an empty string)")
        return path
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable(f"the wheel {DISTRIBUTION!r} is not installed (it exists for Linux on x86-64 only; "
                          f"`pip install {DISTRIBUTION}`)") from None
    for file in dist.files or ():
        if file.name == "libdnnl.so.3":
            return os.path.normpath(str(dist.locate_file(file)))
    raise Unavailable(f"the wheel {DISTRIBUTION} {dist.version} has no lib/libdnnl.so.3")


@functools.cache
def load() -> tuple[ctypes.CDLL, str]:
    """``(library, description)``: oneDNN loaded, with a one-line description of what was loaded; raises
    :class:`Unavailable` when it cannot be used (a success is cached; :func:`ember_onednn.plugin.convolutions`
    remembers a failure)."""
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        if "libgomp" in str(exc):
            raise Unavailable(f"the system's GNU OpenMP runtime libgomp.so.1 is missing (Debian/Ubuntu: "
                              f"`apt-get install libgomp1`): {exc}") from None
        raise Unavailable(f"{path} could not be loaded: {exc}") from None
    lib.dnnl_version.restype = ctypes.POINTER(_Version)
    version = lib.dnnl_version().contents
    if version.major not in SUPPORTED:
        raise Unavailable(f"{path} is oneDNN {version.major}.{version.minor}; this binding was written for "
                          f"oneDNN {'/'.join(map(str, SUPPORTED))}.x")
    if version.cpu_runtime != _RUNTIME_OMP:
        raise Unavailable(f"{path} is not built with OpenMP (CPU runtime {version.cpu_runtime}); ember-onednn "
                          "sets its threads through libgomp")
    return lib, f"oneDNN {version.major}.{version.minor}.{version.patch} ({path})"

