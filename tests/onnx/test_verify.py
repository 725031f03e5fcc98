"""ember.onnx.verify: compares onnxruntime with ember, reports the differences, fails loudly when they differ."""
import numpy as np
import pytest

import ember
import ember.onnx
from ember import nn
from ember.autograd.function import Op


class AddOne(Op):
    """``a + 1``; the plugin below lowers it wrongly on purpose (``a + 1.001``)."""

    name_ = "addone"

    @staticmethod
    def forward(ctx, xp, a):
        return a + 1


class SloppyLowering:
    @ember.hookimpl
    def ember_onnx_lowerings(self):
        return {"addone": lambda g, node: [g.op("Add", node.inputs[0], g.const(1.001))]}


class FlatteningLowering:
    @ember.hookimpl
    def ember_onnx_lowerings(self):
        return {"addone": lambda g, node: [g.op("Reshape", g.op("Add", node.inputs[0], g.const(1.0)),
                                                g.const([-1], "int64"))]}


@pytest.fixture
def plugin():
    names = []
    yield lambda p, name: names.append(ember.register_plugin(p, name))
    for n in names:
        ember.unregister_plugin(n)


def test_returns_the_largest_difference_per_output():
    x = ember.tensor([[0.5, -1.0], [2.0, 3.0]])
    diffs = ember.onnx.verify(lambda a: (a * 2, a.relu()), x)
    assert diffs == [0.0, 0.0]


def test_a_wrong_lowering_fails_with_the_max_difference(plugin):
    plugin(SloppyLowering(), "sloppy")
    x = ember.zeros(2, 3)
    with pytest.raises(ember.onnx.VerificationError, match=r"max absolute difference 0\.001 at 6 of 6") as info:
        ember.onnx.verify(lambda a: AddOne.apply(a), x)
    assert isinstance(info.value, AssertionError) and isinstance(info.value, ember.EmberError)
    # a looser tolerance accepts it, and the difference is returned
    diffs = ember.onnx.verify(lambda a: AddOne.apply(a), x, atol=1e-2)
    assert diffs[0] == pytest.approx(1e-3, rel=1e-3)


def test_a_model_the_checker_rejects_fails_verification(plugin):
    plugin(FlatteningLowering(), "flattening")  # the declared output shape [2, 3] disagrees with the Reshape
    with pytest.raises(ember.onnx.VerificationError, match="fails onnx.checker.*Reshape"):
        ember.onnx.verify(lambda a: AddOne.apply(a), ember.zeros(2, 3))


def test_shape_and_dtype_mismatches_name_both():
    from ember.onnx._verify import _compare
    with pytest.raises(ember.onnx.VerificationError, match=r"shape \[6\] in onnxruntime but \[2, 3\] in ember"):
        _compare(0, np.zeros((2, 3), np.float32), np.zeros(6, np.float32), 1e-5, 1e-5)
    with pytest.raises(ember.onnx.VerificationError, match="dtype float64 in onnxruntime but float32 in ember"):
        _compare(0, np.zeros(2, np.float32), np.zeros(2, np.float64), 1e-5, 1e-5)


def test_other_args_run_the_same_graph_at_other_batch_sizes():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3), nn.Softmax(-1))
    diffs = ember.onnx.verify(model.eval(), ember.randn(2, 4), input_names=["x"],
                              dynamic_axes={"x": {0: "batch"}}, other_args=[ember.randn(5, 4), (ember.randn(1, 4),)])
    assert len(diffs) == 1 and diffs[0] < 1e-5


def test_other_args_without_dynamic_axes_fail_on_the_shape():
    with pytest.raises(Exception, match="(?i)dimension|shape"):
        ember.onnx.verify(lambda a: a * 2, ember.ones(2, 3), other_args=[ember.ones(4, 3)])


def test_training_model_is_compared_in_eval_mode_and_restored():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.9))
    with pytest.warns(UserWarning, match="training mode"):
        diffs = ember.onnx.verify(model, ember.randn(3, 4))
    assert diffs[0] < 1e-5 and model.training


def test_nan_and_inf_in_the_same_places_compare_equal():
    x = ember.tensor([0.0, 1.0, -1.0])
    assert ember.onnx.verify(lambda a: a.log(), x) == [0.0]
