"""Fixtures shared by the core tests."""
import pytest

import ember
from ember import _plugins


@pytest.fixture
def registered():
    """``ember.register_plugin``, with whatever a test registered unregistered afterwards."""
    before = set(_plugins.plugin_names())
    yield ember.register_plugin
    for name in set(_plugins.plugin_names()) - before:
        ember.unregister_plugin(name)
    assert set(_plugins.plugin_names()) == before
