"""L-BFGS: a quasi-Newton method from the last ``history_size`` gradient differences, PyTorch's variant."""
from __future__ import annotations

import ember
from ember._sibling_api import array, array_namespace, from_array, mark_modified

from ._line_search import strong_wolfe
from .optimizer import Optimizer, check_options

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """L-BFGS (Nocedal and Wright, algorithm 7.4, after minFunc), PyTorch's algorithm and state.

    ``step(closure)`` needs the closure: it re-evaluates the model (zeroing the
    gradients, computing the loss, calling ``backward``) and returns the loss. One
    ``step`` runs up to ``max_iter`` iterations (and ``max_eval`` closure calls,
    default ``max_iter * 5 // 4``), each moving the parameters along the L-BFGS
    direction ``d`` (two-loop recursion over the last ``history_size`` pairs of
    steps and gradient differences) by ``lr`` (the first iteration ever by
    ``min(1, 1 / sum|g|) * lr``), or by the step a strong-Wolfe line search finds
    with ``line_search_fn="strong_wolfe"``. It stops early when the largest
    gradient entry is at most ``tolerance_grad``, or the step, the directional
    derivative or the loss change is below ``tolerance_change``. Returns the loss
    of the first closure call.

    All parameters form one group (PyTorch allows no others). The state lives with
    the first parameter, under PyTorch's keys: ``'func_evals'``, ``'n_iter'``,
    ``'d'``, ``'t'``, ``'old_dirs'``, ``'old_stps'``, ``'ro'``, ``'H_diag'``,
    ``'prev_flat_grad'``, ``'prev_loss'`` and ``'al'``. Scalars of the line search
    are computed in float64 (as PyTorch does for float64 parameters; for float32
    parameters PyTorch rounds some of them to float32, so the results can differ
    there in the last digits).

    >>> import ember
    >>> x = ember.tensor([1.5, -0.5], requires_grad=True)
    >>> opt = ember.optim.LBFGS([x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((x - ember.tensor([3.0, 2.0])) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> loss = opt.step(closure)
    >>> x.detach()
    tensor([3., 2.])
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr))
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the parameters as one flat vector ------------------------------------------------------
    def _flat_grad(self, xp):
        return xp.concatenate([xp.reshape(array(p.grad), (-1,)) if p.grad is not None else
                               xp.zeros(p.numel(), dtype=array(p).dtype) for p in self._params])

    def _add_grad(self, t: float, d) -> None:
        """Move every parameter by ``t`` times its slice of the flat direction ``d``."""
        offset = 0
        for p in self._params:
            p_array = array(p)
            p_array += d[offset:offset + p_array.size].reshape(p_array.shape) * t
            offset += p_array.size
        mark_modified(*self._params)

    def _evaluate(self, closure, xp, x, t, d):
        """The loss and flat gradient at the parameters moved by ``t * d``; the parameters go back to ``x``."""
        self._add_grad(t, d)
        loss = float(self._run_closure(closure))
        flat_grad = self._flat_grad(xp)
        for p, saved in zip(self._params, x):
            array(p)[...] = saved
        mark_modified(*self._params)
        return loss, flat_grad

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; ``closure`` re-evaluates the model and returns the loss.
        Returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        first = self._params[0]
        xp = array_namespace(first)
        state = self.state[first]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._run_closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad(xp)
        if float(xp.max(xp.abs(flat_grad))) <= tolerance_grad:
            return orig_loss

        memory = _Memory.from_state(state, xp)
        d, t = memory.d, state.get("t")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                memory.reset()
            else:
                memory.remember(flat_grad - memory.prev_flat_grad, d * t, history_size)
                d = memory.direction(flat_grad, history_size)
            memory.prev_flat_grad = xp.asarray(flat_grad, copy=True)
            prev_loss = loss
            t = min(1.0, 1.0 / float(xp.sum(xp.abs(flat_grad)))) * lr if state["n_iter"] == 1 else lr
            gtd = float(xp.vecdot(flat_grad, d))
            if gtd > -tolerance_change:
                break  # not a descent direction (any more)
            ls_func_evals = 0
            opt_cond = False
            if group["line_search_fn"] is not None:
                x = [xp.asarray(array(p), copy=True) for p in self._params]
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    xp, lambda step, direction: self._evaluate(closure, xp, x, step, direction), t, d, loss,
                    flat_grad, gtd)
                self._add_grad(t, d)
                opt_cond = float(xp.max(xp.abs(flat_grad))) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # re-evaluate unless this was the last iteration
                    loss = float(self._run_closure(closure))
                    flat_grad = self._flat_grad(xp)
                    opt_cond = float(xp.max(xp.abs(flat_grad))) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(xp.max(xp.abs(d * t))) <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break  # lack of progress
        memory.d = d
        memory.to_state(state, first, t, prev_loss)
        return orig_loss


class _Memory:
    """L-BFGS's history as arrays while a step runs: the last steps ``s`` (``old_stps``), gradient differences
    ``y`` (``old_dirs``), ``ro = 1 / (y . s)``, the initial Hessian scale ``H_diag``, the two-loop scratch
    ``al``, the last direction ``d`` and flat gradient; in the optimizer state as tensors between steps."""

    def __init__(self, xp):
        self.xp = xp
        self.d = self.prev_flat_grad = None
        self.reset()
        self.al: list = []

    def reset(self) -> None:
        self.old_dirs: list = []
        self.old_stps: list = []
        self.ro: list = []
        self.h_diag = 1.0

    @classmethod
    def from_state(cls, state, xp) -> "_Memory":
        memory = cls(xp)
        if "d" in state:
            memory.d = array(state["d"])
            memory.prev_flat_grad = array(state["prev_flat_grad"])
            memory.old_dirs = [array(y) for y in state["old_dirs"]]
            memory.old_stps = [array(s) for s in state["old_stps"]]
            memory.ro = [float(r) for r in state["ro"]]
            memory.h_diag = float(state["H_diag"])
        memory.al = [None if a is None else float(a) for a in state.get("al", [])]
        return memory

    def to_state(self, state, param, t, prev_loss) -> None:
        """Store the history in ``state`` as tensors like ``param``, in the order PyTorch's keys come in."""
        device, dtype = param.device, param.dtype

        def tensor(a):
            return from_array(self.xp.asarray(a, copy=True), device, dtype)

        def scalar(value):
            return ember.tensor(value, dtype=dtype, device=device)

        if self.al:
            state["al"] = [None if a is None else scalar(a) for a in self.al]
        state["d"] = tensor(self.d)
        state["t"] = t
        state["old_dirs"] = [tensor(y) for y in self.old_dirs]
        state["old_stps"] = [tensor(s) for s in self.old_stps]
        state["ro"] = [scalar(r) for r in self.ro]
        state["H_diag"] = scalar(self.h_diag)
        state["prev_flat_grad"] = tensor(self.prev_flat_grad)
        state["prev_loss"] = prev_loss

    def remember(self, y, s, history_size: int) -> None:
        """Keep the pair ``(y, s)`` when the curvature ``y . s`` is positive enough, dropping the oldest pair
        beyond ``history_size``; ``H_diag`` becomes ``y . s / y . y``."""
        ys = float(self.xp.vecdot(y, s))
        if ys > 1e-10:
            if len(self.old_dirs) == history_size:
                del self.old_dirs[0], self.old_stps[0], self.ro[0]
            self.old_dirs.append(y)
            self.old_stps.append(s)
            self.ro.append(1.0 / ys)
            self.h_diag = ys / float(self.xp.vecdot(y, y))

    def direction(self, flat_grad, history_size: int):
        """The two-loop recursion: minus the inverse-Hessian estimate times ``flat_grad``."""
        vecdot = self.xp.vecdot
        if not self.al:
            self.al = [None] * history_size
        q = -flat_grad
        for i in range(len(self.old_dirs) - 1, -1, -1):
            self.al[i] = float(vecdot(self.old_stps[i], q)) * self.ro[i]
            q = q - self.old_dirs[i] * self.al[i]
        r = q * self.h_diag
        for i in range(len(self.old_dirs)):
            beta = float(vecdot(self.old_dirs[i], r)) * self.ro[i]
            r = r + self.old_stps[i] * (self.al[i] - beta)
        return r
