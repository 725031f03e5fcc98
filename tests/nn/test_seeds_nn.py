"""The nn snippets of the seed notes (seeds/000 "torch.nn", seeds/003 "Pytorch Model 정리"), torch replaced by ember.

The notes give the code only in outline (``class TestNet(nn.Module): ...``, ``nn.Sequential(Add(3), Add(2),
Add(5))``, ``add.register_forward_hook(hook)``, ``model.W.register_hook(tensor_hook)``, ``module.W.data.fill_(1)``,
``module.extra_repr = partial(function_repr, module)``, ``register_buffer('name', torch.tensor([1]),
persistent=True)``, ``get_parameter``/``get_buffer``); the snippets below complete them the way the course they
come from does. Every expected printout was produced by running the same code under PyTorch 2.13 by hand;
printed strings are compared with ``torch.`` read as ``ember.``.
"""
import re
from collections import OrderedDict
from functools import partial

import pytest

import ember
from ember import nn
from ember.nn.parameter import Parameter


def same_print(printed, expected):
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    assert squash(printed) == squash(expected.replace("torch.", "ember."))


# -- seeds/003: Sequential, ModuleList and ModuleDict of Add modules ---------------------------------------------

class Add(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return x + self.value


def test_sequential_calculator():
    calculator = nn.Sequential(Add(3), Add(2), Add(5))
    assert repr(calculator(ember.tensor([1]))) == "tensor([11])"
    assert repr(calculator) == "Sequential(\n  (0): Add()\n  (1): Add()\n  (2): Add()\n)"


def test_module_list_calculator():
    class Calculator(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_list = nn.ModuleList([Add(2), Add(3), Add(5)])

        def forward(self, x):
            x = self.add_list[1](x)
            x = self.add_list[2](x)
            x = self.add_list[0](x)
            return x

    calculator = Calculator()
    assert repr(calculator(ember.tensor([1]))) == "tensor([11])"
    assert repr(calculator) == "Calculator(\n  (add_list): ModuleList(\n    (0-2): 3 x Add()\n  )\n)"
    assert [name for name, _ in calculator.named_modules()] == ["", "add_list", "add_list.0", "add_list.1",
                                                                "add_list.2"]


def test_module_dict_calculator():
    class DictCalculator(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_dict = nn.ModuleDict({"add2": Add(2), "add3": Add(3), "add5": Add(5)})

        def forward(self, x):
            x = self.add_dict["add2"](x)
            x = self.add_dict["add3"](x)
            x = self.add_dict["add5"](x)
            return x

    calculator = DictCalculator()
    assert repr(calculator(ember.tensor([1]))) == "tensor([11])"
    assert repr(calculator) == ("DictCalculator(\n  (add_dict): ModuleDict(\n    (add2): Add()\n    (add3): Add()\n"
                                "    (add5): Add()\n  )\n)")


# -- seeds/003: Parameter in a hand-written Linear, buffers in the state dict ------------------------------------

def test_hand_written_linear_with_parameters():
    class Linear(nn.Module):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__()
            self.W = Parameter(ember.ones((out_features, in_features)))
            self.b = Parameter(ember.ones(out_features))

        def forward(self, x):
            return ember.addmm(self.b, x, self.W.T)

    linear = Linear(2, 3)
    output = linear(ember.Tensor([[1, 2], [3, 4]]))
    same_print(repr(output), "tensor([[4., 4., 4.], [8., 8., 8.]], grad_fn=<AddmmBackward0>)")
    assert [name for name, _ in linear.named_parameters()] == ["W", "b"]


def test_parameter_tensor_and_buffer_in_the_state_dict():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.parameter = Parameter(ember.Tensor([7]))
            self.tensor = ember.Tensor([7])
            self.register_buffer("buffer", ember.Tensor([7]), persistent=True)

    model = Model()
    assert repr(model.get_buffer("buffer")) == "tensor([7.])"
    same_print(repr(model.state_dict()), "OrderedDict([('parameter', tensor([7.])), ('buffer', tensor([7.]))])")


# -- seeds/000 + 003: a model of layers of functions; named_* and get_* ------------------------------------------

class Function_A(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return x * 2


class Function_B(nn.Module):
    def __init__(self):
        super().__init__()
        self.W1 = Parameter(ember.Tensor([10]))
        self.W2 = Parameter(ember.Tensor([2]))

    def forward(self, x):
        return x / self.W1 / self.W2


class Function_C(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("duck", ember.Tensor([7]), persistent=True)

    def forward(self, x):
        return x * self.duck


class Function_D(nn.Module):
    def __init__(self):
        super().__init__()
        self.W1 = Parameter(ember.Tensor([3]))
        self.W2 = Parameter(ember.Tensor([5]))
        self.c = Function_C()

    def forward(self, x):
        return self.c(x + self.W1) / self.W2


class Layer_AB(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Function_A("duck")
        self.b = Function_B()

    def forward(self, x):
        return self.b(self.a(x) / 5)


class Layer_CD(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = Function_C()
        self.d = Function_D()

    def forward(self, x):
        return self.d(self.c(x)) + 1


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ab = Layer_AB()
        self.cd = Layer_CD()

    def forward(self, x):
        return self.cd(self.ab(x))


MODEL_PRINT = """Model(
  (ab): Layer_AB(
    (a): Function_A()
    (b): Function_B()
  )
  (cd): Layer_CD(
    (c): Function_C()
    (d): Function_D(
      (c): Function_C()
    )
  )
)"""


def test_layered_model_output_and_print():
    model = Model()
    assert repr(model(ember.tensor([7]))) == "tensor([6.5720], grad_fn=<AddBackward0>)"
    assert repr(model) == MODEL_PRINT


def test_named_children_and_named_modules(capsys):
    model = Model()
    for name, child in model.named_children():
        print(f"[ Name ] : {name}\n[ Children ]\n{child}")
        print("-" * 30)
    assert capsys.readouterr().out == (
        "[ Name ] : ab\n[ Children ]\nLayer_AB(\n  (a): Function_A()\n  (b): Function_B()\n)\n" + "-" * 30 + "\n"
        "[ Name ] : cd\n[ Children ]\nLayer_CD(\n  (c): Function_C()\n  (d): Function_D(\n    (c): Function_C()\n"
        "  )\n)\n" + "-" * 30 + "\n")
    for name, module in model.named_modules():
        print(f"[ Name ] : {name}\n[ Module ]\n{module}")
        print("-" * 30)
    printed = capsys.readouterr().out
    assert re.findall(r"\[ Name \] : (.*)\n", printed) == ["", "ab", "ab.a", "ab.b", "cd", "cd.c", "cd.d", "cd.d.c"]
    assert printed.startswith("[ Name ] : \n[ Module ]\n" + MODEL_PRINT + "\n")
    assert "[ Name ] : cd.d\n[ Module ]\nFunction_D(\n  (c): Function_C()\n)\n" in printed
    assert repr(model.get_submodule("ab.a")) == "Function_A()"


def test_named_parameters_and_get_parameter(capsys):
    model = Model()
    for name, parameter in model.named_parameters():
        print(f"[ Name ] : {name}\n[ Parameter ]\n{parameter}")
        print("-" * 30)
    line = "-" * 30
    same_print(capsys.readouterr().out, f"""
        [ Name ] : ab.b.W1 [ Parameter ] Parameter containing: tensor([10.], requires_grad=True) {line}
        [ Name ] : ab.b.W2 [ Parameter ] Parameter containing: tensor([2.], requires_grad=True) {line}
        [ Name ] : cd.d.W1 [ Parameter ] Parameter containing: tensor([3.], requires_grad=True) {line}
        [ Name ] : cd.d.W2 [ Parameter ] Parameter containing: tensor([5.], requires_grad=True) {line}""")
    assert repr(model.get_parameter("ab.b.W1")) == "Parameter containing:\ntensor([10.], requires_grad=True)"


def test_named_buffers_and_get_buffer(capsys):
    model = Model()
    for name, buffer in model.named_buffers():
        print(f"[ Name ] : {name}\n[ Buffer ] : {buffer}")
        print("-" * 30)
    line = "-" * 30
    same_print(capsys.readouterr().out, f"""
        [ Name ] : cd.c.duck [ Buffer ] : tensor([7.]) {line}
        [ Name ] : cd.d.c.duck [ Buffer ] : tensor([7.]) {line}""")
    assert repr(model.get_buffer("cd.c.duck")) == "tensor([7.])"
    assert list(model.state_dict()) == ["ab.b.W1", "ab.b.W2", "cd.c.duck", "cd.d.W1", "cd.d.W2", "cd.d.c.duck"]


# -- seeds/000 + 003: apply for weight initialisation and extra_repr ---------------------------------------------

def _functions_model():
    class Function(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name
            self.W = Parameter(ember.rand(1))

    class Function_A(Function):
        def forward(self, x):
            return x + self.W

    class Function_B(Function):
        def forward(self, x):
            return x - self.W

    class Function_C(Function):
        def forward(self, x):
            return x * self.W

    class Function_D(Function):
        def forward(self, x):
            return x / self.W

    class Layer_AB(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Function_A("plus")
            self.b = Function_B("substract")

        def forward(self, x):
            return self.b(self.a(x))

    class Layer_CD(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = Function_C("multiply")
            self.d = Function_D("divide")

        def forward(self, x):
            return self.d(self.c(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ab = Layer_AB()
            self.cd = Layer_CD()

        def forward(self, x):
            return self.cd(self.ab(x))

    return Model()


def test_apply_prints_every_module_children_first(capsys):
    model = _functions_model()

    def print_module(module):
        print(module)
        print("-" * 30)

    returned_module = model.apply(print_module)
    assert returned_module is model
    blocks = capsys.readouterr().out.split("-" * 30 + "\n")
    assert [b.split("(")[0] for b in blocks[:-1]] == ["Function_A", "Function_B", "Layer_AB", "Function_C",
                                                      "Function_D", "Layer_CD", "Model"]


def test_apply_weight_initialization_and_extra_repr():
    model = _functions_model()

    def weight_initialization(module):
        module_name = module.__class__.__name__
        if "Function" in module_name:
            module.W.data.fill_(1.)

    model.apply(weight_initialization)
    assert [p.item() for p in model.parameters()] == [1.0, 1.0, 1.0, 1.0]
    # ((2 + 1) - 1) * 1 / 1
    assert repr(model(ember.tensor([2.]))) == "tensor([2.], grad_fn=<DivBackward0>)"

    def function_repr(self):
        return f"name={self.name}"

    def add_repr(module):
        module_name = module.__class__.__name__
        if "Function" in module_name:
            module.extra_repr = partial(function_repr, module)

    model.apply(add_repr)
    assert repr(model) == """Model(
  (ab): Layer_AB(
    (a): Function_A(name=plus)
    (b): Function_B(name=substract)
  )
  (cd): Layer_CD(
    (c): Function_C(name=multiply)
    (d): Function_D(name=divide)
  )
)"""


# -- seeds/003: hooks --------------------------------------------------------------------------------------------

def test_forward_pre_hook_and_forward_hook_returning_output_plus_5():
    class Add(nn.Module):
        def forward(self, x1, x2):
            return ember.add(x1, x2)

    add = Add()
    answer = []

    def pre_hook(module, input):
        answer.extend(input)

    def hook(module, input, output):
        answer.extend(output)
        return output + 5

    add.register_forward_pre_hook(pre_hook)
    add.register_forward_hook(hook)
    x1, x2 = ember.rand(1), ember.rand(1)
    output = add(x1, x2)
    assert repr(output == x1 + x2 + 5) == "tensor([True])"
    assert len(answer) == 3 and answer[0] is x1 and answer[1] is x2 and ember.equal(answer[2], (x1 + x2)[0])


class WModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = Parameter(ember.Tensor([5]))

    def forward(self, x1, x2):
        output = x1 * x2
        output = output * self.W
        return output


def test_full_backward_hook_collects_gradients():
    model = WModel()
    answer = []

    def module_hook(module, grad_input, grad_output):
        answer.extend(grad_input)
        answer.extend(grad_output)

    model.register_full_backward_hook(module_hook)
    x1 = ember.rand(1, requires_grad=True)
    x2 = ember.rand(1, requires_grad=True)
    output = model(x1, x2)
    output.retain_grad()
    output.backward()
    assert answer == [x1.grad, x2.grad, output.grad]
    # d(5 x1 x2)/dx1 = 5 x2, d/dx2 = 5 x1; d output/d output = 1
    assert [a.item() for a in answer] == pytest.approx([5 * x2.item(), 5 * x1.item(), 1.0], rel=1e-6)


def test_tensor_hook_on_model_w():
    model = WModel()
    answer = []

    def tensor_hook(grad):
        answer.extend(grad)

    model.W.register_hook(tensor_hook)
    x1 = ember.rand(1, requires_grad=True)
    x2 = ember.rand(1, requires_grad=True)
    output = model(x1, x2)
    output.backward()
    assert answer == [model.W.grad]
    assert answer[0].item() == pytest.approx(x1.item() * x2.item(), rel=1e-6)


def test_test_net_skeleton():
    class TestNet(nn.Module):
        def __init__(self):
            super(TestNet, self).__init__()

        def forward(self, x):
            x_out = x
            return x_out

    x = ember.ones(2)
    assert TestNet()(x) is x and repr(TestNet()) == "TestNet()"


# -- seeds/000 6.1: freezing a pretrained backbone, by requires_grad or by a hook --------------------------------

def _transfer_model():
    backbone = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 3))
    model = nn.Sequential(OrderedDict([("backbone", backbone), ("head", nn.Linear(3, 2))]))
    return model, backbone


def test_freezing_by_requires_grad():
    model, backbone = _transfer_model()
    backbone.requires_grad_(False)
    model(ember.ones(5, 4)).sum().backward()
    assert all(p.grad is None for p in backbone.parameters())
    assert all(p.grad is not None for p in model.head.parameters())
    assert [n for n, p in model.named_parameters() if p.requires_grad] == ["head.weight", "head.bias"]


def test_freezing_by_hooks_that_zero_the_gradients():
    model, backbone = _transfer_model()
    for p in backbone.parameters():
        p.register_hook(lambda grad: ember.zeros_like(grad))
    # a full backward hook fixing grad_input to 0 stops the gradient before anything below the layer
    model.head.register_full_backward_hook(lambda module, grad_input, grad_output: (ember.zeros_like(grad_input[0]),))
    x = ember.ones(5, 4, requires_grad=True)
    model(x).sum().backward()
    assert all(not p.grad.any().item() for p in backbone.parameters())
    assert not x.grad.any().item()
    assert model.head.weight.grad.abs().sum().item() > 0
