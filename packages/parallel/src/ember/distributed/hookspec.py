"""Every hook through which a plugin adds to ember.distributed, documented in one place.

The built-in backends (``mpi``, ``nccl``, ``auto``) are plugins like any other: each module of
:mod:`ember.distributed.backends` implements ``ember_distributed_backends`` and :mod:`ember.distributed.registry`
registers it through the same call a third party uses. A third-party plugin (a backend for another accelerator's
tensors, say) ships an entry point in the ``ember`` group::

    # pyproject.toml of a plugin
    [project.entry-points.ember]
    my_backend = "my_package.dist_plugin"

    # my_package/dist_plugin.py
    import ember

    @ember.hookimpl
    def ember_distributed_backends():
        return {"xccl": make_xccl_backend}

A backend name another plugin already offers is refused at registration, with an error naming both plugins.
``init_process_group(backend="xccl")`` then finds it.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")


@hookspec
def ember_distributed_backends():
    """Return ``{name: factory}``: process-group backends this plugin provides.

    ``factory(rank, world_size, timeout)`` is called by ``init_process_group`` on every rank; ``rank`` and
    ``world_size`` are what the caller or the launcher (``RANK``, ``WORLD_SIZE``) said, -1 where nothing did, and
    ``timeout`` is a ``datetime.timedelta``. It returns the :class:`ember.distributed.backend.Backend` of the
    default group, having checked that its own idea of rank and size agrees with given ones.
    """
