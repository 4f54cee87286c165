"""Read what a pickle holds from its opcodes alone, never running it.

`pickle.load` (and so `torch.load`) calls whatever functions a pickle names: loading an untrusted
checkpoint runs its code. Here `pickletools.genops` only decodes the opcodes, and a small stack
machine rebuilds plain containers (dicts, lists, tuples, numbers, strings) while every call the
pickle asks for becomes an inert `Call` record. Only the shapes torch itself writes are
understood: `_rebuild_tensor_v2` over a persistent `('storage', type, key, location, numel)`
id, parameters, and `OrderedDict`.

File contents are hostile, so the work is bounded: at most `MAX_OPCODES` opcodes are followed
and nothing is nested more than `MAX_DEPTH` deep (a pickle can nest a tuple two million deep in
two megabytes, and hashing that crashes the interpreter). Dict keys are kept only when they are
plain values (str, int, ...): hashing or printing a container key could take exponential time
on shared references. Hitting a bound makes the pickle unreadable, never an exception.
"""

from __future__ import annotations

import pickletools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

STORAGE_DTYPES = {
    "FloatStorage": "F32", "DoubleStorage": "F64", "HalfStorage": "F16",
    "BFloat16Storage": "BF16", "LongStorage": "I64", "IntStorage": "I32",
    "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8", "BoolStorage": "BOOL",
    "ComplexFloatStorage": "C64", "ComplexDoubleStorage": "C128",
    "Float8_e4m3fnStorage": "F8_E4M3", "Float8_e5m2Storage": "F8_E5M2", "UntypedStorage": "U8",
}  # fmt: skip
SAFE_GLOBALS = frozenset({"collections.OrderedDict", "builtins.set", "builtins.frozenset"})
TENSOR_BUILDERS = frozenset({"torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor"})
PARAM_BUILDERS = frozenset(
    {"torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state"}
)
T = TypeVar("T")
MAX_STRINGS = 10_000
MAX_OPCODES = 1_000_000
"""Opcodes followed per pickle; a real one needs about 30 per tensor (see the README)."""
MAX_DEPTH = 100
"""Containers nested deeper than this make the pickle unreadable; torch writes fewer than 10."""
ATOMS = (str, int, float, bytes, bool, type(None))


@dataclass(frozen=True)
class Global:
    """A name the pickle refers to (`module.qualname`); never imported."""

    name: str


@dataclass(eq=False)
class Call:
    """A call the pickle asks for, recorded instead of made."""

    func: object
    args: object


@dataclass(frozen=True)
class StorageRef:
    """A tensor storage: `data/<key>` in the zip, its dtype and element count."""

    key: str
    dtype: str
    numel: int


@dataclass(eq=False)
class TensorRef:
    storage: StorageRef | None
    shape: tuple[int, ...]


@dataclass
class PickleSummary:
    """The rebuilt top object (None if the opcodes could not be followed) and what was seen."""

    top: object = None
    readable: bool = False
    globals: set[str] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)
    problem: str | None = None

    @property
    def unsafe_globals(self) -> list[str]:
        """Names outside torch and a few containers: loading would import and call them."""
        return sorted(g for g in self.globals if not _is_safe(g))


def _is_safe(name: str) -> bool:
    return name.startswith("torch.") or name in SAFE_GLOBALS


class _Unsupported(Exception):
    pass


class _OverBound(Exception):
    """A bound on depth or work was hit: the pickle is not followed further."""


class _Machine:
    """The stack machine; one instance per pickle."""

    def __init__(self, summary: PickleSummary) -> None:
        self.summary = summary
        self.stack: list[object] = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.depths: dict[int, tuple[object, int]] = {}
        """id -> (container, its depth); holding the container keeps its id from being reused."""
        self.nested: set[int] = set()
        """Ids of containers placed inside another: they may not grow deeper any more."""

    def depth(self, item: object) -> int:
        found = self.depths.get(id(item))
        return 0 if found is None else found[1]

    def _items_depth(self, items: Iterable[object]) -> int:
        """1 + the deepest of `items`, each now marked as nested."""
        deepest = 0
        for item in items:
            found = self.depths.get(id(item))
            if found is not None:
                self.nested.add(id(item))
                deepest = max(deepest, found[1])
        return deepest + 1

    def made(self, container: T, items: Iterable[object] = ()) -> T:
        """Record a new container holding `items`."""
        self._record(container, self._items_depth(items))
        return container

    def grow(self, container: object, items: Iterable[object]) -> None:
        """`items` were added to `container`; a nested one may not get deeper (no cycles)."""
        depth = self._items_depth(items)
        if depth <= self.depth(container):
            return
        if id(container) in self.nested:
            raise _OverBound("a container changed after it was nested (a cycle)")
        self._record(container, depth)

    def _record(self, container: object, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _OverBound(f"containers are nested more than {MAX_DEPTH} deep")
        self.depths[id(container)] = (container, depth)

    def pop_mark(self) -> list[object]:
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def pop_mark_below(self) -> list[object]:
        """For DICT: the marked items sit under the new dict just pushed."""
        new = self.stack.pop()
        items = self.pop_mark()
        self.stack.append(new)
        return items

    def target_and_items(self) -> tuple[object, list[object]]:
        items = self.pop_mark()
        return self.stack[-1], items

    def push_global(self, name: str) -> None:
        self.summary.globals.add(name)
        self.stack.append(Global(name))

    def call(self, func: object, args: object) -> object:
        name = func.name if isinstance(func, Global) else ""
        items = args if isinstance(args, tuple) else ()
        if name == "collections.OrderedDict":
            return self.made({})
        if name in TENSOR_BUILDERS and len(items) >= 3:
            storage = items[0] if isinstance(items[0], StorageRef) else None
            shape = items[2] if isinstance(items[2], tuple) else ()
            return self.made(TensorRef(storage, tuple(d for d in shape if isinstance(d, int))))
        if name in PARAM_BUILDERS and items and isinstance(items[0], TensorRef):
            return items[0]
        return self.made(Call(func, args), (func, args))

    def persistent(self, pid: object) -> object:
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            kind = pid[1].name.rsplit(".", 1)[-1] if isinstance(pid[1], Global) else ""
            numel = pid[4] if isinstance(pid[4], int) else 0
            key = pid[2] if isinstance(pid[2], (str, int)) else "?"
            return StorageRef(str(key), STORAGE_DTYPES.get(kind, kind or "?"), numel)
        return self.made(Call(Global("persistent_load"), pid), (pid,))


def _set_items(m: _Machine, target: object, items: list[object]) -> None:
    """Only plain keys are kept: a container key could cost exponential time to hash."""
    if isinstance(target, dict):
        for key, value in zip(items[::2], items[1::2], strict=False):
            if isinstance(key, ATOMS):
                m.grow(target, (value,))
                target[key] = value


def _append(m: _Machine, target: object, items: list[object]) -> None:
    if isinstance(target, list):
        m.grow(target, items)
        target.extend(items)


Op = Callable[[_Machine, object], object]


def _push_arg(m: _Machine, arg: object) -> None:
    m.stack.append(arg)
    if isinstance(arg, str) and len(m.summary.strings) < MAX_STRINGS and len(arg) < 200:
        m.summary.strings.add(arg)


def _tuple_n(n: int) -> Op:
    def op(m: _Machine, arg: object) -> None:
        if len(m.stack) < n:
            raise IndexError("stack underflow")
        items = m.stack[len(m.stack) - n :] if n else []
        del m.stack[len(m.stack) - n :]
        m.stack.append(m.made(tuple(items), items))

    return op


def _setitem(m: _Machine, arg: object) -> None:
    value, key = m.stack.pop(), m.stack.pop()
    _set_items(m, m.stack[-1], [key, value])


def _global(m: _Machine, arg: object) -> None:
    module, _, name = str(arg).partition(" ")
    m.push_global(f"{module}.{name}")


def _stack_global(m: _Machine, arg: object) -> None:
    name, module = m.stack.pop(), m.stack.pop()
    if not isinstance(name, str) or not isinstance(module, str):
        raise TypeError("STACK_GLOBAL needs two strings")
    m.push_global(f"{module}.{name}")


def _reduce(m: _Machine, arg: object) -> None:
    args, func = m.stack.pop(), m.stack.pop()
    m.stack.append(m.call(func, args))


def _newobj_ex(m: _Machine, arg: object) -> None:
    kwargs, args, cls = m.stack.pop(), m.stack.pop(), m.stack.pop()
    m.stack.append(m.made(Call(cls, (args, kwargs)), (cls, args, kwargs)))


def _inst(m: _Machine, arg: object) -> None:
    items = m.pop_mark()
    module, _, name = str(arg).partition(" ")
    m.summary.globals.add(f"{module}.{name}")
    m.stack.append(m.made(Call(Global(f"{module}.{name}"), tuple(items)), items))


def _obj(m: _Machine, arg: object) -> None:
    items = m.pop_mark()
    m.stack.append(m.made(Call(items[0], tuple(items[1:])), items))


def _made_tuple(m: _Machine, items: list[object]) -> tuple[object, ...]:
    return m.made(tuple(items), items)


def _made_list(m: _Machine, items: list[object]) -> list[object]:
    return m.made(items, items)


def _memoize(m: _Machine, arg: object) -> None:
    m.memo[len(m.memo)] = m.stack[-1]


def _put(m: _Machine, arg: object) -> None:
    m.memo[int(arg)] = m.stack[-1]  # type: ignore[call-overload]


def _get(m: _Machine, arg: object) -> None:
    m.stack.append(m.memo[int(arg)])  # type: ignore[call-overload]


def _dict(m: _Machine, arg: object) -> None:
    m.stack.append(m.made({}))
    _set_items(m, m.stack[-1], m.pop_mark_below())


def _pop_mark(m: _Machine, arg: object) -> None:
    m.pop_mark()


OPS: dict[str, Op] = {
    "PROTO": lambda m, a: None,
    "FRAME": lambda m, a: None,
    "STOP": lambda m, a: None,
    "MARK": lambda m, a: m.marks.append(len(m.stack)),
    "NONE": lambda m, a: m.stack.append(None),
    "NEWTRUE": lambda m, a: m.stack.append(True),
    "NEWFALSE": lambda m, a: m.stack.append(False),
    "EMPTY_DICT": lambda m, a: m.stack.append(m.made({})),
    "EMPTY_LIST": lambda m, a: m.stack.append(m.made([])),
    "EMPTY_SET": lambda m, a: m.stack.append(m.made([])),
    "EMPTY_TUPLE": _tuple_n(0),
    "TUPLE1": _tuple_n(1),
    "TUPLE2": _tuple_n(2),
    "TUPLE3": _tuple_n(3),
    "TUPLE": lambda m, a: m.stack.append(_made_tuple(m, m.pop_mark())),
    "LIST": lambda m, a: m.stack.append(_made_list(m, m.pop_mark())),
    "FROZENSET": lambda m, a: m.stack.append(_made_list(m, m.pop_mark())),
    "DICT": _dict,
    "SETITEM": _setitem,
    "SETITEMS": lambda m, a: _set_items(m, *m.target_and_items()),
    "APPEND": lambda m, a: _append(m, m.stack[-2], [m.stack.pop()]),
    "APPENDS": lambda m, a: _append(m, *m.target_and_items()),
    "ADDITEMS": lambda m, a: _append(m, *m.target_and_items()),
    "GLOBAL": _global,
    "STACK_GLOBAL": _stack_global,
    "REDUCE": _reduce,
    "NEWOBJ": _reduce,
    "NEWOBJ_EX": _newobj_ex,
    "INST": _inst,
    "OBJ": _obj,
    "BUILD": lambda m, a: m.stack.pop(),
    "BINPERSID": lambda m, a: m.stack.append(m.persistent(m.stack.pop())),
    "PERSID": lambda m, a: m.stack.append(m.persistent(a)),
    "MEMOIZE": _memoize,
    "PUT": _put,
    "BINPUT": _put,
    "LONG_BINPUT": _put,
    "GET": _get,
    "BINGET": _get,
    "LONG_BINGET": _get,
    "POP": lambda m, a: m.stack.pop(),
    "POP_MARK": _pop_mark,
    "DUP": lambda m, a: m.stack.append(m.stack[-1]),
}
ARG_OPS = (
    *("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"),
    *("STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE"),
    *("BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"),
)
OPS.update(dict.fromkeys(ARG_OPS, _push_arg))


def scan_pickle(data: bytes) -> PickleSummary:
    """Decode `data` opcode by opcode; never imports or calls anything it names."""
    summary = PickleSummary()
    machine = _Machine(summary)
    try:
        for count, (opcode, arg, _pos) in enumerate(pickletools.genops(data)):
            if count >= MAX_OPCODES:
                raise _OverBound(f"it has more than {MAX_OPCODES:,} opcodes")
            handler = OPS.get(opcode.name)
            if handler is None:
                raise _Unsupported(opcode.name)
            handler(machine, arg)
            if opcode.name == "STOP":
                summary.top = machine.stack[-1] if machine.stack else None
                summary.readable = True
                return summary
    except _Unsupported as exc:
        summary.problem = f"pickle opcode {exc} is not followed"
    except _OverBound as exc:
        summary.problem = f"the pickle is not followed: {exc}"
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        summary.problem = f"the pickle is damaged or truncated ({exc})"
    if summary.problem is None:
        summary.problem = "the pickle ends before its STOP opcode (truncated)"
    return summary
