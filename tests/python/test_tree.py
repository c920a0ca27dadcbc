"""qb.tree: flatten/unflatten round trips, ordering, paths, registration, TreeDef hashing."""
import dataclasses
from typing import NamedTuple

import pytest

import quabla as qb
from quabla import tree


class Point(NamedTuple):
    x: object
    y: object


def test_dict_keys_are_sorted_and_round_trip():
    t = {"b": 1, "a": [2, (3, None)], "c": Point(4, 5)}
    leaves, d = tree.flatten(t)
    assert leaves == [2, 3, 1, 4, 5]
    assert tree.unflatten(d, leaves) == t
    assert d.num_leaves == 5


def test_none_has_no_leaves_and_scalars_are_leaves():
    assert tree.leaves(None) == []
    assert tree.leaves([None, 1.0]) == [1.0]
    assert tree.leaves(qb.array([1.0, 2.0]))[0].shape == (2,)


def test_treedef_is_hashable_and_compares_by_structure():
    a = tree.structure({"w": 1.0, "b": [1, 2]})
    b = tree.structure({"b": [5, 6], "w": 7.0})
    c = tree.structure({"w": 1.0, "b": (1, 2)})
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2


def test_map_over_several_trees_and_structure_mismatch():
    out = tree.map(lambda u, v: u + v, {"a": 1, "b": [2, 3]}, {"a": 10, "b": [20, 30]})
    assert out == {"a": 11, "b": [22, 33]}
    with pytest.raises(ValueError, match="structure"):
        tree.map(lambda u, v: u, {"a": 1}, {"a": 1, "b": 2})


def test_flatten_with_path():
    pairs, _ = tree.flatten_with_path({"a": [1, Point(2, 3)], "b": 4})
    assert pairs == [(("a", 0), 1), (("a", 1, "x"), 2), (("a", 1, "y"), 3), (("b",), 4)]


def test_unflatten_checks_leaf_count():
    d = tree.structure([1, 2])
    with pytest.raises(ValueError, match="2 leaves"):
        tree.unflatten(d, [1])


def test_register_custom_class():
    class Box:
        def __init__(self, value, tag):
            self.value, self.tag = value, tag

    tree.register(Box, lambda b: ([b.value], b.tag), lambda tag, ch: Box(ch[0], tag))
    leaves, d = tree.flatten({"k": Box(3.0, "t")})
    assert leaves == [3.0]
    rebuilt = tree.unflatten(d, [4.0])
    assert rebuilt["k"].value == 4.0 and rebuilt["k"].tag == "t"
    assert tree.structure(Box(1, "t")) != tree.structure(Box(1, "u"))  # aux is part of the structure
    with pytest.raises(ValueError, match="already"):
        tree.register(Box, lambda b: ([], None), lambda a, c: None)


def test_register_dataclass_with_meta_fields():
    @tree.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: object
        b: object

    @dataclasses.dataclass
    class Layer:
        weights: object
        activation: str

    tree.register_dataclass(Layer, meta_fields=["activation"])
    leaves, d = tree.flatten(Params(w=1.0, b=2.0))
    assert leaves == [1.0, 2.0]
    assert tree.unflatten(d, [3.0, 4.0]) == Params(3.0, 4.0)
    pairs, _ = tree.flatten_with_path(Layer(weights=[1.0], activation="tanh"))
    assert pairs == [(("weights", 0), 1.0)]
    with pytest.raises(TypeError, match="not a dataclass"):
        tree.register_dataclass(int)


def test_is_leaf_stops_descent():
    leaves, d = tree.flatten({"a": [1, 2], "b": 3}, is_leaf=lambda x: isinstance(x, list))
    assert leaves == [[1, 2], 3]
    assert tree.unflatten(d, leaves) == {"a": [1, 2], "b": 3}
