"""Shared fixtures: the backends every core op test runs on."""
import pytest

import ember

#: device types the core op tests run on: the built-in NumPy backend and the
#: third-party example plugin (examples/plugins/ember-array-api-strict)
BACKENDS = ["cpu", "strict"]


@pytest.fixture(params=BACKENDS)
def device(request):
    """A device string; tests using it run once per backend."""
    if request.param not in ember.list_backends():
        pytest.fail(f"backend {request.param!r} is not installed: run "
                    "`pip install -e examples/plugins/ember-array-api-strict` (the README's test command does)")
    return request.param


@pytest.fixture
def two_cpus():
    """Two logical CPU devices (cpu:0, cpu:1) for the test; the previous count is restored after."""
    before = ember.backends.cpu.device_count()
    ember.backends.cpu.set_device_count(2)
    yield
    ember.backends.cpu.set_device_count(before)
