"""The repository model: modules, classes, functions and the cross-file call graph.

Built once from every file's facts. Names recorded per file are resolved here against
the whole repository: ``from .helpers import assign`` reaches the function in
``helpers.py``, ``from utils import F`` follows ``utils/__init__.py``'s own import of
``torch.nn.functional``. The call graph (networkx) links plain calls, imported helpers,
``self.method()``, ``self.sub(...)`` to the submodule class's ``forward``, ``super()``
calls and ``Function.apply``. "Reachable from a forward" and "the path from a forward to
here" are queries on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar, cast

from msready.analyzer.facts import CallKind, CallSite, ClassFact, FileResult, FunctionFact
from msready.analyzer.placement import Placement, shortest_paths
from msready.analyzer.valueflow import ValueAnalysis

if TYPE_CHECKING:
    import networkx as nx

TORCH_ROOTS = ("torch", "torchvision")
# The packages MindSpore itself requires (``Requires:`` of its wheel, by import name): they
# are installed wherever MindSpore runs, so a generated Cell keeps them as they are.
# ``tests/test_skeletons_imports.py`` checks the list against the installed wheel.
MINDSPORE_REQUIRES = frozenset({"numpy", "scipy", "packaging", "PIL", "psutil", "dill",
                                "safetensors", "asttokens", "astunparse"})
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module",
                          "torch.jit.ScriptModule"})
NOT_MODULE_PREFIXES = ("torch.nn.functional", "torch.nn.init", "torch.nn.utils",
                       "torch.nn.parameter", "torch.nn.Parameter")
FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Resolved:
    """What a dotted name is: a repository ``function`` / ``class`` / ``module``, or an
    ``external`` name (``torch.nn.Conv2d``, ``numpy.where``)."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class ResolvedCall:
    """A call site with its callee resolved against the repository."""

    file: FileResult
    call: CallSite
    callees: tuple[str, ...]  # repository functions it may run
    external: str | None  # fully qualified external name (torch API, numpy, ...)


class RepositoryModel:
    """Every file's facts joined into one queryable model."""

    def __init__(self, files: list[FileResult], target: str = "cpu") -> None:
        self.target = target  # the MindSpore backend findings are judged against
        self.files = {f.path: f for f in files}
        self.modules: dict[str, FileResult] = {}
        for f in files:
            if f.status == "parsed":
                self.modules.setdefault(f.module, f)
        self.functions: dict[str, FunctionFact] = {}
        self.function_module: dict[str, str] = {}
        self.classes: dict[str, ClassFact] = {}
        self.class_module: dict[str, str] = {}
        for f in self.modules.values():
            for fn in f.functions:
                self.functions.setdefault(fn.qualname, fn)
                self.function_module.setdefault(fn.qualname, f.module)
            for cls in f.classes:
                self.classes.setdefault(cls.qualname, cls)
                self.class_module.setdefault(cls.qualname, f.module)
        self._resolve_cache: dict[tuple[str, str], Resolved | None] = {}
        self._mro: dict[str, tuple[str, ...]] = {}
        self._attribute_classes: dict[tuple[str, str], list[Resolved]] = {}
        self._attribute_tables: dict[str, dict[str, tuple[str, ...]]] = {}
        self._provided: dict[str, object] = {}
        # networkx is imported where a graph is built or walked, not at the top: the
        # worker processes import this module (through the rules) but never build a graph,
        # and it would cost 15 MB in each of them.
        import networkx

        self.graph: nx.DiGraph = networkx.DiGraph()
        self.calls: list[ResolvedCall] = []
        self._build_graph()
        # What every expression holds, across functions and files; it also adds the call
        # edges that only values tell (``self.critic(x)``, ``net_d(fake)``).
        self.values = ValueAnalysis(self)
        self.values.assume_tensor_inputs(self.placement.loss_roots)
        self.values.settle()

    def provide(self, name: str, compute: Callable[[], T]) -> T:
        """The analysis ``name`` of the whole repository, computed by ``compute`` when a
        rule first reads it and shared by every rule that reads it after (as LibCST's
        metadata providers are); ``compute`` must depend on the model alone."""
        if name not in self._provided:
            self._provided[name] = compute()
        return cast(T, self._provided[name])

    # ----- names ----------------------------------------------------------------------

    def _module_for(self, dotted_name: str, from_module: str) -> str | None:
        if dotted_name in self.modules:
            return dotted_name
        if dotted_name.split(".")[0] in TORCH_ROOTS:
            return None
        parts = from_module.split(".")[:-1]
        while parts:
            candidate = ".".join([*parts, dotted_name])
            if candidate in self.modules:
                return candidate
            parts.pop()
        return None

    def resolve(self, name: str, from_module: str = "") -> Resolved | None:
        """Resolve a dotted name seen in ``from_module`` against the repository."""
        key = (name, from_module)
        if key not in self._resolve_cache:
            self._resolve_cache[key] = None  # guards alias cycles
            self._resolve_cache[key] = self._resolve(name, from_module, 0)
        return self._resolve_cache[key]

    def qualify(self, name: str, module: str, depth: int = 0) -> str | None:
        """The qualified target of a dotted name as written in ``module``: through the
        file's imports, or a star import's; None for a name the file does not import."""
        file = self.modules.get(module)
        if file is None:
            return None
        head, _, rest = name.partition(".")
        bound = file.bindings.get(head)
        if bound is None:  # bound by a star import, if any binds it
            stars = [t for k, t in file.bindings.items() if k.startswith("*") and t != module]
            found = (self.qualify(name, star, depth + 1) for star in stars if depth < 8)
            return next((q for q in found if q is not None), None)
        full = f"{bound}.{rest}" if rest else bound
        resolved = self.resolve(full, module)
        return resolved.name if resolved is not None else full

    def _package_binding(self, module: str) -> str | None:
        """What a package's ``__init__`` binds under a submodule's name, when that is not
        the submodule: after ``from .create_conv2d import create_conv2d`` the package's
        ``create_conv2d`` is the function, as Python's import leaves it."""
        package, _, leaf = module.rpartition(".")
        init = self.modules.get(package)
        bound = init.bindings.get(leaf) if init is not None and init.path.endswith(
            "__init__.py") else None
        return bound if bound and bound != module else None

    def _resolve(self, name: str, from_module: str, depth: int) -> Resolved | None:
        if depth > 20 or not name:
            return None
        if name in self.functions:
            return Resolved("function", name)
        if name in self.classes:
            return Resolved("class", name)
        if name.startswith("builtins."):
            return Resolved("external", name)
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            module = self._module_for(".".join(parts[:i]), from_module)
            if module is None:
                continue
            rest = parts[i:]
            if not rest:
                shadow = self._package_binding(module)
                if shadow is not None:
                    return self._resolve(shadow, from_module, depth + 1)
                return Resolved("module", module)
            full = ".".join([module, *rest])
            if full in self.functions:
                return Resolved("function", full)
            if full in self.classes:
                return Resolved("class", full)
            bound = self.modules[module].bindings.get(rest[0])
            if bound and bound != f"{module}.{rest[0]}":
                return self._resolve(".".join([bound, *rest[1:]]), module, depth + 1)
            for star_name, star in self.modules[module].bindings.items():
                if star_name.startswith("*") and star != module:
                    found = self._resolve(".".join([star, *rest]), module, depth + 1)
                    if found is not None:
                        return found
            return None
        source = self.modules.get(from_module)
        if depth == 0 and source is not None and parts[0] not in source.bindings and any(
                k.startswith("*") for k in source.bindings):  # a name a star import binds
            found = self._resolve(f"{from_module}.{name}", from_module, depth + 1)
            if found is not None:
                return found
        return Resolved("external", name)

    # ----- classes ----------------------------------------------------------------------

    def bases(self, class_qualname: str) -> list[Resolved]:
        """The resolved direct bases of a repository class."""
        cls = self.classes.get(class_qualname)
        if cls is None:
            return []
        module = self.class_module[class_qualname]
        out = []
        for base in cls.bases:
            resolved = self.resolve(base, module)
            out.append(resolved or Resolved("unknown", base))
        return out

    def mro(self, class_qualname: str) -> tuple[str, ...]:
        """The repository classes searched for attributes, the class itself first
        (found once per class: the value analysis asks for it tens of thousands of times)."""
        order = self._mro.get(class_qualname)
        if order is None:
            order = self._mro[class_qualname] = tuple(self._search_order(class_qualname))
        return order

    def _search_order(self, class_qualname: str) -> list[str]:
        order: list[str] = []
        stack = [class_qualname]
        while stack:
            current = stack.pop(0)
            if current in order or current not in self.classes:
                continue
            order.append(current)
            stack.extend(b.name for b in self.bases(current) if b.kind == "class")
        return order

    def external_bases(self, class_qualname: str) -> Iterator[str]:
        """The non-repository bases of a class and of its repository bases."""
        return self._external_bases(class_qualname)

    @cached_property
    def calls_by_caller(self) -> dict[str, list[ResolvedCall]]:
        """Every resolved call, grouped by the function it is made in."""
        grouped: dict[str, list[ResolvedCall]] = {}
        for rc in self.calls:
            grouped.setdefault(rc.call.caller, []).append(rc)
        return grouped

    @cached_property
    def placement(self) -> Placement:
        """Where each function runs: graph, host or unknown."""
        return Placement(self)

    def _external_bases(self, class_qualname: str) -> Iterator[str]:
        for cls in self.mro(class_qualname):
            for base in self.bases(cls):
                if base.kind == "external":
                    yield base.name

    @cached_property
    def module_classes(self) -> frozenset[str]:
        """Every repository class that is a ``torch.nn.Module``."""
        return frozenset(c for c in self.classes if any(
            _is_module_base(b) for b in self._external_bases(c)))

    @cached_property
    def function_classes(self) -> frozenset[str]:
        """Every repository class that is a ``torch.autograd.Function``."""
        return frozenset(c for c in self.classes if any(
            b in FUNCTION_BASES for b in self._external_bases(c)))

    def find_method(self, class_qualname: str, name: str, skip_self: bool = False) -> str | None:
        """The function a method name resolves to on a class, following its bases."""
        for cls in self.mro(class_qualname)[1 if skip_self else 0:]:
            qualname = f"{cls}.{name}"
            if qualname in self.functions:
                return qualname
        return None

    def forward_of(self, class_qualname: str) -> str | None:
        """What calling an instance of a Module class runs: its ``forward``, or, for a
        Module that defines ``__call__`` instead (a GAN loss called as ``loss(pred,
        True)``), that ``__call__``."""
        return self.find_method(class_qualname, "forward") or self.find_method(
            class_qualname, "__call__")

    def attribute_classes(self, class_qualname: str, attr: str) -> list[Resolved]:
        """What ``self.<attr>`` holds, from assignments in the class or its bases."""
        key = (class_qualname, attr)
        found = self._attribute_classes.get(key)
        if found is None:
            found = self._attribute_classes[key] = []
            for cls in self.mro(class_qualname):
                targets = self._attributes(cls).get(attr)
                if targets:
                    module = self.class_module[cls]
                    found.extend(r for t in targets if (r := self.resolve(t, module)) is not None)
        return list(found)

    def _attributes(self, class_qualname: str) -> dict[str, tuple[str, ...]]:
        """A class's own attributes by name, indexed on first use."""
        table = self._attribute_tables.get(class_qualname)
        if table is None:
            table = self._attribute_tables[class_qualname] = {}
            for name, targets in self.classes[class_qualname].attributes:
                table[name] = table.get(name, ()) + targets
        return table

    def owner_class(self, function_qualname: str) -> str | None:
        """The class a method (or a function nested in a method) belongs to."""
        current: str | None = function_qualname
        while current is not None:
            fact = self.functions.get(current)
            if fact is None:
                return None
            if fact.class_qualname is not None:
                return fact.class_qualname
            current = current.rsplit(".", 1)[0] if "." in current else None
            if current is not None and current not in self.functions:
                return None
        return None

    # ----- the call graph ---------------------------------------------------------------

    def _callees(self, file: FileResult, call: CallSite) -> tuple[tuple[str, ...], str | None]:
        if call.kind is CallKind.NAME:
            resolved = self.resolve(call.target, file.module)
            if resolved is None:
                return (), None
            if resolved.kind == "function":
                return (resolved.name,), None
            if resolved.kind == "class":
                init = self.find_method(resolved.name, "__init__")
                return ((init,) if init else ()), None
            if resolved.kind == "external":
                return (), resolved.name
            return (), None
        if call.kind is CallKind.TENSOR_METHOD:
            return (), call.target
        if call.kind is CallKind.VALUE:
            return (), None  # resolved by the value analysis
        if call.kind is CallKind.INSTANCE:
            resolved = self.resolve(call.target, file.module)
            if resolved is None or resolved.kind != "class":
                return (), None
            method = self.forward_of(resolved.name) if (
                resolved.name in self.module_classes) else self.find_method(resolved.name,
                                                                            "__call__")
            return ((method,) if method else ()), None
        if call.kind is CallKind.APPLY:
            resolved = self.resolve(call.target, file.module)
            if resolved is None or resolved.kind != "class":
                return (), None
            found = (self.find_method(resolved.name, "forward"),
                     self.find_method(resolved.name, "backward"))
            return tuple(f for f in found if f), None
        owner = self.owner_class(call.caller)
        if owner is None:
            return (), None
        if call.kind is CallKind.SUPER:
            method = self.find_method(owner, call.target, skip_self=True)
            return ((method,) if method else ()), None
        if call.kind is CallKind.SELF_METHOD:
            method = self.find_method(owner, call.target)
            if method is not None:
                return (method,), None
        held = self.attribute_classes(owner, call.target)
        callees = []
        external = None
        for target in held:
            if target.kind == "class":
                forward = self.find_method(target.name, "forward")
                if forward is not None:
                    callees.append(forward)
            elif target.kind == "external":
                external = target.name
        return tuple(callees), external if not callees else None

    def _build_graph(self) -> None:
        graph = self.graph
        graph.add_nodes_from(self.functions)
        for name in self.functions:
            parent = name.rsplit(".", 1)[0]
            if parent in self.functions:
                graph.add_edge(parent, name, line=self.functions[name].span.line)
        for file in self.modules.values():
            for call in file.calls:
                callees, external = self._callees(file, call)
                self.calls.append(ResolvedCall(file, call, callees, external))
                for callee in callees:
                    if (call.caller in self.functions and callee != call.caller
                            and not graph.has_edge(call.caller, callee)):
                        graph.add_edge(call.caller, callee, line=call.span.line)

    def forward_roots(self) -> list[str]:
        """``forward`` of every Module class and ``forward``/``backward`` of every
        ``autograd.Function``, in a stable order."""
        roots = [f"{c}.forward" for c in sorted(self.module_classes)]
        for c in sorted(self.function_classes):
            roots += [f"{c}.forward", f"{c}.backward"]
        return [r for r in roots if r in self.functions]

    @cached_property
    def forward_paths(self) -> dict[str, tuple[str, ...]]:
        """Every function reachable from a forward, with the shortest path to it."""
        return shortest_paths(self.graph, self.forward_roots())

    def path_from_forward(self, function_qualname: str | None) -> tuple[str, ...] | None:
        """The call path from a forward to a function, None when none reaches it."""
        if function_qualname is None:
            return None
        return self.forward_paths.get(function_qualname)

    def short_name(self, function_qualname: str) -> str:
        """A function's name without its module (``Head.forward``)."""
        module = self.function_module.get(function_qualname, "")
        if module and function_qualname.startswith(module + "."):
            return function_qualname[len(module) + 1:]
        return function_qualname

    def reachable(self, source: str) -> set[str]:
        """Every repository function a function may call, directly or not (itself included)."""
        if source not in self.graph:
            return set()
        import networkx

        return set(networkx.descendants(self.graph, source)) | {source}


def _is_module_base(name: str) -> bool:
    if name in MODULE_BASES:
        return True
    if name.startswith(NOT_MODULE_PREFIXES):
        return False
    head = name.rsplit(".", 1)
    return name.startswith("torch.nn.") and len(head) == 2 and head[1][:1].isupper()
