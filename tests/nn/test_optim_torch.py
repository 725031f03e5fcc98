"""The optimizers added for PyTorch programs replay PyTorch 2.13's steps: parameters after every step, final
state and the state dict's keys.

The fixtures tests/fixtures/torch/optim_steps.safetensors and optim_lbfgs.safetensors were made by
tests/fixtures/make_optim_fixtures.py (float64 parameters, fixed gradients; LBFGS on the Rosenbrock function).
"""
import json
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import ember

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch"


def _load(name):
    path = FIXTURES / f"{name}.safetensors"
    with safetensors.safe_open(path, framework="numpy") as f:
        cases = json.loads(f.metadata()["cases"])
    return cases, safetensors.numpy.load_file(path)


STEP_CASES, STEP_ARRAYS = _load("optim_steps")
LBFGS_CASES, LBFGS_ARRAYS = _load("optim_lbfgs")


def rosenbrock(x):
    """The same expression as the fixture script's."""
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def test_every_optimizer_of_the_fixtures_is_covered():
    assert {spec["optimizer"] for spec in STEP_CASES.values()} == {"Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
                                                                   "Rprop", "Adafactor", "Muon"}


@pytest.mark.parametrize("case", sorted(STEP_CASES))
def test_steps_match_pytorch(case):
    spec, arrays = STEP_CASES[case], STEP_ARRAYS
    params = [ember.tensor(arrays[f"{case}.init_{k}"], requires_grad=True) for k in range(2)]
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["kwargs"].items()}
    opt = getattr(ember.optim, spec["optimizer"])(params, **kwargs)
    for step in range(spec["steps"]):
        for k, p in enumerate(params):
            p.grad = ember.tensor(arrays[f"{case}.grad_{step}_{k}"])
        opt.step()
        for k, p in enumerate(params):
            np.testing.assert_allclose(p.detach().numpy(), arrays[f"{case}.param_{step}_{k}"], rtol=1e-10,
                                       atol=1e-12, err_msg=f"{case}: step {step}, parameter {k}")
    state = opt.state_dict()
    assert list(state["state"][0]) == spec["state_keys"]
    assert list(state["param_groups"][0]) == spec["group_keys"]
    for k in range(2):
        for key, value in state["state"][k].items():
            want = arrays[f"{case}.state_{k}.{key}"]
            # 0-d state (step, NAdam's mu_product, ASGD's eta and mu) is float32 in both, as PyTorch keeps it
            assert value.dtype == (ember.float32 if want.dtype == np.float32 else ember.float64), key
            np.testing.assert_allclose(value.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=f"{case}: {key}")


@pytest.mark.parametrize("case", sorted(LBFGS_CASES))
def test_lbfgs_matches_pytorch_on_rosenbrock(case):
    spec, arrays = LBFGS_CASES[case], LBFGS_ARRAYS
    x = ember.tensor(arrays[f"{case}.init"], requires_grad=True)
    opt = ember.optim.LBFGS([x], **spec["kwargs"])

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    for call in range(spec["calls"]):
        loss = opt.step(closure)
        np.testing.assert_allclose(float(loss), arrays[f"{case}.loss"][call], rtol=1e-10, err_msg=f"call {call}")
        np.testing.assert_allclose(x.detach().numpy(), arrays[f"{case}.param_{call}"], rtol=1e-9, atol=1e-11,
                                   err_msg=f"call {call}")
        assert opt.state[x]["func_evals"] == spec["func_evals"][call]
        assert opt.state[x]["n_iter"] == spec["n_iter"][call]
    assert list(opt.state_dict()["state"][0]) == spec["state_keys"]
    assert list(opt.state_dict()["param_groups"][0]) == spec["group_keys"]
