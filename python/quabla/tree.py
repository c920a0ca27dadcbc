"""Pytrees (API.md §6): nested containers of arrays that transforms flatten and rebuild.

Containers: dict (keys sorted), OrderedDict (insertion order, as JAX), defaultdict (keys
sorted, rebuilt with its default_factory), list, tuple, None (no leaves), NamedTuple, and classes
registered with :func:`register` or :func:`register_dataclass`. Everything else is a leaf.
A :class:`TreeDef` describes a structure; it is hashable and compares by structure, so it
can be part of compilation cache keys.
"""
from __future__ import annotations

import collections as _collections
import dataclasses
from typing import Any, Callable, Hashable, Iterable, List, Optional, Sequence, Tuple

__all__ = [
    "TreeDef", "flatten", "unflatten", "leaves", "structure", "map", "flatten_with_path",
    "register", "register_dataclass", "all_leaves_like", "keystr", "reduce", "all", "map_with_path",
    # jax.tree_util's names (qb.tree_util is this module)
    "tree_map", "tree_leaves", "tree_flatten", "tree_unflatten", "tree_structure", "tree_flatten_with_path",
    "tree_map_with_path", "tree_reduce", "tree_all", "register_pytree_node", "register_pytree_node_class",
    "register_dataclass", "Partial",
]

_registry: dict = {}  # type -> (flatten_fn, unflatten_fn)

_LEAF, _NONE, _TUPLE, _LIST, _DICT, _NAMEDTUPLE, _CUSTOM, _ODICT, _DDICT = range(9)
_KIND_NAMES = {_TUPLE: "tuple", _LIST: "list", _DICT: "dict", _NAMEDTUPLE: "namedtuple", _CUSTOM: "custom",
               _ODICT: "OrderedDict", _DDICT: "defaultdict"}
# _DICT's aux: the sorted keys; _ODICT's: the keys in insertion order (OrderedDicts with the
# same keys in another order differ, as in JAX); _DDICT's: (default_factory, sorted keys).


class TreeDef:
    """The structure of a pytree: container kinds, keys and auxiliary data, without leaves."""

    __slots__ = ("_kind", "_aux", "_children", "_num_leaves", "_hash")

    def __init__(self, kind: int, aux: Hashable, children: Tuple["TreeDef", ...]):
        self._kind = kind
        self._aux = aux
        self._children = children
        self._num_leaves = 1 if kind == _LEAF else sum(c._num_leaves for c in children)
        self._hash = None  # computed on first use: flattening on every jit call stays cheap

    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def children(self) -> Tuple["TreeDef", ...]:
        return self._children

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        return (isinstance(other, TreeDef) and hash(self) == hash(other) and self._kind == other._kind
                and self._aux == other._aux and self._children == other._children)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self._kind, _hashable_aux(self._aux), self._children))
        return self._hash

    def __repr__(self) -> str:
        return f"TreeDef({self._describe()})"

    def _describe(self) -> str:
        if self._kind == _LEAF:
            return "*"
        if self._kind == _NONE:
            return "None"
        inner = [c._describe() for c in self._children]
        if self._kind == _TUPLE:
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if self._kind == _LIST:
            return "[" + ", ".join(inner) + "]"
        if self._kind == _DICT:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(self._aux, inner)) + "}"
        if self._kind == _ODICT:
            return "OrderedDict({" + ", ".join(f"{k!r}: {v}" for k, v in zip(self._aux, inner)) + "})"
        if self._kind == _DDICT:
            factory, keys = self._aux
            return f"defaultdict[{factory!r}]({{" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, inner)) + "})"
        if self._kind == _NAMEDTUPLE:
            return f"{self._aux.__name__}(" + ", ".join(f"{f}={v}" for f, v in zip(self._aux._fields, inner)) + ")"
        cls, aux = self._aux
        return f"{cls.__name__}[{aux!r}](" + ", ".join(inner) + ")"

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return unflatten(self, leaves)


def _hashable_aux(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


_LEAF_DEF = TreeDef(_LEAF, None, ())
_NONE_DEF = TreeDef(_NONE, None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


_KIND_CACHE: dict = {}  # type -> container kind (or _LEAF); cleared by register()


def _kind_of_type(t: type) -> int:
    kind = _KIND_CACHE.get(t)
    if kind is None:
        if t in _registry:
            kind = _CUSTOM
        elif t is type(None):
            kind = _NONE
        elif issubclass(t, _collections.OrderedDict):
            kind = _ODICT
        elif issubclass(t, _collections.defaultdict):
            kind = _DDICT
        elif issubclass(t, dict):
            kind = _DICT
        elif issubclass(t, tuple) and hasattr(t, "_fields"):
            kind = _NAMEDTUPLE
        elif t is tuple:
            kind = _TUPLE
        elif t is list:
            kind = _LIST
        else:
            kind = _LEAF
        _KIND_CACHE[t] = kind
    return kind


def _children(node):
    """(kind, aux, children, keys) of a container node, or None for a leaf."""
    if node is None:
        return _NONE, None, (), ()
    t = type(node)
    if t in _registry:
        flat, _ = _registry[t]
        children, aux = flat(node)
        children = tuple(children)
        keys = getattr(flat, "_field_names", None) or tuple(range(len(children)))
        return _CUSTOM, (t, aux), children, tuple(keys)
    if t is dict or isinstance(node, dict):
        kind = _kind_of_type(t)
        if kind == _ODICT:
            keys = tuple(node)
            return _ODICT, keys, tuple(node[k] for k in keys), keys
        keys = _sorted_keys(node)
        if kind == _DDICT:
            return _DDICT, (node.default_factory, keys), tuple(node[k] for k in keys), keys
        return _DICT, keys, tuple(node[k] for k in keys), keys
    if _is_namedtuple(node):
        return _NAMEDTUPLE, t, tuple(node), tuple(t._fields)
    if t is tuple:
        return _TUPLE, None, node, tuple(range(len(node)))
    if t is list:
        return _LIST, None, tuple(node), tuple(range(len(node)))
    return None


def _sorted_keys(node) -> tuple:
    try:
        return tuple(sorted(node))
    except TypeError as exc:
        raise TypeError(f"qb.tree: dict keys must be sortable, got {list(node)!r}") from exc


def _flatten_fast(node, leaves: list) -> TreeDef:
    """_flatten without is_leaf and paths: the per-call path of jit and the transforms."""
    kind = _kind_of_type(type(node))
    if kind == _LEAF:
        leaves.append(node)
        return _LEAF_DEF
    if kind == _NONE:
        return _NONE_DEF
    if kind == _DICT:
        keys = _sorted_keys(node)
        return TreeDef(_DICT, keys, tuple(_flatten_fast(node[k], leaves) for k in keys))
    if kind == _ODICT:
        keys = tuple(node)
        return TreeDef(_ODICT, keys, tuple(_flatten_fast(node[k], leaves) for k in keys))
    if kind == _DDICT:
        keys = _sorted_keys(node)
        return TreeDef(_DDICT, (node.default_factory, keys), tuple(_flatten_fast(node[k], leaves) for k in keys))
    if kind == _TUPLE or kind == _LIST:
        return TreeDef(kind, None, tuple(_flatten_fast(c, leaves) for c in node))
    if kind == _NAMEDTUPLE:
        return TreeDef(_NAMEDTUPLE, type(node), tuple(_flatten_fast(c, leaves) for c in node))
    children, aux = _registry[type(node)][0](node)
    return TreeDef(_CUSTOM, (type(node), aux), tuple(_flatten_fast(c, leaves) for c in children))


def _flatten(node, is_leaf, leaves: list, paths: Optional[list], path: tuple) -> TreeDef:
    if is_leaf is None and paths is None:
        return _flatten_fast(node, leaves)
    if is_leaf is not None and node is not None and is_leaf(node):
        leaves.append(node)
        if paths is not None:
            paths.append(path)
        return _LEAF_DEF
    info = _children(node)
    if info is None:
        leaves.append(node)
        if paths is not None:
            paths.append(path)
        return _LEAF_DEF
    kind, aux, children, keys = info
    if kind == _NONE:
        return _NONE_DEF
    defs = tuple(_flatten(c, is_leaf, leaves, paths, path + (k,)) for c, k in zip(children, keys))
    return TreeDef(kind, aux, defs)


def flatten(tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> Tuple[List[Any], TreeDef]:
    """(leaves in order, TreeDef). Dict leaves come in sorted-key order (OrderedDict's in
    insertion order)."""
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves, None, ())


def flatten_with_path(tree: Any, is_leaf=None) -> Tuple[List[Tuple[tuple, Any]], TreeDef]:
    """([(path, leaf)], TreeDef); a path is a tuple of dict keys, sequence indices and field names."""
    leaves: list = []
    paths: list = []
    treedef = _flatten(tree, is_leaf, leaves, paths, ())
    return list(zip(paths, leaves)), treedef


def keystr(path: tuple, root: str = "") -> str:
    """A path from flatten_with_path as text: ``keystr(("w", 0), "params")`` is
    ``params['w'][0]``."""
    return root + "".join(f"[{k!r}]" for k in path)


def leaves(tree: Any, is_leaf=None) -> List[Any]:
    return flatten(tree, is_leaf)[0]


def structure(tree: Any, is_leaf=None) -> TreeDef:
    return flatten(tree, is_leaf)[1]


def unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuilds a tree of `treedef`'s structure from leaves (exactly num_leaves of them)."""
    if not isinstance(treedef, TreeDef):
        raise TypeError(f"qb.tree.unflatten: expected a TreeDef, got {type(treedef).__name__}")
    items = list(leaves)
    if len(items) != treedef.num_leaves:
        raise ValueError(f"qb.tree.unflatten: the structure {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(items)}")
    it = iter(items)
    return _build(treedef, it)


def _build(d: TreeDef, it) -> Any:
    if d._kind == _LEAF:
        return next(it)
    if d._kind == _NONE:
        return None
    children = [_build(c, it) for c in d._children]
    if d._kind == _TUPLE:
        return tuple(children)
    if d._kind == _LIST:
        return children
    if d._kind == _DICT:
        return dict(zip(d._aux, children))
    if d._kind == _ODICT:
        return _collections.OrderedDict(zip(d._aux, children))
    if d._kind == _DDICT:
        return _collections.defaultdict(d._aux[0], zip(d._aux[1], children))
    if d._kind == _NAMEDTUPLE:
        return d._aux(*children)
    cls, aux = d._aux
    return _registry[cls][1](aux, children)


def map(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """Applies f to corresponding leaves of tree and rest (which must have tree's structure)."""
    flat, treedef = flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest):
        r_flat, r_def = flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"qb.tree.map: argument {i + 1} has structure {r_def}, expected {treedef}")
        others.append(r_flat)
    return unflatten(treedef, [f(*xs) for xs in zip(flat, *others)])


def all_leaves_like(treedef: TreeDef, value: Any) -> Any:
    """A tree of `treedef`'s structure with every leaf equal to `value`."""
    return unflatten(treedef, [value] * treedef.num_leaves)


def register(cls: type, flatten_fn: Callable[[Any], Tuple[Sequence[Any], Hashable]],
             unflatten_fn: Callable[[Hashable, Sequence[Any]], Any]) -> type:
    """Registers cls as a container: flatten_fn(obj) -> (children, aux); unflatten_fn(aux, children) -> obj.

    aux must be hashable (it is part of the TreeDef and so of jit cache keys)."""
    if not isinstance(cls, type):
        raise TypeError(f"qb.tree.register: expected a class, got {cls!r}")
    if cls in _registry or cls in (dict, list, tuple, type(None)):
        raise ValueError(f"qb.tree.register: {cls.__name__} is already a pytree container")
    _registry[cls] = (flatten_fn, unflatten_fn)
    _KIND_CACHE.clear()
    return cls


def register_dataclass(cls: type = None, *, data_fields: Optional[Sequence[str]] = None,
                       meta_fields: Optional[Sequence[str]] = None):
    """Registers a dataclass as a container. Usable as a decorator.

    Data fields are children (leaves or subtrees); meta fields are static auxiliary data
    (hashable, part of the structure and so of jit cache keys). By default a field is meta
    when declared ``dataclasses.field(metadata=dict(static=True))`` and data otherwise; or
    name them (JAX's form) with data_fields and meta_fields, which together must list every
    field that ``__init__`` takes, each once (ValueError otherwise)."""
    def do(klass):
        if not isinstance(klass, type) or not dataclasses.is_dataclass(klass):
            raise TypeError(f"qb.tree.register_dataclass: {getattr(klass, '__name__', klass)!r} is not a dataclass")
        fields = [f for f in dataclasses.fields(klass) if f.init]
        names = [f.name for f in fields]
        where = f"qb.tree.register_dataclass({klass.__name__})"
        if data_fields is None and meta_fields is None:
            meta = tuple(f.name for f in fields if f.metadata.get("static", False))
            data = tuple(n for n in names if n not in meta)
        else:
            for arg, given in (("data_fields", data_fields), ("meta_fields", meta_fields)):
                if isinstance(given, str):
                    raise TypeError(f"{where}: {arg} must be a sequence of field names, not a string")
            meta = tuple(meta_fields) if meta_fields is not None else ()
            data = tuple(data_fields) if data_fields is not None else tuple(n for n in names if n not in meta)
            if meta_fields is None:
                meta = tuple(n for n in names if n not in data)
            unknown = sorted((set(data) | set(meta)) - set(names))
            if unknown:
                raise ValueError(f"{where}: {unknown} are not fields of {klass.__name__} that __init__ takes "
                                 f"(its fields: {names})")
            both = sorted(set(data) & set(meta))
            repeated = sorted({n for n in data + meta if (data + meta).count(n) > 1} - set(both))
            if both or repeated:
                raise ValueError(f"{where}: {both or repeated} listed twice; each field is either data or meta")
            missing = [n for n in names if n not in data and n not in meta]
            if missing:
                raise ValueError(f"{where}: fields {missing} are in neither data_fields nor meta_fields; list "
                                 f"every field in one of them")

        def flat(obj):
            return [getattr(obj, n) for n in data], tuple(getattr(obj, n) for n in meta)
        flat._field_names = data

        def unflat(aux, children):
            return klass(**dict(zip(data, children)), **dict(zip(meta, aux)))
        return register(klass, flat, unflat)
    return do if cls is None else do(cls)


def map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf=None) -> Any:
    """f(path, leaf, *leaves of rest) at every leaf (paths as flatten_with_path gives)."""
    with_path, treedef = flatten_with_path(tree, is_leaf)
    others = [treedef.flatten_up_to(r) if hasattr(treedef, "flatten_up_to") else leaves(r, is_leaf) for r in rest]
    return unflatten(treedef, [f(p, x, *(o[i] for o in others)) for i, (p, x) in enumerate(with_path)])


def reduce(function: Callable, tree: Any, initializer: Any = None, is_leaf=None) -> Any:  # noqa: A001
    """functools.reduce of function over the leaves (jax.tree_util.tree_reduce)."""
    import functools
    xs = leaves(tree, is_leaf)
    if initializer is None:
        return functools.reduce(function, xs)
    return functools.reduce(function, xs, initializer)


def all(tree: Any) -> bool:  # noqa: A001
    """Whether every leaf is truthy (jax.tree_util.tree_all)."""
    import builtins
    return builtins.all(bool(x) for x in leaves(tree))


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: cls.tree_flatten(self) -> (children, aux) and the classmethod
    cls.tree_unflatten(aux, children) make it a container (as in jax.tree_util)."""
    return register(cls, lambda obj: obj.tree_flatten(), lambda aux, children: cls.tree_unflatten(aux, children))


class Partial:
    """functools.partial as a pytree (jax.tree_util.Partial): the function is static, the
    bound arguments are leaves, so a Partial can be passed through jit and transforms."""

    def __init__(self, func: Callable, *args: Any, **kwargs: Any):
        if not callable(func):
            raise TypeError(f"Partial: expected a callable, got {type(func).__name__}")
        if isinstance(func, Partial):
            args, kwargs = func.args + args, {**func.keywords, **kwargs}
            func = func.func
        self.func, self.args, self.keywords = func, tuple(args), dict(kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*self.args, *args, **{**self.keywords, **kwargs})

    def __repr__(self) -> str:
        return f"Partial({self.func!r}, *{self.args!r}, **{self.keywords!r})"


register(Partial, lambda p: ((p.args, p.keywords), p.func), lambda func, children: Partial(func, *children[0], **children[1]))

tree_map = map
tree_leaves = leaves
tree_flatten = flatten
tree_unflatten = unflatten
tree_structure = structure
tree_flatten_with_path = flatten_with_path
tree_map_with_path = map_with_path
tree_reduce = reduce
tree_all = all
register_pytree_node = register
