"""Where a repository differentiates a gradient again, and what MindSpore measured.

A *site* is a call that differentiates a gradient again: ``torch.autograd.grad`` or
``backward`` with ``create_graph`` (keyword or positional), the second-order helpers of
``torch.autograd.functional`` and nested ``torch.func`` / functorch transforms. The measured
second-order support of MindSpore APIs (``analyzer/data/second_order.json``, written by
``tools/measure_second_order.py``) is loaded here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from msready.analyzer.facts import Arg, CallKind, CallSite, FunctionFact
from msready.analyzer.findings import Span
from msready.analyzer.repo import RepositoryModel, ResolvedCall

MEASURED_BACKEND = "cpu"
# Where ``create_graph`` sits among the positional parameters (``self`` excluded).
CREATE_GRAPH_POSITION: dict[str, int | None] = {
    "torch.autograd.grad": 4,
    "torch.autograd.backward": 3,
    "torch.Tensor.backward": 2,
    "torch.autograd.functional.jacobian": 2,
    "torch.autograd.functional.vjp": 3,
}
# Second derivatives by definition. (``torch.autograd.functional.jvp`` uses the
# double-backward trick in torch, but its MindSpore counterpart is forward mode.)
ALWAYS_SECOND_ORDER = frozenset({
    "torch.autograd.functional.hessian", "torch.autograd.functional.hvp",
    "torch.autograd.functional.vhp", "torch.func.hessian", "functorch.hessian",
})
_TRANSFORMS = ("grad", "grad_and_value", "jacrev", "jacfwd", "vjp", "jvp", "hessian")
DERIVATIVE_TRANSFORMS = frozenset(f"{root}.{name}" for root in ("torch.func", "functorch")
                                  for name in _TRANSFORMS)


@dataclass(frozen=True, slots=True)
class Measurements:
    """Measured second-order support of MindSpore APIs on one backend."""

    mindspore_version: str
    backend: str
    entries: dict[str, dict[str, str]]

    def status(self, api: str | None) -> tuple[str, str]:
        """``pass`` / ``fail`` / ``untested`` / ``unmeasured`` and the error or reason."""
        entry = self.entries.get(api or "")
        if entry is None:
            return "unmeasured", ""
        return entry.get("status", "unmeasured"), entry.get("error", entry.get("reason", ""))


@lru_cache(maxsize=1)
def load_measurements() -> Measurements:
    """The packaged measurements (empty when the data file is absent)."""
    ref = resources.files("msready.analyzer").joinpath("data/second_order.json")
    if not ref.is_file():
        return Measurements("", MEASURED_BACKEND, {})
    data = json.loads(ref.read_text(encoding="utf-8"))
    entries = {str(k): {str(a): str(b) for a, b in v.items()}
               for k, v in dict(data.get("entries", {})).items()}
    return Measurements(str(data.get("mindspore_version", "")),
                        str(data.get("backend", "CPU")).lower(), entries)


# ----- sites ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flag:
    """What a call's ``create_graph`` says: ``yes`` (a literal true value), ``no``
    (absent or literally false) or ``maybe`` (an expression, e.g. ``not first_order``)."""

    value: str
    text: str = ""


def create_graph_flag(args: tuple[Arg, ...], position: int | None) -> Flag:
    """The ``create_graph`` argument of a call, given by keyword or by position."""
    positional = 0
    for arg in args:
        if arg.keyword == "create_graph":
            return _flag_of(arg)
        if arg.keyword is None and not arg.star:
            if position is not None and positional == position:
                return _flag_of(arg)
            positional += 1
        elif arg.star == "*" and position is not None and positional <= position:
            return Flag("no")  # unpacked positionals: the position is unknown
    return Flag("no")


def _flag_of(arg: Arg) -> Flag:
    if arg.is_literal:
        return Flag("yes" if arg.literal else "no", arg.text)
    return Flag("maybe", arg.text)


@dataclass(frozen=True, slots=True)
class Site:
    """One call that differentiates a gradient again."""

    rc: ResolvedCall
    api: str
    how: str  # a short phrase: "create_graph=True", "nested torch.func transforms", ...
    flag: Flag
    inside_only: bool  # the chain is the differentiated function, not the calls before
    # Calls of the site's function that pass a false ``create_graph`` for it: they run it
    # first order (a ``(path, line, column)`` per call).
    first_order_calls: frozenset[tuple[str, int, int]] = frozenset()

    @property
    def function(self) -> str:
        """The repository function the site is in."""
        return self.rc.call.caller

    @property
    def span(self) -> Span:
        """Where the site is."""
        return self.rc.call.span


def inside(inner: Span, outer: Span) -> bool:
    return ((inner.line, inner.column) >= (outer.line, outer.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def is_before(span: Span, site: Span) -> bool:
    return (span.line, span.column) <= (site.end_line, site.end_column)


def find_sites(repo: RepositoryModel) -> list[Site]:
    """Every double-backward site of the repository, in source order."""
    sites: list[Site] = []
    transforms = [rc for rc in repo.calls if rc.external in DERIVATIVE_TRANSFORMS]
    for rc in repo.calls:
        api = rc.external
        if api is None:
            continue
        if api in CREATE_GRAPH_POSITION:
            flag = create_graph_flag(rc.call.args, CREATE_GRAPH_POSITION[api])
            if flag.value != "no":
                how = (f"create_graph={flag.text}" if flag.value == "maybe"
                       else "create_graph=True")
                inside = api.startswith("torch.autograd.functional.")
                sites.append(Site(rc, api, how, flag, inside))
        elif api in ALWAYS_SECOND_ORDER:
            sites.append(Site(rc, api, "a second-order derivative by definition",
                              Flag("yes"), True))
        elif api in DERIVATIVE_TRANSFORMS and _nested_transform(repo, rc, transforms):
            sites.append(Site(rc, api, "nested derivative transforms", Flag("yes"), True))
    sites.sort(key=lambda s: (s.rc.file.path, s.span.line, s.span.column))
    return sites


def _nested_transform(repo: RepositoryModel, rc: ResolvedCall,
                      transforms: list[ResolvedCall]) -> bool:
    """True when a derivative transform's argument is itself differentiated: another
    transform inside its argument list, or a repository function that takes one."""
    for other in transforms:
        if (other is not rc and other.file is rc.file
                and inside(other.call.span, rc.call.span)):
            return True
    for fn in function_args(repo, rc):
        reached = repo.reachable(fn)
        if any(other.call.caller in reached for other in transforms):
            return True
    return False


def function_args(repo: RepositoryModel, rc: ResolvedCall) -> list[str]:
    """Repository functions passed as positional arguments (``grad(loss_fn)``)."""
    out = []
    for arg in rc.call.args:
        if arg.keyword is None and not arg.star and arg.text.isidentifier():
            resolved = repo.resolve(bound_name(rc, arg.text), rc.file.module)
            if resolved is not None and resolved.kind == "function":
                out.append(resolved.name)
    return out


def bound_name(rc: ResolvedCall, name: str) -> str:
    """A bare name as the file binds it (an import or a module-level definition)."""
    return rc.file.bindings.get(name, f"{rc.file.module}.{name}")


# ----- calls by function, and what callers pass ------------------------------------------


class CallIndex:
    """The repository's calls indexed by calling function and by callee, with the
    questions the second-order rules ask of them."""

    def __init__(self, repo: RepositoryModel) -> None:
        self.repo = repo
        self.by_caller: dict[str, list[ResolvedCall]] = {}
        self.callers_of: dict[str, list[ResolvedCall]] = {}
        for rc in repo.calls:
            self.by_caller.setdefault(rc.call.caller, []).append(rc)
            for callee in rc.callees:
                self.callers_of.setdefault(callee, []).append(rc)

    # -- a create_graph that a parameter decides -------------------------------------------

    def settle(self, site: Site) -> Site | None:
        """Decide ``create_graph=<parameter>`` from what the callers pass: dropped when
        every caller passes a false literal, certain when one passes a true literal."""
        flag = site.flag
        fact = self.repo.functions.get(site.function)
        if flag.value != "maybe" or fact is None or flag.text not in fact.params:
            return site
        index = fact.params.index(flag.text)
        passed = []
        for rc in self.callers_of.get(site.function, []):
            offset = self._implicit_self(fact, rc)
            passed.append((rc, argument_for(rc.call, flag.text, index - offset)))
        if passed and all(args and args[0].is_literal and not args[0].literal
                          for _, args in passed):
            return None
        quiet = frozenset(call_key(rc) for rc, args in passed
                          if args and args[0].is_literal and not args[0].literal)
        site = replace(site, first_order_calls=quiet)
        for rc, args in passed:
            if args and args[0].is_literal and args[0].literal:
                where = rc.file.path
                return replace(site, flag=Flag("yes", flag.text),
                               how=f"create_graph={flag.text}, passed as True at {where}")
        return site

    # -- the training steps a site drags in ------------------------------------------------

    def backward_after(self, function: str, span: Span) -> ResolvedCall | None:
        """The first ``backward()`` in ``function`` after ``span``: the step that
        back-propagates through what was computed there."""
        backwards = [rc for rc in self.by_caller.get(function, [])
                     if rc.external == "torch.Tensor.backward"]
        around = [rc for rc in backwards if rc.call.span != span and inside(span, rc.call.span)]
        if around:  # ``helper(...).backward()``
            return around[0]
        later = [rc for rc in backwards
                 if (rc.call.span.line, rc.call.span.column) > (span.end_line, span.end_column)]
        return min(later, key=lambda rc: (rc.call.span.line, rc.call.span.column), default=None)

    def propagation(self, site: Site, depth: int = 3) -> list[tuple[ResolvedCall,
                                                                     ResolvedCall | None]]:
        """Each call that runs the site's function, with the ``backward()`` after it in
        the calling function. A caller without one passes the value on: its own callers
        are followed, up to ``depth`` levels."""
        out: list[tuple[ResolvedCall, ResolvedCall | None]] = []
        frontier = [site.function]
        seen = {site.function}
        for _ in range(depth):
            following: list[str] = []
            for function in frontier:
                for rc in self.callers_of.get(function, []):
                    caller = rc.call.caller
                    if caller == function or call_key(rc) in site.first_order_calls:
                        continue
                    backward = self.backward_after(caller, rc.call.span)
                    out.append((rc, backward))
                    if backward is None and caller not in seen and caller in self.repo.graph:
                        seen.add(caller)
                        following.append(caller)
            frontier = following
        return out

    def _implicit_self(self, fact: FunctionFact, rc: ResolvedCall) -> int:
        """1 when the call binds the method's first parameter itself (``self.m(...)``,
        ``super().m(...)``, ``Cls(...)`` running ``__init__``), 0 for a plain function or an
        explicit ``Cls.m(obj, ...)``."""
        if fact.class_qualname is None:
            return 0
        if rc.call.kind is not CallKind.NAME:
            return 1
        resolved = self.repo.resolve(rc.call.target, rc.file.module)
        return 1 if resolved is not None and resolved.kind == "class" else 0


def call_key(rc: ResolvedCall) -> tuple[str, int, int]:
    return (rc.file.path, rc.call.span.line, rc.call.span.column)


def argument_for(call: CallSite, param: str, index: int) -> list[Arg]:
    """The argument a call passes for a parameter (by keyword, else by position)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword == param:
            return [arg]
    if 0 <= index < len(positional):
        return [positional[index]]
    return []
