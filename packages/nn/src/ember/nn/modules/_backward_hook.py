"""How a module's full backward hooks see the gradients of its inputs and outputs.

The module's tensor inputs pass through an identity autograd function before
``forward``, and its tensor outputs through another one after it. The
output-side node sees the gradients of the outputs (backward pre-hooks may
replace them); the input-side node sees the gradients of the inputs once all
of the module's backward has run (full backward hooks may replace them). The
identity outputs are fresh tensors sharing memory with the originals, so
in-place ops inside ``forward`` act on the wrapped tensors, never on the hook
boundary itself. When ``forward`` changes an input in place, the caller's
tensor takes the new history (as it would without hooks); for a leaf that
requires grad, or a view, that is an error, as it is without hooks.
"""
from __future__ import annotations

import warnings

from ember import Tensor, is_grad_enabled
from ember._sibling_api import is_view, take_history, version
from ember.autograd import Function

__all__ = ["BackwardHook"]


class BackwardHookFunction(Function):
    """Identity on any number of tensors; its node is where a module's backward hooks attach."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(indices, values, size):
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """Set up for one call of a module that has full backward hooks or backward pre-hooks."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None
        self.inputs = ()  # (caller's tensor, wrapped tensor, version) for inputs that require grad

    @staticmethod
    def _wrap(args, attach):
        """``args`` with its tensors passed through the identity function; ``attach(node)`` sets its hook."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (is_grad_enabled() and any(args[i].requires_grad for i in index)):
            return args, None
        wrapped = BackwardHookFunction.apply(*(args[i] for i in index))
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        attach(node)
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the module's inputs; the hooks run when their gradients are known."""
        res, self.input_index = self._wrap(args, lambda node: node.register_hook(self._input_grads_ready))
        self.n_inputs = len(args)
        if self.input_index is not None:
            self.inputs = [(args[i], res[i], version(res[i])) for i in self.input_index if args[i].requires_grad]
        return res

    def sync_inputs(self) -> None:
        """After ``forward``: give an input that ``forward`` changed in place its new history."""
        for i, (orig, wrapped, seen) in enumerate(self.inputs):
            if version(wrapped) == seen:
                continue
            if orig.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if is_view(orig):
                raise RuntimeError(f"{type(self.module).__name__}.forward changed its input {i} in place, and that "
                                   "input is a view; with backward hooks on the module this is not supported. "
                                   "Clone the input first, or use the out-of-place op.")
            take_history(orig, wrapped)

    def setup_output_hook(self, result):
        """Wrap the module's output (a tensor or a tuple); remembers its gradients when they arrive."""
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        res, self.output_index = self._wrap(outs, lambda node: node.register_prehook(self._output_grads_ready))
        self.n_outputs = len(outs)
        return res[0] if single else res

    def _output_grads_ready(self, grad_outputs):
        self.grad_outputs = _pack_with_none(self.output_index, grad_outputs, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        local = self.grad_outputs
        if self.input_index is None:  # no input needs a gradient: the hooks run now, with grad_input all None
            if self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See "
                              "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                              "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(g is None for g in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)

    def _input_grads_ready(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:
            return None  # the gradient reached the inputs without passing through the outputs
        res = _pack_with_none(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(res):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                                   f"but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)
