"""Shared by the multi-objective searcher tests: ZDT1, the 2-D hypervolume and a sequential ask/tell run."""
import math

from ember import tune

SPACE = {f"x{i}": tune.uniform(0, 1) for i in range(3)}


def zdt1(config):
    """ZDT1 in three dimensions: the Pareto front is f2 = 1 - sqrt(f1), reached with x1 = x2 = 0."""
    x = [config["x0"], config["x1"], config["x2"]]
    g = 1 + 9 * sum(x[1:]) / 2
    return {"f1": x[0], "f2": g * (1 - math.sqrt(x[0] / g))}


def hypervolume(points, ref):
    """The area dominated by ``points`` (both objectives minimised) and bounded by ``ref``."""
    area, lowest = 0.0, ref[1]
    for a, b in sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1]):
        if b < lowest:
            area, lowest = area + (ref[0] - a) * (lowest - b), b
    return area


def run(search_alg, f, num_samples=200, seed=0, space=SPACE):
    exp = tune.Experiment(space, ["f1", "f2"], ["min", "min"], search_alg=search_alg, num_samples=num_samples,
                          seed=seed)
    while (trial := exp.ask()) is not None:
        exp.tell(trial, f(trial.config))
    return exp.results()


def front_hypervolume(grid):
    return hypervolume([(r.metrics["f1"], r.metrics["f2"]) for r in grid.get_pareto_front()], (1.1, 1.1))
