"""Claims with a priority (``ember.Claim``): a plugin replaces a built-in kernel; equal priorities still clash."""
import pytest

import ember
from ember.__main__ import override_lines
from ember.backends.cpu_kernels import convolution as built_in_kernels


@pytest.fixture(autouse=True)
def built_in_convolutions():
    """These tests set their plugins against the built-in CPU backend alone: an installed plugin that replaces the
    convolution kernels (ember-onednn) is taken out for each test, and registered again after it."""
    owner = ember.collect_claims("ember_op_kernels", backend=ember.device("cpu").backend)["convolution"][1]
    taken = [] if owner in ember._plugins.BUILTIN_PLUGINS else [(owner, ember.get_plugin_manager().get_plugin(owner))]
    for name, _ in taken:
        ember.unregister_plugin(name)
    yield
    for name, plugin in taken:
        ember.register_plugin(plugin, name)


def _conv_plugin(priority, calls):
    class Conv:
        @ember.hookimpl
        def ember_op_kernels(self, backend):
            if backend.name != "cpu":
                return {}

            def kernel(ctx, xp, *arrays, **attrs):  # records its calls, computes as the built-in does
                calls.append(attrs)
                return BUILT_IN(ctx, xp, *arrays, **attrs)
            value = kernel if priority is None else ember.Claim(kernel, priority=priority)
            return {"convolution": value}
    return Conv()


BUILT_IN = built_in_kernels.KERNELS["convolution"]


def test_a_higher_priority_replaces_the_built_in_kernel_and_info_says_so():
    import ember.nn.functional as F
    calls = []
    x, w = ember.arange(16.0).reshape(1, 1, 4, 4), ember.ones(1, 1, 2, 2)
    before = F.conv2d(x, w)
    name = ember.register_plugin(_conv_plugin(1, calls), "fast-conv")
    try:
        assert ember._plugins.op_kernels("cpu")["convolution"] is not BUILT_IN
        after = F.conv2d(x, w)
        assert calls and ember.equal(before, after)
        assert "op convolution on cpu: plugin fast-conv (over ember.backends.cpu)" in override_lines()
    finally:
        ember.unregister_plugin(name)
    assert ember._plugins.op_kernels("cpu")["convolution"] is BUILT_IN
    assert override_lines() == ["none: every op kernel, CPU kernel and lowering has one plugin"]


def test_a_lower_priority_claim_loses_and_is_listed_as_overridden():
    calls = []
    name = ember.register_plugin(_conv_plugin(-1, calls), "slow-conv")
    try:
        assert ember._plugins.op_kernels("cpu")["convolution"] is BUILT_IN
        assert "op convolution on cpu: plugin ember.backends.cpu (over slow-conv)" in override_lines()
    finally:
        ember.unregister_plugin(name)


@pytest.mark.parametrize("priority", [None, 0])
def test_equal_priorities_still_clash_and_name_both_plugins(priority):
    with pytest.raises(ember.PluginError, match=r"'convolution' on backend 'cpu' is given by both plugin "
                                                r"'ember.backends.cpu' and plugin 'same-conv'.*same priority \(0\)"):
        ember.register_plugin(_conv_plugin(priority, []), "same-conv")
    assert "same-conv" not in ember._plugins.plugin_names()


def test_two_plugins_above_the_built_in_with_one_priority_clash():
    first = ember.register_plugin(_conv_plugin(2, []), "conv-a")
    try:
        with pytest.raises(ember.PluginError, match=r"plugin 'conv-a' and plugin 'conv-b'.*same priority \(2\)"):
            ember.register_plugin(_conv_plugin(2, []), "conv-b")
    finally:
        ember.unregister_plugin(first)


def test_a_priority_must_be_an_int():
    with pytest.raises(TypeError, match="Claim priority must be an int"):
        ember.Claim(len, priority=1.5)
    with pytest.raises(TypeError, match="Claim priority must be an int"):
        ember.Claim(len, priority=True)
