"""The ``nccl`` backend on real GPUs (marker ``cuda``; skipped with the reason where CuPy, its NCCL or a GPU is
missing): world size 1 started without ``mpiexec`` (MPI's singleton start, as on a machine that has mpi4py but no
launcher), then 2 ranks on 2 GPUs where the machine has them and an ``mpiexec``. The scripts are those of the
stand-in tests (``test_nccl.py``): every collective against NumPy, DDP on ``cuda`` equal to one process training
on the whole batch, ``auto`` moving CPU and CUDA tensors in one group."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from .ranks import MPIEXEC, rank_outputs
from .test_nccl import COLLECTIVES, DDP, check_collectives, prelude

pytestmark = pytest.mark.cuda


def _real_gpus() -> tuple[int, str]:
    """``(number of GPUs, "")`` through the real CuPy with NCCL, or ``(0, why not)``."""
    try:
        import cupy
        from cupy.cuda import nccl
    except Exception as exc:  # ImportError, or a CUDA installation that fails at import
        return 0, f"CuPy does not import ({type(exc).__name__}: {exc})"
    if getattr(cupy, "STANDIN", False):
        return 0, "the CuPy stand-in of tests/cuda_standin is imported, not the real CuPy"
    if not getattr(nccl, "available", False):
        return 0, "CuPy's NCCL library does not load (install nvidia-nccl-cu12 or -cu13)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, no device
        return 0, f"CuPy sees no GPU ({exc})"
    return count, "" if count else "CuPy sees no GPU"


@pytest.fixture(scope="module")
def gpus() -> int:
    count, why = _real_gpus()
    if not count:
        pytest.skip(f"needs a GPU with NCCL: {why}")
    return count


def singleton(script: str, tmp_path, timeout: float = 300) -> dict:
    """Run ``script`` as one process without a launcher (MPI starts as a singleton) and return what it wrote."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    path_entries = env.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(p for p in path_entries if p and "cuda_standin" not in p)
    done = subprocess.run([sys.executable, str(path), str(tmp_path)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp_path / "rank0.json").read_text())


def test_every_collective_on_one_gpu_without_mpiexec(gpus, tmp_path):
    check_collectives([singleton(prelude() + COLLECTIVES, tmp_path)])


@pytest.mark.parametrize("backend", ["nccl", "auto"])
def test_ddp_on_one_gpu_over_nccl_without_mpiexec_equals_plain_training(gpus, tmp_path, backend):
    rk = singleton(prelude(backend) + DDP.replace("FIND_UNUSED", "False"), tmp_path)
    assert rk["buckets"] > 1 and rk["devices"] == ["cuda:0"]
    assert rk["diff"] < 1e-10, rk


def _two_gpus(gpus: int) -> None:
    if gpus < 2:
        pytest.skip(f"2 NCCL ranks need 2 GPUs; this machine has {gpus}")
    if not MPIEXEC.exists():
        pytest.skip(f"2 ranks need mpiexec, and there is none at {MPIEXEC}")


def test_every_collective_on_two_gpus(gpus, tmp_path):
    _two_gpus(gpus)
    check_collectives(rank_outputs(2, prelude() + COLLECTIVES, tmp_path, timeout=300))


def test_ddp_on_two_gpus_over_nccl_equals_one_process_training(gpus, tmp_path):
    _two_gpus(gpus)
    for r, rk in enumerate(rank_outputs(2, prelude() + DDP.replace("FIND_UNUSED", "False"), tmp_path, timeout=300)):
        assert rk["devices"] == [f"cuda:{r}"] and rk["diff"] < 1e-10, rk
