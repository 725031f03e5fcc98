"""Plugins are called as pluggy calls them, and a registration that fails leaves the registry as it was.

Each test registers a misbehaving plugin: hook arguments by name (in another order, a subset), wrappers,
a hook that raises while the claims are checked, a clash, a result of the wrong kind.
"""
import re

import pytest

import ember
from ember import _plugins
from ember.backends import cpu
from ember.ops.arith import Neg

from .test_plugins import BackendPlugin, KernelPlugin, run_python


def snapshot() -> tuple:
    """Everything the registry gives: plugin names, backends, each backend's kernels, ONNX lowerings."""
    backends = dict(_plugins.backends())
    return (_plugins.plugin_names(), backends, {name: dict(_plugins.op_kernels(name)) for name in backends},
            dict(_plugins.onnx_lowerings()))


def assert_registry_works(before: tuple) -> None:
    """The registry is what it was before, and ops run (their kernels are looked up again) as before."""
    assert snapshot() == before
    assert (ember.tensor([1.0]) + 1).tolist() == [2.0]
    assert (-ember.tensor([1.0, -2.0])).tolist() == [-1.0, 2.0]
    assert ember.device("cpu").backend is cpu.BACKEND
    assert (ember.tensor([1.0], device="strict") * 3).tolist() == [3.0]


class Boom(Exception):
    pass


# -- arguments by name -------------------------------------------------------------------

def test_hook_arguments_are_given_by_name_in_any_order_and_as_a_subset():
    # a fresh interpreter, so that the hook spec this test adds does not stay in the shared plugin manager
    proc = run_python("""
        import ember, pluggy
        spec = pluggy.HookspecMarker("ember")

        class Specs:
            @spec
            def ember_test_pairs(first, second):
                "Return {name: value}."

        class Reversed:
            @ember.hookimpl
            def ember_test_pairs(self, second, first):
                return {"reversed": (first, second)}

        class OnlySecond:
            @ember.hookimpl
            def ember_test_pairs(self, second):
                return {"only-second": second}

        class NoArguments:
            @ember.hookimpl
            def ember_test_pairs(self):
                return {"none": ()}

        ember.get_plugin_manager().add_hookspecs(Specs)
        for plugin in (Reversed(), OnlySecond(), NoArguments()):
            ember.register_plugin(plugin, type(plugin).__name__)
        print(sorted(ember.collect_claims("ember_test_pairs", "{key}", first=1, second=2).items()))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("[('none', ((), 'NoArguments')), ('only-second', (2, 'OnlySecond')), "
                                   "('reversed', ((1, 2), 'Reversed'))]")


def test_kernel_hook_without_the_backend_argument_gives_its_kernels_for_every_backend(registered):
    class EveryBackend:
        @ember.hookimpl
        def ember_op_kernels(self):
            return {"neg": lambda ctx, xp, a: xp.negative(a) * 10}

    registered(EveryBackend(), "every-backend")
    assert (-ember.tensor([1.0])).tolist() == [-10.0]
    assert (-ember.tensor([1.0], device="strict")).tolist() == [-10.0]
    ember.unregister_plugin("every-backend")
    assert (-ember.tensor([1.0])).tolist() == [-1.0]


def test_a_plugin_can_implement_one_hook_under_two_names_through_specname(registered):
    class TwoParts:
        @ember.hookimpl(specname="ember_op_kernels")
        def negation(self, backend):
            return {"neg": lambda ctx, xp, a: xp.negative(a) * 2}

        @ember.hookimpl(specname="ember_op_kernels")
        def nothing_else(self, backend):
            return None

    registered(TwoParts(), "two-parts")
    assert (-ember.tensor([1.0])).tolist() == [-2.0]


# -- wrappers --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["wrapper", "hookwrapper"])
@pytest.mark.parametrize("hook", ["ember_backends", "ember_op_kernels", "ember_onnx_lowerings"])
def test_a_hook_wrapper_is_refused_at_registration_saying_why(registered, kind, hook):
    def wrap(self):
        return (yield)

    def wrap_kernels(self, backend):
        return (yield)

    wrapper = ember.hookimpl(**{kind: True})(wrap_kernels if hook == "ember_op_kernels" else wrap)
    plugin = type("Wrapping", (), {hook: wrapper})()
    before = snapshot()
    with pytest.raises(ember.PluginError,
                       match=rf"plugin 'wrapping' \('.*Wrapping'\) implements {hook} with {kind}=True; ember's hooks "
                             r"gather claims .* return your claims from a plain @ember.hookimpl"):
        registered(plugin, "wrapping")
    assert_registry_works(before)


def test_a_wrapper_on_an_ember_tune_hook_is_refused_too(registered):
    class Wrapping:
        @ember.hookimpl(wrapper=True)
        def ember_tune_searchers(self):
            return (yield)

    with pytest.raises(ember.PluginError, match="implements ember_tune_searchers with wrapper=True"):
        registered(Wrapping(), "wrapping-tune")
    assert "wrapping-tune" not in _plugins.plugin_names()


# -- exceptions while the claims are checked: rolled back, the raising plugin named --------

def test_a_kernel_hook_that_raises_is_a_plugin_error_and_the_plugin_is_not_left_registered(registered):
    class Raising:
        @ember.hookimpl
        def ember_op_kernels(self, backend):
            raise Boom("no kernels today")

    before = snapshot()
    with pytest.raises(ember.PluginError, match=r"plugin 'raising' raised Boom in its hook ember_op_kernels: "
                                                r"no kernels today") as info:
        registered(Raising(), "raising")
    assert isinstance(info.value.__cause__, Boom)
    assert_registry_works(before)


@pytest.mark.parametrize("hook", ["ember_backends", "ember_onnx_lowerings"])
def test_other_hooks_that_raise_are_rolled_back_too(registered, hook):
    def boom(self):
        raise Boom(hook)

    before = snapshot()
    with pytest.raises(ember.PluginError, match=f"plugin 'raising' raised Boom in its hook {hook}"):
        registered(type("Raising", (), {hook: ember.hookimpl(boom)})(), "raising")
    assert_registry_works(before)


def test_an_existing_plugin_raising_for_a_new_backend_is_named_and_only_the_new_one_is_rolled_back(registered):
    class PickyKernels:
        @ember.hookimpl
        def ember_op_kernels(self, backend):
            if backend.name == "weird":
                raise Boom("cannot handle weird")
            return {"neg": Neg.forward} if backend.name == "cpu" else {}

    registered(PickyKernels(), "picky")
    before = snapshot()
    weird = type(cpu.BACKEND)()
    weird.name = "weird"
    with pytest.raises(ember.PluginError, match=r"plugin 'picky' raised Boom in its hook ember_op_kernels: "
                                                r"cannot handle weird"):
        registered(BackendPlugin(weird), "weird-backend")
    assert_registry_works(before)
    assert "picky" in _plugins.plugin_names()


def test_an_exception_that_is_no_error_is_not_wrapped_but_still_rolled_back(registered):
    class Interrupt(BaseException):
        pass

    class Interrupted:
        @ember.hookimpl
        def ember_backends(self):
            raise Interrupt

    before = snapshot()
    with pytest.raises(Interrupt):
        registered(Interrupted(), "interrupted")
    assert_registry_works(before)


# -- clashes, invalid plugins and results: the registry is unchanged -------------------------

def test_a_backend_clash_leaves_the_registry_unchanged(registered):
    before = snapshot()
    with pytest.raises(ember.PluginError, match="the backend for device type 'cpu' is given by both plugin "
                                                "'ember.backends.cpu' and plugin 'twin'"):
        registered(BackendPlugin(type(cpu.BACKEND)()), "twin")
    assert_registry_works(before)


def test_a_kernel_clash_leaves_the_first_kernel_in_place(registered):
    registered(KernelPlugin("cpu", {"neg": lambda ctx, xp, a: xp.negative(a) * 2}), "first")
    before = snapshot()
    with pytest.raises(ember.PluginError, match="the kernel of op 'neg' on backend 'cpu' is given by both plugin "
                                                "'first' and plugin 'second'"):
        registered(KernelPlugin("cpu", {"neg": Neg.forward}), "second")
    assert snapshot() == before
    assert (-ember.tensor([1.0])).tolist() == [-2.0]


def test_an_invalid_hook_implementation_leaves_the_registry_unchanged(registered):
    class Invalid:
        @ember.hookimpl
        def ember_backends(self, device):
            return []

    before = snapshot()
    with pytest.raises(ember.PluginError, match="plugin 'invalid' .* is not a valid ember plugin"):
        registered(Invalid(), "invalid")
    assert_registry_works(before)


@pytest.mark.parametrize("result", ["cpu", 3, [object()], {1, 2}])
def test_a_result_of_the_wrong_kind_names_the_plugin_and_what_was_expected(registered, result):
    class Odd:
        @ember.hookimpl
        def ember_backends(self):
            return result

    before = snapshot()
    with pytest.raises(ember.PluginError, match=rf"plugin 'odd''s hook ember_backends returned "
                                                rf"{type(result).__name__} .*; expected a dict {{key: value}}, "
                                                r"a list of objects with a str .name, or None"):
        registered(Odd(), "odd")
    assert_registry_works(before)


def test_one_plugin_object_under_two_names_is_refused(registered):
    plugin = KernelPlugin("cpu", {})
    registered(plugin, "once")
    with pytest.raises(ember.PluginError, match=r"'.*KernelPlugin' is already registered as plugin 'once'; "
                                                r"it cannot be registered again as 'twice'"):
        registered(plugin, "twice")
    assert "twice" not in _plugins.plugin_names()


def test_an_unhashable_plugin_is_refused_saying_why(registered):
    class Unhashable:
        __hash__ = None

        @ember.hookimpl
        def ember_backends(self):
            return []

    before = snapshot()
    with pytest.raises(ember.PluginError, match="plugin 'unhashable' .* is not hashable; ember calls each "
                                                "plugin's hooks through pluggy's subset_hook_caller"):
        registered(Unhashable(), "unhashable")
    assert_registry_works(before)


# -- collect_claims, the public way to read a hook ---------------------------------------------

def test_collect_claims_names_the_plugin_of_each_claim(registered):
    registered(KernelPlugin("cpu", {"neg": Neg.forward}), "neg-kernel")
    claims = ember.collect_claims("ember_op_kernels", "the kernel of op {key}", backend=cpu.BACKEND)
    assert claims["neg"] == (Neg.forward, "neg-kernel")
    assert ember.collect_claims("ember_backends")["cpu"] == (cpu.BACKEND, "ember.backends.cpu")


def test_collect_claims_of_an_unknown_hook_lists_the_known_ones():
    with pytest.raises(ember.PluginError, match=re.escape("no ember hook named 'ember_nope' has a specification; "
                                                          "known hooks: [") + ".*'ember_backends'"):
        ember.collect_claims("ember_nope")
