"""Memory history: every allocation and free with its op, line and time; snapshots, the timeline plot, the summary."""
import gc
import json
import os
import sys

import pytest

import ember
import ember.nn as nn


@pytest.fixture(autouse=True)
def _clean():
    gc.collect()  # tensors of earlier tests in reference cycles must not die mid-test
    yield
    ember.memory.record_memory_history(None)
    ember.memory.set_memory_limit(None)


def _line():
    return sys._getframe(1).f_lineno


def _net_bytes(events, device="cpu:0"):
    return sum(e["size"] if e["action"] == "alloc" else -e["size"] for e in events
               if e["device"] == device and e["action"] in ("alloc", "free"))


def test_events_of_a_training_step_sum_to_memory_allocated():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    old = ember.ones(1000)  # made before recording: its free is recorded too
    at_start = ember.memory_allocated()
    ember.memory.record_memory_history()
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(ember.randn(16, 20)), ember.randint(0, 3, (16,)))
        loss.backward()
        opt.step()
    del old, loss
    snapshot = ember.memory.memory_snapshot()
    events = snapshot["events"]
    assert {e["action"] for e in events} == {"alloc", "free"}
    assert _net_bytes(events) == ember.memory_allocated() - at_start
    assert snapshot["devices"]["cpu:0"]["base"] == at_start
    assert snapshot["devices"]["cpu:0"]["allocated"] == ember.memory_allocated()
    assert any(e["op"] == "linear" for e in events) and any(e["op"] == "AddmmBackward0" for e in events)
    stats = ember.memory_stats()
    assert stats["allocated_bytes.all.allocated"] - stats["allocated_bytes.all.freed"] == _net_bytes(events)
    assert stats["allocation.all.allocated"] == sum(e["action"] == "alloc" for e in events)


def test_an_event_names_its_op_line_shape_and_time():
    x = ember.ones(10, 3)
    ember.memory.record_memory_history()
    y = x * 2; at = _line()  # noqa: E702
    del y
    alloc, free = ember.memory.memory_snapshot()["events"]
    assert (alloc["action"], alloc["size"], alloc["op"], alloc["shape"], alloc["dtype"]) == (
        "alloc", 120, "mul", [10, 3], "float32")
    assert alloc["frames"][0] == {"filename": __file__, "line": at,
                                  "name": "test_an_event_names_its_op_line_shape_and_time"}
    assert (free["action"], free["size"], free["op"], free["shape"]) == ("free", 120, "mul", [10, 3])
    assert 0 <= alloc["time"] <= free["time"]


def test_frames_skip_embers_own_code():
    model = nn.Linear(4, 4)
    ember.memory.record_memory_history()
    out = model(ember.ones(2, 4)); at = _line()  # noqa: E702
    events = ember.memory.memory_snapshot()["events"]
    made = [e for e in events if e["op"] == "linear"][0]
    assert made["frames"][0]["line"] == at and made["frames"][0]["filename"] == __file__
    assert not any("/ember/" in f["filename"] for e in events for f in e["frames"])
    del out


def test_snapshot_lists_the_live_tensors_made_while_recording():
    ember.memory.record_memory_history()
    keep = ember.zeros(7, 7)
    gone = ember.zeros(5)
    del gone
    tensors = ember.memory.memory_snapshot()["tensors"]
    assert [(t["shape"], t["op"]) for t in tensors] == [([7, 7], "zeros")]
    del keep


def test_max_entries_keeps_the_latest_and_the_sum_still_holds():
    at_start = ember.memory_allocated()
    ember.memory.record_memory_history(max_entries=3)
    kept = [ember.zeros(i + 1) for i in range(10)]
    snapshot = ember.memory.memory_snapshot()
    assert [e["size"] for e in snapshot["events"]] == [32, 36, 40]
    assert snapshot["devices"]["cpu:0"]["base"] == at_start + 4 * sum(range(1, 8))
    assert snapshot["devices"]["cpu:0"]["base"] + _net_bytes(snapshot["events"]) == ember.memory_allocated()
    del kept


def test_stopping_records_nothing_more_and_restarting_starts_afresh():
    ember.memory.record_memory_history()
    x = ember.zeros(3)
    ember.memory.record_memory_history(None)
    y = ember.zeros(4)
    del x
    snapshot = ember.memory.memory_snapshot()
    assert not snapshot["recording"] and [e["size"] for e in snapshot["events"]] == [12]
    assert snapshot["tensors"] == []
    assert "allocated_bytes.all.allocated" not in ember.memory_stats()
    ember.memory.record_memory_history(True)
    assert ember.memory.memory_snapshot()["events"] == []
    del y


def test_pytorchs_spelling_and_arguments():
    assert ember.memory._record_memory_history is ember.memory.record_memory_history
    ember.memory._record_memory_history(enabled="all", context="all", stacks="all", max_entries=100)
    x = ember.zeros(2)
    assert ember.memory.memory_snapshot()["max_entries"] == 100
    assert ember.memory.memory_snapshot()["events"][0]["size"] == 8
    del x


@pytest.mark.parametrize("kwargs, match", [({"enabled": "yes"}, "enabled must be True, 'all' or 'state'"),
                                           ({"max_entries": 0}, "max_entries must be a positive int")])
def test_bad_arguments_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ember.memory.record_memory_history(**kwargs)


def test_dump_snapshot_writes_json_atomically(tmp_path):
    ember.memory.record_memory_history()
    x = ember.zeros(100)
    path = tmp_path / "snap.json"
    path.write_text("old")
    ember.memory.dump_snapshot(path)
    loaded = json.loads(path.read_text())
    assert loaded["events"][0]["size"] == 400 and loaded["events"][0]["op"] == "zeros"
    assert os.listdir(tmp_path) == ["snap.json"]  # no temporary file left behind
    with pytest.raises(FileNotFoundError):
        ember.memory.dump_snapshot(tmp_path / "no such folder" / "snap.json")
    assert os.listdir(tmp_path) == ["snap.json"]
    del x


def test_plot_timeline_draws_a_png_from_a_snapshot_or_its_file(tmp_path):
    ember.memory.record_memory_history()
    xs = [ember.zeros(1000 * (i + 1)) for i in range(5)]
    del xs[1:3]
    ember.memory.dump_snapshot(tmp_path / "snap.json")
    for source, out in ((ember.memory.memory_snapshot(), "a.png"), (tmp_path / "snap.json", "b.png")):
        ember.memory.plot_timeline(source, tmp_path / out)
        data = (tmp_path / out).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    with pytest.raises(TypeError, match="memory_snapshot"):
        ember.memory.plot_timeline([1, 2], tmp_path / "c.png")
    del xs


def test_plot_timeline_names_the_extra_when_matplotlib_is_missing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"ember-core\[plot\]"):
        ember.memory.plot_timeline(ember.memory.memory_snapshot(), tmp_path / "x.png")


def test_memory_summary_has_the_numbers(two_cpus):
    before = ember.memory_allocated("cpu:1")
    ember.memory.reset_peak_memory_stats("cpu:1")
    ember.memory.record_memory_history()
    x = ember.zeros(25_600, device="cpu:1")  # 100 KiB
    y = ember.zeros(51_200, device="cpu:1")  # 200 KiB
    del y
    text = ember.memory.memory_summary("cpu:1")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()
            if line.count("|") == 6}
    kib = (before // 1024)
    assert rows["Allocated memory"] == [f"{kib + 100} KiB", f"{kib + 300} KiB", "300 KiB", "200 KiB"]
    assert rows["Reserved memory"][0] == f"{kib + 100} KiB"
    assert rows["Allocations"][2:] == ["2", "1"]
    assert "device cpu:1" in text and "history: recording" in text
    del x
