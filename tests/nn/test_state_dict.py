"""state_dict / load_state_dict: keys and order, strictness and PyTorch's error layout, assign, extra state,
per-module ``_load_from_state_dict``, the four state-dict hooks, and ``consume_prefix_in_state_dict_if_present``.

Expected keys, reprs and messages were printed by PyTorch 2.13 by hand (torch. -> ember.).
"""
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.l = nn.ModuleList([nn.Linear(1, 1)])
        self.register_buffer("b", ember.zeros(2))
        self.register_buffer("cache", ember.zeros(5), persistent=False)

    def forward(self, x):
        return self.fc(x)


def test_keys_in_pytorch_order_without_non_persistent_buffers():
    sd = Net().state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["b", "fc.weight", "fc.bias", "l.0.weight", "l.0.bias"]
    # _metadata is PyTorch's (unprefixed) name for the per-module versions a checkpoint carries: files depend on it
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("fc", {"version": 1}), ("l", {"version": 1}),
                                        ("l.0", {"version": 1})])
    assert list(Net().state_dict(prefix="m.")) == ["m.b", "m.fc.weight", "m.fc.bias", "m.l.0.weight", "m.l.0.bias"]


def test_values_are_detached_and_share_memory():
    net = Net()
    sd = net.state_dict()
    w = sd["fc.weight"]
    assert type(w) is ember.Tensor and not w.requires_grad and w.grad_fn is None
    w.add_(1)  # a change through the state dict shows in the model
    np.testing.assert_array_equal(net.fc.weight.detach().numpy(), w.numpy())
    kept = net.state_dict(keep_vars=True)
    assert kept["fc.weight"] is net.fc.weight and kept["b"] is net.b


def test_round_trip_copies_values_into_existing_parameters():
    src, dst = Net(), Net()
    with ember.no_grad():
        src.b.fill_(4)
    weight = dst.fc.weight
    result = dst.load_state_dict(src.state_dict())
    assert repr(result) == "<All keys matched successfully>" and result.missing_keys == []
    assert dst.fc.weight is weight  # copied in place: an optimizer holding it still sees the model's parameter
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert dst.fc.weight.data_ptr() != src.fc.weight.data_ptr()


def test_strict_errors_have_pytorch_layout():
    net = Net()
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict({"fc.weight": ember.zeros(3, 3), "x": ember.zeros(1)})
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n'
        '\tMissing key(s) in state_dict: "b", "fc.bias", "l.0.weight", "l.0.bias". \n'
        '\tUnexpected key(s) in state_dict: "x". \n'
        '\tsize mismatch for fc.weight: copying a param with shape ember.Size([3, 3]) from checkpoint, the shape in '
        'current model is ember.Size([3, 2]).')


def test_not_strict_returns_incompatible_keys_but_size_mismatch_still_raises():
    net = Net()
    result = net.load_state_dict({"fc.weight": ember.zeros(3, 2), "q": ember.zeros(1), "l.x.y": ember.ones(1)},
                                 strict=False)
    assert repr(result) == ("_IncompatibleKeys(missing_keys=['b', 'fc.bias', 'l.0.weight', 'l.0.bias'], "
                            "unexpected_keys=['q', 'l.x.y'])")
    assert not net.fc.weight.detach().any().item()
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"ember.Size\(\[3, 3\]\) from checkpoint"):
        net.load_state_dict({"fc.weight": ember.zeros(3, 3)}, strict=False)


def test_bad_values_and_bad_argument():
    net = nn.Sequential(nn.Linear(2, 2))
    sd = dict(net.state_dict(), **{"0.weight": 3})
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == ('Error(s) in loading state_dict for Sequential:\n\tWhile copying the parameter named '
                               '"0.weight", expected ember.Tensor or Tensor-like object from checkpoint but received '
                               "<class 'int'>")
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        net.load_state_dict([1])


def test_loading_casts_to_the_model_dtype():
    lin = nn.Linear(2, 2)
    lin.load_state_dict({"weight": ember.ones(2, 2, dtype=ember.float64), "bias": ember.zeros(2)})
    assert lin.weight.dtype == ember.float32 and lin.weight.detach().sum().item() == 4.0


def test_assign_makes_the_checkpoint_tensors_the_parameters():
    lin = nn.Linear(2, 2)
    t = ember.ones(2, 2)
    lin.load_state_dict({"weight": t, "bias": ember.zeros(2)}, assign=True)
    assert type(lin.weight) is nn.Parameter and lin.weight.requires_grad and lin.weight.data_ptr() == t.data_ptr()
    frozen = nn.Linear(2, 2).requires_grad_(False)
    frozen.load_state_dict({"weight": t, "bias": ember.zeros(2)}, assign=True)
    assert not frozen.weight.requires_grad


def test_load_from_state_dict_override_sees_the_version():
    class Versioned(nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.register_buffer("n", ember.tensor(0))
            self.versions = []

        def _load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors):  # PyTorch's override
            self.versions.append(meta.get("version"))
            if meta.get("version") is None or meta["version"] < 2:  # an old checkpoint: fill in the new buffer
                sd.setdefault(prefix + "n", ember.tensor(7))
            super()._load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)

    v = Versioned()
    assert repr(v.load_state_dict({})) == "<All keys matched successfully>" and v.n.item() == 7
    w = Versioned()
    w.load_state_dict(w.state_dict())
    assert w.n.item() == 0 and v.versions == [None] and w.versions == [2]


def test_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 1

        def get_extra_state(self):
            return {"k": self.k}

        def set_extra_state(self, state):
            self.k = state["k"]

    x = WithExtra()
    x.k = 5
    sd = x.state_dict()
    assert sd == OrderedDict([("_extra_state", {"k": 5})])
    y = WithExtra()
    y.load_state_dict(sd)
    assert y.k == 5
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state".'):
        WithExtra().load_state_dict({})


def test_load_state_dict_pre_and_post_hooks():
    lin = nn.Linear(2, 2)

    def rename(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        assert module is lin
        if prefix + "W" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "W")

    lin.register_load_state_dict_pre_hook(rename)
    assert repr(lin.load_state_dict({"W": ember.zeros(2, 2), "bias": ember.zeros(2)})) == \
        "<All keys matched successfully>"
    assert not lin.weight.detach().any().item()
    seen = []

    def forgive(module, keys):
        seen.append(list(keys.missing_keys))
        keys.missing_keys.clear()

    handle = lin.register_load_state_dict_post_hook(forgive)
    assert repr(lin.load_state_dict({})) == "<All keys matched successfully>" and seen == [["weight", "bias"]]
    handle.remove()
    with pytest.raises(RuntimeError, match="Missing key"):
        lin.load_state_dict({})


def test_state_dict_pre_and_post_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append((prefix, keep_vars)))

    def add_extra(m, sd, prefix, meta):
        sd[prefix + "extra"] = ember.ones(1)

    lin.register_state_dict_post_hook(add_extra)
    assert list(nn.Sequential(lin).state_dict()) == ["0.weight", "0.bias", "0.extra"] and calls == [("0.", False)]
    strict_public = nn.Linear(1, 1)
    strict_public.register_state_dict_post_hook(lambda m, sd, p, meta: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        strict_public.state_dict()
    replacing = nn.Linear(1, 1)
    # PyTorch's older hook, still part of its surface (torch code calls it): one that replaces the dict
    replacing._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(x=ember.ones(1)))
    assert list(replacing.state_dict()) == ["x"]


def test_positional_arguments_of_old_state_dict():
    dest = OrderedDict()
    out = nn.Linear(1, 1).state_dict(dest, "p.")
    assert out is dest and list(dest) == ["p.weight", "p.bias"]


# -- consume_prefix_in_state_dict_if_present ---------------------------------------------------------------------

class Wrapper(nn.Module):
    """Holds the model as ``module``, as DistributedDataParallel and DataParallel do."""

    def __init__(self, module):
        super().__init__()
        self.module = module


def _bare_model():
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))


def test_consume_prefix_makes_a_wrapper_checkpoint_load_into_the_bare_model(tmp_path):
    wrapped = Wrapper(_bare_model())
    with ember.no_grad():
        wrapped.module[1].running_mean.fill_(5)
    sd = wrapped.state_dict()
    assert all(k.startswith("module.") for k in sd)
    assert consume_prefix_in_state_dict_if_present(sd, "module.") is None
    bare = _bare_model()
    assert list(sd) == list(bare.state_dict())  # order kept
    # the wrapped model's metadata becomes the root's: BatchNorm's version 2 reaches its _load_from_state_dict
    assert sd._metadata == bare.state_dict()._metadata == OrderedDict(
        [("", {"version": 1}), ("0", {"version": 1}), ("1", {"version": 2})])
    assert repr(bare.load_state_dict(sd)) == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(wrapped.module.state_dict().items(), bare.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    # the flow: the wrapper's state dict saved with ember.save, stripped after loading
    ember.save(wrapped.state_dict(), tmp_path / "ckpt.pt")
    loaded = ember.load(tmp_path / "ckpt.pt")
    consume_prefix_in_state_dict_if_present(loaded, "module.")
    fresh = _bare_model()
    assert repr(fresh.load_state_dict(loaded)) == "<All keys matched successfully>"
    assert fresh[1].running_mean.tolist() == [5.0, 5.0, 5.0]


def test_consume_prefix_leaves_other_keys_and_moves_stripped_ones_after_them():
    # PyTorch's order: each stripped entry is popped and inserted again
    sd = OrderedDict([("a", 1), ("module.b", 2), ("c", 3), ("module.d", 4), ("xmodule.e", 5), ("module", 6)])
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd.items()) == [("a", 1), ("c", 3), ("xmodule.e", 5), ("module", 6), ("b", 2), ("d", 4)]
    plain = {"b": 1, "module.b": 2}  # a stripped key that exists already keeps its place and takes the value
    consume_prefix_in_state_dict_if_present(plain, "module.")
    assert plain == {"b": 2}
    untouched = Net().state_dict()  # no key has the prefix: nothing changes, metadata included
    keys, metadata = list(untouched), OrderedDict(untouched._metadata)
    consume_prefix_in_state_dict_if_present(untouched, "module.")
    assert list(untouched) == keys and untouched._metadata == metadata


def test_consume_prefix_strips_a_nested_prefix_and_its_metadata():
    # PyTorch leaves "module.module" in the metadata here (it compares with "modulemodule"); ember renames it to ""
    outer = Wrapper(Wrapper(nn.Linear(1, 1)))
    sd = outer.state_dict()
    consume_prefix_in_state_dict_if_present(sd, "module.module.")
    assert list(sd) == ["weight", "bias"]
    assert sd._metadata == OrderedDict([("", {"version": 1}), ("module", {"version": 1})])


def test_consume_prefix_bad_input():
    with pytest.raises(TypeError, match="prefix must be a str such as 'module.', got int"):
        consume_prefix_in_state_dict_if_present({"a": 1}, 3)
    with pytest.raises(TypeError, match="state_dict must be a mutable mapping .*got list"):
        consume_prefix_in_state_dict_if_present([("module.a", 1)], "module.")
