"""``ember.gpus()``: every NVIDIA GPU's name, memory used and total, utilisation and processes, as the driver
reports them (all GPUs of the machine, in ``nvidia-smi``'s order, whatever ``CUDA_VISIBLE_DEVICES`` says).

The driver is asked through nvidia-ml-py (``import pynvml``; ``pip install ember-core[gpu]``) where installed,
else through GPUtil (which runs ``nvidia-smi`` and cannot list processes). Without either, or without a driver
or a GPU, the result is empty and says why in one line. ``python -m ember gpus`` prints it; ``ember info`` and
ember-tune's GPU choice use it too.

>>> import ember
>>> status = ember.gpus()
>>> isinstance(status, list)
True
>>> print(GPUs([GPUInfo(0, "A100", 2**30, 80 * 2**30, 37, "GPU-1", [GPUProcess(4242, "python", 2**29)])],
...            source="nvidia-ml-py", driver="550.54"))
NVIDIA driver 550.54 (via nvidia-ml-py)
gpu 0: A100, 1024 MiB used of 81920 MiB, 37% utilization, 1 process
  pid 4242 python: 512 MiB
"""
from __future__ import annotations

import dataclasses
import importlib
import typing

__all__ = ["gpus", "GPUs", "GPUInfo", "GPUProcess"]

_MiB = 2**20


class GPUProcess(typing.NamedTuple):
    """A process using a GPU: its pid, name (None when the driver does not say) and GPU memory in bytes (None
    when not reported)."""
    pid: int
    name: str | None
    memory_used: int | None

    def __str__(self):
        memory = "memory not reported" if self.memory_used is None else f"{self.memory_used // _MiB} MiB"
        return f"pid {self.pid}{'' if self.name is None else ' ' + self.name}: {memory}"


@dataclasses.dataclass(frozen=True)
class GPUInfo:
    """One GPU: memory in bytes, ``utilization`` in percent of the last sample (None when not reported),
    ``processes`` a list of :class:`GPUProcess` (None when the source cannot list them)."""
    index: int
    name: str
    memory_used: int
    memory_total: int
    utilization: float | None
    uuid: str | None
    processes: list | None

    def __str__(self):
        parts = [f"gpu {self.index}: {self.name}",
                 f"{self.memory_used // _MiB} MiB used of {self.memory_total // _MiB} MiB"]
        if self.utilization is not None:
            parts.append(f"{self.utilization:.0f}% utilization")
        if self.processes is not None:
            parts.append(f"{len(self.processes)} process{'' if len(self.processes) == 1 else 'es'}")
        return "\n".join([", ".join(parts), *(f"  {p}" for p in self.processes or ())])


class GPUs(list):
    """The list of :class:`GPUInfo` that :func:`gpus` returns, with where it came from (``source``: "nvidia-ml-py",
    "GPUtil" or None), the ``driver`` version when known, and ``reason``, the one line saying why it is empty.
    It prints as a table (``str``), and so does its repr."""

    def __init__(self, items=(), source=None, driver=None, reason=None):
        super().__init__(items)
        self.source, self.driver, self.reason = source, driver, reason

    def __str__(self):
        if not self:
            return self.reason or "no NVIDIA GPU found"
        head = f"NVIDIA driver {self.driver} (via {self.source})" if self.driver else f"NVIDIA GPUs (via {self.source})"
        return "\n".join([head, *map(str, self)])

    __repr__ = __str__


def gpus() -> GPUs:
    """The NVIDIA GPUs of this machine and their status now (see the module docstring).

    >>> import ember
    >>> for gpu in ember.gpus():  # nothing on a machine without GPUs
    ...     print(gpu.index, gpu.name, gpu.memory_total - gpu.memory_used, "bytes free")
    """
    pynvml = _installed("pynvml")  # nvidia-ml-py, ember-core[gpu]
    gputil = _installed("GPUtil")  # the notes' choice: asked where nvidia-ml-py is missing or cannot reach the driver
    if pynvml is None and gputil is None:
        return GPUs(reason="no NVIDIA GPU/driver found (neither nvidia-ml-py nor GPUtil is installed; "
                           "`pip install ember-core[gpu]` to query the driver)")
    failures = []
    for module, ask in ((pynvml, _through_nvml), (gputil, _through_gputil)):
        if module is not None:
            found = ask(module)
            if isinstance(found, GPUs):
                return found
            failures.append(found)
    return GPUs(reason=f"no NVIDIA GPU/driver found ({'; '.join(failures)})")


def _installed(name: str):
    """The optional module ``name``, or None; looked up on each call, so that installing it later works."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def _ask(pynvml, name, *args):
    """``pynvml.<name>(*args)``, or None where the driver or the bindings do not support it (pynvml raises its
    NVMLError subclasses, e.g. NVMLError_NotSupported for utilisation on some boards; old bindings lack calls)."""
    try:
        return getattr(pynvml, name)(*args)
    except Exception:
        return None


def _through_nvml(pynvml) -> GPUs | str:
    """The GPUs, or why the driver could not be asked."""
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError subclasses when there is no driver
        return f"pynvml: {exc}"
    try:
        found = GPUs(source="nvidia-ml-py", driver=_text(_ask(pynvml, "nvmlSystemGetDriverVersion")),
                     reason="no NVIDIA GPU found (pynvml: the driver reports 0 devices)")
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            rates = _ask(pynvml, "nvmlDeviceGetUtilizationRates", handle)
            found.append(GPUInfo(i, str(_text(pynvml.nvmlDeviceGetName(handle))), int(memory.used),
                                 int(memory.total), None if rates is None else float(rates.gpu),
                                 _text(_ask(pynvml, "nvmlDeviceGetUUID", handle)), _nvml_processes(pynvml, handle)))
        return found
    except Exception as exc:  # a GPU that stopped answering
        return f"pynvml: {exc}"
    finally:
        pynvml.nvmlShutdown()


def _nvml_processes(pynvml, handle) -> list | None:
    """Compute and graphics processes on the GPU (one doing both is listed once); None if the driver cannot say."""
    listed: dict | None = None
    for query in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        procs = _ask(pynvml, query, handle)
        if procs is None:
            continue
        listed = listed if listed is not None else {}
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)  # None where the driver hides it (no permission, WDDM)
            listed.setdefault(p.pid, GPUProcess(int(p.pid), _text(_ask(pynvml, "nvmlSystemGetProcessName", p.pid)),
                                                None if used is None else int(used)))
    return None if listed is None else list(listed.values())


def _through_gputil(gputil) -> GPUs | str:
    """The GPUs through GPUtil (no processes: it does not list them), or why there are none."""
    try:
        found = gputil.getGPUs()
    except Exception as exc:  # GPUtil runs nvidia-smi: missing or failing means no usable GPU
        return f"GPUtil: {exc}"
    if not found:
        return "GPUtil sees none"
    return GPUs([GPUInfo(int(g.id), str(g.name), int(g.memoryUsed * _MiB), int(g.memoryTotal * _MiB),
                         float(g.load) * 100, str(g.uuid), None) for g in found],
                source="GPUtil", driver=getattr(found[0], "driver", None) or None)
