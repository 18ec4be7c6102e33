"""Tensor methods whose MindSpore spelling is not a same-name method (``x.size(1)`` ->
``x.shape[1]``, ``x.to(device)`` -> ``x``, ``x.transpose(a, b)`` -> ``ops.swapaxes``):
a registry of named rewrites, looked up by method name."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst
import libcst.matchers as m

from msready.analyzer.apitable import synonym
from msready.analyzer.syntax import code
from msready.skeletons import apis
from msready.skeletons.adapters import TO
from msready.skeletons.layers import ArgList, expr

# Tensor methods whose MindSpore spelling is not a same-name method.
MethodFix = Callable[[cst.BaseExpression, ArgList], cst.BaseExpression | None]
METHOD_FIXES: dict[str, MethodFix] = {}


def method_fix(*names: str) -> Callable[[MethodFix], MethodFix]:
    """Register a rewrite of ``x.<name>(...)`` for torch tensor methods ``names``."""
    def register(fn: MethodFix) -> MethodFix:
        for name in names:
            METHOD_FIXES[name] = fn
        return fn
    return register


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name), equal=cst.AssignEqual(
        cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _is_dtype(node: cst.BaseExpression) -> bool:
    text = code(node)
    return text.startswith("mindspore.") and text.rsplit(".", 1)[-1][:1].islower()


@method_fix("size")
def size(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.size()`` -> ``x.shape``, ``x.size(i)`` -> ``x.shape[i]`` (MindSpore's ``size``
    is the element count)."""
    shape = cst.Attribute(receiver, cst.Name("shape"))
    if not args:
        return shape
    return cst.Subscript(shape, [cst.SubscriptElement(cst.Index(args[0][1]))])


@method_fix("cuda", "cpu", "pin_memory")
def device(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """Device moves disappear (MindSpore places tensors by context); a dtype becomes a
    cast (see ``_cast``)."""
    dtype = _dtype_argument(args)
    return receiver if dtype is None else _cast(receiver, dtype)


def _dtype_argument(args: ArgList) -> cst.BaseExpression | None:
    """The dtype among a device move's arguments: given as ``dtype=``, a dtype constant or
    a name that reads as one (``x_dtype``)."""
    return next((v for k, v in args if k == "dtype" or _is_dtype(v)
                 or _last_name(v, _DTYPE_NAMES)), None)


def _cast(receiver: cst.BaseExpression, dtype: cst.BaseExpression) -> cst.BaseExpression:
    """``x.astype(dtype)`` for a dtype constant (``torch.float16``) or a tensor's dtype
    (``y.dtype``); ``torch_to(x, dtype)`` for a value that may be None (a parameter
    ``dtype=None`` passed down, ``self.dtype``), torch's way of keeping x's dtype: the
    adapter takes ``x`` once, whatever expression it is, and compiles in GRAPH_MODE.
    ``dtype=None`` written out keeps x."""
    if m.matches(dtype, m.Name("None")):
        return receiver
    tensor_dtype = m.matches(dtype, m.Attribute(attr=m.Name("dtype"))) and not m.matches(
        dtype, m.Attribute(value=m.Name("self")))
    if _is_dtype(dtype) or tensor_dtype:
        return cst.Call(cst.Attribute(receiver, cst.Name("astype")), [cst.Arg(dtype)])
    return cst.Call(cst.Name(TO), [cst.Arg(receiver), cst.Arg(dtype)])


# What ``x.to(value)`` is given, read from the value's (last) name: a device (dropped) or
# a dtype (``astype``, or ``torch_to`` when it may be None); another name is a tensor,
# whose dtype ``x`` takes.
DEVICE_NAMES = re.compile(r"(\w*_)?(device|dev|cuda|gpu|cpu|rank|place|accelerator|"
                           r"map_location)s?(_\w*)?", re.IGNORECASE)
_DTYPE_NAMES = re.compile(r"(\w*_)?(dtype|dt)(_\w*)?", re.IGNORECASE)


def _last_name(node: cst.BaseExpression, names: re.Pattern[str]) -> bool:
    """True when ``node`` is a name or an attribute whose last name ``names`` matches."""
    last = node.value if isinstance(node, cst.Name) else \
        node.attr.value if isinstance(node, cst.Attribute) else None
    return last is not None and names.fullmatch(last) is not None


@method_fix("to")
def to(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.to(device)`` disappears and ``x.to(torch.float16)`` is ``astype``; ``x.to(y)``
    and ``x.to(other=y)`` with a tensor ``y`` take its dtype: ``x.astype(y.dtype)``
    (``torch.arange(h).to(x)`` is a float coordinate, not an integer one)."""
    dtype = _dtype_argument(args)
    if dtype is not None:
        return _cast(receiver, dtype)
    if not args:
        return receiver
    key, value = args[0]
    tensor = key == "other" or (key is None and isinstance(value, (cst.Name, cst.Attribute))
                                and not m.matches(value, m.Name("None"))
                                and not _last_name(value, DEVICE_NAMES)
                                and not m.matches(value, m.Attribute(attr=m.Name("device"))))
    if not tensor:
        return receiver
    return cst.Call(cst.Attribute(receiver, cst.Name("astype")),
                    [cst.Arg(cst.Attribute(value, cst.Name("dtype")))])


@method_fix("expand")
def expand(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.expand(b, -1, n)`` -> ``ops.broadcast_to(x, (b, -1, n))``: one shape, in
    both modes (GRAPH_MODE compiles Tensor.expand with one size argument only)."""
    sizes = [v for k, v in args if k is None]
    if not sizes or any(k not in (None, "size") for k, _ in args):
        return None
    shape = sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], (cst.Integer,
                                                                       cst.UnaryOperation)) \
        else cst.Tuple([cst.Element(v) for v in sizes])
    return cst.Call(expr("ops.broadcast_to"), [cst.Arg(receiver), cst.Arg(shape)])


@method_fix("expand_as")
def expand_as(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.expand_as(y)`` -> ``ops.broadcast_to(x, y.shape)``."""
    if len(args) != 1 or args[0][0] not in (None, "other"):
        return None
    return cst.Call(expr("ops.broadcast_to"), [
        cst.Arg(receiver), cst.Arg(cst.Attribute(args[0][1], cst.Name("shape")))])


@method_fix("type_as")
def type_as(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.type_as(y)`` -> ``x.astype(y.dtype)``."""
    if not args:
        return None
    return cst.Call(cst.Attribute(receiver, cst.Name("astype")),
                    [cst.Arg(cst.Attribute(args[0][1], cst.Name("dtype")))])


@method_fix("type")
def tensor_type(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.type(torch.float32)`` -> ``x.astype(mindspore.float32)`` (MindSpore's
    ``Tensor.type`` does not compile in GRAPH_MODE); ``x.type()`` and a type name
    (``'torch.FloatTensor'``) stay."""
    values = [v for k, v in args if k in (None, "dtype")]
    if len(values) != 1 or isinstance(values[0], (cst.SimpleString, cst.ConcatenatedString,
                                                  cst.FormattedString)):
        return None
    return cst.Call(cst.Attribute(receiver, cst.Name("astype")), [cst.Arg(values[0])])


@method_fix("flip")
def flip(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.flip(-1)`` / ``x.flip(0, 1)`` -> ``x.flip((-1,))`` / ``x.flip((0, 1))``: torch
    also takes the axes as separate numbers, MindSpore's flip a tuple or list only."""
    if not args or any(k is not None for k, _ in args) or (len(args) == 1 and not m.matches(
            args[0][1], m.Integer() | m.UnaryOperation(expression=m.Integer()))):
        return None
    axes = cst.Tuple([cst.Element(v) for _, v in args])
    return cst.Call(cst.Attribute(receiver, cst.Name("flip")), [cst.Arg(axes)])


@method_fix("detach")
def detach(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.detach()`` -> ``ops.stop_gradient(x)``."""
    return expr(f"ops.stop_gradient({code(receiver)})")


@method_fix("is_contiguous")
def is_contiguous(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.is_contiguous(memory_format=torch.channels_last)`` -> ``False``: MindSpore
    tensors have one layout, torch's default one, so a test for another is false and a
    test for the default one is ``x.is_contiguous()``."""
    formats = [code(v) for k, v in args if k in (None, "memory_format")]
    if not formats:
        return None
    if formats[0].rsplit(".", 1)[-1] in ("channels_last", "channels_last_3d"):
        return cst.Name("False")
    return cst.Call(cst.Attribute(receiver, cst.Name("is_contiguous")), [])


@method_fix("transpose")
def transpose(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.transpose(a, b)`` swaps two axes; MindSpore's ``Tensor.transpose`` permutes all
    axes in GRAPH_MODE, so write ``ops.swapaxes``."""
    if len(args) != 2 or any(k for k, _ in args):
        return None
    return cst.Call(expr("ops.swapaxes"), [cst.Arg(receiver), cst.Arg(args[0][1]),
                                           cst.Arg(args[1][1])])


def _extreme(which: str) -> MethodFix:
    """``x.max(y)`` is torch's elementwise maximum when ``y`` is a tensor and a reduction over
    a dimension when it is an int; MindSpore's ``Tensor.max`` takes only the second, and
    ``mint.max`` both, as torch does (the same for ``min``)."""
    def fix(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
        if len(args) != 1 or args[0][0] is not None:
            return None
        return cst.Call(expr(f"mint.{which}"), [cst.Arg(receiver), cst.Arg(args[0][1])])
    return fix


method_fix("max")(_extreme("max"))
method_fix("min")(_extreme("min"))


@method_fix("split")
def split(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.split(n, dim=d)`` -> ``ops.split(x, n, axis=d)``: MindSpore's ``Tensor.split``
    with ``dim=`` runs the SplitTensor kernel, which GRAPH_MODE lacks on CPU. A string's
    ``split`` (``args.dims.split("-")``, a separator, or none) stays as it is."""
    if not args or isinstance(args[0][1], (cst.SimpleString, cst.ConcatenatedString,
                                           cst.FormattedString)) or args[0][0] == "sep":
        return cst.Call(cst.Attribute(receiver, cst.Name("split")),
                        [cst.Arg(v) if k is None else _keyword(k, v) for k, v in args])
    if args[0][0] not in (None, "split_size_or_sections", "split_size"):
        return None
    rest = [cst.Arg(args[0][1])]
    for k, v in args[1:]:
        if k not in (None, "dim"):
            return None
        rest.append(_keyword("axis", v))
    return cst.Call(expr("ops.split"), [cst.Arg(receiver), *rest])


def _new_tensor(name: str) -> MethodFix:
    """``x.new_zeros(b, 1, h, w)`` -> ``x.new_zeros((b, 1, h, w))``: torch takes the sizes
    one by one or as one sequence, MindSpore as one sequence; ``dtype`` stays, device
    placement goes."""
    def fix(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
        sizes = [v for k, v in args if k is None]
        if len(sizes) < 2:
            return None
        return cst.Call(cst.Attribute(receiver, cst.Name(name)), [
            cst.Arg(cst.Tuple([cst.Element(v) for v in sizes])),
            *[_keyword(k, v) for k, v in args if k == "dtype"]])
    return fix


for _name in ("new_zeros", "new_ones", "new_empty"):
    method_fix(_name)(_new_tensor(_name))


@method_fix("new_full")
def new_full(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
    """``x.new_full(size, v)`` -> ``ops.full(size, v, dtype=x.dtype)`` (MindSpore's
    ``Tensor.new_full`` runs on Ascend only)."""
    keywords = dict((k, v) for k, v in args if k is not None)
    positional = [v for k, v in args if k is None]
    size = keywords.get("size", positional.pop(0) if positional else None)
    fill = keywords.get("fill_value", positional[0] if positional else None)
    if size is None or fill is None or len(positional) > 1:
        return None
    dtype = keywords.get("dtype", cst.Attribute(receiver, cst.Name("dtype")))
    return cst.Call(expr("ops.full"), [cst.Arg(size), cst.Arg(fill), _keyword("dtype", dtype)])


# In-place updates (``w.uniform_(a, b)``, ``w.zero_()``, ``x.mul_(s)``): MindSpore's
# in-place kernels are Ascend ones (on CPU some are missing, and ``add_`` / ``mul_`` run
# without changing the tensor), so the new value is computed and written back by a
# function of the generated file (see ``compositions``); as a statement on a local name
# the translator makes it a plain assignment.
_FILLS = {"uniform_": "torch_uniform_", "normal_": "torch_normal_"}
# Each filling function's twin that returns the values instead of writing them: where
# the code is compiled (forward), a fill becomes its value, as other in-place updates do.
FILL_VALUES = {fill: fill.removesuffix("_") for fill in _FILLS.values()}
_COMPUTED = {"zero_": "ops.zeros_like({x})", "fill_": "ops.full_like({x}, {args})",
             "erfinv_": "ops.erfinv({x})", "clamp_": "ops.clamp({x}, {args})",
             "clamp_min_": "ops.clamp({x}, {args})", "masked_fill_": "{x}.masked_fill({args})",
             "add_": "{x} + {args}", "sub_": "{x} - {args}", "mul_": "{x} * {args}",
             "div_": "{x} / {args}", "pow_": "{x} ** {args}", "neg_": "-{x}",
             "exp_": "ops.exp({x})", "sqrt_": "ops.sqrt({x})", "abs_": "ops.abs({x})",
             "sigmoid_": "ops.sigmoid({x})", "tanh_": "ops.tanh({x})", "relu_": "ops.relu({x})",
             "copy_": "({args})",
             # MindSpore's fill_diagonal runs on Ascend and takes float values only
             "fill_diagonal_": "torch_fill_diagonal_({x}, {args})"}
_OPERATORS = ("add_", "sub_", "mul_", "div_", "pow_")  # one operand, written as an operator


def _operand(node: cst.BaseExpression) -> str:
    """The expression's code, in parentheses unless it is a single term."""
    text = code(node)
    simple = (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float)
    return text if isinstance(node, simple) else f"({text})"


def storage(receiver: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor an in-place update writes: ``w.data`` shares the parameter's storage."""
    while isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
        receiver = receiver.value
    return receiver


def written(receiver: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor a chain of in-place updates holds: each returns the tensor it wrote, so
    in ``t.mul_(a).add_(b)`` the addition reads ``t`` (already multiplied, arguments
    being evaluated left to right), never a second ``t.mul_(a)``."""
    writers = ("torch_assign_", *_FILLS.values())
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) \
            and receiver.func.value in writers and receiver.args:
        receiver = receiver.args[0].value
    return receiver


def _fill(method: str) -> MethodFix:
    """``w.uniform_(-1, 1)`` -> ``torch_uniform_(w, -1, 1)``, ``w.zero_()`` ->
    ``torch_assign_(w, ops.zeros_like(w))``, ``x.mul_(s)`` -> ``torch_assign_(x, x * s)``."""
    def fix(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
        receiver = storage(receiver)
        if method == "copy_":  # the source tensor; ``non_blocking`` is about devices
            args = [a for a in args if a[0] is None][:1]
            if not args:
                return None
        if method in _FILLS:
            rest = [cst.Arg(v, keyword=cst.Name(k) if k else None) for k, v in args]
            return cst.Call(cst.Name(_FILLS[method]), [cst.Arg(receiver), *rest])
        if method in _OPERATORS and (len(args) != 1 or args[0][0]):
            return None  # ``add_(y, alpha=2)``: left as written
        text = ", ".join(f"{k}={code(v)}" if k else code(v) for k, v in args)
        if method in _OPERATORS:
            text = _operand(args[0][1])
        value = _COMPUTED[method].format(x=_operand(written(receiver)), args=text)
        return cst.Call(cst.Name("torch_assign_"), [cst.Arg(receiver), cst.Arg(expr(value))])
    return fix


for _method in (*_FILLS, *_COMPUTED):
    METHOD_FIXES[_method] = _fill(_method)


def _composed(function: str) -> MethodFix:
    def fix(receiver: cst.BaseExpression, args: ArgList) -> cst.BaseExpression | None:
        return cst.Call(cst.Name(function), [
            cst.Arg(receiver), *(cst.Arg(v) if k is None else _keyword(k, v) for k, v in args)])
    return fix


# Methods MindSpore's tensors lack or take otherwise, composed in the generated file
# (``compositions``): ``x.unflatten(1, (2, -1))`` -> ``torch_unflatten(x, 1, (2, -1))``;
# ``x.unfold(dim, size, step)`` (sliding windows along one axis) ->
# ``torch_tensor_unfold(x, dim, size, step)``, MindSpore's ``Tensor.unfold`` being im2col,
# which takes a kernel size and reads the same three numbers otherwise.
for _method, _function in (("unflatten", "torch_unflatten"), ("clamp_min", "torch_clamp_min"),
                           ("clamp_max", "torch_clamp_max"), ("unfold", "torch_tensor_unfold")):
    METHOD_FIXES[_method] = _composed(_function)


# torch.nn.Module methods called on ``self`` -> the nn.Cell method (None: drop the call,
# keep ``self``).
CELL_METHODS: dict[str, str | None] = {
    "children": "cells", "named_modules": "cells_and_names",
    "parameters": "get_parameters", "named_parameters": "parameters_and_names",
    "state_dict": "parameters_dict", "register_parameter": "insert_param_to_cell",
    "add_module": "insert_child_to_cell", "register_module": "insert_child_to_cell",
    "cuda": None, "cpu": None, "to": None,
}


# torch.nn.Module methods no other common type has: translated on any receiver
# (``module.named_children()`` in a helper that walks a network).
NAMED_MODULE_METHODS = {"named_children": "name_cells().items", "named_modules": "cells_and_names",
                        "named_parameters": "parameters_and_names"}


def named_module_method(call: cst.Call) -> cst.BaseExpression | None:
    """``m.named_children()`` -> ``m.name_cells().items()``, ``m.modules()`` -> every Cell
    under ``m``, and the like."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "modules" and not call.args:
        return cell_method(func.value, "modules", [])
    if not isinstance(func, cst.Attribute) or func.attr.value not in NAMED_MODULE_METHODS:
        return None
    if func.attr.value == "named_children" and call.args:
        return None
    receiver = cst.Module([]).code_for_node(func.value)
    new = expr(f"{receiver}.{NAMED_MODULE_METHODS[func.attr.value]}")
    assert isinstance(new, cst.Attribute)
    return call.with_changes(func=new)


def tensor_only_method(call: cst.Call) -> cst.BaseExpression | None:
    """``t.detach()`` on a receiver whose type the analysis does not know (``m, _ =
    torch.max(x, 1)``): no other common type has that method, so it is a tensor's,
    ``ops.stop_gradient(t)``; None for any other call."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "detach" and not call.args:
        return detach(func.value, [])
    return None


def compiled_children(call: cst.Call) -> cst.BaseExpression | None:
    """``m.children()`` / ``m.named_children()`` in code GRAPH_MODE compiles: the Cell's
    own table of children, ``m._cells.values()`` / ``.items()`` (GRAPH_MODE cannot iterate
    what ``cells()`` or ``name_cells()`` return; it iterates that table, in the same order)."""
    func = call.func
    if call.args or not m.matches(func, m.Attribute(attr=m.Name("children")
                                                     | m.Name("named_children"))):
        return None
    assert isinstance(func, cst.Attribute)
    which = "values" if func.attr.value == "children" else "items"
    return cst.Call(cst.Attribute(cst.Attribute(func.value, cst.Name("_cells")),
                                  cst.Name(which)), [])


# Module methods that mean the same on any held sub-Cell (``self.body.parameters()``).
MODULE_METHODS = frozenset({"modules", "children", "named_modules", "parameters",
                            "named_parameters", "state_dict", "eval", "train"})


# What every torch.nn.Module has: a network read through these needs no particular class.
MODULE_API = frozenset({*CELL_METHODS, *NAMED_MODULE_METHODS, *MODULE_METHODS, "forward",
                        "training", "apply", "zero_grad", "buffers", "named_buffers",
                        "requires_grad_", "half", "float", "double", "load_state_dict",
                        "register_buffer", "register_forward_hook"})


def cell_method(receiver: cst.BaseExpression, method: str,
                args: list[cst.Arg]) -> cst.BaseExpression | None:
    """``self.modules()`` -> ``self.cells()``, ``self.train(False)`` -> ``self.set_train(False)``,
    ``self.eval()`` -> ``self.set_train(False)``, ``self.to(device)`` -> ``self``."""
    if method == "modules" and not args:  # recursive, the Cell itself first, as in torch
        return expr(f"[cell for _, cell in {cst.Module([]).code_for_node(receiver)}"
                    ".cells_and_names()]")
    if method == "eval" and not args:
        return cst.Call(cst.Attribute(receiver, cst.Name("set_train")), [cst.Arg(expr("False"))])
    if method == "train":
        return cst.Call(cst.Attribute(receiver, cst.Name("set_train")), args)
    if method not in CELL_METHODS:
        return None
    new = CELL_METHODS[method]
    if new is None:
        return receiver
    return cst.Call(cst.Attribute(receiver, cst.Name(new)), args)


# Keywords torch also takes in numpy's spelling, by the name torch's signature gives them.
_NUMPY_SPELLINGS = {"keepdims": "keepdim"}


def rename_keywords(args: Sequence[cst.Arg], mapping: apis.Mapping) -> list[cst.Arg]:
    """Keywords renamed as the table says, else as the MindSpore signature needs
    (``dim=`` -> ``axis=`` where the MindSpore API has ``axis`` but no ``dim``)."""
    known = apis.ms_keywords(mapping.api or "")
    torch_params = apis.torch_order(mapping.torch) or ()
    out = []
    for arg in args:
        key = arg.keyword.value if arg.keyword else None
        if key is not None:
            if key in _NUMPY_SPELLINGS and _NUMPY_SPELLINGS[key] in torch_params:
                key = _NUMPY_SPELLINGS[key]  # ``keepdims=True`` is torch's ``keepdim``
                arg = arg.with_changes(keyword=cst.Name(key))
            new = mapping.renames.get(key) or synonym(key, known)
            if new:
                arg = arg.with_changes(keyword=cst.Name(new))
        out.append(arg)
    return out
