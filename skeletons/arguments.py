"""Where a constructor argument of a generated Cell comes from.

One question, one function: :func:`resolve` answers "what value does parameter ``X`` of
``Class.__init__`` take when the Cell is built?" from, in order,

1. the repository's instantiation sites (literal values, the enclosing constructor's own
   arguments, module and function constants, ``args = parser.parse_args()`` defaults),
2. a repository configuration class whose field defaults cover every field the
   constructor reads (``config.n_embd``),
3. a synthesized value: small, valid, and consistent with the layers it feeds (one width
   for every channel / hidden size so residual sums match, heads that divide it, a small
   vocabulary, one block per stage), recorded as synthesized so the report says so.

The planner (:mod:`msready.skeletons.shapes`) owns the first two sources today; the
repository-wide value analysis and the configuration-value analysis can replace them
behind :func:`resolve` without the planner changing.
"""

from __future__ import annotations

import builtins
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import libcst as cst
import libcst.matchers as m

from msready.analyzer.syntax import code, find_all, read_with
from msready.skeletons.values import (
    UNKNOWN,
    CallValue,
    ConfigValue,
    DictValue,
    ListValue,
    TensorValue,
    evaluate,
    truth,
)

__all__ = ["NAMES", "UNKNOWN", "WIDTH", "Resolved", "Usage", "by_name", "resolve",
           "synthesize"]

# The one width every synthesized channel / hidden size takes, and the head count that
# divides it; small so that Cells build and run quickly on a CPU.
WIDTH = 16
HEADS = 2
NAMESPACE = ("types", "SimpleNamespace")
_BUILTINS = frozenset(dir(builtins))
# The names made up for the items of a parameter that key a dictionary (``in_features``
# read as ``features[f] for f in in_features``): a pyramid's levels, finest first, whose
# records (a dictionary of them: ``input_shape[f].stride``) have strides 4, 8, 16, 32.
NAMES = ("p2", "p3", "p4", "p5")
# A synthesized dictionary: ``dict(p2=..., p3=...)`` when the Cell is built.
MAPPING = ("builtins", "dict")

# Channels a Module's input or output has: an image's three, when nothing says more.
_IMAGE_CHANNELS = (r"(in_?chans?|in_?channels|input_?channels|n_?channels|nc|img_?channels|"
                   r"image_?channels|channels_in|input_nc|output_nc|out_?chans)")
# (name pattern, value), first match wins; patterns match the whole parameter name or
# its last ``_``-separated words.
_BY_NAME: tuple[tuple[str, object], ...] = (
    (r"(num_|n_)?heads?|n_?head|nhead|num_attention_heads|groups?|num_groups", HEADS),
    (r"(dim_?head|head_?dim|d_?head|head_size|d_k|d_v)", 8),
    (_IMAGE_CHANNELS, 3),
    (r"(num_?classes|n_?classes|nclass|num_labels|n_?class|classes|out_classes)", 10),
    (r"(vocab(_size)?|n_?vocab|num_?tokens|n_?tokens|num_?embeddings|vocab_len)", 32),
    (r"(depth|n_?layers?|num_?layers|num_?blocks|n_?blocks|layers|blocks|num_?stages|"
     r"repeats?|num_?res_?blocks|levels?)", 1),
    (r"(drop(out)?(_?(rate|prob|path|p|ratio))?|p|attn_?drop|proj_?drop|drop_path_rate|"
     r"dropout|drop_rate)", 0.0),
    (r"(eps|epsilon|layer_norm_eps|norm_eps)", 1e-5),
    (r"momentum", 0.1),
    # the batch every Cell is fed has two samples (:mod:`msready.skeletons.inputs`)
    (r"(batch_?size|bs|n_?batch|batch)", 2),
    # sound: a rate in Hz, and short-time transform sizes that fit the signal input
    # guess (:data:`msready.skeletons.shapes.SIGNAL_LENGTH` samples)
    (r"(sample_?rate|sampling_?rate|sr|orig_freq|new_freq)", 16000),
    (r"(n_?fft|fft_?size|win_?length|filter_?length)", 64),
    (r"(hop_?length|hop_?size)", 16),
    (r"(n_?mels|num_?mels|n_?mel_?channels|n_?mfcc|n_?lfcc)", 8),
    (r"(kernel(_size)?|ksize|k|kernel|filter_size)", 3),
    (r"(stride|dilation|scale|upscale|factor|mult|expansion)", 1),
    (r"(padding|pad)", 1),
    (r"(img_?size|image_?size|resolution|input_?size|size|height|width|img_?res)", 32),
    (r"(patch_?size|patch)", 4),
    (r"(seq_?len(gth)?|block_?size|max_?len(gth)?|context(_length)?|n_?ctx|max_?seq_?len|"
     r"max_?position(_embeddings)?|n_?positions|num_?patches|length|window_?size)", 16),
    # an integer: a ratio often multiplies a width into a layer's size (``oup = inp *
    # expand_ratio``), which must be one, and an integer serves wherever a float does
    (r"ratio", 2),
    # a Cell runs on the CPU: ``args.cuda`` (set from torch.cuda.is_available()) is False
    (r"(cuda|use_cuda|gpu|use_gpu|on_gpu)", False),
    (r"(bias|affine|learnable|use_\w+|with_\w+|is_\w+|has_\w+|enable_\w+)", True),
    (r"(temperature|temp|gamma|alpha|beta|lr|weight|std|sigma)", 1.0),
    (r"(dims?|channels|chans|features|hidden(_size|_dim)?|embed(ding)?(_dim|_size)?|"
     r"width|d_model|n_embd|emb|hid|latent(_dim)?|z_?dim|nz|ngf|ndf|ch|planes|inplanes|"
     r"out|in|filters|units|num_?features|n_?hidden|hidden_?units|d_?ff|ff_?dim|"
     r"mlp_?dim|inner_?dim|size|sizes)", WIDTH),
)
# Attributes and methods of a tensor; a parameter read only through these, one of them
# a tensor's own (``group_matrix.shape[0]``, ``mask.unsqueeze(0)``), is a tensor the
# caller builds: a small one of ones stands in (``cfg.size`` alone says no such thing).
_TENSOR_READS = frozenset({"shape", "dtype", "device", "ndim", "numel", "unsqueeze",
                           "squeeze", "permute", "detach", "clone", "float", "long", "bool",
                           "size", "dim", "T", "t", "sum", "mean", "view", "reshape", "to",
                           "transpose", "cpu", "cuda", "numpy", "tolist", "nonzero", "abs",
                           "max", "min", "any", "all", "type", "contiguous"})
_TENSOR_OWN = frozenset({"shape", "dtype", "device", "ndim", "numel", "unsqueeze",
                         "squeeze", "permute", "detach", "clone", "contiguous"})
_TENSOR_SIDE = 4  # each axis of a made-up tensor argument

# Parameters that hold a network or a callable: nothing small can stand in for them.
_OBJECT_NAMES = re.compile(
    r"(backbone|model|net|network|module|encoder|decoder|head|block|layer|fn|func|"
    r"function|callback|loss|criterion|optimizer|tokenizer|transform|act_layer|norm_layer|"
    r"activation|act|norm|teacher|student|base|wrapped|inner|body|trunk)", re.IGNORECASE)
# torch's containers built from a list of layers.
_LAYER_CONTAINERS = frozenset({"ModuleList", "Sequential"})
# The types an asserted ``isinstance`` names when it requires a sequence.
_SEQUENCE_TYPES = frozenset({"list", "tuple", "List", "Tuple", "Sequence", "MutableSequence"})
# Sequences of one size per spatial axis: a pair (height, width) when synthesized.
_PAIR_NAMES = re.compile(r"(resolution|size|shape|grid|window)s?$", re.IGNORECASE)

# Norm and activation factories (``norm_layer``, ``act_layer``, ``activation``): a layer
# that keeps its input stands in, from a file written next to the Cells.
# A wrapped function or block (``Residual(fn)``, ``PreNorm(dim, fn)``) as well: it keeps
# the shape of what it is given.
_LAYER_FACTORY_NAMES = re.compile(
    r"(act|activation|nonlinearity|non_linearity|norm)(_?(layer|fn|func|class|cls|type|"
    r"module))?|fn|func|function|sublayer|wrapped|inner|body|module|layer|block",
    re.IGNORECASE)
SYNTHESIZED_MODULE = "msready_synthesized"
KEEP_SHAPE = ConfigValue(SYNTHESIZED_MODULE, "keep_shape", (), is_class=True)
# The same as a layer, for a parameter that holds one (``self.module = module``).
KEEP_SHAPE_LAYER = ConfigValue(SYNTHESIZED_MODULE, "KeepShape", ())
SYNTHESIZED_SOURCE = '''"""Values msready made up for constructor arguments nothing in the scanned
repository gives. A Cell built with one says so in its status line (``synthesized:``)."""

from mindspore import Tensor, nn


class KeepShape(nn.Cell):
    """Stands in for a norm or activation layer: returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def construct(self, x, *args):
        return x


def keep_shape(*args, **kwargs):
    """A norm / activation factory (``norm_layer(dim)``, ``act_layer(inplace=True)``) or
    function (``act(x)``): a layer that keeps its input, or the input itself."""
    if args and isinstance(args[0], Tensor):
        return args[0]
    return KeepShape()
'''
# Parameters whose items, when they key a dictionary, are names (``in_features``,
# ``out_names``); a list of positions (``out_indices``) keys a list, and keeps numbers.
_NAME_LISTS = re.compile(r"(\w+_)?(features?|names?|keys?)", re.IGNORECASE)
_INPUT_NAMES = re.compile(r"_*in(put)?_", re.IGNORECASE)
_MADE_UP_NAME = re.compile(r"p\d+")
_MAPPING_TYPES = frozenset({"Dict", "dict", "Mapping", "MutableMapping", "OrderedDict"})
_STRIDE = re.compile(r"(\w+_)?strides?", re.IGNORECASE)
# A count of something no pattern above knows (``num_convs``, ``NUM_FC``): one of it.
_COUNT = re.compile(r"_*(num|n)_[a-z]\w*", re.IGNORECASE)
_COMPILED = tuple((re.compile(rf"(?:{pattern})", re.IGNORECASE), value)
                  for pattern, value in _BY_NAME)


@dataclass(frozen=True, slots=True)
class Usage:
    """How a constructor parameter is used in the constructor's body."""

    fields: tuple[tuple[str, ...], ...] = ()  # attribute chains read (``cfg.model.dim``)
    indexed: bool = False  # ``p[0]``, ``for x in p``, ``len(p)``, ``zip(p, ...)``
    called: bool = False  # ``p(...)``: a class or a factory
    annotation: str | None = None  # ``int``, ``float``, ``bool``, ``str``, ``list``...
    keys: tuple[str, ...] = ()  # ``p["key"]`` reads
    stored: bool = False  # ``p.attr = ...``: an object the Cell's caller builds
    length: int = 0  # the length ``p[5]`` and ``p[-6]`` need (0: no constant index)
    unpacked: int = 0  # ``H, W = p``: exactly this many items
    tested: bool = False  # ``p is None``, ``if p:``, ``p or default``: None is expected
    # attribute chains read from its items: ``p[0].channels``, ``[s.stride for s in p]``
    item_fields: tuple[tuple[str, ...], ...] = ()
    type_tested: bool = False  # ``isinstance(p, float)``: more than one kind is expected
    named: bool = False  # its items key a dictionary: ``features[f] for f in p``
    a_name: bool = False  # it keys a dictionary itself: ``features[p]``
    mapping: bool = False  # ``p.items()``, ``p[f]`` with ``f`` one of some names
    # the strings it is compared with (``if kind == "s":``, ``kind in ("a", "b")``): one of
    # the values the code is written for
    choices: tuple[str, ...] = ()
    # fields used as sequences (``len(p.weights)``, ``for s in p.sizes``, ``p.dims[2]``: with
    # the length the indexes need) and as numbers (``p.dim > 4``, ``p.dim * 2``,
    # ``range(p.depth)``), for the fields no name tells
    sequence_fields: tuple[tuple[tuple[str, ...], int], ...] = ()
    number_fields: tuple[tuple[str, ...], ...] = ()
    # assigned again (``kernel_sizes = to_ntuple(4)(kernel_sizes)``): what is indexed or
    # read later may be that value, not the argument
    rebound: bool = False
    # handed whole to a torch container of layers (``nn.ModuleList(p)``,
    # ``nn.Sequential(*p)``): a list of layers
    layers: bool = False
    # asked whether it holds something (``type(m) in p``, ``k not in self.p``): a collection
    contains: bool = False


@dataclass(slots=True)
class Resolved:
    """Constructor arguments of one class: the values and the names that were synthesized."""

    kwargs: dict[str, object] = field(default_factory=dict)
    synthesized: dict[str, object] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def by_name(name: str) -> object:
    """The synthesized value for a parameter or field called ``name`` (UNKNOWN if no guess)."""
    words = name.strip("_").split("_")
    for tail in ("_".join(words[i:]) for i in range(len(words))):
        for pattern, value in _COMPILED:
            if pattern.fullmatch(tail):
                return value
    if _COUNT.fullmatch(name):  # ``NUM_STACKED_CONVS``, ``n_fc``: how many of something
        return 1
    return UNKNOWN


def _namespace(tree: dict[str, object]) -> ConfigValue:
    """A ``types.SimpleNamespace`` holding synthesized fields (nested for chains)."""
    items = tuple(tree.items())
    return ConfigValue(NAMESPACE[0], NAMESPACE[1], items, items)


def _chains_to_tree(chains: Sequence[tuple[str, ...]],
                    sequences: dict[tuple[str, ...], int] | None = None,
                    numbers: frozenset[tuple[str, ...]] = frozenset()) -> dict[str, object]:
    """The namespace tree of the ``chains`` read: a field the name gives no guess for is a
    sequence of sizes when the code measures, walks or indexes it (``sequences``: with the
    length its indexes need), a size when it computes with it (``numbers``), else None."""
    sequences = sequences or {}
    tree: dict[str, object] = {}
    nested: dict[str, list[tuple[str, ...]]] = {}
    for chain in chains:
        if len(chain) == 1:
            nested.setdefault(chain[0], [])
        else:
            nested.setdefault(chain[0], []).append(chain[1:])
    for head, rest in nested.items():
        if rest:
            below = {k[1:]: n for k, n in sequences.items() if k[:1] == (head,)}
            tree[head] = _namespace(_chains_to_tree(
                rest, below, frozenset(k[1:] for k in numbers if k[:1] == (head,))))
            continue
        value = by_name(head)
        if (head,) in sequences:
            item = value if is_size(value) else WIDTH
            tree[head] = value if isinstance(value, tuple) else (item,) * max(
                4, sequences[(head,)])
        elif value is UNKNOWN:
            tree[head] = WIDTH if (head,) in numbers else None
        else:
            tree[head] = value
    return tree


def is_size(value: object) -> bool:
    """A number (not a flag)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fields_tree(usage: Usage) -> dict[str, object]:
    return _chains_to_tree(usage.fields, dict(usage.sequence_fields),
                           frozenset(usage.number_fields))


def names(count: int) -> tuple[str, ...]:
    """``count`` made-up names of feature maps: :data:`NAMES`, continued (``p6``...)."""
    return tuple(f"p{level + 2}" for level in range(count))


def mapping_of(fields: Sequence[tuple[str, ...]]) -> ConfigValue:
    """A dictionary from the made-up :data:`NAMES` to records with the ``fields`` read
    from its values (``input_shape[f].channels``): a width for a size, a stride that
    doubles from 4 along the names; the width itself when no field is read."""
    items: list[tuple[str, object]] = []
    for level, name in enumerate(NAMES):
        if not fields:
            items.append((name, WIDTH))
            continue
        tree = _chains_to_tree(fields)
        tree = {k: 2 ** (level + 2) if _STRIDE.fullmatch(k) else v for k, v in tree.items()}
        items.append((name, _namespace(tree)))
    return ConfigValue(MAPPING[0], MAPPING[1], (), tuple(items))


def made_up_names(value: object) -> bool:
    """A value :func:`synthesize` makes up as names: one (``"p5"``) or several."""
    several = value if isinstance(value, tuple) and value else (value,)
    return all(isinstance(v, str) and _MADE_UP_NAME.fullmatch(v) for v in several)


def names_parameter(name: str) -> bool:
    """A parameter named for the names of a network's outputs (``out_features``,
    ``out_feature``, ``names``), not for those of its inputs (``in_features``)."""
    return _NAME_LISTS.fullmatch(name) is not None and _COUNT.fullmatch(name) is None \
        and _INPUT_NAMES.match(name) is None


def holds_network(name: str) -> bool:
    """A parameter named for a network or a callable (``model``, ``backbone``, ``fn``)."""
    return _OBJECT_NAMES.fullmatch(name) is not None


def image_channels(name: str) -> bool:
    """True for a parameter name that says an image's channel count (``in_chans``)."""
    return re.fullmatch(_IMAGE_CHANNELS, name, re.IGNORECASE) is not None


def synthesize(name: str, usage: Usage) -> object:
    """A small valid value for a parameter nothing in the repository gives a value."""
    if _LAYER_FACTORY_NAMES.fullmatch(name) and not (usage.fields or usage.keys
                                                     or usage.stored):
        return KEEP_SHAPE
    if usage.called or usage.stored or _OBJECT_NAMES.fullmatch(name):
        return UNKNOWN
    if usage.layers and not (usage.indexed or usage.fields):
        # ``nn.ModuleList(layers)``: no layer msready could make up is the repository's
        return ListValue(())
    if usage.contains and not (usage.indexed or usage.fields or usage.keys or usage.mapping
                               or usage.item_fields or usage.named or usage.length):
        # only asked whether it holds something (``type(m) in substitutions``): an empty
        # dictionary, in which nothing is, makes up no entry the code would then use
        return ConfigValue(MAPPING[0], MAPPING[1], (), ())
    if usage.fields and {c[0] for c in usage.fields} <= _TENSOR_READS and any(
            c[0] in _TENSOR_OWN for c in usage.fields):
        rank = max(2, dict(usage.sequence_fields).get(("shape",), 0))
        return TensorValue((_TENSOR_SIDE,) * rank)
    if usage.fields:
        return _namespace(_fields_tree(usage))
    if usage.keys:
        return UNKNOWN
    if usage.choices and not usage.indexed:  # the first case the code handles
        return usage.choices[0]
    if usage.mapping or (usage.annotation in _MAPPING_TYPES and usage.item_fields):
        return mapping_of(usage.item_fields)
    if usage.named:  # ``features[f] for f in in_features``: names, not sizes
        return names(usage.unpacked or max(len(NAMES), usage.length))
    if usage.a_name:  # ``features[in_feature]``: one name, the coarsest level's
        return NAMES[-1]
    if usage.item_fields:  # a list of shape records: ``[s.channels for s in input_shape]``
        record = _namespace(_chains_to_tree(usage.item_fields))
        return (record,) * (usage.unpacked or max(4, usage.length))
    guess = by_name(name)
    if usage.annotation in ("str",):
        return UNKNOWN
    if usage.annotation in ("bool",) and not usage.indexed:
        return guess if isinstance(guess, bool) else False
    if usage.annotation in ("float",) and not usage.indexed:
        return float(guess) if isinstance(guess, (int, float)) else 1.0
    # a kind tested with isinstance is one of several the code handles: a number is the
    # simplest (``output_dim`` a list for several tasks, else one Linear's width)
    if (usage.indexed and not usage.type_tested) or usage.annotation in (
            "list", "tuple", "Sequence", "List", "Tuple"):
        item = guess if isinstance(guess, (int, float)) and not isinstance(guess, bool) \
            else WIDTH
        if usage.unpacked:  # ``H, W = p``
            return (item,) * usage.unpacked
        pair = _PAIR_NAMES.search(name) is not None  # ``img_size``: (height, width)
        items = (item,) * max(2 if pair else 4, usage.length)
        # ``out_sizes: List[int]``, joined to another list (``[in_dim] + out_sizes``)
        return ListValue(items) if usage.annotation in ("list", "List") else items
    if usage.annotation == "int" and not isinstance(guess, int):
        return WIDTH
    if guess is UNKNOWN and usage.annotation is None:
        return WIDTH  # a bare name used as a number most often is a size
    return guess


def _chain(node: cst.Attribute, root: str) -> tuple[str, ...] | None:
    parts: list[str] = []
    cur: cst.BaseExpression = node
    while isinstance(cur, cst.Attribute):
        parts.append(cur.attr.value)
        cur = cur.value
    if not (isinstance(cur, cst.Name) and cur.value == root):
        return None
    return tuple(reversed(parts))


class _UsageVisitor(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: list[tuple[str, ...]] = []
        self.indexed = False
        self.called = False
        self.keys: list[str] = []
        self.stored = False
        self.length = 0
        self.unpacked = 0
        self.tested = False
        self.item_names: set[str] = set()  # loop variables over the parameter
        self.item_fields: list[tuple[str, ...]] = []
        self.aliases: set[str] = set()  # ``self.<alias> = <the parameter>``
        self.type_tested = False
        self.choices: list[str] = []
        self.sequence_fields: dict[tuple[str, ...], int] = {}
        self.number_fields: list[tuple[str, ...]] = []
        # the assertions among the function's own statements, under no condition: what
        # they require of the parameter is always required
        self.requirements: set[cst.Assert] = set()
        self.layers = False
        self.contains = False

    def _is_self(self, node: cst.BaseExpression) -> bool:
        return m.matches(node, m.Name(self.name))

    def _field(self, node: cst.BaseExpression) -> tuple[str, ...] | None:
        """The field chain ``node`` reads from the parameter (``p.a.b``), if it is one."""
        chain = _chain(node, self.name) if isinstance(node, cst.Attribute) else None
        return chain if chain and chain[-1] not in _METHODS else None

    def _sequence(self, node: cst.BaseExpression, length: int = 0) -> None:
        chain = self._field(node)
        if chain is not None:
            self.sequence_fields[chain] = max(length, self.sequence_fields.get(chain, 0))

    def _number(self, node: cst.BaseExpression) -> None:
        chain = self._field(node)
        if chain is not None and chain not in self.number_fields:
            self.number_fields.append(chain)

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        if self._is_self(node.left) or any(self._is_self(c.comparator)
                                           for c in node.comparisons):
            self.tested = True
        self.contains |= any(isinstance(c.operator, (cst.In, cst.NotIn))
                             and self._is_sequence(c.comparator) for c in node.comparisons)
        sides = [node.left, *(c.comparator for c in node.comparisons)]
        if any(isinstance(side, (cst.Integer, cst.Float)) for side in sides) and all(
                isinstance(c.operator, _ORDERS) for c in node.comparisons):
            for side in sides:
                self._number(side)
        self.choices += [c for c in compared_strings(node, self._is_self)
                         if c not in self.choices]
        return True

    def visit_If(self, node: cst.If) -> bool:
        self.tested |= self._is_self(node.test)
        return True

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self.tested |= self._is_self(node.test)
        return True

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        self.tested |= self._is_self(node.left) or self._is_self(node.right)
        return True

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> bool:
        self.tested |= isinstance(node.operator, cst.Not) and self._is_self(node.expression)
        return True

    def visit_Assign(self, node: cst.Assign) -> bool:
        if m.matches(node.value, m.Name(self.name)) and len(node.targets) == 1 \
                and isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            target = node.targets[0].target
            assert isinstance(target, (cst.Tuple, cst.List))
            if not any(isinstance(e, cst.StarredElement) for e in target.elements):
                self.unpacked = len(target.elements)
                self.indexed = True
        return True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        if m.matches(node.target, m.Attribute(value=m.Name(self.name))) or find_all(
                node.target, m.Attribute(value=m.Name(self.name))):
            self.stored = True
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        item = _item_chain(node, self.name, self.item_names)
        if item:
            if item not in self.item_fields:
                self.item_fields.append(item)
            return False
        chain = _chain(node, self.name)
        if chain is None:
            return True
        if chain[-1] in _METHODS:
            chain = chain[:-1]
        if chain and chain not in self.fields and not any(
                f[:len(chain)] == chain for f in self.fields):
            self.fields = [f for f in self.fields if chain[:len(f)] != f]
            self.fields.append(chain)
        return False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
        if not any(isinstance(side, (cst.SimpleString, cst.ConcatenatedString,
                                     cst.FormattedString, cst.List, cst.Tuple))
                   for side in (node.left, node.right)):
            self._number(node.left)
            self._number(node.right)
        return True

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        first = node.slice[0].slice if node.slice else None
        position = evaluate(first.value, {}) if isinstance(first, cst.Index) else None
        # the length a constant index needs (``p[5]``: 6, ``p[-6]``: 6)
        needed = (position + 1 if position >= 0 else -position) if isinstance(
            position, int) and not isinstance(position, bool) else 0
        if needed and len(node.slice) == 1:
            self._sequence(node.value, needed)
        if m.matches(node.value, m.Name(self.name)):
            if isinstance(first, cst.Index) and isinstance(first.value, cst.SimpleString):
                self.keys.append(str(first.value.evaluated_value))
            else:
                self.indexed = True
                self.length = max(self.length, needed)
        return True

    def _is_sequence(self, node: cst.BaseExpression) -> bool:
        """The parameter, or the attribute it was stored in (``self.strides = strides``)."""
        return self._is_self(node) or (
            isinstance(node, cst.Attribute) and m.matches(node.value, m.Name("self"))
            and node.attr.value in self.aliases)

    def visit_For(self, node: cst.For) -> bool:
        if self._is_sequence(node.iter):
            self.indexed = True
        self._sequence(node.iter)
        return True

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        if self._is_sequence(node.iter):
            self.indexed = True
        self._sequence(node.iter)
        return True

    def visit_Assert(self, node: cst.Assert) -> bool:
        if node not in self.requirements:
            return True  # an assertion under a condition requires nothing always
        # ``assert opt is not None``: a value is required, None is not expected
        test = node.test
        if m.matches(test, m.Name(self.name) | m.Comparison(
                left=m.Name(self.name), comparisons=[m.ComparisonTarget(m.IsNot(),
                                                                        m.Name("None"))])):
            return False
        # ``assert isinstance(p, (list, tuple))``: a requirement, not a choice between kinds
        if m.matches(test, m.Call(func=m.Name("isinstance"),
                                  args=[m.Arg(m.Name(self.name)), m.Arg()])):
            assert isinstance(test, cst.Call)
            kinds = test.args[1].value
            named = [_last_name(e.value) for e in kinds.elements] if isinstance(
                kinds, cst.Tuple) else [_last_name(kinds)]
            if named and all(n in _SEQUENCE_TYPES for n in named):
                self.indexed = True
                return False
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        if m.matches(node.func, m.Name(self.name)):
            self.called = True
        callee = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
            node.func.value if isinstance(node.func, cst.Name) else None
        if callee in _LAYER_CONTAINERS and any(self._is_self(a.value) for a in node.args):
            self.layers = True
        if m.matches(node, m.Call(func=m.Name("isinstance"), args=[m.Arg(m.Name(self.name)),
                                                                   m.ZeroOrMore()])):
            self.type_tested = True  # more than one kind is expected
        if m.matches(node.func, m.Name("len") | m.Name("zip") | m.Name("enumerate")
                     | m.Name("list") | m.Name("tuple") | m.Name("sum")) and any(
                self._is_sequence(a.value) for a in node.args):
            self.indexed = True
        if m.matches(node.func, m.Name("len") | m.Name("zip") | m.Name("enumerate")
                     | m.Name("sum")):
            for arg in node.args:
                self._sequence(arg.value)
        if m.matches(node.func, m.Name("range")):
            for arg in node.args:
                self._number(arg.value)
        return True


def _last_name(node: cst.BaseExpression) -> str | None:
    """``Sequence`` of ``collections.abc.Sequence`` or of ``Sequence``."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


def compared_strings(node: cst.Comparison,
                     is_it: Callable[[cst.BaseExpression], bool]) -> list[str]:
    """The strings a comparison compares something with: ``p == "s"``, ``"s" != p``,
    ``p in ("a", "b")``."""
    found: list[str] = []
    left = node.left
    for target in node.comparisons:
        right = target.comparator
        if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            other = right if is_it(left) else left if is_it(right) else None
            values = [other] if other is not None else []
        elif isinstance(target.operator, (cst.In, cst.NotIn)) and is_it(left) and isinstance(
                right, (cst.Tuple, cst.List, cst.Set)):
            values = [e.value for e in right.elements]
        else:
            values = []
        found += [str(v.evaluated_value) for v in values
                  if isinstance(v, cst.SimpleString) and isinstance(v.evaluated_value, str)]
        left = right
    return found


def _item_chain(node: cst.Attribute, name: str, items: set[str]) -> tuple[str, ...]:
    """``p[0].channels`` or ``s.channels`` with ``s`` an item of ``p``: ``("channels",)``."""
    parts: list[str] = []
    cur: cst.BaseExpression = node
    while isinstance(cur, cst.Attribute):
        parts.append(cur.attr.value)
        cur = cur.value
    if isinstance(cur, cst.Subscript) and isinstance(cur.value, cst.Name) \
            and cur.value.value in items:
        cur = cur.value  # ``x[1].channels`` with ``x`` a (name, record) pair of ``p``
    if (isinstance(cur, cst.Subscript) and m.matches(cur.value, m.Name(name))) or (
            isinstance(cur, cst.Name) and cur.value in items):
        return tuple(reversed(parts))
    return ()


def _is_ref(node: cst.BaseExpression, name: str | None, aliases: set[str]) -> bool:
    """``node`` is the parameter ``name`` or an attribute it is stored in (``self.x``)."""
    if isinstance(node, cst.Name):
        return node.value == name
    return isinstance(node, cst.Attribute) and m.matches(node.value, m.Name("self")) \
        and node.attr.value in aliases


def _loops(body: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(what a loop walks, the loop's name for an item) for every ``for`` loop and
    comprehension: ``enumerate(p)``, ``zip(p, q)``, ``reversed(p)``, ``p[::-1]`` walk
    ``p`` (and ``q``)."""
    out: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    for loop in find_all(body, m.For() | m.CompFor()):
        assert isinstance(loop, (cst.For, cst.CompFor))
        out += _walks(loop.iter, loop.target)
    return out


def _walks(walked: cst.BaseExpression, target: cst.BaseExpression
           ) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    args = [a.value for a in walked.args if a.keyword is None and not a.star] \
        if isinstance(walked, cst.Call) else []
    func = walked.func.value if isinstance(walked, cst.Call) and isinstance(
        walked.func, cst.Name) else None
    parts = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else []
    if func == "enumerate" and args and len(parts) == 2:
        return _walks(args[0], parts[1])
    if func == "zip" and args and len(parts) == len(args):
        return [pair for arg, part in zip(args, parts, strict=True)
                for pair in _walks(arg, part)]
    if func in ("reversed", "sorted", "list", "tuple") and args:
        return _walks(args[0], target)
    if isinstance(walked, cst.Subscript) and walked.slice and isinstance(
            walked.slice[0].slice, cst.Slice):  # ``p[::-1]``
        return _walks(walked.value, target)
    return [(walked, target)]


def _dictionaries(body: cst.CSTNode) -> set[str]:
    """The names (and ``self.`` attributes) a function uses as dictionaries: walked with
    ``.items()``, ``.keys()`` or ``.values()``, or assigned a dictionary."""
    out = {code(call.func.value) for call in find_all(body, m.Call(func=m.Attribute(
        attr=m.Name("items") | m.Name("keys") | m.Name("values")))) if isinstance(
        call, cst.Call) and isinstance(call.func, cst.Attribute)}
    made = m.Dict() | m.DictComp() | m.Call(func=m.Name("dict") | m.Name("OrderedDict")
                                            | m.Attribute(attr=m.Name("ModuleDict")))
    for assign in find_all(body, m.Assign(targets=[m.AssignTarget()], value=made)):
        assert isinstance(assign, cst.Assign)
        out.add(code(assign.targets[0].target))
    return out


def _index(node: cst.Subscript) -> cst.BaseExpression | None:
    """The one index of ``x[i]`` (None for a slice or several)."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return node.slice[0].slice.value


def _item_names(body: cst.CSTNode, ref: Callable[[cst.BaseExpression], bool]) -> set[str]:
    """The names a function gives the items of a sequence: loop names over it (``for f
    in p``, ``zip(p, convs)``) and names assigned one item (``f = p[-1]``)."""
    items = {t.value for walked, t in _loops(body) if ref(walked) and isinstance(t, cst.Name)}
    for assign in find_all(body, m.Assign(targets=[m.AssignTarget(m.Name())],
                                          value=m.Subscript())):
        assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Subscript)
        if ref(assign.value.value):  # ``feature = self.in_features[-idx - 1]``
            target = assign.targets[0].target
            assert isinstance(target, cst.Name)
            items.add(target.value)
    return items


def keys_outputs(body: cst.CSTNode, network: str | None, network_aliases: set[str],
                 name: str | None, aliases: set[str]) -> bool:
    """Whether a function reads what a network parameter returns (``net(x)``, a method's
    ``net.output_shape()``) by a names parameter or by its items: ``features =
    self.bottom_up(x)`` then ``features[f] for f in self.in_features``, or
    ``net.output_shape()[in_feature]``. ``name`` None: only its ``self.`` attributes."""
    ref = partial(_is_ref, name=name, aliases=aliases)

    def output(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and (
            _is_ref(node.func, network, network_aliases) or (
                isinstance(node.func, cst.Attribute)
                and _is_ref(node.func.value, network, network_aliases)))

    outputs = {a.targets[0].target.value for a in find_all(body, m.Assign(
        targets=[m.AssignTarget(m.Name())])) if isinstance(a, cst.Assign)
        and isinstance(a.targets[0].target, cst.Name) and output(a.value)}
    items = _item_names(body, ref)
    for sub in find_all(body, m.Subscript()):
        assert isinstance(sub, cst.Subscript)
        key = _index(sub)
        if key is None or not (output(sub.value) or (
                isinstance(sub.value, cst.Name) and sub.value.value in outputs)):
            continue
        if ref(key) or (isinstance(key, cst.Name) and key.value in items) or (
                isinstance(key, cst.Subscript) and ref(key.value)):
            return True
    return False


# What a names parameter may be handed to and stay names: the builtins that copy, walk
# or measure a sequence.
_SEQUENCE_CALLS = frozenset({"list", "tuple", "set", "sorted", "reversed", "len", "zip",
                             "enumerate", "dict", "isinstance", "str", "iter"})
_SEQUENCE_METHODS = frozenset({"append", "extend", "insert", "add", "format", "join"})


def takes_any_names(body: cst.CSTNode, name: str | None, aliases: set[str]) -> bool:
    """Whether a parameter a network is given its output names by (``out_features``) can
    be any names: nothing checks them against names of its own (``assert f in
    children``, ``if name in out_features``), looks them up (``table.get(f)``), or
    hands them to something that is no builtin of sequences (``nn.Linear(d,
    out_features)`` takes a size)."""
    ref = partial(_is_ref, name=name, aliases=aliases)

    items = _item_names(body, ref)

    def mine(node: cst.BaseExpression) -> bool:
        return ref(node) or (isinstance(node, cst.Name) and node.value in items)

    for test in find_all(body, m.Comparison()):
        assert isinstance(test, cst.Comparison)
        if any(isinstance(c.operator, (cst.In, cst.NotIn)) and (
                mine(test.left) or mine(c.comparator)) for c in test.comparisons):
            return False
    for call in find_all(body, m.Call()):
        assert isinstance(call, cst.Call)
        builtin = (isinstance(call.func, cst.Name) and call.func.value in _SEQUENCE_CALLS) \
            or (isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _SEQUENCE_METHODS)
        if not builtin and any(mine(a.value) for a in call.args):
            return False
    for op in find_all(body, m.BinaryOperation()):
        assert isinstance(op, cst.BinaryOperation)
        if mine(op.left) or mine(op.right):
            return False
    return True


def _walked_by_items(body: cst.CSTNode, name: str | None,
                     aliases: set[str]) -> tuple[bool, bool]:
    """Whether the items of a parameter key a dictionary (``features[f] for f in p``,
    ``features[p[-1]]``, ``if k in p`` over a dictionary's keys), and whether the
    parameter keys one itself (``features[p]``). A list of positions keys a list: only a
    parameter named for names (``in_features``) or a dictionary being keyed counts."""
    ref = partial(_is_ref, name=name, aliases=aliases)

    items = _item_names(body, ref)
    dicts = _dictionaries(body)
    named = any(_NAME_LISTS.fullmatch(n) and not _COUNT.fullmatch(n)  # not ``num_features``
                for n in [*([name] if name else []), *aliases])
    by_items = by_itself = False
    for sub in find_all(body, m.Subscript()):
        assert isinstance(sub, cst.Subscript)
        key = _index(sub)
        if key is None or ref(sub.value) or not (named or code(sub.value) in dicts):
            continue
        if (isinstance(key, cst.Name) and key.value in items) or (
                isinstance(key, cst.Subscript) and ref(key.value)):
            by_items = True
        elif ref(key):
            by_itself = True
    keys = {code(t.elements[0].value) if isinstance(t, cst.Tuple) and t.elements
            else code(t) for walked, t in _loops(body) if m.matches(walked, m.Call(
                func=m.Attribute(attr=m.Name("items") | m.Name("keys"))))}
    for test in find_all(body, m.Comparison()):
        assert isinstance(test, cst.Comparison)
        if code(test.left) in keys and any(
                isinstance(c.operator, (cst.In, cst.NotIn)) and ref(c.comparator)
                for c in test.comparisons):
            by_items = True  # ``{k: v for k, v in shapes.items() if k in p}``
    return by_items, by_itself


def walked_as_mapping(body: cst.CSTNode, name: str | None,
                       aliases: set[str]) -> tuple[bool, set[str]]:
    """Whether a parameter is used as a dictionary (``p.items()``, ``p[f]`` with ``f``
    one of some names: ``for f in self.in_features``), and the loop names of its values
    (``for k, v in p.items()``, ``for v in p.values()``)."""
    ref = partial(_is_ref, name=name, aliases=aliases)

    mapping = any(ref(call.func.value) for call in find_all(body, m.Call(
        func=m.Attribute(attr=m.Name("items") | m.Name("keys") | m.Name("values"))))
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute))
    names_of = {t.value for walked, t in _loops(body) if isinstance(t, cst.Name) and (
        isinstance(walked, (cst.Name, cst.Attribute)) and _NAME_LISTS.fullmatch(
            walked.value if isinstance(walked, cst.Name) else walked.attr.value))}
    for sub in find_all(body, m.Subscript()):
        assert isinstance(sub, cst.Subscript)
        key = _index(sub)
        if ref(sub.value) and isinstance(key, cst.Name) and key.value in names_of:
            mapping = True
    # ``shapes = sorted(p.items(), key=...)``: a list of the (name, record) pairs
    pairs = {code(a.targets[0].target) for a in find_all(body, m.Assign(
        targets=[m.AssignTarget(m.Name())])) if isinstance(a, cst.Assign) and any(
            isinstance(w, cst.Call) and isinstance(w.func, cst.Attribute)
            and w.func.attr.value == "items" and ref(w.func.value)
            for w, _ in _walks(a.value, cst.Name("_")))}
    values: set[str] = set()
    for walked, target in _loops(body):
        pair = isinstance(target, cst.Tuple) and len(target.elements) == 2 \
            and isinstance(target.elements[1].value, cst.Name)
        method = walked.func.attr.value if isinstance(walked, cst.Call) and isinstance(
            walked.func, cst.Attribute) and ref(walked.func.value) else None
        if method == "values" and isinstance(target, cst.Name):
            values.add(target.value)
        elif pair and (method == "items" or (mapping and ref(walked)) or (
                isinstance(walked, cst.Name) and walked.value in pairs)):
            assert isinstance(target, cst.Tuple)  # ``for k, v in p.items()``
            value = target.elements[1].value
            assert isinstance(value, cst.Name)
            values.add(value.value)
    return mapping, values


def usage(name: str, function: cst.FunctionDef) -> Usage:
    """How ``name`` (a parameter of ``function``) is used in the function body."""
    visitor = _UsageVisitor(name)
    visitor.aliases |= stored_as(name, function)
    visitor.requirements = {small for stmt in (
        function.body.body if isinstance(function.body, cst.IndentedBlock) else ())
        if isinstance(stmt, cst.SimpleStatementLine)
        for small in stmt.body if isinstance(small, cst.Assert)}
    for loop in find_all(function.body, m.For(iter=m.Name(name), target=m.Name())
                          | m.CompFor(iter=m.Name(name), target=m.Name())):
        assert isinstance(loop, (cst.For, cst.CompFor)) and isinstance(loop.target, cst.Name)
        visitor.item_names.add(loop.target.value)
    named, a_name = _walked_by_items(function.body, name, visitor.aliases)
    mapping, values = walked_as_mapping(function.body, name, visitor.aliases)
    visitor.item_names |= values
    read_with(function.body, visitor)
    annotation = None
    for param in [*function.params.params, *function.params.kwonly_params,
                  *function.params.posonly_params]:
        if param.name.value == name and param.annotation is not None:
            annotation = _annotated_type(param.annotation.annotation)
    if annotation is None:  # ``assert isinstance(vit, ViT)`` types it as an annotation does
        annotation = _asserted_class(name, visitor.requirements)
    rebound = bool(find_all(function.body, m.AssignTarget(m.Name(name))))
    return Usage(tuple(visitor.fields), visitor.indexed, visitor.called, annotation,
                 tuple(visitor.keys), visitor.stored, visitor.length, visitor.unpacked,
                 visitor.tested, tuple(visitor.item_fields), visitor.type_tested,
                 named and not mapping, a_name, mapping, tuple(visitor.choices),
                 tuple(visitor.sequence_fields.items()), tuple(visitor.number_fields),
                 rebound, visitor.layers, visitor.contains)


def _asserted_class(name: str, asserts: Iterable[cst.Assert]) -> str | None:
    """The one class an assertion the constructor always runs requires ``name`` to be an
    instance of (``assert isinstance(vit, ViT)``), by its last name; None for none, for
    several, and for the sequence types (those say only that it is indexed)."""
    for statement in asserts:
        test = statement.test
        if m.matches(test, m.Call(func=m.Name("isinstance"),
                                  args=[m.Arg(m.Name(name)), m.Arg(m.Name() | m.Attribute())])):
            assert isinstance(test, cst.Call)
            kind = _last_name(test.args[1].value)
            if kind is not None and kind not in _SEQUENCE_TYPES:
                return kind
    return None


def _annotated_type(ann: cst.BaseExpression) -> str | None:
    """The type name an annotation gives: ``int``, ``List`` for ``List[int]``, the first
    type of a union (``Union[int, List[int]]``, ``Optional[float]``, ``int | None``)."""
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        left = _annotated_type(ann.left)
        return left if left != "None" else _annotated_type(ann.right)
    if isinstance(ann, cst.Subscript):
        head = ann.value.attr.value if isinstance(ann.value, cst.Attribute) else (
            ann.value.value if isinstance(ann.value, cst.Name) else None)
        if head not in ("Union", "Optional"):
            return head
        members = [e.slice.value for e in ann.slice if isinstance(e.slice, cst.Index)]
        names = [_annotated_type(member) for member in members]
        return next((n for n in names if n not in (None, "None")), None)
    if isinstance(ann, cst.Attribute):
        return ann.attr.value
    return ann.value if isinstance(ann, cst.Name) else None


_ORDERS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
_METHODS = ("get", "items", "keys", "values", "copy", "pop", "update", "format", "split",
            "lower", "upper", "startswith", "endswith")


def stored_as(name: str, function: cst.FunctionDef) -> set[str]:
    """The attributes a constructor stores its parameter in (``self.opt = opt``)."""
    out: set[str] = set()
    for assign in find_all(function.body, m.Assign(
            targets=[m.AssignTarget(m.Attribute(value=m.Name("self")))], value=m.Name(name))):
        assert isinstance(assign, cst.Assign)
        target = assign.targets[0].target
        assert isinstance(target, cst.Attribute)
        out.add(target.attr.value)
    return out


def copied_as(name: str, function: cst.FunctionDef) -> set[str]:
    """The attributes a constructor stores its parameter or a copy of it in
    (``self.names = names``, ``self.names = list(names or ["last"])``)."""
    given = m.Name(name) | m.BooleanOperation(left=m.Name(name), operator=m.Or())
    copied = given | m.Call(func=m.Name("list") | m.Name("tuple"), args=[m.Arg(given)])
    out: set[str] = set()
    for assign in find_all(function.body, m.Assign(
            targets=[m.AssignTarget(m.Attribute(value=m.Name("self")))], value=copied)):
        assert isinstance(assign, cst.Assign)
        target = assign.targets[0].target
        assert isinstance(target, cst.Attribute)
        out.add(target.attr.value)
    return out


def attribute_usage(aliases: set[str], function: cst.FunctionDef) -> Usage:
    """How another method uses a parameter the constructor stored (``self.opt = opt``):
    the fields it reads (``self.opt.batch_size``) and whether it calls it."""
    chains: list[tuple[str, ...]] = []
    for node in find_all(function.body, m.Attribute()):
        assert isinstance(node, cst.Attribute)
        chain = _chain(node, "self")
        if chain is None or len(chain) < 2 or chain[0] not in aliases:
            continue
        chain = chain[1:-1] if chain[-1] in _METHODS else chain[1:]
        if chain and chain not in chains:
            chains.append(chain)
    fields = tuple(c for c in chains if not any(o != c and o[:len(c)] == c for o in chains))
    stored = m.Attribute(value=m.Name("self"), attr=m.OneOf(*(m.Name(a) for a in aliases)))
    called = bool(find_all(function.body, m.Call(func=stored)))
    tested = bool(find_all(function.body, m.Comparison(left=stored) | m.If(test=stored)
                           | m.IfExp(test=stored) | m.BooleanOperation(left=stored)
                           | m.UnaryOperation(operator=m.Not(), expression=stored)
                           | m.ComparisonTarget(comparator=stored)))
    named, a_name = _walked_by_items(function.body, None, aliases)
    mapping, _ = walked_as_mapping(function.body, None, aliases)
    choices = [c for test in find_all(function.body, m.Comparison()) if isinstance(
        test, cst.Comparison) for c in compared_strings(test, lambda e: m.matches(e, stored))]
    contains = bool(find_all(function.body, m.ComparisonTarget(
        operator=m.In() | m.NotIn(), comparator=stored)))
    return Usage(fields, called=called, tested=tested, named=named and not mapping,
                 a_name=a_name, mapping=mapping, choices=tuple(dict.fromkeys(choices)),
                 contains=contains)


# ----- argparse defaults -------------------------------------------------------------------

def _option_dest(call: cst.Call) -> str | None:
    dest = next((a.value for a in call.args if a.keyword and a.keyword.value == "dest"), None)
    if isinstance(dest, cst.SimpleString):
        return str(dest.evaluated_value)
    names = [str(a.value.evaluated_value) for a in call.args
             if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    long = next((n for n in names if n.startswith("--")), None)
    chosen = long or (names[0] if names else None)
    if chosen is None:
        return None
    return chosen.lstrip("-").replace("-", "_") or None


def argparse_defaults(module: cst.Module, env: dict[str, object] | None = None
                      ) -> dict[str, object]:
    """``parser.add_argument("--lr", type=float, default=1e-3)`` -> ``{"lr": 0.001}``, for
    every ``add_argument`` call in a file (a flag's default is False; a required option
    without a default gets a synthesized value from its name)."""
    out: dict[str, object] = {}
    for call in find_all(module, m.Call(func=m.Attribute(attr=m.Name("add_argument")))):
        assert isinstance(call, cst.Call)
        dest = _option_dest(call)
        if dest is None or not dest.isidentifier():
            continue
        kw = {a.keyword.value: a.value for a in call.args if a.keyword}
        action = kw.get("action")
        if "default" in kw:
            value = evaluate(kw["default"], env or {})
        elif isinstance(action, cst.SimpleString) and "store_true" in action.value:
            value = False
        elif isinstance(action, cst.SimpleString) and "store_false" in action.value:
            value = True
        else:
            value = None
        if value is UNKNOWN:
            value = by_name(dest)
        if value is UNKNOWN:
            value = None
        out[dest] = value
    return out


def parse_args_names(body: Sequence[cst.BaseStatement]) -> list[str]:
    """Names a block binds to ``<parser>.parse_args()`` (``opt = parser.parse_args()``)."""
    names: list[str] = []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if m.matches(small, m.Assign(targets=[m.AssignTarget(m.Name())], value=m.Call(
                    func=m.Attribute(attr=m.Name("parse_args") | m.Name("parse_known_args"))))):
                assert isinstance(small, cst.Assign)
                target = small.targets[0].target
                assert isinstance(target, cst.Name)
                names.append(target.value)
    return names


def namespace_of(defaults: dict[str, object]) -> ConfigValue:
    """The argparse namespace a script would see with its defaults."""
    return _namespace(dict(defaults))


def merge(first: Usage, other: Usage) -> Usage:
    """One parameter's usage in a constructor and in the constructors it is passed to."""
    fields = list(first.fields)
    for chain in other.fields:
        if chain not in fields:
            fields.append(chain)
    return Usage(tuple(fields), first.indexed or other.indexed, first.called or other.called,
                 first.annotation or other.annotation, (*first.keys, *other.keys),
                 first.stored or other.stored, max(first.length, other.length),
                 first.unpacked or other.unpacked, first.tested or other.tested,
                 (*first.item_fields, *(f for f in other.item_fields
                                        if f not in first.item_fields)),
                 first.type_tested or other.type_tested, first.named or other.named,
                 first.a_name or other.a_name, first.mapping or other.mapping,
                 tuple(dict.fromkeys((*first.choices, *other.choices))),
                 tuple({**dict(other.sequence_fields), **dict(first.sequence_fields)}.items()),
                 tuple(dict.fromkeys((*first.number_fields, *other.number_fields))),
                 first.rebound or other.rebound, first.layers or other.layers,
                 first.contains or other.contains)


def resolve(params: Sequence[tuple[str, object, bool]], sites: Sequence[dict[str, object]],
            from_config: dict[str, ConfigValue | None],
            usage_of: Callable[[str], Usage] | None) -> Resolved:
    """Constructor arguments for ``params`` (name, default, required): the instantiation
    site that leaves the fewest required parameters open, then configuration classes,
    then synthesized values (recorded in :attr:`Resolved.synthesized`). A site's None
    for a parameter the constructor calls or reads untested is no value: it is a parent's
    own None default passed down, which the parent replaces before it gets here."""
    best: Resolved | None = None
    for site in [*sites, {}]:
        got = Resolved()
        for name, default, required in params:
            if name in site and not (site[name] is None and _needs_value(name, usage_of)) \
                    and not (isinstance(site[name], CallValue) and _synthesizable(name, usage_of)):
                got.kwargs[name] = site[name]
            elif required or (default is None and _needs_value(name, usage_of)) or (
                    _indexed_scalar(default, name, usage_of)):
                config = from_config.get(name)
                if config is not None:
                    got.kwargs[name] = config
                else:
                    got.missing.append(name)
        if best is None or len(got.missing) < len(best.missing):
            best = got
    assert best is not None
    for name, value in list(best.kwargs.items()):
        added = _missing_fields(value, usage_of(name).fields) if usage_of is not None else {}
        if added:  # ``args`` from argparse, with fields a helper adds after parse_args
            assert isinstance(value, ConfigValue)
            best.kwargs[name] = _namespace({**dict(value.fields), **added})
            best.synthesized[name] = _namespace(added)
    still: list[str] = []
    width = _width({name: best.kwargs.get(name, default) for name, default, _ in params})
    for name in best.missing:
        value = synthesize(name, usage_of(name)) if usage_of is not None else UNKNOWN
        if value is UNKNOWN:
            still.append(name)
        else:
            value = _widened(value, width)
            best.kwargs[name] = value
            best.synthesized[name] = value
    best.missing = still
    return best


def _synthesizable(name: str, usage_of: Callable[[str], Usage] | None) -> bool:
    """True when ``name`` is a number msready can make up (``in_chs``): then a value only
    the child can compute (what a repository function returns) is not taken for it, as
    the sizes that give the Cell its input must be known here. A structure
    (``block_args``) is better computed than made up."""
    if usage_of is None:
        return False
    return is_size(synthesize(name, usage_of(name)))


# What a constructor requires of its arguments: ``assert (depth - 4) % 6 == 0`` and
# ``if num_splits < 2: raise ValueError(...)``. A synthesized number that breaks one is
# replaced by the nearest small number that keeps all of them.


@dataclass(frozen=True)
class Requirement:
    """A test the constructor's arguments must pass (``holds``: what it must evaluate to),
    over ``names``; with a ``guard``, only when the guard is true (an ``assert`` in the
    ``else`` of ``if custom_layers: ...``): the guard's names are read, not changed."""

    test: cst.BaseExpression
    holds: bool
    names: frozenset[str]
    guard: cst.BaseExpression | None = None


def names_of(node: cst.CSTNode | None) -> frozenset[str]:
    """The names an expression reads (none for no expression)."""
    return frozenset(n.value for n in find_all(node, m.Name()) if isinstance(n, cst.Name)) \
        if node is not None else frozenset()


def requirements(function: cst.FunctionDef) -> list[Requirement]:
    """The tests of a constructor's own ``assert`` statements and ``if ...: raise``
    blocks, over the names they read: those the constructor always runs, and those in
    the branches of an ``if`` it always runs, guarded by the tests that choose the branch
    (``assert exists(depth)`` under ``else:`` holds when no earlier test was true)."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    return _block_requirements(body, None)


def _block_requirements(body: Sequence[cst.BaseStatement], guard: cst.BaseExpression | None
                        ) -> list[Requirement]:
    found: list[Requirement] = []
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            found += [Requirement(s.test, True, names_of(s.test), guard) for s in statement.body
                      if isinstance(s, cst.Assert)]
        elif isinstance(statement, cst.If) and statement.orelse is None and isinstance(
                statement.body, cst.IndentedBlock) and len(statement.body.body) == 1 and \
                m.matches(statement.body.body[0], m.SimpleStatementLine(body=[m.Raise()])):
            found.append(Requirement(statement.test, False, names_of(statement.test), guard))
        elif isinstance(statement, cst.If) and guard is None:  # one level of branches
            found += _branch_requirements(statement)
    return found


def _branch_requirements(statement: cst.If) -> list[Requirement]:
    """The requirements in each branch of an ``if`` / ``elif`` / ``else`` chain, each
    guarded by its own test and the negation of the tests before it."""
    found: list[Requirement] = []
    earlier: list[cst.BaseExpression] = []
    branch: cst.If | cst.Else | None = statement
    while branch is not None:
        tests: list[cst.BaseExpression] = [cst.UnaryOperation(cst.Not(), t) for t in earlier]
        if isinstance(branch, cst.If):
            tests.append(branch.test)
        guard: cst.BaseExpression | None = None
        for test in tests:
            guard = test if guard is None else cst.BooleanOperation(guard, cst.And(), test)
        if guard is not None and isinstance(branch.body, cst.IndentedBlock):
            found += _block_requirements(branch.body.body, guard)
        if isinstance(branch, cst.If):
            earlier.append(branch.test)
            branch = branch.orelse
        else:
            branch = None
    return found


def handed_down(requirement: Requirement, bound: dict[str, cst.BaseExpression]
                ) -> Requirement | None:
    """A requirement of a class's constructor over what the caller gives it: each of
    its names replaced by the argument ``bound`` to it (``len(max_tokens) == depth`` of
    ``Transformer(dim, depth, tokens)`` is ``len(tokens) == depth`` to the caller); None
    when it reads a name neither bound nor a builtin (a local of that constructor)."""
    if not (requirement.names | names_of(requirement.guard)) <= bound.keys() | _BUILTINS:
        return None

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
            return bound.get(original.value, updated)

    test = requirement.test.visit(Rename())
    assert isinstance(test, cst.BaseExpression)
    guard = requirement.guard.visit(Rename()) if requirement.guard is not None else None
    assert guard is None or isinstance(guard, cst.BaseExpression)
    return Requirement(test, requirement.holds, names_of(test), guard)


def _met(requirement: Requirement, env: dict[str, object]) -> bool:
    """Whether ``requirement`` does not fail over ``env``: its test is not known to give
    the wrong answer, or its guard is not known to be true."""
    if requirement.guard is not None and truth(requirement.guard, env) is not True:
        return True
    return truth(requirement.test, env) is not (not requirement.holds)


def always_run_calls(function: cst.FunctionDef) -> list[cst.Call]:
    """The calls in the statements a function always runs (not under a branch)."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    return [c for statement in body if isinstance(statement, cst.SimpleStatementLine)
            for c in find_all(statement, m.Call()) if isinstance(c, cst.Call)]


def _nearby(value: int) -> list[object]:
    """Numbers to try in place of a synthesized ``value``: upward from it, then below,
    then fractions (a ratio the code wants strictly between 0 and 1)."""
    return [*range(value + 1, 257), *range(value - 1, 0, -1), 0.5, 0.25, 0.75]


def _other_lengths(value: tuple[object, ...]) -> list[object]:
    """Sequences to try in place of a synthesized sequence of one repeated item (``dims``
    made up as four widths, where the code wants one per stage of three): the same item,
    the nearest lengths first."""
    lengths = sorted((n for n in range(1, 9) if n != len(value)),
                     key=lambda n: (abs(n - len(value)), n))
    return [type(value)((value[0],) * n) for n in lengths]


def _candidates(current: object) -> list[object]:
    if isinstance(current, int) and not isinstance(current, bool):
        return _nearby(current)
    if isinstance(current, tuple) and current and len(set(current)) == 1:
        return _other_lengths(current)
    return []


def meet(found: Sequence[Requirement], env: dict[str, object],
         adjustable: dict[str, object],
         propose: Callable[[str], object] = by_name) -> dict[str, object]:
    """New values for ``adjustable`` names (synthesized numbers and sequences, None
    defaults) so that no requirement over known values fails: each failing requirement
    changes one of its names to the first candidate every requirement on that name
    accepts. A None default
    the constructor insists on (``assert opt is not None``) takes what ``propose`` makes
    for the name."""
    env = dict(env)
    changed: dict[str, object] = {}
    for requirement in found:
        if _met(requirement, env):
            continue
        for name in sorted(requirement.names & adjustable.keys()):
            current = env.get(name)
            guess = propose(name) if current is None else UNKNOWN
            candidates = [guess] if guess is not UNKNOWN else _candidates(current)
            on_name = [r for r in found if name in r.names]
            choice = next((c for c in candidates if all(
                _met(r, {**env, name: c}) for r in on_name)), None)
            if choice is not None:
                env[name] = changed[name] = choice
                break
    return changed


# Parameters a width must divide into (``dim % dim_head == 0``, ``GroupNorm(groups, dim)``).
_DIVISORS = re.compile(r"(dim_?head|head_?dim|head_size|num_heads|n_?heads?|heads|groups|"
                       r"num_groups|group_size|gs)", re.IGNORECASE)


def _width(values: dict[str, object]) -> int:
    """The synthesized width: :data:`WIDTH`, or the least multiple of it that the class's
    own head and group sizes divide (``dim_head=32`` -> 32; ``num_heads=(6, 12)``, one per
    stage, -> 48), at most 128."""
    width = WIDTH
    for name, value in values.items():
        if not _DIVISORS.fullmatch(name):
            continue
        for one in value if isinstance(value, tuple) else (value,):  # one per stage
            if type(one) is int and 0 < one <= 128:
                width = math.lcm(width, one)
    return width if width <= 128 else WIDTH


def _widened(value: object, width: int) -> object:
    if isinstance(value, tuple):
        return tuple(_widened(v, width) for v in value)
    return width if value == WIDTH and type(value) is int else value


def _indexed_scalar(default: object, name: str,
                    usage_of: Callable[[str], Usage] | None) -> bool:
    """True for a number default the constructor indexes or iterates without testing
    its type (``drop_path: float = 0.`` read as ``drop_path[i]``): the callers pass a
    sequence, and the default cannot build the class."""
    if usage_of is None or not isinstance(default, (int, float)) or isinstance(default, bool):
        return False
    used = usage_of(name)
    return used.indexed and not (used.tested or used.type_tested or used.unpacked
                                 or used.rebound)


def _needs_value(name: str, usage_of: Callable[[str], Usage] | None) -> bool:
    """True for a parameter whose default is None but whose constructor reads or calls it
    without testing for None first (``opt.load_size`` with ``opt=None``)."""
    if usage_of is None:
        return False
    used = usage_of(name)
    return not used.tested and bool(used.fields or used.called)


def _missing_fields(value: object, chains: Sequence[tuple[str, ...]]) -> dict[str, object]:
    """Synthesized values for the fields a constructor reads from a namespace and the
    namespace lacks (only ``types.SimpleNamespace``: a configuration class has the
    fields its class defines)."""
    if not isinstance(value, ConfigValue) or (value.module, value.name) != NAMESPACE:
        return {}
    have = dict(value.fields)
    wanted = [c for c in chains if c and c[0] not in have]
    tree = _chains_to_tree(wanted)
    return {k: v for k, v in tree.items() if v is not None}


def scaled(name: str, value: object, factor: int, images: bool = False) -> object:
    """A synthesized value with its widths (multiples of :data:`WIDTH`) ``factor`` times
    wider, for a Cell that a made-up width does not suit (``GroupNorm(32, dim)``); sizes
    of images and windows stay."""
    if isinstance(value, ConfigValue) and (value.module, value.name) == MAPPING:
        # a dictionary of records (``input_shape``) is no (height, width) pair
        return ConfigValue(*MAPPING, (), tuple((k, scaled(k, v, factor, images))
                                               for k, v in value.kwargs))
    if _PAIR_NAMES.search(name):
        return value
    if isinstance(value, tuple):
        return tuple(scaled(name, v, factor, images) for v in value)
    if isinstance(value, ConfigValue) and (value.module, value.name) == NAMESPACE:
        return _namespace({k: v if _STRIDE.fullmatch(k) else scaled(k, v, factor, images)
                           for k, v in value.fields})
    if type(value) is int and value >= WIDTH and value % WIDTH == 0:
        return value * factor
    if images and value == 3 and re.fullmatch(_IMAGE_CHANNELS, name, re.IGNORECASE):
        return WIDTH * factor  # more channels than an image's (``GroupNorm(32, in_channels)``)
    return value


# How many items a made-up sequence has in the variant tried when a Cell cannot be built
# with the first (``encoder_channels[i + 1] for i in range(n_blocks)``, five blocks).
LONGER = 8


def lengthened(name: str, value: object) -> object:
    """A synthesized sequence of equal items (not a pair of sides) with :data:`LONGER`
    items, for a constructor that indexes past the four first made up; other values
    stay."""
    if not isinstance(value, tuple) or not value or len(value) >= LONGER or \
            _PAIR_NAMES.search(name) or len(set(map(repr, value))) != 1:
        return value
    items = (value[0],) * LONGER
    return ListValue(items) if isinstance(value, ListValue) else items


# A size the repository gives above this is made small again when the Cell, built with
# it, runs out of time or memory: the run proves the translation, not the model's size.
LARGE = 64


def shrunk(kwargs: dict[str, object], given: Iterable[str],
           usage_of: Callable[[str], Usage]) -> dict[str, object]:
    """Small made-up values for the sizes above :data:`LARGE` among ``given`` arguments
    (``dim=9216`` -> 16, ``in_chs=(768, 1280)`` -> (16, 16)), each as it would be
    synthesized, widened so the class's head and group counts still divide it."""
    small: dict[str, object] = {}
    for name in given:
        value = kwargs.get(name)
        if type(value) is int and value > LARGE:
            used = usage_of(name)
            guess = synthesize(name, used)
            if used.rebound and type(guess) is not int:
                guess = by_name(name)  # ``img_size = to_2tuple(img_size)``: one size given
            if type(guess) is int and 0 < guess < value:
                small[name] = guess
        elif isinstance(value, tuple) and value:
            sizes = [v for v in value if type(v) is int]
            if len(sizes) == len(value) and max(sizes) > LARGE:
                item = by_name(name)
                item = item if type(item) is int and item > 0 else WIDTH
                small[name] = tuple(item if v > LARGE else v for v in sizes)
    width = _width({**kwargs, **small})
    return {name: _widened(value, width) for name, value in small.items()}


def describe(synthesized: dict[str, object]) -> str:
    """``in_channels=3, num_heads=2`` (configuration objects by their fields)."""
    def show(value: object) -> str:
        if isinstance(value, ConfigValue) and value.is_class and value.kwargs:
            return f"partial({value.name}, " + ", ".join(
                f"{k}={show(v)}" for k, v in value.kwargs) + ")"
        if isinstance(value, ConfigValue) and value.is_class:
            return value.name
        if isinstance(value, ConfigValue) and not value.fields:  # a network, built
            return f"{value.name}(" + ", ".join(f"{k}={show(v)}" for k, v in value.kwargs) + ")"
        if isinstance(value, ConfigValue):
            return "{" + ", ".join(f"{k}={show(v)}" for k, v in value.fields) + "}"
        if isinstance(value, DictValue):
            return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in value.items) + "}"
        if isinstance(value, TensorValue):
            return "ones(" + ", ".join(map(str, value.shape)) + ")"
        if isinstance(value, tuple) and any(isinstance(v, ConfigValue) for v in value):
            return "(" + ", ".join(show(v) for v in value) + ")"
        return repr(value)
    return ", ".join(f"{k}={show(v)}" for k, v in synthesized.items())
