"""The ``ember`` command line (also ``python -m ember``).

``ember info`` prints what a bug report needs: the installed ember
distributions and their versions, the registered plugins, the backends with
their devices, the plugins' compiled CPU kernels, the claims that replaced another plugin's by a higher priority
(:class:`ember.Claim`), each plugin's own status lines (hook ``ember_status``), and the NVIDIA GPU status.
``ember gpus`` prints the GPUs' status alone (:func:`ember.gpus`).

>>> main(["info"])  # doctest: +ELLIPSIS
ember ... on Python ...
<BLANKLINE>
distributions:
...ember-core ...
<BLANKLINE>
plugins:
  ember.backends.cpu ...
<BLANKLINE>
backends:
  cpu ...
<BLANKLINE>
CPU kernels:
...
<BLANKLINE>
overridden by priority:
...
<BLANKLINE>
plugin status:
...
<BLANKLINE>
NVIDIA GPUs:
...
0
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
import types

import ember

from . import _plugins
from .errors import PluginError


def ember_distributions() -> list[tuple[str, str]]:
    """``(name, version)`` of every installed distribution whose name starts with ``ember-``, sorted."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-").replace(".", "-")
        if name.startswith("ember-"):
            found.setdefault(name, dist.version)
    return sorted(found.items())


def plugin_lines() -> list[str]:
    """One line per registered plugin: its name, module and (for entry points) its distribution."""
    from_dist = {ep.name: f"{ep.dist.name} {ep.dist.version}" for ep in _plugins.entry_points() if ep.dist}
    lines = []
    for name, plugin in _plugins.get_plugin_manager().list_name_plugin():
        module = plugin.__name__ if isinstance(plugin, types.ModuleType) else type(plugin).__module__
        origin = f"entry point of {from_dist[name]}" if name in from_dist else (
            "built-in" if name in _plugins.BUILTIN_PLUGINS else "registered at run time")
        lines.append(f"{name:<24} {module}  ({origin})")
    return lines


def backend_lines() -> list[str]:
    """One line per backend: device type, providing plugin, description, devices."""
    lines = []
    for device_type, (backend, plugin_name) in _plugins.backends().items():
        if backend.is_available():
            devices = ", ".join(f"{device_type}:{i}" for i in range(backend.device_count())) or "none"
        else:
            devices = "not available"
        lines.append(f"{device_type:<8} {backend.describe()}  [plugin {plugin_name}]  devices: {devices}")
    return lines


def cpu_kernel_lines() -> list[str]:
    """Which plugin gives each compiled inner loop of the CPU backend (hook ``ember_cpu_kernels``)."""
    by_plugin: dict[str, list[str]] = {}
    for name, (_, plugin_name) in _plugins.collect_claims("ember_cpu_kernels").items():
        by_plugin.setdefault(plugin_name, []).append(name)
    return [f"{', '.join(sorted(names))}  [plugin {plugin_name}]" for plugin_name, names in by_plugin.items()] or [
        "none: ember's NumPy code (the same numbers, slower; `pip install ember-numba` compiles it)"]


def override_lines() -> list[str]:
    """Each claim that won over another plugin's by its higher priority (:class:`ember.Claim`): which plugin
    serves the op kernel, CPU kernel or ONNX lowering, and whose it replaced."""
    lines = []
    for device_type, (backend, _) in _plugins.backends().items():
        found, overridden = _plugins.claims_and_overrides("ember_op_kernels", backend=backend)
        lines += [f"op {op} on {device_type}: plugin {found[op][1]} (over {', '.join(losers)})"
                  for op, losers in sorted(overridden.items())]
    for hook, what in (("ember_cpu_kernels", "CPU kernel"), ("ember_onnx_lowerings", "ONNX lowering of")):
        found, overridden = _plugins.claims_and_overrides(hook)
        lines += [f"{what} {key}: plugin {found[key][1]} (over {', '.join(losers)})"
                  for key, losers in sorted(overridden.items())]
    return lines or ["none: every op kernel, CPU kernel and lowering has one plugin"]


def status_lines() -> list[str]:
    """Each plugin's line on the state of what it gives (hook ``ember_status``: ``{topic: describe}``)."""
    claims = _plugins.collect_claims("ember_status", "the status topic {key}")
    return [f"{topic}: {describe()}  [plugin {plugin_name}]"
            for topic, (describe, plugin_name) in sorted(claims.items())] or ["none"]


def gpu_lines() -> list[str]:
    """The NVIDIA GPUs' status as :func:`ember.gpus` gives it (through nvidia-ml-py or GPUtil), one line each."""
    return str(ember.gpus()).splitlines()


def gpus() -> int:
    """Print each NVIDIA GPU's name, memory used/total, utilisation and processes (one line when there is none)."""
    print(ember.gpus())
    return 0


def info() -> int:
    """Print the report; 1 if a plugin could not be loaded (the report says which), else 0."""
    print(f"ember {ember.__version__} on Python {platform.python_version()} ({sys.executable})")
    _section("distributions", [f"{name} {version}" for name, version in ember_distributions()]
             or ["none installed (running from a source tree)"])
    try:
        plugins, backends = plugin_lines(), backend_lines()
        cpu_kernels, overrides, statuses = cpu_kernel_lines(), override_lines(), status_lines()
    except PluginError as exc:
        _section("plugins", [f"ERROR: {exc}"])
        status = 1
    else:
        _section("plugins", plugins)
        _section("backends", backends)
        _section("CPU kernels", cpu_kernels)
        _section("overridden by priority", overrides)
        _section("plugin status", statuses)
        status = 0
    _section("NVIDIA GPUs", gpu_lines())
    return status


def _section(title: str, lines: list[str]) -> None:
    print(f"\n{title}:")
    for line in lines:
        print(f"  {line}")


COMMANDS = {"info": (info, "list installed ember packages, plugins, backends, devices and GPU status"),
            "gpus": (gpus, "show each NVIDIA GPU's memory, utilisation and processes")}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for a usage error, as argparse does)."""
    parser = argparse.ArgumentParser(prog="ember" if _run_as_script() else "python -m ember",
                                     description="ember command line")
    parser.add_argument("--version", action="version", version=f"ember {ember.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (_, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, description=help_text)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: missing command; choose from: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[args.command][0]()
    except BrokenPipeError:  # e.g. `ember info | head`: the reader left, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's documented recipe
        return 0


def _run_as_script() -> bool:
    return not sys.argv[0].endswith("__main__.py")


if __name__ == "__main__":
    sys.exit(main())
