"""The value analysis across functions and files: the repository solver.

Each file's walk leaves symbolic expressions where it could not tell what a value is
(:mod:`msready.analyzer.localvalues`). This module answers them for the whole repository:

- a parameter holds the join of what every call site passes to it (positional and keyword
  arguments, the default otherwise);
- a call of a repository function returns the join of that function's ``return`` values; a
  call of a class builds an instance of it;
- ``self.<attribute>`` holds the join of every assignment to it in the class and its bases;
- a module-level name holds what the module assigns to it, through imports;
- ``args.<option>`` of a parsed command line holds the option's default.

Calls through values (``self.critic(x)`` where ``self.critic`` came in as a constructor
argument, ``net_d(fake)`` where ``net_d`` is a parameter, ``model.encoder(x)``) are resolved
to the classes those values hold, and the edges are added to the repository's call graph.

The analysis is demand-driven and context-insensitive: a value is computed when asked,
memoised, and recursion through cycles is cut (values computed with a cut are not kept
past the cycle) and iterated a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msready.analyzer.facts import CallKind, CallSite, FileResult, FunctionFact
from msready.analyzer.values import (
    NOTHING,
    SELF_RETURNING,
    UNKNOWN,
    Env,
    Expr,
    Kind,
    Truth,
    Value,
    attribute,
    decide,
    evaluate_op,
    instance,
    join,
    tensor,
    tensor_method,
)

if TYPE_CHECKING:
    from msready.analyzer.repo import RepositoryModel, ResolvedCall

_ABSENT: Any = object()
MAX_DEPTH = 150
TORCH_MODULES = ("torch.nn.", "torchvision.")
MAX_STEPS = 400_000
ROUNDS = 3


@dataclass
class _Readers:
    """Who read what: the expressions whose computation read each expression, each
    function's parameters (what its incoming calls pass) and each call's callees."""

    values: dict[Any, list[Any]] = field(default_factory=dict)
    parameters: dict[str, list[Any]] = field(default_factory=dict)
    callees: dict[tuple[str, Any], list[Any]] = field(default_factory=dict)


class ValueAnalysis(Env):
    """What every expression of the repository holds; see the module docstring."""

    def __init__(self, model: RepositoryModel) -> None:
        self.model = model
        self.module = ""
        self.calls: dict[tuple[str, Any], ResolvedCall] = {}
        self.incoming: dict[str, list[tuple[ResolvedCall, int]]] = {}
        # expression -> its value, or None while it is being computed (a recursion)
        self._memo: dict[Any, Value | None] = {}
        self._distinct: dict[Value, Value] = {}  # each value computed, once
        self._depth = 0
        self._steps = 0
        # Cycles (see value): the depth of each expression being computed, the lowest
        # such depth the current computation read, and values computed with a cycle cut,
        # with that depth, kept only until the expression at that depth is done.
        self._open: dict[Any, int] = {}
        self._low = 0
        self._provisional: dict[Any, tuple[Value, int]] = {}
        self._waiting: dict[int, list[Any]] = {}
        # The expressions being computed, innermost last, and who read what while the
        # call graph may still change (None once it is settled): see _forget_readers.
        self._computing: list[Any] = []
        self._readers: _Readers | None = _Readers()
        self.resolved_by_value: dict[tuple[str, Any], tuple[str, ...]] = {}
        # Functions whose parameters hold tensors when no caller says otherwise (a loss
        # computed between the network's output and backward; see Placement).
        self.tensor_inputs: set[str] = set()
        # Predicates no value of the repository can meet, so that deciding a condition
        # does not evaluate what they ask about: nothing is sparse when no file builds a
        # sparse tensor (sparse values start only at a constructor or a converter).
        self.never: frozenset[str] = frozenset() if any(
            f.makes_sparse for f in model.files.values()) else frozenset({"sparse"})
        # (path, function) -> its facts: local tables are per file, since two files may
        # define functions of the same qualified name.
        self.local_tables: dict[tuple[str, str], FunctionFact] = {
            (f.path, fn.qualname): fn for f in model.files.values() for fn in f.functions}
        for rc in model.calls:
            self.calls[(rc.file.path, rc.call.key)] = rc
            for callee in rc.callees:
                self._bind(rc, callee)
        self._resolve_value_calls()

    # ----- the call graph through values ------------------------------------------------

    def _bind(self, rc: ResolvedCall, callee: str) -> None:
        fact = self.model.functions.get(callee)
        if fact is None:
            return
        self.incoming.setdefault(callee, []).append((rc, _offset(rc, fact, callee)))

    def _unresolved(self) -> Iterable[ResolvedCall]:
        # A Tensor-method guess may be a repository method only if some class defines it.
        methods = {m for cls in self.model.classes.values() for m in cls.methods}
        for rc in self.model.calls:
            if rc.call.kind is CallKind.TENSOR_METHOD and (
                    rc.call.target.rsplit(".", 1)[-1] not in methods):
                continue
            if rc.callees or (rc.external is not None
                              and rc.call.kind is not CallKind.TENSOR_METHOD):
                continue
            kind = rc.call.kind
            if kind in (CallKind.VALUE, CallKind.SELF_ATTR, CallKind.SELF_METHOD) or (
                    kind is CallKind.TENSOR_METHOD and rc.call.recv is not None):
                yield rc

    def _resolve_value_calls(self) -> None:
        """Add call-graph edges for calls whose callee a value holds; repeated because new
        edges bring parameters new values."""
        pending = list(self._unresolved())
        for _ in range(ROUNDS):
            added = False
            bound: set[str] = set()
            resolved: list[tuple[str, Any]] = []
            for rc in pending:
                key = (rc.file.path, rc.call.key)
                if key in self.resolved_by_value:
                    continue
                callees = self._value_callees(rc)
                if not callees:
                    continue
                self.resolved_by_value[key] = callees
                added = True
                resolved.append(key)
                bound.update(callees)
                for callee in callees:
                    self._bind(rc, callee)
                    if rc.call.caller in self.model.functions and callee != rc.call.caller:
                        self.model.graph.add_edge(rc.call.caller, callee,
                                                  line=rc.call.span.line)
            if not added:
                break
            self._forget_readers(bound, resolved)
            self._steps = 0

    def settle(self) -> None:
        """The call graph and the tensor inputs are final: stop noting who read what (a
        change after this forgets every value)."""
        self._readers = None

    def _forget_readers(self, functions: Iterable[str],
                        calls: Iterable[tuple[str, Any]] = ()) -> None:
        """Forget every value computed from the parameters of ``functions`` or from the
        callees of ``calls`` (they changed), and every value computed from those, and
        so on; the rest stay. A repository's second round of call resolution, or the
        loss functions' tensor inputs, change the parameters of a few functions: most of
        the values already computed do not depend on them."""
        noted = self._readers
        if noted is None or self._steps > MAX_STEPS:
            # (once the step budget ran out, values were cut short anywhere: all go)
            self._memo.clear()
            if noted is not None:
                self._readers = _Readers()
            return
        stale: list[Any] = []
        for function in functions:
            stale.extend(noted.parameters.pop(function, ()))
        for call in calls:
            stale.extend(noted.callees.pop(call, ()))
        memo, readers = self._memo, noted.values
        seen: set[Any] = set()
        while stale:
            expr = stale.pop()
            if expr in seen:
                continue
            seen.add(expr)
            memo.pop(expr, None)
            stale.extend(readers.pop(expr, ()))

    def _value_callees(self, rc: ResolvedCall) -> tuple[str, ...]:
        call = rc.call
        model = self.model
        if call.kind in (CallKind.SELF_ATTR, CallKind.SELF_METHOD):
            owner = model.owner_class(call.caller)
            if owner is None:
                return ()
            held = self.attribute(owner, call.target)
            return self._entry_points(held, None)
        if call.recv is None:
            return ()
        held = self.value(call.recv)
        is_method = bool(call.receiver) or call.kind is CallKind.TENSOR_METHOD
        name = call.target.rsplit(".", 1)[-1] if is_method else None
        return self._entry_points(held, name)

    def _entry_points(self, held: Value, method: str | None) -> tuple[str, ...]:
        """The functions that run when ``held`` is called (``method`` None) or when its
        method ``method`` is."""
        model = self.model
        out: list[str] = []
        for atom in held:
            if atom.kind is Kind.INSTANCE and atom.item is not None and method is None:
                out.extend(self._entry_points(atom.item, None))  # Sequential, ModuleList[i]
                continue
            if atom.kind is Kind.SEQ and atom.item is not None and method is None:
                out.extend(self._entry_points(atom.item, None))
                continue
            if atom.kind is not Kind.INSTANCE or atom.cls not in model.classes:
                continue
            if method is not None:
                found = model.find_method(atom.cls, method)
                if found is not None:
                    out.append(found)
                    continue
                for sub in self.attribute(atom.cls, method):
                    if sub.kind is Kind.INSTANCE and sub.cls in model.classes:
                        out.extend(self._entry_points(frozenset((sub,)), None))
                continue
            name = "forward" if atom.cls in model.module_classes else "__call__"
            found = model.find_method(atom.cls, name)
            if found is not None:
                out.append(found)
        # By name: the atoms of a value come in no fixed order, and the order of the call
        # graph's edges decides which of several equally short paths a trace shows.
        return tuple(sorted(set(out)))

    def callees(self, rc: ResolvedCall) -> tuple[str, ...]:
        """The repository functions a call may run, also through values."""
        return rc.callees or self.resolved_by_value.get((rc.file.path, rc.call.key), ())

    # ----- evaluation -------------------------------------------------------------------

    def value(self, expr: Expr) -> Value:
        """What a (possibly symbolic) expression holds. Results are memoised; a value
        met again while it is being computed (recursion) contributes nothing to it.

        A value computed while such a cycle was cut is not final: it lacks what the
        expression being computed will hold. It is kept only until that expression is
        done (so the cycle is computed once), then forgotten, and computed again when
        asked later, from outside the cycle. Otherwise whichever member of a cycle was
        asked about first would leave the others with an incomplete join for good (a
        parameter of a recursive function holding nothing of what its callers pass), and
        the findings would depend on the order in which rules ask. The expression a
        cycle is entered by still sees itself cut once (no fixpoint is iterated)."""
        if isinstance(expr, frozenset):
            return expr
        computing, noted = self._computing, self._readers
        if computing and noted is not None:
            noted.values.setdefault(expr, []).append(computing[-1])
        memo = self._memo
        found: Value | None = memo.get(expr, _ABSENT)
        if found is not _ABSENT:
            if found is None:  # being computed: the cycle is cut here
                self._low = min(self._low, self._open[expr])
                return NOTHING
            return found
        provisional = self._provisional.get(expr)
        if provisional is not None:
            self._low = min(self._low, provisional[1])
            return provisional[0]
        self._steps += 1
        if self._depth > MAX_DEPTH or self._steps > MAX_STEPS:
            return UNKNOWN
        depth = self._depth
        memo[expr] = None
        self._open[expr] = depth
        outer_low, self._low = self._low, depth + 1
        self._depth += 1
        computing.append(expr)
        try:
            result = self._compute(expr)
        except BaseException:
            del memo[expr]  # not computed: asked again, it is computed again
            self._low = outer_low
            raise
        finally:
            computing.pop()
            self._depth -= 1
            del self._open[expr]
            for done in self._waiting.pop(depth, ()):  # what waited for this one is stale
                self._provisional.pop(done, None)
        # Equal values share one object: a large repository's memo holds a few thousand
        # distinct values for hundreds of thousands of expressions.
        result = self._distinct.setdefault(result, result)
        low = self._low
        if low < depth:  # it read an expression still being computed: not final
            del memo[expr]
            self._provisional[expr] = (result, low)
            self._waiting.setdefault(low, []).append(expr)
            self._low = min(outer_low, low)
        else:
            memo[expr] = result
            self._low = outer_low
        return result

    def assume_tensor_inputs(self, functions: Iterable[str]) -> None:
        """Parameters of these functions hold tensors when no caller says otherwise. Of
        the values computed so far, only those read from the parameters of the functions
        this adds are forgotten."""
        added = set(functions) - self.tensor_inputs
        if added:
            self.tensor_inputs.update(added)
            self._forget_readers(added)

    def decide(self, condition: Truth) -> bool:
        """Whether a rule's condition holds, now that the repository is known."""
        return decide(condition, self.value, self.never)

    def _compute(self, expr: tuple[Any, ...]) -> Value:
        head = expr[0]
        if head == "o":
            operands = [e if isinstance(e, frozenset) else self.value(e) for e in expr[3:]]
            return evaluate_op(expr, operands, self)
        if head == "p":
            return self.parameter(expr[1], expr[2])
        if head == "c":
            return self.call_result(expr[1], expr[2])
        if head == "a":
            return self.attribute(expr[1], expr[2])
        if head == "g":
            return self.global_value(expr[1])
        if head == "l":
            fact = self.local_tables.get((expr[1], expr[2]))
            if fact is None or expr[3] >= len(fact.locals):
                return UNKNOWN
            return self.value(fact.locals[expr[3]])
        return UNKNOWN

    def parameter(self, function: str, name: str) -> Value:
        """What parameter ``name`` of ``function`` receives across the repository."""
        fact = self.model.functions.get(function)
        if fact is None or name.startswith("*"):
            return UNKNOWN
        if self._computing and self._readers is not None:
            self._readers.parameters.setdefault(function, []).append(self._computing[-1])
        parts: list[Value] = []
        for rc, offset in self.incoming.get(function, ()):
            bound = bind_argument(fact, rc.call, name, offset)
            if bound is not None:
                parts.append(self.value(bound))
        default = next((d for param, d in fact.defaults if param == name), None)
        if default is not None:
            parts.append(self.value(default))
        joined = join(*parts) if parts else UNKNOWN
        if joined == UNKNOWN and name not in fact.typed and (function in self.tensor_inputs or (
                fact.name == "forward" and fact.class_qualname in self.model.module_classes)):
            return tensor()  # what a network's forward (or a loss) receives when no caller says
        return joined

    def call_result(self, path: str, key: Any) -> Value:
        """What the call at ``key`` in file ``path`` returns."""
        rc = self.calls.get((path, key))
        if rc is None:
            return UNKNOWN
        call = rc.call
        if call.kind is CallKind.NAME:
            resolved = self.model.resolve(call.target, rc.file.module)
            if resolved is not None and resolved.kind == "class":
                return instance(resolved.name)
            if resolved is not None and resolved.kind == "external":
                return UNKNOWN
        if self._computing and self._readers is not None:
            self._readers.callees.setdefault((path, key), []).append(self._computing[-1])
        callees = self.callees(rc)
        parts = []
        if not callees:
            held = self.called_value(rc)
            if any(a.kind is Kind.INSTANCE and a.cls.startswith(TORCH_MODULES) for a in held):
                parts.append(tensor())  # a torch layer called on its input
            if call.kind is CallKind.VALUE and call.receiver and call.recv is not None:
                recv = self.value(call.recv)
                if any(a.kind is Kind.TENSOR for a in recv):
                    values = [self.value(e) for e in call.arg_values]
                    names = tuple(a.keyword for a in call.args if a.keyword)
                    parts.append(tensor_method(recv, call.target, values, names))
        for callee in callees:
            fact = self.model.functions.get(callee)
            if fact is None:
                continue
            if fact.name == "__init__" and call.kind is CallKind.NAME:
                parts.append(instance(fact.class_qualname or ""))
            elif fact.returns is not None:
                parts.append(self.value(self._returned(rc, fact, callee)))
        return join(*parts) if parts else UNKNOWN

    @staticmethod
    def _returned(rc: ResolvedCall, fact: FunctionFact, callee: str) -> Expr:
        """What ``callee`` returns to this call: a function that returns one of its
        parameters (``init_net(net)``: ``return net``) returns what this call passes,
        not what every caller passes (which would make each network any other)."""
        returns = fact.returns
        assert returns is not None
        single = returns
        if isinstance(single, tuple) and single[:3] == ("o", "join", ()) and len(single) == 4:
            single = single[3]  # the join of a single ``return``
        if isinstance(single, tuple) and single[0] == "p" and single[1] == callee:
            bound = bind_argument(fact, rc.call, single[2], _offset(rc, fact, callee))
            if bound is not None:
                return bound
        return returns

    def called_value(self, rc: ResolvedCall) -> Value:
        """What the called object holds: ``self.head`` in ``self.head(x)``, ``net`` in
        ``net(x)`` (empty for calls of names)."""
        call = rc.call
        if call.kind in (CallKind.SELF_ATTR, CallKind.SELF_METHOD):
            owner = self.model.owner_class(call.caller)
            return self.attribute(owner, call.target) if owner else UNKNOWN
        if call.kind is CallKind.INSTANCE:
            resolved = self.model.resolve(call.target, rc.file.module)
            return instance(resolved.name if resolved else call.target)
        if call.kind is CallKind.VALUE and call.recv is not None and not call.receiver:
            return self.value(call.recv)
        return NOTHING

    # ----- Env: what operations ask of the repository --------------------------------------

    def is_repository_class(self, cls: str) -> bool:
        """True for a class of the scanned repository."""
        return cls in self.model.classes

    def method(self, cls: str, name: str) -> Value:
        """What calling method ``name`` on an instance of ``cls`` returns."""
        found = self.model.find_method(cls, name)
        if found is not None:
            fact = self.model.functions[found]
            return self.value(fact.returns) if fact.returns is not None else UNKNOWN
        if name in SELF_RETURNING and cls in self.model.module_classes:
            return instance(cls)  # ``TinyNet().to(device)`` is the network itself
        parts = [self.method(sub.cls, "forward") for sub in self.attribute(cls, name)
                 if sub.kind is Kind.INSTANCE and sub.cls in self.model.classes]
        return join(*parts) if parts else UNKNOWN

    def attribute(self, cls: str, name: str) -> Value:
        """What ``self.<name>`` holds in class ``cls`` (assignments in it and its bases)."""
        if cls not in self.model.classes:
            return UNKNOWN
        parts = [self.value(expr) for owner in self.model.mro(cls)
                 for attr, expr in self.model.classes[owner].attr_values if attr == name]
        return join(*parts) if parts else UNKNOWN

    def option(self, module: str, name: str) -> Value:
        """The default of command-line option ``name`` (of the parser in ``module`` when
        it has one, else of any parser in the repository)."""
        own = self.model.modules.get(module)
        if own is not None and name in own.options:
            return self.value(own.options[name][0])
        for file in sorted(self.model.modules.values(), key=lambda f: f.path):
            if name in file.options:
                return self.value(file.options[name][0])
        return UNKNOWN

    def option_line(self, name: str) -> tuple[str, int] | None:
        """Where option ``name`` is declared (path, line)."""
        for file in sorted(self.model.modules.values(), key=lambda f: f.path):
            if name in file.options:
                return file.path, file.options[name][1]
        return None

    def global_value(self, dotted: str) -> Value:
        """What a module-level name holds (``pkg.config.cfg``), through imports."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = self.model.modules.get(".".join(parts[:i]))
            if module is None:
                continue
            name, rest = parts[i], parts[i + 1:]
            if name in module.globals:
                held = self.value(module.globals[name])
            else:
                bound = module.bindings.get(name)
                if not bound or bound == f"{module.module}.{name}" or bound == dotted:
                    return UNKNOWN
                held = self.global_value(".".join([bound, *rest]))
                rest = []
            for attr in rest:
                held = attribute(held, attr, self)
            return held
        return UNKNOWN

    # ----- what consumers ask ---------------------------------------------------------------

    def arguments(self, file: FileResult, call: CallSite) -> list[tuple[str | None, Value]]:
        """Each argument of a call with its keyword and value."""
        return [(arg.keyword, self.value(expr))
                for arg, expr in zip(call.args, call.arg_values, strict=False)]


def _offset(rc: ResolvedCall, fact: FunctionFact, callee: str) -> int:
    """How many parameters a call fills before its first argument (``self`` of a
    method called through an instance)."""
    last = rc.call.target.rsplit(".", 1)[-1]
    unbound = (rc.call.kind is CallKind.NAME and callee.endswith(f".{last}")
               and not callee.endswith(".__init__"))  # ``Base.forward(self, x)``
    bound = fact.class_qualname is not None and not fact.is_static and not unbound
    return 1 if bound else 0


def bind_argument(fact: FunctionFact, call: CallSite, name: str, offset: int) -> Expr | None:
    """The expression a call passes to parameter ``name`` of the function it runs."""
    if not call.arg_values:
        return None
    position = 0
    params = fact.params
    for arg, expr in zip(call.args, call.arg_values, strict=False):
        if arg.star == "*":
            return None  # positions after an unpacked sequence are unknown
        if arg.star:
            continue
        if arg.keyword is not None:
            if arg.keyword == name:
                return expr
            continue
        index = offset + position
        position += 1
        if index < len(params) and params[index] == name:
            return expr
    return None
