"""The typed, frozen data every stage passes on: locations, findings and their axes."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter


def compact_reduce(self: object) -> tuple[type, tuple[object, ...]]:
    """Pickle a frozen slots dataclass as a constructor call.

    The default for such classes runs ``dataclasses.fields`` for every object loaded,
    which dominates reading the cache; a constructor call is several times cheaper. The
    fields are read by one ``attrgetter`` per class, in C: a scan pickles hundreds of
    thousands of these objects to send them from the workers.
    """
    cls = type(self)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = _fields_of(cls.__slots__)  # type: ignore[attr-defined]
    return cls, fields(self)


_FIELDS: dict[type, Callable[[object], tuple[object, ...]]] = {}


def _fields_of(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """A function returning an object's ``names`` attributes as a tuple."""
    if len(names) == 1:  # attrgetter of one name returns the value itself
        name = names[0]
        return lambda obj: (getattr(obj, name),)
    return attrgetter(*names)


# In the message of a finding decided by the repository solver, this stands for the
# functions that call the finding's function (``GCN.forward``); the scan fills it in.
CALLERS = "<callers>"


class Category(StrEnum):
    """What kind of migration work a finding stands for."""

    API_MAPPING = "api-mapping"
    DYNAMIC_SHAPE = "dynamic-shape"
    SPARSE = "sparse"
    SECOND_ORDER = "second-order"
    GRAPH_SYNTAX = "graph-syntax"
    IDIOM = "idiom"
    PARSE_ERROR = "parse-error"


class Severity(StrEnum):
    """How much migration effort a finding costs."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Confidence(StrEnum):
    """How sure msready is that the construct is what the rule says it is."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Scope(StrEnum):
    """Where a rule's construct is a hazard.

    ``FORWARD`` findings are kept only when the code is reachable from a
    ``nn.Module.forward`` (or an ``autograd.Function``); ``ANYWHERE`` findings always are.
    """

    FORWARD = "forward"
    ANYWHERE = "anywhere"


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based line/column range inside one source text (a file or a notebook cell)."""

    __reduce__ = compact_reduce

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Location:
    """A span in a file of the scanned repository.

    ``path`` is relative to the repository root and ``/``-separated. In a notebook,
    ``cell`` is the 1-based index of the code cell and the span is inside that cell.
    """

    __reduce__ = compact_reduce

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    cell: int | None = None

    @classmethod
    def at(cls, path: str, span: Span, cell: int | None = None) -> Location:
        """A location for ``span`` in ``path``."""
        return cls(path, span.line, span.column, span.end_line, span.end_column, cell)


@dataclass(frozen=True, slots=True)
class Finding:
    """One located, explained migration hazard with a concrete way out.

    ``rule`` is the stable id (``MS201``), ``rule_name`` its readable symbol
    (``masked-select``); ``symbol`` is the fully qualified torch API or the construct.
    ``trace`` is the call path from a ``forward`` for scoped hazards
    (``("Head.forward", "assign", "match")``), empty otherwise.
    """

    __reduce__ = compact_reduce

    rule: str
    rule_name: str
    category: Category
    severity: Severity
    confidence: Confidence
    location: Location
    symbol: str
    message: str
    suggestion: str
    trace: tuple[str, ...] = ()
    function: str | None = field(default=None, compare=False)
    scope: Scope = field(default=Scope.ANYWHERE, compare=False)
    # Where the code runs (see msready.analyzer.placement): "graph", "host", "unknown",
    # or "" for findings that do not depend on it.
    where: str = field(default="", compare=False)

    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Findings sort by file, cell, line, column and rule."""
        loc = self.location
        return (loc.path, loc.cell or 0, loc.line, loc.column, self.rule)


FINGERPRINT_VERSION = "msready/v2"


def fingerprint_key(finding: Finding) -> str:
    """What identifies a finding across edits that move code: the rule, the file, the
    symbol and the enclosing function (``<module>`` at the top level). Never the line, the
    column or the message, which may name places."""
    return "\0".join((finding.rule, finding.location.path, finding.symbol,
                      finding.function or "<module>"))


def fingerprints(findings: Iterable[Finding]) -> list[str]:
    """One stable fingerprint per finding, in the order given (file order).

    Findings that share a :func:`fingerprint_key` (the same API twice in one function) are
    told apart by their rank among those findings, which moving code does not change. The
    one identity ``--baseline`` and SARIF ``partialFingerprints`` use.
    """
    seen: Counter[str] = Counter()
    out = []
    for finding in findings:
        key = fingerprint_key(finding)
        out.append(hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()[:32])
        seen[key] += 1
    return out
