"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS against their formulas written out in NumPy (float64,
a few steps), options, state dicts that resume exactly, and errors. PyTorch's own numbers: test_optim_torch.py."""
import math

import numpy as np
import pytest

import ember
from ember.optim import ASGD, LBFGS, Adadelta, Adamax, NAdam, RAdam, Rprop
from ember.optim._line_search import cubic_interpolate

RNG = np.random.default_rng(0)
P0 = RNG.standard_normal((2, 3))
GRADS = [RNG.standard_normal((2, 3)) for _ in range(3)]


def run(cls, grads=GRADS, p0=P0, **kwargs):
    """The parameter after one ``step`` per gradient."""
    p = ember.tensor(p0, requires_grad=True)
    opt = cls([p], **kwargs)
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
    return p.detach().numpy(), opt


# -- the formulas, written out ------------------------------------------------------------------------------------
def ref_adadelta(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    v, u = np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        g = (-g if maximize else g) + weight_decay * p
        v = rho * v + (1 - rho) * g ** 2
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta ** 2
        p = p - lr * delta
    return p


def ref_adamax(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    m, u = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        u = np.maximum(betas[1] * u, np.abs(g) + eps)
        p = p - lr / (1 - betas[0] ** t) * m / u
    return p


def ref_nadam(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
              decoupled_weight_decay=False):
    b1, b2 = betas
    m, v, product = np.zeros_like(p), np.zeros_like(p), 1.0
    for t, g in enumerate(grads, start=1):
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        product = float(np.float32(product) * np.float32(mu_t))  # PyTorch multiplies in a float32 tensor
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu_t) / (1 - product) * g / denom - lr * mu_next / (1 - product * mu_next) * m / denom
    return p


def ref_radam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False):
    b1, b2 = betas
    m, v = np.zeros_like(p), np.zeros_like(p)
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, start=1):
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * rect * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        else:
            p = p - lr * m_hat
    return p


def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0):
    eta, mu, ax = lr, 1.0, np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        eta = float(np.float32(eta))  # eta lives in a float32 tensor between steps
        p = p * (1 - lambd * eta) - eta * g
        ax = p.copy() if mu == 1 else ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = float(np.float32(1 / max(1, t - t0)))
    return p, ax


def ref_rprop(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)):
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    for g in grads:
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)), *step_sizes)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
    return p


@pytest.mark.parametrize("cls, ref, kwargs", [
    (Adadelta, ref_adadelta, {}),
    (Adadelta, ref_adadelta, {"lr": 0.3, "rho": 0.7, "eps": 1e-4, "weight_decay": 0.2, "maximize": True}),
    (Adamax, ref_adamax, {}),
    (Adamax, ref_adamax, {"lr": 0.1, "betas": (0.5, 0.8), "eps": 1e-3, "weight_decay": 0.3}),
    (NAdam, ref_nadam, {}),
    (NAdam, ref_nadam, {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1, "momentum_decay": 0.1}),
    (NAdam, ref_nadam, {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    (RAdam, ref_radam, {}),
    (RAdam, ref_radam, {"lr": 0.1, "betas": (0.5, 0.6), "weight_decay": 0.1}),  # rho_inf = 4: never rectified
    (RAdam, ref_radam, {"lr": 0.1, "betas": (0.5, 0.95), "weight_decay": 0.1, "decoupled_weight_decay": True}),
    (Rprop, ref_rprop, {}),
    (Rprop, ref_rprop, {"lr": 0.2, "etas": (0.25, 2.0), "step_sizes": (0.1, 0.5)}),
])
def test_updates_follow_the_formulas(cls, ref, kwargs):
    grads = GRADS * 3 if cls is RAdam else GRADS  # RAdam rectifies from step 6 on with betas[1] = 0.999
    got, _ = run(cls, grads, **kwargs)
    np.testing.assert_allclose(got, ref(P0, grads, **kwargs), rtol=1e-12, atol=1e-14)


def test_radam_switches_to_the_rectified_step_after_five_steps():
    grads = [np.ones((2, 3))] * 6
    p5, _ = run(RAdam, grads[:5], lr=0.1)
    np.testing.assert_allclose(p5, P0 - 0.1 * 5, rtol=1e-12)  # m_hat = 1 each step: plain momentum steps
    p6, _ = run(RAdam, grads, lr=0.1)
    assert not np.allclose(p6, P0 - 0.1 * 6)
    np.testing.assert_allclose(p6, ref_radam(P0, grads, lr=0.1), rtol=1e-12)


def test_asgd_decays_eta_and_averages_after_t0():
    got, opt = run(ASGD, GRADS, lr=0.1, lambd=0.05, alpha=0.5, t0=1, weight_decay=0.1)
    want, want_ax = ref_asgd(P0, GRADS, lr=0.1, lambd=0.05, alpha=0.5, t0=1, weight_decay=0.1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    state = opt.state[opt.param_groups[0]["params"][0]]
    np.testing.assert_allclose(state["ax"].numpy(), want_ax, rtol=1e-12)
    assert state["mu"].item() == 0.5 and state["eta"].dtype == ember.float32  # mu = 1 / (3 - 1) after step 3
    np.testing.assert_allclose(state["eta"].item(), 0.1 / (1 + 0.05 * 0.1 * 3) ** 0.5, rtol=1e-7)


def test_hand_computed_first_steps():
    # Adamax, step 1: m = 0.1 g, u = |g| + eps, p -= lr / 0.1 * m / u = lr * sign(g) (up to eps)
    got, _ = run(Adamax, GRADS[:1], lr=0.01)
    np.testing.assert_allclose(got, P0 - 0.01 * GRADS[0] / (np.abs(GRADS[0]) + 1e-8), rtol=1e-12)
    # Rprop, two steps of g = 1: first by lr, then by 1.2 lr
    got, opt = run(Rprop, [np.ones((2, 3))] * 2, lr=0.01)
    np.testing.assert_allclose(got, P0 - 0.01 - 0.012, rtol=1e-12)
    # a sign flip halves the step size, does not move, and forgets the gradient (the next step is not a flip)
    got, opt = run(Rprop, [np.ones((2, 3)), -np.ones((2, 3)), -np.ones((2, 3))], lr=0.01)
    np.testing.assert_allclose(got, P0 - 0.01 + 0.005, rtol=1e-12)
    # Adadelta, step 1 with rho = 0: v = g^2, delta = sqrt(eps) / sqrt(g^2 + eps) * g
    got, _ = run(Adadelta, GRADS[:1], rho=0.0, eps=1e-2)
    np.testing.assert_allclose(got, P0 - 0.1 * GRADS[0] / np.sqrt(GRADS[0] ** 2 + 1e-2), rtol=1e-12)


@pytest.mark.parametrize("cls, kwargs", [(Adadelta, {}), (Adamax, {}), (NAdam, {"weight_decay": 0.1}),
                                         (RAdam, {}), (ASGD, {"t0": 1}), (Rprop, {})])
def test_state_dict_resumes_exactly_and_maximize_is_minimizing_minus(cls, kwargs):
    full, _ = run(cls, GRADS * 3, **kwargs)
    p = ember.tensor(P0, requires_grad=True)
    first = cls([p], **kwargs)
    for g in GRADS * 2:
        p.grad = ember.tensor(g)
        first.step()
    saved = first.state_dict()
    q = ember.tensor(p.detach().numpy(), requires_grad=True)
    second = cls([q], **kwargs)
    second.load_state_dict(saved)
    for g in GRADS:
        q.grad = ember.tensor(g)
        second.step()
    if cls in (NAdam, ASGD):
        # as in PyTorch, loading casts the float32 scalars of the state (mu_product; eta, mu) to the parameter's
        # dtype, so the resumed run computes them in float64 from then on
        assert all(v.dtype == ember.float64 for k, v in second.state[q].items() if k != "step")
        np.testing.assert_allclose(q.detach().numpy(), full, rtol=1e-6)
    else:
        np.testing.assert_array_equal(q.detach().numpy(), full)
    maximized, _ = run(cls, [-g for g in GRADS], maximize=True, **kwargs)
    np.testing.assert_allclose(maximized, run(cls, GRADS, **kwargs)[0], rtol=1e-12)


def test_parameters_without_gradients_are_left_alone():
    a, b = ember.tensor([1.0], requires_grad=True), ember.tensor([2.0], requires_grad=True)
    for cls in (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop):
        opt = cls([a, b])
        a.grad, b.grad = ember.tensor([1.0]), None
        opt.step()
        assert b.item() == 2.0 and b not in opt.state and a in opt.state, cls.__name__


def test_float32_parameters_stay_float32():
    for cls in (Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop):
        p = ember.tensor(P0.astype(np.float32), requires_grad=True)
        opt = cls([p], lr=0.01)
        p.grad = ember.tensor(GRADS[0].astype(np.float32))
        opt.step()
        assert p.dtype == ember.float32 and all(v.dtype == ember.float32 for v in opt.state[p].values()), cls
        np.testing.assert_allclose(p.detach().numpy(), run(cls, GRADS[:1], lr=0.01)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make, message", [
    (lambda p: Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
    (lambda p: Adadelta(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: Adamax(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda p: NAdam(p, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda p: RAdam(p, eps=-1), "Invalid epsilon value: -1"),
    (lambda p: ASGD(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: Rprop(p, etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    (lambda p: LBFGS(p, lr=-0.5), "Invalid learning rate: -0.5"),
    (lambda p: LBFGS(p, line_search_fn="backtracking"), "line_search_fn must be None or 'strong_wolfe'"),
    (lambda p: LBFGS([{"params": p}, {"params": [ember.zeros(1, requires_grad=True)]}]),
     "LBFGS doesn't support per-parameter options"),
])
def test_bad_options_raise_pytorchs_errors(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make([ember.zeros(2, requires_grad=True)])


# -- LBFGS ------------------------------------------------------------------------------------------------------------
def quadratic_closure(opt, x, a, b):
    """0.5 x.A x - b.x, whose minimiser is A^-1 b."""
    def closure():
        opt.zero_grad()
        loss = 0.5 * (x * (a @ x)).sum() - (b * x).sum()
        loss.backward()
        return loss
    return closure


def test_lbfgs_first_iteration_is_a_scaled_gradient_step_then_quasi_newton():
    a = ember.tensor([[3.0, 1.0], [1.0, 2.0]], dtype=ember.float64)
    b = ember.tensor([1.0, -1.0], dtype=ember.float64)
    x = ember.tensor([0.0, 0.0], dtype=ember.float64, requires_grad=True)
    opt = LBFGS([x], lr=1, max_iter=1)
    opt.step(quadratic_closure(opt, x, a, b))
    g0 = -b.numpy()  # the gradient at 0
    t = min(1.0, 1.0 / np.abs(g0).sum())  # 0.5
    np.testing.assert_allclose(x.detach().numpy(), -t * g0, rtol=1e-15)
    assert opt.state[x]["func_evals"] == 1 and opt.state[x]["n_iter"] == 1
    # iteration 2 (the next step): y = g1 - g0, s = t d, H_diag = y.s / y.y, then the two-loop recursion
    x1 = x.detach().numpy().copy()
    g1 = a.numpy() @ x1 - b.numpy()
    y, s = g1 - g0, x1
    rho, h = 1 / (y @ s), (y @ s) / (y @ y)
    alpha = rho * (s @ -g1)
    r = h * (-g1 - alpha * y)
    d = r + s * (alpha - rho * (y @ r))
    opt.step(quadratic_closure(opt, x, a, b))
    np.testing.assert_allclose(x.detach().numpy(), x1 + d, rtol=1e-13)
    state = opt.state[x]
    # PyTorch 2.13's order: 'al' comes last when the first step made only one iteration
    assert list(state) == ["func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                           "prev_flat_grad", "prev_loss", "al"]
    np.testing.assert_allclose(state["H_diag"].item(), h, rtol=1e-14)
    assert len(state["old_dirs"]) == 1 and state["al"][1] is None and len(state["al"]) == 100


def test_lbfgs_strong_wolfe_solves_a_quadratic_and_stops_on_tolerance_grad():
    a = ember.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]], dtype=ember.float64)
    b = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    opt = LBFGS([x], line_search_fn="strong_wolfe", history_size=3)
    first = opt.step(quadratic_closure(opt, x, a, b))
    assert first.item() == 0.0  # the loss of the first evaluation, at x = 0
    # it stops once the loss changes by less than tolerance_change (1e-9): x is then within ~1e-5
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(a.numpy(), b.numpy()), rtol=1e-4)
    evals = opt.state[x]["func_evals"]
    assert evals == opt.state[x]["n_iter"] == 8  # PyTorch 2.13: 8 and 8
    assert opt.defaults["max_eval"] == 25
    opt.step(quadratic_closure(opt, x, a, b))  # already optimal: one evaluation, no iteration
    assert opt.state[x]["func_evals"] == evals + 1


def test_lbfgs_history_size_and_max_eval_and_float32():
    x = ember.tensor([-1.2, 1.0, 0.3], requires_grad=True)
    opt = LBFGS([x], history_size=2, max_iter=50, max_eval=30, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
        loss.backward()
        return loss

    start = closure().item()
    opt.step(closure)
    assert len(opt.state[x]["old_dirs"]) == 2 and x.dtype == ember.float32
    assert opt.state[x]["func_evals"] <= 30 + 25  # a line search may finish past max_eval, as in PyTorch
    assert closure().item() < start / 10
    with pytest.raises(TypeError):
        opt.step()  # the closure is required


def test_lbfgs_state_dict_round_trip_continues_identically():
    def make():
        x = ember.tensor([-1.2, 1.0], dtype=ember.float64, requires_grad=True)
        return x, LBFGS([x], max_iter=4, line_search_fn="strong_wolfe")

    def closure_for(opt, x):
        def closure():
            opt.zero_grad()
            loss = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
            loss.backward()
            return loss
        return closure

    x, opt = make()
    for _ in range(3):
        opt.step(closure_for(opt, x))
    y, other = make()
    other.step(closure_for(other, y))
    saved = other.state_dict()
    z, resumed = make()
    with ember.no_grad():
        z.copy_(y)
    resumed.load_state_dict(saved)
    for _ in range(2):
        resumed.step(closure_for(resumed, z))
    np.testing.assert_array_equal(z.detach().numpy(), x.detach().numpy())


def test_cubic_interpolation():
    # f = (x - 1)^2 through x = 0 and x = 3: the minimiser 1 exactly
    assert cubic_interpolate(0.0, 1.0, -2.0, 3.0, 4.0, 4.0) == pytest.approx(1.0)
    assert cubic_interpolate(3.0, 4.0, 4.0, 0.0, 1.0, -2.0) == pytest.approx(1.0)
    assert cubic_interpolate(0.0, 1.0, -2.0, 3.0, 4.0, 4.0, bounds=(1.5, 2.0)) == 1.5
    # no real minimiser (slopes of a concave cubic): the midpoint of the bounds
    assert cubic_interpolate(0.0, 0.0, 1.0, 1.0, 2 / 3, 1.0) == 0.5


# -- Adafactor -------------------------------------------------------------------------------------------------------
def ref_adafactor(p, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0):
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]

    def rms(a):
        return np.sqrt((a ** 2).mean())

    row = np.zeros(p.shape[:-1] + (1,))
    col = np.zeros(p.shape[:-2] + (1, p.shape[-1])) if p.ndim > 1 else None
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        b = 1 - t ** beta2_decay  # beta2_t
        alpha = max(eps[1], rms(p)) * min(lr, 1 / math.sqrt(t))
        p = p * (1 - lr * weight_decay)
        if p.ndim > 1:
            row = b * row + (1 - b) * (g ** 2).mean(-1, keepdims=True)
            col = b * col + (1 - b) * (g ** 2).mean(-2, keepdims=True)
            var = row @ col / np.maximum(row.mean(-2, keepdims=True), eps1)
        else:
            v = b * v + (1 - b) * g ** 2
            var = v
        u = g / np.sqrt(np.maximum(var, eps1 ** 2))
        p = p - alpha / max(1, rms(u) / d) * u
    return p


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("kwargs", [{}, {"lr": 0.3, "beta2_decay": -0.5, "eps": (1e-3, 1e-2), "d": 1.5,
                                         "weight_decay": 0.2}])
def test_adafactor_follows_the_formulas(shape, kwargs):
    rng = np.random.default_rng(len(shape))
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(3)]
    got, opt = run(ember.optim.Adafactor, grads, p0, **kwargs)
    np.testing.assert_allclose(got, ref_adafactor(p0, grads, **kwargs), rtol=1e-12, atol=1e-14)
    state = opt.state[opt.param_groups[0]["params"][0]]
    if len(shape) > 1:
        assert set(state) == {"step", "row_var", "col_var"}
        assert state["row_var"].shape == shape[:-1] + (1,) and state["col_var"].shape == shape[:-2] + (1, shape[-1])
    else:
        assert set(state) == {"step", "variance"}


@pytest.mark.parametrize("kwargs, message", [
    ({"lr": -1}, "Learning rate should be >= 0 but is: -1"),
    ({"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
    ({"eps": (-1, 1e-3)}, "epsilon1 should be >= 0 but is: -1"),
    ({"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
])
def test_adafactor_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ember.optim.Adafactor([ember.zeros(2, requires_grad=True)], **kwargs)


# -- SparseAdam: ember has no sparse gradients, so it refuses the dense ones as PyTorch's does -------------------------
def test_sparse_adam_refuses_dense_gradients_as_pytorch_does():
    emb = ember.nn.Embedding(5, 2, sparse=True)
    opt = ember.optim.SparseAdam(emb.parameters(), lr=0.1)
    assert list(opt.state_dict()["param_groups"][0]) == ["lr", "betas", "eps", "maximize", "params"]  # PyTorch's
    before = emb.weight.detach().numpy().copy()
    assert opt.step(lambda: ember.tensor(2.0)).item() == 2.0  # no gradient yet: nothing to refuse
    emb(ember.tensor([1, 3])).sum().backward()
    with pytest.raises(RuntimeError, match=r"^SparseAdam does not support dense gradients, please consider Adam "
                                           r"instead \(ember has no sparse tensors"):
        opt.step()
    np.testing.assert_array_equal(emb.weight.detach().numpy(), before)
    for kwargs, message in (({"lr": 0.0}, "Invalid learning rate: 0.0"), ({"eps": 0}, "Invalid epsilon value: 0"),
                            ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0")):
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            ember.optim.SparseAdam(emb.parameters(), **kwargs)


# -- Muon --------------------------------------------------------------------------------------------------------------
def test_muon_orthogonalises_the_momentum_and_scales_lr_by_shape():
    rng = np.random.default_rng(5)
    p0, g = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    got, opt = run(ember.optim.Muon, [g], p0, lr=0.1, weight_decay=0.5, ns_steps=10)
    # step 1: b = 0.05 g, Nesterov u = 0.05 g + 0.95 b; NS(u) is close to the polar factor U V^T of g
    # (bfloat16 and the quintic's overshoot leave its singular values within about 0.3 of 1)
    u, _, vt = np.linalg.svd(g, full_matrices=False)
    step = (p0 * (1 - 0.1 * 0.5) - got) / (0.1 * math.sqrt(6 / 3))
    np.testing.assert_allclose(np.linalg.svd(step, compute_uv=False), 1.0, atol=0.35)
    assert np.abs(step - u @ vt).max() < 0.35
    np.testing.assert_allclose(opt.state[opt.param_groups[0]["params"][0]]["momentum_buffer"].numpy(), 0.05 * g,
                               rtol=1e-12)
    wide, _ = run(ember.optim.Muon, [g.T], p0.T, lr=0.1, weight_decay=0.0, adjust_lr_fn="match_rms_adamw")
    assert wide.shape == (3, 6)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function sqrt is not supported"):
        ember.optim.Muon([ember.zeros(2, 2, requires_grad=True)], adjust_lr_fn="sqrt")
    with pytest.raises(ValueError, match="Number of steps must be less than 100"):
        run(ember.optim.Muon, [g], p0, ns_steps=100)
