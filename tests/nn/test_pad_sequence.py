"""pad_sequence: values against a NumPy reference, both layouts and sides, gradients (gradcheck), bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.nn.utils.rnn import pad_sequence


def numpy_pad(arrays, batch_first, value, side):
    longest = max(a.shape[0] for a in arrays)
    out = np.full((len(arrays), longest) + arrays[0].shape[1:], value, dtype=arrays[0].dtype)
    for i, a in enumerate(arrays):
        n = a.shape[0]
        if side == "left":
            out[i, longest - n:] = a
        else:
            out[i, :n] = a
    return out if batch_first else out.swapaxes(0, 1)


def test_is_exported_as_ember_nn_utils_rnn():
    import ember.nn
    assert ember.nn.utils.rnn.pad_sequence is pad_sequence


def test_default_is_time_major_right_padded_with_zeros():
    out = pad_sequence([ember.tensor([1, 2, 3]), ember.tensor([4, 5]), ember.tensor([6])])
    assert out.tolist() == [[1, 4, 6], [2, 5, 0], [3, 0, 0]]
    assert out.dtype is ember.int64


def test_batch_first_left_padding_with_a_value():
    out = pad_sequence([ember.tensor([1.0, 2.0, 3.0]), ember.tensor([4.0])], batch_first=True,
                       padding_value=-1.5, padding_side="left")
    assert out.tolist() == [[1.0, 2.0, 3.0], [-1.5, -1.5, 4.0]]


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), min_size=1, max_size=5), trailing=st.lists(st.integers(1, 3), max_size=2),
       batch_first=st.booleans(), side=st.sampled_from(["left", "right"]), value=st.sampled_from([0.0, -1.0, 7.25]),
       seed=st.integers(0, 2**31))
def test_matches_numpy_reference(lengths, trailing, batch_first, side, value, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((n, *trailing)).astype(np.float32) for n in lengths]
    out = pad_sequence([ember.tensor(a) for a in arrays], batch_first=batch_first, padding_value=value,
                       padding_side=side)
    expected = numpy_pad(arrays, batch_first, value, side)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_result_has_the_first_sequences_dtype_and_the_value_is_cast_to_it():
    ints_first = pad_sequence([ember.tensor([1, 2, 3]), ember.tensor([4.5])], batch_first=True, padding_value=2.7)
    assert ints_first.dtype is ember.int64
    assert ints_first.tolist() == [[1, 2, 3], [4, 2, 2]]  # 4.5 and 2.7 truncated, as PyTorch copies them
    floats_first = pad_sequence([ember.tensor([1.0]), ember.tensor([2, 3])], batch_first=True, padding_value=0.5)
    assert floats_first.dtype is ember.float32 and floats_first.tolist() == [[1.0, 0.5], [2.0, 3.0]]
    bools = pad_sequence([ember.tensor([True]), ember.tensor([False, True])])
    assert bools.dtype is ember.bool and bools.tolist() == [[True, False], [False, True]]


def test_accepts_any_iterable_and_a_tensor_is_its_rows():
    gen = pad_sequence(ember.tensor([i, i]) for i in range(3))
    assert gen.tolist() == [[0, 1, 2], [0, 1, 2]]
    assert pad_sequence(ember.ones(2, 3)).shape == (3, 2)
    assert pad_sequence([ember.zeros(0, 2), ember.ones(1, 2)]).shape == (1, 2, 2)
    assert pad_sequence([ember.zeros(0), ember.zeros(0)], batch_first=True).shape == (2, 0)


def test_output_does_not_share_memory_with_the_inputs():
    a = ember.tensor([1.0, 2.0])
    out = pad_sequence([a], batch_first=True)
    out[0, 0] = 9.0
    assert a.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_gradcheck_and_gradgradcheck_in_float64(batch_first, side):
    rng = np.random.default_rng(0)
    seqs = [ember.tensor(rng.standard_normal((n, 2)), dtype=ember.float64, requires_grad=True) for n in (3, 1, 2)]

    def fn(*s):
        return pad_sequence(s, batch_first=batch_first, padding_value=0.3, padding_side=side)
    assert gradcheck(fn, seqs)
    assert gradgradcheck(fn, seqs)


def test_gradient_reaches_only_the_inputs_that_need_it_in_their_own_dtype():
    frozen = ember.tensor([1.0, 2.0, 3.0])
    wide = ember.tensor([4.0], dtype=ember.float64, requires_grad=True)
    out = pad_sequence([frozen, wide], batch_first=True)
    assert out.dtype is ember.float32 and out.grad_fn.name() == "PadSequenceBackward0"
    (out * ember.tensor([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])).sum().backward()
    assert frozen.grad is None
    assert wide.grad.dtype is ember.float64 and wide.grad.tolist() == [10.0]


def test_left_padding_gradient_takes_the_last_steps():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = pad_sequence([ember.zeros(4), x], padding_side="left")  # x sits in steps 2 and 3
    (out[:, 1] * ember.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_runs_on_every_backend(device):
    a = ember.tensor([1.0, 2.0, 3.0], device=device)
    b = ember.tensor([4.0], device=device, requires_grad=True)
    out = pad_sequence([a, b], batch_first=True, padding_side="left")
    assert out.device == ember.device(device)
    assert out.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]]
    out.sum().backward()
    assert b.grad.tolist() == [1.0]


def test_bad_input_says_what_was_expected():
    with pytest.raises(RuntimeError, match="empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="Expected iterable for input sequences"):
        pad_sequence(5)
    with pytest.raises(RuntimeError, match="padding_side to be one of left or right, but got 'center'"):
        pad_sequence([ember.zeros(1)], padding_side="center")
    with pytest.raises(TypeError, match="expected a Tensor as sequence 1, but got list"):
        pad_sequence([ember.zeros(2), [1.0, 2.0]])
    with pytest.raises(RuntimeError, match=r"trailing shape \[3\].*sequence 1 has shape \[2, 4\]"):
        pad_sequence([ember.zeros(2, 3), ember.zeros(2, 4)])
    with pytest.raises(RuntimeError, match="sequence 0 is 0-d"):
        pad_sequence(ember.tensor([1.0, 2.0]))


def test_sequences_on_two_devices_are_an_error(two_cpus):
    with pytest.raises(ember.DeviceMismatchError, match="cpu:1"):
        pad_sequence([ember.zeros(2, device="cpu:0"), ember.zeros(1, device="cpu:1")])
