"""default_collate / default_convert / collate: every type, nested structures, errors, and property tests."""
import collections
import types
from collections import OrderedDict, UserList, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.data import default_collate, default_convert
from ember.data.collate import collate, default_collate_fn_map
from ember.nn.utils.rnn import pad_sequence

Point = collections.namedtuple("Point", "x y")


# -- tensors ---------------------------------------------------------------------------------------------------

def test_tensors_are_stacked_into_a_new_first_dimension():
    batch = [ember.tensor([[1, 2], [3, 4]], dtype=ember.int32), ember.tensor([[5, 6], [7, 8]], dtype=ember.int32)]
    out = default_collate(batch)
    assert out.dtype is ember.int32 and out.shape == (2, 2, 2)
    assert out.tolist() == [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]
    assert out.grad_fn is None and not out.requires_grad


def test_stacked_batch_owns_its_memory():
    a, b = ember.zeros(3), ember.ones(3)
    out = default_collate([a, b])
    out[0, 0] = 5.0
    assert a.tolist() == [0.0, 0.0, 0.0]


def test_views_and_strided_tensors_stack_by_value():
    base = ember.arange(12.0).reshape(3, 4)
    rows = [base[i] for i in range(3)]  # what TensorDataset's __getitem__ gives
    np.testing.assert_array_equal(default_collate(rows).numpy(), base.numpy())
    cols = [base.t()[j] for j in range(4)]  # non-contiguous views
    np.testing.assert_array_equal(default_collate(cols).numpy(), base.numpy().T)


def test_zero_dim_tensors_become_a_vector():
    out = default_collate([ember.tensor(1.5), ember.tensor(2.5)])
    assert out.shape == (2,) and out.tolist() == [1.5, 2.5]


def test_tensors_that_require_grad_keep_autograd():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0, 4.0])
    out = default_collate([x, y])
    assert out.grad_fn.name() == "StackBackward0"
    (out * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0]


def test_a_view_whose_base_changed_in_place_with_grad_gets_its_history():
    x = ember.zeros(2, 3)
    view = x[0]
    w = ember.ones(3, requires_grad=True)
    x.add_(w)  # x now has history through w; the view learns it when next used
    out = default_collate([view, view])
    assert out.requires_grad
    out.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_mixed_dtypes_promote_as_stack_does():
    out = default_collate([ember.tensor([1, 2], dtype=ember.int32), ember.tensor([0.5, 1.5])])
    assert out.dtype is ember.float32 and out.tolist() == [[1.0, 2.0], [0.5, 1.5]]


def test_tensors_on_another_device_stay_there(device):
    out = default_collate([ember.ones(2, device=device), ember.zeros(2, device=device)])
    assert out.device == ember.device(device) and out.tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_tensors_on_a_second_cpu_stay_there_and_mixed_devices_are_an_error(two_cpus):
    out = default_collate([ember.ones(2, device="cpu:1"), ember.zeros(2, device="cpu:1")])
    assert out.device == ember.device("cpu:1")
    with pytest.raises(ember.DeviceMismatchError, match="cpu:1"):
        default_collate([ember.ones(2, device="cpu:0"), ember.ones(2, device="cpu:1")])


def test_tensors_of_different_shapes_name_both_shapes():
    with pytest.raises(RuntimeError, match=r"equal size, but got \[3\] at entry 0 and \[4\] at entry 1"):
        default_collate([ember.zeros(3), ember.zeros(4)])


def test_a_non_tensor_among_tensors_is_named():
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got list"):
        default_collate([ember.zeros(2), [0.0, 0.0]])


# -- NumPy -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8,
                                   np.bool_])
def test_numpy_arrays_become_one_tensor_of_their_dtype(dtype):
    arrays = [np.arange(6).reshape(2, 3).astype(dtype) + i for i in range(3)] if dtype is not np.bool_ else \
        [np.array([[True, False, True]]), np.array([[False, False, True]]), np.array([[True, True, True]])]
    out = default_collate(arrays)
    assert isinstance(out, ember.Tensor) and out.dtype is ember.tensor(arrays[0]).dtype
    np.testing.assert_array_equal(out.numpy(), np.stack(arrays))


def test_zero_dim_and_memmap_arrays(tmp_path):
    assert default_collate([np.array(1.0), np.array(2.0)]).tolist() == [1.0, 2.0]
    mm = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(2, 3))
    mm[:] = np.arange(6).reshape(2, 3)
    out = default_collate([mm[0], mm[1]])
    assert out.dtype is ember.float32 and out.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_numpy_arrays_of_different_shapes_or_with_other_data_go_through_tensors():
    with pytest.raises(RuntimeError, match=r"equal size, but got \[3\] at entry 0 and \[4\] at entry 1"):
        default_collate([np.zeros(3), np.zeros(4)])
    mixed = default_collate([np.zeros(2, np.float64), [1.0, 2.0]])  # a list after an array: ember.as_tensor
    assert mixed.dtype is ember.float64 and mixed.tolist() == [[0.0, 0.0], [1.0, 2.0]]
    promoted = default_collate([np.zeros(2, np.int32), np.ones(2, np.float32)])
    assert promoted.dtype is ember.float32


@pytest.mark.parametrize("array, found", [(np.array(["a", "b"]), "<U1"), (np.array([b"x"]), "|S1"),
                                          (np.array([object()]), "object")])
def test_string_and_object_arrays_are_a_type_error(array, found):
    with pytest.raises(TypeError, match=f"default_collate: batch must contain tensors, numpy arrays, numbers.*"
                                        f"found {found}"):
        default_collate([array, array])


def test_numpy_dtypes_ember_lacks_are_a_type_error():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex64"):
        default_collate([np.zeros(2, np.complex64)] * 2)


@pytest.mark.parametrize("scalars, dtype", [([np.float32(1.5), np.float32(2)], ember.float32),
                                            ([np.float64(1.5), np.float64(2)], ember.float64),
                                            ([np.int32(3), np.int32(4)], ember.int32),
                                            ([np.int64(3), np.int64(4)], ember.int64),
                                            ([np.uint8(3), np.uint8(4)], ember.uint8),
                                            ([np.bool_(True), np.bool_(False)], ember.bool)])
def test_numpy_scalars_keep_their_dtype(scalars, dtype):
    out = default_collate(scalars)
    assert out.dtype is dtype and out.tolist() == [s.item() for s in scalars]


# -- Python numbers and strings --------------------------------------------------------------------------------

def test_python_numbers():
    floats = default_collate([1.5, 2.0, -3.25])
    assert floats.dtype is ember.float64 and floats.tolist() == [1.5, 2.0, -3.25]
    ints = default_collate([1, 2, -3])
    assert ints.dtype is ember.int64 and ints.tolist() == [1, 2, -3]
    bools = default_collate([True, False])
    assert bools.dtype is ember.bool and bools.tolist() == [True, False]


def test_mixed_python_numbers_follow_the_first_and_ember_tensor():
    assert default_collate([1.0, 2]).dtype is ember.float64  # a float first: float64
    assert default_collate([1, 2.5]).dtype is ember.float32  # an int first: ember.tensor's inference
    assert default_collate([True, 2]).dtype is ember.int64
    with pytest.raises(TypeError, match="could not infer a dtype"):
        default_collate([1, "a"])


def test_strings_and_bytes_are_kept():
    names = ["cat", "dog"]
    assert default_collate(names) is names
    assert default_collate([b"\x00", b"\x01"]) == [b"\x00", b"\x01"]
    assert default_collate([np.str_("a"), np.str_("b")]) == ["a", "b"]
    assert default_collate([{"id": "a"}, {"id": "b"}]) == {"id": ["a", "b"]}
    # inside tuple or list samples the strings come in the tuple that pairs them up, as in PyTorch
    assert default_collate([("a", 1), ("b", 2)])[0] == ("a", "b")


# -- containers ------------------------------------------------------------------------------------------------

def test_dict_keys_in_order_values_collated():
    out = default_collate([{"x": np.zeros(2, np.float32), "y": 1}, {"x": np.ones(2, np.float32), "y": 2}])
    assert type(out) is dict and list(out) == ["x", "y"]
    assert out["x"].tolist() == [[0.0, 0.0], [1.0, 1.0]] and out["y"].tolist() == [1, 2]


def test_mapping_types_are_kept_where_they_can_be_built():
    ordered = default_collate([OrderedDict(b=1, a=2), OrderedDict(b=3, a=4)])
    assert type(ordered) is OrderedDict and list(ordered) == ["b", "a"] and ordered["a"].tolist() == [2, 4]
    dd = default_collate([defaultdict(list, k=1.0), defaultdict(list, k=2.0)])
    assert type(dd) is defaultdict and dd.default_factory is list and dd["k"].dtype is ember.float64
    proxy = default_collate([types.MappingProxyType({"k": 1}), types.MappingProxyType({"k": 2})])
    assert type(proxy) is types.MappingProxyType and proxy["k"].tolist() == [1, 2]


class FixedMapping(collections.abc.Mapping):
    """A read-only mapping whose constructor does not take a dict."""

    def __init__(self, **kw):
        self._d = kw

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


def test_a_mapping_that_cannot_be_rebuilt_becomes_a_dict():
    out = default_collate([FixedMapping(k=1), FixedMapping(k=2)])
    assert type(out) is dict and out["k"].tolist() == [1, 2]


def test_a_key_missing_from_a_later_sample_is_named():
    with pytest.raises(KeyError, match="sample 1 of the batch has no key 'b'"):
        default_collate([{"a": 1, "b": 2}, {"a": 3}])


def test_namedtuples_keep_their_type():
    out = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert type(out) is Point
    assert out.x.dtype is ember.int64 and out.x.tolist() == [1, 3]
    assert out.y.dtype is ember.float64 and out.y.tolist() == [2.0, 4.0]


def test_tuples_and_lists_become_lists_of_collated_fields():
    assert [t.tolist() for t in default_collate([(1, 2), (3, 4)])] == [[1, 3], [2, 4]]
    out = default_collate([[1, 2.5], [3, 4.5]])
    assert type(out) is list and out[1].dtype is ember.float64


def test_other_sequences_keep_their_type_where_they_can():
    users = default_collate([UserList([1, 2]), UserList([3, 4])])
    assert type(users) is UserList and [t.tolist() for t in users] == [[1, 3], [2, 4]]
    ranges = default_collate([range(2), range(2)])  # range cannot be built from a list
    assert type(ranges) is list and [t.tolist() for t in ranges] == [[0, 0], [1, 1]]


def test_sequences_of_different_lengths_are_an_error():
    with pytest.raises(RuntimeError, match=r"each element in list of batch should be of equal size \(sample 0 "
                                           r"has 2 elements, sample 2 has 1\)"):
        default_collate([[1, 2], [3, 4], [5]])


def test_nested_structures_at_any_depth():
    def sample(i):
        return {"image": ember.full((2, 2), float(i)),
                "meta": [Point(np.int32(i), f"id{i}"), {"scores": (np.array([i, i + 1.0]), i * 0.5)}]}
    out = default_collate([sample(i) for i in range(3)])
    assert out["image"].shape == (3, 2, 2) and out["image"][:, 0, 0].tolist() == [0.0, 1.0, 2.0]
    point, inner = out["meta"]
    assert type(point) is Point and point.x.dtype is ember.int32 and point.x.tolist() == [0, 1, 2]
    assert point.y == ("id0", "id1", "id2")
    arrays, halves = inner["scores"]
    assert arrays.tolist() == [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]] and halves.tolist() == [0.0, 0.5, 1.0]


# -- errors ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("elem", [None, object(), {1, 2}, 1 + 2j])
def test_unsupported_element_types_are_named(elem):
    with pytest.raises(TypeError, match=f"batch must contain tensors, numpy arrays, numbers, strings, dicts or "
                                        f"lists; found {type(elem)}"):
        default_collate([elem, elem])


def test_empty_batch_is_a_clear_error():
    with pytest.raises(IndexError, match="the batch is empty"):
        default_collate([])


# -- the extension point ---------------------------------------------------------------------------------------

class Box:
    def __init__(self, v):
        self.v = v


class BigBox(Box):
    pass


def collate_boxes(batch, *, collate_fn_map=None):
    return ember.tensor([b.v for b in batch]) * 10


def test_collate_with_a_function_for_a_users_own_type():
    fn_map = {**default_collate_fn_map, Box: collate_boxes}
    out = collate([{"box": Box(1), "n": 1.0}, {"box": Box(2), "n": 2.0}], collate_fn_map=fn_map)
    assert out["box"].tolist() == [10, 20] and out["n"].dtype is ember.float64
    assert collate([BigBox(3)], collate_fn_map=fn_map).tolist() == [30]  # subclasses match by isinstance
    with pytest.raises(TypeError, match=r"found <class '[\w.]*test_collate.Box'>"):
        default_collate([Box(1)])


def test_collate_map_overrides_a_builtin_rule_and_exact_types_win():
    def keep(batch, *, collate_fn_map=None):
        return list(batch)

    assert collate([(1, 2.0), (3, 4.0)], collate_fn_map={**default_collate_fn_map, int: keep})[0] == [1, 3]
    # int comes first and matches True by isinstance, but bool's own entry is an exact match
    assert collate([True, False], collate_fn_map={int: keep, bool: collate_boxes_of_bools}) == "bools"
    assert collate([True, False], collate_fn_map={int: keep}) == [True, False]


def collate_boxes_of_bools(batch, *, collate_fn_map=None):
    return "bools"


def test_collate_without_a_map_walks_containers_only():
    with pytest.raises(TypeError, match="found <class 'int'>"):
        collate([[1], [2]])
    with pytest.raises(TypeError, match="found <class 'str'>"):
        collate(["a"])


# -- default_convert -------------------------------------------------------------------------------------------

def test_default_convert_turns_numpy_into_tensors_and_keeps_the_rest():
    t = ember.ones(2)
    assert default_convert(t) is t
    arr = np.arange(3, dtype=np.int32)
    converted = default_convert(arr)
    assert converted.dtype is ember.int32 and np.shares_memory(converted.numpy(), arr)
    scalar = default_convert(np.float64(2.5))
    assert scalar.shape == () and scalar.dtype is ember.float64
    for kept in (7, 2.5, "s", b"b", None, np.str_("a"), np.bytes_(b"x"), np.array(["a"]), np.array([None])):
        assert default_convert(kept) is kept


def test_default_convert_walks_containers():
    out = default_convert({"a": np.zeros(1), "b": (np.ones(1), 3), "c": Point(np.int64(1), "p"),
                           "d": UserList([np.zeros(1)]), "e": range(2)})
    assert isinstance(out["a"], ember.Tensor)
    assert type(out["b"]) is list and isinstance(out["b"][0], ember.Tensor) and out["b"][1] == 3
    assert type(out["c"]) is Point and out["c"].x.dtype is ember.int64 and out["c"].y == "p"
    assert type(out["d"]) is UserList and isinstance(out["d"][0], ember.Tensor)
    assert out["e"] == [0, 1]
    assert type(default_convert(OrderedDict(k=np.zeros(1)))) is OrderedDict


# -- property tests: random nested structures ------------------------------------------------------------------

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_]
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
leaves = st.tuples(st.sampled_from(["array", "tensor"]), st.sampled_from(DTYPES), shapes)
schemas = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), inner, min_size=1, max_size=3).map(
            lambda d: ("dict", d)),
        st.lists(inner, min_size=1, max_size=3).map(lambda items: ("list", items)),
        st.lists(inner, min_size=1, max_size=3).map(lambda items: ("tuple", items)),
        st.tuples(inner, inner).map(lambda pair: ("point", pair))),
    max_leaves=8)


def make_sample(schema, rng):
    kind = schema[0]
    if kind in ("array", "tensor"):
        _, dtype, shape = schema
        arr = np.asarray(np.abs(rng.standard_normal(shape)) * 100).astype(dtype)
        return arr if kind == "array" else ember.from_numpy(arr)
    if kind == "dict":
        return {k: make_sample(s, rng) for k, s in schema[1].items()}
    if kind == "point":
        return Point(*(make_sample(s, rng) for s in schema[1]))
    items = [make_sample(s, rng) for s in schema[1]]
    return items if kind == "list" else tuple(items)


def check_collated(schema, out, samples):
    kind = schema[0]
    if kind in ("array", "tensor"):
        leaves = [np.asarray(s) for s in samples]
        expected = np.stack(leaves)
        assert isinstance(out, ember.Tensor) and out.dtype is ember.from_numpy(leaves[0]).dtype
        assert tuple(out.shape) == expected.shape
        np.testing.assert_array_equal(out.numpy(), expected)
    elif kind == "dict":
        assert type(out) is dict and list(out) == list(schema[1])
        for k, s in schema[1].items():
            check_collated(s, out[k], [sample[k] for sample in samples])
    else:
        assert type(out) is (Point if kind == "point" else list) and len(out) == len(schema[1])
        for i, s in enumerate(schema[1]):
            check_collated(s, out[i], [sample[i] for sample in samples])


@settings(max_examples=80, deadline=None)
@given(schema=schemas, batch_size=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_collate_equals_np_stack_on_every_leaf(schema, batch_size, seed):
    rng = np.random.default_rng(seed)
    samples = [make_sample(schema, rng) for _ in range(batch_size)]
    check_collated(schema, default_collate(samples), samples)


@settings(max_examples=40, deadline=None)
@given(schema=schemas, seed=st.integers(0, 2**32 - 1))
def test_default_convert_keeps_the_structure_and_values(schema, seed):
    sample = make_sample(schema, np.random.default_rng(seed))

    def check(schema, out, data):
        if schema[0] in ("array", "tensor"):
            assert isinstance(out, ember.Tensor)
            np.testing.assert_array_equal(out.numpy(), np.asarray(data))
        elif schema[0] == "dict":
            assert list(out) == list(data)
            for k, s in schema[1].items():
                check(s, out[k], data[k])
        else:
            assert type(out) is (Point if schema[0] == "point" else list)
            for s, o, d in zip(schema[1], out, data):
                check(s, o, d)
    check(schema, default_convert(sample), sample)


# -- variable-length data: the seed's NLP collate_fn -----------------------------------------------------------

def pad_collate(batch):
    """Token-id sentences of different lengths, padded with 0, with their lengths and labels."""
    ids = [sample["ids"] for sample in batch]
    return {"ids": pad_sequence(ids, batch_first=True, padding_value=0),
            "lengths": ember.tensor([len(s) for s in ids]),
            "label": default_collate([sample["label"] for sample in batch])}


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 12), min_size=1, max_size=8), seed=st.integers(0, 2**32 - 1))
def test_variable_length_collate_fn_pads_each_sentence(lengths, seed):
    rng = np.random.default_rng(seed)
    sentences = [rng.integers(1, 1000, size=n) for n in lengths]
    batch = [{"ids": ember.tensor(s), "label": int(i % 2)} for i, s in enumerate(sentences)]
    out = pad_collate(batch)
    assert out["ids"].dtype is ember.int64 and tuple(out["ids"].shape) == (len(lengths), max(lengths))
    assert out["lengths"].tolist() == lengths
    assert out["label"].tolist() == [i % 2 for i in range(len(lengths))]
    for row, s in zip(out["ids"].numpy(), sentences):
        np.testing.assert_array_equal(row[:len(s)], s)
        assert not row[len(s):].any()


class Sentences:
    """Map-style dataset of token-id sentences of lengths 1..9 with a label and an id string."""

    def __init__(self, n):
        rng = np.random.default_rng(7)
        self.ids = [rng.integers(1, 500, size=int(rng.integers(1, 10))) for _ in range(n)]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"ids": ember.tensor(self.ids[i]), "label": i % 3, "name": f"s{i}",
                "extra": Point(np.float32(i), (i, float(i)))}


def pad_collate_all(batch):
    out = pad_collate(batch)
    out["rest"] = default_collate([{k: v for k, v in s.items() if k not in ("ids", "label")} for s in batch])
    return out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_with_the_padding_collate_fn(num_workers):
    from ember.data import DataLoader
    ds = Sentences(10)
    batches = list(DataLoader(ds, batch_size=4, collate_fn=pad_collate_all, num_workers=num_workers))
    assert [len(b["label"]) for b in batches] == [4, 4, 2]
    for k, b in enumerate(batches):
        rows = range(4 * k, min(4 * k + 4, 10))
        assert b["lengths"].tolist() == [len(ds.ids[i]) for i in rows]
        for row, i in zip(b["ids"].numpy(), rows):
            np.testing.assert_array_equal(row[:len(ds.ids[i])], ds.ids[i])
            assert not row[len(ds.ids[i]):].any()
        rest = b["rest"]
        assert rest["name"] == [f"s{i}" for i in rows]
        assert type(rest["extra"]) is Point and rest["extra"].x.dtype is ember.float32
        ints, floats = rest["extra"].y
        assert ints.tolist() == list(rows) and floats.dtype is ember.float64
