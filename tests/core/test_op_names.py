"""Ops are named on purpose: every op class sets a unique ``name_``, and backend kernels name existing ops."""
import pytest

import ember
import ember.linalg
import ember.nn  # its ops are ops too
from ember import _plugins
from ember.autograd.function import OPS, Op


def _op_classes(cls=Op):
    """Every subclass of Op defined so far, abstract bases included."""
    for sub in cls.__subclasses__():
        yield sub
        yield from _op_classes(sub)


def _embers(classes):
    return [c for c in classes if c.__module__.startswith("ember.")]  # not the ones tests define


def test_every_op_class_is_registered_under_its_own_unique_name():
    named = [c for c in _embers(_op_classes()) if c.name_]
    assert len(named) > 250
    assert len({c.name_ for c in named}) == len(named)  # no two classes share a name
    assert {c.name_: c for c in named} == {c.name_: c for c in _embers(OPS.values())}
    assert all(c.__dict__["name_"] == name for name, c in OPS.items())  # set in the class itself, not inherited


def test_abstract_bases_have_no_name_and_are_not_ops():
    from ember.ops.pooling import MaxPool1d, _MaxPool
    assert _MaxPool.name_ == "" and _MaxPool not in OPS.values()
    assert MaxPool1d.name_ == "max_pool1d" and OPS["max_pool1d"] is MaxPool1d


def test_the_variants_that_once_shared_a_name_have_their_own():
    # ops that used to share a name (so one kernel or lowering served all); each is its own op now
    groups = [("pow", "pow_tensor", "pow_scalar_base"), ("sub", "rsub_scalar"), ("sum", "sum_dim"),
              ("max", "max_dim"), ("median", "median_all"), ("convolution", "convolution_backward")]
    for group in groups:
        assert len({OPS[name] for name in group}) == len(group)


def test_an_op_without_a_name_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"op class .*Nameless must name itself: set the class attribute name_.*"
                                        r"abstract=True"):
        class Nameless(Op):
            @staticmethod
            def forward(ctx, xp, a):
                return a
    assert not any(c.__name__ == "Nameless" for c in OPS.values())


def test_a_name_is_not_inherited():
    from ember.ops.arith import Add
    with pytest.raises(TypeError, match="must name itself"):
        class AddTwice(Add):
            pass


def test_a_taken_name_is_refused_naming_both_classes():
    with pytest.raises(TypeError, match=r"op name 'add' of .*Impostor is already taken by ember\.ops\.arith\.Add"):
        class Impostor(Op):
            name_ = "add"
    assert OPS["add"].__module__ == "ember.ops.arith"


def test_an_abstract_base_may_not_set_a_name():
    with pytest.raises(TypeError, match="declared abstract .* but sets name_ = 'tests.base'"):
        class Base(Op, abstract=True):
            name_ = "tests.base"


def test_running_the_same_class_statement_again_replaces_the_op():
    def define():
        class Twice(Op):
            name_ = "tests.twice"

            @staticmethod
            def forward(ctx, xp, a):
                return a + 1
        return Twice
    first, second = define(), define()  # e.g. a module reloaded, or a doctest run twice
    assert first is not second and OPS["tests.twice"] is second
    assert second.apply(ember.tensor([1.0])).tolist() == [2.0]


def test_every_kernel_of_every_backend_names_an_existing_op():
    for backend in _plugins.list_backends():
        kernels = _plugins.op_kernels(backend)
        assert set(kernels) <= set(OPS), (backend, sorted(set(kernels) - set(OPS)))


def test_the_cpu_backend_runs_a_convolution_inside_backward_with_the_same_kernel():
    kernels = _plugins.op_kernels("cpu")
    assert kernels["convolution_backward"] is kernels["convolution"]


def test_a_kernel_keyed_by_a_variant_name_reaches_only_that_variant():
    calls = []

    class PowTensorKernel:
        @ember.hookimpl
        def ember_op_kernels(self, backend):
            def kernel(ctx, xp, a, b):
                calls.append("pow_tensor")
                return xp.pow(a, b)
            return {"pow_tensor": kernel} if backend.name == "cpu" else {}

    name = ember.register_plugin(PowTensorKernel(), "tests.pow-tensor-kernel")
    try:
        x = ember.tensor([2.0, 3.0])
        assert (x ** ember.tensor([2.0, 2.0])).tolist() == [4.0, 9.0]
        assert calls == ["pow_tensor"]
        assert (x ** 2).tolist() == [4.0, 9.0] and (2 ** x).tolist() == [4.0, 8.0]
        assert calls == ["pow_tensor"]  # Pow and PowScalarBase keep their own forward
    finally:
        ember.unregister_plugin(name)
