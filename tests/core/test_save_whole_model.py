"""Whole-model checkpoints: ember.save(model) / ember.load, as PyTorch >= 2.6 does it, without running file code.

The structure lives in the safetensors metadata as data (class import paths and attributes); ember.load rebuilds
objects only from ember's classes and those allowed with ember.serialization.add_safe_globals, unless
weights_only=False. Hostile files (hand-made below) are refused with CheckpointError, and planted payloads never run.
"""
import functools
import json
import os
import re
import sys
from collections import Counter, OrderedDict, defaultdict

import numpy as np
import pytest
import safetensors.numpy

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import CheckpointError
from ember.serialization import MAX_DEPTH, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "checkpoints")


class MyNet(nn.Module):
    """A user model: its own class, plain attributes of every kind, a tied weight, a kept function."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.BatchNorm1d(4))
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.scale = 2.5
        self.config = {"layers": [4, 4], "names": ("a", "b"), "seen": {1, 2}, "frozen": frozenset({"x"}),
                       "shape": ember.Size([2, 3]), "dtype": ember.float64, "device": ember.device("cpu"),
                       "counts": Counter("aab"), "by": defaultdict(list, {"k": [1]}), "od": OrderedDict(b=1, a=2)}
        self.act = F.relu
        self.register_buffer("steps", ember.zeros(1, dtype=ember.int64))

    def forward(self, x):
        return self.head(self.act(self.body(self.emb(x).mean(1)))) * self.scale


class Slotted:
    __slots__ = ("x",)


def ember_only_model():
    emb = nn.Embedding(10, 4)
    head = nn.Linear(4, 10)
    head.weight = emb.weight
    return nn.Sequential(emb, nn.Flatten(), nn.Linear(12, 4), nn.Tanh(), nn.BatchNorm1d(4), nn.Linear(4, 4), head)


@pytest.fixture(autouse=True)
def no_safe_globals():
    clear_safe_globals()
    yield
    clear_safe_globals()


def inputs():
    return ember.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 1, 0]])


def craft(tmp_path, root, version=2, tensors=None, name="hostile.safetensors"):
    """A checkpoint made by hand: ``root`` as the structure, ``tensors`` as the data."""
    path = tmp_path / name
    meta = {"ember": json.dumps({"version": version, "root": root})}
    safetensors.numpy.save_file(tensors or {}, str(path), metadata=meta)
    return path


def metadata(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(json.loads(f.read(n))["__metadata__"]["ember"])


def assert_same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert sa[k].dtype == sb[k].dtype and np.array_equal(sa[k].numpy(), sb[k].numpy()), k


# -- models --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_an_ember_model_round_trips_with_weights_only(tmp_path, mode):
    ember.manual_seed(0)
    model = ember_only_model()
    model.train(mode == "train")
    with ember.no_grad():
        model[4].running_mean.add_(0.5)
    path = tmp_path / "m.safetensors"
    ember.save(model, path)
    back = ember.load(path)  # weights_only=True: ember's classes are allowed
    assert type(back) is nn.Sequential and [type(m) for m in back] == [type(m) for m in model]
    assert back.training == model.training and all(m.training == model.training for m in back.modules())
    assert_same_state(back, model)
    assert back[6].weight is back[0].weight  # tied weights stay tied
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in back.parameters())
    model.eval(), back.eval()
    assert ember.equal(back(inputs()), model(inputs()))
    assert back[4].running_mean.tolist() == model[4].running_mean.tolist()


def test_the_file_is_a_safetensors_file_with_the_state_dict_names(tmp_path):
    model = ember_only_model()
    path = tmp_path / "m.safetensors"
    ember.save(model, path)
    arrays = safetensors.numpy.load_file(str(path))
    state = model.state_dict()
    assert set(arrays) == set(state) - {"6.weight"}  # the tied weight is stored once, as 0.weight
    for name, arr in arrays.items():
        assert np.array_equal(arr, state[name].numpy()), name


def test_a_user_model_is_refused_with_pytorchs_message_then_allowed(tmp_path):
    path = tmp_path / "net.safetensors"
    ember.save(MyNet(), path)
    dotted = f"{MyNet.__module__}.MyNet"
    with pytest.raises(CheckpointError) as err:
        ember.load(path)
    msg = str(err.value)
    assert repr(str(path)) in msg and "Weights only load failed" in msg
    assert f"Unsupported global: GLOBAL {dotted} was not an allowed global by default" in msg
    assert f"`ember.serialization.add_safe_globals([{dotted}])`" in msg
    assert f"`ember.serialization.safe_globals([{dotted}])` context manager" in msg
    assert "weights_only` set to `False`" in msg

    with safe_globals([MyNet]):
        assert type(ember.load(path)) is MyNet
        assert get_safe_globals() == [MyNet]
    assert get_safe_globals() == []
    with pytest.raises(CheckpointError, match="Unsupported global"):
        ember.load(path)  # the context manager allowed it only inside its block

    add_safe_globals([MyNet])
    assert type(ember.load(path)) is MyNet
    clear_safe_globals()
    add_safe_globals([(MyNet, dotted)])  # allowed under the name the file gives
    assert get_safe_globals() == [(MyNet, dotted)] and type(ember.load(path)) is MyNet


def test_a_user_model_round_trips_with_its_attributes(tmp_path):
    ember.manual_seed(1)
    net = MyNet().eval()
    path = tmp_path / "net.safetensors"
    ember.save(net, path)
    for back in (ember.load(path, weights_only=False), _load_allowed(path)):
        assert type(back) is MyNet and back is not net
        assert back.scale == 2.5 and back.act is F.relu
        for key, value in net.config.items():
            assert back.config[key] == value and type(back.config[key]) is type(value), key
        assert back.config["by"]["new"] == []  # still a defaultdict(list)
        assert back.head.weight is back.emb.weight and back.steps.dtype == ember.int64
        assert_same_state(back, net)
        assert not back.training and ember.equal(back(inputs()), net(inputs()))


def _load_allowed(path):
    with safe_globals([MyNet]):
        return ember.load(path)


def test_a_shared_submodule_loads_as_one_object(tmp_path):
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    path = tmp_path / "m.safetensors"
    ember.save(model, path)
    back = ember.load(path)
    assert back[0] is back[2] and len(list(back.parameters())) == 2


def test_hooks_are_not_saved_and_saving_says_so(tmp_path):
    model = nn.Linear(2, 2)
    model.register_forward_hook(lambda m, args, out: out * 0)
    path = tmp_path / "m.safetensors"
    with pytest.warns(UserWarning, match=r"hooks of this Linear \(_forward_hooks\) are not saved"):
        ember.save(model, path)
    back = ember.load(path)
    x = ember.ones(1, 2)
    assert not ember.equal(back(x), ember.zeros(1, 2)) and not back._forward_hooks
    back.register_forward_hook(lambda m, args, out: out * 0)  # the registries work after loading
    assert ember.equal(back(x), ember.zeros(1, 2))


def test_what_cannot_be_stored_is_a_clear_error(tmp_path):
    net = nn.Linear(2, 2)
    net.act = lambda x: x
    with pytest.raises(TypeError, match=r"cannot save entry act: .*lambda"):
        ember.save(net, tmp_path / "x.safetensors")
    loop = nn.Linear(2, 2)
    loop.me = [loop]
    with pytest.raises(ValueError, match=r"cannot save entry me\.0: it contains itself"):
        ember.save(loop, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match=r"entry fn of type functools\.partial: a built-in type"):
        ember.save({"fn": functools.partial(F.relu)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match=r"entry Slotted of type .*Slotted: .*has none"):
        ember.save({"Slotted": Slotted()}, tmp_path / "x.safetensors")
    impostor = type("MyNet", (), {"__module__": MyNet.__module__})  # not the class its module holds as MyNet
    with pytest.raises(TypeError, match=r"MyNet names another object"):
        ember.save({"x": impostor()}, tmp_path / "x.safetensors")
    nested: list = []
    for _ in range(MAX_DEPTH):
        nested = [nested]
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        ember.save(nested, tmp_path / "x.safetensors")
    assert not os.path.exists(tmp_path / "x.safetensors")


def test_nesting_up_to_the_limit_round_trips(tmp_path):
    nested: list = ["leaf"]
    for _ in range(MAX_DEPTH - 1):
        nested = [nested]
    path = tmp_path / "deep.safetensors"
    ember.save(nested, path)
    back = ember.load(path)
    for _ in range(MAX_DEPTH - 1):
        back = back[0]
    assert back == ["leaf"]


# -- checkpoints of training -------------------------------------------------------------------------------------
def _train(model, opt, sched, steps, x, y):
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()


@pytest.mark.parametrize("make_opt", [lambda p: ember.optim.Adam(p, lr=0.01),
                                      lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9)])
def test_model_optimizer_scheduler_checkpoint_continues_training_exactly(tmp_path, make_opt):
    ember.manual_seed(2)
    model = ember_only_model()
    opt = make_opt(model.parameters())
    sched = ember.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    x, y = inputs(), ember.tensor([1, 2, 3, 4])
    _train(model, opt, sched, 3, x, y)
    path = tmp_path / "ckpt.safetensors"
    ember.save({"model": model, "optimizer": opt, "scheduler": sched, "epoch": 3, "loss": 0.5}, path)
    ckpt = ember.load(path)
    assert ckpt["epoch"] == 3 and ckpt["loss"] == 0.5 and type(ckpt["optimizer"]) is type(opt)
    model2, opt2, sched2 = ckpt["model"], ckpt["optimizer"], ckpt["scheduler"]
    assert sched2.optimizer is opt2 and isinstance(sched2.milestones, Counter)
    assert [p for g in opt2.param_groups for p in g["params"]] == list(model2.parameters())  # same objects
    assert all(p in opt2.state for p in model2.parameters()) and isinstance(opt2.state, defaultdict)
    _train(model, opt, sched, 3, x, y)
    _train(model2, opt2, sched2, 3, x, y)
    assert_same_state(model2, model)
    assert sched2.get_last_lr() == sched.get_last_lr() and opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_parameters_and_plain_values_keep_their_types(tmp_path):
    obj = {"p": nn.Parameter(ember.ones(2)), "frozen": nn.Parameter(ember.ones(1), requires_grad=False),
           "dtype": ember.int8, "size": ember.Size([1, 2]), "set": {1, "a"}, "t": (1, [2])}
    path = tmp_path / "p.safetensors"
    ember.save(obj, path)
    back = ember.load(path)
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert type(back["frozen"]) is nn.Parameter and not back["frozen"].requires_grad
    assert type(back["size"]) is ember.Size and back["size"] == ember.Size([1, 2])
    assert back["set"] == {1, "a"} and back["t"] == (1, [2]) and back["dtype"] is ember.int8


def test_state_dict_checkpoints_stay_version_1_and_keys_select_entries(tmp_path):
    model = ember_only_model()
    path = tmp_path / "sd.safetensors"
    ember.save({"model": model.state_dict(), "epoch": 1}, path)
    assert metadata(path)["version"] == 1  # readable by an ember from before whole-model checkpoints
    whole = tmp_path / "whole.safetensors"
    ember.save({"model": model, "epoch": 1}, whole)
    assert metadata(whole)["version"] == 2
    assert ember.load(whole, keys=["epoch"]) == {"epoch": 1}


def test_a_version_1_file_still_loads():
    back = ember.load(os.path.join(FIXTURES, "v1_checkpoint.safetensors"))
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert back["epoch"] == 7 and np.isnan(back["nan"]) and back["inf"] == -np.inf and back["none"] is None
    assert type(back["model"]) is OrderedDict and list(back["model"]) == ["fc.weight", "fc.bias", "tied"]
    assert np.array_equal(back["model"]["fc.weight"].numpy(), w) and back["model"]["tied"] is back["model"]["fc.weight"]
    assert np.array_equal(back["views"]["t"].numpy(), w.T) and np.array_equal(back["views"]["row"].numpy(), w[1])
    assert back["optimizer"]["state"][0]["exp_avg"].dtype == ember.float64
    assert back["optimizer"]["param_groups"] == [{"lr": 0.01, "betas": (0.9, 0.999), "params": [0]}]
    assert back["keys"] == {1.5: "f", None: "n", (1, "x"): "t"} and back["dtype"] is ember.bfloat16
    assert back["array"].dtype == np.int16 and back["scalar"] == np.float32(2.5)


# -- hostile files -------------------------------------------------------------------------------------------------
#: the attributes of an empty ember.nn.Module, as a file holds them
EMPTY = {"training": True, "_parameters": {"dict": []}, "_buffers": {"dict": []},
         "_non_persistent_buffers_set": {"set": []}, "_modules": {"dict": []}}


def obj(path, attrs=None, n=0):
    return {"object": path, "id": n, "attrs": attrs or {}}


@pytest.mark.parametrize("path", ["os:system", "builtins:eval", "subprocess:Popen", "posix:system"])
def test_classes_outside_ember_are_refused_by_default(tmp_path, path):
    f = craft(tmp_path, obj(path))
    with pytest.raises(CheckpointError, match=f"(?s){re.escape(repr(str(f)))}.*GLOBAL {path.replace(':', '.')} was "
                                              "not an allowed"):
        ember.load(f)


@pytest.mark.parametrize("path,why", [
    ("os:system", "os.system is a builtin_function_or_method, not a class"),
    ("builtins:eval", "builtins.eval is a builtin_function_or_method, not a class"),
    ("subprocess:Popen", r"subprocess.Popen has a finalizer \(__del__\)"),
    ("ember.serialization:save", "ember.serialization.save is a function, not a class"),
    ("os.path:sep", "os.path.sep is a str, not a class"),
])
def test_what_is_not_a_rebuildable_class_is_refused_even_when_trusted(tmp_path, path, why):
    f = craft(tmp_path, obj(path))
    with pytest.raises(CheckpointError, match=f"{re.escape(repr(str(f)))}: {why}"):
        ember.load(f, weights_only=False)


def test_functions_are_referred_to_never_called(tmp_path):
    f = craft(tmp_path, {"list": [{"global": "ember.nn.functional.activation:relu"}]})
    assert ember.load(f) == [F.relu]
    f = craft(tmp_path, {"global": "os:system"})
    with pytest.raises(CheckpointError, match="GLOBAL os.system was not an allowed global"):
        ember.load(f)
    assert ember.load(f, weights_only=False) is os.system  # looked up only: the trusted file's reference
    for private in ("ember.serialization._globals:resolve", "ember.serialization:save"):
        with pytest.raises(CheckpointError, match="not an allowed global"):
            ember.load(craft(tmp_path, {"global": private}))


@pytest.mark.parametrize("root,why", [
    (obj("ember.nn.modules.linear:Linear", {"__class__": {"global": "builtins:dict"}}), "dunder attributes"),
    (obj("ember.nn.modules.linear:Linear", {"__reduce__": None}), "dunder attributes"),
    (obj("ember.nn.modules.linear:Linear", {"__dict__": {"dict": []}}), "dunder attributes"),
    (obj("builtins:__import__"), "names a dunder attribute"),
    (obj("ember.__main__:main"), "names a dunder attribute"),
    (obj("os.system"), "is not an import path"),
    (obj("os:system; import os"), "is not an import path"),
    (obj("ember.nn.modules.linear:Linear", {"_parameters": {"list": []}}), "could not rebuild a .*Linear"),
    (obj("ember.nn.modules.module:Module", {"x": obj("ember.nn.modules.module:Module", {"y": {"ref": 0}}, 1)}),
     "cycle: object 0 contains itself"),
    ({"ref": 5}, "refers to no object"),
    ({"list": [obj("ember.nn.modules.module:Module", EMPTY), obj("ember.nn.modules.module:Module", EMPTY)]},
     "defined twice"),
    ({"tensor": "w", "class": "ember.nn.modules.linear:Linear"}, "not a tensor class"),
    (obj("ember.nn.parameter:Parameter"), "tensor class, which only a tensor node may name"),
    ({"defaultdict": [], "factory": "os.system"}, "factory must be one of"),
    (obj("ember.nn.modules.linear:NoSuchLayer"), "was not found"),
])
def test_hostile_structure_is_refused(tmp_path, root, why):
    f = craft(tmp_path, root, tensors={"w": np.zeros(2, np.float32)} if "tensor" in json.dumps(root) else None)
    for weights_only in (True, False):
        with pytest.raises(CheckpointError, match=why) as err:
            ember.load(f, weights_only=weights_only)
        assert repr(str(f)) in str(err.value)


def test_deep_nesting_and_unknown_versions_are_refused(tmp_path):
    root: object = 1
    for _ in range(MAX_DEPTH + 1):
        root = {"list": [root]}
    with pytest.raises(CheckpointError, match=f"nests more than {MAX_DEPTH} levels deep"):
        ember.load(craft(tmp_path, root))
    meta = {"ember": '{"version": 2, "root": ' + '{"list": [' * 5000 + "1" + "]}" * 5000 + "}"}
    safetensors.numpy.save_file({}, str(tmp_path / "deeper.safetensors"), metadata=meta)
    with pytest.raises(CheckpointError, match="nests too deeply to parse"):
        ember.load(tmp_path / "deeper.safetensors")
    for version in (0, 3, "2", None):
        with pytest.raises(CheckpointError, match=f"version {version!r} is not supported"):
            ember.load(craft(tmp_path, [], version=version))
    with pytest.raises(CheckpointError, match="unexpected node"):  # a version-1 file holds version-1 nodes only
        ember.load(craft(tmp_path, obj("ember.nn.modules.module:Module"), version=1))


# -- planted payloads ----------------------------------------------------------------------------------------------
PAYLOAD = '''
import pathlib
MARKER = pathlib.Path({marker!r})
{on_import}

def _plant(what):
    MARKER.write_text(what)

class Meta(type):
    def __call__(cls, *args, **kwargs):
        _plant("metaclass __call__")

class Evil(metaclass=Meta):
    def __new__(cls, *args, **kwargs):
        _plant("__new__")
    def __init__(self, *args, **kwargs):
        _plant("__init__")
    def __setstate__(self, state):
        _plant("__setstate__")
    def __reduce__(self):
        _plant("__reduce__")
    def __reduce_ex__(self, protocol):
        _plant("__reduce_ex__")
    def __setattr__(self, name, value):
        _plant("__setattr__")
    def __getattr__(self, name):
        _plant("__getattr__")
    def __init_subclass__(cls, **kwargs):
        _plant("__init_subclass__")
'''


def plant(tmp_path, name, on_import):
    marker = tmp_path / f"{name}.marker"
    (tmp_path / f"{name}.py").write_text(PAYLOAD.format(marker=str(marker), on_import=on_import))
    return marker


def test_a_planted_payload_never_runs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    on_import = plant(tmp_path, "ember_payload_import", 'MARKER.write_text("import")')
    on_build = plant(tmp_path, "ember_payload_build", "")
    attrs = {"cmd": "touch pwned", "args": {"list": ["-rf", "/"]}}
    for module in ("ember_payload_import", "ember_payload_build"):
        f = craft(tmp_path, obj(f"{module}:Evil", attrs), name=f"{module}.safetensors")
        with pytest.raises(CheckpointError, match=f"GLOBAL {module}.Evil was not an allowed global"):
            ember.load(f)  # weights_only=True: the module is not even imported
        assert module not in sys.modules
    assert not on_import.exists() and not on_build.exists()

    # weights_only=False imports the module the (trusted) file names, but still runs nothing of the class
    f = tmp_path / "ember_payload_build.safetensors"
    evil = ember.load(f, weights_only=False)
    assert type(evil).__name__ == "Evil" and object.__getattribute__(evil, "__dict__") == {
        "cmd": "touch pwned", "args": ["-rf", "/"]}
    assert not on_build.exists() and not on_import.exists()
    sys.modules.pop("ember_payload_build", None)
