"""The state dict of a Module: ``state_dict``, ``load_state_dict`` and their hooks.

Keys are dotted paths (``fc.weight``) in PyTorch's order: a module's own
parameters, then its persistent buffers, then each submodule's entries.

>>> import ember
>>> from ember import nn
>>> net = nn.Sequential(nn.Linear(2, 3), nn.Identity(), nn.Linear(3, 1))
>>> list(net.state_dict())
['0.weight', '0.bias', '2.weight', '2.bias']
>>> nn.Linear(2, 1).load_state_dict({"weight": ember.zeros(1, 2)}, strict=False)
_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])
"""
from __future__ import annotations

import functools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ember import Tensor, no_grad

from ..parameter import Parameter
from ..utils.hooks import RemovableHandle

__all__: list = []

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find and the keys it did not use."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _quoted(keys) -> str:
    return ", ".join(f'"{k}"' for k in keys)


class _WithModule:
    """Calls ``hook(module, *args)`` with a module it refers to weakly."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = weakref.ref(module)
        functools.update_wrapper(self, hook)

    def __call__(self, *args, **kwargs):
        return self.hook(self.module(), *args, **kwargs)


class StateDictMixin:
    """``state_dict``/``load_state_dict`` of :class:`~ember.nn.Module`, and the hooks around them."""

    # -- saving -----------------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Put this module's own parameters and persistent buffers into ``destination`` (not submodules')."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not StateDictMixin.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict from dotted name to tensor of every parameter and persistent buffer.

        The tensors share memory with the module (detached unless ``keep_vars``).
        """
        if args:  # the old positional form: state_dict(destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def get_extra_state(self):
        """Extra (non-tensor) state to save in ``state_dict``; override together with :meth:`set_extra_state`."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state) -> None:
        """Restore what :meth:`get_extra_state` returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # -- loading ----------------------------------------------------------------------------------------------
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Copy this module's own entries from ``state_dict``; record missing/unexpected keys and errors.

        Layers override it to adapt old checkpoints (``local_metadata["version"]``).
        """
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected ember.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        self._assign(name, param, value)
                    else:
                        param.copy_(value)
            except Exception as ex:  # noqa: BLE001 -- reported with the key, as PyTorch does
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {value.size()}, an "
                                  f"exception occurred : {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not StateDictMixin.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if (dot and head not in self._modules) or (not dot and head not in local_state):
                        unexpected_keys.append(key)

    def _assign(self, name, param, value):
        """``load_state_dict(assign=True)``: the checkpoint's tensor becomes the module's (keeping requires_grad)."""
        if isinstance(param, Parameter):
            value = Parameter(value, requires_grad=param.requires_grad) if not isinstance(value, Parameter) \
                else value.requires_grad_(param.requires_grad)
        setattr(self, name, value)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module and its submodules.

        With ``strict=True`` (the default) every key must match; a missing or
        unexpected key, or a tensor of another shape, raises ``RuntimeError``
        naming them all. Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.
        ``assign=True`` makes the checkpoint's tensors the module's own instead of copying.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, local_state, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise RuntimeError("load_state_dict post-hook must return None")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
            if missing:
                errors.insert(0, f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # -- hooks ------------------------------------------------------------------------------------------------
    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` collects this module's entries."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``; it edits in place."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        """Like :meth:`register_state_dict_post_hook`, but a returned dict replaces the state dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """``hook(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)`` before loading
        this module's entries (``hook(module, ...)`` with ``with_module=True``)."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WithModule(hook, self) if with_module else hook
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        runs before this module's entries load; it may edit ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after loading; it may edit the missing/unexpected lists."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle
