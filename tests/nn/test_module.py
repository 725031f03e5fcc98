"""nn.Module: registration by attribute, iterators, lookups, modes, conversion, printing.

Expected names, orders and messages were checked against PyTorch 2.13 by hand (torch. -> ember.).
"""
import gc

import numpy as np
import pytest

import ember
from ember import nn


class Tied(nn.Module):
    """``b`` shares ``a``'s weight; ``c`` is ``a`` again."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)
        self.b.weight = self.a.weight
        self.c = self.a


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 1)])
        self.register_buffer("steps", ember.tensor(0))
        self.register_buffer("scale", ember.ones(1), persistent=False)

    def forward(self, x):
        x = self.fc(x)
        for block in self.blocks:
            x = block(x)
        return x * self.scale


# -- registration ------------------------------------------------------------------------------------------------

def _own(named):
    """The names of a module's own parameters, buffers or children, from ``named_*(recurse=False)``."""
    return [name for name, _ in named]


def test_attribute_assignment_registers_parameters_modules_buffers():
    net = Net()
    assert _own(net.named_parameters(recurse=False)) == [] and _own(net.named_children()) == ["fc", "blocks"]
    assert _own(net.named_buffers(recurse=False)) == ["steps", "scale"]
    assert net.fc is net.get_submodule("fc") and net.steps is net.get_buffer("steps")
    net.w = nn.Parameter(ember.ones(2))
    net.plain = ember.ones(2)  # a plain tensor is an ordinary attribute
    assert _own(net.named_parameters(recurse=False)) == ["w"] and net.plain.tolist() == [1.0, 1.0]
    assert "plain" not in _own(net.named_buffers()) and "plain" not in net.state_dict()


def test_reassignment_checks_the_kind():
    m = nn.Module()
    m.x = nn.Parameter(ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'ember.FloatTensor' as parameter 'x' "
                                        r"\(ember.nn.Parameter or None expected\)"):
        m.x = ember.ones(1)
    m.x = None
    assert m.x is None and _own(m.named_parameters()) == []
    with pytest.raises(TypeError, match=r"as parameter 'x'"):  # the name stays a parameter's, now empty
        m.x = ember.ones(1)
    m.s = nn.Linear(1, 1)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 's' \(ember.nn.Module or None "
                                        r"expected\)"):
        m.s = 3
    m.register_buffer("bb", ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'bb'"):
        m.bb = 3
    m.bb = ember.zeros(2)  # a tensor assigned to a buffer's name replaces the buffer
    assert m.get_buffer("bb").tolist() == [0.0, 0.0]
    m.s = nn.Parameter(ember.ones(1))  # a parameter under a module's name replaces the module
    assert _own(m.named_children()) == [] and _own(m.named_parameters()) == ["s"]


def test_register_parameter_and_buffer_errors():
    m = nn.Module()
    with pytest.raises(TypeError, match=r"cannot assign 'ember.FloatTensor' object to parameter 'z' "
                                        r"\(ember.nn.Parameter or None required\)"):
        m.register_parameter("z", ember.ones(1))
    with pytest.raises(KeyError, match=r"parameter name can.{1,2}t contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match=r"buffer name can.{1,2}t be empty string"):
        m.register_buffer("", ember.ones(1))
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        m.register_buffer(1, ember.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'int' object to buffer 'c'"):
        m.register_buffer("c", 3)
    m.fc = nn.Linear(1, 1)
    with pytest.raises(KeyError, match="attribute 'fc' already exists"):
        m.register_buffer("fc", ember.ones(1))
    with pytest.raises(KeyError, match=r"module name can.{1,2}t contain .*, got: x.y"):
        m.add_module("x.y", nn.Identity())
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("k", 3)
    m.register_module("k", nn.Identity())
    assert _own(m.named_children()) == ["fc", "k"]


def test_parameter_from_a_non_leaf_cannot_be_registered():
    m = nn.Module()
    p = nn.Parameter(ember.ones(1))
    p.grad_fn = (ember.ones(1, requires_grad=True) * 2).grad_fn  # what a non-leaf parameter would look like
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        m.register_parameter("w", p)


def test_assigning_before_init_is_an_attribute_error():
    class NoInit(nn.Module):
        def __init__(self, what):
            setattr(self, "w", what)

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        NoInit(nn.Parameter(ember.ones(1)))
    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        NoInit(nn.Identity())


def test_init_arguments_and_missing_forward():
    with pytest.raises(TypeError, match="unexpected keyword argument 'a'"):
        nn.Module(a=3)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        nn.Module(3)
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def test_getattr_and_delattr():
    net = Net()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'zz'"):
        net.zz
    del net.fc, net.steps
    assert _own(net.named_children()) == ["blocks"] and _own(net.named_buffers()) == ["scale"]
    net.w = nn.Parameter(ember.ones(1))
    del net.w
    assert _own(net.named_parameters(recurse=False)) == []
    del net.scale
    assert _own(net.named_buffers()) == [] and not hasattr(net, "scale")
    with pytest.raises(AttributeError):
        del net.nothing


def test_dir_lists_registered_names_but_not_indices():
    lin = nn.Linear(2, 2)
    names = dir(lin)
    assert {"weight", "bias", "forward", "training", "in_features"} <= set(names) and names == sorted(names)
    assert "0" not in dir(nn.Sequential(nn.Identity()))


# -- iterators ---------------------------------------------------------------------------------------------------

def test_named_parameters_order_prefix_recurse_duplicates():
    assert [n for n, _ in Net().named_parameters()] == \
        ["fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"]
    tied = Tied()
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert [n for n, _ in tied.named_parameters(remove_duplicate=False)] == \
        ["a.weight", "a.bias", "b.weight", "b.bias", "c.weight", "c.bias"]
    assert [n for n, _ in tied.named_parameters(prefix="net")][:2] == ["net.a.weight", "net.a.bias"]
    assert list(tied.named_parameters(recurse=False)) == []
    assert len(list(tied.parameters())) == 3
    assert [p is q for p, q in zip(tied.parameters(), [tied.a.weight, tied.a.bias, tied.b.bias])] == [True] * 3


def test_named_modules_children_buffers():
    tied = Tied()
    assert [n for n, _ in tied.named_modules()] == ["", "a", "b"]
    assert [n for n, _ in tied.named_modules(remove_duplicate=False)] == ["", "a", "b", "c"]
    assert [n for n, _ in tied.named_modules(prefix="m")] == ["m", "m.a", "m.b"]
    assert [n for n, _ in tied.named_children()] == ["a", "b"]
    assert list(tied.children()) == [tied.a, tied.b]
    assert [type(m).__name__ for m in Net().modules()] == ["Net", "Linear", "ModuleList", "Linear", "Linear"]
    net = Net()
    assert [n for n, _ in net.named_buffers()] == ["steps", "scale"]
    assert [n for n, _ in nn.Sequential(net).named_buffers(prefix="x")] == ["x.0.steps", "x.0.scale"]
    assert list(nn.Sequential(net).named_buffers(recurse=False)) == []
    assert [b is net.steps for b in list(net.buffers())[:1]] == [True]


def test_get_submodule_parameter_buffer_and_their_errors():
    net = Net()
    assert net.get_submodule("") is net and net.get_submodule("blocks.1") is net.blocks[1]
    assert net.get_parameter("blocks.0.bias") is net.blocks[0].bias
    assert net.get_buffer("steps") is net.steps
    cases = [(net.get_parameter, "fc.x", "Linear has no attribute `x`"),
             (net.get_parameter, "x.weight", "Net has no attribute `x`"),
             (net.get_submodule, "fc.weight", "`weight` is not an nn.Module"),
             (net.get_buffer, "fc.weight", "`weight` is not a buffer"),
             (net.get_parameter, "steps", "`steps` is not an nn.Parameter"),
             (net.get_submodule, "blocks.5", "ModuleList has no attribute `5`")]
    for fn, target, message in cases:
        with pytest.raises(AttributeError) as info:
            fn(target)
        assert str(info.value) == message


def test_set_submodule():
    net = Net()
    new = nn.Linear(3, 3)
    net.set_submodule("blocks.0", new)
    assert net.blocks[0] is new
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.set_submodule("fc.weight", nn.Identity())


# -- modes, gradients, apply -------------------------------------------------------------------------------------

def test_train_eval_recurse():
    net = Net()
    assert net.training and net.blocks[1].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)


def test_requires_grad_and_zero_grad():
    net = Net()
    net(ember.ones(4, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any().item() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_visits_children_first_and_returns_self():
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "Linear", "Linear", "ModuleList", "Net"]


# -- conversion --------------------------------------------------------------------------------------------------

class WithInt(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("count", ember.tensor(3))
        self.register_buffer("mean", ember.ones(2))


def test_dtype_conversion_in_place_floats_only():
    m = WithInt()
    weight = m.lin.weight
    values = weight.detach().numpy().copy()
    m.lin.weight.grad = ember.ones(2, 2)
    assert m.double() is m
    assert m.lin.weight is weight and type(weight) is nn.Parameter and weight.requires_grad
    assert weight.dtype == ember.float64 and weight.grad.dtype == ember.float64
    assert m.count.dtype == ember.int64 and m.mean.dtype == ember.float64
    np.testing.assert_array_equal(weight.detach().numpy(), values.astype(np.float64))
    assert m.half().lin.bias.dtype == ember.float16
    assert m.float().lin.bias.dtype == ember.float32
    assert m.to(ember.float64).mean.dtype == ember.float64 and m.count.dtype == ember.int64
    assert m.to(dtype=ember.float32).lin.weight.dtype == ember.float32
    assert m.to(ember.ones(1, dtype=ember.float64)).lin.weight.dtype == ember.float64
    assert m.cpu() is m and m.type(ember.float32).lin.weight.dtype == ember.float32
    assert m.to("cpu", ember.float64, True).lin.weight.dtype == ember.float64  # (device, dtype, non_blocking)


def test_to_integer_dtype_is_rejected():
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got "
                                        "desired dtype=ember.int64"):
        WithInt().to(ember.int64)


def test_conversion_keeps_memory_count_right():
    gc.collect()
    before = ember.memory_allocated("cpu")
    lin = nn.Linear(100, 10)
    assert ember.memory_allocated("cpu") - before == 4 * 1010
    lin.double()
    assert ember.memory_allocated("cpu") - before == 8 * 1010
    lin.half()
    assert ember.memory_allocated("cpu") - before == 2 * 1010
    del lin
    gc.collect()
    assert ember.memory_allocated("cpu") == before


def test_to_another_device(two_cpus):
    m = WithInt()
    weight = m.lin.weight
    m.to("cpu:1")
    assert m.lin.weight is weight and str(weight.device) == "cpu:1" and str(m.count.device) == "cpu:1"
    out = m.lin(ember.ones(1, 2, device="cpu:1"))
    assert str(out.device) == "cpu:1"
    m.to("cpu:0", ember.float64)
    assert str(weight.device) == "cpu:0" and weight.dtype == ember.float64


# -- printing ----------------------------------------------------------------------------------------------------

def test_repr_nested_as_pytorch():
    assert repr(Net()) == (
        "Net(\n"
        "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (blocks): ModuleList(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Linear(in_features=3, out_features=1, bias=True)\n"
        "  )\n"
        ")")

    class Empty(nn.Module):
        def forward(self):
            return None

    assert repr(Empty()) == "Empty()"


def test_extra_repr_one_line_and_several_lines():
    class One(nn.Module):
        def extra_repr(self):
            return "k=3"

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = One()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(One()) == "One(k=3)"
    assert repr(Two()) == "Two(\n  a=1\n  b=2\n  (inner): One(k=3)\n)"


def test_call_passes_args_and_kwargs_to_forward():
    class Scale(nn.Module):
        def forward(self, x, *, factor=2):
            return x * factor

    assert Scale()(ember.ones(1), factor=5).tolist() == [5.0]
