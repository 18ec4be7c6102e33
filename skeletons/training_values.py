"""Following values of the value analysis to where they come from, for the training
steps: the construction of an optimizer, a loss or a network (with its arguments' values)
behind a name, ``self.<attribute>``, a parameter or a repository function's return."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from msready.analyzer.facts import CallKind
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.analyzer.valueflow import bind_argument
from msready.analyzer.values import Expr, Kind, Value
from msready.skeletons import apis

# Methods that return the same object (``Net().to(device)``), followed to a construction.
SAME_OBJECT = frozenset({"to", "cuda", "cpu", "train", "float", "double", "half"})
_MAX_DEPTH = 12
# Wrappers a training script calls instead of the network: the network is their argument.
_WRAPPERS = ("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
             "torch.nn.parallel.DataParallel",
             "torch.nn.parallel.distributed.DistributedDataParallel",
             "torch.nn.parallel.data_parallel.DataParallel")


@dataclass(slots=True)
class Construction:
    """A torch object built in the repository: its class and its arguments' values
    (:data:`UNKNOWN_VALUE` where the value analysis does not know one)."""

    torch: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    owner: list[str] = field(default_factory=list)  # the classes whose parameters it takes
    groups: bool = False  # built from something else than ``model.parameters()``
    inner: list[str] = field(default_factory=list)  # the classes of the first argument


UNKNOWN_VALUE: Any = type("UnknownValue", (), {"__repr__": lambda self: "UNKNOWN"})()


def constant(value: Value) -> Any:
    """A Python constant (numbers, strings, bools, None, tuples of those) a value holds
    for sure, else :data:`UNKNOWN_VALUE`."""
    if len(value) != 1:
        return UNKNOWN_VALUE
    atom = next(iter(value))
    if atom.kind is Kind.CONST and isinstance(atom.const, (int, float, str, bool, type(None))):
        return atom.const
    if atom.kind is Kind.CONST and isinstance(atom.const, tuple):
        return atom.const
    if atom.kind is Kind.SEQ and atom.items is not None:
        items = tuple(constant(v) for v in atom.items)
        return UNKNOWN_VALUE if any(i is UNKNOWN_VALUE for i in items) else items
    return UNKNOWN_VALUE


def instance_classes(value: Value) -> list[str]:
    """The classes an object may be an instance of, in a stable order."""
    return sorted({apis.canonical(a.cls) for a in value if a.kind is Kind.INSTANCE and a.cls})

class ValueReader:
    """Where the values of the repository come from; see the module docstring."""

    def __init__(self, model: RepositoryModel,
                 sources: dict[tuple[str, int | None], str] | None = None) -> None:
        self.model = model
        self.values = model.values
        self.sources = sources or {}

    # ----- following values ------------------------------------------------------------

    def origins(self, expr: Expr, depth: int = 0) -> Iterator[Expr]:
        """The expressions a value may come from: through local names, ``self.<attr>``
        assignments, parameters (what callers pass), module globals, what repository
        functions return, and ``.to(device)``-style calls. Ends at torch calls, calls of
        external code and constants."""
        if depth > _MAX_DEPTH or not isinstance(expr, tuple):
            return
        head = expr[0]
        values = self.values
        if head == "l":
            fact = values.local_tables.get((expr[1], expr[2]))
            if fact is not None and expr[3] < len(fact.locals):
                yield from self.origins(fact.locals[expr[3]], depth + 1)
        elif head == "a":
            for cls in self.model.mro(expr[1]):
                owner = self.model.classes.get(cls)
                for attr, value in owner.attr_values if owner else ():
                    if attr == expr[2]:
                        yield from self.origins(value, depth + 1)
        elif head == "p":
            fact = self.model.functions.get(expr[1])
            for rc, offset in values.incoming.get(expr[1], ()) if fact else ():
                assert fact is not None
                bound = bind_argument(fact, rc.call, expr[2], offset)
                if bound is not None:
                    yield from self.origins(bound, depth + 1)
            default = dict(fact.defaults).get(expr[2]) if fact else None
            if default is not None:
                yield from self.origins(default, depth + 1)
        elif head == "g":
            yield from self._global(expr[1], depth)
        elif head == "o" and expr[1] == "method" and expr[2][0] in SAME_OBJECT:
            yield from self.origins(expr[3], depth + 1)
        elif head == "o" and expr[1] == "method":
            yield from self._method_origins(expr, depth)
        elif head == "o" and expr[1] == "join":
            for operand in expr[3:]:
                yield from self.origins(operand, depth + 1)
        elif head == "o" and expr[1] == "elem" and isinstance(expr[2][0], int):
            for inner in self.origins(expr[3], depth + 1):
                if isinstance(inner, tuple) and inner[:2] == ("o", "seq") and \
                        expr[2][0] < len(inner) - 3:
                    yield from self.origins(inner[3 + expr[2][0]], depth + 1)
                else:
                    yield expr
        elif head == "c":
            called = values.calls.get((expr[1], expr[2]))
            returned = False
            for callee in values.callees(called) if called is not None else ():
                fact = self.model.functions.get(callee)
                if fact is not None and fact.name != "__init__" and fact.returns is not None:
                    returned = True
                    yield from self.origins(fact.returns, depth + 1)
            if not returned:
                yield expr
        else:
            yield expr

    def _method_origins(self, expr: tuple[Any, ...], depth: int) -> Iterator[Expr]:
        """What a repository method called on a value returns
        (``model.configure_optimizers(config)``)."""
        found = False
        for cls in instance_classes(self.values.value(expr[3])):
            method = self.model.find_method(cls, expr[2][0]) if cls in self.model.classes \
                else None
            fact = self.model.functions.get(method) if method else None
            if fact is not None and fact.returns is not None:
                found = True
                yield from self.origins(fact.returns, depth + 1)
        if not found:
            yield expr

    def _global(self, dotted: str, depth: int) -> Iterator[Expr]:
        module, _, name = dotted.rpartition(".")
        file = self.model.modules.get(module)
        if file is not None and name in file.globals:
            yield from self.origins(file.globals[name], depth + 1)

    def construction(self, expr: Expr, accept: tuple[str, ...]) -> Construction | None:
        """The torch construction (``optim.SGD(...)``) a value comes from, when its class
        starts with one of ``accept``."""
        for origin in self.origins(expr):
            if not (isinstance(origin, tuple) and origin[0] == "o" and origin[1] == "torch"):
                continue
            target, names = apis.canonical(origin[2][0]), origin[2][1]
            if not target.startswith(accept):
                continue
            operands = list(origin[3:])
            cut = len(operands) - len(names)
            built = Construction(target)
            built.args = [constant(self.values.value(e)) for e in operands[:cut]]
            built.kwargs = {n: constant(self.values.value(e))
                            for n, e in zip(names, operands[cut:], strict=True)}
            first = operands[0] if cut else None
            if isinstance(first, tuple) and first[:2] == ("o", "method") and \
                    first[2][0] in ("parameters", "named_parameters") and len(first) > 3:
                built.owner = instance_classes(self.values.value(first[3]))
            else:
                built.groups = True
            if cut:
                built.inner = self.classes_of(operands[0])
            return built
        return None

    def classes_of(self, expr: Expr, depth: int = 0) -> list[str]:
        """The classes a value is an instance of, by the value analysis, else by where
        it comes from (a repository class's construction, through
        ``convert_sync_batchnorm(net)``-style torch calls that return their argument)."""
        found = instance_classes(self.values.value(expr))
        if found or depth > 3:
            return found
        classes: set[str] = set()
        for origin in self.origins(expr):
            if not isinstance(origin, tuple):
                continue
            if origin[0] == "c":
                rc = self.values.calls.get((origin[1], origin[2]))
                resolved = self.model.resolve(rc.call.target, rc.file.module) if rc else None
                if resolved is not None and resolved.kind == "class":
                    classes.add(resolved.name)
            elif origin[:2] == ("o", "torch") and origin[2][0].endswith(
                    "convert_sync_batchnorm") and len(origin) > 3:
                classes.update(self.classes_of(origin[3], depth + 1))
        return sorted(classes)

    def construction_before(self, rc: ResolvedCall, cls: str) -> Construction | None:
        """``criterion = nn.CrossEntropyLoss(...)`` before ``criterion(out, y)`` in the
        same function (a call of a local instance)."""
        built = None
        for other in self.model.calls_by_caller.get(rc.call.caller, []):
            if other.call.span.line > rc.call.span.line or \
                    apis.canonical(other.external or "") != cls:
                continue
            built = self.built_at(other, cls)
        return built

    def built_at(self, site: ResolvedCall, cls: str) -> Construction:
        """The construction at one call site, with its arguments' values."""
        built = Construction(cls)
        for i, arg in enumerate(site.call.args):
            if arg.star:
                continue
            if arg.is_literal:
                value = arg.literal
            elif i < len(site.call.arg_values):
                value = constant(self.values.value(site.call.arg_values[i]))
            else:
                value = UNKNOWN_VALUE
            if arg.keyword:
                built.kwargs[arg.keyword] = value
            else:
                built.args.append(value)
        return built

    def construction_near(self, rc: ResolvedCall, cls: str) -> Construction | None:
        """The construction of ``cls`` a value-less receiver most likely holds: before
        ``rc`` in the same function, else the only one in its file or the repository."""
        built = self.construction_before(rc, cls)
        if built is not None:
            return built
        sites = [s for s in self.model.calls if apis.canonical(s.external or "") == cls
                 and s.call.kind is CallKind.NAME]
        same_file = [s for s in sites if s.file.path == rc.file.path]
        for group in (same_file, sites):
            if len(group) == 1:
                return self.built_at(group[0], cls)
        return None

    def called(self, rc: ResolvedCall) -> list[str]:
        """The classes of the object a call calls (``criterion(out, y)``, ``model(x)``)."""
        if rc.call.kind not in (CallKind.VALUE, CallKind.INSTANCE, CallKind.SELF_ATTR,
                                CallKind.SELF_METHOD):
            return []
        if rc.call.kind is CallKind.VALUE and rc.call.receiver:
            return []  # a method call (``obj.run(x)``), not a call of the object
        classes = instance_classes(self.values.called_value(rc))
        if any(c in _WRAPPERS for c in classes) and rc.call.recv is not None:
            wrapped = self.construction(rc.call.recv, _WRAPPERS)
            inner = wrapped.inner if wrapped is not None else []
            return inner or classes
        return classes
