"""Where code runs: in the compiled graph, on the host, or nobody in the repository says.

MindSpore compiles a network's ``construct`` and, in a training step, the loss computed
from its output inside the differentiated function. So a hazard matters most in:

- **graph** code: everything reachable from a Module's ``forward`` (or an
  ``autograd.Function``), and the functions that compute the loss between the network's
  output and ``backward()`` / ``autograd.grad`` (found through the value analysis: the
  calls whose results flow into the differentiated value);
- **host** code runs in Python around the graph: module-level scripts and what they call,
  ``Dataset`` methods, collate functions, the training loop itself, the repository's tests,
  and a Module's helper methods that its forward never reaches (initialisation, generation
  loops, plotting);
- **unknown**: functions outside Module classes that nothing in the repository calls,
  typically a library's public API. Their hazards are reported at lower severity, since
  they matter only if a network calls them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from msready.analyzer.facts import CallKind
from msready.analyzer.valueflow import bind_argument

if TYPE_CHECKING:
    import networkx as nx

    from msready.analyzer.repo import RepositoryModel

GRAPH = "graph"
HOST = "host"
UNKNOWN = "unknown"
DIFFERENTIATE = frozenset({"torch.Tensor.backward", "torch.autograd.grad",
                           "torch.autograd.backward"})
DATASET_BASES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
    "torch.utils.data.dataset.Dataset", "torch.utils.data.Sampler",
    "torch.utils.data.dataset.IterableDataset"})
HOST_CALLS = DIFFERENTIATE | frozenset({
    "torch.save", "torch.load", "builtins.print", "builtins.open", "builtins.input",
    "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
HOST_METHODS = frozenset({"zero_grad", "backward"})


class Placement:
    """Where each function of the repository runs; see the module docstring."""

    def __init__(self, model: RepositoryModel) -> None:
        self.model = model

    @cached_property
    def loss_roots(self) -> dict[str, str]:
        """Functions computing a differentiated value -> the function that differentiates
        it (the training step)."""
        model = self.model
        values = model.values
        roots: dict[str, str] = {}
        for rc in model.calls:
            call = rc.call
            if (rc.external or call.target) not in DIFFERENTIATE:
                continue
            if call.kind is CallKind.TENSOR_METHOD:
                loss = call.recv
            else:
                loss = next((e for a, e in zip(call.args, call.arg_values, strict=False)
                             if a.keyword in (None, "outputs", "tensors")), None)
            if loss is None:
                continue
            for key in _call_refs(loss, values, depth=0):
                resolved = values.calls.get(key)
                if resolved is None:
                    continue
                for callee in values.callees(resolved):
                    roots.setdefault(callee, call.caller)
        return roots

    @cached_property
    def graph_paths(self) -> dict[str, tuple[str, ...]]:
        """Every graph function with the shortest path to it from a forward or a loss."""
        model = self.model
        forwards = set(model.forward_roots())
        starts = [*sorted(forwards), *(r for r in self.loss_roots if r in model.functions)]
        out: dict[str, tuple[str, ...]] = {}
        for fn, trail in shortest_paths(model.graph, starts).items():
            # A network's forward is its own root; a loss function is reached from the
            # training step that differentiates it.
            step = self.loss_roots.get(trail[0]) if trail and trail[0] not in forwards else None
            out[fn] = (step, *trail) if step and step in model.functions else trail
        return out

    @cached_property
    def host_functions(self) -> frozenset[str]:
        """Functions reached from host entry points (scripts, datasets, collate
        functions) and not from the graph."""
        model = self.model
        starts: set[str] = set()
        for rc in model.calls:
            if rc.call.caller not in model.functions:  # module-level code
                starts.update(model.values.callees(rc))
            for arg in rc.call.args:
                if arg.keyword in ("collate_fn", "worker_init_fn", "target_transform",
                                   "transform"):
                    resolved = model.resolve(arg.text, rc.file.module)
                    if resolved is not None and resolved.kind == "function":
                        starts.add(resolved.name)
        for cls in model.classes:
            if any(base in DATASET_BASES for base in model.external_bases(cls)):
                starts.update(f"{c}.{m}" for c in [cls] for m in model.classes[cls].methods)
        starts.update(self.host_signals)
        starts.update(fn for fn in model.functions if _is_test(model.function_module[fn]))
        import networkx  # where it is used: see RepositoryModel.__init__

        reached: set[str] = set()
        for start in starts:
            if start in model.graph and start not in reached:
                reached.add(start)
                reached.update(networkx.descendants(model.graph, start))
        return frozenset(reached - set(self.graph_paths))

    @cached_property
    def host_signals(self) -> frozenset[str]:
        """Functions that only host code runs: they differentiate, step an optimizer, save
        or load checkpoints, print, open files or build a DataLoader."""
        found: set[str] = set()
        for rc in self.model.calls:
            target = rc.external or rc.call.target
            name = target.rsplit(".", 1)[-1]
            if target in HOST_CALLS or (rc.call.kind in (CallKind.VALUE, CallKind.TENSOR_METHOD)
                                        and name in HOST_METHODS):
                found.add(rc.call.caller)
        return frozenset(found)

    @cached_property
    def torch_functions(self) -> frozenset[str]:
        """Functions that call a torch API or a Tensor method: the ones whose hazards can
        matter inside a network."""
        return frozenset(rc.call.caller for rc in self.model.calls if rc.external is not None
                         and rc.external.split(".")[0] in ("torch", "torchvision"))

    def where(self, function: str | None) -> str:
        """``graph``, ``host`` or ``unknown`` for a function (module-level code: host)."""
        if function is None or function not in self.model.functions:
            return HOST
        if function in self.graph_paths:
            return GRAPH
        if function in self.host_functions:
            return HOST
        owner = self.model.owner_class(function)
        if owner is not None and (owner in self.model.module_classes
                                  or owner in self.model.function_classes):
            return HOST
        return UNKNOWN

    def reports_forward_hazard(self, function: str | None) -> bool:
        """Whether a hazard that matters only in graph code is reported in ``function``:
        in graph code, and in a library function nothing calls that uses torch."""
        where = self.where(function)
        return where == GRAPH or (where == UNKNOWN and function in self.torch_functions)

    def trace(self, function: str | None) -> tuple[str, ...]:
        """The path from a forward (or a training step's loss) to a graph function."""
        if function is None:
            return ()
        return self.graph_paths.get(function, ())


def _is_test(module: str) -> bool:
    """A module of the repository's tests (run by a test runner, on the host)."""
    parts = module.split(".")
    return any(p in ("tests", "test", "testing") for p in parts[:-1]) or parts[-1].startswith(
        "test_") or parts[-1].endswith("_test") or parts[-1] == "conftest"


def _call_refs(expr: Any, values: Any, depth: int) -> Iterator[tuple[str, Any]]:
    """The repository calls whose results an expression is computed from, looking through
    parameters into what callers pass (a few levels)."""
    if isinstance(expr, frozenset) or not isinstance(expr, tuple) or depth > 8:
        return
    head = expr[0]
    if head == "c":
        yield (expr[1], expr[2])
    elif head == "o":
        for operand in expr[3:]:
            yield from _call_refs(operand, values, depth)
    elif head == "l":
        fact = values.local_tables.get((expr[1], expr[2]))
        if fact is not None and expr[3] < len(fact.locals):
            yield from _call_refs(fact.locals[expr[3]], values, depth + 1)
    elif head == "p":
        fact = values.model.functions.get(expr[1])
        if fact is None:
            return
        for rc, offset in values.incoming.get(expr[1], ()):
            bound = bind_argument(fact, rc.call, expr[2], offset)
            if bound is not None:
                yield from _call_refs(bound, values, depth + 1)


def shortest_paths(graph: nx.DiGraph, roots: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Every node some root reaches, with a shortest path to it from a root, found
    breadth first with the roots in their order and each node's successors in the
    graph's order: the paths networkx's ``single_source_shortest_path`` finds from a
    node linked to every root, without copying the graph to add that node."""
    paths: dict[str, tuple[str, ...]] = {}
    level: list[str] = []
    for root in roots:
        if root not in paths:
            paths[root] = (root,)
            level.append(root)
    successors = graph.succ
    while level:
        following = []
        for node in level:
            for found in successors.get(node, ()):
                if found not in paths:
                    paths[found] = (*paths[node], found)
                    following.append(found)
        level = following
    return paths
