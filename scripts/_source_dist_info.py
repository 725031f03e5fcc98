"""Make ember importable from its sources with its plugins registered, where nothing can be installed.

``python scripts/_source_dist_info.py DIR`` writes into ``DIR`` one ``.dist-info`` folder per distribution
of ``packages/`` (its name, version and entry points, read from its ``pyproject.toml``), so that with
``DIR`` and every ``packages/*/src`` on ``PYTHONPATH`` the entry points (the ``cuda`` backend's plugin among
them) are found as if the distributions were installed. Used by ``scripts/gpu-check --no-install`` when no
wheels were carried.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def _requirements(project) -> list:
    """The modules of a distribution's requirements that are not ember's (a name's usual module name)."""
    names = (re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0] for r in project.get("dependencies", []))
    return [n.replace("-", "_").lower() for n in names if not n.startswith("ember")]


def write(site: Path) -> None:
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        name, version = project["name"], project.get("version", "0")
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        groups = project.get("entry-points", {})
        missing = [r for r in _requirements(project) if importlib.util.find_spec(r) is None]
        if missing:  # its plugin would fail to load (e.g. ember-numba without numba): not registered
            groups = {}
        lines = []
        for group, entries in groups.items():
            lines.append(f"[{group}]")
            lines += [f"{key} = {value}" for key, value in entries.items()]
        if lines:
            (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        print(f"{name} {version}: {sum(len(e) for e in groups.values())} entry points")


if __name__ == "__main__":
    write(Path(sys.argv[1]))
