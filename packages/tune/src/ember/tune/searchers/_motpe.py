"""The good/bad split of multi-objective TPE (MOTPE: Ozaki et al. 2020, as Optuna's ``TPESampler`` with several
objectives).

The good group is filled front by front (non-dominated sorting, with Deb's constraint domination, so infeasible
trials come after every feasible one); the front that does not fit whole is cut by hypervolume contribution
(exact for two objectives: the point adding least to the front's hypervolume is dropped, one at a time) or, for
three objectives or more, by crowding distance (a simplification: the isolated points are kept).

>>> points = np.array([[0.0, 3.0], [1.0, 1.0], [1.1, 0.9], [3.0, 0.0], [2.0, 2.0]])
>>> good_indices(np.ones(5), points, np.zeros(5), 3).tolist()  # (1.1, 0.9) adds least next to (1, 1)
[0, 1, 3]
"""
from __future__ import annotations

import numpy as np

from .nsga2 import crowding_distance, non_dominated_fronts


def good_indices(iterations, objectives, violation, n_good: int) -> np.ndarray:
    """The indices (sorted) of the ``n_good`` best of the trials whose latest results are ``objectives`` (one row
    of losses each, lower is better) at ``training_iteration`` ``iterations``, with constraint ``violation`` (> 0:
    infeasible). As in single-objective TPE, a trial that got further ranks first and a trial with a nan (or
    missing) objective last, in the order given."""
    iterations = np.asarray(iterations)
    objectives = np.asarray(objectives, dtype=np.float64).reshape(len(iterations), -1)
    violation = np.asarray(violation, dtype=np.float64)
    invalid = ~np.isfinite(objectives).all(axis=1)
    chosen: list = []
    for bad, iteration in sorted({(bool(b), -int(it)) for b, it in zip(invalid, iterations)}):
        room = n_good - len(chosen)
        if room <= 0:
            break
        group = np.flatnonzero((invalid == bad) & (iterations == -iteration))
        if bad or len(group) <= room:
            chosen += group[:room].tolist()
        else:
            chosen += group[_best_of_group(objectives[group], violation[group], room)].tolist()
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _best_of_group(objectives: np.ndarray, violation: np.ndarray, n_good: int) -> list:
    chosen: list = []
    for front in non_dominated_fronts(objectives, violation):
        room = n_good - len(chosen)
        if len(front) <= room:
            chosen += front
        else:
            points = objectives[front]
            keep = (hypervolume_subset(points, room) if points.shape[1] == 2
                    else np.argsort(-crowding_distance(points), kind="stable")[:room])
            chosen += [front[k] for k in keep]
        if len(chosen) >= n_good:
            break
    return chosen


def hypervolume_subset(points, k: int) -> list:
    """The indices of ``k`` of the mutually non-dominated 2-D ``points`` kept by dropping, one at a time, the one
    whose exclusive hypervolume contribution is smallest (the reference point is 10% beyond the worst values, as
    Optuna's).

    >>> hypervolume_subset(np.array([[0.0, 2.0], [1.0, 1.0], [1.2, 0.9], [2.0, 0.0]]), 3)
    [0, 1, 3]
    """
    points = np.asarray(points, dtype=np.float64)
    worst = points.max(axis=0)
    ref = np.maximum(1.1 * worst, 0.9 * worst)
    ref[ref == 0] = 1e-12
    keep = list(range(len(points)))
    while len(keep) > k:
        keep.pop(int(np.argmin(contributions_2d(points[keep], ref))))
    return keep


def contributions_2d(points, ref) -> np.ndarray:
    """Each point's exclusive hypervolume contribution (the area only it dominates, bounded by ``ref``), for
    mutually non-dominated 2-D ``points``; a duplicated point contributes 0.

    >>> contributions_2d(np.array([[0.0, 2.0], [1.0, 1.0], [2.0, 0.0]]), np.array([3.0, 3.0])).tolist()
    [1.0, 1.0, 1.0]
    """
    points = np.asarray(points, dtype=np.float64)
    order = np.lexsort((points[:, 1], points[:, 0]))
    p = points[order]
    right = np.append(p[1:, 0], ref[0])
    up = np.insert(p[:-1, 1], 0, ref[1])
    contribution = np.empty(len(p))
    contribution[order] = (right - p[:, 0]) * (up - p[:, 1])
    return contribution
