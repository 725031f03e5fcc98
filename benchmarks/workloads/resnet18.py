"""Workload 4: ResNet-18 forward in eval mode on 8x3x64x64, under ``no_grad`` (inference).

ember runs its model zoo's ``ember.nn.models.resnet18()``. PyTorch runs :func:`build_resnet18`, the
standard ResNet-18 (torchvision's layout, module names and shapes) written here once against ``lib``,
since torchvision is not installed; :func:`setup` checks that, built with ember, it has the same
state-dict keys and shapes as ember's model, so both sides run the same architecture.
"""
NAME = "resnet18"
TITLE = "resnet18 forward, eval, no_grad, 8x3x64x64"
TARGETS = (0.95, 1.1)

BATCH, SIZE = 8, 64


def build_resnet18(lib, num_classes=1000):
    """ResNet-18: a 7x7 stem, max pooling, four stages of two BasicBlocks (64-512 channels), average pooling, fc."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            inplanes = 64
            for i, planes in enumerate((64, 128, 256, 512), start=1):
                stride = 1 if i == 1 else 2
                setattr(self, f"layer{i}", nn.Sequential(BasicBlock(inplanes, planes, stride),
                                                         BasicBlock(planes, planes, 1)))
                inplanes = planes
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet18()


def _shapes(model):
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def setup(lib):
    """An inference pass: ember's ``resnet18()`` for ember, :func:`build_resnet18` for torch."""
    lib.manual_seed(0)
    if lib.__name__ == "ember":
        model = lib.nn.models.resnet18()
        if _shapes(model) != _shapes(build_resnet18(lib)):
            raise AssertionError("build_resnet18 differs from ember.nn.models.resnet18")
    else:
        model = build_resnet18(lib)
    model.eval()
    x = lib.randn(BATCH, 3, SIZE, SIZE)

    def step():
        with lib.no_grad():
            return model(x)
    return step
