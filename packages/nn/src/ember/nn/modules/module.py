"""Module: the base class of every layer and model.

This file holds the registries (parameters, buffers, submodules), attribute
handling, the iterators over them, train/eval, dtype and device conversion and
``print(model)``. Hooks and the call path live in ``_hooks.py``, the state
dict in ``_state_dict.py``; ``Module`` combines them.

>>> import ember
>>> from ember import nn
>>> class Net(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.fc = nn.Linear(3, 2)
...         self.register_buffer("steps", ember.zeros(1))
...     def forward(self, x):
...         return self.fc(x)
>>> net = Net()
>>> net
Net(
  (fc): Linear(in_features=3, out_features=2, bias=True)
)
>>> [name for name, _ in net.named_parameters()], list(net.state_dict())
(['fc.weight', 'fc.bias'], ['steps', 'fc.weight', 'fc.bias'])
>>> net(ember.ones(4, 3)).shape
ember.Size([4, 2])
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import ember
from ember import Tensor, no_grad
from ember._sibling_api import parse_to, share_storage

from ..parameter import Buffer, Parameter
from ..utils._zero_grad import zero_grads
from ._hooks import (
    HooksMixin,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from ._state_dict import StateDictMixin

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]


def typename(obj) -> str:
    """The type name PyTorch's messages use (``ember.FloatTensor`` for a tensor)."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ in ("", "builtins") else f"{cls.__module__}.{cls.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _no_hooks() -> dict:
    """The hook registries of a module without hooks (set by ``__init__``, and on a module ``ember.load`` made)."""
    return dict(
        _forward_pre_hooks=OrderedDict(), _forward_pre_hooks_with_kwargs={}, _forward_hooks=OrderedDict(),
        _forward_hooks_with_kwargs={}, _forward_hooks_always_called={}, _backward_pre_hooks=OrderedDict(),
        _backward_hooks=OrderedDict(), _is_full_backward_hook=None, _state_dict_pre_hooks=OrderedDict(),
        _state_dict_hooks=OrderedDict(), _load_state_dict_pre_hooks=OrderedDict(),
        _load_state_dict_post_hooks=OrderedDict(), _call_hook_ids={})


class Module(StateDictMixin, HooksMixin):
    """Base class of every layer and model: subclass it, set layers in ``__init__``, compute in ``forward``.

    Assigning a :class:`Parameter`, a ``Module`` or a :class:`Buffer` to an
    attribute registers it; ``parameters()``, ``state_dict()``, ``to()`` and
    friends then find it, recursively through submodules.
    """

    _version = 1
    training: bool
    #: call ``super().__init__`` with the subclass's arguments (as PyTorch's flag of the same name)
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        self.__dict__.update(training=True, _parameters={}, _buffers={}, _non_persistent_buffers_set=set(),
                             _modules={}, **_no_hooks())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # -- whole-module checkpoints (ember.save(model) / ember.load) ----------------------------------------------
    def __ember_getstate__(self) -> dict:
        """What ``ember.save`` stores of this module: its attributes, without hooks (code, not data).

        Registered hooks are left out with a warning; register them again after loading.
        """
        hooks = _no_hooks()
        dropped = [name for name in hooks if name.endswith("hooks") and self.__dict__.get(name)]
        if dropped:
            warnings.warn(f"ember.save: the hooks of this {type(self).__name__} ({', '.join(dropped)}) are not "
                          "saved (a checkpoint holds data, not code); register them again after loading",
                          UserWarning, stacklevel=2)
        return {name: value for name, value in self.__dict__.items() if name not in hooks}

    def __ember_setstate__(self, state: dict) -> None:
        """Restore a module ``ember.load`` made (without ``__init__``) from its saved attributes; it has no hooks.

        >>> import io, ember
        >>> buf = io.BytesIO(); ember.save(ember.nn.Linear(2, 2).eval(), buf); _ = buf.seek(0)
        >>> ember.load(buf).training
        False
        """
        for name, kind in (("_parameters", Parameter), ("_buffers", Tensor), ("_modules", Module)):
            registry = state.get(name)
            if not isinstance(registry, dict) or not all(v is None or isinstance(v, kind) for v in registry.values()):
                raise TypeError(f"{name} must be a dict of {kind.__name__}s, got {registry!r:.100}")
        if not isinstance(state.get("training"), bool):
            raise TypeError(f"training must be a bool, got {state.get('training')!r:.50}")
        self.__dict__.update(_no_hooks())
        self.__dict__.update(state)

    def forward(self, *args, **kwargs):
        """The computation; every subclass defines it (call the module, not ``forward``, so hooks run)."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- registration -----------------------------------------------------------------------------------------
    def _check_name(self, kind: str, name, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\"" + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a :class:`Parameter`, or None for an absent one) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                                "(ember.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                                 f"created explicitly. To express '{name}' as a function of another Tensor, "
                                 "compute the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (running statistics, say).

        A persistent buffer is part of ``state_dict()``; a non-persistent one is not.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = share_storage(Tensor, tensor)  # the module keeps a plain tensor
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        """Register ``module`` (or None) as a submodule under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        self._check_name("module", name, self._modules)
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    # -- attributes -------------------------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d:
                found = d[registry]
                if name in found:
                    return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer) or ("_buffers" in d and name in d["_buffers"]):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(ember.nn.Buffer, ember.Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) \
                else name not in self._non_persistent_buffers_set
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the plain attributes and the registries other than ``keep``."""
        d = self.__dict__
        d.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                d[registry].pop(name, None)
        if keep != "_buffers":
            d["_non_persistent_buffers_set"].discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # -- lookups ----------------------------------------------------------------------------------------------
    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace (or with ``strict=False`` add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"fc.weight"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``"bn.running_mean"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # -- iterators --------------------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """``(dotted name, module)`` for this module and every submodule, depth first (each once)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        """Every module of the tree, this one first."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """``(name, module)`` for the direct submodules."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in members(module):
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, parameter)`` pairs (a shared parameter once, under its first name)."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Every parameter (what an optimizer gets)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, buffer)`` pairs, persistent or not."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Every buffer."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # -- modes and gradients -----------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=False``: evaluation) here and in every submodule; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode (dropout off, batch norm on running statistics); ``self.train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` of every parameter (freeze with ``False``); returns ``self``."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: to None (the default) or to zeros."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn) -> "Module":
        """Call ``fn(module)`` on every submodule (children first) and on this module; returns ``self``.

        >>> import ember
        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Identity())
        >>> _ = net.apply(lambda m: print(type(m).__name__))
        Linear
        Identity
        Sequential
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversion ------------------------------------------------------------------------------------------
    def _apply(self, fn, recurse: bool = True) -> "Module":
        """Apply ``fn`` to every parameter (in place: a parameter keeps its identity), gradient and buffer."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
            buffers = self._buffers
            for key, buf in buffers.items():
                if buf is not None:
                    buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``

        A dtype applies to floating-point parameters and buffers only (integer
        buffers such as ``num_batches_tracked`` keep theirs). In place; returns ``self``.

        >>> import ember
        >>> ember.nn.Linear(2, 2).to(ember.float64).weight.dtype
        ember.float64
        """
        dtype, device, _ = parse_to(tuple(a for a in args if not isinstance(a, bool)), dict(kwargs))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)
        return self._apply(convert)

    def cpu(self) -> "Module":
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        """Move every parameter and buffer to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floats(self, dtype) -> "Module":
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> "Module":
        """Floating-point parameters and buffers to float32."""
        return self._cast_floats(ember.float32)

    def double(self) -> "Module":
        """Floating-point parameters and buffers to float64."""
        return self._cast_floats(ember.float64)

    def half(self) -> "Module":
        """Floating-point parameters and buffers to float16."""
        return self._cast_floats(ember.float16)

    def bfloat16(self) -> "Module":
        """Floating-point parameters and buffers to bfloat16."""
        return self._cast_floats(ember.bfloat16)

    # -- printing --------------------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``print(model)``; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            body = extra_lines[0] if len(extra_lines) == 1 and not child_lines \
                else "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"
