"""The strong-Wolfe line search that LBFGS runs with ``line_search_fn="strong_wolfe"``.

A bracketing phase and a zoom phase with safeguarded cubic interpolation (Nocedal and Wright, algorithms 3.5
and 3.6, as minFunc and PyTorch implement them), on flat arrays. Function values and step sizes are Python
floats, directional derivatives come from the backend's ``vecdot``.

>>> import numpy as np
>>> f = lambda x: float(((x - 3.0) ** 2).sum())
>>> def evaluate(t, d):                   # the objective and its gradient at x0 + t * d, x0 = 0
...     x = t * d
...     return f(x), 2 * (x - 3.0)
>>> d = np.array([6.0])                   # minus the gradient at 0
>>> loss, grad, t, evals = strong_wolfe(np, evaluate, 1.0, d, f(np.zeros(1)), np.array([-6.0]), -36.0)
>>> round(t, 6), evals                    # the exact minimiser x = 3 is t = 0.5, found by interpolation
(0.5, 2)
"""
from __future__ import annotations

import math

__all__ = ["strong_wolfe", "cubic_interpolate"]


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and ``g2``, clamped
    to ``bounds`` (by default the interval between ``x1`` and ``x2``); the interval's midpoint when the cubic
    has no minimiser."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        minimiser = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        minimiser = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(minimiser, low), high)


class _Point:
    """A trial step ``t`` with the loss ``f``, flat gradient ``g`` and directional derivative ``gtd`` there."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def strong_wolfe(xp, evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Search along ``d`` from the current point (loss ``f``, flat gradient ``g``, ``gtd = g . d``) for a step
    satisfying the strong Wolfe conditions, starting with ``t``.

    ``evaluate(t, d)`` returns ``(loss, flat gradient)`` at the point moved by ``t * d`` (and leaves the
    parameters where they were). Returns ``(loss, flat gradient, t, evaluations)`` at the step chosen.
    """
    d_norm = float(xp.max(xp.abs(d)))
    start = _Point(0.0, f, g, gtd)
    f_new, g_new = evaluate(t, d)
    evals = 1
    new = _Point(t, f_new, g_new, float(xp.vecdot(g_new, d)))
    prev = start
    bracket: list[_Point] = []
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if new.f > f + c1 * new.t * gtd or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket = [new]
            done = True
            break
        if new.gtd >= 0:
            bracket = [prev, new]
            break
        # extrapolate: a step beyond t, at most 10 t
        t = cubic_interpolate(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                              bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev = new
        f_new, g_new = evaluate(t, d)
        evals += 1
        new = _Point(t, f_new, g_new, float(xp.vecdot(g_new, d)))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [start, new]
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient_progress = False
    while not done and ls_iter < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break  # the bracket is too small to matter
        t = cubic_interpolate(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        lo, hi = min(a.t, b.t), max(a.t, b.t)
        eps = 0.1 * (hi - lo)
        if min(hi - t, t - lo) < eps:  # too close to an end of the bracket: move away from it
            if insufficient_progress or t >= hi or t <= lo:
                t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t, d)
        evals += 1
        new = _Point(t, f_new, g_new, float(xp.vecdot(g_new, d)))
        ls_iter += 1
        if new.f > f + c1 * t * gtd or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals
