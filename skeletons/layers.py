"""Translating one torch call into its MindSpore form.

The general path is table-driven (:mod:`msready.skeletons.apis`): the target API, keyword
renames, dropped keywords. The torch APIs whose translation needs more than renames
(defaults that differ, semantics that invert, arguments that move) are converted by the
engine that writes the ``Fix:`` text of the MS1xx findings
(:mod:`msready.analyzer.conversion`, :data:`ENGINE_APIS`, :func:`engine_method`), in its
Cell form; :data:`HANDLERS` keeps the Cell-only forms (containers, adapters the Cell
defines for values known only at run time, wrappers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from msready.analyzer.apitable import load_table, synonym
from msready.analyzer.conversion import CELL, TorchCall, neutral_arg, plan_call
from msready.analyzer.conversion_plan import RUNTIME_PADDING
from msready.analyzer.facts import Arg, CallKind
from msready.analyzer.syntax import code
from msready.skeletons import apis
from msready.skeletons.values import UNKNOWN, ConfigValue, evaluate

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


def translated_keywords(torch: str, args: ArgList, mapping: apis.Mapping
                        ) -> tuple[ArgList, list[tuple[str, str]]]:
    """``args`` with their keywords as MindSpore's ``mapping.api`` takes them (positional
    ones, keyword None, pass as they are): placement dropped, what MindSpore lacks dropped
    with a TODO each, the others renamed; and those TODOs."""
    # where a tensor lives is MindSpore's context, even where the target takes a device
    # (``mindspore.tensor(..., device='cpu')`` refuses torch's device names)
    args = [(k, v) for k, v in args if k not in PLACEMENT]
    todos = [("MS100", f"{torch}: MindSpore has no `{k}` argument; dropped")
             for k, _ in args if k in mapping.dropped]
    # In-place variants are a torch memory optimisation; MindSpore's are Ascend kernels.
    args = _rename(_without(args, *mapping.dropped, "inplace"), mapping.renames)
    known = apis.ms_keywords(mapping.api) if mapping.api else None
    if known is not None:  # what the table missed, measured on the installed MindSpore
        args = [((synonym(k, known) or k) if k else k, v) for k, v in args]
        todos += [("MS100", f"{torch}: MindSpore has no `{k}` argument; dropped")
                  for k, _ in args if k and k not in known]
        args = [(k, v) for k, v in args if k is None or k in known]
    return args, todos


# A list passed where MindSpore takes a tuple and not a list, known only at run time
# (``F.max_pool2d(x, self.kernel_size)``); the source is in ``adapters``.
SIZES = "torch_sizes"
_NOT_A_LIST = (m.Integer() | m.Float() | m.Tuple() | m.SimpleString() | m.UnaryOperation()
               | m.Name("None") | m.Name("True") | m.Name("False"))


def as_tuple(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value`` where a MindSpore parameter takes an int or a tuple and torch also a list:
    a list written out becomes the same tuple, a value that cannot be a list is kept, any
    other is converted when the Cell runs, a list to the tuple (``torch_sizes``)."""
    if isinstance(value, cst.List):
        return cst.Tuple(list(value.elements))
    if m.matches(value, _NOT_A_LIST):
        return value
    return cst.Call(cst.Name(SIZES), [cst.Arg(value)])


def generic(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """The table-driven translation: target, keyword renames, dropped keywords; positional
    arguments stay positional only while both signatures agree on the position."""
    if mapping.api is None:
        reason = mapping.note or "no MindSpore equivalent in the API table"
        return Rewrite(None, todos=[("MS100", f"{call.torch}: {reason}")])
    args, todos = translated_keywords(call.torch, call.bound(apis.torch_order(call.torch)),
                                      mapping)
    tuples = apis.ms_tuple_params(mapping.api)
    args = [(k, as_tuple(v) if k in tuples else v) for k, v in args]
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


# torch functions that take a tensor's sizes one by one (``torch.zeros(2, 3)``).
FACTORIES = ("torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn")


def packed_sizes(call: cst.Call) -> cst.Call:
    """A factory call whose sizes are unpacked from a sequence (``torch.zeros(1, c,
    *hw, **dd)``) with its sizes in one tuple (``torch.zeros((1, c, *hw), **dd)``): the
    shape argument MindSpore's counterparts take, whatever the sequence holds."""
    sizes = [a for a in call.args if a.keyword is None and a.star != "**"]
    if not any(a.star == "*" for a in sizes):
        return call
    shape = cst.Tuple([cst.StarredElement(a.value) if a.star else cst.Element(a.value)
                       for a in sizes])
    return call.with_changes(args=[cst.Arg(shape), *[a for a in call.args if a not in sizes]])


@handler(*FACTORIES, any_target=True)
def factory(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """``torch.zeros(2, 3)`` takes sizes as separate arguments; MindSpore's ``ops.zeros``
    takes one shape tuple (``ops.randn`` takes both)."""
    sizes = [v for k, v in call.args if k is None]
    if len(sizes) > 1 and not call.star and not apis.ms_varargs(mapping.api or ""):
        shape = cst.Tuple([cst.Element(v) for v in sizes])
        call = CallIn(call.torch, [(None, shape), *[(k, v) for k, v in call.args if k]],
                      call.backend)
    if len(sizes) == 1 and isinstance(sizes[0], (cst.List, cst.Tuple)) \
            and not sizes[0].elements and _get(call.args, "dtype") is None:
        # ``torch.ones([])``, a scalar: MindSpore's CPU kernels take no empty shape without
        # a dtype ("Unsupported data type"); torch's default dtype is float32
        call = CallIn(call.torch, [*call.args, ("dtype", expr("mindspore.float32"))],
                      call.backend, call.star)
    return generic(call, mapping)


# torch.meshgrid for arguments whose form is known only at run time (one list or tuple
# held by a name, ``*tensors``, an ``indexing`` that may be None); the source is in
# ``adapters``.
MESHGRID = "torch_meshgrid"


@handler("torch.meshgrid")
def meshgrid(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """torch.meshgrid takes the tensors one by one or as one list or tuple and indexes
    'ij' unless told (None too); ops.meshgrid takes them one by one, at least two, and
    indexes 'xy' by default. Tensors written out (one by one or in a list written in the
    call) with no indexing or a string for it are passed to ops.meshgrid one by one, with
    'ij' when none is given; anything else (``meshgrid(tensors)`` with a list held by a
    name, ``meshgrid(*tensors)``, an indexing held by a name) goes to ``torch_meshgrid``,
    which reads the form and the default when the Cell runs."""
    if mapping.api is None:
        return generic(call, mapping)
    tensors = [v for k, v in call.args if k is None]
    named = [(k, v) for k, v in call.args if k is not None]
    if len(tensors) == 1 and isinstance(tensors[0], (cst.List, cst.Tuple)) and all(
            isinstance(e, cst.Element) for e in tensors[0].elements):
        tensors = [e.value for e in tensors[0].elements]
    indexing = _get(call.args, "indexing")
    if call.star or len(tensors) < 2 or any(k != "indexing" for k, _ in named) or not (
            indexing is None or m.matches(indexing, m.SimpleString())):
        return Rewrite(MESHGRID, list(call.args))  # with ``*`` the arguments stay as written
    return Rewrite(_target(call, mapping, "mindspore.ops.meshgrid"),
                   [*((None, v) for v in tensors), ("indexing", indexing or expr("'ij'"))])


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
            v = expr(f"float({code(v)})")
        fixed.append((k, v))
    rewrite.args = fixed
    return rewrite


# torch pads each spatial axis by one amount on both sides, ``(ph, pw)``; MindSpore's 2-D
# and 3-D convolutions take an int or every side, ``(top, bottom, left, right)``.
PADDING = RUNTIME_PADDING
# The same for the functional form, whose padding is per axis as in torch: the keywords
# ``pad_mode`` and ``padding`` from a value known only at run time.
CONV_PADDING = "torch_conv_padding"


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


# The torch APIs converted by the one mapping engine (:mod:`msready.analyzer.conversion`),
# the same code that writes the ``Fix:`` of their MS1xx findings: a Cell gets the same
# MindSpore call, in the engine's Cell form (``Options(cell=True)``: adapters for values
# known only at run time, qualified initialisers, TODOs for what cannot be carried over).
ENGINE_APIS = (
    *(f"torch.nn.BatchNorm{d}d" for d in (1, 2, 3)),
    *(f"torch.nn.Conv{d}d" for d in (1, 2, 3)),
    *(f"torch.nn.ConvTranspose{d}d" for d in (1, 2, 3)),
    *(f"torch.nn.{kind}Pool{d}d" for kind in ("Max", "Avg") for d in (1, 2, 3)),
    "torch.nn.Dropout", *(f"torch.nn.Dropout{d}d" for d in (1, 2, 3)),
    "torch.nn.LayerNorm", "torch.nn.GELU", "torch.nn.Linear", "torch.nn.LSTM", "torch.nn.GRU",
    "torch.nn.RNN", "torch.var", "torch.std", "torch.full",
    *(f"torch.nn.functional.avg_pool{d}d" for d in (1, 2, 3)),
)
ENGINE_INITS = tuple(f"torch.nn.init.{name}{end}" for name in (
    "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "uniform") for end in ("_", "")) + tuple(
    f"torch.nn.init.{name}" for name in ("trunc_normal_", "zeros_", "ones_"))
# (the spellings without ``_`` are torch's deprecated aliases of the same functions)


def _engine_arg(key: str | None, value: cst.BaseExpression) -> Arg:
    if key == "**":
        return neutral_arg(None, code(value), "**")
    return neutral_arg(key, code(value))


@handler(*ENGINE_APIS)
@handler(*ENGINE_INITS, any_target=True)
def one_engine(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """The engine's conversion: the arguments go in as code text, the rewrite comes back
    parsed; the table's generic form where the engine has no call to give (no table entry,
    no target, an unpacked ``*args``, a rewrite in words)."""
    entry = load_table().lookup(call.torch)
    if entry is None or call.star or mapping.api is None or (
            not call.args and call.torch in ENGINE_INITS):  # no tensor to initialise
        return generic(call, mapping)
    args = tuple(_engine_arg(k, v) for k, v in call.args)
    plan = plan_call(TorchCall(args), entry, call.backend, options=CELL)
    try:
        node = cst.parse_expression(plan.rewrite)
    except cst.ParserSyntaxError:
        return generic(call, mapping)
    if not isinstance(node, cst.Call) or any(a.star == "*" for a in node.args):
        return generic(call, mapping)
    out: ArgList = [("**" if a.star == "**" else a.keyword.value if a.keyword else None,
                     a.value) for a in node.args]
    return Rewrite(code(node.func), out, [("MS100", f"{call.torch}: {t}") for t in plan.todos])


# Tensor methods converted by the engine, as ``x.var(...)`` with the receiver's code.
ENGINE_METHODS = frozenset({"var", "std"})


def engine_method(method: str, receiver: cst.BaseExpression, args: ArgList,
                  backend: str) -> cst.BaseExpression | None:
    """``x.var(1, unbiased=False)`` as the engine writes it (``x.var(1, ddof=0)``), None
    when the engine has no call to give."""
    entry = load_table().lookup(f"torch.Tensor.{method}")
    if entry is None or method not in ENGINE_METHODS or entry.target(backend).api is None:
        return None
    call = TorchCall(tuple(_engine_arg(k, v) for k, v in args), CallKind.TENSOR_METHOD,
                     code(receiver))
    try:
        return cst.parse_expression(plan_call(call, entry, backend, options=CELL).rewrite)
    except cst.ParserSyntaxError:
        return None


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


@handler("torch.nn.Sequential")
def sequential(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """Sequential(*modules) -> SequentialCell([...]). One argument passes through:
    SequentialCell, like Sequential, takes one layer or an OrderedDict of them (built in
    place or held by a name, ``stem = OrderedDict(); ...; nn.Sequential(stem)``)."""
    func = "nn.SequentialCell"
    if call.star or len(call.args) == 1:
        return Rewrite(func, list(call.args))
    items = [cst.Element(v) for _, v in call.args]
    return Rewrite(func, [(None, cst.List(items))])


@handler("torch.nn.ModuleList")
def module_list(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """ModuleList -> the TorchModuleList adapter, a CellList that, like torch's list,
    takes any iterable and holds None. Every ModuleList gets it: a None comes in through
    values the code cannot follow (a factory that returns None for a setting), and for
    Cells it holds the adapter behaves and names parameters as CellList does."""
    return Rewrite("TorchModuleList", list(call.args))


@handler("torch.nn.CrossEntropyLoss")
def cross_entropy_loss(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """CrossEntropyLoss -> the TorchCrossEntropyLoss adapter: MindSpore's class takes
    class indices as int32 only, and torch's code makes them int64 (``torch.long``)."""
    return Rewrite("TorchCrossEntropyLoss", list(call.args))


@handler("torch.nn.ParameterList")
def parameter_list(call: CallIn, mapping: apis.Mapping) -> Rewrite:
    """ParameterList(values) -> ParameterTuple(values); an empty one is built from an empty
    tuple (ParameterTuple needs its iterable). ``append`` / ``extend`` on it become a new
    ParameterTuple assigned to the name (``translate``)."""
    args = list(call.args) or [(None, cst.Tuple([]))]
    return Rewrite(_target(call, mapping, "mindspore.ParameterTuple"), args)


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
        rewrite = special(call, mapping)
    else:
        rewrite = generic(call, mapping)
    if _is_layer(name) and mapping.api and rewrite.func == apis.short_name(mapping.api):
        rewrite.args = _switches(rewrite.args, mapping.api)
    return rewrite


def _switches(args: ArgList, api: str) -> ArgList:
    """A layer's switches (``bias=1``, ``affine=flag``) as the bools MindSpore checks for:
    torch takes any value by its truth. A constant is written as its truth, an expression
    that is not already a bool is passed through ``bool``."""
    switches = apis.ms_switches(api)
    order = apis.ms_order(api) or ()
    out: ArgList = []
    for i, (k, v) in enumerate(args):
        name = k if k is not None else (order[i] if i < len(order) else None)
        if name in switches and not _is_bool(v):
            value = evaluate(v, {})
            v = cst.Name(str(bool(value))) if value is not UNKNOWN and not isinstance(
                value, ConfigValue) else cst.Call(cst.Name("bool"), [cst.Arg(v)])
        out.append((k, v))
    return out


def _is_bool(node: cst.BaseExpression) -> bool:
    """An expression whose value is a bool: True / False, a comparison, ``not``, ``and`` /
    ``or`` of such, or a ``bool`` / ``isinstance`` call."""
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    if isinstance(node, cst.Comparison) or (isinstance(node, cst.UnaryOperation)
                                            and isinstance(node.operator, cst.Not)):
        return True
    if isinstance(node, cst.BooleanOperation):
        return _is_bool(node.left) and _is_bool(node.right)
    return m.matches(node, m.Call(func=m.Name("bool") | m.Name("isinstance")))


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

