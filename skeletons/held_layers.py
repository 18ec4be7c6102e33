"""What a Module's ``self.<name>`` holds, read from its class body, so that a Cell reads a
held layer's parameters by their MindSpore names through an index as well:
``self.W = nn.Sequential(nn.Conv2d(...), nn.GroupNorm(...))`` makes ``self.W[1].weight``
the GroupNorm's ``gamma`` and leaves ``self.W[0].weight``, a convolution's, as it is.

A layer is known by the torch class called to make it: written out (``nn.GroupNorm(32,
c)``), or through a local name of the method bound only to torch layer classes (``bn =
nn.GroupNorm`` in each branch, then ``bn(32, c)``). A container is ``nn.Sequential`` with
its layers as arguments, ``nn.ModuleList`` of a list or tuple written in the call, or a
list or tuple of layers. A position is known when every container assigned to the name
that has it says which layers it may hold there; an attribute is renamed only when all of
them name it the same way, and anything not known stays as written."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from msready.analyzer.syntax import find_all
from msready.skeletons import apis
from msready.skeletons.statements import is_torch
from msready.skeletons.values import evaluate

# The torch classes a value may be an instance of; empty when it is not known.
Layers = frozenset[str]
Qualify = Callable[[cst.BaseExpression], str | None]

SEQUENTIAL = "torch.nn.Sequential"
MODULE_LIST = "torch.nn.ModuleList"


@dataclass(slots=True)
class Held:
    """The assignments to one ``self.<name>`` of a class: the torch layers assigned to it
    directly, and for each container assigned to it the layers at its positions (None for
    a container whose positions are not known, such as ``nn.Sequential(*layers)``)."""

    direct: set[str] = field(default_factory=set)
    containers: list[tuple[Layers, ...] | None] = field(default_factory=list)
    other: bool = False  # an assignment of something else (a repository class, a call)

    def at(self, index: int) -> Layers:
        """The torch layers ``self.<name>[index]`` may be, over the containers that have
        that position; empty when one of them does not say."""
        found: set[str] = set()
        for positions in self.containers:
            if positions is None:
                return frozenset()
            if -len(positions) <= index < len(positions):
                if not positions[index]:
                    return frozenset()
                found |= positions[index]
        return frozenset(found)

    def contained(self) -> set[str]:
        """The torch layers some container assigned to the name may hold."""
        return {name for positions in self.containers if positions is not None
                for layers in positions for name in layers}


def read_class(node: cst.ClassDef, qualify: Qualify) -> dict[str, Held]:
    """``self.<name>`` -> what the methods of ``node`` assign to it."""
    out: dict[str, Held] = {}
    for method in node.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        aliases = _aliases(method, qualify)
        for assign in find_all(method.body, m.Assign(targets=[m.AssignTarget(
                m.Attribute(value=m.Name("self")))])):
            assert isinstance(assign, cst.Assign)
            target = assign.targets[0].target
            assert isinstance(target, cst.Attribute)
            _note(out.setdefault(target.attr.value, Held()), assign.value, qualify, aliases)
    return out


def constant_index(node: cst.BaseExpression) -> tuple[str, int] | None:
    """``self.W[1]`` / ``self.W[-1]``: the attribute's name and the index."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 or not m.matches(
            node.value, m.Attribute(value=m.Name("self"))):
        return None
    assert isinstance(node.value, cst.Attribute)
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return None
    value = evaluate(index.value, {})  # ``1``, ``-1``, ``2 - 1``
    if type(value) is not int:
        return None
    return node.value.attr.value, value


def _note(held: Held, value: cst.BaseExpression, qualify: Qualify,
          aliases: dict[str, Layers]) -> None:
    if isinstance(value, cst.IfExp):  # the name holds either branch's value
        _note(held, value.body, qualify, aliases)
        _note(held, value.orelse, qualify, aliases)
        return
    if m.matches(value, m.Name("None")):
        return  # no layer (an optional one)
    container = _container(value, qualify)
    if container is not None:  # empty: filled later, or not written out
        held.containers.append(tuple(_layers(item, qualify, aliases) for item in container)
                               if container else None)
        return
    layers = _layers(value, qualify, aliases)
    if layers:
        held.direct |= layers
    else:
        held.other = True


def _container(value: cst.BaseExpression, qualify: Qualify
               ) -> tuple[cst.BaseExpression, ...] | None:
    """The items of a container written in the assignment; none for a container whose
    items are not (``nn.Sequential(*layers)``, an empty one filled later); None for
    anything else."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return _items(value.elements)
    if not isinstance(value, cst.Call):
        return None
    name = apis.canonical(qualify(value.func) or "")
    if name == SEQUENTIAL:
        if any(a.star or a.keyword is not None for a in value.args):
            return ()
        return tuple(a.value for a in value.args)
    if name == MODULE_LIST:
        if len(value.args) == 1 and not value.args[0].star and isinstance(
                value.args[0].value, (cst.List, cst.Tuple)):
            return _items(value.args[0].value.elements)
        return ()  # empty and appended to, or built from another value
    return None


def _items(elements: Iterable[cst.BaseElement]) -> tuple[cst.BaseExpression, ...]:
    items = tuple(elements)
    if not all(isinstance(e, cst.Element) for e in items):
        return ()  # ``[*layers, head]``
    return tuple(e.value for e in items)


def _layers(value: cst.BaseExpression, qualify: Qualify,
            aliases: dict[str, Layers]) -> Layers:
    """The torch classes a layer written as ``value`` may be: a call of a torch class or
    of a local name bound to torch classes, either of a conditional expression."""
    if isinstance(value, cst.IfExp):
        return _either(value, lambda branch: _layers(branch, qualify, aliases))
    if not isinstance(value, cst.Call):
        return frozenset()
    if isinstance(value.func, cst.Name) and value.func.value in aliases:
        return aliases[value.func.value]
    return _classes(value.func, qualify)


def _classes(value: cst.BaseExpression, qualify: Qualify) -> Layers:
    """The torch class ``value`` names (``nn.GroupNorm``), or either of a conditional
    expression's."""
    if isinstance(value, cst.IfExp):
        return _either(value, lambda branch: _classes(branch, qualify))
    name = qualify(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
    if not is_torch(name):
        return frozenset()
    assert name is not None
    canonical = apis.canonical(name)
    leaf = canonical.rsplit(".", 1)[-1]
    return frozenset({canonical}) if canonical.startswith("torch.nn.") and leaf[:1].isupper() \
        else frozenset()


def _either(value: cst.IfExp, read: Callable[[cst.BaseExpression], Layers]) -> Layers:
    """The layers ``a if c else b`` may be: both branches', when both are known."""
    body, orelse = read(value.body), read(value.orelse)
    return body | orelse if body and orelse else frozenset()


def _aliases(method: cst.FunctionDef, qualify: Qualify) -> dict[str, Layers]:
    """Local names of ``method`` bound only to torch layer classes (``bn = nn.GroupNorm``
    in every branch, ``conv, bn = nn.Conv2d, nn.GroupNorm``): name -> the classes."""
    bound: dict[str, set[str]] = {}
    unknown: set[str] = set()
    for assign in find_all(method.body, m.Assign()):
        assert isinstance(assign, cst.Assign)
        for target in assign.targets:
            for name, value in _pairs(target.target, assign.value):
                classes = _classes(value, qualify) if value is not None else frozenset()
                if classes:
                    bound.setdefault(name, set()).update(classes)
                else:
                    unknown.add(name)
    return {name: frozenset(classes) for name, classes in bound.items()
            if name not in unknown}


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression | None
           ) -> list[tuple[str, cst.BaseExpression | None]]:
    """The local names an assignment binds, each with the value it gets where the
    assignment says (``a, b = x, y``), else None."""
    if isinstance(target, cst.Name):
        return [(target.value, value)]
    if not isinstance(target, (cst.Tuple, cst.List)):
        return []  # ``self.x = ...``, ``d[k] = ...``: no local name
    targets = list(target.elements)
    values = list(value.elements) if isinstance(value, (cst.Tuple, cst.List)) else None
    paired = values is not None and len(values) == len(targets) and all(
        isinstance(e, cst.Element) for e in [*targets, *values])
    out: list[tuple[str, cst.BaseExpression | None]] = []
    for i, element in enumerate(targets):
        inner = values[i].value if paired and values is not None else None
        out += _pairs(element.value, inner)
    return out
