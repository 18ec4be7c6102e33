"""MS1xx: torch calls checked against the API table for the chosen backend.

Each call to a torch API is looked up in the table (``msready.analyzer.apitable``). A call
to an API with no MindSpore target on the backend is MS101; a call that exercises a
parameter difference is MS102 (semantics), MS103 (a differing default the call relies
on) or MS104 (renamed, reordered or missing parameters). The three share one rewrite of
the call (:func:`plan_call`), so every finding on a call suggests the same complete
MindSpore call.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from msready.analyzer.apitable import ApiEntry, ParamDiff, load_table
from msready.analyzer.facts import Arg, CallKind, CallSite
from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.rules.base import RepoRule

_SEVERITY_BY_WORKAROUND = {"custom-op": Severity.ERROR, "composition": Severity.WARNING,
                           "equivalent": Severity.INFO}


# ----- planning the MindSpore call ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Issue:
    """One difference a call exercises: ``semantics``, ``default`` or ``arguments``."""

    kind: str
    message: str
    severity: Severity


@dataclass(slots=True)
class _Plan:
    """The call being rewritten: arguments by torch name, what to add, what to drop."""

    entry: ApiEntry
    backend: str
    bound: dict[str, Arg] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    rest: list[Arg] = field(default_factory=list)  # unbound and unpacked arguments
    values: dict[str, str] = field(default_factory=dict)  # torch name -> new value text
    names: dict[str, str] = field(default_factory=dict)  # torch name -> MindSpore name
    keyword: set[str] = field(default_factory=set)  # torch names to pass by keyword
    drop: set[str] = field(default_factory=set)
    extra: dict[str, str] = field(default_factory=dict)  # MindSpore keyword -> value text
    issues: list[Issue] = field(default_factory=list)
    handled: set[str] = field(default_factory=set)  # already explained by a semantics issue

    def add(self, kind: str, message: str, severity: Severity) -> None:
        self.issues.append(Issue(kind, message, severity))


@dataclass(frozen=True, slots=True)
class CallPlan:
    """The differences a call exercises and the complete MindSpore call to write."""

    issues: tuple[Issue, ...]
    rewrite: str


def _text(arg: Arg) -> str:
    """Source text of an argument value (literals re-printed, tuples keep parentheses)."""
    return repr(arg.literal) if arg.is_literal else arg.text


def _same_literal(arg: Arg, default: str | None) -> bool:
    if default is None or not arg.is_literal:
        return False
    try:
        return bool(ast.literal_eval(default) == arg.literal)
    except (ValueError, SyntaxError):
        return False


def _short(api: str) -> str:
    return api.removeprefix("mindspore.")


def _padding(plan: _Plan, diff: ParamDiff) -> None:
    """Conv padding: MindSpore honours ``padding`` only with ``pad_mode='pad'``."""
    layer = _short(plan.entry.target(plan.backend).api or "")
    if "pad_mode" in plan.bound:
        return
    arg = plan.bound.get("padding")
    if arg is None:
        plan.extra["pad_mode"] = "'valid'"
        plan.add("semantics", f"{layer} pads 'same' by default; torch pads 0, which is "
                 "pad_mode='valid'.", Severity.ERROR)
        return
    if arg.is_literal and isinstance(arg.literal, str):
        plan.drop.add("padding")
        plan.extra["pad_mode"] = repr(arg.literal)
        plan.add("semantics", f"padding={arg.literal!r} is pad_mode={arg.literal!r} in "
                 f"{layer}.", Severity.WARNING)
        return
    if arg.is_literal and isinstance(arg.literal, tuple) and len(arg.literal) in (2, 3):
        doubled = tuple(v for v in arg.literal for _ in (0, 1))
        plan.values["padding"] = repr(doubled)  # MindSpore pads (before, after) per axis
    plan.keyword.add("padding")
    plan.extra["pad_mode"] = "'pad'"
    plan.add("semantics", f"padding={_text(arg)} is ignored by {layer} unless "
             "pad_mode='pad' (its default pad_mode is 'same').", Severity.ERROR)


def _momentum(plan: _Plan, diff: ParamDiff) -> None:
    """BatchNorm: MindSpore's momentum weighs the old running value (1 - torch's)."""
    arg = plan.bound.get("momentum")
    if arg is None:
        return
    if arg.is_literal and isinstance(arg.literal, int | float) and not isinstance(
            arg.literal, bool):
        value = repr(round(1 - float(arg.literal), 10))
    elif arg.is_literal and arg.literal is None:
        plan.add("semantics", "momentum=None (cumulative average) has no MindSpore "
                 "counterpart.", Severity.ERROR)
        return
    else:
        value = f"1 - ({arg.text})"
    plan.values["momentum"] = value
    plan.keyword.add("momentum")
    plan.add("semantics", f"momentum={_text(arg)} must be momentum={value} in MindSpore "
             "(it is 1 - torch's momentum; defaults 0.1 and 0.9 agree).", Severity.ERROR)


def _running_stats(plan: _Plan, diff: ParamDiff) -> None:
    """BatchNorm: track_running_stats=False is use_batch_statistics=True."""
    arg = plan.bound.get("track_running_stats")
    if arg is None:
        return
    plan.drop.add("track_running_stats")
    if arg.is_literal and arg.literal is True:
        return
    value = "True" if arg.is_literal and arg.literal is False else f"not ({arg.text})"
    plan.extra["use_batch_statistics"] = value
    plan.add("semantics", f"track_running_stats={arg.text} is use_batch_statistics={value} "
             "in MindSpore.", Severity.ERROR)


def _dropout(plan: _Plan, diff: ParamDiff) -> None:
    """Dropout: the first positional parameter of nn.Dropout is keep_prob."""
    if "p" in plan.positions:
        plan.keyword.add("p")
        plan.handled.add("p")
        plan.add("semantics", f"nn.Dropout({plan.bound['p'].text}) would mean "
                 f"keep_prob={plan.bound['p'].text}; pass p by keyword.", Severity.ERROR)


def _layer_norm(plan: _Plan, diff: ParamDiff) -> None:
    """LayerNorm: a tuple shape, and the axes to normalise over."""
    arg = plan.bound.get("normalized_shape")
    if arg is None or not arg.is_literal:
        return
    if isinstance(arg.literal, int):
        plan.values["normalized_shape"] = f"({arg.literal},)"
        plan.add("semantics", "mindspore.nn.LayerNorm needs normalized_shape as a tuple.",
                 Severity.ERROR)
    elif isinstance(arg.literal, tuple | list) and len(arg.literal) > 1:
        k = len(arg.literal)
        plan.extra.update(begin_norm_axis=str(-k), begin_params_axis=str(-k))
        plan.add("semantics", f"MindSpore normalises from begin_norm_axis (default -1); "
                 f"torch normalises the last {k} axes here.", Severity.ERROR)


def _generic(plan: _Plan, diff: ParamDiff) -> None:
    if diff.torch in plan.bound:
        plan.add("semantics", f"`{diff.torch}` differs in MindSpore: {diff.note}",
                 Severity.WARNING)


_SEMANTICS: dict[str, Callable[[_Plan, ParamDiff], None]] = {
    "padding": _padding, "momentum": _momentum, "track_running_stats": _running_stats,
    "p": _dropout, "normalized_shape": _layer_norm,
}


def _bind(plan: _Plan, args: tuple[Arg, ...]) -> None:
    params = plan.entry.torch_params
    unpacked = False
    for index, arg in enumerate(args):
        if arg.star:
            unpacked = True
            plan.rest.append(arg)
        elif arg.keyword is not None:
            plan.bound[arg.keyword] = arg
        elif not unpacked and index < len(params) and not params[index].startswith("*"):
            plan.bound[params[index]] = arg
            plan.positions[params[index]] = index
        else:
            plan.rest.append(arg)


def _defaults(plan: _Plan, diffs: tuple[ParamDiff, ...]) -> None:
    semantic = {d.torch for d in diffs if d.kind == "semantics"}
    for diff in diffs:
        if diff.kind != "default" or diff.torch in plan.bound or diff.torch in semantic:
            continue
        name = diff.mindspore or diff.torch
        value, torch_default = diff.torch_default, diff.torch_default
        if value == "None" and diff.torch == "stride" and "kernel_size" in plan.bound:
            value = _text(plan.bound["kernel_size"])
            torch_default = "kernel_size"
        if value is None or value == "None":
            continue
        plan.extra.setdefault(name, value)
        plan.add("default", f"MindSpore's `{name}` defaults to {diff.mindspore_default}; "
                 f"torch's `{diff.torch}` defaults to {torch_default}.", Severity.WARNING)


def _arguments(plan: _Plan, diffs: tuple[ParamDiff, ...]) -> None:
    missing = {d.torch: d for d in diffs if d.kind == "missing"}
    for diff in diffs:
        if diff.kind == "renamed" and diff.mindspore:
            plan.names.setdefault(diff.torch, diff.mindspore)
    ms_params = plan.entry.target(plan.backend).params
    for name, arg in plan.bound.items():
        if name in missing:
            plan.drop.add(name)
            if not _same_literal(arg, missing[name].torch_default):
                plan.add("arguments", f"MindSpore has no `{name}`; drop it or re-implement "
                         "its effect.", Severity.WARNING)
        elif name in plan.names and name not in plan.drop and name not in plan.positions:
            plan.add("arguments", f"`{name}=` is `{plan.names[name]}=` in MindSpore.",
                     Severity.WARNING)
        elif name in plan.positions and ms_params and name not in plan.drop | plan.handled:
            index, ms_name = plan.positions[name], plan.names.get(name, name)
            if index >= len(ms_params) or ms_params[index] != ms_name:
                plan.keyword.add(name)
                plan.add("arguments", f"Positional argument {index + 1} is `{ms_name}` in "
                         "torch's order but not in MindSpore's; pass it by keyword.",
                         Severity.WARNING)


def _render(plan: _Plan, call: CallSite) -> str:
    api = plan.entry.target(plan.backend).api or ""
    method = api.startswith("mindspore.Tensor.")
    callee = f"x.{api.rsplit('.', 1)[1]}" if method else _short(api)
    parts: list[str] = []
    if call.kind is CallKind.TENSOR_METHOD and not method:
        parts.append("x")
    keyword_from = min((plan.positions[n] for n in plan.keyword if n in plan.positions),
                       default=len(call.args))
    for name, arg in plan.bound.items():
        if name in plan.drop:
            continue
        value = plan.values.get(name, arg.text if not arg.is_literal else _text(arg))
        if name in plan.positions and plan.positions[name] < keyword_from:
            parts.append(value)
        else:
            parts.append(f"{plan.names.get(name, name)}={value}")
    parts += [f"{a.star}{a.text}" if a.star else a.text for a in plan.rest]
    parts += [f"{k}={v}" for k, v in plan.extra.items()]
    return f"{callee}({', '.join(parts)})"


def plan_call(call: CallSite, entry: ApiEntry, backend: str) -> CallPlan:
    """The differences this call exercises on ``backend`` and its MindSpore rewrite."""
    plan = _Plan(entry, backend)
    _bind(plan, call.args)
    diffs = entry.params_for(backend)
    for diff in diffs:
        if diff.kind == "semantics":
            _SEMANTICS.get(diff.torch, _generic)(plan, diff)
    _defaults(plan, diffs)
    _arguments(plan, diffs)
    if not plan.issues and entry.usage_differs:
        api = entry.target(backend).api or ""
        how = entry.notes.split(". ")[0].rstrip(".") if entry.notes else "check its usage"
        plan.add("semantics", f"`{entry.torch}` becomes `{api}`, which is used differently: "
                 f"{how}.", Severity.WARNING)
    positional = sorted((i, n) for n, i in plan.positions.items())
    order = [n for _, n in positional] + [n for n in plan.bound if n not in plan.positions]
    plan.bound = {n: plan.bound[n] for n in order}
    return CallPlan(tuple(plan.issues), _render(plan, call))


# ----- the rules -----------------------------------------------------------------------


def _torch_calls(repo: RepositoryModel) -> Iterator[tuple[ResolvedCall, ApiEntry]]:
    """Every call of a torch API the table knows, with its entry."""
    table = load_table()
    for rc in repo.calls:
        if rc.external is None or rc.call.kind not in (CallKind.NAME, CallKind.TENSOR_METHOD):
            continue
        if rc.external.split(".")[0] not in ("torch", "torchvision"):
            continue
        entry = table.lookup(rc.external)
        if entry is not None:
            yield rc, entry


def _backend(repo: RepositoryModel) -> str:
    return str(getattr(repo, "target", "ascend") or "ascend")


def _confidence(rc: ResolvedCall, default: Confidence) -> Confidence:
    """Tensor-method calls keep the walker's (lower) confidence."""
    if rc.call.kind is CallKind.TENSOR_METHOD:
        try:
            return Confidence(rc.call.confidence)
        except ValueError:
            return Confidence.LOW
    return default


class _ApiRule(RepoRule):
    """Shared finding construction for the MS1xx rules."""

    def _finding(self, rc: ResolvedCall, message: str, suggestion: str,
                 severity: Severity | None = None) -> Finding:
        return Finding(rule=self.id, rule_name=self.name, category=self.category,
                       severity=severity or self.severity,
                       confidence=_confidence(rc, self.confidence),
                       location=Location.at(rc.file.path, rc.call.span, rc.call.cell),
                       symbol=rc.external or rc.call.target, message=message,
                       suggestion=suggestion)


class ApiMissing(_ApiRule):
    """Flags calls of torch APIs that have no MindSpore counterpart on the chosen backend.

    MindSpore offers no API for them there (or only on another device, e.g. a
    ``mindspore.mint`` function documented for Ascend only), so the call cannot be
    translated one-to-one.

    Use the workaround the table names: an equivalent API or idiom, a composition of
    existing ``mindspore.ops`` functions, or a custom operator.
    """

    id = "MS101"
    name = "api-missing"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    VALID = (
        "import torch\ny = torch.relu(torch.ones(3))\n",
        "import torch\nz = torch.cat([torch.ones(2), torch.ones(2)])\n",
    )
    INVALID = (
        "import torch\nif torch.cuda.is_available():\n    pass\n",
        "import torch.nn as nn\nnorm = nn.RMSNorm(16)\n",
        "import torch\nfrom torch import nn\nnet = nn.DataParallel(nn.Linear(2, 2))\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per call of an API missing on the backend."""
        backend = _backend(repo)
        for rc, entry in _torch_calls(repo):
            if entry.status_for(backend) != "missing":
                continue
            others = [f"{b}: {entry.target(b).api}" for b in ("ascend", "gpu", "cpu")
                      if entry.target(b).api]
            where = f" (exists for {', '.join(others)})" if others else ""
            kind = entry.workaround or "custom-op"
            suggestion = entry.suggestion or "Compose it from mindspore.ops or write a " \
                "custom operator (mindspore.ops.Custom)."
            yield self._finding(
                rc, f"`{entry.torch}` has no MindSpore counterpart on {backend}{where}.",
                f"{kind}: {suggestion}", _SEVERITY_BY_WORKAROUND.get(kind, self.severity))


class _IssueRule(_ApiRule):
    """Reports the issues of one kind that :func:`plan_call` finds on a call."""

    issue_kind = ""

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per call and issue of this rule's kind."""
        backend = _backend(repo)
        for rc, entry in _torch_calls(repo):
            if entry.status_for(backend) != "differs":
                continue
            plan = plan_call(rc.call, entry, backend)
            issues: list[Issue] = [i for i in plan.issues if i.kind == self.issue_kind]
            if not issues:
                continue
            severity = max((i.severity for i in issues), key=_rank)
            message = issues[0].message if len(issues) == 1 else \
                "; ".join(i.message.rstrip(".") for i in issues) + "."
            yield self._finding(rc, message, plan.rewrite, severity)


def _rank(severity: Severity) -> int:
    return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[severity]


class ApiSemanticsDiffer(_IssueRule):
    """Flags arguments whose meaning differs in MindSpore although the name may not.

    The translated call runs but computes something else: BatchNorm's ``momentum`` is
    ``1 - momentum``, ``nn.Conv2d`` pads ``'same'`` unless ``pad_mode='pad'``, a positional
    ``nn.Dropout(p)`` is read as ``keep_prob``, ``nn.LayerNorm`` normalises from
    ``begin_norm_axis``.

    Write the rewrite in the suggestion: it keeps torch's behaviour with MindSpore's
    parameters (``momentum=1 - m``, ``pad_mode='pad', padding=...``, ``p=...``).
    """

    id = "MS102"
    name = "api-semantics-differ"
    category = Category.API_MAPPING
    severity = Severity.ERROR
    confidence = Confidence.HIGH
    issue_kind = "semantics"
    VALID = (
        "import torch.nn as nn\nbn = nn.BatchNorm2d(16)\n",
        "import torch.nn as nn\ndrop = nn.Dropout(p=0.2)\n",
        "import torch.nn as nn\nfc = nn.Linear(4, 8)\n",
    )
    INVALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(16, 32, 3, padding=1)\n",
        "import torch.nn as nn\nbn = nn.BatchNorm2d(16, momentum=0.01)\n",
        "import torch.nn as nn\ndrop = nn.Dropout(0.2)\n",
        "import torch.nn as nn\nbn = nn.BatchNorm1d(8, track_running_stats=False)\n",
    )


class ApiDefaultDiffers(_IssueRule):
    """Flags calls that rely on a default whose value differs in MindSpore.

    Leaving the argument out gives a different layer: ``nn.Conv2d`` has no bias by
    default, ``nn.LayerNorm`` uses ``epsilon=1e-7``, ``nn.GELU`` approximates with tanh,
    ``nn.SmoothL1Loss`` does not reduce.

    Pass torch's value explicitly under MindSpore's name, as in the suggestion.
    """

    id = "MS103"
    name = "api-default-differs"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    issue_kind = "default"
    VALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 3, bias=False)\n",
        "import torch.nn as nn\nact = nn.ReLU()\n",
    )
    INVALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 3)\n",
        "import torch.nn as nn\nact = nn.GELU()\n",
        "import torch.nn as nn\npool = nn.MaxPool2d(2)\n",
    )


class ApiArgumentsDiffer(_IssueRule):
    """Flags arguments MindSpore names differently, expects at another position, or lacks.

    The call fails (unknown keyword) or binds a value to the wrong parameter: torch's
    ``bias=`` is ``has_bias=`` in ``nn.Conv2d`` / ``nn.Dense``, ``groups`` is ``group``,
    and a parameter such as ``padding_mode`` does not exist at all.

    Use MindSpore's keyword names from the suggestion and drop or re-implement the
    arguments MindSpore lacks.
    """

    id = "MS104"
    name = "api-arguments-differ"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    issue_kind = "arguments"
    VALID = (
        "import torch.nn as nn\nfc = nn.Linear(4, 8)\n",
        "import torch\ns = torch.sum(torch.ones(3))\n",
    )
    INVALID = (
        "import torch.nn as nn\nfc = nn.Linear(4, 8, bias=False)\n",
        "import torch.nn as nn\nconv = nn.Conv2d(4, 8, 3, groups=2, bias=True, padding=1)\n",
        "import torch.nn as nn\nconv = nn.Conv2d(4, 8, 3, padding_mode='reflect', bias=True,"
        " padding=1)\n",
    )
