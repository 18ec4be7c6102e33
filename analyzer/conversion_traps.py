"""The named handlers of the one mapping engine: each torch API whose conversion needs more
than the table's renames has its rule here, once, for the ``Fix:`` text and the Cells.

A handler reads the bound arguments of a :class:`~msready.analyzer.conversion_plan.Plan`
and records what changes (values, keywords, drops, added MindSpore keywords) and why
(issues). :data:`SEMANTICS` is keyed by the torch parameter the API table marks as a
semantic trap; :func:`unbiased` and :func:`initializer` are called for every call.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from msready.analyzer.apitable import ParamDiff, load_table
from msready.analyzer.conversion_plan import (
    INITIALIZERS,
    RUNTIME_ASSIGN,
    RUNTIME_PADDING,
    RUNTIME_UNIFORM,
    Plan,
    arg_text,
    short,
)
from msready.analyzer.facts import Arg
from msready.analyzer.findings import Severity


def _padding(plan: Plan, diff: ParamDiff) -> None:
    """Conv padding: MindSpore honours ``padding`` only with ``pad_mode='pad'``."""
    if "Pool" in plan.api:
        _pool_padding(plan, diff)
        return
    if "_pool" in plan.api:
        _sides(plan)
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
    if arg.is_literal and isinstance(arg.literal, (tuple, list)) and len(arg.literal) in (2, 3):
        plan.values["padding"] = _both_sides(arg.literal)  # MindSpore pads (before, after)
    elif not arg.is_literal and plan.options.cell and "1d" not in plan.api:
        # an int or a (ph, pw) tuple, known when the Cell runs
        plan.values["padding"] = f"{RUNTIME_PADDING}({arg.text})"
    plan.keyword.add("padding")
    plan.extra["pad_mode"] = "'pad'"
    plan.add("semantics", f"padding={arg_text(arg)} is ignored by {layer} unless "
             "pad_mode='pad' (its default pad_mode is 'same').", Severity.ERROR)


def _sides(plan: Plan) -> None:
    """Functional average pooling (``ops.avg_pool2d``, ``ops.avg_pool3d``): an int, or
    both sides of every axis (top, bottom, left, right), where torch takes one amount
    per axis and pads both of its sides: ``(1, 2)`` is ``(1, 1, 2, 2)``."""
    arg = plan.bound.get("padding")
    if arg is None or (arg.is_literal and isinstance(arg.literal, int)) or (
            not arg.is_literal and _a_number(arg.text)):
        return
    axes = 3 if "3d" in plan.api else 2
    if arg.is_literal and isinstance(arg.literal, tuple) and len(arg.literal) == axes:
        plan.values["padding"] = _both_sides(arg.literal)
    elif arg.is_literal:
        return  # already every side, or not a padding MindSpore could take
    elif plan.options.cell:
        plan.values["padding"] = f"{RUNTIME_PADDING}({arg.text})"  # an int or a tuple
    else:
        plan.add("semantics", f"`{short(plan.api)}` takes padding as an int or as both "
                 f"sides of each axis; if {arg.text} holds one amount per axis, repeat each "
                 "amount (torch's (ph, pw) is (ph, ph, pw, pw)).", Severity.WARNING, todo=True)
        return
    plan.add("semantics", f"`{short(plan.api)}` takes padding as an int or as both sides "
             f"of each axis: {arg_text(arg)} is {plan.values['padding']}.", Severity.ERROR)


def _both_sides(amounts: tuple[object, ...] | list[object]) -> str:
    """torch's padding, one amount per axis, as both sides of each axis: ``(1, 1, 2, 2)``
    for ``(1, 2)``."""
    return repr(tuple(v for v in amounts for _ in (0, 1)))


# Operators a tuple does not take: an expression made with one is a number.
_NUMBER_OPERATORS = (ast.FloorDiv, ast.Div, ast.Sub, ast.Mod, ast.Pow)


def _a_number(text: str) -> bool:
    """True for an expression that can only be a number (``k // 2``, ``int(p)``, ``-p``);
    a name or an attribute may hold a tuple."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _NUMBER_OPERATORS)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("int", "len", "round")


def _ones(arg: Arg | None) -> bool:
    """True for a literal 1 or a tuple of 1s."""
    if arg is None or not arg.is_literal:
        return False
    values = arg.literal if isinstance(arg.literal, tuple) else (arg.literal,)
    return all(v == 1 and not isinstance(v, bool) for v in values)


def _pointwise(plan: Plan) -> bool:
    """A convolution with a literal 1x1 kernel and stride 1 (the default when absent)."""
    stride = plan.bound.get("stride")
    return _ones(plan.bound.get("kernel_size")) and (stride is None or _ones(stride))


def _momentum(plan: Plan, diff: ParamDiff) -> None:
    """BatchNorm: MindSpore's momentum weighs the old running value (1 - torch's)."""
    arg = plan.bound.get("momentum")
    if arg is None:
        return
    if arg.is_literal and isinstance(arg.literal, int | float) and not isinstance(
            arg.literal, bool):
        value = repr(round(1 - float(arg.literal), 10))
    elif arg.is_literal and arg.literal is None:
        plan.drop.add("momentum")
        plan.add("semantics", "momentum=None (cumulative average) has no MindSpore "
                 "counterpart.", Severity.ERROR, todo=True)
        return
    else:
        value = f"1 - ({arg.text})"
    plan.values["momentum"] = value
    plan.keyword.add("momentum")
    plan.add("semantics", f"momentum={arg_text(arg)} must be momentum={value} in MindSpore "
             "(it is 1 - torch's momentum; defaults 0.1 and 0.9 agree).", Severity.ERROR)


def _running_stats(plan: Plan, diff: ParamDiff) -> None:
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


def _dropout(plan: Plan, diff: ParamDiff) -> None:
    """Dropout: the first positional parameter of nn.Dropout is keep_prob."""
    if "p" in plan.positions:
        plan.keyword.add("p")
        plan.handled.add("p")
        plan.add("semantics", f"nn.Dropout({plan.bound['p'].text}) would mean "
                 f"keep_prob={plan.bound['p'].text}; pass p by keyword.", Severity.ERROR)


def _layer_norm(plan: Plan, diff: ParamDiff) -> None:
    """LayerNorm: a tuple shape, and the axes to normalise over."""
    arg = plan.bound.get("normalized_shape")
    if arg is not None and not arg.is_literal:
        if plan.options.cell:  # an int or a sequence, known when the Cell runs
            text = arg.text
            plan.values["normalized_shape"] = (
                f"tuple({text}) if isinstance({text}, (list, tuple)) else ({text},)")
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


def _approximate(plan: Plan, diff: ParamDiff) -> None:
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
    plan.add("semantics", f"approximate={arg_text(arg)} is the bool "
             f"approximate={plan.values['approximate']} in MindSpore.", Severity.WARNING)


# Max pooling settings MindSpore accepts away from these (torch's) defaults only with
# pad_mode='pad' (its error message names them); average pooling: the first two.
_POOL_DEFAULTS: tuple[tuple[str, object], ...] = (
    ("padding", 0), ("ceil_mode", False), ("dilation", 1), ("return_indices", False))


def _pool_padding(plan: Plan, diff: ParamDiff) -> None:
    """Pooling layers: MindSpore honours ``padding`` and ``ceil_mode`` (and, for max
    pooling, ``dilation`` and ``return_indices``) away from torch's defaults only with
    ``pad_mode='pad'`` (its default is 'valid', which is torch's padding=0). Average
    pooling takes ``count_include_pad`` and ``divisor_override`` in any pad mode
    (measured on CPU with MindSpore 2.10)."""
    settings = _POOL_DEFAULTS if "MaxPool" in plan.api else _POOL_DEFAULTS[:2]
    used = [n for n, default in settings if n in plan.bound
            and not (plan.bound[n].is_literal and plan.bound[n].literal == default)]
    if not used or "pad_mode" in plan.bound:
        return
    plan.keyword.update(used)
    plan.extra["pad_mode"] = "'pad'"
    plan.add("semantics", f"{short(plan.api)} ignores {' and '.join(used)} unless "
             "pad_mode='pad' (it refuses them otherwise).", Severity.ERROR)


def _size_tuple(plan: Plan, diff: ParamDiff) -> None:
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
        text = "(" + ", ".join(f"{a.star}{arg_text(a)}" for a in sizes) + ")"
    for name in [n for n, a in plan.bound.items() if a in sizes]:
        del plan.bound[name]
        plan.positions.pop(name, None)
    plan.rest = [Arg(None, text)] + [a for a in plan.rest if a not in sizes]
    plan.add("semantics", f"`{short(plan.api)}` takes the shape as one tuple; separate "
             "sizes are read as other parameters and fail (measured on CPU with MindSpore "
             f"{load_table().mindspore_version}).", Severity.ERROR)


def _float_dtype(plan: Plan, diff: ParamDiff) -> None:
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


def generic(plan: Plan, diff: ParamDiff) -> None:
    """A semantic difference without a handler: said, not rewritten."""
    if diff.torch in plan.bound:
        plan.add("semantics", f"`{diff.torch}` differs in MindSpore: {diff.note}",
                 Severity.WARNING, todo=True)


# torch parameter the API table marks as a semantic trap -> its handler
SEMANTICS: dict[str, Callable[[Plan, ParamDiff], None]] = {
    "padding": _padding, "momentum": _momentum, "track_running_stats": _running_stats,
    "p": _dropout, "normalized_shape": _layer_norm, "size": _size_tuple,
    "dtype": _float_dtype, "approximate": _approximate,
}

# The sizes MindSpore's convolution and pooling layers take as an int or a tuple only,
# where torch takes any sequence
_SIZES = ("kernel_size", "stride", "dilation", "output_padding")
_SIZED_LAYERS = (*(f"mindspore.nn.{family}" for family in (
    "Conv", "MaxPool", "AvgPool", "LPPool")), "mindspore.ops.avg_pool", "mindspore.ops.max_pool")


def size_tuples(plan: Plan) -> None:
    """``nn.Conv2d(4, 8, kernel_size=[3, 1])``, ``F.avg_pool2d(x, kernel_size=[h, w])``: a
    size written as a list is the same tuple, which MindSpore's layers and pooling
    functions take (they refuse a list); a one-axis layer's one-item size is its item
    (``nn.Conv1d(c, c, kernel_size=[3])``: MindSpore's Conv1d takes an int)."""
    if not plan.api.startswith(_SIZED_LAYERS):
        return
    one_axis = "1d" in plan.api  # MindSpore's Conv1d takes an int only
    for name in _SIZES:
        arg = plan.bound.get(name)
        written = _as_tuple(arg.text, one_axis) if arg is not None else None
        if arg is None or written is None or name in plan.values:
            continue
        plan.values[name] = written
        plan.add("arguments", f"`{short(plan.api)}` takes `{name}` as an int or a tuple: "
                 f"{arg.text} is {plan.values[name]}.", Severity.ERROR)


def _as_tuple(text: str, one_axis: bool = False) -> str | None:
    """The tuple display of a list display (``[h, w]`` -> ``(h, w)``), or with
    ``one_axis`` the one item of a one-item list or tuple display (``[k]`` -> ``k``);
    None for other text."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, (ast.List, ast.Tuple)) or any(
            isinstance(e, ast.Starred) for e in tree.body.elts):
        return None
    items = [ast.unparse(e) for e in tree.body.elts]
    if one_axis and len(items) == 1:
        return items[0]
    if not isinstance(tree.body, ast.List):
        return None
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


_VARIANCE = ("torch.var", "torch.std", "torch.Tensor.var", "torch.Tensor.std")


def unbiased(plan: Plan) -> None:
    """std / var: torch's legacy ``unbiased`` flag is MindSpore's ``ddof`` (1 or 0). The
    legacy overload ``var(input, dim, unbiased, keepdim)`` takes them by position."""
    ms_params = plan.entry.target(plan.backend).params
    if "ddof" not in ms_params:
        return
    if plan.entry.torch in _VARIANCE and "dim" in plan.positions and "unbiased" not in \
            plan.bound and not any(a.star for a in plan.call.args):
        legacy = [a for a in plan.rest if a.keyword is None][:2]
        for name, given in zip(("unbiased", "keepdim"), legacy, strict=False):
            plan.bound[name] = given
            plan.keyword.add(name)
            plan.rest.remove(given)
    arg = plan.bound.get("unbiased")
    if arg is None:
        return
    plan.drop.add("unbiased")
    value = ("1" if arg.literal else "0") if arg.is_literal else f"int({arg.text})"
    plan.extra["ddof"] = value
    plan.handled.add("unbiased")
    plan.add("arguments", f"`unbiased={arg.text}` is `ddof={value}` in MindSpore.",
             Severity.WARNING)


def _tensor(plan: Plan) -> str:
    """The tensor an initialiser fills: ``w.data`` fills ``w``."""
    target = plan.bound.get("tensor")
    text = target.text if target is not None else "param"
    while text.endswith(".data") and text.count(".") >= 1:
        text = text[:-len(".data")]
    return text


def initializer(plan: Plan) -> str:
    """``nn.init.normal_(w, std=0.02)`` -> ``w.set_data(initializer(Normal(sigma=0.02),
    w.shape, w.dtype))``: MindSpore initialisers are objects applied to a Parameter. In a
    Cell the names are qualified, and a plain name (a local tensor or a parameter of a
    function) is written in place with :data:`RUNTIME_ASSIGN`."""
    param = _tensor(plan)
    cell = plan.options.cell
    init = plan.api.rsplit(".", 1)[1]
    prefix = INITIALIZERS if cell else ""
    skip = {"tensor", "generator"}
    if init == "Uniform":
        low = plan.value("a") if "a" in plan.bound else "0.0"
        high = plan.value("b") if "b" in plan.bound else "1.0"
        skip |= {"a", "b"}
        if low == f"-{high}" or low == f"-({high})":
            ctor = f"Uniform(scale={high})"
        elif cell:  # U(a, b) off-centre, drawn as torch does
            return f"{RUNTIME_UNIFORM}({param}, a={low}, b={high})"
        else:
            ctor = f"Uniform(scale=({high} - {low}) / 2)"
            return (f"{param}.set_data(initializer({ctor}, {param}.shape, {param}.dtype)"
                    f".init_data() + ({low} + {high}) / 2)")
    else:
        args = [f"{plan.names.get(n, n)}={plan.value(n)}" for n in plan.bound
                if n not in skip and n not in plan.drop]
        args += [f"{k}={v}" for k, v in plan.extra.items()]
        ctor = f"{init}({', '.join(args)})"
    value = f"{prefix}initializer({prefix}{ctor}, {param}.shape, {param}.dtype)"
    if cell and param.isidentifier():
        return f"{RUNTIME_ASSIGN}({param}, {value}.init_data())"
    return f"{param}.set_data({value})"
