"""The seed notes' autograd snippets (seeds/004 Autograd, seeds/001 external gradient, seeds/000 and 003 tensor
hooks, freezing, ``.data.fill_``), torch replaced by ember; printed results compared whitespace-insensitively."""
import re

import pytest

import ember


def same_print(obj, printed):
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    assert squash(repr(obj)) == squash(printed.replace("torch.", "ember."))


def node_print(fn, name):
    """``print(t.grad_fn)`` shows ``<NameBackward0 object at 0x...>``."""
    assert re.fullmatch(rf"<{name} object at 0x[0-9a-f]+>", str(fn))


# -- seeds/004: requires_grad, requires_grad_, grad_fn ---------------------------------------------------------------

def test_random_tensor_does_not_require_grad():
    ember.manual_seed(0)
    a = ember.randn(3, 3)
    a = a * 3
    assert a.shape == (3, 3) and a.requires_grad is False


def test_requires_grad_in_place_and_sum_backward():
    a = ember.tensor([[-1.3718, 1.7448, 1.0506],      # the note's draw of randn(3, 3) * 3
                      [-3.1201, 1.7568, 0.3226],
                      [0.7433, -0.6466, -0.6436]])
    same_print(a, "tensor([[-1.3718, 1.7448, 1.0506], [-3.1201, 1.7568, 0.3226], [ 0.7433, -0.6466, -0.6436]])")
    assert a.requires_grad is False
    a.requires_grad_(True)
    assert a.requires_grad is True
    b = (a * a).sum()
    # the note printed 20.3401 from the unrounded draw; the rounded values above give 20.3402
    assert re.fullmatch(r"tensor\(20\.340[12], grad_fn=<SumBackward0>\)", repr(b))
    node_print(b.grad_fn, "SumBackward0")


# -- seeds/004: gradients ---------------------------------------------------------------------------------------------

def test_mean_of_square_gradient():
    x = ember.ones(3, 3, requires_grad=True)
    same_print(x, "tensor([[1., 1., 1.], [1., 1., 1.], [1., 1., 1.]], requires_grad=True)")
    y = x + 5
    same_print(y, "tensor([[6., 6., 6.], [6., 6., 6.], [6., 6., 6.]], grad_fn=<AddBackward0>)")
    z = y * y
    out = z.mean()
    same_print(z, "tensor([[36., 36., 36.], [36., 36., 36.], [36., 36., 36.]], grad_fn=<MulBackward0>)")
    same_print(out, "tensor(36., grad_fn=<MeanBackward0>)")
    out.backward()
    same_print(x, "tensor([[1., 1., 1.], [1., 1., 1.], [1., 1., 1.]], requires_grad=True)")
    same_print(x.grad, "tensor([[1.3333, 1.3333, 1.3333], [1.3333, 1.3333, 1.3333], [1.3333, 1.3333, 1.3333]])")


def _doubling_loop(x):
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    return y


def test_doubling_loop_random_draw():
    ember.manual_seed(0)
    x = ember.randn(3, requires_grad=True)
    y = _doubling_loop(x)
    doublings = round(y.data.norm().item() / x.data.norm().item())
    v = ember.tensor([0.1, 1.0, 0.0001], dtype=ember.float)
    y.backward(v)
    assert x.grad.tolist() == pytest.approx([0.1 * doublings, 1.0 * doublings, 0.0001 * doublings])


def test_vector_jacobian_product_through_doubling_loop():
    # x is the note's draw (its printed y divided by 2**9; halving is exact in float32)
    x = (ember.tensor([-1124.7004, 940.4333, 186.3925]) / 512).requires_grad_()
    y = _doubling_loop(x)
    same_print(y, "tensor([-1124.7004, 940.4333, 186.3925], grad_fn=<MulBackward0>)")
    v = ember.tensor([0.1, 1.0, 0.0001], dtype=ember.float)
    y.backward(v)
    same_print(x.grad, "tensor([5.1200e+01, 5.1200e+02, 5.1200e-02])")


def test_no_grad_block():
    x = ember.randn(3, requires_grad=True)
    assert x.requires_grad is True
    assert (x ** 2).requires_grad is True
    with ember.no_grad():
        assert (x ** 2).requires_grad is False


def test_detach_same_content_no_grad():
    x = ember.randn(3, requires_grad=True)
    assert x.requires_grad is True
    y = x.detach()
    assert y.requires_grad is False
    same_print(x.eq(y).all(), "tensor(True)")


# -- seeds/004: the autograd flow example ------------------------------------------------------------------------------

def test_autograd_flow_example():
    a = ember.ones(2, 2)
    same_print(a, "tensor([[1., 1.], [1., 1.]])")
    a = ember.ones(2, 2, requires_grad=True)
    same_print(a, "tensor([[1., 1.], [1., 1.]], requires_grad=True)")
    same_print(a.data, "tensor([[1., 1.], [1., 1.]])")
    assert a.grad is None
    assert a.grad_fn is None

    b = a + 2
    same_print(b, "tensor([[3., 3.], [3., 3.]], grad_fn=<AddBackward0>)")
    c = b ** 2
    same_print(c, "tensor([[9., 9.], [9., 9.]], grad_fn=<PowBackward0>)")
    out = c.sum()
    same_print(out, "tensor(36., grad_fn=<SumBackward0>)")
    out.backward()

    same_print(a.data, "tensor([[1., 1.], [1., 1.]])")
    same_print(a.grad, "tensor([[6., 6.], [6., 6.]])")
    assert a.grad_fn is None

    same_print(b.data, "tensor([[3., 3.], [3., 3.]])")
    with pytest.warns(UserWarning, match="not a leaf Tensor"):  # PyTorch warns too
        assert b.grad is None
    node_print(b.grad_fn, "AddBackward0")

    same_print(c.data, "tensor([[9., 9.], [9., 9.]])")
    with pytest.warns(UserWarning, match="not a leaf Tensor"):  # PyTorch warns too
        assert c.grad is None
    node_print(c.grad_fn, "PowBackward0")

    same_print(out.data, "tensor(36.)")
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert out.grad is None
    node_print(out.grad_fn, "SumBackward0")


# -- seeds/001: backward with an external gradient ---------------------------------------------------------------------

def test_external_grad_example():
    a = ember.tensor([2.0, 3.0], requires_grad=True)
    b = ember.tensor([6.0, 4.0], requires_grad=True)
    Q = 3 * a ** 3 - b ** 2
    external_grad = ember.tensor([1.0, 1.0])
    Q.backward(gradient=external_grad)
    assert a.grad.tolist() == [36.0, 81.0]
    assert b.grad.tolist() == [-12.0, -8.0]
    same_print(a.grad, "tensor([36., 81.])")
    same_print(b.grad, "tensor([-12., -8.])")


# -- seeds/000 and 003: tensor hooks, freezing, .data.fill_ ------------------------------------------------------------

def test_register_hook_and_backward_hooks_listing():
    # _backward_hooks is PyTorch's own attribute (like _version), read by the tutorial this seed reproduces
    tensor = ember.ones(2, requires_grad=True)
    assert tensor._backward_hooks is None
    seen = []

    def hook(grad):
        seen.append(grad.tolist())

    tensor.register_hook(hook)
    hooks = tensor._backward_hooks
    assert list(hooks.values()) == [hook]          # PyTorch: OrderedDict([(0, <function hook>)])
    (tensor * 2).sum().backward()
    assert seen == [[2.0, 2.0]] and tensor.grad.tolist() == [2.0, 2.0]


def test_tensor_hook_collects_gradients():
    answer = []

    def tensor_hook(grad):
        answer.extend(grad)

    W = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    W.register_hook(tensor_hook)
    x = ember.tensor([1.0, 10.0])
    (W @ x).sum().backward()
    assert [g.tolist() for g in answer] == [[1.0, 10.0], [1.0, 10.0]]


def test_freezing_by_requires_grad_and_by_hook():
    backbone = ember.tensor([1.0, 2.0], requires_grad=True)
    head = ember.tensor([3.0, 4.0], requires_grad=True)
    backbone.requires_grad_(False)                 # freeze by requires_grad
    (backbone * head).sum().backward()
    assert backbone.grad is None and head.grad.tolist() == [1.0, 2.0]

    frozen = ember.tensor([1.0, 2.0], requires_grad=True)
    frozen.register_hook(lambda grad: ember.zeros_like(grad))  # freeze by a hook: the gradient becomes 0
    (frozen * frozen).sum().backward()
    assert frozen.grad.tolist() == [0.0, 0.0]


def test_weight_initialization_through_data_fill():
    W = ember.randn(2, 3, requires_grad=True)
    W.data.fill_(1)
    assert W.tolist() == [[1.0] * 3] * 2
    assert W.requires_grad and W.is_leaf and W._version == 0
