"""Checkpoints: ``qb.save(file, tree)`` and ``qb.load(file)`` (API.md §10).

A checkpoint is one file holding one pytree of

- leaves: ``qb.Array`` (float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, bool, complex64, complex128; any shape, 0-d included), ``None``, ``bool``,
  ``int``, ``float`` (bit-exact: NaN payloads, infinities and -0.0 survive) and ``str``;
- containers: ``dict`` with ``str`` keys (insertion order is kept), ``list``, ``tuple`` and
  NamedTuple classes defined at module level (optimizer states such as
  ``qb.optim.AdamState`` included).

Other types must match exactly: subclasses (OrderedDict, IntEnum, ``numpy.float64``) and
NumPy arrays raise TypeError naming the type and the path of the leaf, because load could
not give them back. Convert first (``dict(d)``, ``float(v)``, ``qb.asarray(a)``). A
NamedTuple is stored by its module and qualified name; ``load`` rebuilds it only from a
class already defined in the loading process (it never imports a module a file names), so
import the module that defines it first, or load raises ValueError naming the class. Nesting is limited to :data:`MAX_DEPTH` containers (ValueError past
it, reference cycles included).

``load`` returns ``qb.Array`` leaves with the saved dtypes and shapes and the same container
types (tuples stay tuples). ``file`` is a path (``str`` or ``os.PathLike``) or a binary file
object. NumPy is imported by ``save``/``load`` when called, not when ``quabla`` is imported.

Format, version 1 (all integers little-endian)
----------------------------------------------
::

    offset  size  field
    0       8     magic b"QUABLA\\x00" followed by the format version byte (b"\\x01")
    8       8     uint64: H, the length of the JSON header in bytes (H <= MAX_HEADER_BYTES)
    16      4     uint32: CRC-32 (zlib.crc32) of the H header bytes
    20      4     uint32: reserved, must be 0
    24      H     JSON header, UTF-8 (written as ASCII), see below
    24+H    P     zero padding up to D = the next multiple of 64 at or after 24+H (ignored)
    D       S     data section: the raw bytes of every array, C order, little-endian
                  ('<f4', '<f8', '<i4', '<i8', and one byte 0 or 1 per bool); each array starts at a
                  multiple of 64 bytes from D, and the gaps between arrays are zero padding
                  (ignored on load). The file ends exactly at D + S.

The header is a JSON object::

    {"format": "quabla", "version": 1, "data_size": S, "tree": NODE}

and a NODE is one of::

    {"type": "array", "dtype": "float32"|"float64"|"int8"|"int16"|"int32"|"int64"|"uint8"|"uint16"|"uint32"|"bool"|"complex64"|"complex128", "shape": [n0, n1, ...],
     "offset": o, "nbytes": b, "crc32": c}      # o, b relative to D; c = zlib.crc32 of the bytes
    {"type": "none"}
    {"type": "bool", "value": true|false}
    {"type": "int", "value": <JSON integer>}
    {"type": "float", "bits": "<16 hex digits: the IEEE-754 binary64 bit pattern, big-endian>"}
    {"type": "str", "value": <JSON string>}
    {"type": "list", "items": [NODE, ...]}
    {"type": "tuple", "items": [NODE, ...]}
    {"type": "namedtuple", "class": "<module>:<qualified name>", "fields": [<JSON string>, ...],
     "items": [NODE, ...]}
    {"type": "dict", "keys": [<JSON string>, ...], "values": [NODE, ...]}

Unknown extra fields in a node are ignored; unknown node types, a different version byte or
header version are rejected.

Robustness: ``load`` checks the magic, the header length against the file size and
:data:`MAX_HEADER_BYTES`, the header CRC, then every field of every node (types, dtype
names, shapes of at most :data:`MAX_NDIM` non-negative axes, ``nbytes == prod(shape) *
itemsize``, ``offset + nbytes <= S``, arrays disjoint, ``D + S == file size``) before it
allocates any array memory, so a forged header can never make it allocate more than the
file holds; each array's CRC-32 is checked and bool bytes must be 0 or 1. Every failure is
a ValueError naming what is wrong; a missing or unreadable file raises the usual OSError.

Atomicity: ``save`` to a path writes a temporary file in the same directory (name starting
with ``.<name>.`` and ending with ``.tmp``), flushes and fsyncs it, then ``os.replace``s it
over the target (and fsyncs the directory where the platform allows), so a crash or an
exception during a save leaves the previous checkpoint intact; the temporary file is removed
when the save fails with an exception. The new file gets the previous file's permission bits,
or the usual ``0o666 & ~umask`` for a new file. Saving to a file object writes at its current
position, flushes it, and leaves it open; ``load`` from a file object reads from the current
position to the end of the stream.
"""
from __future__ import annotations

import json
import os
import stat
import struct
import sys
import tempfile
import zlib
from typing import Any, BinaryIO, Union

from ._core import Array

__all__ = ["save", "load", "FORMAT_VERSION", "MAGIC", "MAX_HEADER_BYTES", "MAX_DEPTH", "MAX_NDIM"]

FORMAT_VERSION = 1
MAGIC = b"QUABLA\x00" + bytes([FORMAT_VERSION])
MAX_HEADER_BYTES = 64 * 1024 * 1024  # about half a million array leaves; bounds JSON parsing memory
MAX_DEPTH = 128  # container nesting; keeps JSON parsing and rebuilding far from the recursion limit
MAX_NDIM = 64  # the most dimensions a quabla array can have
_MAX_EMPTY_EXTENT = 2 ** 48  # the largest product of the non-zero axes of a zero-size array load accepts
ALIGN = 64

_PREAMBLE = struct.Struct("<8sQII")  # magic, header length, header crc32, reserved
_DTYPES = {"float32": ("<f4", 4), "float64": ("<f8", 8), "bool": ("|b1", 1), "int32": ("<i4", 4),
           "int64": ("<i8", 8), "complex64": ("<c8", 8), "complex128": ("<c16", 16), "int8": ("|i1", 1),
           "int16": ("<i2", 2), "uint8": ("|u1", 1), "uint16": ("<u2", 2), "uint32": ("<u4", 4)}
_NODE_TYPES = ("array", "none", "bool", "int", "float", "str", "list", "tuple", "dict", "namedtuple")

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _type_name(x: Any) -> str:
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _path_str(path: tuple) -> str:
    text = "tree" + "".join(f"[{_short(p, 40)}]" for p in path)
    return text if len(text) <= 300 else text[:150] + "..." + text[-147:]


def _short(v: Any, limit: int = 80) -> str:
    """repr for messages: bounded in time and length whatever a forged header holds."""
    if v is None or type(v) in (bool, float) or (type(v) is int and -10 ** 30 < v < 10 ** 30):
        text = repr(v)
    elif type(v) is int:
        text = "a huge integer"
    elif type(v) is str:
        text = repr(v[:limit])
    else:
        text = f"a {type(v).__name__}"
    return text if len(text) <= limit else text[:limit] + "..."


# ----------------------------------------------------------------------------------- save

class _Encoder:
    def __init__(self, np):
        self.np = np
        self.arrays: list = []  # (offset, uint8 view of the little-endian bytes)
        self.size = 0  # end of the last array in the data section
        self.active: set = set()  # ids of the containers on the current path (cycle check)

    def node(self, x: Any, path: tuple, depth: int) -> dict:
        t = type(x)
        if x is None:
            return {"type": "none"}
        if t is bool:
            return {"type": "bool", "value": x}
        if t is int:
            return {"type": "int", "value": x}
        if t is float:
            return {"type": "float", "bits": struct.pack(">d", x).hex()}
        if t is str:
            return {"type": "str", "value": x}
        if t is Array:
            return self.array(x, path)
        named = isinstance(x, tuple) and hasattr(t, "_fields") and _is_module_level(t)
        if t is list or t is tuple or t is dict or named:
            if depth >= MAX_DEPTH:
                raise ValueError(f"qb.save: the tree nests more than {MAX_DEPTH} containers deep at "
                                 f"{_path_str(path)}")
            if id(x) in self.active:
                raise ValueError(f"qb.save: the tree contains a reference cycle at {_path_str(path)}")
            self.active.add(id(x))
            try:
                if t is dict:
                    for k in x:
                        if type(k) is not str:
                            raise TypeError(f"qb.save: dict keys must be str, got a key of type "
                                            f"{_type_name(k)} ({k!r}) at {_path_str(path)}")
                    return {"type": "dict", "keys": list(x),
                            "values": [self.node(v, path + (k,), depth + 1) for k, v in x.items()]}
                if named:
                    fields = list(t._fields)
                    items = [self.node(v, path + (f,), depth + 1) for f, v in zip(fields, x)]
                    return {"type": "namedtuple", "class": f"{t.__module__}:{t.__qualname__}",
                            "fields": fields, "items": items}
                items = [self.node(v, path + (i,), depth + 1) for i, v in enumerate(x)]
                return {"type": "list" if t is list else "tuple", "items": items}
            finally:
                self.active.discard(id(x))
        hint = ""
        if isinstance(x, (list, tuple, dict)):
            hint = (" (subclasses of dict/list/tuple are not kept by load, except NamedTuples that load can "
                    "find by module and name; convert to a plain container first, e.g. dict(d) or tuple(t))")
        elif isinstance(x, (int, float, str)):
            hint = f" (convert it to a plain {type(x).__mro__[1].__name__} first)"
        elif type(x).__module__ == "numpy" or isinstance(x, Array):
            hint = " (convert arrays with qb.asarray)"
        raise TypeError(f"qb.save: unsupported leaf of type {_type_name(x)} at {_path_str(path)}{hint}; "
                        "supported leaves are qb.Array (float/int/uint/bool/complex dtypes), None, bool, int, float "
                        "and str, inside dict (str keys), list and tuple containers")

    def array(self, x: Array, path: tuple) -> dict:
        np = self.np
        name = x.dtype.name
        if name not in _DTYPES:
            raise TypeError(f"qb.save: unsupported array dtype {name} at {_path_str(path)}; "
                            f"supported: {', '.join(_DTYPES)}")
        le, itemsize = _DTYPES[name]
        host = np.asarray(x.numpy())
        data = np.ascontiguousarray(host.astype(le, copy=False)).reshape(-1).view(np.uint8)
        shape = [int(n) for n in x.shape]
        nbytes = int(data.nbytes)
        offset = _align(self.size)
        self.arrays.append((offset, data))
        self.size = offset + nbytes
        return {"type": "array", "dtype": name, "shape": shape, "offset": offset, "nbytes": nbytes,
                "crc32": zlib.crc32(data)}


def _encode(tree: Any):
    import numpy as np
    enc = _Encoder(np)
    node = enc.node(tree, (), 0)
    header = {"format": "quabla", "version": FORMAT_VERSION, "data_size": enc.size, "tree": node}
    hbytes = json.dumps(header, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    if len(hbytes) > MAX_HEADER_BYTES:
        raise ValueError(f"qb.save: the tree description takes {len(hbytes)} bytes, more than the "
                         f"{MAX_HEADER_BYTES} a header may hold; store many small leaves as fewer arrays")
    return hbytes, enc.arrays


def _write(f, hbytes: bytes, arrays: list) -> None:
    f.write(_PREAMBLE.pack(MAGIC, len(hbytes), zlib.crc32(hbytes), 0))
    f.write(hbytes)
    head = _PREAMBLE.size + len(hbytes)
    f.write(b"\x00" * (_align(head) - head))
    pos = 0
    for offset, data in arrays:
        if offset > pos:
            f.write(b"\x00" * (offset - pos))
        f.write(memoryview(data))
        pos = offset + data.nbytes


def _umask() -> int:
    try:
        with open("/proc/self/status", "rb") as st:
            for line in st:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def save(file: PathOrFile, tree: Any) -> None:
    """Writes ``tree`` to ``file`` (a path, atomically, or a binary file object); see the module doc.

    Raises TypeError for unsupported leaves or dict keys (naming the type and the leaf's path)
    and ValueError for reference cycles or nesting deeper than MAX_DEPTH; nothing is written then.
    """
    hbytes, arrays = _encode(tree)  # validates the whole tree before touching the file
    if hasattr(file, "write"):
        _write(file, hbytes, arrays)
        if hasattr(file, "flush"):
            file.flush()
        return
    if isinstance(file, (bytes, bytearray)):
        raise TypeError("qb.save: file must be a path (str or os.PathLike) or a binary file object")
    path = os.fsdecode(os.fspath(file))
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            _write(f, hbytes, arrays)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, mode)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        try:
            dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)


# ----------------------------------------------------------------------------------- load

def _bad(msg: str) -> ValueError:
    return ValueError(f"qb.load: not a valid quabla checkpoint: {msg}")


def _read_exact(f, n: int, what: str) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    pos = 0
    readinto = getattr(f, "readinto", None)
    while pos < n:
        if readinto is not None:
            k = readinto(view[pos:])
        else:
            chunk = f.read(n - pos)
            if chunk is not None and not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError("qb.load: file must be opened in binary mode")
            k = len(chunk) if chunk else 0
            view[pos:pos + k] = chunk if k else b""
        if not k:
            raise _bad(f"the file ends inside the {what} (truncated?)")
        pos += k
    return buf


def _int_field(node: dict, key: str, path, lo: int = 0) -> int:
    v = node.get(key)
    if type(v) is not int or v < lo:
        where = "header" if path == "header" else _where(path)
        raise _bad(f"{where}: field {key!r} must be an integer >= {lo}, got {_short(v)}")
    return v


class _Decoder:
    """Checks a parsed header tree and builds it, with a placeholder for each array.

    Paths are linked pairs (parent, key) so that deep or long-keyed forged trees cost O(1)
    per node; they become text only in error messages."""

    def __init__(self, data_size: int):
        self.data_size = data_size
        self.arrays: list = []  # (offset, nbytes, dtype name, shape, crc32, path)

    def node(self, n: Any, path, depth: int):
        if type(n) is not dict:
            raise _bad(f"{_where(path)}: a node must be a JSON object, got a {type(n).__name__}")
        t = n.get("type")
        if type(t) is not str or t not in _NODE_TYPES:
            raise _bad(f"{_where(path)}: unknown node type {_short(t)}")
        if t == "none":
            return None
        if t == "bool":
            v = n.get("value")
            if type(v) is not bool:
                raise _bad(f"{_where(path)}: a bool node needs a boolean 'value'")
            return v
        if t == "int":
            v = n.get("value")
            if type(v) is not int:
                raise _bad(f"{_where(path)}: an int node needs an integer 'value'")
            return v
        if t == "float":
            b = n.get("bits")
            if type(b) is not str or len(b) != 16 or any(c not in "0123456789abcdefABCDEF" for c in b):
                raise _bad(f"{_where(path)}: a float node needs 'bits', 16 hex digits")
            return struct.unpack(">d", bytes.fromhex(b))[0]
        if t == "str":
            v = n.get("value")
            if type(v) is not str:
                raise _bad(f"{_where(path)}: a str node needs a string 'value'")
            return v
        if t == "array":
            return self.array(n, path)
        if depth >= MAX_DEPTH:
            raise _bad(f"{_where(path)}: containers nest more than {MAX_DEPTH} deep")
        if t == "dict":
            keys, values = n.get("keys"), n.get("values")
            if type(keys) is not list or type(values) is not list or len(keys) != len(values):
                raise _bad(f"{_where(path)}: a dict node needs 'keys' and 'values' lists of the same length")
            if any(type(k) is not str for k in keys):
                raise _bad(f"{_where(path)}: dict keys must be strings")
            if len(set(keys)) != len(keys):
                raise _bad(f"{_where(path)}: duplicate dict keys")
            return {k: self.node(v, (path, k), depth + 1) for k, v in zip(keys, values)}
        items = n.get("items")
        if type(items) is not list:
            raise _bad(f"{_where(path)}: a {t} node needs an 'items' list")
        if t == "namedtuple":
            cls = _namedtuple_class(n, len(items), path)
            return _Named(cls, [self.node(v, (path, f), depth + 1) for f, v in zip(cls._fields, items)])
        out = [self.node(v, (path, i), depth + 1) for i, v in enumerate(items)]
        return out if t == "list" else tuple(out)

    def array(self, n: dict, path):
        dtype = n.get("dtype")
        if type(dtype) is not str or dtype not in _DTYPES:
            raise _bad(f"{_where(path)}: unknown array dtype {_short(dtype)}")
        shape = n.get("shape")
        if type(shape) is not list or len(shape) > MAX_NDIM:
            raise _bad(f"{_where(path)}: 'shape' must be a list of at most {MAX_NDIM} integers")
        count = extent = 1  # extent: the product of the non-zero axes (bounded for empty arrays too)
        for d in shape:
            if type(d) is not int or d < 0:
                raise _bad(f"{_where(path)}: array axes must be non-negative integers, got {_short(d)}")
            count *= d
            extent *= max(d, 1)
            if count > self.data_size:  # cannot fit: stop before the product grows absurd
                raise _bad(f"{_where(path)}: a {dtype} array of shape {_short_shape(shape)} does not fit "
                           f"in the {self.data_size}-byte data section")
            if extent > _MAX_EMPTY_EXTENT:
                raise _bad(f"{_where(path)}: the zero-size array shape {_short_shape(shape)} has axes too large "
                           f"to describe an array (their product exceeds 2**48)")
        nbytes = _int_field(n, "nbytes", path)
        offset = _int_field(n, "offset", path)
        crc = _int_field(n, "crc32", path)
        if count * _DTYPES[dtype][1] != nbytes:
            raise _bad(f"{_where(path)}: nbytes {nbytes} does not match a {dtype} array of shape "
                       f"{_short_shape(shape)}")
        if offset + nbytes > self.data_size:
            raise _bad(f"{_where(path)}: the array's bytes [{offset}, {offset + nbytes}) lie past the end "
                       f"of the data section ({self.data_size} bytes)")
        # The Array is created after the whole header has been checked; hold a placeholder.
        slot = _Slot(len(self.arrays))
        self.arrays.append((offset, nbytes, dtype, tuple(shape), crc, path))
        return slot


def _where(path) -> str:
    keys = []
    while path is not None:
        path, key = path
        keys.append(key)
    return _path_str(tuple(reversed(keys)))


def _short_shape(shape: list) -> str:
    return "[" + ", ".join(_short(d, 24) for d in shape) + "]"


def _is_module_level(cls: type) -> bool:
    """Whether load can find cls again: its module's attribute at its qualified name."""
    obj = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj is cls


def _namedtuple_class(n: dict, count: int, path) -> type:
    """The NamedTuple class a node names, looked up among modules already imported (never
    importing one: a file must not choose what code runs), with the recorded fields."""
    name, fields = n.get("class"), n.get("fields")
    if type(name) is not str or ":" not in name or type(fields) is not list or len(fields) != count \
            or any(type(f) is not str for f in fields):
        raise _bad(f"{_where(path)}: a namedtuple node needs 'class' (module:name) and one 'fields' name per item")
    module, _, qualname = name.partition(":")
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    if not (isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")):
        raise _bad(f"{_where(path)}: the checkpoint holds a NamedTuple {_short(name, 120)} that is not defined "
                   f"in this process; import the module that defines it before qb.load")
    if list(obj._fields) != fields:
        raise _bad(f"{_where(path)}: NamedTuple {_short(name, 120)} has fields {list(obj._fields)} here but "
                   f"{_short(fields, 120)} in the checkpoint")
    return obj


class _Named:
    """A NamedTuple to build once its array slots are filled."""
    __slots__ = ("cls", "items")

    def __init__(self, cls: type, items: list):
        self.cls, self.items = cls, items


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _fill(tree: Any, values: list) -> Any:
    if type(tree) is _Slot:
        return values[tree.index]
    if type(tree) is dict:
        return {k: _fill(v, values) for k, v in tree.items()}
    if type(tree) is list:
        return [_fill(v, values) for v in tree]
    if type(tree) is tuple:
        return tuple(_fill(v, values) for v in tree)
    if type(tree) is _Named:
        return tree.cls(*[_fill(v, values) for v in tree.items])
    return tree


def _stream_size(f):
    """(file object positioned at the start, byte count from there to the end)."""
    try:
        seekable = f.seekable() if hasattr(f, "seekable") else False
    except (OSError, ValueError):
        seekable = False
    if seekable:
        start = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(start)
        return f, start, end - start
    import io
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("qb.load: file must be opened in binary mode")
    return io.BytesIO(data), 0, len(data)


def _load_from(f, start: int, size: int):
    if size < _PREAMBLE.size:
        if size == 0:
            raise _bad("the file is empty")
        head = bytes(_read_exact(f, size, "preamble"))
        if not MAGIC.startswith(head[:len(MAGIC)]):
            raise _bad("wrong magic bytes (not a quabla checkpoint)")
        raise _bad(f"the file is only {size} bytes long (truncated?)")
    magic, hlen, hcrc, reserved = _PREAMBLE.unpack(bytes(_read_exact(f, _PREAMBLE.size, "preamble")))
    if magic != MAGIC:
        if magic[:7] == MAGIC[:7]:
            raise _bad(f"format version {magic[7]} is not supported (this quabla reads version "
                       f"{FORMAT_VERSION}; a newer quabla may have written it)")
        raise _bad("wrong magic bytes (not a quabla checkpoint)")
    if reserved != 0:
        raise _bad("reserved preamble field is not zero (corrupted?)")
    if hlen > MAX_HEADER_BYTES:
        raise _bad(f"header length {hlen} exceeds the limit of {MAX_HEADER_BYTES} bytes (corrupted?)")
    if _PREAMBLE.size + hlen > size:
        raise _bad(f"header length {hlen} runs past the end of the {size}-byte file (truncated?)")
    hbytes = bytes(_read_exact(f, hlen, "header"))
    if zlib.crc32(hbytes) != hcrc:
        raise _bad("header checksum mismatch (corrupted?)")
    try:
        header = json.loads(hbytes.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        raise _bad("the JSON header nests too deeply") from None
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _bad(f"the header is not valid JSON: {e}") from None
    if type(header) is not dict:
        raise _bad("the header must be a JSON object")
    if header.get("format") != "quabla":
        raise _bad("the header's 'format' field is not \"quabla\"")
    version = header.get("version")
    if version != FORMAT_VERSION or type(version) is not int:
        raise _bad(f"header version {version!r:.40} is not supported (this quabla reads version "
                   f"{FORMAT_VERSION})")
    data_size = _int_field(header, "data_size", "header")
    data_start = _align(_PREAMBLE.size + hlen)
    if data_start + data_size != size:
        raise _bad(f"the file is {size} bytes long but its header describes {data_start + data_size} "
                   "(truncated or trailing data?)")
    if "tree" not in header:
        raise _bad("the header has no 'tree'")
    dec = _Decoder(data_size)
    try:
        skeleton = dec.node(header["tree"], None, 0)
    except RecursionError:
        raise _bad("the tree nests too deeply") from None
    if not dec.arrays:
        return skeleton
    import numpy as np
    from ._core import array as _qb_array
    values: list = [None] * len(dec.arrays)
    order = sorted(range(len(dec.arrays)), key=lambda i: dec.arrays[i][0])
    end = 0
    for i in order:  # disjoint arrays: together they never claim more memory than the file holds
        offset, nbytes, *_, path = dec.arrays[i]
        if nbytes == 0:  # a zero-size array claims no bytes
            continue
        if offset < end:
            raise _bad(f"the array at {_where(path)} overlaps another array's bytes")
        end = offset + nbytes
    for i in order:
        offset, nbytes, dtype, shape, crc, path = dec.arrays[i]
        where = _where(path)
        f.seek(start + data_start + offset)
        buf = _read_exact(f, nbytes, f"array at {where}")
        if zlib.crc32(buf) != crc:
            raise _bad(f"checksum mismatch in the array at {where} (corrupted?)")
        raw = np.frombuffer(buf, dtype=np.uint8)
        if dtype == "bool" and raw.size and int(raw.max()) > 1:
            raise _bad(f"the bool array at {where} holds bytes other than 0 and 1")
        le = _DTYPES[dtype][0]
        host = raw.view(le).astype(np.dtype(le).newbyteorder("="), copy=False).reshape(shape)
        values[i] = _qb_array(host)
    return _fill(skeleton, values)


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def load(file: PathOrFile) -> Any:
    """Reads a pytree written by :func:`save` from ``file`` (a path or a binary file object).

    Raises ValueError, naming the problem, for anything that is not a complete, intact
    checkpoint of a supported version (truncated, corrupted, forged); OSError if a path cannot
    be opened.
    """
    if hasattr(file, "read"):
        f, start, size = _stream_size(file)
        return _load_from(f, start, size)
    if isinstance(file, (bytes, bytearray, memoryview)):
        raise TypeError("qb.load: file must be a path (str or os.PathLike) or a binary file object; "
                        "wrap bytes in io.BytesIO(data)")
    with open(os.fspath(file), "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            # A device or pipe has no size to check the header against (/dev/urandom would be
            # read forever): open it yourself and pass the file object to read a stream.
            raise ValueError(f"qb.load: {os.fspath(file)!r} is not a regular file; a checkpoint is a file "
                             f"written by qb.save (to read from a stream, pass an open binary file object)")
        return _load_from(f, 0, st.st_size)
