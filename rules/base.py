"""What a rule is: metadata as class attributes, handlers that only look and report.

Two kinds exist. A :class:`FileRule` has ``visit_<Node>`` / ``leave_<Node>`` methods that
the single traversal of each file calls (``visit_Call``, ``leave_FunctionDef``, ...);
it reports through its :class:`FileContext`. A :class:`RepoRule` runs once on the whole
repository model, after every file is read, for facts that need the call graph.

Every rule's ``VALID`` and ``INVALID`` examples are its documentation and its tests: each
example is a source snippet (or a mapping of file name to source for several files),
scanned exactly as a repository would be.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import libcst as cst

from msready.analyzer.findings import Category, Confidence, Finding, Scope, Severity, Span
from msready.analyzer.values import Expr, Truth, Value

if TYPE_CHECKING:
    from msready.analyzer.repo import RepositoryModel


class ValueQueries(Protocol):
    """The value analysis of the file being walked (:mod:`msready.analyzer.localvalues`)."""

    def expr(self, node: cst.BaseExpression, depth: int = 0) -> Expr:
        """What ``node`` holds: a value, or symbolic where other functions decide."""

    def local(self, node: cst.BaseExpression) -> Value:
        """What ``node`` holds as far as this file shows (other functions: unknown)."""

    def truth(self, predicate: str, node: cst.BaseExpression) -> Truth:
        """A predicate of :data:`msready.analyzer.values.PREDICATES` on ``node``'s value:
        True / False now, or a condition the repository solver answers."""

# One snippet (the file ``example.py``) or several files by repository path.
Example = str | Mapping[str, str]


class FileContext(Protocol):
    """What a file rule may ask about the file being walked."""

    path: str
    module: str
    imports_torch: bool
    values: ValueQueries

    @property
    def function(self) -> str | None:
        """Qualified name of the innermost enclosing function, None at module level."""

    @property
    def class_name(self) -> str | None:
        """Qualified name of the innermost enclosing class, None outside classes."""

    @property
    def ancestors(self) -> Sequence[cst.CSTNode]:
        """The nodes from the module down to the node being visited (inclusive)."""

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """Fully qualified name of a name / attribute chain bound by an import or def."""

    def call_target(self, call: cst.Call) -> str | None:
        """The qualified callee (``torch.nn.Conv2d``) or ``torch.Tensor.<m>`` for a
        tensor method call; None when the callee is unknown."""

    def tensor_method(self, call: cst.Call) -> str | None:
        """The method name when ``call`` is a torch.Tensor method on some expression."""

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        """True when local data flow says ``expr`` holds a torch tensor."""

    def value_of(self, name: str) -> cst.BaseExpression | None:
        """The expression last assigned to a local ``name`` in the current function."""

    def span(self, node: cst.CSTNode) -> Span | None:
        """1-based line/column span of a node."""

    def text(self, node: cst.CSTNode) -> str:
        """The exact source text of a node."""

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        suggestion: str,
        *,
        symbol: str,
        severity: Severity | None = None,
        confidence: Confidence | None = None,
        when: Truth = True,
    ) -> None:
        """Record a finding of ``rule`` at ``node`` when ``when`` holds (a condition on
        values is decided once the whole repository is known)."""


class Rule:
    """Metadata every rule carries. The docstring has three short parts: what it flags,
    why MindSpore cares, how to migrate."""

    id: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    severity: ClassVar[Severity]
    confidence: ClassVar[Confidence]
    scope: ClassVar[Scope] = Scope.ANYWHERE
    VALID: ClassVar[Sequence[Example]] = ()
    INVALID: ClassVar[Sequence[Example]] = ()


@dataclass(frozen=True, slots=True)
class Calls:
    """The calls a file rule's ``visit_Call`` acts on, declared so that the walk resolves
    each call's callee once and hands the call only to the rules that name it.

    A call is handed over when its callee (:meth:`FileContext.call_target`) is one of
    ``targets``, starts with one of ``prefixes`` or has its first part in ``roots``; when
    it is a torch API (``torch.X`` or ``torch.Tensor.X``) named in ``apis``, or any torch
    API with ``any_api``; when the callee is an attribute named in ``methods``
    (``x.cuda()``, whatever ``x`` is); or, with ``starred``, when an argument is unpacked
    (``*a``, ``**k``). The declaration may name more calls than the rule acts on, never
    fewer: a call it does not name must be one ``visit_Call`` ignores.
    """

    targets: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    roots: frozenset[str] = frozenset()
    apis: frozenset[str] = frozenset()
    any_api: bool = False
    methods: frozenset[str] = frozenset()
    starred: bool = False

    def __or__(self, other: Calls) -> Calls:
        return Calls(self.targets | other.targets, (*self.prefixes, *other.prefixes),
                     self.roots | other.roots, self.apis | other.apis,
                     self.any_api or other.any_api, self.methods | other.methods,
                     self.starred or other.starred)


class FileRule(Rule):
    """A rule that looks at one file's syntax tree, one node type at a time.

    A rule with ``visit_Call`` says which calls it looks at with :meth:`calls`; without
    that declaration it is handed every call.
    """

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    @classmethod
    def calls(cls) -> Calls | None:
        """The calls ``visit_Call`` acts on (see :class:`Calls`); None for every call."""
        return None

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        suggestion: str,
        *,
        symbol: str,
        severity: Severity | None = None,
        confidence: Confidence | None = None,
        when: Truth = True,
    ) -> None:
        """Report a finding of this rule at ``node`` (when ``when`` holds)."""
        self.ctx.report(self, node, message, suggestion, symbol=symbol,
                        severity=severity, confidence=confidence, when=when)


class RepoRule(Rule):
    """A rule that reads the whole repository model once."""

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """Yield this rule's findings for the repository."""
        raise NotImplementedError
