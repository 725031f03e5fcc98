"""ember.device: parsing, repr, equality, errors; logical CPU devices; moving tensors between devices."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember

# -- parsing, repr, equality ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, type_, index, text, rep", [
    (("cpu",), "cpu", None, "cpu", "device(type='cpu')"),
    (("cpu:0",), "cpu", 0, "cpu:0", "device(type='cpu', index=0)"),
    (("cpu", 1), "cpu", 1, "cpu:1", "device(type='cpu', index=1)"),
    (("cuda:3",), "cuda", 3, "cuda:3", "device(type='cuda', index=3)"),
    (("strict",), "strict", None, "strict", "device(type='strict')"),
])
def test_device_parsing_and_repr(args, type_, index, text, rep):
    d = ember.device(*args)
    assert (d.type, d.index, str(d), repr(d)) == (type_, index, text, rep)


def test_device_equality_and_hash():
    assert ember.device("cpu:1") == ember.device("cpu", 1)
    assert hash(ember.device("cpu:1")) == hash(ember.device("cpu", 1))
    assert ember.device("cpu") != ember.device("cpu:0")  # as in PyTorch: an index is part of the value
    assert ember.device("cpu:0") != ember.device("cpu:1")
    assert ember.device("cpu") != ember.device("strict")
    assert len({ember.device("cpu"), ember.device("cpu"), ember.device("cpu", 1)}) == 2


def test_device_of_device_is_itself():
    d = ember.device("cpu", 1)
    assert ember.device(d) is d
    with pytest.raises(ValueError, match="index"):
        ember.device(d, 1)


@pytest.mark.parametrize("args, error, match", [
    (("cpu:x",), ValueError, "invalid device string 'cpu:x'"),
    (("cpu:",), ValueError, "invalid device string"),
    ((":1",), ValueError, "invalid device string"),
    (("cpu:1", 1), ValueError, "already has an index"),
    (("cpu", -1), ValueError, "non-negative"),
    ((5,), TypeError, "expects a string like 'cpu'"),
    ((None,), TypeError, "expects a string"),
])
def test_device_errors(args, error, match):
    with pytest.raises(error, match=match):
        ember.device(*args)


def test_tensor_device_property(device):
    t = ember.ones(2, device=device)
    assert t.device == ember.device(device)
    assert t.is_cpu == (device == "cpu") and t.is_cuda == (device == "cuda")


# -- logical CPU devices -----------------------------------------------------------------------------------------

def test_set_device_count_makes_more_cpus(two_cpus):
    assert ember.backends.cpu.device_count() == 2
    t = ember.zeros(2, device="cpu:1")
    assert t.device == ember.device("cpu", 1)
    assert repr(t) == "tensor([0., 0.], device='cpu:1')"
    assert t.get_device() == 1 and ember.zeros(1).get_device() == -1


def test_set_device_count_validates():
    with pytest.raises(ValueError, match="positive int"):
        ember.backends.cpu.set_device_count(0)
    with pytest.raises(ValueError, match="positive int"):
        ember.backends.cpu.set_device_count("2")


def test_nonexistent_device_errors(two_cpus):
    with pytest.raises(RuntimeError, match=r"device cpu:2 does not exist: backend 'cpu' has 2 device\(s\) "
                                           r"\(cpu:0, cpu:1\)"):
        ember.zeros(1, device="cpu:2")
    with pytest.raises(RuntimeError, match="device cpu:5 does not exist"):
        ember.ones(1).to("cpu:5")


def test_unknown_device_type_errors():
    with pytest.raises(RuntimeError, match="no ember backend for device type 'nosuchdevice'"):
        ember.zeros(1, device="nosuchdevice")


def _run_with_env(code, value):
    env = dict(os.environ, EMBER_CPU_DEVICES=value)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60)


def test_ember_cpu_devices_environment_variable():
    proc = _run_with_env("""
        import ember
        print(ember.backends.cpu.device_count())
        print(ember.ones(2, device="cpu:2").device)
        try:
            ember.ones(2, device="cpu:3")
        except RuntimeError as e:
            print(e)
    """, "3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["3", "cpu:2"]
    assert lines[2].startswith("device cpu:3 does not exist: backend 'cpu' has 3 device(s)")


def test_ember_cpu_devices_environment_variable_must_be_a_positive_int():
    proc = _run_with_env("""
        import ember
        ember.backends.cpu.device_count()
    """, "two")
    assert proc.returncode != 0
    assert "EMBER_CPU_DEVICES must be a positive integer, got 'two'" in proc.stderr


# -- moving tensors ------------------------------------------------------------------------------------------------

def test_to_another_cpu_copies_the_data(two_cpus):
    a = ember.tensor([1.0, 2.0])
    b = a.to("cpu:1")
    assert b.device == ember.device("cpu:1") and b.tolist() == [1.0, 2.0]
    assert b.data_ptr() != a.data_ptr()
    a.numpy()[0] = 9.0
    assert b.tolist() == [1.0, 2.0]
    back = b.to(ember.device("cpu"))
    assert back.device == ember.device("cpu") and back.tolist() == [1.0, 2.0]


def test_to_same_device_returns_self(two_cpus):
    a = ember.ones(2, device="cpu:1")
    assert a.to("cpu:1") is a
    assert a.to(ember.device("cpu", 1)) is a
    assert a.to("cpu:1", copy=True) is not a


def test_to_other_backend_and_cpu(device):
    a = ember.tensor([[1, 2], [3, 4]])
    b = a.to(device)
    assert b.device == ember.device(device) and b.dtype is ember.int64
    assert b.tolist() == [[1, 2], [3, 4]]
    c = b.cpu()
    assert c.device.type == "cpu" and c.tolist() == [[1, 2], [3, 4]]
    if device == "cpu":
        assert c is b


def test_to_with_device_and_dtype(two_cpus):
    a = ember.tensor([1, 2])
    b = a.to("cpu:1", ember.float64)
    assert b.device == ember.device("cpu:1") and b.dtype is ember.float64
    c = a.to(device="cpu:1", dtype=ember.float32)
    assert c.device == ember.device("cpu:1") and c.dtype is ember.float32
    d = a.to(b)  # like another tensor: its device and dtype
    assert d.device == b.device and d.dtype is b.dtype


def test_to_rejects_bad_arguments():
    with pytest.raises(TypeError, match="invalid argument"):
        ember.ones(1).to(3.5)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ember.ones(1).to(dtype=ember.float64, colour="red")


def test_creation_on_a_device(device):
    for t in (ember.zeros(2, device=device), ember.ones(2, device=device), ember.full((2,), 3.0, device=device),
              ember.tensor([1.0], device=device), ember.arange(3, device=device), ember.empty(2, device=device)):
        assert t.device == ember.device(device)
