"""Module hooks: forward pre-hooks, forward hooks, full backward (pre-)hooks, their global versions, and the call.

A module without hooks pays nothing for them: ``__call__`` checks one dict
(the ids of this module's call-path hooks; every ``register_*`` method and
every handle's ``remove`` keeps it up to date) and one global one, then calls
``forward`` directly. Hooks must therefore be added through the ``register_*``
methods, not by writing into ``_forward_hooks`` and friends.

>>> import ember
>>> from ember import nn
>>> lin = nn.Linear(2, 2, bias=False)
>>> _ = lin.weight.data.fill_(1)
>>> handle = lin.register_forward_hook(lambda module, args, output: output + 5)
>>> lin(ember.ones(1, 2))
tensor([[7., 7.]], grad_fn=<AddBackward0>)
>>> handle.remove()
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

from ember import Tensor

from ..utils.hooks import RemovableHandle
from ._backward_hook import BackwardHook

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = {}
_global_forward_hooks_always_called: dict = {}
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_call_hook_ids: dict = {}  # ids of every global hook above: empty means no global hook to run


def _add(hooks, hook, prepend=False, flags=()):
    """Put ``hook`` in ``hooks`` (first if ``prepend``), with its id also in each dict of ``flags``."""
    if not callable(hook):
        raise TypeError(f"a hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(hooks, extra_dict=list(flags))
    hooks[handle.id] = hook
    for flag in flags:
        flag[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, args)`` before every module's forward (all modules); may return new args."""
    return _add(_global_forward_pre_hooks, hook, flags=[_global_call_hook_ids])


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` after every module's forward (all modules); may return a new output."""
    flags = ([_global_forward_hooks_with_kwargs] if with_kwargs else []) \
        + ([_global_forward_hooks_always_called] if always_call else [])
    return _add(_global_forward_hooks, hook, flags=flags + [_global_call_hook_ids])


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, grad_output)`` for every module when its output gradients are known."""
    return _add(_global_backward_pre_hooks, hook, flags=[_global_call_hook_ids])


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` for every module when its input gradients are known."""
    return _add(_global_backward_hooks, hook, flags=[_global_call_hook_ids])


class _ModuleHook:
    """A node hook that also passes the module: ``hook(module, *args)`` (legacy backward hooks)."""

    def __init__(self, hook, module):
        self.hook, self.module = hook, module

    def __call__(self, *args):
        return self.hook(self.module, *args)


class HooksMixin:
    """The hook registration methods and ``__call__`` of :class:`~ember.nn.Module`."""

    # -- registration -----------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` runs before ``forward``; a non-None return replaces ``args``.

        With ``with_kwargs=True`` it is ``hook(module, args, kwargs)`` and returns
        None or ``(new_args, new_kwargs)``. ``prepend=True`` runs it before the others.
        """
        flags = [self._forward_pre_hooks_with_kwargs] if with_kwargs else []
        return _add(self._forward_pre_hooks, hook, prepend, flags + [self._call_hook_ids])

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` runs after ``forward``; a non-None return replaces the output.

        ``with_kwargs=True``: ``hook(module, args, kwargs, output)``. ``always_call=True``:
        it runs even when ``forward`` raises.
        """
        flags = ([self._forward_hooks_with_kwargs] if with_kwargs else []) \
            + ([self._forward_hooks_always_called] if always_call else [])
        return _add(self._forward_hooks, hook, prepend, flags + [self._call_hook_ids])

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` runs when the output gradients are known; may return new ones."""
        return _add(self._backward_pre_hooks, hook, prepend, [self._call_hook_ids])

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` runs when the input gradients are known; may return new ones.

        ``grad_input`` holds None for inputs that are not tensors or need no gradient.
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        return _add(self._backward_hooks, hook, prepend, [self._call_hook_ids])

    def register_backward_hook(self, hook):
        """Legacy backward hook on the last op of ``forward``; prefer :meth:`register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        return _add(self._backward_hooks, hook, flags=[self._call_hook_ids])

    def _get_backward_hooks(self):
        full, legacy = [], []
        full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            legacy += self._backward_hooks.values()
        return full, legacy

    # -- the call ---------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._call_hook_ids or _global_call_hook_ids:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_hooks(self, args, kwargs):
        called = set()
        result = None
        try:
            full, legacy = self._get_backward_hooks()
            pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            args, kwargs = self._run_forward_pre_hooks(args, kwargs)
            bw_hook = None
            if full or pre:
                bw_hook = BackwardHook(self, full, pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            if bw_hook is not None:
                bw_hook.sync_inputs()
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}")
                else:
                    result = bw_hook.setup_output_hook(result)
            if legacy:
                self._attach_legacy_backward_hooks(result, legacy)
            return result
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called)
            raise

    def _run_forward_pre_hooks(self, args, kwargs):
        for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {out}.")
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        return args, kwargs

    def _run_always_called_hooks(self, args, kwargs, result, called):
        """After ``forward`` (or a hook) raised: the ``always_call`` forward hooks that have not run yet."""
        for hooks, always, with_kwargs in (
                (_global_forward_hooks, _global_forward_hooks_always_called, _global_forward_hooks_with_kwargs),
                (self._forward_hooks, self._forward_hooks_always_called, self._forward_hooks_with_kwargs)):
            for hook_id, hook in hooks.items():
                if hook_id not in always or hook_id in called:
                    continue
                try:
                    out = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
                    if out is not None:
                        result = out
                except Exception as exc:
                    warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced as "
                                  f"another error was raised in forward: {exc}")

    def _attach_legacy_backward_hooks(self, result, hooks):
        var = result
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
        if var.grad_fn is not None:
            for hook in hooks:
                var.grad_fn.register_hook(_ModuleHook(hook, self))
