"""Tensor printing matches PyTorch 2.x character for character.

Every expected string below was produced by running the same expression with
PyTorch (``torch.`` replaced by ``ember.``).
"""
import numpy as np
import pytest

import ember


@pytest.fixture(autouse=True)
def _default_printoptions():
    yield
    ember.set_printoptions(profile="default")


CASES = [
    ('int_1d', 'ember.tensor([1, 2, 3])',
     'tensor([1, 2, 3])'),
    ('int_neg', 'ember.tensor([[-1, 20], [300, -4000]])',
     ('tensor([[   -1,    20],\n'
      '        [  300, -4000]])')),
    ('float_integral', 'ember.tensor([1., 2., 3.])',
     'tensor([1., 2., 3.])'),
    ('float_mixed', 'ember.tensor([1.5, -2.25, 3.0])',
     'tensor([ 1.5000, -2.2500,  3.0000])'),
    ('float_2d', 'ember.tensor([[1.5, 2.0], [-3.25, 4.0]])',
     ('tensor([[ 1.5000,  2.0000],\n'
      '        [-3.2500,  4.0000]])')),
    ('sci_small', 'ember.tensor([1e-5, 1.0, 2.0])',
     'tensor([1.0000e-05, 1.0000e+00, 2.0000e+00])'),
    ('sci_ratio', 'ember.tensor([1.0, 2000.0])',
     'tensor([1.0000e+00, 2.0000e+03])'),
    ('sci_big_int', 'ember.tensor([1e9, 1.0])',
     'tensor([1.0000e+09, 1.0000e+00])'),
    ('large_int_floats', 'ember.tensor([100000000., 1.])',
     'tensor([1.0000e+08, 1.0000e+00])'),
    ('big_no_sci', 'ember.tensor([123.456, 1.5])',
     'tensor([123.4560,   1.5000])'),
    ('nan_inf', "ember.tensor([float('nan'), float('inf'), -float('inf'), 1.5])",
     'tensor([   nan,    inf,   -inf, 1.5000])'),
    ('nan_int', "ember.tensor([float('nan'), 1.0, 2.0])",
     'tensor([nan, 1., 2.])'),
    ('all_zero', 'ember.tensor([0., 0.])',
     'tensor([0., 0.])'),
    ('only_nan', "ember.tensor([float('nan')])",
     'tensor([nan])'),
    ('bool', 'ember.tensor([True, False, True])',
     'tensor([ True, False,  True])'),
    ('scalar_float', 'ember.tensor(1.5)',
     'tensor(1.5000)'),
    ('scalar_int', 'ember.tensor(7)',
     'tensor(7)'),
    ('scalar_integral_float', 'ember.tensor(2.)',
     'tensor(2.)'),
    ('scalar_bool', 'ember.tensor(True)',
     'tensor(True)'),
    ('scalar_f64', 'ember.tensor(0.1, dtype=ember.float64)',
     'tensor(0.1000, dtype=ember.float64)'),
    ('empty', 'ember.tensor([])',
     'tensor([])'),
    ('empty_2d', 'ember.zeros(0, 3)',
     'tensor([], size=(0, 3))'),
    ('empty_int', 'ember.zeros(0, dtype=ember.int64)',
     'tensor([], dtype=ember.int64)'),
    ('empty_i32_2d', 'ember.zeros(2, 0, dtype=ember.int32)',
     'tensor([], size=(2, 0), dtype=ember.int32)'),
    ('three_d', 'ember.arange(24).reshape(2, 3, 4)',
     ('tensor([[[ 0,  1,  2,  3],\n'
      '         [ 4,  5,  6,  7],\n'
      '         [ 8,  9, 10, 11]],\n'
      '\n'
      '        [[12, 13, 14, 15],\n'
      '         [16, 17, 18, 19],\n'
      '         [20, 21, 22, 23]]])')),
    ('three_d_float', '(ember.arange(12).reshape(2, 3, 2) / 4)',
     ('tensor([[[0.0000, 0.2500],\n'
      '         [0.5000, 0.7500],\n'
      '         [1.0000, 1.2500]],\n'
      '\n'
      '        [[1.5000, 1.7500],\n'
      '         [2.0000, 2.2500],\n'
      '         [2.5000, 2.7500]]])')),
    ('four_d', 'ember.arange(16).reshape(2, 2, 2, 2)',
     ('tensor([[[[ 0,  1],\n'
      '          [ 2,  3]],\n'
      '\n'
      '         [[ 4,  5],\n'
      '          [ 6,  7]]],\n'
      '\n'
      '\n'
      '        [[[ 8,  9],\n'
      '          [10, 11]],\n'
      '\n'
      '         [[12, 13],\n'
      '          [14, 15]]]])')),
    ('long_1d', 'ember.arange(40) * 1.5',
     ('tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n'
      '        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n'
      '        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n'
      '        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000, 45.0000, 46.5000,\n'
      '        48.0000, 49.5000, 51.0000, 52.5000, 54.0000, 55.5000, 57.0000, 58.5000])')),
    ('long_1d_int', 'ember.arange(100, 140)',
     ('tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113,\n'
      '        114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,\n'
      '        128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139])')),
    ('summ_1d', 'ember.arange(2000)',
     'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])'),
    ('summ_2d', 'ember.arange(40000.).reshape(200, 200) / 3',
     ('tensor([[0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 6.5667e+01, 6.6000e+01,\n'
      '         6.6333e+01],\n'
      '        [6.6667e+01, 6.7000e+01, 6.7333e+01,  ..., 1.3233e+02, 1.3267e+02,\n'
      '         1.3300e+02],\n'
      '        [1.3333e+02, 1.3367e+02, 1.3400e+02,  ..., 1.9900e+02, 1.9933e+02,\n'
      '         1.9967e+02],\n'
      '        ...,\n'
      '        [1.3133e+04, 1.3134e+04, 1.3134e+04,  ..., 1.3199e+04, 1.3199e+04,\n'
      '         1.3200e+04],\n'
      '        [1.3200e+04, 1.3200e+04, 1.3201e+04,  ..., 1.3266e+04, 1.3266e+04,\n'
      '         1.3266e+04],\n'
      '        [1.3267e+04, 1.3267e+04, 1.3267e+04,  ..., 1.3332e+04, 1.3333e+04,\n'
      '         1.3333e+04]])')),
    ('summ_3d', 'ember.arange(3000).reshape(10, 10, 30)',
     ('tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n'
      '         [  30,   31,   32,  ...,   57,   58,   59],\n'
      '         [  60,   61,   62,  ...,   87,   88,   89],\n'
      '         ...,\n'
      '         [ 210,  211,  212,  ...,  237,  238,  239],\n'
      '         [ 240,  241,  242,  ...,  267,  268,  269],\n'
      '         [ 270,  271,  272,  ...,  297,  298,  299]],\n'
      '\n'
      '        [[ 300,  301,  302,  ...,  327,  328,  329],\n'
      '         [ 330,  331,  332,  ...,  357,  358,  359],\n'
      '         [ 360,  361,  362,  ...,  387,  388,  389],\n'
      '         ...,\n'
      '         [ 510,  511,  512,  ...,  537,  538,  539],\n'
      '         [ 540,  541,  542,  ...,  567,  568,  569],\n'
      '         [ 570,  571,  572,  ...,  597,  598,  599]],\n'
      '\n'
      '        [[ 600,  601,  602,  ...,  627,  628,  629],\n'
      '         [ 630,  631,  632,  ...,  657,  658,  659],\n'
      '         [ 660,  661,  662,  ...,  687,  688,  689],\n'
      '         ...,\n'
      '         [ 810,  811,  812,  ...,  837,  838,  839],\n'
      '         [ 840,  841,  842,  ...,  867,  868,  869],\n'
      '         [ 870,  871,  872,  ...,  897,  898,  899]],\n'
      '\n'
      '        ...,\n'
      '\n'
      '        [[2100, 2101, 2102,  ..., 2127, 2128, 2129],\n'
      '         [2130, 2131, 2132,  ..., 2157, 2158, 2159],\n'
      '         [2160, 2161, 2162,  ..., 2187, 2188, 2189],\n'
      '         ...,\n'
      '         [2310, 2311, 2312,  ..., 2337, 2338, 2339],\n'
      '         [2340, 2341, 2342,  ..., 2367, 2368, 2369],\n'
      '         [2370, 2371, 2372,  ..., 2397, 2398, 2399]],\n'
      '\n'
      '        [[2400, 2401, 2402,  ..., 2427, 2428, 2429],\n'
      '         [2430, 2431, 2432,  ..., 2457, 2458, 2459],\n'
      '         [2460, 2461, 2462,  ..., 2487, 2488, 2489],\n'
      '         ...,\n'
      '         [2610, 2611, 2612,  ..., 2637, 2638, 2639],\n'
      '         [2640, 2641, 2642,  ..., 2667, 2668, 2669],\n'
      '         [2670, 2671, 2672,  ..., 2697, 2698, 2699]],\n'
      '\n'
      '        [[2700, 2701, 2702,  ..., 2727, 2728, 2729],\n'
      '         [2730, 2731, 2732,  ..., 2757, 2758, 2759],\n'
      '         [2760, 2761, 2762,  ..., 2787, 2788, 2789],\n'
      '         ...,\n'
      '         [2910, 2911, 2912,  ..., 2937, 2938, 2939],\n'
      '         [2940, 2941, 2942,  ..., 2967, 2968, 2969],\n'
      '         [2970, 2971, 2972,  ..., 2997, 2998, 2999]]])')),
    ('float64', 'ember.tensor([1.5, 2.0], dtype=ember.float64)',
     'tensor([1.5000, 2.0000], dtype=ember.float64)'),
    ('float16', 'ember.tensor([0.1, 2.0], dtype=ember.float16)',
     'tensor([0.1000, 2.0000], dtype=ember.float16)'),
    ('bfloat16', 'ember.tensor([0.1, 2.0], dtype=ember.bfloat16)',
     'tensor([0.1001, 2.0000], dtype=ember.bfloat16)'),
    ('int32', 'ember.tensor([1, 2], dtype=ember.int32)',
     'tensor([1, 2], dtype=ember.int32)'),
    ('uint8', 'ember.tensor([[1, 255]], dtype=ember.uint8)',
     'tensor([[  1, 255]], dtype=ember.uint8)'),
    ('int8_neg', 'ember.tensor([-128, 5], dtype=ember.int8)',
     'tensor([-128,    5], dtype=ember.int8)'),
    ('requires_grad', 'ember.tensor([1.0, 2.0], requires_grad=True)',
     'tensor([1., 2.], requires_grad=True)'),
    ('grad_fn', 'ember.tensor([1.0, 2.0], requires_grad=True) + 1',
     'tensor([2., 3.], grad_fn=<AddBackward0>)'),
    ('grad_fn_mul', 'ember.tensor([1.0, 2.0], requires_grad=True) * 2',
     'tensor([2., 4.], grad_fn=<MulBackward0>)'),
    ('grad_fn_sum', 'ember.tensor([1.0, 2.0], requires_grad=True).sum()',
     'tensor(3., grad_fn=<SumBackward0>)'),
    ('grad_fn_f64', 'ember.tensor([[1.0, 2.0]], dtype=ember.float64, requires_grad=True) * 3',
     'tensor([[3., 6.]], dtype=ember.float64, grad_fn=<MulBackward0>)'),
    ('rg_wrap', 'ember.arange(30, dtype=ember.float64).requires_grad_()',
     ('tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n'
      '        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n'
      '        28., 29.], dtype=ember.float64, requires_grad=True)')),
    ('grad_fn_wrap', '(ember.arange(12, dtype=ember.float64).reshape(2, 6) * 1.123456).requires_grad_() * 1',
     ('tensor([[ 0.0000,  1.1235,  2.2469,  3.3704,  4.4938,  5.6173],\n'
      '        [ 6.7407,  7.8642,  8.9876, 10.1111, 11.2346, 12.3580]],\n'
      '       dtype=ember.float64, grad_fn=<MulBackward0>)')),
    ('neg_mixed', 'ember.tensor([[-0.5, 100.25], [3.0, -7.125]])',
     ('tensor([[ -0.5000, 100.2500],\n'
      '        [  3.0000,  -7.1250]])')),
    ('precision_round', 'ember.tensor([0.12345, 0.99999])',
     'tensor([0.1235, 1.0000])'),
    ('sci_neg', 'ember.tensor([-1e-7, 3e5])',
     'tensor([-1.0000e-07,  3.0000e+05])'),
    ('sci_inf', "ember.tensor([1e-6, float('inf')])",
     'tensor([1.0000e-06,        inf])'),
    ('column', 'ember.tensor([[1.], [2.], [3.]])',
     ('tensor([[1.],\n'
      '        [2.],\n'
      '        [3.]])')),
    ('wide_2d', 'ember.arange(60.).reshape(3, 20) * 1.001',
     ('tensor([[ 0.0000,  1.0010,  2.0020,  3.0030,  4.0040,  5.0050,  6.0060,  7.0070,\n'
      '          8.0080,  9.0090, 10.0100, 11.0110, 12.0120, 13.0130, 14.0140, 15.0150,\n'
      '         16.0160, 17.0170, 18.0180, 19.0190],\n'
      '        [20.0200, 21.0210, 22.0220, 23.0230, 24.0240, 25.0250, 26.0260, 27.0270,\n'
      '         28.0280, 29.0290, 30.0300, 31.0310, 32.0320, 33.0330, 34.0340, 35.0350,\n'
      '         36.0360, 37.0370, 38.0380, 39.0390],\n'
      '        [40.0400, 41.0410, 42.0420, 43.0430, 44.0440, 45.0450, 46.0460, 47.0470,\n'
      '         48.0480, 49.0490, 50.0500, 51.0510, 52.0520, 53.0530, 54.0540, 55.0550,\n'
      '         56.0560, 57.0570, 58.0580, 59.0590]])')),
    ('big_int_values', 'ember.tensor([10**12, -5])',
     'tensor([1000000000000,            -5])'),
]


@pytest.mark.parametrize("expr, expected", [pytest.param(e, x, id=n) for n, e, x in CASES])
def test_repr_matches_pytorch(expr, expected):
    t = eval(expr, {"ember": ember})
    assert repr(t) == expected
    assert str(t) == expected


def test_print_uses_repr(capsys):
    print(ember.tensor([[1, 2], [3, 4]]))
    assert capsys.readouterr().out == "tensor([[1, 2],\n        [3, 4]])\n"


def test_format_of_zero_dim_tensor_uses_spec():
    assert f"{ember.tensor(2.5):.2f}" == "2.50"
    assert f"{ember.tensor([1.0])}" == "tensor([1.])"


@pytest.mark.parametrize("options, expr, expected", [
    (dict(precision=2), "ember.tensor([1.2345, 2.0, 3.14159])", "tensor([1.23, 2.00, 3.14])"),
    (dict(sci_mode=True), "ember.tensor([1.5, 20.0])", "tensor([1.5000e+00, 2.0000e+01])"),
    (dict(sci_mode=True), "ember.tensor([1., 2.])", "tensor([1.0000e+00, 2.0000e+00])"),
    (dict(precision=2, sci_mode=False), "ember.tensor([1e-5, 1.0])", "tensor([0.00, 1.00])"),
    (dict(profile="short"), "ember.arange(2000.)", "tensor([0.00e+00, 1.00e+00,  ..., 2.00e+03, 2.00e+03])"),
    (dict(linewidth=40), "ember.arange(20.) / 3",
     ("tensor([0.0000, 0.3333, 0.6667, 1.0000,\n"
      "        1.3333, 1.6667, 2.0000, 2.3333,\n"
      "        2.6667, 3.0000, 3.3333, 3.6667,\n"
      "        4.0000, 4.3333, 4.6667, 5.0000,\n"
      "        5.3333, 5.6667, 6.0000, 6.3333])")),
    (dict(threshold=5), "ember.arange(10).reshape(2, 5)",
     ("tensor([[0, 1, 2, 3, 4],\n"
      "        [5, 6, 7, 8, 9]])")),
    (dict(edgeitems=1, threshold=5), "ember.arange(30).reshape(5, 6)",
     ("tensor([[ 0,  ...,  5],\n"
      "        ...,\n"
      "        [24,  ..., 29]])")),
    (dict(edgeitems=0, threshold=3), "ember.arange(10)", "tensor([...], size=(10,))"),
    (dict(edgeitems=0, threshold=3), "ember.arange(12).reshape(3, 4)", "tensor([...], size=(3, 4))"),
    (dict(edgeitems=0), "ember.arange(3)", "tensor([0, 1, 2], size=(3,))"),
])
def test_printoptions_match_pytorch(options, expr, expected):
    ember.set_printoptions(**options)
    assert repr(eval(expr, {"ember": ember})) == expected


def test_full_profile_prints_every_element():
    ember.set_printoptions(profile="full")
    text = repr(ember.arange(1200))
    assert "..." not in text
    assert text.startswith("tensor([   0,    1,    2,    3,    4,    5,    6,    7,    8")
    assert text.endswith("1195, 1196, 1197, 1198, 1199])")


def test_set_printoptions_without_sci_mode_resets_it_to_automatic():
    ember.set_printoptions(sci_mode=True)
    ember.set_printoptions(precision=4)
    assert repr(ember.tensor([1.5])) == "tensor([1.5000])"


def test_printoptions_context_restores_previous_options():
    with ember.printoptions(precision=1):
        assert repr(ember.tensor([0.25])) == "tensor([0.2])"
    assert ember.get_printoptions()["precision"] == 4
    assert repr(ember.tensor([0.25])) == "tensor([0.2500])"


def test_bad_printoptions_are_rejected_clearly():
    with pytest.raises(ValueError, match="unknown profile 'long'"):
        ember.set_printoptions(profile="long")
    with pytest.raises(ValueError, match="precision must be a non-negative number"):
        ember.set_printoptions(precision=-1)


def test_device_suffix_for_devices_other_than_the_default_cpu(two_cpus):
    assert repr(ember.tensor([1.0, 2.0], device="cpu:1")) == "tensor([1., 2.], device='cpu:1')"
    assert repr(ember.tensor([1.0, 2.0], device="cpu:0")) == "tensor([1., 2.])"
    assert repr(ember.zeros(0, 2, dtype=ember.int32, device="cpu:1")) == \
        "tensor([], device='cpu:1', size=(0, 2), dtype=ember.int32)"


def test_device_suffix_on_plugin_backend(device):
    expected = "tensor([1, 2])" if device == "cpu" else f"tensor([1, 2], device='{device}')"
    assert repr(ember.tensor([1, 2], device=device)) == expected


def test_float32_shows_its_dtype_when_the_default_is_float64():
    ember.set_default_dtype(ember.float64)
    try:
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == "tensor([1.5000], dtype=ember.float32)"
        assert repr(ember.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ember.tensor([])) == "tensor([])"
    finally:
        ember.set_default_dtype(ember.float32)


def test_subclass_prints_its_class_name():
    class Special(ember.Tensor):
        pass

    assert repr(Special([1.0, 2.0])) == "Special([1., 2.])"


def test_summarized_print_reads_only_edge_values_of_a_big_tensor():
    values = np.zeros((1000, 1000), dtype=np.float32)
    values[500, 500] = 1e-9  # hidden in the middle: not shown, so it must not switch on scientific notation
    t = ember.from_numpy(values)
    assert repr(t).splitlines()[0] == "tensor([[0., 0., 0.,  ..., 0., 0., 0.],"


# -- named result tuples print like PyTorch's --------------------------------------------------------------
@pytest.mark.parametrize("call, head", [
    (lambda x: x.sort(), "ember.return_types.sort(\nvalues=tensor("),
    (lambda x: x.topk(1), "ember.return_types.topk(\nvalues=tensor("),
    (lambda x: x.kthvalue(1), "ember.return_types.kthvalue(\nvalues=tensor("),
    (lambda x: x.max(0), "ember.return_types.max(\nvalues=tensor("),
    (lambda x: ember.linalg.qr(x), "ember.return_types.linalg_qr(\nQ=tensor("),
    (lambda x: ember.linalg.eigh(x @ x.T), "ember.return_types.linalg_eigh(\neigenvalues=tensor("),
    (lambda x: ember.linalg.svd(x), "ember.return_types.linalg_svd(\nU=tensor("),
    (lambda x: ember.linalg.slogdet(x), "ember.return_types.linalg_slogdet(\nsign=tensor("),
])
def test_result_tuples_print_as_pytorch_return_types(call, head):
    r = call(ember.tensor([[3.0, 1.0], [0.0, 2.0]]))
    assert repr(r).startswith(head) and repr(r).endswith("))")
    assert type(r).__module__ == "ember.return_types" and isinstance(r, tuple)
    assert isinstance(r, getattr(ember.return_types, type(r).__name__))


def test_sort_result_repr_in_full():
    assert repr(ember.tensor([3.0, 1.0]).sort()) == ("ember.return_types.sort(\nvalues=tensor([1., 3.]),\n"
                                                     "indices=tensor([1, 0]))")
