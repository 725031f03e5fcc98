"""ember.save to a path: killed saves leave no litter for long, symlinks are followed, a missing directory is named."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.errors import MissingDirectoryError
from ember.serialization import atomic

KILLER = textwrap.dedent("""
    import os, random, signal, sys, time
    import ember
    path, kills = sys.argv[1], int(sys.argv[2])
    data = {"w": ember.ones(1_000_000)}  # 4 MB: a save takes long enough to be killed mid-write
    ember.save(data, path)
    directory, name = os.path.split(path)
    rng = random.Random(0)
    for _ in range(kills):
        pid = os.fork()
        if pid == 0:
            try:
                while True:
                    ember.save(data, path)
            finally:
                os._exit(0)
        mine = f".{name}." + atomic_host + f".{pid}."
        deadline = time.monotonic() + 30
        while not any(e.startswith(mine) for e in os.listdir(directory)) and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, 0.01))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
""").replace("atomic_host", repr(atomic._HOST))


def temporaries(directory):
    return sorted(e for e in os.listdir(directory) if e.endswith(".tmp"))


@pytest.mark.timeout(120)
def test_saves_killed_mid_write_leave_no_temporaries_after_a_later_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    kills = 20
    subprocess.run([sys.executable, "-c", KILLER, str(path), str(kills)], check=True, timeout=100)
    left = temporaries(tmp_path)
    left_bytes = sum(os.path.getsize(tmp_path / e) for e in left)
    assert len(left) <= 1  # each new writer removed what the killed ones before it left
    ember.save({"w": ember.zeros(3)}, path)
    after = temporaries(tmp_path)
    print(f"\n{kills} kills mid-save: {len(left)} temporaries ({left_bytes} bytes) left by the loop, "
          f"{len(after)} after one more save")
    assert after == [] and os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert ember.load(path)["w"].tolist() == [0, 0, 0]


def test_only_temporaries_of_dead_processes_on_this_host_are_removed(tmp_path):
    path = tmp_path / "m.safetensors"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        names = {
            "live": f".m.safetensors.{atomic._HOST}.{sleeper.pid}.abcd_123.tmp",
            "dead": f".m.safetensors.{atomic._HOST}.{dead.pid}.abcd_123.tmp",
            "mine": f".m.safetensors.{atomic._HOST}.{os.getpid()}.abcd_123.tmp",  # another thread's save in progress
            "other host": f".m.safetensors.elsewhere-{atomic._HOST}.{dead.pid}.abcd_123.tmp",
            "other file": f".n.safetensors.{atomic._HOST}.{dead.pid}.abcd_123.tmp",
            "not a pid": f".m.safetensors.{atomic._HOST}.x{dead.pid}.abcd_123.tmp",
            "another target's": f".m.safetensors.{atomic._HOST}.{dead.pid}.{atomic._HOST}.{dead.pid}.abcd_123.tmp",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"partial")
        assert atomic.stale_temporaries(path) == [str(tmp_path / names["dead"])]
        ember.save({"a": 1}, path)
        assert sorted(temporaries(tmp_path)) == sorted(n for k, n in names.items() if k != "dead")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_temporary_is_named_with_host_and_pid_beside_the_target(tmp_path):
    seen = []

    def write(out):
        seen.extend(temporaries(tmp_path))
        out.write(b"x")

    atomic.write_atomically(tmp_path / "f.bin", write)
    prefix = f".f.bin.{atomic._HOST}.{os.getpid()}."
    assert seen[0].startswith(prefix) and seen[0].endswith(".tmp"), seen


def test_saving_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "model.safetensors"
    ember.save({"v": 1}, target)
    os.chmod(target, 0o640)
    link = link_dir / "latest.safetensors"
    link.symlink_to(target)
    ember.save({"v": 2, "w": ember.ones(2)}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert ember.load(target)["v"] == 2 and ember.load(link)["v"] == 2
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert os.listdir(link_dir) == ["latest.safetensors"] and os.listdir(real_dir) == ["model.safetensors"]


def test_saving_through_a_dangling_symlink_creates_its_target_as_open_would(tmp_path):
    link = tmp_path / "link.safetensors"
    link.symlink_to(tmp_path / "new.safetensors")
    ember.save({"v": 3}, link)
    assert link.is_symlink() and ember.load(tmp_path / "new.safetensors") == {"v": 3}


def test_saving_into_a_missing_directory_names_the_directory(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(MissingDirectoryError) as info:
        ember.save({"w": ember.zeros(1)}, missing / "ckpt.pt")
    err = info.value
    assert isinstance(err, FileNotFoundError) and isinstance(err, RuntimeError)  # open()'s and PyTorch's class
    assert f"Parent directory {missing} does not exist" in str(err) and ".tmp" not in str(err)
    assert err.errno == 2
    afile = tmp_path / "file"
    afile.write_bytes(b"")
    with pytest.raises(MissingDirectoryError, match="is not a directory"):
        ember.save({}, afile / "ckpt.pt")
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_relative_paths_and_file_objects_still_save(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ember.save({"w": ember.arange(3)}, "rel.safetensors")
    assert np.array_equal(ember.load("rel.safetensors")["w"].numpy(), [0, 1, 2])
    with open(tmp_path / "f.safetensors", "wb") as f:
        ember.save({"v": 1}, f)
    assert ember.load(tmp_path / "f.safetensors") == {"v": 1} and temporaries(tmp_path) == []


def test_a_dead_pid_is_recognized():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not atomic._alive(proc.pid) and atomic._alive(os.getpid())
