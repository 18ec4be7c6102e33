"""Translating one torch call into its MindSpore form.

The general path is table-driven (:mod:`msready.skeletons.apis`): the target API, keyword
renames, dropped keywords. The torch APIs whose translation needs more than renames
(defaults that differ, semantics that invert, arguments that move) have a named handler
in :data:`HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from msready.skeletons import apis

ArgList = list[tuple[str | None, cst.BaseExpression]]


@dataclass(slots=True)
class Rewrite:
    """A translated call: the MindSpore callee (as written), its arguments and the TODOs."""

    func: str | None
    args: ArgList = field(default_factory=list)
    todos: list[tuple[str, str]] = field(default_factory=list)  # (rule id, reason)


@dataclass(slots=True)
class CallIn:
    """A torch call to translate: its canonical name, arguments and the target backend."""

    torch: str
    args: ArgList
    backend: str
    star: bool = False  # the call unpacks *args / **kwargs

    def bound(self, order: tuple[str, ...] | None) -> ArgList:
        """The arguments with positional ones named after ``order`` where possible."""
        if order is None or self.star:
            return list(self.args)
        out: ArgList = []
        for i, (kw, value) in enumerate(self.args):
            out.append((order[i] if kw is None and i < len(order) else kw, value))
        return out


Handler = Callable[[CallIn, apis.Mapping], Rewrite]
HANDLERS: dict[str, Handler] = {}
# Handlers that hold for every target; the others know the mindspore.nn / ops forms only.
ANY_TARGET: set[str] = set()


def handler(*names: str, any_target: bool = False) -> Callable[[Handler], Handler]:
    """Register a special-case translation for the torch APIs ``names``."""
    def register(fn: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = fn
            if any_target:
                ANY_TARGET.add(name)
        return fn
    return register


def call_args(args: ArgList) -> list[cst.Arg]:
    """libcst arguments, keywords written ``name=value`` without spaces."""
    return [cst.Arg(value=v, star="**") if k == "**" else  # ``**torch_kwargs(...)``
            cst.Arg(value=v, keyword=cst.Name(k) if k else None,
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
                    if k else cst.MaybeSentinel.DEFAULT) for k, v in args]


def expr(code: str) -> cst.BaseExpression:
    """A libcst expression from source text."""
    return cst.parse_expression(code)


def _get(args: ArgList, name: str) -> cst.BaseExpression | None:
    return next((v for k, v in args if k == name), None)


def _without(args: ArgList, *names: str) -> ArgList:
    return [(k, v) for k, v in args if k not in names]


def _rename(args: ArgList, renames: dict[str, str]) -> ArgList:
    return [(renames.get(k, k) if k else k, v) for k, v in args]


def _positional_first(args: ArgList, names: tuple[str, ...]) -> ArgList:
    """Leading named arguments in ``names`` back to positional (the same order in both)."""
    out: ArgList = []
    i = 0
    for k, v in args:
        if i < len(names) and k == names[i]:
            out.append((None, v))
            i += 1
        else:
            out.append((k, v))
    return out


def _is_zero(node: cst.BaseExpression | None) -> bool:
    return node is None or m.matches(node, m.Integer("0") | m.Tuple(
        elements=[m.ZeroOrMore(m.Element(m.Integer("0")))]))


def _target(call: CallIn, mapping: apis.Mapping, fallback: str) -> str:
    return apis.short_name(mapping.api or fallback)


def generic(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """The table-driven translation: target, keyword renames, dropped keywords; positional
    arguments stay positional only while both signatures agree on the position."""
    if mapping.api is None:
        reason = mapping.note or "no MindSpore equivalent in the API table"
        return Rewrite(None, todos=[("MS100", f"{call.torch}: {reason}")])
    args = call.bound(apis.torch_order(call.torch))
    todos = [("MS100", f"{call.torch}: MindSpore has no `{k}` argument; dropped")
             for k, _ in args if k in mapping.dropped and k not in PLACEMENT]
    # In-place variants are a torch memory optimisation; MindSpore's are Ascend kernels.
    args = _rename(_without(args, *mapping.dropped, "inplace"), mapping.renames)
    known = apis.ms_keywords(mapping.api)
    if known is not None:  # what the table missed, measured on the installed MindSpore
        args = [((apis.synonym(k, known) or k) if k else k, v) for k, v in args]
        todos += [("MS100", f"{call.torch}: MindSpore has no `{k}` argument; dropped")
                  for k, _ in args if k and k not in known and k not in PLACEMENT]
        args = [(k, v) for k, v in args if k is None or k in known]
    ms_order = apis.ms_order(mapping.api)
    out: ArgList = []
    positional = True
    written = sum(1 for k, _ in call.args if k is None)  # positional in the source
    for i, (k, v) in enumerate(args):
        same = ms_order is not None and i < min(len(ms_order), written) and (
            i == 0 or k == ms_order[i])
        if k is None or (positional and same):
            out.append((None, v))
        else:
            positional = False
            out.append((k, v))
    return Rewrite(apis.short_name(mapping.api), out, todos)


# Where a tensor lives, not what it holds: MindSpore places tensors by context.
PLACEMENT = frozenset({"device", "pin_memory", "layout", "memory_format", "requires_grad",
                        "non_blocking", "inplace"})


@handler("torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn",
         any_target=True)
def factory(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """``torch.zeros(2, 3)`` takes sizes as separate arguments; MindSpore's ``ops.zeros``
    takes one shape tuple (``ops.randn`` takes both)."""
    sizes = [v for k, v in call.args if k is None]
    if len(sizes) > 1 and not call.star and not apis.ms_varargs(mapping.api or ""):
        shape = cst.Tuple([cst.Element(v) for v in sizes])
        call = CallIn(call.torch, [(None, shape), *[(k, v) for k, v in call.args if k]],
                      call.backend)
    return generic(call, mapping)


@handler("torch.meshgrid")
def meshgrid(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """torch.meshgrid takes the tensors one by one or as one list and indexes 'ij' by
    default; ops.meshgrid takes them one by one and indexes 'xy' by default."""
    if call.star or mapping.api is None:
        return generic(call, mapping)
    tensors = [v for k, v in call.args if k is None]
    named = [(k, v) for k, v in call.args if k is not None]
    if len(tensors) == 1 and isinstance(tensors[0], (cst.List, cst.Tuple)):
        tensors = [e.value for e in tensors[0].elements]
    if not any(k == "indexing" for k, _ in named):
        named.append(("indexing", expr("'ij'")))
    return Rewrite(_target(call, mapping, "mindspore.ops.meshgrid"),
                   [*((None, v) for v in tensors), *named])


def variance_args(args: ArgList) -> ArgList:
    """torch's ``var`` / ``std`` arguments (``dim, unbiased, keepdim`` or ``correction``)
    as MindSpore's ``axis, ddof, keepdims``; torch's default is unbiased (``ddof=1``),
    MindSpore's ``ddof=0``."""
    named = [(k or ("dim", "unbiased", "keepdim")[min(i, 2)], v)
             for i, (k, v) in enumerate(args)]
    out: ArgList = []
    ddof: cst.BaseExpression = expr("1")
    for key, value in named:
        if key == "unbiased":
            ddof = expr("1" if m.matches(value, m.Name("True")) else "0") if m.matches(
                value, m.Name("True") | m.Name("False")) else expr(f"int({_code(value)})")
        elif key == "correction":
            ddof = value
        else:
            out.append(({"dim": "axis", "keepdim": "keepdims"}.get(key, key), value))
    return [*out, ("ddof", ddof)]


@handler("torch.var", "torch.std")
def variance(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """``torch.var(x, dim, unbiased=False)`` -> ``ops.var(x, axis=dim, ddof=0)``."""
    if call.star or mapping.api is None or not call.args:
        return generic(call, mapping)
    return Rewrite(_target(call, mapping, "mindspore.ops.var"),
                   [call.args[0], *variance_args(list(call.args[1:]))])


# torch APIs returning a ``(values, indices)`` named tuple; MindSpore returns a plain
# tuple, so ``.values`` / ``.indices`` become ``[0]`` / ``[1]``.
NAMED_TUPLES = frozenset({"torch.topk", "torch.sort", "torch.kthvalue", "torch.mode",
                          "torch.median", "torch.max", "torch.min", "torch.cummax",
                          "torch.cummin", "torch.aminmax"})
NAMED_TUPLE_FIELDS = {"values": 0, "indices": 1}


@handler("torch.nn.Upsample", "torch.nn.functional.interpolate",
         "torch.nn.functional.upsample", any_target=True)
def upsample(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """MindSpore's ``scale_factor`` must be a float (or a tuple of floats), and for a 4-D
    input it takes none at all: with a scale factor the output size is computed as torch
    does, by ``torch_interpolate`` / ``TorchUpsample`` (``compositions``)."""
    layer = call.torch == "torch.nn.Upsample"
    order = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")
    args = call.bound(order if layer else ("input", *order, "antialias"))
    factor = _get(args, "scale_factor")
    if not call.star and factor is not None and not m.matches(factor, m.Name("None")) \
            and not (mapping.api or "").startswith("mindspore.mint."):
        return Rewrite("TorchUpsample" if layer else "torch_interpolate",
                       args if layer else _positional_first(args, ("input",)))
    rewrite = generic(call, mapping)
    fixed: ArgList = []
    for k, v in rewrite.args:
        if k == "scale_factor" and not m.matches(v, m.Float() | m.Tuple() | m.Name("None")):
            v = expr(f"float({_code(v)})")
        fixed.append((k, v))
    rewrite.args = fixed
    return rewrite


_CONV_ORDER = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
               "groups", "bias", "padding_mode")


# torch pads each spatial axis by one amount on both sides, ``(ph, pw)``; MindSpore's 2-D
# and 3-D convolutions take an int or every side, ``(top, bottom, left, right)``.
PADDING = "torch_padding"
# The same for the functional form, whose padding is per axis as in torch: the keywords
# ``pad_mode`` and ``padding`` from a value known only at run time.
CONV_PADDING = "torch_conv_padding"


def _both_sides(padding: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(padding, cst.Tuple):
        sides = [e.value for e in padding.elements for _ in range(2)]
        return cst.Tuple([cst.Element(v) for v in sides])
    if isinstance(padding, cst.Integer):
        return padding
    return cst.Call(cst.Name(PADDING), [cst.Arg(padding)])  # known only at run time


@handler(*(f"torch.nn.{kind}Pad{d}d" for kind in ("Reflection", "Replication", "Zero",
                                                  "Constant") for d in (1, 2, 3)))
def padding_layer(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Padding layers: MindSpore takes an int or a tuple, torch also a list."""
    rewrite = generic(call, mapping)
    if rewrite.args and rewrite.args[0][0] is None:
        first = rewrite.args[0][1]
        if isinstance(first, cst.List):
            first = cst.Tuple(list(first.elements))
        elif not isinstance(first, (cst.Integer, cst.Tuple)):
            text = cst.Module([]).code_for_node(first)
            first = expr(f"tuple({text}) if isinstance({text}, list) else {text}")
        rewrite.args[0] = (None, first)
    return rewrite


@handler("torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d", "torch.nn.ConvTranspose1d",
         "torch.nn.ConvTranspose2d", "torch.nn.ConvTranspose3d")
def convolution(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Conv: ``padding`` needs ``pad_mode='pad'`` (MindSpore defaults to 'same'), ``bias``
    becomes ``has_bias`` (default False in MindSpore), ``groups`` becomes ``group``."""
    order: tuple[str, ...] = _CONV_ORDER
    if "Transpose" in call.torch:
        order = (*_CONV_ORDER[:5], "output_padding", "groups", "bias", "dilation",
                 "padding_mode")
    name = call.torch.rsplit(".", 1)[1].replace("ConvTranspose", "Conv") + (
        "Transpose" if "Transpose" in call.torch else "")
    func = _target(call, mapping, f"mindspore.nn.{name}")
    args = call.bound(order)
    todos: list[tuple[str, str]] = []
    padding = _get(args, "padding")
    mode = _get(args, "padding_mode")
    args = _without(args, "padding", "padding_mode", "bias", "groups")
    if padding is not None and m.matches(padding, m.SimpleString()):
        args.append(("pad_mode", padding))
    elif _is_zero(padding):
        args.append(("pad_mode", expr("'valid'")))
    else:
        assert padding is not None
        args += [("pad_mode", expr("'pad'")),
                 ("padding", _both_sides(padding) if "1d" not in call.torch else padding)]
    if mode is not None and not m.matches(mode, m.SimpleString("'zeros'") | m.SimpleString(
            '"zeros"')):
        todos.append(("MS100", "padding_mode other than 'zeros': pad the input with ops.pad"))
    groups = _get(call.bound(order), "groups")
    if groups is not None:
        args.append(("group", groups))
    bias = _get(call.bound(order), "bias")
    args.append(("has_bias", bias if bias is not None else expr("True")))
    return Rewrite(func, _positional_first(args, order[:3]), todos)


@handler("torch.nn.functional.conv1d", "torch.nn.functional.conv2d",
         "torch.nn.functional.conv3d", any_target=True)
def functional_convolution(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """``F.conv2d(x, w, b, stride, padding, ...)``: a padding string ('same', 'valid') is
    MindSpore's ``pad_mode``; a size needs ``pad_mode='pad'`` (one amount per axis, as in
    torch: the functional form takes torch's padding, unlike the Conv2d layer). On CPU,
    where the table has no target for conv1d / conv3d (their docs list Ascend and GPU),
    ops.conv1d / ops.conv3d run all the same (measured against torch in the tests)."""
    if (mapping.api or "").startswith("mindspore.mint."):  # torch's own signature
        return generic(call, mapping)
    order = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    args = call.bound(order)
    padding = _get(args, "padding")
    args = _without(args, "padding")
    if padding is not None and m.matches(padding, m.SimpleString()):
        args.append(("pad_mode", padding))
    elif padding is None or m.matches(padding, m.Integer() | m.Tuple(elements=[
            m.ZeroOrMore(m.Element(m.Integer()))])):
        if not _is_zero(padding):
            assert padding is not None
            args += [("pad_mode", expr("'pad'")), ("padding", padding)]
    elif padding is not None:  # a string or a size, known when it runs
        args.append(("**", cst.Call(cst.Name(CONV_PADDING), [cst.Arg(padding)])))
    return Rewrite(_target(call, mapping, "mindspore.ops." + call.torch.rsplit(".", 1)[1]),
                   _positional_first(args, order[:3]))


@handler("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d")
def batch_norm(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """BatchNorm: MindSpore's ``momentum`` weighs the running statistic (1 - torch's)."""
    args = call.bound(("num_features", "eps", "momentum", "affine", "track_running_stats"))
    func = _target(call, mapping, "mindspore.nn." + call.torch.rsplit(".", 1)[1])
    momentum = _get(args, "momentum")
    todos: list[tuple[str, str]] = []
    tracked = _get(args, "track_running_stats")
    args = _without(args, "momentum", "track_running_stats")
    if momentum is not None:
        if m.matches(momentum, m.Name("None")):
            todos.append(("MS100", "momentum=None (cumulative average) has no MindSpore form"))
        else:
            args.append(("momentum", expr(f"1 - {cst.Module([]).code_for_node(momentum)}")))
    if tracked is not None and not m.matches(tracked, m.Name("True")):
        args.append(("use_batch_statistics", expr("True")))
    return Rewrite(func, _positional_first(args, ("num_features",)), todos)


@handler("torch.nn.Linear")
def linear(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Linear -> Dense: ``in_features``/``out_features`` -> ``in_channels``/``out_channels``,
    ``bias`` -> ``has_bias``."""
    args = call.bound(("in_features", "out_features", "bias"))
    args = _rename(args, {"in_features": "in_channels", "out_features": "out_channels",
                          "bias": "has_bias"})
    return Rewrite(_target(call, mapping, "mindspore.nn.Dense"),
                   _positional_first(args, ("in_channels", "out_channels")))


@handler("torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d", "torch.nn.Dropout3d")
def dropout(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Dropout: MindSpore's first positional argument is ``keep_prob``; pass ``p=`` by name."""
    args = _without(call.bound(("p", "inplace")), "inplace")
    if _get(args, "p") is None:
        args.append(("p", expr("0.5")))
    func = _target(call, mapping, "mindspore.nn." + call.torch.rsplit(".", 1)[1])
    return Rewrite(func, args)


@handler("torch.nn.Embedding")
def embedding(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Embedding: ``num_embeddings``/``embedding_dim`` -> ``vocab_size``/``embedding_size``."""
    args = call.bound(("num_embeddings", "embedding_dim", "padding_idx", "max_norm"))
    todos = [("MS301", "sparse=True: MindSpore's Embedding has dense gradients only")
             for k, v in args if k == "sparse" and m.matches(v, m.Name("True"))]
    todos += [("MS100", f"Embedding({k}=...) has no MindSpore argument; dropped")
              for k, _ in args if k in ("max_norm", "norm_type", "scale_grad_by_freq")]
    args = _without(args, "sparse", "max_norm", "norm_type", "scale_grad_by_freq", "_weight",
                    "_freeze")
    args = _rename(args, {"num_embeddings": "vocab_size", "embedding_dim": "embedding_size"})
    return Rewrite(_target(call, mapping, "mindspore.nn.Embedding"),
                   _positional_first(args, ("vocab_size", "embedding_size")), todos)


@handler("torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN")
def recurrent(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """LSTM/GRU/RNN: ``bias`` -> ``has_bias``; ``proj_size`` has no MindSpore form."""
    order = ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
             "bidirectional")
    args = call.bound(order)
    todos = [("MS100", "proj_size has no MindSpore argument")
             for k, _ in args if k == "proj_size"]
    args = _rename(_without(args, "proj_size"), {"bias": "has_bias"})
    func = _target(call, mapping, "mindspore.nn." + call.torch.rsplit(".", 1)[1])
    return Rewrite(func, _positional_first(args, ("input_size", "hidden_size")), todos)


@handler("torch.nn.LayerNorm")
def layer_norm(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """LayerNorm: ``normalized_shape`` is a tuple, ``eps`` -> ``epsilon`` (default 1e-7 in
    MindSpore, so torch's 1e-5 is written out), ``elementwise_affine`` has no form."""
    args = call.bound(("normalized_shape", "eps", "elementwise_affine", "bias"))
    shape = _get(args, "normalized_shape")
    eps = _get(args, "eps")
    todos = [("MS100", "elementwise_affine=False: freeze gamma/beta instead")
             for k, v in args if k == "elementwise_affine" and not m.matches(v, m.Name("True"))]
    out: ArgList = []
    if shape is not None:
        text = cst.Module([]).code_for_node(shape)
        out.append((None, shape if m.matches(shape, m.Tuple() | m.List())
                    else expr(f"tuple({text}) if isinstance({text}, (list, tuple)) "
                              f"else ({text},)")))
    out.append(("epsilon", eps if eps is not None else expr("1e-5")))
    return Rewrite(_target(call, mapping, "mindspore.nn.LayerNorm"), out, todos)


@handler("torch.nn.GELU")
def gelu(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """GELU: MindSpore approximates with tanh by default; torch is exact unless told."""
    value = _get(call.bound(("approximate",)), "approximate")
    approx = "False" if value is None or m.matches(value, m.SimpleString("'none'") |
                                                   m.SimpleString('"none"')) else "True"
    return Rewrite(_target(call, mapping, "mindspore.nn.GELU"),
                   [("approximate", expr(approx))])


# Pooling settings MindSpore accepts away from their default only with pad_mode='pad'.
_POOL_DEFAULTS = (("dilation", "1"), ("return_indices", "False"), ("ceil_mode", "False"),
                  ("count_include_pad", "True"), ("divisor_override", "None"))


def _is_default(node: cst.BaseExpression | None, default: str) -> bool:
    """Absent, or written as the literal ``default``."""
    return node is None or (isinstance(node, (cst.Name, cst.Integer)) and node.value == default)


@handler("torch.nn.MaxPool1d", "torch.nn.MaxPool2d", "torch.nn.MaxPool3d",
         "torch.nn.AvgPool1d", "torch.nn.AvgPool2d", "torch.nn.AvgPool3d")
def pooling(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Pooling: torch's ``stride`` defaults to ``kernel_size`` (MindSpore's to 1), and a
    ``padding`` or any other setting away from its default (``ceil_mode``, ``dilation``,
    ``count_include_pad``…) needs ``pad_mode='pad'``: MindSpore refuses them otherwise."""
    order = ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode") \
        if "Max" in call.torch else ("kernel_size", "stride", "padding", "ceil_mode",
                                     "count_include_pad", "divisor_override")
    args = call.bound(order)  # by name: MindSpore's third parameter is pad_mode
    kernel = _get(args, "kernel_size")
    if _get(args, "stride") is None and kernel is not None:
        args.append(("stride", kernel))
    padding = _get(args, "padding")
    if not _is_zero(padding) or any(
            not _is_default(_get(args, name), default) for name, default in _POOL_DEFAULTS):
        args.append(("pad_mode", expr("'pad'")))
    func = _target(call, mapping, "mindspore.nn." + call.torch.rsplit(".", 1)[1])
    return Rewrite(func, args)


@handler("torch.nn.Sequential")
def sequential(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Sequential(*modules) -> SequentialCell([...]); an OrderedDict passes through."""
    func = "nn.SequentialCell"
    if call.star or (len(call.args) == 1 and not m.matches(call.args[0][1], m.Call() | m.Name())):
        return Rewrite(func, list(call.args))
    if len(call.args) == 1 and m.matches(call.args[0][1], m.Call(func=m.Name("OrderedDict")
                                                               | m.Attribute(
                                                                   attr=m.Name("OrderedDict")))):
        return Rewrite(func, list(call.args))
    items = [cst.Element(v) for _, v in call.args]
    return Rewrite(func, [(None, cst.List(items))])


@handler("torch.nn.ModuleList")
def module_list(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """ModuleList -> CellList."""
    return Rewrite("nn.CellList", list(call.args))


@handler("torch.nn.ModuleDict")
def module_dict(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """ModuleDict -> a Cell holding its children as attributes (nn.CellDict cannot hold
    another container, and its items are not attributes in GRAPH_MODE)."""
    return Rewrite("TorchModuleDict", list(call.args))


@handler("torch.nn.Parameter", "torch.nn.parameter.Parameter")
def parameter(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """nn.Parameter(t, requires_grad) -> Parameter(t, requires_grad=...)."""
    args = call.bound(("data", "requires_grad"))
    return Rewrite("Parameter", _positional_first(args, ("data",)))


def translate_call(call: CallIn) -> Rewrite:
    """The MindSpore form of one torch call: a handler's, else the table's."""
    name = apis.canonical(call.torch)
    call.torch = name
    mapping = apis.lookup(name, call.backend)
    special = HANDLERS.get(name)
    if _is_layer(name):  # ``dtype=dtype``: None asks torch's default; MindSpore's is float32
        call.args = [(k, v) for k, v in call.args
                     if not (k == "dtype" and isinstance(v, cst.Name))]
    # The handlers know the mindspore.nn forms; a torch-like target (mint) takes the
    # table's renames as they are.
    if special is not None and (name in ANY_TARGET or
                                not (mapping.api or "").startswith("mindspore.mint.")):
        # where a layer or tensor lives is MindSpore's context, not an argument
        call.args = [(k, v) for k, v in call.args if k not in PLACEMENT]
        return special(call, mapping)
    return generic(call, mapping)


def _is_layer(name: str) -> bool:
    """``torch.nn.Linear``: a layer class, not a function of torch.nn.functional."""
    return name.startswith("torch.nn.") and name.rsplit(".", 1)[1][:1].isupper()


# torch calls that only wrap another call: ``checkpoint(fn, *args)`` returns ``fn(*args)``
# and recomputes it in the backward pass to save memory. Name -> the wrapper's own keywords.
WRAPPERS: dict[str, frozenset[str]] = {
    "torch.utils.checkpoint.checkpoint": frozenset({
        "use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug"}),
}
WRAPPER_TODO = ("activation checkpointing: the wrapped call is made directly; to save "
                "memory the same way, call .recompute() on the Cell that runs it")


# Calls of a sub-Cell whose forward differs from torch's: torch layer -> argument fix.
CallFix = Callable[[ArgList], tuple[ArgList, list[tuple[str, str]]]]
CALL_FIXES: dict[str, CallFix] = {}


def call_fix(*names: str) -> Callable[[CallFix], CallFix]:
    """Register an argument fix for calling a torch layer held by ``self``."""
    def register(fn: CallFix) -> CallFix:
        for name in names:
            CALL_FIXES[name] = fn
        return fn
    return register


@call_fix("torch.nn.MultiheadAttention")
def attention_call(args: ArgList) -> tuple[ArgList, list[tuple[str, str]]]:
    """MindSpore's MultiheadAttention returns a 1-tuple for ``need_weights=False`` where
    torch returns ``(output, None)``; keep the weights so the unpacking still works."""
    return [(k, v) for k, v in args if k != "need_weights"], []


_INIT = "mindspore.common.initializer."
# torch.nn.init function -> (positional order, MindSpore initializer, torch keyword ->
# initializer keyword, torch defaults written out where MindSpore's differ).
_INITS: dict[str, tuple[tuple[str, ...], str, dict[str, str], dict[str, str]]] = {
    "normal_": (("tensor", "mean", "std"), "Normal", {"mean": "mean", "std": "sigma"},
                {"std": "1.0"}),
    "trunc_normal_": (("tensor", "mean", "std", "a", "b"), "TruncatedNormal",
                      {"mean": "mean", "std": "sigma", "a": "a", "b": "b"}, {"std": "1.0"}),
    "constant_": (("tensor", "val"), "Constant", {"val": "value"}, {}),
    "zeros_": (("tensor",), "Zero", {}, {}),
    "ones_": (("tensor",), "One", {}, {}),
    "xavier_uniform_": (("tensor", "gain"), "XavierUniform", {"gain": "gain"}, {}),
    "xavier_normal_": (("tensor", "gain"), "XavierNormal", {"gain": "gain"}, {}),
    "kaiming_uniform_": (("tensor", "a", "mode", "nonlinearity"), "HeUniform",
                         {"a": "negative_slope", "mode": "mode",
                          "nonlinearity": "nonlinearity"}, {}),
    "kaiming_normal_": (("tensor", "a", "mode", "nonlinearity"), "HeNormal",
                        {"a": "negative_slope", "mode": "mode",
                         "nonlinearity": "nonlinearity"}, {}),
    "orthogonal_": (("tensor", "gain"), "Orthogonal", {"gain": "gain"}, {}),
    "uniform_": (("tensor", "a", "b"), "Uniform", {}, {}),
}


def _uniform_scale(args: ArgList) -> cst.BaseExpression | None:
    """``uniform_(t, -s, s)`` -> ``s``: MindSpore's Uniform is symmetric around 0."""
    low, high = _get(args, "a"), _get(args, "b")
    if low is None or high is None:
        return None
    if m.matches(low, m.UnaryOperation(operator=m.Minus())) and isinstance(
            low, cst.UnaryOperation) and _code(low.expression) == _code(high):
        return high
    return None


@handler(*(f"torch.nn.init.{name}" for name in _INITS), any_target=True)
def init(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """``nn.init.xavier_uniform_(w)`` -> ``w.set_data(initializer(XavierUniform(), w.shape,
    w.dtype))``: MindSpore initialises a Parameter by replacing its data."""
    name = call.torch.rsplit(".", 1)[1]
    order, cls, renames, defaults = _INITS[name]
    args = call.bound(order)
    tensor = _get(args, "tensor")
    if tensor is None or call.star:
        return generic(call, mapping)
    while m.matches(tensor, m.Attribute(attr=m.Name("data"))):  # ``w.data`` fills ``w``
        assert isinstance(tensor, cst.Attribute)
        tensor = tensor.value
    if name == "uniform_":
        scale = _uniform_scale(args)
        if scale is None:  # U(a, b) off-centre: MindSpore's Uniform(scale) is [-scale, scale]
            return Rewrite("torch_uniform_", [(None, tensor), *[
                (k, v) for k, v in args if k in ("a", "b")]])
        init_args: ArgList = [("scale", scale)]
    else:
        init_args = [(renames[k], v) for k, v in args if k in renames]
        given = {k for k, _ in args}
        init_args += [(renames[k], expr(v)) for k, v in defaults.items() if k not in given]
    target = _code(tensor)
    make = cst.Call(expr(_INIT + cls), call_args(init_args))
    value = cst.Call(expr(_INIT + "initializer"), [
        cst.Arg(make), cst.Arg(expr(f"{target}.shape")), cst.Arg(expr(f"{target}.dtype"))])
    if isinstance(tensor, cst.Name):  # a local tensor (or parameter): written in place
        data = cst.Call(cst.Attribute(value, cst.Name("init_data")), [])
        return Rewrite("torch_assign_", [(None, tensor), (None, data)])
    return Rewrite(f"{target}.set_data", [(None, value)])


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
