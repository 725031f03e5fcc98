"""Every ONNX lowering names an existing op, and every op of ember is lowered or listed as not exportable."""
import io

import pytest

import ember
import ember.linalg
import ember.nn  # its ops need lowerings too
import ember.onnx
from ember.autograd.function import OPS
from ember.onnx import registered_lowerings
from ember.onnx.lowerings import merged
from ember.onnx.lowerings.not_exportable import NOT_EXPORTABLE

EMBER_OPS = {name for name, cls in OPS.items() if cls.__module__.startswith("ember.")}


def test_every_registered_lowering_names_an_existing_op():
    unknown = sorted(set(registered_lowerings()) - set(OPS))
    assert unknown == [], f"lowerings for ops that do not exist: {unknown}"


def test_every_op_is_lowered_or_listed_as_not_exportable_but_not_both():
    lowered = set(merged())
    assert sorted(EMBER_OPS - lowered - set(NOT_EXPORTABLE)) == []  # a new op must choose
    assert sorted(lowered & set(NOT_EXPORTABLE)) == []
    assert sorted(set(NOT_EXPORTABLE) - EMBER_OPS) == []  # the list names ops that exist
    assert all(reason for reason in NOT_EXPORTABLE.values())


@pytest.mark.parametrize("group", [("pow", "pow_tensor", "pow_scalar_base"), ("sub", "rsub_scalar"),
                                   ("sum", "sum_dim"), ("mean", "mean_dim"), ("prod", "prod_dim"),
                                   ("max", "max_dim"), ("min", "min_dim"), ("round", "round_decimals"),
                                   ("clamp", "clamp_scalar"), ("convolution", "convolution_backward"),
                                   ("linear", "linear_no_bias")])
def test_variants_that_once_shared_a_name_share_their_lowering(group):
    lowerings = merged()
    assert all(lowerings[name] is lowerings[group[0]] for name in group)


def test_variants_still_export():
    x = ember.tensor([[1.0, -2.0], [3.0, 4.0]])
    diffs = ember.onnx.verify(lambda a: (2.0 - a).sum(dim=1) + a.max(dim=0).values + (a ** a).mean(dim=0), x)
    assert diffs == [0.0]


def test_export_of_a_not_exportable_op_quotes_the_reason():
    with pytest.raises(ember.onnx.UnsupportedExportError,
                       match=r"no ONNX lowering for op 'bernoulli' \(draws from ember's random generator"):
        ember.onnx.export(lambda p: ember.bernoulli(p), ember.full((3,), 0.5), io.BytesIO())
