"""Small models for small images and tabular data: ``lenet`` (LeNet-5 for 1x28x28) and ``mlp``."""
from ..modules import Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential
from ._weights import load_weights

__all__ = ["LeNet", "lenet", "mlp"]


class LeNet(Sequential):
    """LeNet-5 for 1x28x28 images (MNIST-sized), with ReLU and max pooling.

    conv 1->6 (5x5, padding 2), pool, conv 6->16 (5x5), pool, then fully connected 400 -> 120 -> 84 ->
    ``num_classes``. Being a ``Sequential``, layers are addressed by index (``model[0]`` is the first
    convolution) and state-dict keys are ``0.weight``, ``3.weight``, ... ``11.bias``.
    """

    def __init__(self, num_classes: int = 10):
        super().__init__(
            Conv2d(1, 6, 5, padding=2), ReLU(), MaxPool2d(2),
            Conv2d(6, 16, 5), ReLU(), MaxPool2d(2),
            Flatten(),
            Linear(16 * 5 * 5, 120), ReLU(),
            Linear(120, 84), ReLU(),
            Linear(84, num_classes))


def lenet(*, weights=None, num_classes: int = 10):
    """LeNet-5 for 1x28x28 inputs; ``weights`` is the path of a safetensors file to load (strict).

    >>> import ember
    >>> import ember.nn.models as models
    >>> models.lenet()(ember.zeros(2, 1, 28, 28)).shape
    ember.Size([2, 10])
    """
    model = LeNet(num_classes)
    return model if weights is None else load_weights(model, weights)


def mlp(in_features: int, hidden=(), num_classes: int = 10, *, weights=None):
    """A multilayer perceptron: ``Linear`` + ``ReLU`` for each size in ``hidden``, then ``Linear`` to the classes.

    Inputs with more than two dimensions are flattened first, so ``mlp(784, [128])`` takes 1x28x28 images.
    State-dict keys are the ``Sequential`` indices of the linear layers (``1.weight``, ``3.weight``, ...).

    >>> import ember
    >>> import ember.nn.models as models
    >>> model = models.mlp(784, [128, 64], num_classes=10)
    >>> model(ember.zeros(5, 1, 28, 28)).shape, list(model.state_dict())[:2]
    (ember.Size([5, 10]), ['1.weight', '1.bias'])
    """
    layers = [Flatten()]
    sizes = [in_features, *hidden]
    for size_in, size_out in zip(sizes, sizes[1:]):
        layers += [Linear(size_in, size_out), ReLU()]
    layers.append(Linear(sizes[-1], num_classes))
    model = Sequential(*layers)
    return model if weights is None else load_weights(model, weights)
