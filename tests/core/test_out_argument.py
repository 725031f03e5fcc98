"""``out=`` on every function whose PyTorch counterpart takes it: the result lands in ``out`` (cast, resized with
PyTorch's warning), the call returns ``out``, and autograd refuses it. Expected behaviour read off PyTorch 2.13."""
import inspect
import warnings

import numpy as np
import pytest

import ember
from ember.ops.out import FACTORIES, OUT_FUNCTIONS


def test_every_listed_function_takes_out_keyword_only():
    missing = [name for name in sorted(OUT_FUNCTIONS) if not callable(getattr(ember, name, None))]
    assert not missing, f"OUT_FUNCTIONS names functions ember lacks: {missing}"
    for name in OUT_FUNCTIONS:
        param = inspect.signature(getattr(ember, name)).parameters.get("out")
        assert param is not None and param.kind is param.KEYWORD_ONLY and param.default is None, name


# (function, args, kwargs): one call of each kind of function; the result must equal the call without out=
CALLS = [
    ("add", (ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])), {"alpha": 2}),
    ("mul", (ember.tensor([1.0, 2.0]), 3.0), {}),
    ("matmul", (ember.arange(6.0).view(2, 3), ember.arange(6.0).view(3, 2)), {}),
    ("sum", (ember.arange(6.0).view(2, 3), 1), {}),
    ("mean", (ember.arange(6.0).view(2, 3),), {"dim": 0, "keepdim": True}),
    ("cat", ([ember.ones(2), ember.zeros(3)],), {}),
    ("stack", ([ember.ones(2), ember.zeros(2)],), {"dim": 1}),
    ("exp", (ember.tensor([0.0, 1.0]),), {}),
    ("where", (ember.tensor([True, False]), ember.ones(2), ember.zeros(2)), {}),
    ("clamp", (ember.tensor([-2.0, 0.5, 3.0]),), {"min": -1.0, "max": 1.0}),
    ("gather", (ember.arange(6.0).view(2, 3), 1, ember.tensor([[0], [2]])), {}),
    ("index_select", (ember.arange(6.0).view(2, 3), 1, ember.tensor([2, 0])), {}),
    ("eq", (ember.tensor([1, 2]), ember.tensor([1, 3])), {}),
    ("tril", (ember.ones(3, 3),), {}),
    ("cumsum", (ember.arange(4.0), 0), {}),
    ("logsumexp", (ember.arange(4.0), 0), {}),
    ("norm", (ember.arange(4.0),), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CALLS, ids=[c[0] for c in CALLS])
def test_result_lands_in_out_and_out_is_returned(name, args, kwargs):
    fn = getattr(ember, name)
    expected = fn(*args, **kwargs)
    out = ember.empty(0, dtype=expected.dtype)
    got = fn(*args, out=out, **kwargs)
    assert got is out
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_several_results_go_into_a_tuple_of_outs():
    x = ember.tensor([[1.0, 5.0], [7.0, 2.0]])
    values, indices = ember.empty(2), ember.empty(2, dtype=ember.int64)
    got = ember.max(x, 1, out=(values, indices))
    assert got.values is values and got.indices is indices
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    with pytest.raises(TypeError, match="out must be a tuple of 2 tensors, but got 1"):
        ember.max(x, 1, out=(values,))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        ember.add(x, 1, out=(values, indices))


def test_result_is_cast_into_outs_dtype_where_pytorch_allows_it():
    out = ember.empty(2, dtype=ember.float64)
    ember.add(ember.ones(2), 1, out=out)
    assert out.dtype == ember.float64 and out.tolist() == [2.0, 2.0]
    ints = ember.empty(2, dtype=ember.float32)
    ember.add(ember.tensor([1, 2]), 1, out=ints)  # int64 into float32: allowed
    assert ints.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.add(ember.ones(2), 1, out=ember.empty(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        ember.add(ember.tensor([1, 2]), 1, out=ember.empty(2, dtype=ember.bool))


def test_out_of_another_shape_is_resized_with_pytorchs_warning_unless_empty():
    out = ember.empty(5)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[5\], which does not match the required "
                                         r"output shape \[3\]"):
        ember.add(ember.ones(3), 1, out=out)
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]
    empty = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.add(ember.ones(2, 2), 1, out=empty)
    assert empty.shape == (2, 2)


def test_out_refuses_autograd_as_pytorch_does():
    x = ember.ones(2, requires_grad=True)
    message = r"add\(\): functions with out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=message):
        ember.add(x, 1, out=ember.empty(2))
    with pytest.raises(RuntimeError, match=message):
        ember.add(ember.ones(2), 1, out=ember.empty(2, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"cat\(\): functions with out="):
        ember.cat([ember.ones(1), x], out=ember.empty(3))
    with ember.no_grad():  # no history is recorded there: allowed
        out = ember.mul(x, 3, out=ember.empty(2))
    assert out.tolist() == [3.0, 3.0] and not out.requires_grad


def test_out_bumps_the_version_so_backward_sees_the_change():
    w = ember.ones(2, requires_grad=True)
    buf = ember.ones(2)
    loss = (w * buf).sum()  # saves buf
    with ember.no_grad():
        ember.add(buf, 1, out=buf)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_make_their_values_in_outs_dtype(name):
    args = {"arange": (4,), "empty": (2,), "eye": (2,), "full": ((2,), 3), "linspace": (0, 3, 4),
            "logspace": (0, 1, 2), "ones": (2,), "rand": (2,), "randint": (0, 5, (3,)), "randn": (2,),
            "randperm": (4,), "zeros": (2,)}[name]
    floating = name in ("rand", "randn", "linspace", "logspace")
    dtype = ember.float64 if floating else ember.int64
    out = ember.empty(0, dtype=dtype)
    assert getattr(ember, name)(*args, out=out) is out
    assert out.dtype == dtype and out.numel() > 0
