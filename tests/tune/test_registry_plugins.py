"""ember.tune's components come from plugins read through ember.collect_claims: clashes named, third parties found."""
import pytest

import ember
from ember.tune import registry
from ember.tune.searchers.base import Searcher
from ember.tune.searchers.random import RandomSearcher


class MySearcher(Searcher):
    def suggest(self, trial_id):
        return {}


@pytest.fixture
def tune_plugins():
    """Register plugins for one test (after the built-in tune plugins) and unregister them afterwards."""
    registry.available("searcher")  # the built-ins first
    names = []
    yield lambda plugin, name: names.append(ember.register_plugin(plugin, name))
    for name in names:
        if ember.get_plugin_manager().get_plugin(name) is not None:
            ember.unregister_plugin(name)


def test_a_third_party_searcher_is_found_by_name_and_gone_when_unregistered(tune_plugins):
    class Plugin:
        @ember.hookimpl
        def ember_tune_searchers(self):
            return {"mine": MySearcher}

    tune_plugins(Plugin(), "my-searchers")
    assert registry.get("searcher", "mine") is MySearcher
    assert isinstance(registry.resolve("searcher", "mine"), MySearcher)
    ember.unregister_plugin("my-searchers")
    with pytest.raises(ValueError, match=r"unknown searcher 'mine'; known: \[.*'random'"):
        registry.get("searcher", "mine")


def test_a_name_taken_by_a_built_in_is_refused_at_registration_naming_both(tune_plugins):
    class Clashing:
        @ember.hookimpl
        def ember_tune_searchers(self):
            return {"random": MySearcher}

    with pytest.raises(ember.PluginError, match="'random' is given by both plugin 'ember.tune.searchers.random' "
                                                "and plugin 'clashing' \\(hook ember_tune_searchers\\)"):
        tune_plugins(Clashing(), "clashing")
    assert ember.get_plugin_manager().get_plugin("clashing") is None
    assert registry.get("searcher", "random") is RandomSearcher  # the registry still works, unchanged
    assert (ember.tensor([1.0]) + 1).tolist() == [2.0]


def test_the_registry_reads_claims_through_the_public_collect_claims():
    available = registry.available("scheduler")  # loads the tune hooks and built-ins
    claims = ember.collect_claims("ember_tune_schedulers", "the tune scheduler {key}")
    assert {name: cls for name, (cls, _) in claims.items()} == available
    assert claims["asha"][1] == "ember.tune.schedulers.asha"
