"""foreach=True / fused=True: the flat-buffer update gives bit-identical parameters and state to the
per-parameter one, its state_dict is interchangeable, and it refuses what PyTorch's fused update refuses."""
import numpy as np
import pytest

import ember
from ember._sibling_api import array
from ember.optim import _flat

SHAPES = [(3, 5), (7,), (1,), (70000,), (2, 3, 4)]

CASES = [
    (ember.optim.SGD, dict(lr=0.1)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (ember.optim.Adam, dict(lr=0.01)),
    (ember.optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    (ember.optim.Adam, dict(lr=0.01, maximize=True, betas=(0.8, 0.9))),
    (ember.optim.AdamW, dict(lr=0.01, amsgrad=True, maximize=True)),
    (ember.optim.AdamW, dict(lr=0.01, weight_decay=0.3)),
]


def _run(cls, options, dtype, steps=5, **mode):
    rng = np.random.default_rng(0)
    params = [ember.nn.Parameter(ember.tensor(rng.standard_normal(s).astype(dtype))) for s in SHAPES]
    opt = cls(params, **options, **mode)
    for step in range(steps):
        for i, p in enumerate(params):
            skip = (step == 1 and i == 1) or (step == 3 and i == 3)  # some parameters lack a gradient
            p.grad = None if skip else ember.tensor(rng.standard_normal(SHAPES[i]).astype(dtype))
        opt.step()
    return params, opt


@pytest.fixture(params=["plugin", "numpy"])
def kernels(request, monkeypatch):
    """Run with the plugin's compiled update where one is installed (ember-numba), then on NumPy's."""
    if request.param == "numpy":
        monkeypatch.setattr(_flat, "cpu_kernel", lambda name, n, min_size=None: None)
    return request.param


def test_the_plugin_kernels_serve_flat_updates():
    pytest.importorskip("ember_numba")
    assert _flat.flat_kernel("adam_update", np.zeros(1 << 12)) is not None
    assert _flat.flat_kernel("sgd_update", np.zeros(1 << 12)) is not None
    assert _flat.flat_kernel("sgd_update", np.zeros(10)) is None


def _state_arrays(opt, params):
    return [{k: array(v).copy() for k, v in opt.state[p].items()} for p in params]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [dict(fused=True), dict(foreach=True)])
@pytest.mark.parametrize("cls,options", CASES)
def test_flat_update_is_bit_identical(cls, options, mode, dtype, kernels):
    ref_params, ref_opt = _run(cls, options, dtype)
    params, opt = _run(cls, options, dtype, **mode)
    for a, b in zip(ref_params, params):
        assert array(b).dtype == dtype and np.array_equal(array(a), array(b))
    for sa, sb in zip(_state_arrays(ref_opt, ref_params), _state_arrays(opt, params)):
        assert sa.keys() == sb.keys()
        for k in sa:
            assert np.array_equal(sa[k], sb[k]), k


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,options", CASES)
def test_per_parameter_update_through_the_plugin_kernel_is_bit_identical(cls, options, dtype, monkeypatch):
    """Without foreach/fused, a large contiguous parameter's update runs the plugin's compiled kernel as well:
    bit for bit what NumPy's passes give."""
    pytest.importorskip("ember_numba")
    big = np.zeros(SHAPES[3], dtype)
    assert _flat.kernel_for("sgd_update", big, big, None) is not None
    assert _flat.kernel_for("sgd_update", big, big[::2].repeat(2), None) is not None
    assert _flat.kernel_for("sgd_update", big, big.astype(np.float16), None) is None  # mixed dtypes: NumPy
    compiled_params, compiled = _run(cls, options, dtype)
    monkeypatch.setattr(_flat, "cpu_kernel", lambda name, n, min_size=None: None)
    plain_params, plain = _run(cls, options, dtype)
    for a, b in zip(plain_params, compiled_params):
        assert np.array_equal(array(a), array(b))
    for sa, sb in zip(_state_arrays(plain, plain_params), _state_arrays(compiled, compiled_params)):
        assert all(np.array_equal(sa[k], sb[k]) for k in sa), sa.keys()


def test_fused_state_lives_in_one_flat_buffer():
    params, opt = _run(ember.optim.Adam, dict(lr=0.01), np.float32, steps=1, fused=True)
    bases = [array(opt.state[p]["exp_avg"]).base for p in params]
    assert bases[0] is not None and all(b is bases[0] for b in bases)
    assert bases[0].size == sum(p.numel() for p in params)
    flat = array(params[0]).base
    assert flat is not None and all(array(p).base is flat for p in params)


def test_a_parameter_given_new_data_is_taken_into_a_new_batch():
    params, opt = _run(ember.optim.SGD, dict(lr=0.1, momentum=0.9), np.float64, steps=2, fused=True)
    ref_params, ref_opt = _run(ember.optim.SGD, dict(lr=0.1, momentum=0.9), np.float64, steps=2)
    for ps, o in ((params, opt), (ref_params, ref_opt)):
        ps[0].data = ember.ones(SHAPES[0], dtype=ember.float64)
        for p in ps:
            p.grad = ember.ones(tuple(p.shape), dtype=ember.float64)
        o.step()
    assert all(np.array_equal(array(a), array(b)) for a, b in zip(params, ref_params))


@pytest.mark.parametrize("cls,options", [CASES[1], CASES[5]])
def test_state_dict_round_trip_between_fused_and_per_parameter(cls, options):
    ref_params, ref_opt = _run(cls, options, np.float64, steps=6)
    params, fused = _run(cls, options, np.float64, steps=3, fused=True)
    plain_params, plain = _run(cls, options, np.float64, steps=3)
    # continue a fused run from the per-parameter state and vice versa: both meet the 6-step reference
    fused.load_state_dict(plain.state_dict())
    plain.load_state_dict(_run(cls, options, np.float64, steps=3, fused=True)[1].state_dict())
    rng = np.random.default_rng(1)
    for opt, ps in ((fused, params), (plain, plain_params), (ref_opt, ref_params)):
        rng = np.random.default_rng(1)
        for _ in range(2):
            for p in ps:
                p.grad = ember.tensor(rng.standard_normal(tuple(p.shape)))
            opt.step()
    for a, b, c in zip(ref_params, params, plain_params):
        assert np.array_equal(array(b), array(c))
    assert all(np.array_equal(array(fused.state[b][k]), array(plain.state[c][k]))
               for b, c in zip(params, plain_params) for k in plain.state[c])


def test_fused_refuses_integer_parameters_and_both_options():
    w = ember.tensor([1, 2])
    w.grad = ember.tensor([1, 1])
    opt = ember.optim.SGD([ember.nn.Parameter(ember.ones(2))], fused=True)
    opt.param_groups[0]["params"] = [w]
    with pytest.raises(RuntimeError, match="floating point"):
        opt.step()
    with pytest.raises(RuntimeError, match="cannot be `True` together"):
        ember.optim.Adam([ember.nn.Parameter(ember.ones(2))], fused=True, foreach=True)
