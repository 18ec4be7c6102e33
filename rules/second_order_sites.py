"""Where a repository differentiates a gradient again, and what MindSpore measured.

A *site* is a call that differentiates a gradient again: ``torch.autograd.grad`` or
``backward`` with ``create_graph`` (keyword or positional), the second-order helpers of
``torch.autograd.functional`` and nested ``torch.func`` / functorch transforms. The measured
second-order support of MindSpore APIs (``analyzer/data/second_order.json``, written by
``tools/measure_second_order.py``) is loaded here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from msready.analyzer.facts import Arg
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
