"""Every hook through which a plugin adds to ember.tune, documented in one place.

The built-in searchers, schedulers and executors are plugins like any other:
each module (``ember.tune.searchers.random``, ...) implements one of these hooks
and is registered by :mod:`ember.tune.registry` through the same call a third
party uses. A third-party plugin ships an entry point in the ``ember`` group::

    # pyproject.toml of a plugin
    [project.entry-points.ember]
    my_searcher = "my_package.tune_plugin"

    # my_package/tune_plugin.py
    import ember

    @ember.hookimpl
    def ember_tune_searchers():
        return {"my_searcher": MySearcher}

Each hook returns ``{name: class}``; a plugin offering a name another plugin
already offers is refused at registration, with an error that names both
(ember reads these hooks through :func:`ember.collect_claims`, like its own).
``TuneConfig(search_alg="my_searcher")`` then finds it.

:func:`ember_tune_callbacks` is the exception: it returns callback instances for one run, so that a
plugin (an experiment tracker, a notifier) joins every ``Tuner.fit`` without the user listing it.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")


@hookspec
def ember_tune_searchers():
    """Return ``{name: Searcher subclass}``: searchers this plugin provides (see :class:`ember.tune.Searcher`)."""


@hookspec
def ember_tune_schedulers():
    """Return ``{name: Scheduler subclass}``: trial schedulers this plugin provides
    (see :class:`ember.tune.Scheduler`)."""


@hookspec
def ember_tune_executors():
    """Return ``{name: Executor subclass}``: trial executors this plugin provides (see :class:`ember.tune.Executor`)."""


@hookspec
def ember_tune_callbacks(run_config):
    """Return a list of :class:`ember.tune.Callback` instances (or None) to add to a run whose
    :class:`ember.tune.RunConfig` is ``run_config``; they are called after ``run_config.callbacks``.

    >>> import ember
    >>> from ember import tune
    >>> class Notify:
    ...     @ember.hookimpl
    ...     def ember_tune_callbacks(self, run_config):
    ...         return [tune.Callback()] if run_config.verbose else None
    """
