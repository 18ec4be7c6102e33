"""What one file contributes to the repository model.

These records are plain, frozen and picklable: the process pool sends them back from
workers, and the cache stores them per file content hash.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar

from msready.analyzer.checklist_source import SourceFact
from msready.analyzer.findings import (
    Category,
    Confidence,
    Finding,
    Location,
    Scope,
    Severity,
    Span,
    compact_reduce,
)
from msready.analyzer.values import Expr, Truth

T = TypeVar("T")


class CallKind(StrEnum):
    """How a call's target was found."""

    NAME = "name"  # a name or attribute chain resolved through imports / definitions
    TENSOR_METHOD = "tensor-method"  # a torch.Tensor method on some expression
    SELF_METHOD = "self-method"  # self.name(...): a method of the enclosing class
    SELF_ATTR = "self-attr"  # self.attr(...) or an element of a container attribute
    SUPER = "super"  # super().name(...)
    APPLY = "apply"  # SomeFunction.apply(...) of an autograd.Function
    INSTANCE = "instance"  # net(x) where net = SomeClass(...) in the same function
    VALUE = "value"  # a call of what a value holds: ``net_d(x)``, ``obj.run(x)``; the
    # value analysis resolves it (``receiver`` / ``recv`` say on what)


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument at a call site: its keyword (None when positional) and its text.

    ``literal`` is the Python literal's value when the argument is a plain constant
    (number, string, bool, None, or a tuple of those), else None with ``is_literal``
    False.
    """

    __reduce__ = compact_reduce

    keyword: str | None
    text: str
    literal: object = None
    is_literal: bool = False
    star: str = ""  # "*" or "**" for unpacked arguments


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call in the source with its target resolved as far as one file allows.

    ``target`` is a dotted name for ``NAME`` calls (``torch.nn.Conv2d``,
    ``pkg.utils.helper``), the method name for ``SELF_METHOD`` / ``SUPER``, the
    attribute for ``SELF_ATTR``, the qualified class for ``APPLY`` and ``INSTANCE``, and
    ``torch.Tensor.<method>`` for ``TENSOR_METHOD``.
    """

    __reduce__ = compact_reduce

    caller: str
    target: str
    kind: CallKind
    span: Span
    args: tuple[Arg, ...] = ()
    confidence: str = "high"
    cell: int | None = None
    receiver: str = ""  # the source text of the object a method is called on, if short
    # The value analysis: what the receiver (or, for a call of a name, the callee) holds,
    # and each argument's value in source order; empty when no repository code can run.
    recv: Expr | None = None
    arg_values: tuple[Expr, ...] = ()

    def with_values(self, recv: Expr | None, arg_values: tuple[Expr, ...]) -> CallSite:
        """The call with the values of its receiver and arguments (``dataclasses.replace``
        written out: it is made for a third of a scan's calls, and ``replace`` reads the
        class's fields each time)."""
        return CallSite(self.caller, self.target, self.kind, self.span, self.args,
                        self.confidence, self.cell, self.receiver, recv, arg_values)

    @property
    def key(self) -> tuple[int, int, int, int, int | None]:
        """Identifies the call inside its file (what ``("c", path, key)`` refers to)."""
        span = self.span
        return (span.line, span.column, span.end_line, span.end_column, self.cell)


@dataclass(frozen=True, slots=True)
class Reference:
    """A torch name used as a value rather than called (``act=nn.ReLU``, ``torch.float32``)."""

    __reduce__ = compact_reduce

    target: str
    span: Span
    cell: int | None = None


@dataclass(frozen=True, slots=True)
class FunctionFact:
    """A function or method definition."""

    __reduce__ = compact_reduce

    qualname: str
    name: str
    class_qualname: str | None
    span: Span
    params: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    cell: int | None = None
    # The value analysis: what the function returns and its parameters' defaults.
    returns: Expr | None = None
    defaults: tuple[tuple[str, Expr], ...] = ()
    is_static: bool = False
    locals: tuple[Expr, ...] = ()  # what ``("l", path, function, index)`` refers to
    typed: tuple[str, ...] = ()  # parameters annotated with a type that is not a tensor


@dataclass(frozen=True, slots=True)
class ClassFact:
    """A class definition with its bases and the classes its attributes hold.

    ``bases`` are qualified names as far as the file resolves them. ``attributes`` maps
    ``self.<attr>`` to the qualified classes assigned to it (container constructors such
    as ``nn.ModuleList([Block(...)])`` contribute the classes they hold).
    """

    __reduce__ = compact_reduce

    qualname: str
    name: str
    span: Span
    bases: tuple[str, ...] = ()
    attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    methods: tuple[str, ...] = ()
    cell: int | None = None
    # ``self.<attr> = value`` in any method, one entry per assignment.
    attr_values: tuple[tuple[str, Expr], ...] = ()


class Pending(NamedTuple):
    """A finding whose condition depends on values from other functions or files: the
    repository solver decides it (:func:`msready.analyzer.values.decide`).

    A large repository has tens of thousands of these, and the solver keeps a few
    hundred. So they travel as plain tuples (the finding's fields, its location laid
    flat), which pickle and load without running any constructor, and only the ones
    kept become a :class:`Finding` (:attr:`finding`).
    """

    condition: Truth
    rule: str
    rule_name: str
    category: Category
    severity: Severity
    confidence: Confidence
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    cell: int | None
    symbol: str
    message: str
    suggestion: str
    function: str | None
    scope: Scope

    @classmethod
    def of(cls, finding: Finding, condition: Truth) -> Pending:
        """The finding ``finding``, waiting for ``condition``."""
        loc = finding.location
        return cls(condition, finding.rule, finding.rule_name, finding.category,
                   finding.severity, finding.confidence, loc.path, loc.line, loc.column,
                   loc.end_line, loc.end_column, loc.cell, finding.symbol, finding.message,
                   finding.suggestion, finding.function, finding.scope)

    @property
    def finding(self) -> Finding:
        """The finding, as reported once its condition holds."""
        return Finding(self.rule, self.rule_name, self.category, self.severity,
                       self.confidence, Location(self.path, self.line, self.column,
                                                 self.end_line, self.end_column, self.cell),
                       self.symbol, self.message, self.suggestion, function=self.function,
                       scope=self.scope)


class PackedList(Generic[T]):
    """A list of records that the scan reads once, after every file is in (a file's
    findings, and those waiting for the repository solver).

    The worker that walks the file appends to it as to a list. Pickled (sent to the main
    process, written to the cache) it becomes one blob of bytes, and stays one until it is
    read: the main process holds every file's findings as bytes, a fifth of their size as
    objects, while it gathers the files and builds the repository model. Each iteration
    of a packed list loads its records afresh and keeps none of them.
    """

    __slots__ = ("_blob", "_items")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] | None = list(items)
        self._blob = b""

    @classmethod
    def packed(cls, blob: bytes) -> PackedList[T]:
        """A list from the blob :meth:`pack` made."""
        packed: PackedList[T] = cls()
        packed._items, packed._blob = None, blob
        return packed

    def pack(self) -> bytes:
        """The records as one blob (``b""`` for none)."""
        if self._items is None:
            return self._blob
        return pickle.dumps(self._items, protocol=pickle.HIGHEST_PROTOCOL) if self._items else b""

    def _list(self) -> list[T]:
        if self._items is not None:
            return self._items
        items: list[T] = pickle.loads(self._blob) if self._blob else []
        return items

    def append(self, item: T) -> None:
        """Add a record (a packed list is unpacked first)."""
        self._items = self._list()
        self._blob = b""
        self._items.append(item)

    def __iter__(self) -> Iterator[T]:
        return iter(self._list())

    def __len__(self) -> int:
        return len(self._list())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackedList) and self._list() == other._list()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedList({self._list()!r})"

    def __reduce__(self) -> tuple[object, tuple[bytes]]:
        return _unpickle_packed, (self.pack(),)


def _unpickle_packed(blob: bytes) -> PackedList[object]:
    return PackedList.packed(blob)


@dataclass(slots=True)
class FileResult:
    """Everything the scan keeps of one file."""

    path: str
    module: str
    is_package: bool
    status: str  # "parsed" or "failed"
    lines: int = 0
    functions: list[FunctionFact] = field(default_factory=list)
    classes: list[ClassFact] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)
    findings: PackedList[Finding] = field(default_factory=PackedList)
    suppressions: dict[tuple[int | None, int], tuple[str, ...]] = field(default_factory=dict)
    imports_torch: bool = False
    # argparse options, training constants and such, read for the checklist
    source_facts: list[SourceFact] = field(default_factory=list)
    # The value analysis: module-level names, command-line options (dest -> default and
    # line) and findings that wait for the repository solver.
    globals: dict[str, Expr] = field(default_factory=dict)
    options: dict[str, tuple[Expr, int]] = field(default_factory=dict)
    pending: PackedList[Pending] = field(default_factory=PackedList)
    # The file builds a sparse tensor (a sparse constructor or a ``to_sparse*`` converter
    # in its value tables): without one in any file, no value of the repository is sparse.
    makes_sparse: bool = False
