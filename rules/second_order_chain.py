"""The derivative chain of each double-backward site.

A site's *chain* is the model code the twice-differentiated outputs run through: the
calls inside the site (``grad(D(x_hat).sum(), ...)``) or, when it computes nothing itself,
the calls before it from the first one on the differentiated inputs, the Modules passed to
its function by the callers (followed through the call sites' arguments) or held by
``self``, their submodules, their ``forward`` methods and every helper those reach in the
call graph.
Every torch API on the chain is looked up in the API table and in the measured
second-order support of its MindSpore target.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from msready.analyzer.apitable import load_table
from msready.analyzer.facts import CallKind
from msready.analyzer.findings import Span
from msready.analyzer.repo import TORCH_ROOTS, RepositoryModel, ResolvedCall
from msready.analyzer.values import Kind, Value
from msready.rules.second_order_sites import (
    CallIndex,
    Site,
    bound_name,
    find_sites,
    function_args,
    inside,
    is_before,
    load_measurements,
)

# Calls that move, inspect or create tensors rather than compute a differentiable result.
NOT_OPS = frozenset(
    [f"torch.Tensor.{m}" for m in (
        "to", "cuda", "cpu", "size", "dim", "numel", "item", "numpy", "tolist", "detach",
        "detach_", "requires_grad_", "backward", "zero_", "register_hook", "retain_grad",
        "new_zeros", "new_ones", "new_empty", "new_full", "fill_", "uniform_", "normal_",
        "data_ptr", "is_contiguous", "contiguous", "clone")]
    + [f"torch.{f}" for f in (
        "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
        "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like",
        "ones_like", "empty_like", "full_like", "manual_seed", "device", "no_grad",
        "enable_grad", "set_grad_enabled", "tensor", "as_tensor", "from_numpy", "is_tensor")]
    + ["torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict",
       "torch.nn.Parameter", "torch.nn.ParameterList", "torch.nn.ParameterDict",
       "torch.nn.Identity", "torch.nn.Module"]
)
_NOT_LAYER_PREFIXES = ("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.",
                       "torch.nn.parameter.", "torch.nn.Parameter")
_NOT_OP_PREFIXES = ("torch.autograd", "torch.func", "functorch", "torch.optim", "torch.utils",
                    "torch.cuda", "torch.backends", "torch.distributed")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# Words in an ``inputs=`` argument that name no value of their own.
_NOT_NAMES = frozenset({"self", "list", "tuple", "dict", "parameters", "named_parameters",
                        "values", "keys", "items", "requires_grad_", "detach", "data"})
_HELD_CALLS = (CallKind.SELF_ATTR, CallKind.SELF_METHOD)


def is_torch_module_class(name: str) -> bool:
    """True for a torch layer class such as ``torch.nn.Conv2d``, or a torchvision model
    constructor (``torchvision.models.resnet18``), whose layers then sit on the chain."""
    if name.startswith("torchvision.models."):
        return True
    last = name.rsplit(".", 1)[-1]
    return (name.startswith("torch.nn.") and last[:1].isupper()
            and not name.startswith(_NOT_LAYER_PREFIXES) and name not in NOT_OPS)


# Measurement reasons that say the API is not differentiable: such calls are not part of a
# derivative chain at all (random numbers, integer results, piecewise constants).
# A missing bprop is a fact of MindSpore's front end, the same on every backend; other
# failures (a kernel missing on CPU) say nothing about another backend.
_FRONTEND_FAILURE = "bprop not defined"
_NOT_DIFFERENTIABLE = ("not a floating-point", "gradient is zero")


# ----- chains -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChainOp:
    """One torch API on a derivative chain and its second-order support."""

    api: str
    path: str
    span: Span
    cell: int | None
    target: str | None
    in_table: bool
    status: str  # pass | fail | unmeasured
    error: str = ""


@dataclass(slots=True)
class Chain:
    """The model code and torch APIs a double-backward site differentiates twice."""

    functions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    ops: list[ChainOp] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def failing(self) -> list[ChainOp]:
        """Ops whose MindSpore target fails second-order differentiation."""
        return [op for op in self.ops if op.status == "fail"]

    def apis(self) -> list[str]:
        """The distinct torch APIs on the chain."""
        return sorted({op.api for op in self.ops})


class ChainBuilder(CallIndex):
    """Builds the derivative chain of each site of one repository."""

    def __init__(self, repo: RepositoryModel, backend: str) -> None:
        super().__init__(repo)
        self.backend = backend
        self.table = load_table()
        self.measured = load_measurements()
        self.constructed: dict[str, set[str]] = {}  # file path -> Module classes built there
        self.built_in: dict[str, set[str]] = {}  # caller function -> Module classes it builds
        self._method_cache: dict[str, list[str]] = {}
        self._constructor_cache: dict[str, list[ResolvedCall]] = {}
        self._classified: dict[str, tuple[str | None, bool, str, str]] = {}
        for rc in repo.calls:
            if rc.call.kind is CallKind.NAME:
                resolved = repo.resolve(rc.call.target, rc.file.module)
                if resolved is not None and resolved.name in repo.module_classes:
                    self.constructed.setdefault(rc.file.path, set()).add(resolved.name)
                    self.built_in.setdefault(rc.call.caller, set()).add(resolved.name)
        self.constructed_anywhere: set[str] = set().union(*self.constructed.values())
        self._submodule_cache: dict[str, set[str]] = {}
        self.submodules_anywhere: set[str] = set().union(
            set(), *(self._submodules(c) for c in repo.module_classes))

    # -- objects: which Module classes a name at a call site stands for ----------------------

    def classes_of(self, text: str, rc: ResolvedCall, depth: int = 0) -> set[str]:
        """Module classes an argument's text (at call site ``rc``) holds, by the value
        analysis: ``self.<attr>`` joins every assignment of the attribute, a parameter
        what every caller passes, a class name is that class."""
        repo = self.repo
        head = text.strip().split("(", 1)[0].strip()
        parts = head.split(".")
        if parts[0] == "self" and len(parts) > 1:
            owner = repo.owner_class(rc.call.caller)
            if owner is None:
                return set()
            held = {r.name for r in repo.attribute_classes(owner, parts[1])
                    if r.name in repo.module_classes}
            return held | self._module_classes(repo.values.attribute(owner, parts[1]))
        if all(p.isidentifier() for p in parts):
            first = bound_name(rc, parts[0])
            resolved = repo.resolve(".".join([first, *parts[1:]]), rc.file.module)
            if resolved is not None and resolved.name in repo.module_classes:
                return {resolved.name}  # the class itself, or ``Critic()`` built in place
        fact = repo.functions.get(rc.call.caller)
        if len(parts) == 1 and fact is not None and head in fact.params:
            return self.param_classes(rc.call.caller, head, depth + 1)
        for arg, expr in zip(rc.call.args, rc.call.arg_values, strict=False):
            if arg.text == text:
                return self._module_classes(repo.values.value(expr))
        return set()

    def _module_classes(self, value: Value) -> set[str]:
        return {a.cls for a in value
                if a.kind is Kind.INSTANCE and a.cls in self.repo.module_classes}

    def param_classes(self, function: str, param: str, depth: int = 0) -> set[str]:
        """Module classes the callers of ``function`` pass as ``param``."""
        return self._module_classes(self.repo.values.parameter(function, param))

    # -- the chain -----------------------------------------------------------------------------

    def build(self, site: Site) -> Chain:
        """The chain of one site."""
        repo = self.repo
        chain = Chain()
        roots: list[str] = []
        ops: list[ResolvedCall] = []
        classes: set[str] = set()
        calls = [rc for rc in self.by_caller.get(site.function, []) if rc is not site.rc]
        within = [rc for rc in calls if inside(rc.call.span, site.span)]
        # When the differentiated outputs are computed in the call itself
        # (``grad(D(x_hat).sum(), x_hat, ...)``), the model code is there; otherwise it is
        # what ran before the call in the same function.
        model_within = site.inside_only or any(
            rc.callees or (rc.call.kind in _HELD_CALLS and rc.external is None)
            for rc in within)
        chosen = within if model_within else self._from_inputs(site, [
            rc for rc in calls if is_before(rc.call.span, site.span)])
        for rc in chosen:
            for callee in rc.callees:
                owner = repo.owner_class(callee)
                if callee.endswith(".__init__") and owner in repo.module_classes:
                    classes.add(owner)  # a Module built here: its forward, not its set-up
                else:
                    roots.append(callee)
            if site.inside_only:
                roots.extend(function_args(repo, rc))
            if rc.external is not None and rc.call.kind in _HELD_CALLS:
                ops.extend(self._held_constructors(rc))
            elif rc.external is not None:
                ops.append(rc)
            elif rc.call.kind in _HELD_CALLS and not rc.callees:
                held = self.classes_of(f"self.{rc.call.target}", rc)
                classes |= held
                if not held:
                    chain.unresolved.append(f"self.{rc.call.target}")
        roots.extend(function_args(repo, site.rc))
        unresolved_params = []
        for param in self._model_params(site, model_within):
            held = self.param_classes(site.function, param)
            classes |= held
            if not held:
                unresolved_params.append(param)
        functions = self._closure(roots, classes)
        chain.classes = sorted(classes)
        chain.functions = functions
        on_chain = set(functions)
        for fn in functions:
            ops.extend(rc for rc in self.by_caller.get(fn, []) if rc.external is not None)
        for cls in classes:
            ops.extend(self._constructors(cls))
        chain.ops = self._ops(ops, site)
        chain.functions = [f for f in functions if f in on_chain and f != site.function]
        if not chain.functions and unresolved_params:
            chain.unresolved.append(
                "which Module the parameters " + ", ".join(f"`{p}`" for p in unresolved_params)
                + " hold")
        return chain

    def _from_inputs(self, site: Site, before: list[ResolvedCall]) -> list[ResolvedCall]:
        """The calls before the site from the first one that touches the differentiated
        ``inputs`` on (``self.D(x_hat)`` for inputs ``x_hat``; ``self.net(...)`` for
        ``self.net.parameters()``): what ran earlier (``self.G(z)``) only built them."""
        args = site.rc.call.args
        given = [a for a in args if a.keyword == "inputs"] or [
            a for a in args if a.keyword is None and not a.star][1:2]
        if site.api != "torch.autograd.grad" or not given:
            return before
        tokens = set(_IDENTIFIER.findall(given[0].text)) - _NOT_NAMES
        ordered = sorted(before, key=lambda rc: (rc.call.span.line, rc.call.span.column))
        for i, rc in enumerate(ordered):
            used = {t for a in rc.call.args for t in _IDENTIFIER.findall(a.text)}
            if tokens & (used | {rc.call.target.rsplit(".", 1)[-1]}):
                return ordered[i:]
        return before

    def _held_constructors(self, rc: ResolvedCall) -> list[ResolvedCall]:
        """Where the torch layer that ``self.<attr>(...)`` calls was built."""
        owner = self.repo.owner_class(rc.call.caller)
        if owner is None:
            return []
        return [c for c in self._constructors(owner) if c.external == rc.external]

    def _model_params(self, site: Site, model_within: bool) -> list[str]:
        """The parameters of the site's function that may hold the differentiated model:
        those the call's arguments name, else (when the call computes nothing itself)
        all of them."""
        fact = self.repo.functions.get(site.function)
        if fact is None or site.inside_only:
            return []
        params = [p for p in fact.params if p not in ("self", "cls")]
        text = " ".join(arg.text for arg in site.rc.call.args)
        named = [p for p in params if re.search(rf"(?<![\w.]){re.escape(p)}\b", text)]
        return named or ([] if model_within else params)

    def _closure(self, roots: list[str], classes: set[str]) -> list[str]:
        """Chain functions in a stable breadth-first order; grows ``classes`` with the
        Module classes those functions belong to and the submodules they hold."""
        repo = self.repo
        order: list[str] = []
        seen: set[str] = set()
        pending = list(dict.fromkeys(roots))
        queued_classes: set[str] = set()
        while True:
            for cls in sorted(classes - queued_classes):
                queued_classes.add(cls)
                pending.extend(self._model_methods(cls))
                classes |= self._submodules(cls)
            if not pending:
                break
            fn = pending.pop(0)
            if fn in seen or fn not in repo.graph:
                continue
            seen.add(fn)
            order.append(fn)
            pending.extend(sorted(repo.graph.successors(fn)))
            owner = repo.owner_class(fn)
            if owner is not None and owner in repo.module_classes:
                classes.add(owner)
        return order

    def _submodules(self, cls: str) -> set[str]:
        """The repository Module classes a class's attributes hold (its submodules)."""
        found = self._submodule_cache.get(cls)
        if found is None:
            repo = self.repo
            found = set()
            for holder in repo.mro(cls):
                module = repo.class_module[holder]
                for _, targets in repo.classes[holder].attributes:
                    for target in targets:
                        resolved = repo.resolve(target, module)
                        if resolved is not None and resolved.name in repo.module_classes:
                            found.add(resolved.name)
            self._submodule_cache[cls] = found
        return found

    def _model_methods(self, cls: str) -> list[str]:
        """The methods of a Module class that run the model: ``forward`` and its
        functional variants (``functional_forward``, ``forward_features``)."""
        found = self._method_cache.get(cls)
        if found is None:
            found = []
            for holder in self.repo.mro(cls):
                for method in self.repo.classes[holder].methods:
                    if "forward" in method:
                        qualname = self.repo.find_method(cls, method)
                        if qualname is not None and qualname not in found:
                            found.append(qualname)
            self._method_cache[cls] = found
        return found

    def _constructors(self, cls: str) -> list[ResolvedCall]:
        """Torch layer constructors (``nn.Conv2d(...)``) in a class's methods and in the
        helpers they call (but not in other Module classes, which are chained on their
        own)."""
        found = self._constructor_cache.get(cls)
        if found is None:
            repo = self.repo
            stack = [f"{holder}.{method}" for holder in repo.mro(cls)
                     for method in repo.classes[holder].methods]
            functions: set[str] = set()
            while stack:
                fn = stack.pop()
                if fn in functions:
                    continue
                functions.add(fn)
                if fn in repo.graph:
                    stack.extend(callee for callee in repo.graph.successors(fn)
                                 if repo.owner_class(callee) in (None, cls)
                                 or repo.owner_class(callee) not in repo.module_classes)
            found = [rc for fn in sorted(functions) for rc in self.by_caller.get(fn, [])
                     if rc.external is not None and is_torch_module_class(rc.external)]
            self._constructor_cache[cls] = found
        return found

    def _classify(self, api: str) -> tuple[str | None, bool, str, str]:
        """An API's MindSpore target on the backend, whether the table knows the API, and
        the measured status (``pass`` / ``fail`` / ``unmeasured`` / ``skip`` for APIs that
        are not differentiable) with its error."""
        found = self._classified.get(api)
        if found is None:
            entry = self.table.lookup(api)
            target = entry.target(self.backend).api if entry is not None else None
            status, detail = self.measured.status(target)
            if (status == "fail" and self.backend != self.measured.backend
                    and _FRONTEND_FAILURE not in detail):
                status = "unmeasured"  # a kernel missing on the measured backend only
            if status == "untested":
                status = ("skip" if any(r in detail for r in _NOT_DIFFERENTIABLE)
                          else "unmeasured")
            found = (target, entry is not None, status, detail if status == "fail" else "")
            self._classified[api] = found
        return found

    def _ops(self, calls: Iterable[ResolvedCall], site: Site) -> list[ChainOp]:
        out: dict[tuple[str, int, int, str], ChainOp] = {}
        done: set[int] = set()
        for rc in calls:
            api = rc.external
            if id(rc) in done or api is None or rc is site.rc:
                continue
            done.add(id(rc))
            if (api.split(".")[0] not in TORCH_ROOTS or api in NOT_OPS
                    or api.startswith(_NOT_OP_PREFIXES)
                    or rc.call.kind in _HELD_CALLS):  # a held layer: its constructor is
                continue                                # the site reported
            target, in_table, status, error = self._classify(api)
            if status == "skip":
                continue
            if status == "unmeasured" and rc.call.confidence == "low":
                continue  # a method on an expression of unknown type, and nothing known
            span = rc.call.span
            key = (rc.file.path, span.line, span.column, api)
            out[key] = ChainOp(api, rc.file.path, span, rc.call.cell, target, in_table,
                               status, error)
        return [out[k] for k in sorted(out)]


# ----- one analysis per repository --------------------------------------------------------


@dataclass(slots=True)
class Analysis:
    """Every site of a repository with its chain."""

    sites: list[tuple[Site, Chain]]
    builder: ChainBuilder


_ANALYSES: weakref.WeakKeyDictionary[RepositoryModel, Analysis] = weakref.WeakKeyDictionary()


def analyse(repo: RepositoryModel) -> Analysis:
    """The sites and chains of a repository, computed once and shared by the rules."""
    found = _ANALYSES.get(repo)
    if found is None:
        backend = str(getattr(repo, "target", "ascend"))
        builder = ChainBuilder(repo, backend)
        sites = [s for site in find_sites(repo) if (s := builder.settle(site)) is not None]
        found = Analysis([(site, builder.build(site)) for site in sites], builder)
        _ANALYSES[repo] = found
    return found


def chain_path(repo: RepositoryModel, chain: Chain, limit: int = 4) -> str:
    """``Critic.forward → Block.forward`` for a chain's first functions."""
    names = [repo.short_name(f) for f in chain.functions]
    shown = " → ".join(names[:limit])
    return shown + (f" → … ({len(names) - limit} more)" if len(names) > limit else "")
