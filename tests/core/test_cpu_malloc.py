"""The CPU backend's malloc settings (``ember.backends.cpu_malloc``): a repeated training step stops paying page
faults for its arrays, unless the user says otherwise."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ember.backends import cpu_malloc

GLIBC = bool(cpu_malloc._glibc())
glibc_only = pytest.mark.skipif(not GLIBC, reason="the malloc thresholds are glibc's")

_STEPS = r"""
import resource, sys, ember
from ember import nn
from ember.backends import cpu_malloc
ember.manual_seed(0)
lstm = nn.LSTM(64, 128)
x = ember.randn(32, 16, 64)
def step():
    lstm.zero_grad()
    out, _ = lstm(x)
    out.sum().backward()
step(); step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
print(cpu_malloc.describe())
"""


def _run(**env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "EMBER_MALLOC_TUNING"}
    # ember's own LSTM kernel, whose few dozen arrays per step show the effect (ember-onednn's LSTM, when it is
    # installed, keeps its gates in one workspace block and faults little either way)
    environ["EMBER_ONEDNN_LIBRARY"] = ""
    result = subprocess.run([sys.executable, "-c", _STEPS], env={**environ, **env}, capture_output=True, text=True,
                            timeout=120, check=True)
    faults, state = result.stdout.strip().splitlines()
    return float(faults), state


@glibc_only
def test_a_repeated_step_reuses_its_memory_instead_of_faulting_in_fresh_pages():
    tuned_faults, tuned_state = _run()
    plain_faults, plain_state = _run(EMBER_MALLOC_TUNING="0")
    assert tuned_state.startswith("glibc malloc keeps freed arrays") and "32 MiB" in tuned_state
    assert plain_state == "not tuned: EMBER_MALLOC_TUNING=0"
    assert tuned_faults < 5, f"{tuned_faults} page faults per LSTM step with the thresholds set"
    assert plain_faults > 10 * (tuned_faults + 1), (plain_faults, tuned_faults)


@glibc_only
def test_the_users_own_malloc_settings_are_left_alone():
    _, state = _run(MALLOC_TRIM_THRESHOLD_="1000000")
    assert state == "not tuned: the environment sets glibc's malloc (MALLOC_*_ or GLIBC_TUNABLES)"


def test_what_tune_did_is_what_info_prints(monkeypatch):
    monkeypatch.setattr(cpu_malloc, "_state", cpu_malloc._state)  # restored after the test
    assert cpu_malloc.tune({"EMBER_MALLOC_TUNING": "0"}) == cpu_malloc.describe() == "not tuned: EMBER_MALLOC_TUNING=0"
    assert cpu_malloc.tune({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}).startswith("not tuned: the environment")
    assert cpu_malloc.tune({"EMBER_MALLOC_TUNING": "Off"}) == "not tuned: EMBER_MALLOC_TUNING=Off"
    with pytest.warns(RuntimeWarning, match=r"EMBER_MALLOC_TUNING='maybe' is not understood \(expected 1, true"):
        assert cpu_malloc.tune({"EMBER_MALLOC_TUNING": "maybe"}).startswith("not tuned: EMBER_MALLOC_TUNING='maybe'")
    monkeypatch.setattr(cpu_malloc, "_glibc", lambda: None)
    assert cpu_malloc.tune({}) == "not tuned: the C library is not glibc"


def test_info_shows_the_allocator_line():
    from ember.__main__ import status_lines

    (line,) = [s for s in status_lines() if s.startswith("CPU memory allocator: ")]
    assert line.endswith("[plugin ember.backends.cpu]") and cpu_malloc.describe() in line
