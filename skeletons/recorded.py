"""The repository model as planning reads it, every answer written down.

The plans of a repository's Cells (constructor arguments, inputs) are decided by what the
planner reads of the repository: the model's tables and queries, the text of the files it
re-parses, and a few tables built from every file (argparse options, the values the code
sets field by field, the calls by callee). :class:`Recorder` hands the planner a stand-in
for the model whose every read is kept, as the path from the model to what was read and a
digest of the answer; :meth:`Recorder.same_answers` asks the same questions of another
scan's model. When all answers are the same, the plans are too
(:mod:`msready.skeletons.plan_cache`): a file added that nothing reads changes none.

A digest is of :func:`canonical` text, the same in every process for equal values. A read
whose arguments cannot be kept (a syntax tree) makes the record unusable, never wrong.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import inspect
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from msready.analyzer.facts import PackedList

# A read: how it was asked ("attr", "call", "get", "in", "whole", or a kind of the
# planner's own), the path of attribute names from the model, the arguments.
Key = tuple[str, tuple[str, ...], tuple[Any, ...]]
_PLAIN = (str, int, float, bool, type(None))


class Unrecordable(Exception):
    """A value without a text that is the same in every process."""


Short = Callable[[object], "str | None"]


def canonical(value: object, seen: dict[int, tuple[object, str]] | None = None,
              short: Short | None = None) -> str:
    """A text for ``value`` that is the same in every process for equal values: fields of
    records in order, mappings and sets sorted (a set's order changes with the hash seed
    of the process). Packed lists (a file's findings, which planning and translating never
    read) are left out. ``seen`` keeps the texts of records already written, by identity:
    a file's facts come back in many answers. ``short`` gives the text of a value it
    knows a shorter way to name (a file's facts, by the file's path and text)."""
    if isinstance(value, (*_PLAIN, bytes)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if seen is not None and id(value) in seen:
        return seen[id(value)][1]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        text = (short(value) if short is not None else None) or \
            f"{type(value).__name__}(" + ",".join(
                f"{f.name}={canonical(getattr(value, f.name), seen, short)}"
                for f in dataclasses.fields(value)
                if not isinstance(getattr(value, f.name), PackedList)) + ")"
        if seen is not None:
            seen[id(value)] = (value, text)  # held, so its id is not reused
        return text
    if isinstance(value, Mapping):
        return "{" + ",".join(sorted(f"{canonical(k, seen, short)}:{canonical(v, seen, short)}"
                                     for k, v in value.items())) + "}"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(canonical(v, seen, short) for v in value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v, seen, short) for v in value) + "]"
    text = repr(value)
    if " at 0x" in text or hasattr(value, "__iter__"):
        raise Unrecordable(type(value).__name__)
    return text


class Recorder:
    """The reads of one planning: each key once, with the digest of its answer."""

    def __init__(self, short: Short | None = None) -> None:
        self.short = short  # see canonical
        self.reads: dict[Key, str] = {}
        self._seen: dict[int, tuple[object, str]] = {}
        self.broken: str | None = None  # why the record cannot be used, once it cannot

    def note(self, key: Key, answer: object) -> None:
        """Keeps ``answer`` as what ``key`` read (the first time it is read)."""
        try:
            if self.broken or key in self.reads:
                return
        except TypeError:  # an argument that is no key (a list): the record is unusable
            self.broken = f"{'.'.join(key[1])} was asked with an unhashable argument"
            return
        try:
            text = canonical(answer, self._seen, self.short)
        except Unrecordable as exc:
            self.broken = f"{'.'.join(key[1])} gave a {exc}"
            return
        self.reads[key] = hashlib.sha256(text.encode()).hexdigest()[:24]

    def proxy(self, target: object) -> Any:
        """``target`` (the repository model) with every read through it kept."""
        return _Proxy(target, self, ())

    def same_answers(self, root: object, others: Callable[[str, tuple[str, ...],
                                                           tuple[Any, ...]], object],
                     reads: dict[Key, str]) -> bool:
        """Whether each of ``reads`` gets the same answer from the model ``root``; a read
        of a kind of the planner's own is answered by ``others(kind, path, args)``."""
        seen: dict[int, tuple[object, str]] = {}
        for (kind, path, args), digest in reads.items():
            try:
                answer = _ask(root, kind, path, args) if kind in _MODEL_KINDS \
                    else others(kind, path, args)
                text = canonical(answer, seen, self.short)
            except Exception:  # a question the new model cannot answer: not the same
                return False
            if hashlib.sha256(text.encode()).hexdigest()[:24] != digest:
                return False
        return True


_ABSENT = object()  # a key a table does not hold
_ABSENT_TEXT = "\0absent"  # what a read of a key a table does not hold is kept as


def _absent(answer: object) -> object:
    return _ABSENT_TEXT if answer is _ABSENT else answer

_MODEL_KINDS = frozenset({"attr", "call", "get", "in", "whole"})


def _ask(root: object, kind: str, path: tuple[str, ...], args: tuple[Any, ...]) -> object:
    """The answer the model ``root`` gives to a read."""
    target = root
    for name in path:
        target = getattr(target, name)
    if kind == "call":
        answer = target(*args)  # type: ignore[operator]
        return tuple(answer) if isinstance(answer, Iterator) else answer
    if kind == "get":
        return _absent(target.get(args[0], _ABSENT))  # type: ignore[attr-defined]
    if kind == "in":
        return args[0] in target  # type: ignore[operator]
    return target


class _Proxy:
    """An object of the model (the model itself, its value analysis) whose reads are kept."""

    __slots__ = ("_path", "_recorder", "_target")

    def __init__(self, target: object, recorder: Recorder, path: tuple[str, ...]) -> None:
        self._target = target
        self._recorder = recorder
        self._path = path

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        path = (*self._path, name)
        recorder = self._recorder
        if isinstance(value, Mapping):
            return _MappingProxy(value, recorder, path)
        if isinstance(value, (set, frozenset)):
            return _SetProxy(value, recorder, path)
        if inspect.ismethod(value):
            return _Call(value, recorder, path)
        if isinstance(value, (*_PLAIN, list, tuple)):
            recorder.note(("attr", path, ()), value)
            return value
        return _Proxy(value, recorder, path)


class _Call:
    """A method of the model: each call's arguments and answer are kept."""

    __slots__ = ("_method", "_path", "_recorder")

    def __init__(self, method: Callable[..., Any], recorder: Recorder,
                 path: tuple[str, ...]) -> None:
        self._method = method
        self._recorder = recorder
        self._path = path

    def __call__(self, *args: Any) -> Any:
        answer = self._method(*args)
        if isinstance(answer, Iterator):
            answer = tuple(answer)
            self._recorder.note(("call", self._path, args), answer)
            return iter(answer)
        self._recorder.note(("call", self._path, args), answer)
        return answer


class _Collection:
    """A table or set of the model: a membership test keeps its answer; a walk (its
    items, its length) keeps the whole."""

    def __init__(self, target: Any, recorder: Recorder, path: tuple[str, ...]) -> None:
        self._target = target
        self._recorder = recorder
        self._path = path

    def _whole(self) -> Any:
        self._recorder.note(("whole", self._path, ()), self._target)
        return self._target

    def __contains__(self, key: object) -> bool:
        answer = key in self._target
        self._recorder.note(("in", self._path, (key,)), answer)
        return answer

    def __iter__(self) -> Iterator[Any]:
        return iter(self._whole())

    def __len__(self) -> int:
        return len(self._whole())


class _SetProxy(_Collection):
    """A set of the model (``module_classes``)."""


class _MappingProxy(_Collection, Mapping[Any, Any]):
    """A table of the model: a lookup keeps its key and answer."""

    def get(self, key: Any, default: Any = None) -> Any:
        answer = self._target.get(key, _ABSENT)
        self._recorder.note(("get", self._path, (key,)), _absent(answer))
        return default if answer is _ABSENT else answer

    def __getitem__(self, key: Any) -> Any:
        answer = self.get(key, _ABSENT)
        if answer is _ABSENT:
            raise KeyError(key)
        return answer

    def keys(self) -> KeysView[Any]:
        return self._whole().keys()  # type: ignore[no-any-return]

    def values(self) -> ValuesView[Any]:
        return self._whole().values()  # type: ignore[no-any-return]

    def items(self) -> ItemsView[Any, Any]:
        return self._whole().items()  # type: ignore[no-any-return]
