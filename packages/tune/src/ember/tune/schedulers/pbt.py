"""PopulationBasedTraining: bad trials copy a good trial's checkpoint and perturb its hyperparameters
(Jaderberg et al. 2017), with Ray Tune's arguments and rules.

Each time a trial's ``time_attr`` has advanced by ``perturbation_interval`` since its last perturbation, its
metric is recorded as its score. If that score is in the bottom ``quantile_fraction`` of the live
population's, the trial *exploits* a trial drawn from the top quantile (takes its latest checkpoint and its
configuration) and *explores* (:func:`explore`: each key of ``hyperparam_mutations`` resampled with
probability ``resample_probability``, else multiplied by 0.8 or 1.2, or moved to a neighbouring entry of
its list). The trial is paused and resumes from the copied checkpoint with the new ``trial.config``.

>>> from ember.tune import PopulationBasedTraining, uniform
>>> pbt = PopulationBasedTraining(perturbation_interval=2, hyperparam_mutations={"lr": uniform(0, 1)}, seed=0)
>>> pbt.setup(metric="loss", mode="min")
>>> for trial, loss in [("a", 0.1), ("b", 0.9)]:
...     pbt.on_trial_add(trial, {"lr": 0.5})
...     pbt.on_checkpoint(trial, 2)
...     print(trial, pbt.on_result(trial, {"loss": loss, "training_iteration": 2}).value)
a continue
b pause
>>> [(target, source) for target, (source, config) in pbt.take_exploits().items()]
[('b', 'a')]
"""
from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from ember import hookimpl

from ..domains import Categorical, Domain, find_index
from ._common import MetricScheduler, check_settings, encode, number
from .base import Decision

#: the factors a continuous hyperparameter is multiplied by when it is perturbed, as in Ray Tune
PERTURBATION_FACTORS = (1.2, 0.8)


def explore(config: dict, mutations: dict, rng, resample_probability: float = 0.25,
            perturbation_factors=PERTURBATION_FACTORS, custom_explore_fn=None) -> dict:
    """A perturbed copy of ``config`` (Ray Tune's rule), for every key of ``mutations``:

    - a list or tuple of values (or ``tune.choice(values)``): with probability ``resample_probability`` (or
      when the current value is not in the list) a value drawn from the list, else the entry one place lower
      or higher (chosen at random; clipped at the ends);
    - a domain (``tune.uniform(...)``, ...) or a function of no arguments: with probability
      ``resample_probability`` a fresh sample, else the current value times one of ``perturbation_factors``
      (drawn at random; an int stays an int);
    - a dict: the same rules on the nested config.

    ``custom_explore_fn(config) -> config`` is applied last. ``rng`` is a ``numpy.random.Generator``.

    >>> import numpy as np
    >>> explore({"lr": 0.1, "bs": 32}, {"lr": [0.01, 0.1, 1.0], "bs": [16, 32, 64]}, np.random.default_rng(0),
    ...         resample_probability=0.0)
    {'lr': 0.01, 'bs': 16}
    """
    new = copy.deepcopy(config)
    for key, spec in mutations.items():
        if key not in config:
            raise KeyError(f"hyperparam_mutations has {key!r}, which the trial's config has not (its keys: "
                           f"{sorted(config)}); put {key!r} in param_space too")
        value = config[key]
        if isinstance(spec, Categorical):  # tune.choice([...]): the list of its categories
            spec = spec.categories
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                raise TypeError(f"hyperparam_mutations[{key!r}] is a dict but the config's {key!r} is {value!r}")
            new[key] = explore(value, spec, rng, resample_probability, perturbation_factors)
        elif isinstance(spec, (list, tuple)):
            try:
                index = find_index(spec, value, "values")
            except ValueError:
                index = None
            if index is None or rng.random() < resample_probability:
                new[key] = spec[int(rng.integers(len(spec)))]
            else:
                index = min(max(index + (1 if rng.random() >= 0.5 else -1), 0), len(spec) - 1)
                new[key] = spec[index]
        elif isinstance(spec, Domain) or callable(spec):
            if rng.random() < resample_probability:
                new[key] = spec.sample(rng) if isinstance(spec, Domain) else spec()
            else:
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise TypeError(f"cannot perturb {key}={value!r} by a factor: give a list of values for it "
                                    "in hyperparam_mutations instead")
                factor = perturbation_factors[int(rng.integers(len(perturbation_factors)))]
                new[key] = int(value * factor) if isinstance(value, numbers.Integral) else float(value * factor)
        else:
            raise TypeError(f"hyperparam_mutations[{key!r}] must be a list of values, a domain, a function or a "
                            f"dict, got {type(spec).__name__}")
    if custom_explore_fn is not None:
        new = custom_explore_fn(new)
        if not isinstance(new, dict):
            raise TypeError(f"custom_explore_fn must return the new config dict, got {type(new).__name__}")
    return new


class PopulationBasedTraining(MetricScheduler):
    """Population Based Training with Ray Tune's argument names (``time_attr`` defaults to training_iteration).

    Args:
        time_attr: the result key that measures progress.
        metric: the metric to optimise; taken from the experiment when not given.
        mode: "min" or "max"; taken from the experiment when not given.
        perturbation_interval: a trial is considered for exploit/explore each time its ``time_attr`` has
            advanced this much since its last perturbation. Trainables should checkpoint at least as often.
        burn_in_period: no perturbation before ``time_attr`` reaches this.
        hyperparam_mutations: ``{key: list of values | domain | function | nested dict}`` (see
            :func:`explore`); each key must be in the param space. Required unless ``custom_explore_fn``.
        quantile_fraction: the bottom and top fractions of the population (at most half each, rounded up).
        resample_probability: the chance of a fresh value instead of a perturbation.
        perturbation_factors: the factors continuous values are multiplied by.
        custom_explore_fn: ``fn(config) -> config``, applied after the mutations.
        log_config: keep each exploit in :attr:`policy_log` (the experiment journals them all the same).
        require_attrs: a result without ``time_attr`` or the metric is an error (else it is ignored).
        synch: pause every trial at each perturbation point until the whole population has arrived, then
            perturb the bottom quantile at once (needs a finite ``num_samples``).
        seed: for the random choices; None: the experiment's seed, so a restore makes the same choices.

    Exploit = the trial takes the source trial's latest checkpoint (the experiment copies it into the
    trial's folder) and configuration; the trial is paused and resumed from it, and ``trial.config`` shows
    the explored configuration. A source without a checkpoint is not exploited (as in Ray Tune). The
    population is every trial added and not yet ended; paused trials resume least-progressed first, after
    new trials have started.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None, mode: str | None = None,
                 perturbation_interval: float = 60.0, burn_in_period: float = 0.0,
                 hyperparam_mutations: dict | None = None, quantile_fraction: float = 0.25,
                 resample_probability: float = 0.25, perturbation_factors=PERTURBATION_FACTORS,
                 custom_explore_fn=None, log_config: bool = True, require_attrs: bool = True,
                 synch: bool = False, seed: int | None = None):
        super().__init__(time_attr, metric, mode)
        self.perturbation_interval = number("perturbation_interval", perturbation_interval)
        self.burn_in_period = number("burn_in_period", burn_in_period, positive=False)
        if hyperparam_mutations is None:
            hyperparam_mutations = {}
        if not isinstance(hyperparam_mutations, dict):
            raise TypeError(f"hyperparam_mutations must be a dict {{key: values, domain or function}}, got "
                            f"{type(hyperparam_mutations).__name__}")
        if not hyperparam_mutations and custom_explore_fn is None:
            raise ValueError("PopulationBasedTraining needs hyperparam_mutations or custom_explore_fn: "
                             "otherwise explore has nothing to change")
        if custom_explore_fn is not None and not callable(custom_explore_fn):
            raise TypeError(f"custom_explore_fn must be a function config -> config, got {custom_explore_fn!r}")
        number("quantile_fraction", quantile_fraction)
        if quantile_fraction > 0.5:
            raise ValueError(f"quantile_fraction must be in (0, 0.5], got {quantile_fraction!r}")
        number("resample_probability", resample_probability, positive=False)
        if resample_probability > 1:
            raise ValueError(f"resample_probability must be in [0, 1], got {resample_probability!r}")
        if not isinstance(perturbation_factors, (list, tuple)) or not perturbation_factors:
            raise TypeError(f"perturbation_factors must be a non-empty tuple of numbers, got {perturbation_factors!r}")
        for name, flag in (("log_config", log_config), ("require_attrs", require_attrs), ("synch", synch)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self.hyperparam_mutations, self.quantile_fraction = hyperparam_mutations, quantile_fraction
        self.resample_probability = resample_probability
        self.perturbation_factors = tuple(number("perturbation factor", f) for f in perturbation_factors)
        self.custom_explore_fn, self.log_config, self.require_attrs, self.synch = \
            custom_explore_fn, log_config, require_attrs, synch
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        #: trial id -> [time of its last perturbation, its score (loss) then or None, the time of its latest
        #: checkpoint or None, ended, its config]
        self._trials: dict = {}
        self._exploits: dict = {}  # target -> (source, new config), until the experiment takes them
        self._notes: dict = {}  # target -> what its latest exploit did, for the progress view
        self._decisions: dict = {}
        self._waiting: list = []  # synch: trials paused at the barrier, in order of arrival
        self._checkpointed = None  # the trial whose result about to come has a checkpoint
        #: with ``log_config``: one dict per exploit (target, source, their times, old and new config)
        self.policy_log: list = []
        self.num_perturbations = 0

    def set_seed(self, seed: int) -> None:
        if self.seed is None:
            self._rng = np.random.default_rng([seed, 0x9B7])  # not the searcher's stream

    def settings(self) -> dict:
        return {**super().settings(), "perturbation_interval": self.perturbation_interval,
                "quantile_fraction": self.quantile_fraction, "synch": self.synch}

    def on_trial_add(self, trial_id: str, config: dict) -> None:
        missing = [key for key in self.hyperparam_mutations if key not in config]
        if missing:
            raise ValueError(f"hyperparam_mutations has {missing}, which trial {trial_id}'s config has not (its "
                             f"keys: {sorted(config)}); put them in param_space too")
        self._trials[trial_id] = [0.0, None, None, False, copy.deepcopy(config)]

    def on_checkpoint(self, trial_id: str, iteration: int) -> None:
        self._checkpointed = trial_id

    def on_result(self, trial_id: str, result: dict) -> Decision:
        if trial_id not in self._trials:
            raise ValueError(f"result for trial {trial_id!r}, which was never added (on_trial_add)")
        checkpointed, self._checkpointed = self._checkpointed == trial_id, None
        if not self.require_attrs and (self.time_attr not in result or self.metric not in result):
            return Decision.CONTINUE
        t, loss = self.result_time(trial_id, result), self.result_loss(trial_id, result)
        state = self._trials[trial_id]
        if checkpointed:
            state[2] = t
        if t < self.burn_in_period or t - state[0] < self.perturbation_interval:
            return Decision.CONTINUE
        self._observe(trial_id, t, loss)
        state[0], state[1] = t, loss
        if self.synch:
            self._waiting.append(trial_id)
            return Decision.PAUSE
        lower, upper = self._quantiles()
        if trial_id in lower:
            return Decision.PAUSE if self._exploit(trial_id, upper) else Decision.CONTINUE
        return Decision.CONTINUE

    def _quantiles(self):
        """(bottom, top): the trial ids with the worst and the best scores among the live trials."""
        scored = sorted((state[1], tid) for tid, state in self._trials.items() if state[1] is not None and not state[3])
        if len(scored) <= 1:
            return [], []
        count = min(math.ceil(len(scored) * self.quantile_fraction), len(scored) // 2)
        ids = [tid for _, tid in scored]
        return ids[len(ids) - count:], ids[:count]

    def _exploit(self, trial_id: str, upper: list) -> bool:
        source = upper[int(self._rng.integers(len(upper)))]
        source_state = self._trials[source]
        if source_state[2] is None:
            return False
        config = self._explore(source_state[4], source_state[0])
        target = self._trials[trial_id]
        if self.log_config:
            self.policy_log.append({"target": trial_id, "source": source, "target_time": target[0],
                                    "source_time": source_state[0], "old_config": target[4], "new_config": config})
        # it resumes where the source's checkpoint was taken: its next perturbation is an interval later
        target[0], target[4] = source_state[2], config
        self._notes[trial_id] = f"copied trial {source} at t={source_state[2]:g}, resumes with the explored config"
        self._exploits[trial_id] = (source, copy.deepcopy(config))
        self.num_perturbations += 1
        return True

    def _observe(self, trial_id: str, t: float, loss: float) -> None:
        """A perturbation point of ``trial_id`` (before its score is updated): what PB2 learns from."""

    def _explore(self, config: dict, t: float) -> dict:
        """The new configuration of a trial that copies ``config`` (its source's, at time ``t``)."""
        return explore(config, self.hyperparam_mutations, self._rng, self.resample_probability,
                       self.perturbation_factors, self.custom_explore_fn)

    def take_exploits(self) -> dict:
        exploits, self._exploits = self._exploits, {}
        return exploits

    def on_complete(self, trial_id: str, result: dict | None, error: bool = False) -> None:
        if trial_id in self._trials:
            self._trials[trial_id][3] = True
        if trial_id in self._waiting:
            self._waiting.remove(trial_id)

    def take_decisions(self) -> dict:
        decisions, self._decisions = self._decisions, {}
        return decisions

    def choose_trial_to_run(self, paused: list, searcher_finished: bool):
        if self.synch:
            live = [tid for tid, state in self._trials.items() if not state[3]]
            if self._waiting and searcher_finished and len(self._waiting) == len(live):
                lower, upper = self._quantiles()
                for trial_id in self._waiting:
                    if trial_id in lower:
                        self._exploit(trial_id, upper)
                    self._decisions[trial_id] = Decision.CONTINUE
                self._waiting = []
            return None
        if not searcher_finished or not paused:
            return None
        return min(paused, key=lambda tid: (self._trials[tid][0] if tid in self._trials else 0.0, tid))

    def describe_trial(self, trial_id: str) -> str:
        state = self._trials.get(trial_id)
        if state is None:
            return ""
        if trial_id in self._waiting:
            return f"waits for the population at t={state[0]:g} ({len(self._waiting)} arrived)"
        return self._notes.get(trial_id, f"next perturbation at t={state[0] + self.perturbation_interval:g}")

    def state_dict(self) -> dict:
        return {"settings": self.settings(), "rng": self._rng.bit_generator.state,
                "trials": {tid: [s[0], None if s[1] is None else encode(s[1]), s[2], s[3], s[4]]
                           for tid, s in self._trials.items()}, "waiting": list(self._waiting)}

    def load_state_dict(self, state: dict) -> None:
        check_settings(self, state)
        self._rng.bit_generator.state = state["rng"]
        self._trials = {tid: [s[0], None if s[1] is None else float(s[1]), s[2], s[3], s[4]]
                        for tid, s in state["trials"].items()}
        self._waiting = list(state["waiting"])
        self._checkpointed = None


@hookimpl
def ember_tune_schedulers():
    return {"pbt": PopulationBasedTraining}
