"""Running a script on several ranks for the tests: each job its own ``mpiexec`` subprocess with a time bound, so
that one rank's failure cannot desynchronise the next test."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: the mpich wheel's mpiexec, next to this interpreter (as ember-run finds it)
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def run_ranks(n: int, script: str, tmp_path: Path, timeout: float = 180,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``script`` (dedented) on ``n`` ranks, one BLAS thread each, its first argument ``tmp_path``; ``env``
    adds to the environment."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **(env or {}))
    return subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(path), str(tmp_path)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def rank_outputs(n: int, script: str, tmp_path: Path, timeout: float = 180, env: dict | None = None) -> list:
    """Run ``script`` as :func:`run_ranks` does, require success, and return what each rank wrote to
    ``<tmp_path>/rank<r>.json``."""
    done = run_ranks(n, script, tmp_path, timeout, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(n)]
