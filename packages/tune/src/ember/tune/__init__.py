"""ember.tune: hyperparameter search with grid, random, TPE and BOHB, early stopping with ASHA and Hyperband.

Names resolve on first use, so ``import ember.tune`` stays cheap.

>>> from ember import tune
>>> space = tune.SearchSpace({"lr": tune.loguniform(1e-4, 1e-1), "layers": tune.choice([1, 2, 3])})
>>> sorted(space.sample(seed=0))
['layers', 'lr']
"""
import importlib

#: public name -> the module (under ember.tune) that defines it
_EXPORTS = {
    # search spaces
    **dict.fromkeys(["uniform", "loguniform", "quniform", "qloguniform", "randint", "qrandint", "lograndint",
                     "choice", "grid_search", "sample_from", "SearchSpace", "Domain"], "space"),
    # searchers
    "Searcher": "searchers.base",
    "GridSearcher": "searchers.grid",
    "RandomSearcher": "searchers.random",
    "TPESearcher": "searchers.tpe",
    "BOHBSearcher": "searchers.bohb",
    "NSGA2Searcher": "searchers.nsga2",
    # schedulers
    "Scheduler": "schedulers.base", "Decision": "schedulers.base",
    "FIFOScheduler": "schedulers.fifo",
    "MedianStoppingRule": "schedulers.median",
    "HyperBandScheduler": "schedulers.hyperband",
    "ASHAScheduler": "schedulers.asha", "AsyncHyperBandScheduler": "schedulers.asha",
    "PopulationBasedTraining": "schedulers.pbt", "PB2": "schedulers.pb2",
    # executors
    "Executor": "executors.base", "TrialRun": "executors.base", "ExecutorEvent": "executors.base",
    "LocalExecutor": "executors.local",
    "RayExecutor": "executors.ray",
    # running trials
    "report": "session", "get_checkpoint": "session", "get_trial_id": "session",
    "Checkpoint": "checkpoint",
    "TuneConfig": "config", "RunConfig": "config", "CheckpointConfig": "config", "FailureConfig": "config",
    "Tuner": "tuner", "with_resources": "tuner",
    "Experiment": "experiment", "Trial": "trial",
    "ResultGrid": "results", "Result": "results",
    # tools
    "lr_find": "lr_finder", "LRFinderResult": "lr_finder",
    "plot_learning_curves": "plot", "plot_best_over_time": "plot",
    "register_plugin": "registry", "hookimpl": "registry",
    # stoppers
    **dict.fromkeys(["Stopper", "MaximumIterationStopper", "TrialPlateauStopper", "ExperimentPlateauStopper",
                     "TimeoutStopper", "CombinedStopper"], "stoppers"),
    # callbacks and loggers
    "Callback": "callbacks",
    "LoggerCallback": "loggers", "JsonLoggerCallback": "loggers", "CSVLoggerCallback": "loggers",
    "TBXLoggerCallback": "tensorboard_logger", "MLflowLoggerCallback": "mlflow_logger",
    "ProgressReporter": "progress",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'ember.tune' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
