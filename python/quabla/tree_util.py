"""jax.tree_util's names as a module: ``from quabla.tree_util import tree_map`` and
``import quabla.tree_util as tu``. Every object is the one in :mod:`quabla.tree` (so
``qb.tree_util.tree_map is qb.tree.map``), plus a few of jax.tree_util's compositions."""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from . import tree as _tree
from .tree import (  # noqa: F401
    TreeDef, Partial, flatten, unflatten, leaves, structure, map, flatten_with_path, register, register_dataclass,
    all_leaves_like, keystr, reduce, all, map_with_path, tree_map, tree_leaves, tree_flatten, tree_unflatten,
    tree_structure, tree_flatten_with_path, tree_map_with_path, tree_reduce, tree_all, register_pytree_node,
    register_pytree_node_class,
)

__all__ = list(_tree.__all__) + [
    "PyTreeDef", "tree_leaves_with_path", "tree_transpose", "all_leaves", "treedef_is_leaf", "treedef_children",
]

PyTreeDef = TreeDef  # jax.tree_util.PyTreeDef's role: the type of a structure


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] = None) -> List[Tuple[tuple, Any]]:
    """[(path, leaf)] in flattening order (jax.tree_util.tree_leaves_with_path)."""
    return flatten_with_path(tree, is_leaf)[0]


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether treedef is a single leaf or None, a structure with no children."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"treedef_is_leaf: expected a TreeDef (from tree_structure), got {type(treedef).__name__}")
    return not treedef.children and treedef._kind in (_tree._LEAF, _tree._NONE)


def treedef_children(treedef: TreeDef) -> List[TreeDef]:
    """The structures of treedef's immediate children."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"treedef_children: expected a TreeDef (from tree_structure), got {type(treedef).__name__}")
    return list(treedef.children)


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
