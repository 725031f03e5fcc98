"""Fixtures shared by the ember.tune tests."""
import pytest

from ember.tune.executors.local import LocalExecutor


@pytest.fixture
def executor():
    """A LocalExecutor for two trials at a time on four CPUs; shut down (no process left) after the test.
    (The Ray executor's tests define their own.)"""
    ex = LocalExecutor(max_concurrent=2, num_cpus=4)
    yield ex
    ex.shutdown(timeout=5.0)
    assert ex.running == []
