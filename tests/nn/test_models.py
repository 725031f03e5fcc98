"""ember.nn.models: torchvision's layout (keys, shapes, parameter counts, initialisation), forward shapes and
loading user-supplied weights files."""
import numpy as np
import pytest
import safetensors.numpy

import ember
import ember.nn.models as models
from ember import nn
from tests.fixtures.seeded_weights import seeded_state_dict
from tests.nn.test_torch_weights import read_io

#: resnet18's state dict (key, shape, dtype), in order, as recorded from the torchvision-layout resnet18
#: written out in PyTorch by hand in tests/fixtures/make_torch_fixtures.py (``torch_resnet(torch, 18, 1000)``)
RESNET18_STATE = """
    conv1.weight 64x3x7x7 float32
    bn1.weight 64 float32
    bn1.bias 64 float32
    bn1.running_mean 64 float32
    bn1.running_var 64 float32
    bn1.num_batches_tracked - int64
    layer1.0.conv1.weight 64x64x3x3 float32
    layer1.0.bn1.weight 64 float32
    layer1.0.bn1.bias 64 float32
    layer1.0.bn1.running_mean 64 float32
    layer1.0.bn1.running_var 64 float32
    layer1.0.bn1.num_batches_tracked - int64
    layer1.0.conv2.weight 64x64x3x3 float32
    layer1.0.bn2.weight 64 float32
    layer1.0.bn2.bias 64 float32
    layer1.0.bn2.running_mean 64 float32
    layer1.0.bn2.running_var 64 float32
    layer1.0.bn2.num_batches_tracked - int64
    layer1.1.conv1.weight 64x64x3x3 float32
    layer1.1.bn1.weight 64 float32
    layer1.1.bn1.bias 64 float32
    layer1.1.bn1.running_mean 64 float32
    layer1.1.bn1.running_var 64 float32
    layer1.1.bn1.num_batches_tracked - int64
    layer1.1.conv2.weight 64x64x3x3 float32
    layer1.1.bn2.weight 64 float32
    layer1.1.bn2.bias 64 float32
    layer1.1.bn2.running_mean 64 float32
    layer1.1.bn2.running_var 64 float32
    layer1.1.bn2.num_batches_tracked - int64
    layer2.0.conv1.weight 128x64x3x3 float32
    layer2.0.bn1.weight 128 float32
    layer2.0.bn1.bias 128 float32
    layer2.0.bn1.running_mean 128 float32
    layer2.0.bn1.running_var 128 float32
    layer2.0.bn1.num_batches_tracked - int64
    layer2.0.conv2.weight 128x128x3x3 float32
    layer2.0.bn2.weight 128 float32
    layer2.0.bn2.bias 128 float32
    layer2.0.bn2.running_mean 128 float32
    layer2.0.bn2.running_var 128 float32
    layer2.0.bn2.num_batches_tracked - int64
    layer2.0.downsample.0.weight 128x64x1x1 float32
    layer2.0.downsample.1.weight 128 float32
    layer2.0.downsample.1.bias 128 float32
    layer2.0.downsample.1.running_mean 128 float32
    layer2.0.downsample.1.running_var 128 float32
    layer2.0.downsample.1.num_batches_tracked - int64
    layer2.1.conv1.weight 128x128x3x3 float32
    layer2.1.bn1.weight 128 float32
    layer2.1.bn1.bias 128 float32
    layer2.1.bn1.running_mean 128 float32
    layer2.1.bn1.running_var 128 float32
    layer2.1.bn1.num_batches_tracked - int64
    layer2.1.conv2.weight 128x128x3x3 float32
    layer2.1.bn2.weight 128 float32
    layer2.1.bn2.bias 128 float32
    layer2.1.bn2.running_mean 128 float32
    layer2.1.bn2.running_var 128 float32
    layer2.1.bn2.num_batches_tracked - int64
    layer3.0.conv1.weight 256x128x3x3 float32
    layer3.0.bn1.weight 256 float32
    layer3.0.bn1.bias 256 float32
    layer3.0.bn1.running_mean 256 float32
    layer3.0.bn1.running_var 256 float32
    layer3.0.bn1.num_batches_tracked - int64
    layer3.0.conv2.weight 256x256x3x3 float32
    layer3.0.bn2.weight 256 float32
    layer3.0.bn2.bias 256 float32
    layer3.0.bn2.running_mean 256 float32
    layer3.0.bn2.running_var 256 float32
    layer3.0.bn2.num_batches_tracked - int64
    layer3.0.downsample.0.weight 256x128x1x1 float32
    layer3.0.downsample.1.weight 256 float32
    layer3.0.downsample.1.bias 256 float32
    layer3.0.downsample.1.running_mean 256 float32
    layer3.0.downsample.1.running_var 256 float32
    layer3.0.downsample.1.num_batches_tracked - int64
    layer3.1.conv1.weight 256x256x3x3 float32
    layer3.1.bn1.weight 256 float32
    layer3.1.bn1.bias 256 float32
    layer3.1.bn1.running_mean 256 float32
    layer3.1.bn1.running_var 256 float32
    layer3.1.bn1.num_batches_tracked - int64
    layer3.1.conv2.weight 256x256x3x3 float32
    layer3.1.bn2.weight 256 float32
    layer3.1.bn2.bias 256 float32
    layer3.1.bn2.running_mean 256 float32
    layer3.1.bn2.running_var 256 float32
    layer3.1.bn2.num_batches_tracked - int64
    layer4.0.conv1.weight 512x256x3x3 float32
    layer4.0.bn1.weight 512 float32
    layer4.0.bn1.bias 512 float32
    layer4.0.bn1.running_mean 512 float32
    layer4.0.bn1.running_var 512 float32
    layer4.0.bn1.num_batches_tracked - int64
    layer4.0.conv2.weight 512x512x3x3 float32
    layer4.0.bn2.weight 512 float32
    layer4.0.bn2.bias 512 float32
    layer4.0.bn2.running_mean 512 float32
    layer4.0.bn2.running_var 512 float32
    layer4.0.bn2.num_batches_tracked - int64
    layer4.0.downsample.0.weight 512x256x1x1 float32
    layer4.0.downsample.1.weight 512 float32
    layer4.0.downsample.1.bias 512 float32
    layer4.0.downsample.1.running_mean 512 float32
    layer4.0.downsample.1.running_var 512 float32
    layer4.0.downsample.1.num_batches_tracked - int64
    layer4.1.conv1.weight 512x512x3x3 float32
    layer4.1.bn1.weight 512 float32
    layer4.1.bn1.bias 512 float32
    layer4.1.bn1.running_mean 512 float32
    layer4.1.bn1.running_var 512 float32
    layer4.1.bn1.num_batches_tracked - int64
    layer4.1.conv2.weight 512x512x3x3 float32
    layer4.1.bn2.weight 512 float32
    layer4.1.bn2.bias 512 float32
    layer4.1.bn2.running_mean 512 float32
    layer4.1.bn2.running_var 512 float32
    layer4.1.bn2.num_batches_tracked - int64
    fc.weight 1000x512 float32
    fc.bias 1000 float32
"""


def entries(model):
    return [(k, "x".join(map(str, v.shape)) or "-", v.numpy().dtype.name) for k, v in model.state_dict().items()]


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def save(model_or_state, path):
    state = model_or_state.state_dict() if isinstance(model_or_state, nn.Module) else model_or_state
    safetensors.numpy.save_file({k: v.numpy().copy() for k, v in state.items()}, path)
    return path


def test_resnet18_state_dict_is_torchvisions():
    expected = [tuple(line.split()) for line in RESNET18_STATE.strip().splitlines()]
    assert len(expected) == 122
    assert entries(models.resnet18()) == expected


@pytest.mark.parametrize("builder, entries_count, parameters", [
    # entry and parameter counts from PyTorch (hand-written torchvision-layout copies), with 1000 classes
    (models.resnet18, 122, 11_689_512), (models.resnet34, 218, 21_797_672), (models.resnet50, 320, 25_557_032)])
def test_resnet_sizes_are_torchvisions(builder, entries_count, parameters):
    model = builder()
    assert len(model.state_dict()) == entries_count and parameter_count(model) == parameters


def test_resnet50_bottleneck_layout():
    model = models.resnet50()
    shapes = {k: s for k, s, _ in entries(model)}
    # shapes as PyTorch's torchvision-layout resnet50 has them
    assert shapes["layer1.0.conv1.weight"] == "64x64x1x1" and shapes["layer1.0.conv3.weight"] == "256x64x1x1"
    assert shapes["layer1.0.downsample.0.weight"] == "256x64x1x1"
    assert shapes["layer2.0.conv2.weight"] == "128x128x3x3" and shapes["layer4.2.bn3.running_var"] == "2048"
    assert shapes["fc.weight"] == "1000x2048" and "layer4.3.conv1.weight" not in shapes
    assert model.layer2[0].conv2.stride == (2, 2)  # V1.5: the 3x3 convolution carries the stride


def test_resnext_and_dilation_options():
    assert parameter_count(models.resnet50(groups=32, width_per_group=4)) == 25_028_904  # torchvision resnext50_32x4d
    model = models.resnet50(replace_stride_with_dilation=[False, True, True])
    assert model.layer3[0].conv2.stride == (1, 1) and model.layer3[1].conv2.dilation == (2, 2)
    assert model.layer4[0].conv2.dilation == (2, 2) and model.layer4[1].conv2.dilation == (4, 4)
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet18(groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])
    with pytest.raises(ValueError, match="3-element"):
        models.resnet18(replace_stride_with_dilation=[True])


def test_resnet_initialisation_is_torchvisions():
    ember.manual_seed(0)
    model = models.resnet18(num_classes=10)
    weight = model.layer4[0].conv2.weight.detach().numpy()  # kaiming normal, fan_out = 512 * 3 * 3, gain sqrt(2)
    assert abs(weight.mean()) < 1e-3 and weight.std() == pytest.approx(np.sqrt(2 / (512 * 9)), rel=0.02)
    stem = model.conv1.weight.detach().numpy()  # fan_out = 64 * 7 * 7
    assert stem.std() == pytest.approx(np.sqrt(2 / (64 * 49)), rel=0.05)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert (module.weight.detach().numpy() == 1).all() and (module.bias.detach().numpy() == 0).all()
    bound = 1 / np.sqrt(512)  # fc keeps Linear's default init
    largest = np.abs(model.fc.weight.detach().numpy()).max()
    assert 0.9 * bound < largest <= bound


def test_zero_init_residual_zeroes_each_blocks_last_norm():
    basic = models.resnet18(zero_init_residual=True)
    assert all((block.bn2.weight.detach().numpy() == 0).all() and (block.bn1.weight.detach().numpy() == 1).all()
               for layer in (basic.layer1, basic.layer4) for block in layer)
    bottleneck = models.resnet50(zero_init_residual=True)
    block = bottleneck.layer2[3]
    assert (block.bn3.weight.detach().numpy() == 0).all() and (block.bn2.weight.detach().numpy() == 1).all()
    assert (bottleneck.layer1[0].downsample[1].weight.detach().numpy() == 1).all()


def test_resnet18_forward_shape_and_training_mode():
    model = models.resnet18(num_classes=7)
    out = model(ember.randn(2, 3, 32, 32))
    assert out.shape == (2, 7) and out.requires_grad
    assert int(model.bn1.num_batches_tracked.item()) == 1
    out.sum().backward()  # through the in-place ReLUs and the shortcuts
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    assert np.abs(model.conv1.weight.grad.numpy()).max() > 0


def test_lenet_and_mlp_layouts_and_shapes():
    lenet = models.lenet(num_classes=5)
    assert lenet(ember.randn(3, 1, 28, 28)).shape == (3, 5)
    assert [(k, s) for k, s, _ in entries(lenet)] == [
        ("0.weight", "6x1x5x5"), ("0.bias", "6"), ("3.weight", "16x6x5x5"), ("3.bias", "16"),
        ("7.weight", "120x400"), ("7.bias", "120"), ("9.weight", "84x120"), ("9.bias", "84"),
        ("11.weight", "5x84"), ("11.bias", "5")]
    mlp = models.mlp(20, [16, 8], num_classes=4)
    assert [(k, s) for k, s, _ in entries(mlp)] == [
        ("1.weight", "16x20"), ("1.bias", "16"), ("3.weight", "8x16"), ("3.bias", "8"), ("5.weight", "4x8"),
        ("5.bias", "4")]
    assert mlp(ember.randn(6, 4, 5)).shape == (6, 4)
    assert models.mlp(3, num_classes=2)(ember.randn(1, 3)).shape == (1, 2)  # no hidden layer: one Linear


def test_resnet18_weights_path_gives_pytorchs_output(tmp_path):
    """A safetensors file holding the arrays the fixture script gave PyTorch's resnet18 makes
    ``resnet18(weights=path)`` give PyTorch's logits."""
    inputs, expected, spec = read_io("resnet18")
    shapes = {key: (tuple(shape), "int64" if key.endswith("num_batches_tracked") else "float32")
              for key, shape in spec["state_dict_shapes"].items()}
    path = tmp_path / "resnet18.safetensors"
    safetensors.numpy.save_file(seeded_state_dict(shapes, spec["seed"]), path)
    model = models.resnet18(weights=path, num_classes=10).eval()
    with ember.no_grad():
        out = model(ember.from_numpy(inputs[0])).numpy()
    np.testing.assert_allclose(out, expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("builder", [lambda w: models.lenet(weights=w, num_classes=3),
                                     lambda w: models.mlp(6, [5], num_classes=3, weights=w)])
def test_small_models_load_weights_path(builder, tmp_path):
    source = builder(None)
    path = save(source, tmp_path / "weights.safetensors")
    loaded = builder(str(path))
    for (key, ours), theirs in zip(loaded.state_dict().items(), source.state_dict().values()):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=key)


def test_weights_file_errors_name_the_file_and_the_problem(tmp_path):
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(FileNotFoundError, match="nope.safetensors.*never downloads"):
        models.resnet18(weights=missing)
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"this is not a safetensors file")
    with pytest.raises(ValueError, match="garbage.safetensors.*not a readable safetensors file"):
        models.lenet(weights=garbage)
    lenet_file = save(models.lenet(), tmp_path / "lenet.safetensors")
    with pytest.raises(RuntimeError, match=r"(?s)lenet.safetensors.*does not match this Sequential.*Missing key\(s\)"):
        models.mlp(784, [120], weights=lenet_file)
    with pytest.raises(RuntimeError, match=r"(?s)does not match this LeNet.*size mismatch for 11.weight"):
        models.lenet(weights=lenet_file, num_classes=4)
    state = models.lenet().state_dict()
    state["extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\) in state_dict: \"extra\""):
        models.lenet(weights=save(state, tmp_path / "extra.safetensors"))
    checkpoint = tmp_path / "checkpoint.safetensors"
    ember.save({"epoch": 3, "model_state_dict": models.lenet().state_dict()}, checkpoint)
    with pytest.raises(RuntimeError, match=r"checkpoint.safetensors.*\['epoch', 'model_state_dict'\].*not a flat"):
        models.lenet(weights=checkpoint)


def test_weights_saved_by_ember_save_load(tmp_path):
    source = models.mlp(6, [5], num_classes=3)
    ember.save(source.state_dict(), tmp_path / "mlp.safetensors")
    loaded = models.mlp(6, [5], num_classes=3, weights=tmp_path / "mlp.safetensors")
    np.testing.assert_array_equal(loaded[3].weight.detach().numpy(), source[3].weight.detach().numpy())
