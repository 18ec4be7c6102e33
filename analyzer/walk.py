"""One traversal per file: collect the file's facts and run every file rule.

The walk visits each node once, in source order, keeps the scopes that name resolution
needs, records definitions, call sites and torch references, and dispatches the rules'
``visit_*`` / ``leave_*`` handlers. A rule that raises loses only its own findings for the
file: the crash becomes a finding and the walk goes on without that rule.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Sequence

import libcst as cst

from msready.analyzer.checklist_source import code_facts
from msready.analyzer.configvalues import READ_NODES, ConfigReader, ConfigValue
from msready.analyzer.facts import (
    Arg,
    CallKind,
    CallSite,
    ClassFact,
    FileResult,
    FunctionFact,
    Pending,
    Reference,
)
from msready.analyzer.findings import Confidence, Finding, Location, Severity, Span
from msready.analyzer.localvalues import (
    LocalValues,
    annotation_value,
    binary_operator,
    option_value,
)
from msready.analyzer.names import LOCAL, Resolver, module_name
from msready.analyzer.parse import Parsed
from msready.analyzer.positions import LEAVES, NOTED
from msready.analyzer.syntax import (
    MAX_ARG_TEXT,
    all_params,
    blocks,
    children,
    element_of,
    has_children,
    literal_of,
    self_attr,
    tensor_methods,
    unpack,
)
from msready.analyzer.values import (
    Expr,
    Kind,
    Truth,
    apply,
    instance,
)
from msready.rules.base import Calls, FileRule, Rule

TORCH_ROOTS = ("torch", "torchvision")
CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"})
_SUPPRESS = re.compile(r"#\s*msready:\s*ignore(?:\[([^\]]*)\])?")
_MAX_RECEIVER_TEXT = 60
# Calls whose arguments say what the loss is: the value analysis keeps them.
_LOSS_CALLS = frozenset({"torch.Tensor.backward", "torch.autograd.grad", "torch.autograd.backward"})


# The node types whose entering the walk acts on (besides the rules' handlers).
_ENTERED = frozenset({cst.Name, cst.Attribute, cst.Call, cst.Import, cst.ImportFrom,
                      cst.FunctionDef, cst.ClassDef, cst.For, cst.WithItem})
# The node types whose leaving the walk acts on (besides the rules' handlers).
_LEFT = frozenset({cst.FunctionDef, cst.ClassDef, cst.Assign, cst.AnnAssign, cst.AugAssign,
                   cst.Call, cst.Return})
_Handler = tuple[FileRule, Callable[[cst.CSTNode], object]]
# Where a torch name is no reference to record. (Type checks rather than isinstance: libcst's
# node classes are ABCs, whose isinstance is several times slower, and these have no
# subclasses.)
_NOT_REFERENCES = frozenset({cst.Annotation, cst.Import, cst.ImportFrom, cst.Decorator})
_TENSOR = "torch.Tensor."


class _CallPlan:
    """Which of a rule set's ``visit_Call`` handlers (by their place in the list of
    them) each call goes to, from the calls the rules declare (:class:`Calls`). Built once
    per rule set; the choice for a callee, method name and starred-ness is made once."""

    def __init__(self, rules: Sequence[type[FileRule]], declared: bool) -> None:
        self.every: list[int] = []
        self.targets: dict[str, list[int]] = {}
        self.roots: dict[str, list[int]] = {}
        self.apis: dict[str, list[int]] = {}
        self.methods: dict[str, list[int]] = {}
        self.prefixes: list[tuple[str, int]] = []
        self.any_api: list[int] = []
        self.starred: list[int] = []
        for i, rule in enumerate(rules):
            calls = rule.calls() if declared else None
            if calls is None:
                self.every.append(i)
                continue
            self._add(calls, i)
        self.selective = len(self.every) < len(rules)
        self._chosen: dict[tuple[str | None, str | None, bool], tuple[int, ...]] = {}

    def _add(self, calls: Calls, i: int) -> None:
        for table, names in ((self.targets, calls.targets), (self.roots, calls.roots),
                             (self.apis, calls.apis), (self.methods, calls.methods)):
            for name in names:
                table.setdefault(name, []).append(i)
        self.prefixes.extend((prefix, i) for prefix in calls.prefixes)
        if calls.any_api:
            self.any_api.append(i)
        if calls.starred:
            self.starred.append(i)

    def chosen(self, target: str | None, method: str | None, starred: bool) -> tuple[int, ...]:
        """The handlers (their places, in order) for a call of ``target``, through a
        method named ``method``, with or without unpacked arguments."""
        key = (target, method, starred)
        known = self._chosen.get(key)
        if known is None:
            if len(self._chosen) > 50_000:  # a worker's many files: kept bounded
                self._chosen.clear()
            known = self._chosen[key] = self._choose(target, method, starred)
        return known

    def _choose(self, target: str | None, method: str | None, starred: bool) -> tuple[int, ...]:
        chosen = list(self.every)
        if target is not None:
            chosen += self.targets.get(target, ())
            chosen += self.roots.get(target.split(".", 1)[0], ())
            chosen += [i for prefix, i in self.prefixes if target.startswith(prefix)]
            api: str | None = None
            if target.startswith(_TENSOR):
                api = target[len(_TENSOR):]
            elif target.startswith("torch.") and target.count(".") == 1:
                api = target[len("torch."):]
            if api is not None:
                chosen += self.any_api
                chosen += self.apis.get(api, ())
        if method is not None:
            chosen += self.methods.get(method, ())
        if starred:
            chosen += self.starred
        return tuple(sorted(set(chosen)))


class _CallIndex:
    """The rules' ``visit_Call`` handlers by the calls they declare: a call is handed to
    those that name its callee, in the rules' order."""

    def __init__(self, handlers: list[_Handler], plan: _CallPlan) -> None:
        self.handlers = handlers
        self.plan = plan

    @classmethod
    def of(cls, handlers: list[_Handler], declared: bool) -> _CallIndex:
        """An index planned for these handlers alone."""
        return cls(handlers, _CallPlan([type(rule) for rule, _ in handlers], declared))

    def select(self, node: cst.Call, target: str | None) -> list[_Handler]:
        """The handlers to call for ``node``, whose callee is ``target``."""
        plan = self.plan
        if not plan.selective:
            return self.handlers
        func = node.func
        method = func.attr.value if type(func) is cst.Attribute else None  # type: ignore[attr-defined]
        starred = bool(plan.starred) and any(arg.star for arg in node.args)
        handlers = self.handlers
        return [handlers[i] for i in plan.chosen(target, method, starred)]


@dataclasses.dataclass(slots=True)
class _Dispatch:
    """A rule set's handlers by node type, as (rule's place, method name), in the rules'
    order, and the plan of its ``visit_Call`` handlers: found once per rule set (reading
    every rule class's attributes for each file cost a hundredth of a scan)."""

    visit: dict[type, list[tuple[int, str]]]
    leave: dict[type, list[tuple[int, str]]]
    calls: _CallPlan
    # node type -> how the walk treats it: _INNER (enter, children, leave), _LEAF (no
    # children: enter and leave) or _INERT (no children and nothing acts on it: skipped;
    # a third of the nodes are names and a tenth are numbers, strings and operators).
    kinds: dict[type, int] = dataclasses.field(default_factory=dict)

    def kind(self, node_type: type) -> int:
        """How the walk treats nodes of ``node_type`` (found once per type)."""
        found = self.kinds.get(node_type)
        if found is None:
            if has_children(node_type):
                found = _INNER
            elif node_type in _ACTED_ON or node_type in self.visit or node_type in self.leave:
                found = _LEAF
            else:
                found = _INERT
            self.kinds[node_type] = found
        return found


_INNER, _LEAF, _INERT = range(3)
# The node types the walk itself (or the positions or the configuration reader it drives)
# acts on, besides the rules' handlers.
_ACTED_ON = _ENTERED | _LEFT | NOTED | READ_NODES


_DISPATCH: dict[tuple[tuple[type[FileRule], ...], bool], _Dispatch] = {}


def _dispatch_of(rules: Sequence[type[FileRule]], declared: bool) -> _Dispatch:
    key = (tuple(rules), declared)
    found = _DISPATCH.get(key)
    if found is None:
        visit: dict[type, list[tuple[int, str]]] = {}
        leave: dict[type, list[tuple[int, str]]] = {}
        for i, rule in enumerate(rules):
            for attr in dir(rule):
                if attr.startswith(("visit_", "leave_")):
                    node_type = getattr(cst, attr[6:], None)
                    if isinstance(node_type, type):
                        table = visit if attr[0] == "v" else leave
                        table.setdefault(node_type, []).append((i, attr))
        on_call = [rules[i] for i, _ in visit.get(cst.Call, [])]
        found = _DISPATCH[key] = _Dispatch(visit, leave, _CallPlan(on_call, declared))
    return found


@dataclasses.dataclass(slots=True)
class _FunctionState:
    qualname: str
    class_qualname: str | None
    values: dict[str, cst.BaseExpression] = dataclasses.field(default_factory=dict)
    loop_attrs: dict[str, str] = dataclasses.field(default_factory=dict)
    env: dict[str, Expr] = dataclasses.field(default_factory=dict)  # the value analysis
    returns: list[Expr] = dataclasses.field(default_factory=list)
    fact_index: int = -1
    locals: list[Expr] = dataclasses.field(default_factory=list)  # see FileWalker.intern


class FileWalker:
    """Walks one parsed file; implements :class:`msready.rules.base.FileContext`.

    A call is handed to the rules whose declared :class:`Calls` name it (to every rule
    with ``visit_Call`` when ``declared_calls`` is off, as the tests compare).
    """

    declared_calls = True

    def __init__(self, path: str, parsed: Parsed, rules: Sequence[type[FileRule]]) -> None:
        self.path = path
        self.parsed = parsed
        self.module, self.is_package = module_name(path)
        self.resolver = Resolver(self.module, self.is_package)
        self.result = FileResult(path, self.module, self.is_package, "parsed", parsed.lines)
        self._ancestors: list[cst.CSTNode] = []
        self._functions: list[_FunctionState] = []
        self._classes: list[tuple[str, dict[str, set[str]], list[str]]] = []
        self._class_facts: dict[str, ClassFact] = {}
        self._rules = [rule(self) for rule in rules]
        self._visit: dict[type, list[_Handler]] = {}
        self._leave: dict[type, list[_Handler]] = {}
        self._calls = _CallIndex.of([], False)
        self._module_values: dict[str, cst.BaseExpression] = {}
        self._targets: dict[int, tuple[cst.Call, str | None]] = {}
        self._call_index: dict[int, int] = {}
        self.imports_torch = False
        self.values = LocalValues(self)
        self.module_env: dict[str, Expr] = {}
        self._class_attr_values: dict[str, list[tuple[str, Expr]]] = {}
        # The nodes the checklist's configuration reader reads, met in this same walk
        # (with their ancestors), and the scopes it leaves; read once the walk is done,
        # when every node's position comes straight from the positions noted.
        self._config_events: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...] | None]] = []

    @property
    def function_states(self) -> list[_FunctionState]:
        """The functions being walked, innermost last."""
        return self._functions

    # ----- FileContext --------------------------------------------------------------

    @property
    def function(self) -> str | None:
        """Qualified name of the innermost enclosing function."""
        return self._functions[-1].qualname if self._functions else None

    @property
    def class_name(self) -> str | None:
        """Qualified name of the innermost enclosing class."""
        return self._classes[-1][0] if self._classes else None

    @property
    def ancestors(self) -> Sequence[cst.CSTNode]:
        """The nodes from the module down to the current one."""
        return self._ancestors

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """Fully qualified name of a name or attribute chain."""
        return self.resolver.qualify(expr)

    def span(self, node: cst.CSTNode) -> Span | None:
        """1-based span of a node."""
        return self.parsed.span(node, self._ancestors)

    def text(self, node: cst.CSTNode) -> str:
        """Exact source text of a node."""
        if type(node) in LEAVES:  # a token: its value is its text
            return node.value  # type: ignore[attr-defined,no-any-return]
        offsets = self.parsed.offsets(node, self._ancestors)
        if offsets is None:
            return cst.Module([]).code_for_node(node)
        return self.parsed.text[offsets[0]:offsets[1]]

    def value_of(self, name: str) -> cst.BaseExpression | None:
        """Expression last assigned to local ``name`` in the current function."""
        return self._values().get(name)

    def _values(self) -> dict[str, cst.BaseExpression]:
        return self._functions[-1].values if self._functions else self._module_values

    def tensor_method(self, call: cst.Call) -> str | None:
        """Method name of a torch.Tensor method call on an expression, else None."""
        func = call.func
        if not isinstance(func, cst.Attribute) or not self.imports_torch:
            return None
        method = func.attr.value
        if method not in tensor_methods():
            return None
        if self.qualify(func) is not None:
            return None
        value = self.values.expr(func.value)
        if not isinstance(value, frozenset):
            return method
        return method if any(a.kind in (Kind.TENSOR, Kind.UNKNOWN) for a in value) else None

    def call_target(self, call: cst.Call) -> str | None:
        """Qualified callee, or ``torch.Tensor.<m>`` for a tensor method; computed once per
        call node, as every rule and data-flow predicate asks for the same calls."""
        known = self._targets.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        target = self.qualify(call.func)
        if target is None:
            method = self.tensor_method(call)
            target = f"torch.Tensor.{method}" if method else None
        self._targets[id(call)] = (call, target)  # the node kept alive: its id stays its own
        return target

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        """True when the value analysis says, inside this file, ``expr`` may hold a tensor
        (and nothing says it is something else)."""
        value = self.values.expr(expr)
        return isinstance(value, frozenset) and any(a.kind is Kind.TENSOR for a in value) and all(
            a.kind in (Kind.TENSOR, Kind.UNKNOWN) for a in value)

    def call_key(self, call: cst.Call) -> tuple[int, int, int, int, int | None]:
        """The key of a call in this file (see :attr:`CallSite.key`)."""
        span, cell = self._cell_span(self.span(call) or Span(1, 1, 1, 1))
        return (span.line, span.column, span.end_line, span.end_column, cell)

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
        """Record a finding of ``rule`` at ``node``; one whose condition ``when`` depends on
        other functions or files waits for the repository solver."""
        if when is False:
            return
        span, cell = self._cell_span(self.span(node) or Span(1, 1, 1, 1))
        if when is not True:  # plain data until the solver keeps it (see Pending)
            self.result.pending.append(Pending(
                when, rule.id, rule.name, rule.category, severity or rule.severity,
                confidence or rule.confidence, self.path, span.line, span.column,
                span.end_line, span.end_column, cell, sys.intern(symbol),
                sys.intern(message), sys.intern(suggestion), self.function, rule.scope))
            return
        self.result.findings.append(Finding(
            rule=rule.id,
            rule_name=rule.name,
            category=rule.category,
            severity=severity or rule.severity,
            confidence=confidence or rule.confidence,
            location=Location.at(self.path, span, cell),
            symbol=sys.intern(symbol),
            message=sys.intern(message),
            suggestion=sys.intern(suggestion),
            function=self.function,
            scope=rule.scope,
        ))

    # ----- locations ----------------------------------------------------------------

    def location(self, span: Span) -> Location:
        """A repository location for a span, mapped into its cell for notebooks."""
        inside, cell = self._cell_span(span)
        return Location.at(self.path, inside, cell)

    def _cell_span(self, span: Span) -> tuple[Span, int | None]:
        cells = self.parsed.cells
        if cells is None:
            return span, None
        cell, line = cells.locate(span.line)
        _, end_line = cells.locate(span.end_line)
        return Span(line, span.column, end_line, span.end_column), cell

    # ----- the walk -------------------------------------------------------------------

    def run(self) -> FileResult:
        """Walk the module once and return the file's facts and findings."""
        rules = self._rules
        dispatch = _dispatch_of([type(rule) for rule in rules], self.declared_calls)
        for tables, mine in ((dispatch.visit, self._visit), (dispatch.leave, self._leave)):
            for node_type, handlers in tables.items():
                mine[node_type] = [(rules[i], getattr(rules[i], attr)) for i, attr in handlers]
        self._calls = _CallIndex(self._visit.get(cst.Call, []), dispatch.calls)
        module = self.parsed.module
        self._prebind(module)
        # A node to enter, or (node,) to leave once its children are done.
        stack: list[cst.CSTNode | tuple[cst.CSTNode]] = [module]
        pop, push, extend = stack.pop, stack.append, stack.extend
        enter, leave = self._enter, self._exit
        kinds, kind_of = dispatch.kinds, dispatch.kind
        while stack:
            node = pop()
            kind = type(node)
            if kind is tuple:
                leave(node[0])  # type: ignore[index]
                continue
            how = kinds.get(kind)
            if how is None:
                how = kind_of(kind)
            if how == _INERT:
                continue
            enter(node)  # type: ignore[arg-type]
            if how == _LEAF:
                leave(node)  # type: ignore[arg-type]
                continue
            below = children(node)  # type: ignore[arg-type]
            if below:
                push((node,))  # type: ignore[arg-type]
                below.reverse()
                extend(below)
            else:
                leave(node)  # type: ignore[arg-type]
        self.result.bindings = {
            name: target for name, target in self.resolver.scopes[0].bindings.items() if target
        }
        self.result.imports_torch = self.imports_torch
        self.result.classes = list(self._class_facts.values())
        self._collect_suppressions()
        self.result.source_facts = code_facts(self.parsed, self.path, self._config_values())
        return self.result

    def release(self) -> None:
        """Drop the rules and analyses, which point back at the walker: without these
        cycles the file's tree is freed as soon as the walk is done, not when the cyclic
        garbage collector next runs."""
        self._rules.clear()
        self._visit.clear()
        self._leave.clear()
        self._calls = _CallIndex.of([], False)
        self._functions.clear()
        self._ancestors.clear()
        self.resolver.forget()
        self.values.release()
        self._config_events.clear()

    def _config_values(self) -> list[ConfigValue] | None:
        """The configuration values of the file, read from the nodes the walk noted (None
        when the file is nested too deeply to read them)."""
        reader = ConfigReader(self.parsed, self.path, self.module)
        try:
            for node, ancestors in self._config_events:
                if ancestors is None:
                    reader.leave(node)
                else:
                    reader.ancestors[:] = ancestors
                    reader.enter(node)
        except RecursionError:
            return None
        return reader.values()

    def _dispatch(self, table: dict[type, list[_Handler]], node: cst.CSTNode) -> None:
        handlers = table.get(type(node))
        if not handlers:
            return
        if handlers is self._calls.handlers:  # the callee is resolved once, for all rules
            handlers = self._calls.select(node, self.call_target(node))  # type: ignore[arg-type]
        for rule, handler in handlers:
            try:
                handler(node)
            except Exception as exc:  # a crashing rule loses only its own findings
                self._retire(rule)
                self._rule_crashed(rule, node, exc)

    def _retire(self, rule: FileRule) -> None:
        """Call a crashed rule no more in this file (new lists: the one being dispatched
        goes on with the other rules)."""
        for table in (self._visit, self._leave):
            for kind, handlers in list(table.items()):
                kept = [h for h in handlers if h[0] is not rule]
                if kept:
                    table[kind] = kept
                else:
                    del table[kind]
        self._calls = _CallIndex.of(self._visit.get(cst.Call, []), self.declared_calls)

    def _rule_crashed(self, rule: FileRule, node: cst.CSTNode, exc: Exception) -> None:
        span = self.span(node) or Span(1, 1, 1, 1)
        self.result.findings.append(Finding(
            rule="MS001",
            rule_name="rule-crashed",
            category=rule.category,
            severity=Severity.INFO,
            confidence=Confidence.LOW,
            location=self.location(span),
            symbol=rule.id,
            message=(f"msready's rule {rule.id} ({rule.name}) failed on this file "
                     f"({type(exc).__name__}: {exc}); its findings here are incomplete."),
            suggestion="Check this file by hand for that rule and report the failure to msready.",
            function=self.function,
        ))

    def _enter(self, node: cst.CSTNode) -> None:
        self._ancestors.append(node)
        kind = type(node)
        if kind in NOTED:  # positions are found by meeting these in source order
            self.parsed.positions.note(node)
        if kind not in _ENTERED:
            pass
        elif kind is cst.Name or kind is cst.Attribute:
            self._on_reference(node)  # type: ignore[arg-type]
        elif kind is cst.Call:
            self._on_call(node)  # type: ignore[arg-type]
        elif kind is cst.Import or kind is cst.ImportFrom:
            self.resolver.bind_import(node)  # type: ignore[arg-type]
            self._note_torch()
        elif kind is cst.FunctionDef:
            self._on_function(node)  # type: ignore[arg-type]
        elif kind is cst.ClassDef:
            self._on_class(node)  # type: ignore[arg-type]
        elif kind is cst.For:
            self._on_for(node)  # type: ignore[arg-type]
        elif kind is cst.WithItem:
            self._on_with_item(node)  # type: ignore[arg-type]
        if kind in READ_NODES:
            self._config_events.append((node, tuple(self._ancestors)))
        if kind in self._visit:
            self._dispatch(self._visit, node)

    def _exit(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in self._leave:
            self._dispatch(self._leave, node)
        if kind not in _LEFT:
            self._ancestors.pop()
            return
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            self._config_events.append((node, None))
        # An assignment binds its names once its right-hand side has been walked, so
        # that inside ``x = x.cuda()`` the name ``x`` still means the old value.
        if kind is cst.Assign:
            targets = [t.target for t in node.targets]  # type: ignore[attr-defined]
            self._on_assign(targets[0] if len(targets) == 1 else None,
                            node.value, targets)  # type: ignore[attr-defined]
        elif kind is cst.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
            self._on_assign(node.target, node.value, [node.target])  # type: ignore[attr-defined]
        elif kind is cst.AugAssign:
            self._on_aug_assign(node)  # type: ignore[arg-type]
        elif kind is cst.Call:
            self._on_call_done(node)  # type: ignore[arg-type]
        elif kind is cst.Return:
            if self._functions:
                value = node.value  # type: ignore[attr-defined]
                self._functions[-1].returns.append(
                    self.values.expr(value) if value is not None else self.values.lookup("None"))
        elif kind is cst.FunctionDef:
            self._on_function_done()
            self._functions.pop()
            self.resolver.pop()
        elif kind is cst.ClassDef:
            qualname, attrs, methods = self._classes.pop()
            fact = self._class_facts[qualname]
            self._class_facts[qualname] = dataclasses.replace(
                fact,
                attributes=tuple(sorted((a, tuple(sorted(c))) for a, c in attrs.items())),
                methods=tuple(methods),
                attr_values=tuple(self._class_attr_values.pop(qualname, ())),
            )
            self.resolver.pop()
        self._ancestors.pop()

    def _note_torch(self) -> None:
        if not self.imports_torch:
            self.imports_torch = any(
                t.split(".")[0] in TORCH_ROOTS
                for scope in self.resolver.scopes for t in scope.bindings.values() if t
            )

    def _prebind(self, module: cst.Module) -> None:
        """Bind module-level imports and definitions before walking, so that a function
        body resolves names imported or defined further down the file."""
        pending: list[cst.BaseStatement | cst.BaseSmallStatement] = list(module.body)
        while pending:
            stmt = pending.pop(0)
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self.resolver.bind_import(small)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                self.resolver.bind(stmt.name.value, f"{self.module}.{stmt.name.value}")
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
                for block in blocks(stmt):
                    pending.extend(block)
        self._note_torch()

    def _qualname(self, name: str) -> str:
        return f"{self.resolver.current.qualname}.{name}"

    def _on_function(self, node: cst.FunctionDef) -> None:
        qualname = self._qualname(node.name.value)
        self.resolver.bind(node.name.value, qualname)
        scope = self.resolver.current
        class_qualname = scope.qualname if scope.kind == "class" else None
        params = [p.name.value for p in all_params(node.params)]
        decorators = tuple(self.qualify(d.decorator) or self.text(d.decorator)
                           for d in node.decorators)
        span, cell = self._cell_span(self.span(node.name) or Span(1, 1, 1, 1))
        static = any(d in ("builtins.staticmethod", "staticmethod") for d in decorators)
        defaults = tuple((p.name.value, self.values.expr(p.default))
                         for p in all_params(node.params) if p.default is not None)
        self.result.functions.append(FunctionFact(qualname, node.name.value, class_qualname, span,
                                                  tuple(params), decorators, cell,
                                                  defaults=defaults, is_static=static))
        if class_qualname is not None and self._classes:
            self._classes[-1][2].append(node.name.value)
        self.resolver.push("function", qualname)
        state = _FunctionState(qualname, class_qualname, fact_index=len(self.result.functions) - 1)
        typed: list[str] = []
        for position, declared in enumerate(all_params(node.params)):
            name = declared.name.value
            annotation = None
            # ``x: torch.Tensor`` says what the parameter holds: a call of the annotation
            # stands in for its value in the data flow.
            if declared.annotation is not None:
                state.values[name] = cst.Call(func=declared.annotation.annotation)
                annotation = self.qualify(declared.annotation.annotation)
            if position == 0 and class_qualname is not None and not static and not any(
                    d in ("builtins.classmethod", "classmethod") for d in decorators):
                state.env[name] = instance(class_qualname)
            elif declared.star == "*":
                state.env[name] = ("p", qualname, "*" + name)
            elif declared.star == "**":
                state.env[name] = self.values.lookup("None")
            else:
                held = annotation_value(annotation)
                if held is None and declared.annotation is not None:
                    typed.append(name)  # ``size: Tuple[int, int]``: not a tensor
                state.env[name] = held or ("p", qualname, name)
        if typed:
            self.result.functions[state.fact_index] = dataclasses.replace(
                self.result.functions[state.fact_index], typed=tuple(typed))
        for name in params:
            self.resolver.bind(name, LOCAL)
        self._functions.append(state)

    def _on_function_done(self) -> None:
        state = self._functions[-1]
        if state.fact_index >= 0:
            fact = self.result.functions[state.fact_index]
            returns = (apply("join", (), state.returns) if state.returns
                       else self.values.lookup("None"))
            self.result.functions[state.fact_index] = dataclasses.replace(
                fact, returns=returns, locals=tuple(state.locals))
        if len(self._functions) == 1:
            self.values.forget()

    def _on_class(self, node: cst.ClassDef) -> None:
        qualname = self._qualname(node.name.value)
        self.resolver.bind(node.name.value, qualname)
        bases = tuple(self.qualify(b.value) or self.text(b.value)
                      for b in node.bases if b.keyword is None)
        span, cell = self._cell_span(self.span(node.name) or Span(1, 1, 1, 1))
        self._class_facts[qualname] = ClassFact(qualname, node.name.value, span, bases, cell=cell)
        self._classes.append((qualname, {}, []))
        self.resolver.push("class", qualname)

    def _on_assign(self, single: cst.BaseAssignTargetExpression | None, value: cst.BaseExpression,
                   targets: list[cst.BaseAssignTargetExpression]) -> None:
        alias = self.qualify(value) if type(value) in (cst.Name, cst.Attribute) else None
        if alias is not None and alias.startswith("builtins."):
            alias = None
        at_module = self.resolver.current.kind == "module"
        values = self._values()
        computed = self.intern(self.values.expr(value))
        env = self._env()
        for target in targets:
            for name, part in unpack(target, value):
                bound = alias if alias and target is single else LOCAL
                # ``except ImportError: torch = None`` keeps the import's meaning.
                if not (at_module and bound == LOCAL and self.resolver.current.bindings.get(name)):
                    self.resolver.bind(name, bound)
                values[name] = part
            for name, part_value in self.values.unpack(target, computed):
                env[name] = part_value
                if at_module:
                    self.result.globals[name] = part_value
            attr = self_attr(target)
            if attr is not None and self._functions:
                self._functions[-1].env[f"self.{attr}"] = computed
                owner = self._functions[-1].class_qualname
                if owner is not None:
                    self._class_attr_values.setdefault(owner, []).append((attr, computed))
        if (single is not None and isinstance(single, cst.Attribute)
                and isinstance(single.value, cst.Name) and single.value.value == "self"
                and self._functions and self._classes
                and self._functions[-1].class_qualname == self._classes[-1][0]):
            held = self._held_classes(value)
            if held:
                self._classes[-1][1].setdefault(single.attr.value, set()).update(held)

    def _added_module(self, node: cst.Call) -> None:
        """``self.add_module("bn", nn.BatchNorm2d(c))`` holds like ``self.bn = ...``."""
        assert isinstance(node.func, cst.Attribute)
        if node.func.attr.value not in ("add_module", "register_module") \
                or len(node.args) != 2 or not isinstance(node.args[0].value, cst.SimpleString) \
                or not self._classes or self._functions[-1].class_qualname != self._classes[-1][0]:
            return
        name = node.args[0].value.evaluated_value
        held = self._held_classes(node.args[1].value)
        if isinstance(name, str) and name.isidentifier() and held:
            self._classes[-1][1].setdefault(name, set()).update(held)

    def _held_classes(self, value: cst.BaseExpression) -> set[str]:
        """Classes an attribute holds: the class constructed, or those inside a container."""
        if isinstance(value, cst.Call):
            target = self.qualify(value.func)
            if target is None:
                return set()
            if target in CONTAINERS:
                found: set[str] = set()
                for arg in value.args:
                    found |= self._held_classes(arg.value)
                return found
            return {target}
        if isinstance(value, (cst.List, cst.Tuple)):
            found = set()
            for element in value.elements:
                found |= self._held_classes(element.value)
            return found
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            return self._held_classes(value.elt)
        if isinstance(value, cst.Dict):
            found = set()
            for item in value.elements:
                if isinstance(item, cst.DictElement):
                    found |= self._held_classes(item.value)
            return found
        if isinstance(value, cst.DictComp):
            return self._held_classes(value.value)
        return set()

    def _env(self) -> dict[str, Expr]:
        return self._functions[-1].env if self._functions else self.module_env

    def intern(self, expr: Expr) -> Expr:
        """A symbolic operation stored once in the function's table of local values and
        referred to as ``("l", path, function, index)``, so that expressions built from it stay
        small however long the chain of assignments."""
        if isinstance(expr, frozenset) or expr[0] != "o" or not self._functions:
            return expr
        state = self._functions[-1]
        state.locals.append(expr)
        return ("l", self.path, state.qualname, len(state.locals) - 1)

    def _on_aug_assign(self, node: cst.AugAssign) -> None:
        target = node.target
        if isinstance(target, cst.Name):
            env = self._env()
            env[target.value] = self.intern(apply("bin", (binary_operator(node.operator),), [
                self.values.lookup(target.value), self.values.expr(node.value)]))

    def _on_call_done(self, node: cst.Call) -> None:
        """After a call's arguments were walked: ``list.append`` updates the list's value,
        ``add_argument`` records a command-line option, and calls that may run repository
        code keep their arguments' values for the solver."""
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in ("append", "extend", "insert") and isinstance(func.value, cst.Name) and (
                    node.args):
                env = self._env()
                owner = func.value.value
                added = self.values.expr(node.args[-1].value)
                env[owner] = self.intern(apply("append", (name == "extend",), [
                    self.values.lookup(owner), added]))
            elif name == "add_argument":
                option = option_value(node, self.text)
                if option is not None:
                    line = (self.span(node) or Span(1, 1, 1, 1)).line
                    self.result.options.setdefault(option[0], (option[1], line))
        index = self._call_index.get(id(node))
        site = self.result.calls[index] if index is not None else None
        if site is not None and site.kind is CallKind.NAME and site.target.split(".")[0] in (
                *TORCH_ROOTS, "builtins") and site.target not in _LOSS_CALLS and not (
                site.target.rsplit(".", 1)[-1][:1].isupper()
                and not all(a.is_literal for a in site.args)):
            return  # kept: torch classes built from non-literal arguments (layers, optimizers)
        recv: Expr | None = None
        if isinstance(func, cst.Attribute):
            recv = self.values.expr(func.value)
        elif isinstance(func, cst.Name) and site is None:
            recv = self.values.lookup(func.value)
        if site is not None and site.kind is CallKind.TENSOR_METHOD and (
                site.target not in _LOSS_CALLS) and not self._may_run_code(recv):
            return
        if site is None:
            if not self._may_run_code(recv):
                return
            span, cell = self._cell_span(self.span(node) or Span(1, 1, 1, 1))
            caller = self.function or f"{self.module}.<module>"
            owner_text = self.text(func.value) if isinstance(func, cst.Attribute) else ""
            site = CallSite(caller, func.attr.value if isinstance(func, cst.Attribute)
                            else "__call__", CallKind.VALUE, span, self._args(node), "low",
                            cell, owner_text[:_MAX_RECEIVER_TEXT])
            self.result.calls.append(site)
            index = len(self.result.calls) - 1
        if index is None:
            return
        arg_values = tuple(self.values.expr(a.value) for a in node.args)
        self.result.calls[index] = site.with_values(recv, arg_values)

    @staticmethod
    def _may_run_code(value: Expr | None) -> bool:
        """True for a value the solver may find a repository object in: symbolic, or an
        instance of a class."""
        if value is None:
            return False
        if not isinstance(value, frozenset):
            return True
        return any(a.kind is Kind.INSTANCE for a in value)

    def _on_for(self, node: cst.For) -> None:
        for name, part in unpack(node.target, element_of(node.iter)):
            self.resolver.bind(name, LOCAL)
            self._values()[name] = part
        env = self._env()
        for name, held in self.values.loop_values(node):
            env[name] = self.intern(held)
        if not self._functions:
            return
        state = self._functions[-1]
        iterable = node.iter
        target: cst.BaseExpression = node.target
        if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
                and iterable.func.value == "enumerate" and iterable.args
                and isinstance(target, cst.Tuple) and len(target.elements) == 2):
            iterable = iterable.args[0].value
            target = target.elements[1].value
        if (isinstance(iterable, cst.Attribute) and isinstance(iterable.value, cst.Name)
                and iterable.value.value == "self" and isinstance(target, cst.Name)):
            state.loop_attrs[target.value] = iterable.attr.value

    def _on_with_item(self, node: cst.WithItem) -> None:
        if node.asname is None:
            return
        for name, part in unpack(node.asname.name, node.item):
            self.resolver.bind(name, LOCAL)
            self._values()[name] = part
        env = self._env()
        for name, held in self.values.unpack(node.asname.name, self.values.expr(node.item)):
            env[name] = held

    def _args(self, call: cst.Call) -> tuple[Arg, ...]:
        out = []
        for arg in call.args:
            text = self.text(arg.value)
            parens = getattr(arg.value, "lpar", ())
            if parens and not text.startswith("("):
                text = "(" * len(parens) + text + ")" * len(parens)
            literal, is_literal = literal_of(arg.value, text)
            if isinstance(arg.value, cst.Name) and arg.value.value not in ("True", "False", "None"):
                literal, is_literal = None, False
            out.append(Arg(sys.intern(arg.keyword.value) if arg.keyword else None,
                           sys.intern(text[:MAX_ARG_TEXT]), literal, is_literal, arg.star))
        return tuple(out)

    def _on_call(self, node: cst.Call) -> None:
        caller = self.function or f"{self.module}.<module>"
        func = node.func
        kind: CallKind | None = None
        target: str | None = None
        confidence = "high"
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self" and self._functions:
                kind, target = CallKind.SELF_METHOD, func.attr.value
                self._added_module(node)
            elif (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
                  and receiver.func.value == "super"):
                kind, target = CallKind.SUPER, func.attr.value
            elif func.attr.value == "apply":
                owner = self.qualify(receiver)
                if owner is not None and owner.split(".")[0] not in TORCH_ROOTS:
                    kind, target = CallKind.APPLY, owner
        elif isinstance(func, cst.Subscript):
            attr = self_attr(func.value)
            if attr is not None:
                kind, target = CallKind.SELF_ATTR, attr
        elif isinstance(func, cst.Name) and self._functions:
            attr = self._functions[-1].loop_attrs.get(func.value)
            if attr is not None and self.resolver.lookup(func.value) is None:
                kind, target = CallKind.SELF_ATTR, attr
        if kind is None and isinstance(func, cst.Name) and self.resolver.lookup(func.value) is None:
            made = self.value_of(func.value)
            if isinstance(made, cst.Call):
                owner = self.qualify(made.func)
                if owner is not None and not owner.startswith("builtins."):
                    kind, target = CallKind.INSTANCE, owner
        if kind is None:
            target = self.qualify(func)
            if target is not None:
                kind = CallKind.NAME
            else:
                method = self.tensor_method(node)
                if method is not None:
                    kind, target = CallKind.TENSOR_METHOD, f"torch.Tensor.{method}"
                    confidence = "medium" if self.is_tensor(func.value) else "low"  # type: ignore[attr-defined]
        if kind is None or target is None:
            return
        span, cell = self._cell_span(self.span(node) or Span(1, 1, 1, 1))
        owner_text = self.text(func.value) if isinstance(func, cst.Attribute) else ""
        if len(owner_text) > _MAX_RECEIVER_TEXT:
            owner_text = ""
        self._call_index[id(node)] = len(self.result.calls)
        self.result.calls.append(CallSite(caller, sys.intern(target), kind, span, self._args(node),
                                          confidence, cell, sys.intern(owner_text)))

    def _on_reference(self, node: cst.Attribute | cst.Name) -> None:
        """Record torch names used as values (not called, not part of a longer chain)."""
        if not self.imports_torch or len(self._ancestors) < 2:
            return
        # The parent first: most names are part of a longer chain or a callee, which
        # settles it without resolving anything.
        parent = self._ancestors[-2]
        kind = type(parent)
        if kind is cst.Attribute and (parent.value is node  # type: ignore[attr-defined]
                                      or parent.attr is node):  # type: ignore[attr-defined]
            return
        if kind is cst.Call and parent.func is node:  # type: ignore[attr-defined]
            return
        if kind is cst.Arg and parent.keyword is node:  # type: ignore[attr-defined]
            return
        head: cst.BaseExpression = node
        while type(head) is cst.Attribute:
            head = head.value  # type: ignore[attr-defined]
        if type(head) is not cst.Name:
            return
        bound = self.resolver.lookup(head.value)  # type: ignore[attr-defined]
        if bound is None or bound.split(".")[0] not in TORCH_ROOTS:
            return
        if any(type(a) in _NOT_REFERENCES for a in self._ancestors[-8:]):
            return
        target = self.qualify(node)
        if target is None or target.split(".")[0] not in TORCH_ROOTS or "." not in target:
            return
        span, cell = self._cell_span(self.span(node) or Span(1, 1, 1, 1))
        self.result.references.append(Reference(target, span, cell))

    def _collect_suppressions(self) -> None:
        text = self.parsed.text
        if "msready" not in text:
            return
        for match in _SUPPRESS.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            tokens = tuple(t.strip() for t in (match.group(1) or "").split(",") if t.strip())
            cell: int | None = None
            if self.parsed.cells is not None:
                cell, line = self.parsed.cells.locate(line)
            self.result.suppressions[(cell, line)] = tokens or ("*",)


def walk_file(path: str, parsed: Parsed, rules: Sequence[type[FileRule]]) -> FileResult:
    """Facts and file-rule findings for one parsed file."""
    walker = FileWalker(path, parsed, rules)
    try:
        return walker.run()
    finally:
        walker.release()

