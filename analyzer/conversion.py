"""The one mapping engine: the MindSpore call that replaces a torch call, for the ``Fix:``
text of the MS1xx rules and for the generated Cells alike.

:func:`plan_call` binds a call's arguments to the torch parameters recorded in the API
table, applies the table's parameter differences for the chosen backend (renames, missing
parameters, defaults, semantic traps with named handlers in
:mod:`msready.analyzer.conversion_traps`), and renders one complete MindSpore call.
Whole-call rewrites that are not a call of the target (initialisers applied with
``set_data``, ``x.size(d)`` as ``x.shape[d]``, a hand-written suggestion) come from the
registry :data:`_WHOLE_CALL`. The rules print the rewrite as the ``Fix:``; the Cell
translator (:mod:`msready.skeletons.layers`) passes its libcst arguments as code text and
parses the rewrite back. What the two readers need differently is
:class:`~msready.analyzer.conversion_plan.Options`, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from msready.analyzer.apitable import BACKENDS, ApiEntry, ParamDiff, load_table
from msready.analyzer.conversion_plan import (
    CELL,
    FIX,
    INITIALIZERS,
    RECEIVER,
    Call,
    CallPlan,
    Issue,
    Options,
    Plan,
    TorchCall,
    arg_text,
    ms_text,
    neutral_arg,
    positional_params,
    rank,
    same_literal,
    short,
)
from msready.analyzer.conversion_traps import (
    SEMANTICS,
    generic,
    initializer,
    size_tuples,
    unbiased,
)
from msready.analyzer.facts import Arg, CallKind
from msready.analyzer.findings import Severity

__all__ = ["CELL", "FIX", "RECEIVER", "Arg", "CallPlan", "Issue", "Options", "TorchCall",
           "arg_text", "neutral_arg", "plan_call", "rank", "short"]


# ----- binding and the per-parameter differences ----------------------------------------

def _bind(plan: Plan) -> None:
    positional = positional_params(plan.entry.torch_params)
    unpacked = False
    for index, arg in enumerate(plan.call.args):
        if arg.star:
            unpacked = True
            plan.rest.append(arg)
        elif arg.keyword is not None:
            plan.bound[arg.keyword] = arg
        elif not unpacked and index < len(positional):
            plan.bound[positional[index]] = arg
            plan.positions[positional[index]] = index
        else:
            plan.rest.append(arg)


def _defaults(plan: Plan, diffs: tuple[ParamDiff, ...]) -> None:
    semantic = {d.torch for d in diffs if d.kind == "semantics"}
    for diff in diffs:
        if plan.options.cell and diff.kind == "default" and diff.torch == "stride" \
                and diff.torch_default == "None" \
                and "stride" in plan.bound and "kernel_size" in plan.bound \
                and plan.bound["stride"].text.isidentifier() \
                and plan.bound["stride"].text not in ("None", "True", "False"):
            # in a Cell, ``stride=stride`` may hold torch's None (the kernel size), which
            # MindSpore's layer refuses (a Fix keeps the name: the person knows its value)
            stride, kernel = plan.value("stride"), plan.value("kernel_size")
            plan.values["stride"] = f"{kernel} if {stride} is None else {stride}"
        if diff.kind != "default" or diff.torch in plan.bound or diff.torch in semantic:
            continue
        name = diff.mindspore or diff.torch
        value, torch_default = diff.torch_default, diff.torch_default
        if value == "None" and diff.torch == "stride" and "kernel_size" in plan.bound:
            value = plan.values.get("kernel_size", arg_text(plan.bound["kernel_size"]))
            torch_default = "kernel_size"
        if value is None or value == "None" or name in plan.extra:
            continue
        plan.extra[name] = value
        plan.add("default", f"MindSpore's `{name}` defaults to {diff.mindspore_default}; "
                 f"torch's `{diff.torch}` defaults to {torch_default}.", Severity.WARNING)


def _arguments(plan: Plan, diffs: tuple[ParamDiff, ...]) -> None:
    missing = {d.torch: d for d in diffs if d.kind == "missing"}
    for torch_name, ms_name in plan.entry.renames(plan.backend).items():
        plan.names.setdefault(torch_name, ms_name)
    ms_positional = positional_params(plan.entry.target(plan.backend).params)
    if plan.call.kind is CallKind.TENSOR_METHOD and plan.entry.becomes_function(plan.backend):
        ms_positional = ms_positional[1:]  # the tensor itself is the first argument
    for name, arg in plan.bound.items():
        if name in plan.handled:
            continue
        if name in missing:
            plan.drop.add(name)
            if not same_literal(arg, missing[name].torch_default):
                plan.add("arguments", f"MindSpore has no `{name}`; drop it or re-implement "
                         "its effect.", Severity.WARNING, todo=True)
        elif name in plan.names and name not in plan.drop and name not in plan.positions:
            measured = any(d.torch == name and d.kind == "renamed" and d.note.startswith(
                "Measured") for d in diffs)
            how = (f" (measured on CPU with MindSpore {load_table().mindspore_version}: "
                   f"`{name}=` fails)") if measured else ""
            plan.add("arguments", f"`{name}=` is `{plan.names[name]}=` in MindSpore{how}.",
                     Severity.WARNING)
        elif name in plan.positions and ms_positional and name not in plan.drop:
            index, ms_name = plan.positions[name], plan.names.get(name, name)
            if index >= len(ms_positional) or ms_positional[index] != ms_name:
                plan.keyword.add(name)
                plan.add("arguments", f"Positional argument {index + 1} is `{ms_name}` in "
                         "torch's order but not in MindSpore's; pass it by keyword.",
                         Severity.WARNING)


def _measured_forms(plan: Plan) -> None:
    """A call of the same shape as a form measured to fail or differ on CPU (same number
    of positional arguments, same keywords) gets the measurement as its issue, unless the
    signature differences already rewrite it (``torch.flatten(x)`` gets torch's
    ``start_dim=0`` from the default difference)."""
    if plan.issues or any(a.star for a in plan.call.args):
        return
    positional = sum(1 for a in plan.call.args if a.keyword is None)
    keywords = sorted(a.keyword for a in plan.call.args if a.keyword)
    for form in plan.entry.forms_for(plan.backend):
        if form.positional == positional and list(form.keywords) == keywords:
            plan.add("semantics", form.note.rstrip(".") + "; check this call against torch "
                     "on its real inputs.", Severity.ERROR)


def _render(plan: Plan) -> str:
    """The MindSpore call: positional arguments, ``*args``, keywords, then ``**kwargs``."""
    api = plan.api
    method = api.startswith("mindspore.Tensor.")
    callee = f"{plan.receiver}.{api.rsplit('.', 1)[1]}" if method else short(api)
    positional: list[str] = []
    keywords: list[str] = []
    if plan.call.kind is CallKind.TENSOR_METHOD and not method:
        positional.append(plan.receiver)
    placement = load_table().ignored_params - set(plan.entry.target(plan.backend).params)
    # a positional placement argument (``nn.LeakyReLU(0.2, True)``'s inplace) is dropped:
    # the arguments after it go by keyword
    keyword_from = min([plan.positions[n] for n in plan.keyword | placement
                        if n in plan.positions], default=len(plan.call.args))
    for name in plan.bound:
        if name in plan.drop or name in placement:
            continue
        if name in plan.positions and plan.positions[name] < keyword_from:
            positional.append(plan.value(name))
        else:
            keywords.append(f"{plan.names.get(name, name)}={plan.value(name)}")
    starred = [f"{a.star}{a.text}" if a.star else ms_text(a, plan.bindings) for a in plan.rest
               if a.star != "**"]
    keywords += [f"{k}={v}" for k, v in plan.extra.items()]
    keywords += [f"**{a.text}" for a in plan.rest if a.star == "**"]
    return f"{callee}({', '.join(positional + starred + keywords)})"


# ----- whole-call rewrites --------------------------------------------------------------

def _shape(plan: Plan) -> str:
    """``x.size()`` -> ``x.shape``; ``x.size(d)`` -> ``x.shape[d]``."""
    dim = next(iter(plan.bound), None)
    return f"{plan.receiver}.shape[{plan.value(dim)}]" if dim else f"{plan.receiver}.shape"


def _tile(plan: Plan) -> str | None:
    """``x.repeat(2, 1)`` -> ``x.tile((2, 1))`` where the target is ``Tensor.tile``."""
    if not plan.api.endswith(".tile"):
        return None
    reps = [ms_text(a, plan.bindings) for a in plan.call.args if a.keyword is None]
    if len(reps) == 1 and not plan.call.args[0].star:
        return f"{plan.receiver}.tile({reps[0]})"
    inner = ", ".join(f"{a.star}{a.text}" if a.star else ms_text(a, plan.bindings)
                      for a in plan.call.args if a.keyword is None)
    return f"{plan.receiver}.tile(({inner}{',' if len(reps) == 1 else ''}))"


_WHOLE_CALL: dict[str, Callable[[Plan], str | None]] = {
    "torch.Tensor.size": _shape,
    "torch.Tensor.repeat": _tile,
}


def _whole_call(plan: Plan) -> str | None:
    """A rewrite that is not a call of the target with the call's arguments, or None."""
    handler = _WHOLE_CALL.get(plan.entry.torch)
    if handler is not None:
        return handler(plan)
    if plan.api.startswith(INITIALIZERS):
        return initializer(plan)
    if plan.entry.usage_differs_on(plan.backend) and plan.entry.suggestion:
        return plan.entry.suggestion
    return None


def _usage(entry: ApiEntry, backend: str) -> str:
    api = entry.target(backend).api or ""
    sentences = [t for t in re.split(r"(?<=\.)\s+(?=[A-Z])", entry.notes) if t.strip()
                 and not any(t.strip() in p.note for p in entry.params)]  # said per argument
    platform = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}.get(backend, backend)
    # the sentence about this backend (a measured note names it), else the first one
    how = next((t for t in sentences if platform in t), sentences[0] if sentences else
               "check its usage").rstrip(".")
    return f"`{entry.torch}` becomes `{api}`, which is used differently: {how}."


def plan_call(call: Call, entry: ApiEntry, backend: str,
              bindings: dict[str, str] | None = None, options: Options = FIX) -> CallPlan:
    """The differences this call exercises on ``backend`` and its MindSpore rewrite, for
    the ``Fix:`` text (``options=FIX``) or a Cell (``options=CELL``)."""
    plan = Plan(entry, backend, call, options, dict(bindings or {}))
    _bind(plan)
    diffs = entry.params_for(backend)
    for diff in diffs:
        if diff.kind == "semantics":
            SEMANTICS.get(diff.torch, generic)(plan, diff)
    unbiased(plan)
    size_tuples(plan)
    _defaults(plan, diffs)
    _arguments(plan, diffs)
    _measured_forms(plan)
    if call.kind is CallKind.TENSOR_METHOD and entry.becomes_function(backend):
        method = entry.torch.rsplit(".", 1)[1]
        elsewhere = [b for b in BACKENDS if entry.target(b).api == f"mindspore.Tensor.{method}"]
        where = (f"`mindspore.Tensor.{method}` runs on {', '.join(elsewhere)} only"
                 if elsewhere else f"`mindspore.Tensor` has no `{method}` method on {backend}")
        plan.add("arguments", f"{where}; call `{short(plan.api)}` with the tensor as its "
                 "first argument.", Severity.WARNING)
    positional = sorted((i, n) for n, i in plan.positions.items())
    order = [n for _, n in positional] + [n for n in plan.bound if n not in plan.positions]
    plan.bound = {n: plan.bound[n] for n in order}
    whole = _whole_call(plan)
    todos = tuple(i.message for i in plan.issues if i.todo)
    if whole is not None:
        # the whole-call handler consumes the arguments (``uniform_``'s a and b)
        todos = tuple(i.message for i in plan.issues if i.todo and i.kind != "arguments")
        # One finding explains the whole rewrite: the per-argument notes fold into it.
        details = [i.message.rstrip(".") for i in plan.issues if i.kind != "arguments"]
        message = " ".join([_usage(entry, backend)] + [d + "." for d in details])
        severity = max((i.severity for i in plan.issues if i.kind != "arguments"),
                       key=rank, default=Severity.WARNING)
        return CallPlan((Issue("semantics", message, severity),), whole, todos)
    if not plan.issues and entry.usage_differs_on(backend):
        plan.add("semantics", _usage(entry, backend), Severity.WARNING)
    return CallPlan(tuple(plan.issues), _render(plan), todos)
