"""Pytrees (API.md §6): nested containers of arrays that transforms flatten and rebuild.

Containers: dict (keys sorted), OrderedDict (insertion order, as JAX), defaultdict (keys
sorted, rebuilt with its default_factory), list, tuple, None (no leaves), NamedTuple, and classes
registered with :func:`register` or :func:`register_dataclass`. Everything else is a leaf.
A :class:`TreeDef` describes a structure; it is hashable and compares by structure, so it
can be part of compilation cache keys.

A leaf's path (flatten_with_path, map_with_path) is a tuple of JAX's key entries: DictKey
(dict keys), SequenceKey (list and tuple positions), GetAttrKey (NamedTuple and dataclass
fields), FlattenedIndexKey (children of classes registered without keys), or the entries a
class registered with register_pytree_with_keys gives. Each entry also equals its bare key,
so paths compare equal to the plain tuples of keys Quabla used before.
"""
from __future__ import annotations

import collections as _collections
import dataclasses
from typing import Any, Callable, Hashable, Iterable, List, Optional, Sequence, Tuple, TypeVar

__all__ = [
    "TreeDef", "flatten", "unflatten", "leaves", "structure", "map", "flatten_with_path",
    "register", "register_dataclass", "all_leaves_like", "keystr", "reduce", "all", "map_with_path", "transpose",
    # jax.tree_util's names (qb.tree_util is this module)
    "tree_map", "tree_leaves", "tree_flatten", "tree_unflatten", "tree_structure", "tree_flatten_with_path",
    "tree_map_with_path", "tree_reduce", "tree_all", "register_pytree_node", "register_pytree_node_class",
    "register_dataclass", "Partial",
    # key paths (jax.tree_util's key entries) and more of jax.tree / jax.tree_util
    "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry", "KeyPath", "leaves_with_path",
    "broadcast", "reduce_associative", "flatten_one_level", "flatten_one_level_with_keys", "register_static",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "treedef_tuple", "is_tree_node",
    "tree_leaves_with_path", "tree_broadcast", "tree_reduce_associative",
]

_registry: dict = {}  # type -> (flatten_fn, unflatten_fn)
_key_registry: dict = {}  # type -> flatten_with_keys_fn, for classes registered with keys

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
    def num_nodes(self) -> int:
        """Nodes of the structure, leaves and containers (None included), as JAX's PyTreeDef."""
        return 1 + sum(c.num_nodes for c in self._children)

    def children(self) -> List["TreeDef"]:
        """The structures of the immediate children (a method, as JAX's PyTreeDef.children())."""
        return list(self._children)

    def flatten_up_to(self, tree: Any) -> List[Any]:
        """The subtrees of tree at this structure's leaves (tree must have this structure as
        a prefix), as JAX's PyTreeDef.flatten_up_to."""
        out: list = []
        _up_to(self, tree, out, ())
        return out

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


def _up_to(d: "TreeDef", tree: Any, out: list, path: tuple) -> None:
    if d._kind == _LEAF:
        out.append(tree)
        return
    node = _children(tree)
    if d._kind == _NONE:
        if tree is not None:
            raise ValueError(f"qb.tree: expected None at {keystr(path) or 'the root'}, got {type(tree).__name__}")
        return
    if node is None or node[0] != d._kind or (d._kind != _CUSTOM and node[1] != d._aux) or \
            (d._kind == _CUSTOM and node[1][0] is not d._aux[0]) or len(node[2]) != len(d._children):
        raise ValueError(f"qb.tree: the tree does not have the structure {d} as a prefix: at "
                         f"{keystr(path) or 'the root'} it holds {type(tree).__name__} "
                         f"{structure(tree) if node is not None else 'a leaf'}")
    for c, sub, k in zip(d._children, node[2], node[3]):
        _up_to(c, sub, out, path + (k,))


def _hashable_aux(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


# ---- key paths ---------------------------------------------------------------------------------
# A leaf's path is a tuple of key entries, one per container on the way down, as in JAX:
# DictKey for dict keys, SequenceKey for list and tuple positions, GetAttrKey for NamedTuple
# and dataclass fields, FlattenedIndexKey for the children of classes registered without keys.
# For backwards compatibility an entry also compares equal to (and hashes as) its bare key,
# so ``path == ("a", 0)`` holds for ``(DictKey("a"), SequenceKey(0))``; JAX's entries compare
# equal only to entries of their own class (two entries of different classes never do here
# either).

class _Key:
    __slots__ = ("_v",)
    _attr = ""

    def __eq__(self, other):
        if isinstance(other, _Key):
            return type(other) is type(self) and other._v == self._v
        return self._v == other

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._v)

    def __repr__(self):
        return f"{type(self).__name__}({self._attr}={self._v!r})"

    def __reduce__(self):
        return type(self), (self._v,)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _value(self):
        return self._v


def _int_arg(cls: str, what: str, v) -> int:
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{cls}: {what} must be an int, got {type(v).__name__} {v!r}")
    return int(v)


_set = object.__setattr__


class DictKey(_Key):
    """The path entry of a dict (or OrderedDict, defaultdict) child: ``.key``; str ``['k']``."""
    __slots__ = ()
    __match_args__ = ("key",)
    _attr = "key"

    def __init__(self, key: Hashable):
        _set(self, "_v", key)

    @property
    def key(self):
        return self._v

    def __str__(self):
        return f"[{self._v!r}]"


class SequenceKey(_Key):
    """The path entry of a list or tuple child: ``.idx``; str ``[0]``."""
    __slots__ = ()
    __match_args__ = ("idx",)
    _attr = "idx"

    def __init__(self, idx: int):
        _set(self, "_v", idx if type(idx) is int else _int_arg("SequenceKey", "idx", idx))

    @property
    def idx(self) -> int:
        return self._v

    def __str__(self):
        return f"[{self._v}]"


class GetAttrKey(_Key):
    """The path entry of a NamedTuple or dataclass field: ``.name``; str ``.name``."""
    __slots__ = ()
    __match_args__ = ("name",)
    _attr = "name"

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"GetAttrKey: name must be a str, got {type(name).__name__} {name!r}")
        _set(self, "_v", name)

    @property
    def name(self) -> str:
        return self._v

    def __str__(self):
        return f".{self._v}"


class FlattenedIndexKey(_Key):
    """The path entry of the i-th child of a class registered without keys (register,
    register_pytree_node): ``.key``; str ``[<flat index i>]``."""
    __slots__ = ()
    __match_args__ = ("key",)
    _attr = "key"

    def __init__(self, key: int):
        _set(self, "_v", key if type(key) is int else _int_arg("FlattenedIndexKey", "key", key))

    @property
    def key(self) -> int:
        return self._v

    def __str__(self):
        return f"[<flat index {self._v}>]"


_SEQ_KEYS = tuple(SequenceKey(i) for i in range(256))  # shared entries (they are immutable)
_FLAT_KEYS = tuple(FlattenedIndexKey(i) for i in range(256))


def _seq_keys(n: int) -> tuple:
    return _SEQ_KEYS[:n] if n <= 256 else _SEQ_KEYS + tuple(SequenceKey(i) for i in range(256, n))


def _flat_keys(n: int) -> tuple:
    return _FLAT_KEYS[:n] if n <= 256 else _FLAT_KEYS + tuple(FlattenedIndexKey(i) for i in range(256, n))


KeyEntry = TypeVar("KeyEntry", bound=Any)  # jax.tree_util.KeyEntry: one entry of a key path
KeyPath = Tuple[KeyEntry, ...]  # jax.tree_util.KeyPath: a leaf's path


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
    """(kind, aux, children, keys) of a container node, or None for a leaf; keys are the
    children's key-path entries (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey, or
    the entries a class registered with keys gives)."""
    if node is None:
        return _NONE, None, (), ()
    t = type(node)
    if t in _registry:
        with_keys = _key_registry.get(t)
        if with_keys is not None:
            pairs, aux = with_keys(node)
            pairs = tuple(pairs)
            return _CUSTOM, (t, aux), tuple(c for _, c in pairs), tuple(k for k, _ in pairs)
        flat, _ = _registry[t]
        children, aux = flat(node)
        children = tuple(children)
        names = getattr(flat, "_field_names", None)
        keys = tuple(GetAttrKey(n) for n in names) if names else _flat_keys(len(children))
        return _CUSTOM, (t, aux), children, keys
    if t is dict or isinstance(node, dict):
        kind = _kind_of_type(t)
        if kind == _ODICT:
            keys = tuple(node)
            return _ODICT, keys, tuple(node[k] for k in keys), tuple(DictKey(k) for k in keys)
        keys = _sorted_keys(node)
        entries = tuple(DictKey(k) for k in keys)
        if kind == _DDICT:
            return _DDICT, (node.default_factory, keys), tuple(node[k] for k in keys), entries
        return _DICT, keys, tuple(node[k] for k in keys), entries
    if _is_namedtuple(node):
        return _NAMEDTUPLE, t, tuple(node), tuple(GetAttrKey(f) for f in t._fields)
    if t is tuple:
        return _TUPLE, None, node, _seq_keys(len(node))
    if t is list:
        return _LIST, None, tuple(node), _seq_keys(len(node))
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


def _flatten(node, is_leaf, leaves: list, paths: Optional[list], path: tuple, leaf_takes_path: bool = False) -> TreeDef:
    if is_leaf is None and paths is None:
        return _flatten_fast(node, leaves)
    if is_leaf is not None and (is_leaf(path, node) if leaf_takes_path else is_leaf(node)):  # None too, as JAX
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
    defs = tuple(_flatten(c, is_leaf, leaves, paths, path + (k,), leaf_takes_path) for c, k in zip(children, keys))
    return TreeDef(kind, aux, defs)


def flatten(tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> Tuple[List[Any], TreeDef]:
    """(leaves in order, TreeDef). Dict leaves come in sorted-key order (OrderedDict's in
    insertion order)."""
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves, None, ())


def flatten_with_path(tree: Any, is_leaf=None, is_leaf_takes_path: bool = False) -> Tuple[List[Tuple[tuple, Any]], TreeDef]:
    """([(path, leaf)], TreeDef) (jax.tree_util.tree_flatten_with_path): a path is a tuple of
    key entries (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey; each also equal to its
    bare key). With is_leaf_takes_path, is_leaf is called as is_leaf(path, node)."""
    leaves: list = []
    paths: list = []
    treedef = _flatten(tree, is_leaf, leaves, paths, (), bool(is_leaf_takes_path))
    return list(zip(paths, leaves)), treedef


def leaves_with_path(tree: Any, is_leaf=None, is_leaf_takes_path: bool = False) -> List[Tuple[tuple, Any]]:
    """[(path, leaf)] in flattening order (jax.tree_util.tree_leaves_with_path)."""
    return flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def _entry_text(k, simple: bool) -> str:
    if isinstance(k, _Key):
        return str(k._value()) if simple else str(k)
    return str(k) if simple else f"[{k!r}]"  # a bare key (Quabla's paths before key entries)


def keystr(path: tuple, root: str = "", *, simple: bool = False, separator: str = "") -> str:
    """A key path as text, as jax.tree_util.keystr: ``keystr((DictKey("w"), SequenceKey(0)))``
    is ``['w'][0]``; simple=True gives the bare keys (``w0``), separator goes between entries.
    root (Quabla's) is put in front: ``keystr(path, "params")`` is ``params['w'][0]``. A bare
    key (not a key entry) is written as ``[key!r]`` (``key`` with simple=True)."""
    if not isinstance(path, tuple):
        try:
            path = tuple(path)
        except TypeError:
            raise TypeError(f"keystr: expected a key path (a tuple of key entries), got {type(path).__name__}") from None
    return root + separator.join(_entry_text(k, simple) for k in path)


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
    """Applies f to corresponding leaves of tree and rest. Each of rest has tree's structure
    or has it as a prefix (then f gets rest's whole subtree at each of tree's leaves), as JAX's."""
    flat, treedef = flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest):
        r_flat, r_def = flatten(r, is_leaf)
        if r_def != treedef:
            try:
                r_flat = treedef.flatten_up_to(r)
            except ValueError:
                raise ValueError(f"qb.tree.map: argument {i + 1} has structure {r_def}, expected {treedef} "
                                 f"(or a tree having it as a prefix)") from None
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


class _Unset:
    def __repr__(self):
        return "<unset>"


_UNSET = _Unset()


def map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf=None, is_leaf_takes_path: bool = False) -> Any:
    """f(path, leaf, *leaves of rest) at every leaf (paths as flatten_with_path gives); rest
    must have tree's structure, as for map."""
    with_path, treedef = flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = []
    for i, r in enumerate(rest):
        r_flat, r_def = flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"qb.tree.map_with_path: argument {i + 1} has structure {r_def}, expected {treedef}")
        others.append(r_flat)
    return unflatten(treedef, [f(p, x, *(o[i] for o in others)) for i, (p, x) in enumerate(with_path)])


def reduce(function: Callable, tree: Any, initializer: Any = _UNSET, is_leaf=None) -> Any:  # noqa: A001
    """functools.reduce of function over the leaves (jax.tree_util.tree_reduce); an explicit
    initializer, None included, starts the reduction."""
    import functools
    xs = leaves(tree, is_leaf)
    if initializer is _UNSET:
        return functools.reduce(function, xs)
    return functools.reduce(function, xs, initializer)


def all(tree: Any, *, is_leaf=None) -> bool:  # noqa: A001
    """Whether every leaf is truthy (jax.tree_util.tree_all)."""
    import builtins
    return builtins.all(bool(x) for x in leaves(tree, is_leaf))


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


# ---- more of jax.tree_util: registration with keys, one-level flattening, broadcasting -------

def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable[[Any], Tuple[Iterable[Tuple[Any, Any]], Hashable]],
                              unflatten_func: Callable[[Hashable, Sequence[Any]], Any],
                              flatten_func: Optional[Callable[[Any], Tuple[Sequence[Any], Hashable]]] = None) -> type:
    """Registers nodetype as a container whose children carry key-path entries
    (jax.tree_util.register_pytree_with_keys): flatten_with_keys(obj) -> ([(key, child)],
    aux), unflatten_func(aux, children) -> obj; flatten_func(obj) -> (children, aux), the same
    children without keys, is the faster path used when no paths are wanted (derived from
    flatten_with_keys when not given)."""
    if not callable(flatten_with_keys) or not callable(unflatten_func):
        raise TypeError("register_pytree_with_keys: flatten_with_keys and unflatten_func must be callables")
    if flatten_func is None:
        def flatten_func(obj):
            pairs, aux = flatten_with_keys(obj)
            return [c for _, c in pairs], aux
    elif not callable(flatten_func):
        raise TypeError(f"register_pytree_with_keys: flatten_func must be a callable or None, got "
                        f"{type(flatten_func).__name__}")
    register(nodetype, flatten_func, unflatten_func)
    _key_registry[nodetype] = flatten_with_keys
    return nodetype


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator (jax.tree_util.register_pytree_with_keys_class): the method
    tree_flatten_with_keys(self) -> ([(key, child)], aux) and the classmethod
    tree_unflatten(aux, children); a tree_flatten(self) method, when defined, is the path
    without keys."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_with_keys_class: expected a class, got {cls!r}")
    for needed in ("tree_flatten_with_keys", "tree_unflatten"):
        if not hasattr(cls, needed):
            raise TypeError(f"register_pytree_with_keys_class: {cls.__name__} has no {needed}; define "
                            f"tree_flatten_with_keys(self) and the classmethod tree_unflatten(aux, children)")
    plain = (lambda obj: obj.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    return register_pytree_with_keys(cls, lambda obj: obj.tree_flatten_with_keys(),
                                     lambda aux, children: cls.tree_unflatten(aux, children), plain)


def register_static(cls: type) -> type:
    """Registers cls as a container with no children whose instances are static data, part of
    the structure (jax.tree_util.register_static): they are no leaves, so jit treats them as
    compile-time constants. Instances should be hashable and compare by value."""
    if not isinstance(cls, type):
        raise TypeError(f"register_static: expected a class, got {cls!r}")
    return register(cls, lambda obj: ((), obj), lambda obj, _: obj)


def is_tree_node(typ: type) -> bool:
    """Whether instances of typ are containers (None's type included), not leaves."""
    if not isinstance(typ, type):
        raise TypeError(f"is_tree_node: expected a type, got {type(typ).__name__}")
    return _kind_of_type(typ) != _LEAF


def _one_level(tree, fname):
    info = _children(tree)
    if info is None:
        raise ValueError(f"{fname}: can't tree-flatten type: {type(tree)} (it is a leaf; only containers have "
                         f"children)")
    kind, aux, children, keys = info
    if kind == _CUSTOM:
        aux = aux[1]
    return kind, aux, children, keys


def flatten_one_level(tree: Any) -> Tuple[Sequence[Any], Hashable]:
    """(children, aux) of a container node (jax.tree_util.flatten_one_level): the children
    in flattening order and the node's auxiliary data (a dict's keys, a NamedTuple's class, a
    registered class's aux); ValueError for a leaf."""
    kind, aux, children, _ = _one_level(tree, "flatten_one_level")
    return (tuple(children) if kind in (_TUPLE, _DICT) else list(children)), aux


def flatten_one_level_with_keys(tree: Any) -> Tuple[Sequence[Tuple[Any, Any]], Hashable]:
    """([(key entry, child)], aux) of a container node (jax.tree_util.flatten_one_level_with_keys)."""
    kind, aux, children, keys = _one_level(tree, "flatten_one_level_with_keys")
    pairs = tuple(zip(keys, children))
    return (pairs if kind in (_TUPLE, _LIST, _DICT) else list(pairs)), aux


def broadcast(prefix_tree: Any, full_tree: Any, is_leaf=None) -> Any:
    """full_tree's structure with each leaf of prefix_tree repeated over the subtree of
    full_tree it stands for (jax.tree_util.tree_broadcast): ``broadcast([1, {"a": 2}],
    [[3, 4], {"a": {"x": 5}}])`` is ``[[1, 1], {"a": {"x": 2}}]``. prefix_tree must be a
    prefix of full_tree's structure (ValueError naming the first path where it is not)."""
    def go(prefix, full, path):
        if is_leaf is not None and prefix is not None and is_leaf(prefix):
            p_info = None
        else:
            p_info = _children(prefix)
        if p_info is None:  # a leaf of the prefix: repeated over full's subtree
            return map(lambda _: prefix, full, is_leaf=is_leaf)
        f_info = None if (is_leaf is not None and full is not None and is_leaf(full)) else _children(full)
        where = keystr(path) or "the root"
        if f_info is None:
            raise ValueError(f"tree_broadcast: prefix_tree is not a prefix of full_tree: at {where} the prefix has a "
                             f"{type(prefix).__name__} node but full_tree has the leaf {full!r}")
        if type(prefix) is not type(full) or p_info[0] != f_info[0]:
            raise ValueError(f"tree_broadcast: prefix_tree is not a prefix of full_tree: at {where} the prefix has a "
                             f"{type(prefix).__name__} node and full_tree a {type(full).__name__} node")
        if len(p_info[2]) != len(f_info[2]) or _hashable_aux(p_info[1]) != _hashable_aux(f_info[1]):
            raise ValueError(f"tree_broadcast: prefix_tree is not a prefix of full_tree: at {where} the "
                             f"{type(prefix).__name__} nodes differ (keys, length or metadata: "
                             f"{list(p_info[3])} and {list(f_info[3])})")
        if p_info[0] == _NONE:
            return None
        kids = [go(p, f, path + (k,)) for p, f, k in zip(p_info[2], f_info[2], f_info[3])]
        return _build(TreeDef(f_info[0], f_info[1], tuple(_LEAF_DEF for _ in kids)), iter(kids))
    return go(prefix_tree, full_tree, ())


def reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *, identity: Any = _UNSET,
                       is_leaf=None) -> Any:
    """The leaves combined pairwise by an associative operation, in a balanced tree
    (jax.tree_util.tree_reduce_associative): the first half and the second half, each
    reduced the same way, then combined. identity is returned for a tree with no leaves
    (TypeError without it)."""
    xs = leaves(tree, is_leaf)
    if not xs:
        if identity is _UNSET:
            raise TypeError("tree_reduce_associative: the tree has no leaves; pass identity= (the operation's "
                            "identity element) to reduce an empty tree")
        return identity

    def go(lo, hi):
        if hi - lo == 1:
            return xs[lo]
        mid = lo + (hi - lo) // 2
        return operation(go(lo, mid), go(mid, hi))
    return go(0, len(xs))


def treedef_tuple(treedefs: Iterable[TreeDef]) -> TreeDef:
    """The structure of a tuple whose elements have the given structures
    (jax.tree_util.treedef_tuple)."""
    defs = tuple(treedefs)
    for i, d in enumerate(defs):
        if not isinstance(d, TreeDef):
            raise TypeError(f"treedef_tuple: element {i} is a {type(d).__name__}, not a TreeDef (make one with "
                            f"tree_structure)")
    return TreeDef(_TUPLE, None, defs)


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
tree_leaves_with_path = leaves_with_path
tree_broadcast = broadcast
tree_reduce_associative = reduce_associative


def transpose(outer_treedef: TreeDef, inner_treedef: Optional[TreeDef], pytree_to_transpose: Any) -> Any:
    """An outer structure of inner structures as an inner structure of outer ones
    (jax.tree.transpose); inner_treedef None takes the structure of the first inner tree."""
    from .tree_util import tree_transpose
    if inner_treedef is None:
        if not isinstance(outer_treedef, TreeDef):
            raise TypeError(f"qb.tree.transpose: outer_treedef must be a TreeDef, got {type(outer_treedef).__name__}")
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError("qb.tree.transpose: cannot infer inner_treedef from an empty outer structure; pass it")
        inner_treedef = structure(subtrees[0])
    return tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)
