"""ember-run: ranks get torchrun's variables, script arguments pass through, exit status, --timeout, the manual,
a clear error without mpiexec. Every job is its own subprocess with a time bound."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ember.distributed import run
from ember.distributed._bootstrap import torchrun_environment

EMBER_RUN = [sys.executable, "-m", "ember.distributed.run"]
BOUND_S = 60  # no job here should take more than a few seconds; this only keeps a broken one from hanging CI


def run_job(cmd, cwd, bound=BOUND_S, env=None):
    """Run ``cmd``; return (CompletedProcess, seconds taken). Past ``bound``, SIGTERM (ember-run passes it on to
    mpiexec, which ends the ranks), then SIGKILL, and fail."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        pytest.fail(f"{cmd} still running after {bound} s\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), time.monotonic() - start


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


ENV_SCRIPT = """\
import json, os, sys
names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
         "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "EMBER_RUN_RANKS_DIR"]
report = {"env": {n: os.environ.get(n) for n in names}, "argv": sys.argv, "path0": sys.path[0], "name": __name__}
sys.stdout.write(json.dumps(report) + "\\n")  # one write: print's two (text, newline) can interleave across ranks
"""


def rank_reports(stdout):
    reports = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return sorted(reports, key=lambda r: int(r["env"]["RANK"]))


def test_each_rank_gets_torchrun_variables_and_the_script_arguments(tmp_path):
    script = write(tmp_path / "show_env.py", ENV_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED")}
    # options after SCRIPT belong to it, even those ember-run knows (-n, --timeout)
    done, _ = run_job([*EMBER_RUN, "--nproc-per-node", "2", "--master-port", "1234", str(script),
                       "--lr", "0.1", "-n", "5", "--timeout", "x"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    reports = rank_reports(done.stdout)
    assert [r["env"] for r in reports] == [
        {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
         "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1234", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
         "EMBER_RUN_RANKS_DIR": None} for rank in (0, 1)]
    for r in reports:  # as under `python show_env.py ...`
        assert r["argv"] == [str(script), "--lr", "0.1", "-n", "5", "--timeout", "x"]
        assert r["path0"] == str(tmp_path) and r["name"] == "__main__"
    assert "OMP_NUM_THREADS=1" in done.stderr  # torchrun's notice


def test_two_hosts_give_local_ranks_and_host_indices(tmp_path):
    # localhost and 127.0.0.1 are two "hosts" to MPICH's hydra (both started locally, each with its own proxy)
    script = write(tmp_path / "show_env.py", ENV_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="3")
    done, _ = run_job([*EMBER_RUN, "--hosts", "localhost,127.0.0.1", "--nproc-per-node", "2", str(script)],
                      cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    envs = [r["env"] for r in rank_reports(done.stdout)]
    assert [(e["RANK"], e["WORLD_SIZE"], e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"]) for e in envs] == [
        ("0", "4", "0", "2", "0"), ("1", "4", "1", "2", "0"), ("2", "4", "0", "2", "1"), ("3", "4", "1", "2", "1")]
    assert {e["MASTER_ADDR"] for e in envs} == {"localhost"}
    assert {e["OMP_NUM_THREADS"] for e in envs} == {"3"}  # a value the user set is kept
    assert "OMP_NUM_THREADS=1" not in done.stderr


def test_modules_and_programs(tmp_path):
    write(tmp_path / "show_env_mod.py", ENV_SCRIPT)
    done, _ = run_job([*EMBER_RUN, "-n", "2", "-m", "show_env_mod", "a"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [(r["env"]["RANK"], r["argv"][1:]) for r in rank_reports(done.stdout)] == [("0", ["a"]), ("1", ["a"])]

    done, _ = run_job([*EMBER_RUN, "-n", "2", "--no-python", "printenv", "LOCAL_RANK"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["0", "1"]


def test_the_exit_status_is_the_failing_ranks(tmp_path):
    script = write(tmp_path / "exit3.py", """\
        import os, sys
        sys.exit(3 if os.environ["RANK"] == "1" else 0)
        """)
    done, _ = run_job([*EMBER_RUN, "-n", "2", str(script)], cwd=tmp_path)
    assert done.returncode == 3
    assert "ember-run: the job failed with exit status 3" in done.stderr


def test_timeout_ends_the_whole_job(tmp_path):
    script = write(tmp_path / "sleep.py", """\
        import time
        print("started", flush=True)
        time.sleep(60)
        """)
    # 5 s: both ranks must have started (Python's start takes over a second on a loaded 2-core machine)
    done, seconds = run_job([*EMBER_RUN, "-n", "2", "--timeout", "5", str(script)], cwd=tmp_path)
    print(f"--timeout 5: the job ended after {seconds:.2f} s")
    assert done.returncode == 124
    assert done.stdout.count("started") == 2
    assert "ran past --timeout 5 s" in done.stderr
    assert seconds < 15


def test_help_is_a_manual():
    console_script = Path(sys.executable).parent / "ember-run"
    done, _ = run_job([str(console_script), "--help"], cwd=None)
    assert done.returncode == 0
    manual = done.stdout
    for section in ("usage: ember-run", "which mpiexec:", "environment variables set on every rank:",
                    "example (train.py", "several hosts:", "failures and time limits:", "exit status:",
                    "without ember-run:"):
        assert section in manual
    for option in ("--nproc-per-node", "--nnodes", "--hostfile", "--hosts", "--master-addr", "--master-port",
                   "--timeout", "--mpiexec", "--mpiexec-args", "--module", "--no-python", "--dry-run"):
        assert option in manual
    for variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                     "MASTER_PORT", "OMP_NUM_THREADS", "EMBER_MPIEXEC"):
        assert f"{variable} " in manual or f"${variable}" in manual
    assert "DistributedSampler(" in manual and "set_epoch" in manual
    assert "mpiexec -n 2 python train.py" in manual


def test_no_mpiexec_names_what_to_install(tmp_path, monkeypatch, capsys):
    script = write(tmp_path / "t.py", "")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.delenv("EMBER_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run.main(["-n", "2", str(script)]) == 2
    err = capsys.readouterr().err
    assert "ember-run: error: no mpiexec found" in err
    assert "pip install mpich" in err and str(tmp_path / "bin" / "mpiexec") in err

    monkeypatch.setenv("EMBER_MPIEXEC", str(tmp_path / "nowhere"))
    assert run.main(["-n", "2", str(script)]) == 2
    assert f"$EMBER_MPIEXEC={tmp_path / 'nowhere'}: no such executable file" in capsys.readouterr().err


def test_dry_run_and_the_mpiexec_command(tmp_path, capsys):
    script = write(tmp_path / "t.py", "")
    hostfile = write(tmp_path / "hosts", "# two hosts\nnode1:4\nnode2\n")
    assert run.main(["--dry-run", "--mpiexec", sys.executable, "--hostfile", str(hostfile), "-n", "2",
                     "--mpiexec-args", "-bind-to core", str(script), "x"]) == 0
    words = capsys.readouterr().out.split()
    assert words[:7] == [sys.executable, "-n", "4", "-ppn", "2", "-f", str(hostfile)]
    assert words[words.index("MASTER_ADDR") + 1] == "node1"
    assert words[-7:] == ["-bind-to", "core", sys.executable, "-m", "ember.distributed._bootstrap", str(script), "x"]

    parse = run.build_parser().parse_args
    with pytest.raises(run.LaunchError, match="--nnodes 2 needs the hosts"):
        run.mpiexec_command(parse(["--nnodes", "2", "t.py"]), "mpiexec")
    with pytest.raises(run.LaunchError, match="--nnodes 3, but only 2 distinct hosts"):
        run.mpiexec_command(parse(["--nnodes", "3", "--hosts", "a,b", "t.py"]), "mpiexec")
    assert run.main(["--mpiexec", sys.executable, str(tmp_path / "missing.py")]) == 2
    assert "missing.py: no such file" in capsys.readouterr().err
    with pytest.raises(run.LaunchError, match="--mpiexec-args '-x \"a': No closing quotation"):
        run.mpiexec_command(parse(["--mpiexec-args", '-x "a', "t.py"]), "mpiexec")
    with pytest.raises(SystemExit):
        parse(["--nproc-per-node", "0", "t.py"])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


def test_bootstrap_needs_mpiexecs_variables():
    with pytest.raises(RuntimeError, match="PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS not set"):
        torchrun_environment({})


def test_the_report_believes_the_watchers_over_hydras_banner(capsys):
    from ember.distributed._rank_watch import RankRecord

    killed = RankRecord(1, 201, "vm", 101, ("signal", 9))
    killed_by_hydra = RankRecord(0, 200, "vm", 100, None)  # its watcher died with it: nothing recorded
    # hydra's banner may name the watcher of the rank it killed itself (pid 100), as it can under load
    run._report(9, [(100, "vm", 9)], {0: killed_by_hydra, 1: killed})
    assert capsys.readouterr().err.splitlines() == [
        "ember-run: rank 1 (pid 201 on vm) ended by signal 9 (SIGKILL)",
        "ember-run: the job failed with exit status 9"]
    # no watcher recorded anything (ranks on other hosts): the banner, mapped to ranks where the pid is known
    # (hydra's EXIT CODE is a signal's number or an exit code; a number that names a signal is read as one)
    run._report(111, [(100, "node0", 100), (555, "node1", 11)], {0: killed_by_hydra})
    assert capsys.readouterr().err.splitlines() == [
        "ember-run: rank 0 (pid 200 on vm) ended by code 100",
        "ember-run: pid 555 on node1 (rank unknown) ended by signal 11 (SIGSEGV)",
        "ember-run: the job failed with exit status 111"]
