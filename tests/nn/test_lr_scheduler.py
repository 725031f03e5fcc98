"""Learning-rate schedulers: each one's sequence (PyTorch's values, and closed forms where they exist), state dicts
that resume bit for bit, ReduceLROnPlateau's behaviour, errors."""
import math

import pytest

import ember
import ember.optim
from ember.optim import SGD, Adagrad, Adam
from ember.optim import lr_scheduler as S


def sgd2():
    """SGD with two parameter groups (lr 0.1 and 0.5) and momentum, as in the PyTorch runs below."""
    return SGD([{"params": [ember.zeros(1, requires_grad=True)]},
                {"params": [ember.zeros(1, requires_grad=True)], "lr": 0.5}], lr=0.1, momentum=0.9)


def run(opt, sched, n, metrics=None):
    """The groups' learning rates after construction and after each of ``n`` (optimizer, scheduler) steps."""
    lrs = [[g["lr"] for g in opt.param_groups]]
    for i in range(n):
        opt.step()
        sched.step(metrics[i]) if metrics else sched.step()
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        lrs.append(list(sched.get_last_lr()))
    return lrs


def approx(seq):
    return [pytest.approx(x, rel=1e-12, abs=1e-15) for x in seq]


# -- sequences printed by PyTorch 2.13 for the same schedulers on the same two-group SGD (computed by hand) -----
TORCH_SEQUENCES = {
    "step": [[0.1, 0.5], [0.1, 0.5], [0.1, 0.5], [0.05, 0.25], [0.05, 0.25], [0.05, 0.25], [0.025, 0.125],
             [0.025, 0.125], [0.025, 0.125], [0.0125, 0.0625], [0.0125, 0.0625]],
    "multistep": [[0.1, 0.5], [0.1, 0.5], [0.010000000000000002, 0.05], [0.010000000000000002, 0.05],
                  [0.010000000000000002, 0.05], [0.00010000000000000005, 0.0005000000000000001],
                  [0.00010000000000000005, 0.0005000000000000001], [1.0000000000000006e-05, 5.0000000000000016e-05],
                  [1.0000000000000006e-05, 5.0000000000000016e-05], [1.0000000000000006e-05, 5.0000000000000016e-05],
                  [1.0000000000000006e-05, 5.0000000000000016e-05]],
    "cos": [[0.1, 0.5], [0.08681980515339464, 0.4282411613907041], [0.05500000000000001, 0.255],
            [0.023180194846605363, 0.08175883860929586], [0.01, 0.01], [0.023180194846605363, 0.08175883860929584],
            [0.05500000000000002, 0.255], [0.08681980515339469, 0.42824116139070423],
            [0.10000000000000006, 0.5000000000000001], [0.0868198051533947, 0.4282411613907043],
            [0.05500000000000005, 0.2550000000000001], [0.023180194846605412, 0.08175883860929607], [0.01, 0.01]],
    "lambda": [[0.1, 0.5], [0.095, 0.25], [0.09025, 0.16666666666666666], [0.0857375, 0.125], [0.081450625, 0.1],
               [0.07737809374999999, 0.08333333333333333], [0.07350918906249998, 0.07142857142857142]],
    "linear": [[0.020000000000000004, 0.1], [0.037500000000000006, 0.1875], [0.05500000000000001, 0.27499999999999997],
               [0.07250000000000001, 0.36249999999999993], [0.09000000000000001, 0.44999999999999996],
               [0.09000000000000001, 0.44999999999999996], [0.09000000000000001, 0.44999999999999996],
               [0.09000000000000001, 0.44999999999999996]],
    "onecycle": [[0.040000000000000036, 0.08000000000000007], [0.52, 1.04], [1.0, 2.0],
                 [0.9504846320134737, 1.9009692640269473], [0.8117456539497631, 1.6234913078995261],
                 [0.6112620219362893, 1.2225240438725786], [0.38874197806371075, 0.7774839561274215],
                 [0.18825834605023697, 0.37651669210047395], [0.049519367986526286, 0.09903873597305257],
                 [4e-06, 8e-06]],
    "onecycle_three_phase_linear": [[0.04, 0.04], [0.52, 0.52], [1.0, 1.0], [0.52, 0.52],
                                    [0.040000000000000036, 0.040000000000000036],
                                    [0.034286285714285714, 0.034286285714285714],
                                    [0.02857257142857143, 0.02857257142857143],
                                    [0.022858857142857143, 0.022858857142857143],
                                    [0.01714514285714286, 0.01714514285714286],
                                    [0.011431428571428568, 0.011431428571428568],
                                    [0.005717714285714284, 0.005717714285714284],
                                    [3.9999999999970615e-06, 3.9999999999970615e-06]],
    "sequential": [[0.010000000000000002, 0.05], [0.04, 0.19999999999999998], [0.07, 0.35], [0.1, 0.5],
                   [0.09045084971874738, 0.45225424859373686], [0.06545084971874737, 0.32725424859373686],
                   [0.03454915028125263, 0.17274575140626314], [0.009549150281252633, 0.04774575140626316], [0.0, 0.0],
                   [0.009549150281252628, 0.04774575140626314], [0.03454915028125265, 0.17274575140626322]],
    "sequential3": [[0.1, 0.5], [0.05, 0.25], [0.1, 0.5], [0.1, 0.5], [0.010000000000000002, 0.05], [0.1, 0.5],
                    [0.09000000000000001, 0.45], [0.08100000000000002, 0.405],
                    [0.07290000000000002, 0.36450000000000005], [0.06561000000000002, 0.32805000000000006]],
    "plateau": [[0.1, 0.5], [0.1, 0.5], [0.1, 0.5], [0.1, 0.5], [0.05, 0.25], [0.05, 0.25], [0.05, 0.25],
                [0.025, 0.125], [0.025, 0.125], [0.025, 0.125], [0.02, 0.1], [0.02, 0.1], [0.02, 0.1]],
}
PLATEAU_METRICS = [5, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4, 4]

MAKERS = {
    "step": (lambda o: S.StepLR(o, 3, gamma=0.5), 10),
    "multistep": (lambda o: S.MultiStepLR(o, [2, 5, 5, 7], gamma=0.1), 10),
    "cos": (lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01), 12),
    "lambda": (lambda o: S.LambdaLR(o, [lambda e: 0.95 ** e, lambda e: 1 / (1 + e)]), 6),
    "linear": (lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=4), 7),
    "onecycle": (lambda o: S.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=10), 9),
    "onecycle_three_phase_linear": (lambda o: S.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=6,
                                                          anneal_strategy="linear", three_phase=True,
                                                          pct_start=0.25), 11),
    "sequential": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=5)],
                                            milestones=[3]), 10),
    "sequential3": (lambda o: S.SequentialLR(o, [S.ExponentialLR(o, 0.5), S.StepLR(o, 2, 0.1),
                                                 S.ExponentialLR(o, 0.9)], milestones=[2, 5]), 9),
    "plateau": (lambda o: S.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=[0.02, 0.1]), 12),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_sequence_matches_pytorch(name):
    make, n = MAKERS[name]
    opt = sgd2()
    lrs = run(opt, make(opt), n, PLATEAU_METRICS if name == "plateau" else None)
    assert [approx(row) for row in TORCH_SEQUENCES[name]] == lrs


# -- closed forms, written independently --------------------------------------------------------------------
def test_exponential_and_step_follow_their_closed_forms():
    opt = sgd2()
    lrs = run(opt, S.ExponentialLR(opt, gamma=0.9), 8)
    assert lrs == [approx([0.1 * 0.9 ** e, 0.5 * 0.9 ** e]) for e in range(9)]
    opt = sgd2()
    lrs = run(opt, S.StepLR(opt, step_size=4, gamma=0.3), 13)
    assert lrs == [approx([0.1 * 0.3 ** (e // 4), 0.5 * 0.3 ** (e // 4)]) for e in range(14)]


@pytest.mark.parametrize("t_max,eta_min", [(4, 0.01), (7, 0.0), (10, 0.05)])
def test_cosine_annealing_follows_the_half_cosine(t_max, eta_min):
    opt = sgd2()
    lrs = run(opt, S.CosineAnnealingLR(opt, T_max=t_max, eta_min=eta_min), 2 * t_max + 3)
    for epoch, row in enumerate(lrs):
        expected = [eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / t_max)) / 2 for base in (0.1, 0.5)]
        assert row == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_linear_warmup_closed_form():
    opt = sgd2()
    lrs = run(opt, S.LinearLR(opt, start_factor=0.1, end_factor=0.7, total_iters=6), 9)
    for epoch, row in enumerate(lrs):
        factor = 0.1 + (0.7 - 0.1) * min(epoch, 6) / 6
        assert row == pytest.approx([0.1 * factor, 0.5 * factor], rel=1e-12)


def test_one_cycle_cosine_phases_and_momentum():
    opt = SGD([ember.zeros(1, requires_grad=True)], lr=0.5, momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=2.0, total_steps=20, pct_start=0.25, div_factor=10.0, final_div_factor=100.0)
    group = opt.param_groups[0]
    assert (group["initial_lr"], group["max_lr"], group["min_lr"]) == (0.2, 2.0, pytest.approx(0.002))
    up_end, total = 0.25 * 20 - 1, 19

    def cos_anneal(start, end, pct):
        return end + (start - end) * (1 + math.cos(math.pi * pct)) / 2

    for step in range(20):
        if step <= up_end:
            pct = step / up_end
            lr, mom = cos_anneal(0.2, 2.0, pct), cos_anneal(0.95, 0.85, pct)
        else:
            pct = (step - up_end) / (total - up_end)
            lr, mom = cos_anneal(2.0, 0.002, pct), cos_anneal(0.85, 0.95, pct)
        assert sched.get_last_lr()[0] == pytest.approx(lr, rel=1e-12)
        assert group["momentum"] == pytest.approx(mom, rel=1e-12)
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 21 times. The specified number of total steps is 20"):
        sched.step()


def test_one_cycle_cycles_adams_beta1():
    opt = Adam([ember.zeros(1, requires_grad=True)], lr=0.1, betas=(0.5, 0.99))
    sched = S.OneCycleLR(opt, max_lr=0.5, total_steps=8, base_momentum=0.8, max_momentum=0.9)
    # beta1 after each step, printed by PyTorch 2.13 for the same run
    torch_beta1 = [0.8188255099070634, 0.8028058334845817, 0.8188255099070634, 0.8444017761948347,
                   0.871694186955878, 0.8923362099614143, 0.9]
    assert opt.param_groups[0]["betas"] == (0.9, 0.99)
    for beta1 in torch_beta1:
        opt.step()
        sched.step()
        assert opt.param_groups[0]["betas"] == (pytest.approx(beta1, rel=1e-12), 0.99)


def test_initial_lr_and_deprecated_epoch_argument():
    opt = sgd2()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.5] and sched.base_lrs == [0.1, 0.5]
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(7)  # the closed form: 0.5 ** (7 // 3)
    assert sched.last_epoch == 7 and sched.get_last_lr() == [0.025, 0.125]
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


# -- resuming ----------------------------------------------------------------------------------------------
def snapshot(value):
    if isinstance(value, ember.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        out = value.copy()
        for k, v in value.items():
            out[k] = snapshot(v)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value)
    return value


class Halving:
    """A callable object whose state a LambdaLR state dict keeps."""

    def __init__(self):
        self.base = 1.0

    def __call__(self, epoch):
        return self.base * 0.5 ** epoch


RESUMABLE = {name: make for name, (make, _) in MAKERS.items()}
RESUMABLE["exponential"] = lambda o: S.ExponentialLR(o, 0.7)
RESUMABLE["lambda_object"] = lambda o: S.LambdaLR(o, Halving())


@pytest.mark.parametrize("name", sorted(RESUMABLE))
def test_state_dict_resumes_bit_for_bit(name):
    make = RESUMABLE[name]
    metrics = PLATEAU_METRICS if name == "plateau" else None
    opt = sgd2()
    sched = make(opt)
    run(opt, sched, 4, metrics)
    saved_opt, saved_sched = snapshot(opt.state_dict()), snapshot(sched.state_dict())
    assert "optimizer" not in saved_sched
    tail = metrics[4:] if metrics else None
    expected = run(opt, sched, 5, tail)

    opt2 = sgd2()
    sched2 = make(opt2)  # make the scheduler, then load the optimizer's state, then the scheduler's
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    assert run(opt2, sched2, 5, tail) == expected


def test_lambda_state_dict_keeps_only_callable_objects():
    opt = sgd2()
    fn = Halving()
    sched = S.LambdaLR(opt, [fn, lambda e: 1.0])
    fn.base = 3.0
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"base": 3.0}, None]
    opt2 = sgd2()
    fn2 = Halving()
    sched2 = S.LambdaLR(opt2, [fn2, lambda e: 1.0])
    sched2.load_state_dict(state)
    assert fn2.base == 3.0 and "lr_lambdas" in state
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(sgd2(), [fn])


def test_multistep_state_dict_with_string_milestones():
    opt = sgd2()
    sched = S.MultiStepLR(opt, [2, 4])
    state = snapshot(sched.state_dict())
    state["milestones"] = {str(k): v for k, v in state["milestones"].items()}  # as JSON gives it back
    sched2 = S.MultiStepLR(opt, [9])
    sched2.load_state_dict(state)
    assert run(opt, sched2, 4)[-1] == approx([0.1 * 0.01, 0.5 * 0.01])


# -- ReduceLROnPlateau -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,metrics,expected", [
    # mode max, absolute threshold 0.5, patience 1: a value counts as better only above best + 0.5
    (dict(mode="max", threshold=0.5, threshold_mode="abs", patience=1, factor=0.5),
     [1, 1.4, 1.6, 2.0, 2.1, 2.2, 2.3, 3.0, 3.0, 3.0], [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25]),
    # mode max, relative threshold 10%, no patience: 1.05 < 1.1 and 1.3 < 1.32 are bad epochs
    (dict(mode="max", threshold=0.1, patience=0, factor=0.5), [1, 1.05, 1.2, 1.3, 1.5], [1.0, 0.5, 0.5, 0.25, 0.25]),
    # min_lr bounds the decay; a change smaller than eps is skipped
    (dict(patience=0, factor=0.5, min_lr=0.3, eps=0.1), [5, 5, 5, 5], [1.0, 0.5, 0.3, 0.3]),
    # cooldown: two epochs after a reduction in which bad epochs do not count
    (dict(patience=0, factor=0.5, cooldown=2), [1, 1, 1, 1, 1, 1, 1], [1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]),
])
def test_plateau_behaviour(kwargs, metrics, expected):
    opt = SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    sched = S.ReduceLROnPlateau(opt, **kwargs)
    got = []
    for m in metrics:
        opt.step()
        sched.step(ember.tensor(m) if m == metrics[0] else m)  # a one-element tensor works too
        got.append(sched.get_last_lr()[0])
    assert got == approx(expected)


def test_plateau_state_and_errors():
    opt = sgd2()
    sched = S.ReduceLROnPlateau(opt, mode="max")
    assert sched.best == -math.inf and sched.num_bad_epochs == 0 and sched.last_epoch == 0
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode up is unknown!"):
        S.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="threshold mode both is unknown!"):
        S.ReduceLROnPlateau(opt, threshold_mode="both")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])
    bounded = S.ReduceLROnPlateau(opt, min_lr=[0.0, 0.0], patience=0)
    opt.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 1.0})
    bounded.step(1.0)
    with pytest.raises(RuntimeError, match="differs from when `ReduceLROnPlateau` was initialized"):
        bounded.step(1.0)


# -- errors -------------------------------------------------------------------------------------------------
def test_scheduler_errors():
    opt = sgd2()
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.StepLR([], 1)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        S.StepLR(opt, 1, last_epoch=3)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor expected to be between 0 and 1"):
        S.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 2.0"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=2.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        S.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        S.OneCycleLR(opt, max_lr=[1.0], total_steps=5)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(Adagrad([ember.zeros(1, requires_grad=True)]), max_lr=1.0, total_steps=5)
    other = sgd2()
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more than"):
        S.SequentialLR(opt, [S.StepLR(opt, 1), S.StepLR(opt, 1)], milestones=[1, 2])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        S.SequentialLR(opt, [S.StepLR(opt, 1), S.StepLR(other, 1)], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.SequentialLR(opt, [S.StepLR(opt, 1), S.ReduceLROnPlateau(opt)], milestones=[1])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        S.SequentialLR(opt, [], milestones=[])


def test_resume_with_last_epoch():
    opt = sgd2()
    for group in opt.param_groups:
        group["initial_lr"] = group["lr"]
    sched = S.CosineAnnealingLR(opt, T_max=4, last_epoch=1)  # resuming: the first step keeps the current lr
    assert sched.last_epoch == 2 and sched.get_last_lr() == [0.1, 0.5]
    opt.step()
    sched.step()
    # the current lr is taken as epoch 2's: PyTorch 2.13 gives [0.029289321881345254, 0.14644660940672627] here
    ratio = (1 + math.cos(3 * math.pi / 4)) / (1 + math.cos(2 * math.pi / 4))
    assert sched.last_epoch == 3 and sched.get_last_lr() == approx([0.1 * ratio, 0.5 * ratio])
    assert ember.optim.lr_scheduler.StepLR is S.StepLR
