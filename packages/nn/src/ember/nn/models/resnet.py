"""ResNet-18/34/50 in torchvision's layout: the same module names, state-dict keys, shapes and initialisation.

A state dict saved from torchvision's ``resnet18()`` (``safetensors.torch.save_file(model.state_dict(), p)``)
loads into ``resnet18(weights=p)`` and gives the same outputs; the other way round works too.
"""
import ember

from .. import init
from ..modules import AdaptiveAvgPool2d, BatchNorm2d, Conv2d, GroupNorm, Linear, MaxPool2d, Module, ReLU, Sequential
from ._weights import load_weights

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50"]


def _conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                  bias=False, dilation=dilation)


def _conv1x1(in_planes, out_planes, stride=1):
    return Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(Module):
    """Two 3x3 convolutions with batch norm and a shortcut (ResNet-18/34). ``expansion`` is 1."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        norm_layer = norm_layer or BatchNorm2d
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(Module):
    """1x1 reduce, 3x3 (carrying the stride, as torchvision's V1.5), 1x1 expand, and a shortcut (ResNet-50).

    ``expansion`` is 4: the block outputs ``planes * 4`` channels.
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = _conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(Module):
    """A residual network: stem (7x7 conv, batch norm, ReLU, max pool), four stages, global average pool, ``fc``.

    ``block`` is ``BasicBlock`` or ``Bottleneck``; ``layers`` the number of blocks per stage (``[2, 2, 2, 2]``
    is ResNet-18). Arguments and initialisation follow torchvision: convolutions get
    ``kaiming_normal_(mode="fan_out", nonlinearity="relu")``, normalisation layers weight 1 and bias 0, and
    with ``zero_init_residual=True`` the last batch norm of each block starts at zero, so every block begins
    as the identity. ``groups`` and ``width_per_group`` give ResNeXt / wide variants (Bottleneck only);
    ``replace_stride_with_dilation`` (three bools, for stages 2-4) trades stride for dilation.

    >>> import ember
    >>> from ember.nn.models import ResNet, BasicBlock
    >>> model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=5).eval()
    >>> model(ember.zeros(1, 3, 32, 32)).shape
    ember.Size([1, 5])
    """

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer or BatchNorm2d
        self.inplanes = 64
        self.dilation = 1
        replace_stride_with_dilation = replace_stride_with_dilation or [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = ReLU(inplace=True)
        self.maxpool = MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(512 * block.expansion, num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual):
        for module in self.modules():
            if isinstance(module, Conv2d):
                init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, (BatchNorm2d, GroupNorm)):
                init.constant_(module.weight, 1)
                init.constant_(module.bias, 0)
        if zero_init_residual:
            for module in self.modules():
                if isinstance(module, Bottleneck):
                    init.constant_(module.bn3.weight, 0)
                elif isinstance(module, BasicBlock):
                    init.constant_(module.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                    norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer) for _ in range(1, blocks)]
        return Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(ember.flatten(self.avgpool(x), 1))


def _resnet(block, layers, weights, num_classes, kwargs):
    model = ResNet(block, layers, num_classes=num_classes, **kwargs)
    return model if weights is None else load_weights(model, weights)


def resnet18(*, weights=None, num_classes=1000, **kwargs):
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]; 11,689,512 parameters with 1000 classes).

    ``weights`` is the path of a safetensors state dict to load (strict: keys and shapes must match, e.g.
    one saved from torchvision's ``resnet18``); nothing is downloaded. Other keyword arguments go to
    ``ResNet`` (``zero_init_residual``, ``norm_layer``, ...).

    >>> import ember
    >>> import ember.nn.models as models
    >>> model = models.resnet18(num_classes=10).eval()
    >>> model(ember.zeros(1, 3, 32, 32)).shape, len(model.state_dict())
    (ember.Size([1, 10]), 122)
    """
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, num_classes, kwargs)


def resnet34(*, weights=None, num_classes=1000, **kwargs):
    """ResNet-34 (BasicBlock, [3, 4, 6, 3]; 21,797,672 parameters with 1000 classes). Arguments as ``resnet18``.

    >>> import ember.nn.models as models
    >>> len(models.resnet34().layer3)
    6
    """
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, num_classes, kwargs)


def resnet50(*, weights=None, num_classes=1000, **kwargs):
    """ResNet-50 (Bottleneck, [3, 4, 6, 3]; 25,557,032 parameters with 1000 classes). Arguments as ``resnet18``.

    >>> import ember.nn.models as models
    >>> models.resnet50().fc
    Linear(in_features=2048, out_features=1000, bias=True)
    """
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, num_classes, kwargs)
