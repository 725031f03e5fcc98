"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict: their list/dict APIs, registration and reprs.

Expected reprs, key orders and messages were printed by PyTorch 2.13 by hand (torch. -> ember.).
"""
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


def L(i):
    return nn.Linear(i, i)


def sizes(modules):
    return [m.in_features for m in modules]


# -- Sequential --------------------------------------------------------------------------------------------------

def test_sequential_forward_chains_modules():
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    x = ember.tensor(np.random.default_rng(0).normal(size=(5, 3)), dtype=ember.float32)
    w1, b1, w2, b2 = (p.detach().numpy() for p in net.parameters())
    expected = (x.numpy() @ w1.T + b1) @ w2.T + b2
    np.testing.assert_allclose(net(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    assert nn.Sequential()(x) is x


def test_sequential_indexing_and_slicing():
    s = nn.Sequential(L(1), L(2), L(3))
    assert s[-1].in_features == 3 and len(s) == 3 and sizes(s) == [1, 2, 3]
    assert repr(s[1:]) == ("Sequential(\n  (1): Linear(in_features=2, out_features=2, bias=True)\n"
                           "  (2): Linear(in_features=3, out_features=3, bias=True)\n)")
    assert type(s[::2]) is nn.Sequential and [n for n, _ in s[::2].named_children()] == ["0", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    with pytest.raises(TypeError, match="'str' object cannot be interpreted as an integer"):
        s["a"]
    s[0] = L(9)
    assert s[0].in_features == 9
    del s[0]
    assert [n for n, _ in s.named_children()] == ["0", "1"] and sizes(s) == [2, 3]


def test_sequential_append_insert_extend_pop_add():
    s = nn.Sequential(L(2), L(3))
    assert s.append(L(4)) is s
    s.insert(0, L(5))
    s.insert(-1, L(6))
    assert sizes(s) == [5, 2, 3, 6, 4] and [n for n, _ in s.named_children()] == ["0", "1", "2", "3", "4"]
    assert s.pop(1).in_features == 2 and len(s) == 4
    s.extend([L(7)])
    assert sizes(s) == [5, 3, 6, 4, 7]
    both = s + nn.Sequential(L(8))
    assert sizes(both) == [5, 3, 6, 4, 7, 8] and len(s) == 5
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class, but "
                                         "<class 'list'> is given."):
        s + [L(1)]
    with pytest.raises(IndexError, match="Index out of range: 10"):
        s.insert(10, L(1))
    s += nn.Sequential(L(9))
    assert sizes(s)[-1] == 9
    twice = nn.Sequential(L(1)) * 2
    assert len(twice) == 2 and twice[0] is twice[1]


def test_sequential_from_ordered_dict():
    s = nn.Sequential(OrderedDict([("fc", L(1)), ("act", nn.Identity())]))
    assert repr(s) == "Sequential(\n  (fc): Linear(in_features=1, out_features=1, bias=True)\n  (act): Identity()\n)"
    assert s.fc is s[0] and type(s[1]) is nn.Identity
    assert list(s.state_dict()) == ["fc.weight", "fc.bias"]
    del s[0]
    assert repr(s) == "Sequential(\n  (0): Identity()\n)"


# -- ModuleList --------------------------------------------------------------------------------------------------

def test_module_list_api():
    ml = nn.ModuleList([L(1), L(2)])
    ml += [L(3)]
    ml.append(L(4))
    ml.extend([L(5)])
    ml.insert(1, L(6))
    assert sizes(ml) == [1, 6, 2, 3, 4, 5] and len(ml) == 6
    assert sizes(ml[1:3]) == [6, 2] and type(ml[1:3]) is nn.ModuleList and ml[-1].in_features == 5
    del ml[::2]
    assert sizes(ml) == [6, 3, 5] and [n for n, _ in ml.named_children()] == ["0", "1", "2"]
    assert ml.pop(0).in_features == 6 and len(ml) == 2
    assert sizes(ml + nn.ModuleList([L(9)])) == [3, 5, 9]
    ml[0] = L(7)
    assert sizes(ml) == [7, 5]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    with pytest.raises(NotImplementedError, match=r"Module \[ModuleList\] is missing the required \"forward\""):
        ml(1)
    with pytest.raises(IndexError, match="index 2 is out of range"):
        ml[2]


def test_module_list_registers_its_modules():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
            self.plain = [nn.Linear(2, 2)]  # a Python list registers nothing

    assert [n for n, _ in Stack().named_parameters()] == ["layers.0.weight", "layers.0.bias", "layers.1.weight",
                                                          "layers.1.bias"]


def test_module_list_repr_compresses_repeats():
    assert repr(nn.ModuleList([L(2), L(2), L(2)])) == \
        "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n)"
    assert repr(nn.ModuleList([L(2), nn.Identity(), L(2), L(2)])) == (
        "ModuleList(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): Identity()\n"
        "  (2-3): 2 x Linear(in_features=2, out_features=2, bias=True)\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"
    nested = nn.ModuleList([nn.Sequential(L(1)), nn.Sequential(L(1))])
    assert repr(nested) == ("ModuleList(\n  (0-1): 2 x Sequential(\n"
                            "    (0): Linear(in_features=1, out_features=1, bias=True)\n  )\n)")


# -- ModuleDict --------------------------------------------------------------------------------------------------

def test_module_dict_api():
    md = nn.ModuleDict({"b": L(1), "a": L(2)})
    md["c"] = L(3)
    md.update([("d", L(4))])
    assert list(md) == ["b", "a", "c", "d"] and "a" in md and len(md) == 4
    assert repr(md).startswith("ModuleDict(\n  (b): Linear(in_features=1") and "(d): Linear(in_features=4" in repr(md)
    assert md.pop("a").in_features == 2 and list(md.keys()) == ["b", "c", "d"]
    assert sizes(md.values()) == [1, 3, 4] and [k for k, _ in md.items()] == ["b", "c", "d"]
    del md["b"]
    assert list(md.state_dict()) == ["c.weight", "c.bias", "d.weight", "d.bias"]
    md.clear()
    assert len(md) == 0
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("x",)])
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs, "
                                        "but got int"):
        md.update(3)


# -- ParameterList / ParameterDict -------------------------------------------------------------------------------

def test_parameter_list():
    pl = nn.ParameterList([ember.ones(2), nn.Parameter(ember.zeros(3))])
    pl.append(ember.ones(1, 2))
    assert len(pl) == 3 and all(type(p) is nn.Parameter for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [ember.float32 of size 2]\n"
                        "    (1): Parameter containing: [ember.float32 of size 3]\n"
                        "    (2): Parameter containing: [ember.float32 of size 1x2]\n)")
    pl[0] = ember.zeros(2)
    assert type(pl[0]) is nn.Parameter and pl[0].tolist() == [0.0, 0.0]
    assert [p.shape for p in pl[1:]] == [(3,), (1, 2)] and type(pl[1:]) is nn.ParameterList
    assert repr(nn.ParameterList()) == "ParameterList()"
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        pl.extend(ember.ones(2))


def test_parameter_dict():
    pd = nn.ParameterDict({"b": ember.ones(2), "a": ember.ones(3)})  # a plain dict is added in sorted key order
    assert list(pd) == ["a", "b"] and all(type(p) is nn.Parameter for p in pd.values())
    assert repr(pd) == ("ParameterDict(\n"
                        "    (a): Parameter containing: [ember.FloatTensor of size 3]\n"
                        "    (b): Parameter containing: [ember.FloatTensor of size 2]\n)")
    pd["c"] = nn.Parameter(ember.ones(1))
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"] and "c" in pd and pd.get("z", 5) == 5
    assert pd.pop("a").shape == (3,) and list(pd) == ["b", "c"]
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key as it is not a string "
                                        r"\(type is 'int'\)"):
        pd[1] = ember.ones(1)
    assert list(pd) == ["b", "c"]
    merged = pd | nn.ParameterDict({"z": ember.ones(1)})
    assert list(merged) == ["b", "c", "z"] and merged["b"] is pd["b"]
    ordered = nn.ParameterDict(OrderedDict([("y", ember.ones(1)), ("x", ember.ones(1))]))
    assert list(ordered) == ["y", "x"]
    assert pd.setdefault("k", ember.zeros(1)).tolist() == [0.0] and list(pd)[-1] == "k"
    key, value = pd.popitem()
    assert key == "k" and "k" not in pd


def test_parameter_containers_inside_a_module():
    class WithParams(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList([ember.ones(1)])
            self.pd = nn.ParameterDict({"w": ember.ones(2, 2)})

    m = WithParams()
    assert repr(m) == ("WithParams(\n"
                       "  (ps): ParameterList(  (0): Parameter containing: [ember.float32 of size 1])\n"
                       "  (pd): ParameterDict(  (w): Parameter containing: [ember.FloatTensor of size 2x2])\n)")
    assert list(m.state_dict()) == ["ps.0", "pd.w"]
    assert m.double().ps[0].dtype == ember.float64
