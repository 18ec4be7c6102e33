"""The network structure part of the checklist: which repository Module holds which.

A Module *holds* another when its attributes hold an instance (``self.stem = Conv(...)``,
``nn.ModuleList([Block() ...])``), when the value analysis says an attribute holds one
(``self.backbone = backbone`` with ``Detector(Backbone(), Head())`` at the call site), or
when its ``__init__`` builds one (``if backbone is None: backbone = Backbone()``). The
*top-level network* is the Module nobody else holds that holds the most; a *leaf* holds
no other Module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msready.analyzer.checklist_source import name_words
from msready.analyzer.facts import CallKind
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.values import Kind

if TYPE_CHECKING:
    import networkx as nx

MAX_TREE_DEPTH = 2
MAX_PARTS = 8
MAX_OTHER_NETWORKS = 5


def _self_calls(model: RepositoryModel) -> dict[str, list[str]]:
    """The targets of ``self.<name>(...)`` calls by every dotted prefix of the function
    that makes them (so by the class a method, or a function nested in one, is in), in
    the model's order of callers."""
    found: dict[str, list[str]] = {}
    for caller, calls in model.calls_by_caller.items():
        targets = [rc.call.target for rc in calls
                   if rc.call.kind in (CallKind.SELF_ATTR, CallKind.SELF_METHOD)]
        if targets:
            parts = caller.split(".")
            for end in range(1, len(parts)):
                found.setdefault(".".join(parts[:end]), []).extend(targets)
    return found


def _self_names(model: RepositoryModel, cls: str, self_calls: dict[str, list[str]],
                ) -> list[str]:
    """Attribute names the class uses (``self.head(...)``, ``self.head = ...``);
    ``self_calls`` is :func:`_self_calls` of the model."""
    names = [a for c in model.mro(cls) for a, _ in model.classes[c].attributes]
    names += self_calls.get(cls, [])
    return list(dict.fromkeys(names))


def _built_in_init(model: RepositoryModel, cls: str) -> list[str]:
    """Repository Module classes the class's ``__init__`` constructs."""
    init = f"{cls}.__init__"
    found = []
    for rc in model.calls_by_caller.get(init, ()):
        for callee in rc.callees:
            held = callee.rsplit(".", 1)[0]
            if callee.endswith(".__init__") and held in model.module_classes and held != cls:
                found.append(held)
    return list(dict.fromkeys(found))


def _held_values(model: RepositoryModel, cls: str) -> list[tuple[str, str]]:
    """(attribute, repository Module class) pairs the value analysis says ``self.<attr>``
    holds: constructor arguments followed to what the callers pass, containers to their
    elements."""
    names = sorted({a for c in model.mro(cls) for a, _ in model.classes[c].attr_values})
    found = []
    for attr in names:
        try:
            value = model.values.attribute(cls, attr)
        except (RecursionError, KeyError, TypeError, ValueError):
            continue
        atoms = list(value)
        atoms += [inner for a in value if a.item is not None for inner in a.item]
        found += [(attr, a.cls) for a in atoms
                  if a.kind is Kind.INSTANCE and a.cls in model.module_classes]
    return list(dict.fromkeys(found))


def containment(model: RepositoryModel) -> nx.DiGraph:
    """Module class -> the repository Module classes it holds (edge ``attr``: the
    attribute, or the class's name in lower case when only ``__init__`` shows it)."""
    import networkx  # where it is used: see RepositoryModel.__init__

    graph = networkx.DiGraph()
    graph.add_nodes_from(model.module_classes)
    self_calls = _self_calls(model)
    for cls in model.module_classes:
        for attr in sorted({a for c in model.mro(cls) for a, _ in model.classes[c].attributes}):
            for held in model.attribute_classes(cls, attr):
                if held.kind == "class" and held.name in model.module_classes and held.name != cls:
                    label = attr
                    if graph.has_edge(cls, held.name):  # several attributes of one class
                        label = f"{graph.edges[cls, held.name]['attr']}, {attr}"
                    graph.add_edge(cls, held.name, attr=label)
        for attr, part in _held_values(model, cls):
            if part != cls and not graph.has_edge(cls, part):
                graph.add_edge(cls, part, attr=attr)
        built = [h for h in _built_in_init(model, cls) if not graph.has_edge(cls, h)]
        if built:
            names = _self_names(model, cls, self_calls)
            for part in built:
                words = name_words(model.classes[part].name)
                attr = next((n for n in names if name_words(n) & words),
                            model.classes[part].name.lower())
                graph.add_edge(cls, part, attr=attr)
    return graph


def leaves_first(graph: nx.DiGraph) -> list[str]:
    """Classes that use no other repository Module first, then those built from them."""
    import networkx

    condensed = networkx.condensation(graph)
    order: list[str] = []
    for component in reversed(list(networkx.lexicographical_topological_sort(
            condensed, key=lambda n: min(condensed.nodes[n]["members"])))):
        order.extend(sorted(condensed.nodes[component]["members"]))
    return order


def top_networks(graph: nx.DiGraph) -> list[str]:
    """Modules nobody holds that hold others, the one holding the most first."""
    roots = [c for c in graph if graph.in_degree(c) == 0 and graph.out_degree(c) > 0]
    import networkx

    size = {c: len(networkx.descendants(graph, c)) for c in roots}
    return sorted(roots, key=lambda c: (-size[c], c))


def leaves(graph: nx.DiGraph) -> list[str]:
    """Modules that hold no other repository Module."""
    return sorted(c for c in graph if graph.out_degree(c) == 0)


def tree_text(model: RepositoryModel, graph: nx.DiGraph, cls: str,
              depth: int = MAX_TREE_DEPTH) -> str:
    """``backbone: Backbone [stem: Conv, dark2: Conv]; head: Head [cls: Conv]``: the main
    parts of a network, ``depth`` levels down."""
    def parts(node: str, level: int, seen: frozenset[str]) -> list[str]:
        edges = sorted(graph.out_edges(node, data="attr"), key=lambda e: (str(e[2]), e[1]))
        out = []
        for _, held, attr in edges[:MAX_PARTS]:
            text = f"{attr}: {model.classes[held].name}"
            if level < depth and held not in seen and graph.out_degree(held):
                inner = parts(held, level + 1, seen | {held})
                text += " [" + ", ".join(inner) + "]"
            out.append(text)
        if len(edges) > MAX_PARTS:
            out.append(f"... {len(edges) - MAX_PARTS} more")
        return out
    return "; ".join(parts(cls, 1, frozenset({cls})))
