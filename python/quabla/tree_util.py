"""jax.tree_util's names as a module: ``from quabla.tree_util import tree_map`` and
``import quabla.tree_util as tu``. Every object is the one in :mod:`quabla.tree` (so
``qb.tree_util.tree_map is qb.tree.map``), plus a few of jax.tree_util's compositions."""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from . import tree as _tree
from .tree import (
    TreeDef, Partial, flatten, unflatten, leaves, structure, map, flatten_with_path, register, register_dataclass,
    all_leaves_like, keystr, reduce, all, map_with_path, tree_map, tree_leaves, tree_flatten, tree_unflatten,
    tree_structure, tree_flatten_with_path, tree_map_with_path, tree_reduce, tree_all, register_pytree_node,
    register_pytree_node_class, DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey, KeyEntry, KeyPath,
    tree_leaves_with_path, tree_broadcast, tree_reduce_associative, flatten_one_level, flatten_one_level_with_keys,
    register_static, register_pytree_with_keys, register_pytree_with_keys_class, treedef_tuple, is_tree_node,
)

__all__ = [
    # qb.tree's short names
    "TreeDef", "Partial", "flatten", "unflatten", "leaves", "structure", "map", "flatten_with_path", "register",
    "register_dataclass", "all_leaves_like", "keystr", "reduce", "all", "map_with_path",
    # jax.tree_util's names
    "tree_map", "tree_leaves", "tree_flatten", "tree_unflatten", "tree_structure", "tree_flatten_with_path",
    "tree_map_with_path", "tree_reduce", "tree_all", "register_pytree_node", "register_pytree_node_class",
    "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry", "KeyPath", "tree_leaves_with_path",
    "tree_broadcast", "tree_reduce_associative", "flatten_one_level", "flatten_one_level_with_keys",
    "register_static", "register_pytree_with_keys", "register_pytree_with_keys_class", "treedef_tuple",
    "is_tree_node", "PyTreeDef", "tree_transpose", "all_leaves", "treedef_is_leaf", "treedef_children",
    "default_registry", "PyTreeRegistry",
]

PyTreeDef = TreeDef  # jax.tree_util.PyTreeDef's role: the type of a structure


class PyTreeRegistry:
    """jax.tree_util.default_registry's interface on Quabla's one registry of containers: its
    methods are qb.tree's functions (registering here registers everywhere)."""

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] = None) -> Tuple[List[Any], TreeDef]:
        return flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree: Any, leaf_predicate: Callable[[Any], bool] = None):
        return flatten_with_path(tree, leaf_predicate)

    def flatten_one_level(self, tree: Any):
        return flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any):
        return flatten_one_level_with_keys(tree)

    def is_node(self, tree: Any) -> bool:
        return is_tree_node(type(tree))

    def register_node(self, type_: type, to_iterable: Callable, from_iterable: Callable,
                      to_iterable_with_keys: Callable = None) -> None:
        """to_iterable(obj) -> (children, aux); from_iterable(aux, children) -> obj."""
        if to_iterable_with_keys is None:
            register(type_, to_iterable, from_iterable)
        else:
            register_pytree_with_keys(type_, to_iterable_with_keys, from_iterable, to_iterable)

    def register_dataclass_node(self, type_: type, data_fields, meta_fields) -> None:
        register_dataclass(type_, data_fields=list(data_fields), meta_fields=list(meta_fields))

    def __repr__(self) -> str:
        return "<qb.tree_util.default_registry>"


default_registry = PyTreeRegistry()


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether treedef is a single leaf or None, a structure with no children."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"treedef_is_leaf: expected a TreeDef (from tree_structure), got {type(treedef).__name__}")
    return not treedef._children and treedef._kind in (_tree._LEAF, _tree._NONE)


def treedef_children(treedef: TreeDef) -> List[TreeDef]:
    """The structures of treedef's immediate children."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"treedef_children: expected a TreeDef (from tree_structure), got {type(treedef).__name__}")
    return treedef.children()


def all_leaves(iterable, is_leaf: Callable[[Any], bool] = None) -> bool:
    """Whether every element of iterable is a leaf (jax.tree_util.all_leaves)."""
    import builtins
    return builtins.all(treedef_is_leaf(structure(x, is_leaf)) and structure(x, is_leaf)._kind == _tree._LEAF
                        for x in iterable)


def tree_transpose(outer_treedef: TreeDef, inner_treedef: TreeDef, pytree_to_transpose: Any) -> Any:
    """An outer structure of inner structures turned into an inner structure of outer ones
    (jax.tree_util.tree_transpose): ``[{"a": 1, "b": 2}, {"a": 3, "b": 4}]`` with outer
    ``[*, *]`` and inner ``{"a": *, "b": *}`` becomes ``{"a": [1, 3], "b": [2, 4]}``."""
    for what, td in (("outer_treedef", outer_treedef), ("inner_treedef", inner_treedef)):
        if not isinstance(td, TreeDef):
            raise TypeError(f"tree_transpose: {what} must be a TreeDef (from tree_structure), got {type(td).__name__}")
    xs, got = flatten(pytree_to_transpose)
    n_out, n_in = outer_treedef.num_leaves, inner_treedef.num_leaves
    if len(xs) != n_out * n_in:
        raise ValueError(f"tree_transpose: the tree has {len(xs)} leaves but outer_treedef ({n_out} leaves) of "
                         f"inner_treedef ({n_in} leaves) has {n_out * n_in}; got structure {got}")
    columns = [unflatten(outer_treedef, [xs[i * n_in + j] for i in range(n_out)]) for j in range(n_in)]
    return unflatten(inner_treedef, columns)
