"""Optimizers: updates against independent NumPy versions of the documented algorithms, parameter groups,
zero_grad, state dicts that resume bit for bit, hooks, errors."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.optim
from ember.optim import SGD, Adagrad, Adam, AdamW, RMSprop
from ember.optim.optimizer import Optimizer, required


# -- independent references: the algorithms as PyTorch's documentation writes them, on float64 arrays -------------
def ref_sgd(p, grads, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    p = p.copy()
    b = None
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        if momentum:
            b = g if t == 1 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p + lr * g if maximize else p - lr * g
    return p


def ref_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    p = p.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    v_max = np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        if maximize:
            g = -g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        if amsgrad:
            v_max = np.maximum(v_max, v)
            v_hat = v_max / (1 - b2 ** t)
        else:
            v_hat = v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    p = p.copy()
    v = np.zeros_like(p)
    g_avg = np.zeros_like(p)
    b = np.zeros_like(p)
    for g in grads:
        if maximize:
            g = -g
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g ** 2
        v_tilde = v
        if centered:
            g_avg = alpha * g_avg + (1 - alpha) * g
            v_tilde = v - g_avg ** 2
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(v_tilde) + eps)
            p = p - lr * b
        else:
            p = p - lr * g / (np.sqrt(v_tilde) + eps)
    return p


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    p = p.copy()
    total = np.full_like(p, initial_accumulator_value)
    for t, g in enumerate(grads, start=1):
        if maximize:
            g = -g
        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        total = total + g * g
        p = p - clr * g / (np.sqrt(total) + eps)
    return p


def ref_adamw(p, grads, weight_decay=1e-2, **kw):
    return ref_adam(p, grads, weight_decay=weight_decay, decoupled=True, **kw)


CASES = [
    (SGD, ref_sgd, dict(lr=0.1)),
    (SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (SGD, ref_sgd, dict(lr=0.05, momentum=0.5, maximize=True)),
    (Adam, ref_adam, dict()),
    (Adam, ref_adam, dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    (Adam, ref_adam, dict(lr=0.05, amsgrad=True)),
    (Adam, ref_adam, dict(lr=0.05, maximize=True, amsgrad=True, weight_decay=0.05)),
    (AdamW, ref_adamw, dict(lr=0.05)),
    (AdamW, ref_adamw, dict(lr=0.05, weight_decay=0.3, amsgrad=True, maximize=True)),
    (RMSprop, ref_rmsprop, dict()),
    (RMSprop, ref_rmsprop, dict(lr=0.02, alpha=0.9, weight_decay=0.1)),
    (RMSprop, ref_rmsprop, dict(lr=0.02, momentum=0.7, centered=True)),
    (RMSprop, ref_rmsprop, dict(lr=0.01, centered=True, maximize=True, eps=1e-4)),
    (Adagrad, ref_adagrad, dict(lr=0.1)),
    (Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.2, weight_decay=0.1, initial_accumulator_value=0.3)),
    (Adagrad, ref_adagrad, dict(lr=0.1, maximize=True, eps=1e-3)),
]
IDS = [f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for cls, _, kw in CASES]

INIT = np.random.default_rng(0).standard_normal((3, 4))


def grad_of(p: np.ndarray, t: int) -> np.ndarray:
    """A gradient that depends on the parameter and on the step (so that state matters)."""
    return p ** 3 - 0.5 * p + 0.1 * t


def run_ember(cls, kw, steps, dtype=ember.float64, device="cpu", init=INIT):
    p = ember.tensor(init, dtype=dtype, device=device, requires_grad=True)
    opt = cls([p], **kw)
    for t in range(steps):
        p.grad = ember.tensor(grad_of(p.detach().numpy(force=True).astype(np.float64), t), dtype=dtype,
                              device=device)
        opt.step()
    return p, opt


def ref_run(ref, kw, steps, init=INIT):
    """The reference fed the same gradient rule: it must replay the trajectory, so step by step."""
    p = init.copy()
    grads = []
    for t in range(steps):
        g = grad_of(p, t)
        grads.append(g)
        p = ref(init, grads, **kw)
    return p


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_steps_match_the_documented_algorithm(cls, ref, kw):
    p, _ = run_ember(cls, kw, steps=5)
    np.testing.assert_allclose(p.detach().numpy(), ref_run(ref, kw, 5), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls,ref,kw", CASES[::3], ids=IDS[::3])
def test_float32_stays_float32(cls, ref, kw):
    p, opt = run_ember(cls, kw, steps=4, dtype=ember.float32)
    assert p.dtype is ember.float32
    for value in opt.state[p].values():
        if value.ndim:
            assert value.dtype is ember.float32
    np.testing.assert_allclose(p.detach().numpy(), ref_run(ref, kw, 4, init=INIT.astype(np.float32)),
                               rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("cls,ref,kw", [CASES[i] for i in (2, 8, 13, 16)], ids=[IDS[i] for i in (2, 8, 13, 16)])
def test_other_backend_gives_the_same_steps(cls, ref, kw, device):
    p, opt = run_ember(cls, kw, steps=3, device=device)
    assert p.device.type == device
    np.testing.assert_allclose(p.detach().numpy(force=True), ref_run(ref, kw, 3), rtol=1e-12, atol=1e-14)


def test_training_with_backward_and_a_closure():
    x = ember.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], dtype=ember.float64)
    target = x @ ember.tensor([[2.0], [-3.0]], dtype=ember.float64)
    w = ember.zeros(2, 1, dtype=ember.float64, requires_grad=True)
    opt = SGD([w], lr=0.05, momentum=0.9)
    calls = []

    def closure():
        calls.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = ((x @ w - target) ** 2).mean()
        loss.backward()
        return loss

    with ember.no_grad():  # step turns gradients on for the closure
        first = opt.step(closure)
    for _ in range(200):
        last = opt.step(closure)
    assert calls[0] is True and len(calls) == 201
    assert last.item() < 1e-6 < 1.0 < first.item()
    np.testing.assert_allclose(w.detach().numpy().ravel(), [2.0, -3.0], atol=1e-3)


def test_parameter_groups_have_their_own_options():
    a = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([3.0], dtype=ember.float64, requires_grad=True)
    opt = SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["momentum"] for g in opt.param_groups] == [0, 0.9]
    a.grad = ember.ones(2, dtype=ember.float64)
    b.grad = ember.ones(1, dtype=ember.float64)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 1.9])
    np.testing.assert_allclose(b.detach().numpy(), [2.5])
    assert a not in opt.state and "momentum_buffer" in opt.state[b]  # plain SGD keeps no state
    opt.param_groups[0]["lr"] = 1.0  # options are read at every step (schedulers rely on it)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [-0.1, 0.9])


def test_add_param_group_and_its_errors():
    a, b, c = (ember.zeros(2, requires_grad=True) for _ in range(3))
    opt = Adam([a], lr=0.1)
    opt.add_param_group({"params": [b], "lr": 0.01})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    assert opt.param_groups[1]["lr"] == 0.01
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [c, a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([c])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {c}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        opt.add_param_group({"params": [3]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        opt.add_param_group({"params": [c * 2]})
    with pytest.raises(ValueError, match="cannot add param group with names"):
        opt.add_param_group({"params": [("c", c)]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt.add_param_group({"params": [c, c]})


def test_required_option_and_bad_params():
    class Plain(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            pass

    a = ember.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Plain([a])
    assert Plain([{"params": [a], "lr": 0.3}]).param_groups[0]["lr"] == 0.3
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got ember.Tensor"):
        SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="Some param names are missing"):
        SGD([("a", a), ember.zeros(1, requires_grad=True)])


@pytest.mark.parametrize("make,message", [
    (lambda p: SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: SGD(p, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: SGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: SGD(p, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: SGD(p, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda p: Adam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: AdamW(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: RMSprop(p, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda p: Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
])
def test_invalid_options(make, message):
    with pytest.raises(ValueError, match=message):
        make([ember.zeros(1, requires_grad=True)])


def test_differentiable_is_refused():
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        Adam([ember.zeros(1, requires_grad=True)], differentiable=True)


def test_zero_grad():
    p = ember.ones(3, requires_grad=True)
    opt = SGD([p], lr=0.1)
    (p * 2).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # nothing to reset: fine
    opt.step()  # parameters without a gradient are skipped
    assert p.tolist() == [1.0, 1.0, 1.0] and len(opt.state) == 0


def test_step_bumps_versions_so_stale_saved_values_are_caught():
    p = ember.ones(2, requires_grad=True)
    y = (p * p).sum()
    p.grad = ember.ones(2)
    before = p._version
    Adam([p]).step()
    assert p._version > before and p.requires_grad and p.is_leaf
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_first_step_state_layout():
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = Adam([p], amsgrad=True)
    opt.step()
    state = opt.state[p]
    assert sorted(state) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert state["step"].shape == () and state["step"].dtype is ember.float32 and state["step"].item() == 1.0
    assert not state["exp_avg"].requires_grad
    rms = RMSprop([p], momentum=0.5, centered=True)
    rms.step()
    assert sorted(rms.state[p]) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
    ada = Adagrad([p], initial_accumulator_value=0.5)  # Adagrad makes its state with the optimizer
    assert ada.state[p]["sum"].tolist() == [0.5, 0.5] and ada.state[p]["step"].item() == 0.0
    late = ember.ones(1, requires_grad=True)
    late.grad = ember.ones(1)
    ada.add_param_group({"params": [late], "lr": 1.0})  # a later group's state is made at its first step
    ada.step()
    assert ada.state[late]["sum"].tolist() == [1.5] and ada.state[late]["step"].item() == 1.0


def test_repr_is_pytorchs():
    p, q = ember.zeros(1, requires_grad=True), ember.zeros(1, requires_grad=True)
    opt = SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1, momentum=0.9)
    # printed by torch.optim.SGD with the same arguments (PyTorch 2.13)
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
        "    lr: 0.1\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n\n"
        "Parameter Group 1\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
        "    lr: 0.5\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n)")
    # the keys of torch.optim.Adam's groups (PyTorch 2.13)
    assert sorted(Adam([p]).param_groups[0]) == sorted(
        ["params", "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
         "differentiable", "fused", "decoupled_weight_decay"])
    assert AdamW([p]).param_groups[0]["decoupled_weight_decay"] is True


def test_hooks():
    p = ember.ones(1, requires_grad=True)
    p.grad = ember.ones(1)
    opt = SGD([p], lr=0.5)
    seen = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o is opt, args)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", p.item())))
    glob = ember.optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: seen.append("global"))
    try:
        opt.step()
    finally:
        glob.remove()
    assert seen == ["global", ("pre", True, ()), ("post", 0.5)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(seen) == 3

    def replace_closure(o, args, kwargs):
        return (), {"closure": lambda: 42}
    opt.register_step_pre_hook(replace_closure)
    assert opt.step() == 42
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.register_step_pre_hook(lambda o, a, k: 1)
        opt.step()


def test_named_parameters():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(1, requires_grad=True)
    opt = SGD([("fc.weight", a), ("fc.bias", b)], lr=0.1, momentum=0.9)
    group = opt.param_groups[0]
    assert group["params"][0] is a and group["param_names"] == ["fc.weight", "fc.bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["fc.weight", "fc.bias"]


# -- state dicts ------------------------------------------------------------------------------------------
def snapshot(value):
    """A copy of nested containers with tensors cloned (what saving a checkpoint to disk amounts to)."""
    if isinstance(value, ember.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value)
    return value


def two_group_run(cls, kw, params, opt, steps, start):
    for t in range(start, start + steps):
        for i, p in enumerate(params):
            p.grad = ember.tensor(grad_of(p.detach().numpy().astype(np.float64), t + i), dtype=p.dtype)
        opt.step()


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_state_dict_resumes_bit_for_bit(cls, ref, kw):
    rng = np.random.default_rng(1)
    inits = [rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)]

    def fresh(values):
        params = [ember.tensor(v, requires_grad=True) for v in values]
        return params, cls([{"params": params[:1]}, {"params": params[1:], "lr": 0.03}], **kw)

    params, opt = fresh(inits)
    two_group_run(cls, kw, params, opt, 3, 0)
    saved = snapshot(opt.state_dict())
    saved_params = [p.detach().numpy().copy() for p in params]
    two_group_run(cls, kw, params, opt, 3, 3)

    params2, opt2 = fresh(saved_params)
    opt2.load_state_dict(saved)
    two_group_run(cls, kw, params2, opt2, 3, 3)
    for p, p2 in zip(params, params2):
        assert np.array_equal(p.detach().numpy(), p2.detach().numpy())
    assert opt2.param_groups[1]["lr"] == 0.03 and opt2.param_groups[0]["params"][0] is params2[0]


def test_state_dict_layout_and_load_copies():
    a, b = ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)
    opt = Adam([{"params": [a]}, {"params": [b], "lr": 0.5}])
    a.grad = ember.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert list(sd) == ["state", "param_groups"]
    assert list(sd["state"]) == [0]  # b had no gradient: no state
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["state"][0]["exp_avg"] is opt.state[a]["exp_avg"]  # live references, as PyTorch's
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5 and "params" in opt.param_groups[0]

    a2 = ember.ones(2, dtype=ember.float64, requires_grad=True)
    b2 = ember.ones(3, dtype=ember.float64, requires_grad=True)
    opt2 = Adam([{"params": [a2]}, {"params": [b2]}])
    opt2.load_state_dict(sd)
    loaded = opt2.state[a2]
    assert loaded["exp_avg"].dtype is ember.float64  # cast to the parameter's dtype
    assert loaded["step"].dtype is ember.float32  # but the step count keeps its own
    assert loaded["exp_avg"] is not sd["state"][0]["exp_avg"]
    loaded["exp_avg"].zero_()
    assert sd["state"][0]["exp_avg"].tolist() == pytest.approx([0.1, 0.1])
    assert opt2.param_groups[1]["lr"] == 0.5
    opt2.param_groups[1]["lr"] = 7.0
    assert sd["param_groups"][1]["lr"] == 0.5


def test_load_state_dict_string_keys():
    """A checkpoint format that stores keys as strings (JSON) still loads."""
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    opt = SGD([p], lr=0.1, momentum=0.9)
    opt.step()
    sd = snapshot(opt.state_dict())
    sd["state"] = {str(k): v for k, v in sd["state"].items()}
    opt2 = SGD([ember.ones(2, requires_grad=True)], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.state[opt2.param_groups[0]["params"][0]]["momentum_buffer"].tolist() == [1.0, 1.0]


def test_load_state_dict_errors():
    a, b = ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)
    sd = SGD([{"params": [a]}, {"params": [b]}], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        SGD([a, b], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="contains a parameter group that doesn't match the size of optimizer's"):
        SGD([{"params": [a, b]}, {"params": [ember.ones(1, requires_grad=True)]}], lr=0.1).load_state_dict(sd)


def test_state_dict_hooks():
    p = ember.ones(1, requires_grad=True)
    opt = SGD([p], lr=0.1)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1 and order == ["pre"]

    def halve_lr(o, sd):
        sd = snapshot(sd)
        sd["param_groups"][0]["lr"] /= 2
        return sd
    opt.register_load_state_dict_pre_hook(halve_lr)
    opt.register_load_state_dict_post_hook(lambda o: order.append("loaded"))
    opt.load_state_dict(opt.state_dict())
    assert opt.param_groups[0]["lr"] == 0.05 and order[-1] == "loaded"


def test_adam_bias_correction_by_hand():
    """Two Adam steps worked out on paper: g = 1 then g = 3, lr = 0.1, default betas."""
    p = ember.tensor([0.0], dtype=ember.float64, requires_grad=True)
    opt = Adam([p], lr=0.1, eps=0.0)
    p.grad = ember.tensor([1.0], dtype=ember.float64)
    opt.step()
    assert p.item() == pytest.approx(-0.1, rel=1e-14)  # m_hat = 1, v_hat = 1
    p.grad = ember.tensor([3.0], dtype=ember.float64)
    opt.step()
    m_hat = (0.9 * 0.1 + 0.1 * 3) / (1 - 0.81)
    v_hat = (0.999 * 0.001 + 0.001 * 9) / (1 - 0.999 ** 2)
    assert p.item() == pytest.approx(-0.1 - 0.1 * m_hat / math.sqrt(v_hat), rel=1e-14)


def test_scheduler_warning_needs_optimizer_step_first():
    p = ember.ones(1, requires_grad=True)
    opt = SGD([p], lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = SGD([p], lr=0.1)
    sched2 = ember.optim.lr_scheduler.StepLR(opt2, 1)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()


def test_checkpoint_of_model_optimizer_and_scheduler_resumes_bit_for_bit():
    """The seed's checkpoint dict (epoch, model, optimizer, scheduler): resuming gives the same parameters."""
    from ember import nn
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((16, 4)).astype(np.float32))
    y = ember.tensor(rng.standard_normal((16, 2)).astype(np.float32))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(4, 8)
            self.out = nn.Linear(8, 2)

        def forward(self, inputs):
            return self.out(self.hidden(inputs).tanh())

    def build():
        ember.manual_seed(0)
        model = MLP()
        opt = AdamW(model.parameters(), lr=0.05, amsgrad=True)
        sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
        return model, opt, sched

    def train(model, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            sched.step()

    model, opt, sched = build()
    train(model, opt, sched, 5)
    checkpoint = snapshot({"epoch": 5, "model": model.state_dict(), "optimizer": opt.state_dict(),
                           "scheduler": sched.state_dict()})
    train(model, opt, sched, 6)

    model2, opt2, sched2 = build()
    model2.load_state_dict(checkpoint["model"])
    opt2.load_state_dict(checkpoint["optimizer"])
    sched2.load_state_dict(checkpoint["scheduler"])
    assert isinstance(opt2.param_groups[0]["params"][0], nn.Parameter)
    train(model2, opt2, sched2, 6)
    for (name, p), p2 in zip(model.named_parameters(), model2.parameters()):
        assert np.array_equal(p.detach().numpy(), p2.detach().numpy()), name
    assert opt2.param_groups[0]["betas"] == opt.param_groups[0]["betas"]
