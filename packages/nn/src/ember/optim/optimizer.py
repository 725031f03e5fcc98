"""Optimizer: parameter groups, per-parameter state, zero_grad, state_dict / load_state_dict, step hooks.

The built-in optimizers update each parameter's array in place, straight on
the backend's arrays (a few array operations per parameter, no autograd
bookkeeping, float32 kept float32), and bump the parameter's version counter
afterwards, exactly as an in-place tensor op would: a parameter changed after
being saved for backward is still reported by backward. SGD and Adam run all
their operations over one cache-sized piece of a large parameter before the
next (:func:`pieces`); temporaries go into scratch arrays the optimizer keeps
from step to step (:class:`ScratchPool`), so after the first step an update
allocates no temporaries (weight decay and ``maximize`` aside).

>>> import ember
>>> w = ember.tensor([1.0, 2.0], requires_grad=True)
>>> opt = ember.optim.SGD([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w
tensor([0.8000, 1.6000], requires_grad=True)
>>> opt.zero_grad(); w.grad is None
True
"""
from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain

import ember
from ember._sibling_api import array, mark_modified
from ember.nn.utils._zero_grad import zero_grads
from ember.utils.hooks import add_hook

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """The default of an option that every parameter group must give (``lr`` of a custom optimizer, say)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_GLOBAL_STEP_PRE_HOOKS: OrderedDict = OrderedDict()
_GLOBAL_STEP_POST_HOOKS: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; returns a removable handle.

    The hook may return ``(new_args, new_kwargs)`` to replace the step's arguments.
    """
    return add_hook(_GLOBAL_STEP_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``; returns a removable handle."""
    return add_hook(_GLOBAL_STEP_POST_HOOKS, hook)


def _hooked_step(step):
    """``step`` running the global and the optimizer's own step hooks around it, and counting the steps."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self._in_step:  # a subclass's step calling its parent's: the hooks already ran once
            return step(self, *args, **kwargs)
        for hook in chain(_GLOBAL_STEP_PRE_HOOKS.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        self._in_step = True
        try:
            out = step(self, *args, **kwargs)
        finally:
            self._in_step = False
        self._opt_called = True
        for hook in chain(self._optimizer_step_post_hooks.values(), _GLOBAL_STEP_POST_HOOKS.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


def _no_hooks() -> dict:
    """The step and state-dict hook registries of an optimizer without hooks."""
    return {name: OrderedDict() for name in (
        "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
        "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
        "_optimizer_load_state_dict_post_hooks")}


class Optimizer:
    """Base class of all optimizers: holds parameter groups and per-parameter state.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs (as
    ``model.named_parameters()`` gives), or of dicts, each a parameter group
    with its own options (``{'params': [...], 'lr': 0.1}``); ``defaults`` holds
    the options a group does not set. A subclass implements ``step``.

    ``state_dict()`` returns PyTorch's layout: ``{'state': {index: {...}},
    'param_groups': [{..., 'params': [indices]}]}``, holding references to the
    live state tensors (as PyTorch does: save it, or copy it, before stepping
    on); ``load_state_dict`` copies what it loads.

    >>> import ember
    >>> a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    >>> opt = ember.optim.SGD([{'params': [a]}, {'params': [b], 'lr': 0.5}], lr=0.1)
    >>> [g['lr'] for g in opt.param_groups]
    [0.1, 0.5]
    >>> opt.state_dict()['param_groups'][1]['params']
    [1]
    """

    _in_step = False
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.__dict__.update(_no_hooks())
        if isinstance(params, ember.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        self._scratch = ScratchPool()  # temporaries of the updates, reused from step to step
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # -- whole-optimizer checkpoints (ember.save / ember.load) ----------------------------
    def __ember_getstate__(self) -> dict:
        """What ``ember.save`` stores: the attributes but hooks (code; left out with a warning) and scratch space."""
        hooks = _no_hooks()
        dropped = [name for name in hooks if self.__dict__.get(name)]
        if dropped:
            warnings.warn(f"ember.save: the hooks of this {type(self).__name__} ({', '.join(dropped)}) are not "
                          "saved (a checkpoint holds data, not code); register them again after loading",
                          UserWarning, stacklevel=2)
        skip = ("_scratch", "_flat_batches")  # rebuilt on demand
        return {name: value for name, value in self.__dict__.items() if name not in hooks and name not in skip}

    def __ember_setstate__(self, state: dict) -> None:
        """Restore an optimizer ``ember.load`` made (without ``__init__``): no hooks, fresh scratch space.

        >>> import io, ember
        >>> w = ember.nn.Parameter(ember.ones(2))
        >>> buf = io.BytesIO(); ember.save(ember.optim.SGD([w], lr=0.5), buf); _ = buf.seek(0)
        >>> ember.load(buf).param_groups[0]['lr']
        0.5
        """
        groups = state.get("param_groups")
        if not (isinstance(groups, list) and all(isinstance(g, dict) and isinstance(g.get("params"), list)
                                                 for g in groups)):
            raise TypeError(f"param_groups must be a list of dicts with a 'params' list, got {groups!r:.100}")
        if not isinstance(state.get("state"), dict) or not isinstance(state.get("defaults"), dict):
            raise TypeError("an optimizer needs 'state' and 'defaults' dicts")
        self.__dict__.update(_no_hooks())
        self.__dict__.update(state)
        if not isinstance(self.state, defaultdict):
            self.state = defaultdict(dict, self.state)
        self._scratch = ScratchPool()

    # -- parameter groups ----------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (those it leaves out come from ``defaults``).

        For fine-tuning, say: layers unfrozen later join the optimizer with their own learning rate.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, ember.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter "
                                 f"{name}")
            param_group.setdefault(name, default)
        ids = {id(p) for p in tensors}
        if len(ids) != len(tensors):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
            if any(id(p) in ids for p in group["params"]):
                raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients and steps -----------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to None (the default), or to zeros in place."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        """Update the parameters once; ``closure`` (re-evaluating the model, returning the loss) is optional."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def register_step_pre_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` before each ``step``; it may return ``(new_args, new_kwargs)``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    # -- saving and restoring ------------------------------------------------------------
    def register_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer)`` before ``state_dict`` builds its result."""
        return _add_ordered_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` after ``state_dict``; a returned dict replaces the result."""
        return _add_ordered_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer, state_dict)`` before loading; a returned dict is loaded instead."""
        return _add_ordered_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False):
        """Run ``hook(optimizer)`` after ``load_state_dict``."""
        return _add_ordered_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def state_dict(self) -> dict:
        """The optimizer's state: ``{'state': {index: {...}}, 'param_groups': [...]}`` with parameters as indices.

        Indices count the parameters through the groups in order. The state
        tensors are the live ones (as in PyTorch): save the dict, or copy it,
        before the next ``step`` if it must keep today's values.
        """
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index_of: dict = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, ember.Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            replaced = hook(self, result)
            if replaced is not None:
                result = replaced
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict`` returned: the groups' options and each parameter's state, copied.

        Parameters are matched by position (the group sizes must agree). State
        tensors are copied and cast to their parameter's dtype and device,
        except ``'step'``, which keeps its own dtype.
        """
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            replaced = hook(self, state_dict)
            if replaced is not None:
                state_dict = replaced
        groups = self.param_groups
        saved_groups = deep_copy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        param_of = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                            chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if isinstance(key, str) and key.isdigit() and key not in param_of:
                key = int(key)  # a checkpoint format that keeps only string keys
            if key in param_of:
                param = param_of[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = deep_copy(value)
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- for subclasses --------------------------------------------------------------------
    @staticmethod
    def _run_closure(closure):
        """The loss ``closure()`` returns, computed with gradients on (None without a closure)."""
        if closure is None:
            return None
        with ember.enable_grad():
            return closure()


def _typename(obj) -> str:
    if isinstance(obj, ember.Tensor):
        return f"ember.{type(obj).__name__}"
    return type(obj).__qualname__


def _add_ordered_hook(hooks: OrderedDict, hook, prepend: bool):
    handle = add_hook(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def deep_copy(value):
    """A deep copy of nested dicts, lists and tuples in which tensors are cloned (detached)."""
    if isinstance(value, ember.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        out = copy.copy(value)  # keeps the dict's type (a Counter, an OrderedDict)
        for k, v in value.items():
            out[k] = deep_copy(v)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(deep_copy(v) for v in value)
    return copy.deepcopy(value)


def _cast_state(param, value, key=None):
    """A copy of one parameter's saved state, its tensors on ``param``'s device (and dtype, if floating)."""
    if isinstance(value, ember.Tensor):
        value = value.detach()
        if key == "step":
            return value.clone()
        dtype = param.dtype if param.is_floating_point() else None
        moved = value.to(device=param.device, dtype=dtype)
        return moved.clone() if moved is value else moved
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return copy.deepcopy(value)


# -- what the built-in optimizers share ---------------------------------------------------------
def new_step_tensor(value: float = 0.0):
    """The ``'step'`` count a parameter's state starts with (or another scalar of the state, such as NAdam's
    ``'mu_product'``): a 0-d float tensor on the CPU, float32 unless float64 is the default dtype, as in PyTorch."""
    dtype = ember.float64 if ember.get_default_dtype() is ember.float64 else ember.float32
    return ember.full((), value, dtype=dtype)


def lerp_(m, g, weight: float) -> None:
    """``m += weight * (g - m)`` in place, on arrays, with PyTorch's ``lerp_`` formula for ``weight >= 0.5``
    (``g - (g - m) * (1 - weight)``), so moving averages round as PyTorch's do."""
    if weight < 0.5:
        m += (g - m) * weight
    else:
        m[...] = g - (g - m) * (1 - weight)


def advance_step(step_tensor) -> float:
    """Add one to a ``'step'`` tensor in place; returns the new count."""
    count = array(step_tensor)
    count += 1
    mark_modified(step_tensor)
    return float(count)


def params_with_grad(group: dict) -> list:
    """The parameters of ``group`` that have a gradient: those a step updates (PyTorch skips the others)."""
    return [p for p in group["params"] if p.grad is not None]


def grad_array(p, maximize: bool, weight_decay: float = 0):
    """``p``'s gradient array, negated to maximize, plus ``weight_decay * p`` (never the ``.grad`` array
    itself once changed)."""
    g = array(p.grad)
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * array(p)
    return g


def check_options(*checks) -> None:
    """PyTorch's ``ValueError("Invalid <what>: <value>")`` for the first ``(ok, what, value)`` that is not ok."""
    for ok, what, value in checks:
        if not ok:
            raise ValueError(f"Invalid {what}: {value}")


def check_differentiable(differentiable: bool, fused, foreach) -> None:
    """PyTorch's errors for ``differentiable`` (unsupported) and for ``fused`` and ``foreach`` both asked."""
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: ember's optimizers update parameters in "
                                  "place outside autograd")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


_TAKES_OUT: dict = {}


def _takes_out(xp) -> bool:
    """Whether ``xp``'s elementwise functions take ``out=`` (NumPy's and CuPy's ufuncs; the array API's do not)."""
    takes_out = _TAKES_OUT.get(id(xp))
    if takes_out is None:
        takes_out = _TAKES_OUT[id(xp)] = hasattr(xp.multiply, "nout")
    return takes_out


#: elements per piece in :func:`pieces`: a piece of each array an update touches fits in a core's L2 cache
PIECE = 1 << 16


def pieces(*arrays):
    """The arrays cut into matching flat pieces of at most :data:`PIECE` elements, so that an update runs all
    its passes over one piece while it is still in cache (``None`` entries stay ``None``).

    Arrays of at most one piece, or that are not all C-contiguous NumPy-like arrays of one size, come back
    whole, as the single piece.
    """
    first = arrays[0]
    n = first.size
    if n <= PIECE:
        return (arrays,)
    for a in arrays:
        if a is not None and (a.size != n or not getattr(getattr(a, "flags", None), "c_contiguous", False)):
            return (arrays,)
    flat = [None if a is None else a.reshape(-1) for a in arrays]
    return [tuple(None if f is None else f[i:i + PIECE] for f in flat) for i in range(0, n, PIECE)]


class ScratchPool:
    """Flat arrays an optimizer keeps between steps, out of which each parameter's update takes its temporaries.

    ``pool.take(xp, like, slot)`` is a :class:`Scratch` shaped like ``like``,
    backed by the pool's flat array for ``slot`` (grown to the largest
    parameter it has served), so a step allocates nothing once the first one
    has run. Different slots never share memory. Arrays under :data:`SMALL`
    elements get fresh temporaries instead: allocating them costs less than
    carving them out of the pool.
    """

    __slots__ = ("_flat",)

    def __init__(self):
        self._flat: dict = {}

    def take(self, xp, like, slot: int = 0) -> "Scratch":
        n = like.size
        if n < SMALL or not _takes_out(xp):
            return Scratch(xp, None)
        key = (slot, id(xp), like.dtype.char, getattr(like, "device", None))
        flat = self._flat.get(key)
        if flat is None or flat.shape[0] < n:
            flat = self._flat[key] = xp.empty_like(xp.reshape(like, (-1,)))
        out = flat[:n]
        return Scratch(xp, out if like.ndim == 1 else xp.reshape(out, like.shape))


#: arrays below this many elements get fresh temporaries rather than pooled ones
SMALL = 1 << 12


class Scratch:
    """A reusable array for the temporaries of one parameter's update (from :class:`ScratchPool`).

    ``scratch("multiply", a, b)`` computes ``xp.multiply(a, b)`` into the
    scratch array when the backend's elementwise functions take ``out=``
    (NumPy's and CuPy's ufuncs), and into a fresh array otherwise (the array
    API has no ``out=``). Each call overwrites the previous result.
    """

    __slots__ = ("xp", "out")

    def __init__(self, xp, out):
        self.xp = xp
        self.out = out

    def __call__(self, name: str, *arrays):
        fn = getattr(self.xp, name)
        return fn(*arrays) if self.out is None else fn(*arrays, out=self.out)
