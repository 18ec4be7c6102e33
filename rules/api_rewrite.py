"""The MindSpore call that replaces a torch call, for the MS1xx rules.

:func:`plan_call` binds a call's arguments to the torch parameters recorded in the API
table, applies the table's parameter differences for the chosen backend (renames, missing
parameters, defaults, semantic traps with named handlers), and renders one complete
MindSpore call. Whole-call rewrites that are not a call of the target (initialisers applied
with ``set_data``, ``x.size(d)`` as ``x.shape[d]``, a hand-written suggestion) come from
the registry :data:`_WHOLE_CALL`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from msready.analyzer.apitable import BACKENDS, ApiEntry, ParamDiff, load_table
from msready.analyzer.facts import Arg, CallKind, CallSite
from msready.analyzer.findings import Severity

RECEIVER = "x"  # stands for a method's receiver whose text the call site does not keep
_INITIALIZERS = "mindspore.common.initializer."
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


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
    call: CallSite
    bindings: dict[str, str] = field(default_factory=dict)  # the file's import bindings
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

    @property
    def receiver(self) -> str:
        """The source text of a method call's receiver (``x`` when not kept), in
        parentheses unless it is a name, attribute, call or subscript: ``(attn @ v)``
        stays one operand of the rewritten method call."""
        text = self.call.receiver or RECEIVER
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return f"({text})"
        atomic = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List,
                  ast.Tuple, ast.Dict, ast.Set)
        return text if isinstance(node, atomic) else f"({text})"

    @property
    def api(self) -> str:
        return self.entry.target(self.backend).api or ""

    def value(self, name: str) -> str:
        """The MindSpore text of a bound argument's value."""
        arg = self.bound[name]
        return self.values.get(name, ms_text(arg, self.bindings))


@dataclass(frozen=True, slots=True)
class CallPlan:
    """The differences a call exercises and the complete MindSpore code to write."""

    issues: tuple[Issue, ...]
    rewrite: str


def _text(arg: Arg) -> str:
    """Source text of an argument value (literals re-printed, tuples keep parentheses)."""
    return repr(arg.literal) if arg.is_literal else arg.text


def ms_text(arg: Arg, bindings: dict[str, str]) -> str:
    """An argument's text with a torch dtype name (``torch.long`` through the file's
    imports) replaced by its MindSpore dtype."""
    text = _text(arg)
    if not _DOTTED.fullmatch(text):
        return text
    head, dot, tail = text.partition(".")
    qualified = bindings.get(head, "") + dot + tail  # only names the file imports
    entry = load_table().lookup(qualified) if qualified.startswith("torch.") else None
    if entry is not None and entry.kind == "dtype":
        return entry.target("cpu").api or text
    return text


def _same_literal(arg: Arg, default: str | None) -> bool:
    if default is None or not arg.is_literal:
        return False
    try:
        return bool(ast.literal_eval(default) == arg.literal)
    except (ValueError, SyntaxError):
        return False


def short(api: str) -> str:
    """A MindSpore name as written after ``import mindspore`` idioms (``ops.relu``,
    ``nn.Dense``, ``Tensor.view``); a top-level function keeps its module
    (``mindspore.tensor``, ``mindspore.grad``): a bare ``tensor`` would name nothing."""
    rest = api.removeprefix("mindspore.")
    if rest == api or "." in rest or rest in ("Tensor", "Parameter"):
        return rest
    return api


def _positional(params: tuple[str, ...]) -> tuple[str, ...]:
    """The leading parameters that can be passed by position (up to a ``*`` marker)."""
    out: list[str] = []
    for name in params:
        if name.startswith("*"):
            break
        out.append(name)
    return tuple(out)


# ----- semantic traps: named handlers ---------------------------------------------------

def _padding(plan: _Plan, diff: ParamDiff) -> None:
    """Conv padding: MindSpore honours ``padding`` only with ``pad_mode='pad'``."""
    if "Pool" in plan.api:
        _pool_padding(plan, diff)
        return
    layer = short(plan.api)
    if "pad_mode" in plan.bound:
        return
    arg = plan.bound.get("padding")
    if arg is None and _pointwise(plan):
        return  # a 1x1 kernel at stride 1 gives the same output for 'same' and 'valid'
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


def _ones(arg: Arg | None) -> bool:
    """True for a literal 1 or a tuple of 1s."""
    if arg is None or not arg.is_literal:
        return False
    values = arg.literal if isinstance(arg.literal, tuple) else (arg.literal,)
    return all(v == 1 and not isinstance(v, bool) for v in values)


def _pointwise(plan: _Plan) -> bool:
    """A convolution with a literal 1x1 kernel and stride 1 (the default when absent)."""
    stride = plan.bound.get("stride")
    return _ones(plan.bound.get("kernel_size")) and (stride is None or _ones(stride))


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
    if arg is not None and not arg.is_literal:
        plan.add("semantics", f"mindspore.nn.LayerNorm needs normalized_shape as a tuple: "
                 f"`({arg.text},)` when `{arg.text}` is an int.", Severity.ERROR)
        return
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


def _approximate(plan: _Plan, diff: ParamDiff) -> None:
    """GELU: torch's ``approximate`` is a string ('none' | 'tanh'), MindSpore's a bool whose
    default (True, tanh) is not torch's default (exact erf)."""
    arg = plan.bound.get("approximate")
    if arg is None:
        plan.extra["approximate"] = "False"
        plan.add("default", "MindSpore's `approximate` defaults to True (tanh); torch's "
                 "GELU is exact by default: approximate=False.", Severity.WARNING)
        return
    if arg.is_literal and arg.literal in ("none", "tanh"):
        plan.values["approximate"] = repr(arg.literal == "tanh")
    else:
        plan.values["approximate"] = f"({arg.text}) == 'tanh'"
    plan.keyword.add("approximate")
    plan.add("semantics", f"approximate={_text(arg)} is the bool "
             f"approximate={plan.values['approximate']} in MindSpore.", Severity.WARNING)


def _pool_padding(plan: _Plan, diff: ParamDiff) -> None:
    """Pooling layers: MindSpore honours ``padding`` and ``ceil_mode`` only with
    ``pad_mode='pad'`` (its default is 'valid', which is torch's padding=0)."""
    used = [n for n in ("padding", "ceil_mode") if n in plan.bound
            and not (plan.bound[n].is_literal and plan.bound[n].literal in (0, False))]
    if not used or "pad_mode" in plan.bound:
        return
    plan.keyword.update(used)
    plan.extra["pad_mode"] = "'pad'"
    plan.add("semantics", f"{short(plan.api)} ignores {' and '.join(used)} unless "
             "pad_mode='pad' (it refuses them otherwise).", Severity.ERROR)


def _size_tuple(plan: _Plan, diff: ParamDiff) -> None:
    """Creation functions measured to take the shape as one tuple (``ops.zeros((b, c))``):
    torch's separate sizes ``torch.zeros(b, c)`` or unpacked ``torch.zeros(*shape)`` are
    packed into one tuple argument."""
    sizes: list[Arg] = []
    for arg in plan.call.args:
        if arg.keyword is not None or arg.star == "**":
            break
        sizes.append(arg)
    if not sizes or (len(sizes) == 1 and not sizes[0].star):
        return  # one argument: already a shape (or a single size MindSpore accepts)
    if len(sizes) == 1:
        text = f"tuple({sizes[0].text})"
    else:
        text = "(" + ", ".join(f"{a.star}{_text(a)}" for a in sizes) + ")"
    for name in [n for n, a in plan.bound.items() if a in sizes]:
        del plan.bound[name]
        plan.positions.pop(name, None)
    plan.rest = [Arg(None, text)] + [a for a in plan.rest if a not in sizes]
    plan.add("semantics", f"`{short(plan.api)}` takes the shape as one tuple; separate "
             "sizes are read as other parameters and fail (measured on CPU with MindSpore "
             f"{load_table().mindspore_version}).", Severity.ERROR)


def _float_dtype(plan: _Plan, diff: ParamDiff) -> None:
    """Creation functions measured to give an integer tensor for a float value
    (``ops.full((2, 3), 1.5)``): a call passing a float literal without ``dtype`` gets
    ``dtype=mindspore.float32``, torch's default float type."""
    if any(a.keyword == "dtype" for a in plan.call.args) or not any(
            isinstance(a.literal, float) for a in plan.call.args if a.is_literal):
        return
    plan.extra["dtype"] = "mindspore.float32"
    plan.add("semantics", f"`{short(plan.api)}` does not take the dtype from a float value "
             "as torch does (the result holds integers); pass dtype=mindspore.float32 "
             f"(measured on CPU with MindSpore {load_table().mindspore_version}).",
             Severity.ERROR)


def _generic(plan: _Plan, diff: ParamDiff) -> None:
    if diff.torch in plan.bound:
        plan.add("semantics", f"`{diff.torch}` differs in MindSpore: {diff.note}",
                 Severity.WARNING)


_SEMANTICS: dict[str, Callable[[_Plan, ParamDiff], None]] = {
    "padding": _padding, "momentum": _momentum, "track_running_stats": _running_stats,
    "p": _dropout, "normalized_shape": _layer_norm, "size": _size_tuple,
    "dtype": _float_dtype, "approximate": _approximate,
}


def _unbiased(plan: _Plan) -> None:
    """std / var: torch's legacy ``unbiased`` flag is MindSpore's ``ddof`` (1 or 0)."""
    arg = plan.bound.get("unbiased")
    ms_params = plan.entry.target(plan.backend).params
    if arg is None or "ddof" not in ms_params:
        return
    plan.drop.add("unbiased")
    value = ("1" if arg.literal else "0") if arg.is_literal else f"int({arg.text})"
    plan.extra["ddof"] = value
    plan.handled.add("unbiased")
    plan.add("arguments", f"`unbiased={arg.text}` is `ddof={value}` in MindSpore.",
             Severity.WARNING)


# ----- binding and the per-parameter differences ----------------------------------------

def _bind(plan: _Plan) -> None:
    positional = _positional(plan.entry.torch_params)
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
        if value is None or value == "None" or name in plan.extra:
            continue
        plan.extra[name] = value
        plan.add("default", f"MindSpore's `{name}` defaults to {diff.mindspore_default}; "
                 f"torch's `{diff.torch}` defaults to {torch_default}.", Severity.WARNING)


def _arguments(plan: _Plan, diffs: tuple[ParamDiff, ...]) -> None:
    missing = {d.torch: d for d in diffs if d.kind == "missing"}
    for diff in diffs:
        if diff.kind == "renamed" and diff.mindspore:
            plan.names.setdefault(diff.torch, diff.mindspore)
    ms_positional = _positional(plan.entry.target(plan.backend).params)
    if plan.call.kind is CallKind.TENSOR_METHOD and plan.entry.becomes_function(plan.backend):
        ms_positional = ms_positional[1:]  # the tensor itself is the first argument
    for name, arg in plan.bound.items():
        if name in plan.handled:
            continue
        if name in missing:
            plan.drop.add(name)
            if not _same_literal(arg, missing[name].torch_default):
                plan.add("arguments", f"MindSpore has no `{name}`; drop it or re-implement "
                         "its effect.", Severity.WARNING)
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


def _measured_forms(plan: _Plan) -> None:
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


def _render(plan: _Plan) -> str:
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

def _initializer(plan: _Plan) -> str:
    """``nn.init.normal_(w, std=0.02)`` -> ``w.set_data(initializer(Normal(sigma=0.02),
    w.shape, w.dtype))``: MindSpore initialisers are objects applied to a Parameter."""
    target = plan.bound.get("tensor")
    param = target.text if target is not None else "param"
    init = plan.api.rsplit(".", 1)[1]
    skip = {"tensor", "generator"}
    if init == "Uniform":
        low = plan.value("a") if "a" in plan.bound else "0.0"
        high = plan.value("b") if "b" in plan.bound else "1.0"
        skip |= {"a", "b"}
        if low == f"-{high}" or low == f"-({high})":
            ctor = f"Uniform(scale={high})"
        else:
            ctor = f"Uniform(scale=({high} - {low}) / 2)"
            return (f"{param}.set_data(initializer({ctor}, {param}.shape, {param}.dtype)"
                    f".init_data() + ({low} + {high}) / 2)")
    else:
        args = [f"{plan.names.get(n, n)}={plan.value(n)}" for n in plan.bound
                if n not in skip and n not in plan.drop]
        args += [f"{k}={v}" for k, v in plan.extra.items()]
        ctor = f"{init}({', '.join(args)})"
    return f"{param}.set_data(initializer({ctor}, {param}.shape, {param}.dtype))"


def _shape(plan: _Plan) -> str:
    """``x.size()`` -> ``x.shape``; ``x.size(d)`` -> ``x.shape[d]``."""
    dim = next(iter(plan.bound), None)
    return f"{plan.receiver}.shape[{plan.value(dim)}]" if dim else f"{plan.receiver}.shape"


def _tile(plan: _Plan) -> str | None:
    """``x.repeat(2, 1)`` -> ``x.tile((2, 1))`` where the target is ``Tensor.tile``."""
    if not plan.api.endswith(".tile"):
        return None
    reps = [ms_text(a, plan.bindings) for a in plan.call.args if a.keyword is None]
    if len(reps) == 1 and not plan.call.args[0].star:
        return f"{plan.receiver}.tile({reps[0]})"
    inner = ", ".join(f"{a.star}{a.text}" if a.star else ms_text(a, plan.bindings)
                      for a in plan.call.args if a.keyword is None)
    return f"{plan.receiver}.tile(({inner}{',' if len(reps) == 1 else ''}))"


_WHOLE_CALL: dict[str, Callable[[_Plan], str | None]] = {
    "torch.Tensor.size": _shape,
    "torch.Tensor.repeat": _tile,
}


def _whole_call(plan: _Plan) -> str | None:
    """A rewrite that is not a call of the target with the call's arguments, or None."""
    handler = _WHOLE_CALL.get(plan.entry.torch)
    if handler is not None:
        return handler(plan)
    if plan.api.startswith(_INITIALIZERS):
        return _initializer(plan)
    if plan.entry.usage_differs_on(plan.backend) and plan.entry.suggestion:
        return plan.entry.suggestion
    return None


def rank(severity: Severity) -> int:
    """Order of severities, for picking the highest."""
    return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[severity]


def _usage(entry: ApiEntry, backend: str) -> str:
    api = entry.target(backend).api or ""
    sentences = [t for t in re.split(r"(?<=\.)\s+(?=[A-Z])", entry.notes) if t.strip()
                 and not any(t.strip() in p.note for p in entry.params)]  # said per argument
    platform = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}.get(backend, backend)
    # the sentence about this backend (a measured note names it), else the first one
    how = next((t for t in sentences if platform in t), sentences[0] if sentences else
               "check its usage").rstrip(".")
    return f"`{entry.torch}` becomes `{api}`, which is used differently: {how}."


def plan_call(call: CallSite, entry: ApiEntry, backend: str,
              bindings: dict[str, str] | None = None) -> CallPlan:
    """The differences this call exercises on ``backend`` and its MindSpore rewrite."""
    plan = _Plan(entry, backend, call, dict(bindings or {}))
    _bind(plan)
    diffs = entry.params_for(backend)
    for diff in diffs:
        if diff.kind == "semantics":
            _SEMANTICS.get(diff.torch, _generic)(plan, diff)
    _unbiased(plan)
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
    if whole is not None:
        # One finding explains the whole rewrite: the per-argument notes fold into it.
        details = [i.message.rstrip(".") for i in plan.issues if i.kind != "arguments"]
        message = " ".join([_usage(entry, backend)] + [d + "." for d in details])
        severity = max((i.severity for i in plan.issues if i.kind != "arguments"),
                       key=rank, default=Severity.WARNING)
        return CallPlan((Issue("semantics", message, severity),), whole)
    if not plan.issues and entry.usage_differs_on(backend):
        plan.add("semantics", _usage(entry, backend), Severity.WARNING)
    return CallPlan(tuple(plan.issues), _render(plan))
