"""Syntax helpers shared by the walk and the rules: a cheap traversal of libcst trees,
constant arguments, assignment targets, and what calling a torch API returns."""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import typing
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    import libcst.matchers as m

_SKIP_FIELD_PREFIXES = ("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines",
                        "lines_after_decorators", "header", "footer", "equal", "colon", "dot",
                        "lbracket", "rbracket", "lbrace", "rbrace", "newline")
# Token and whitespace fields the prefixes miss. (``star_arg`` and ``star_kwarg``, unlike
# ``star``, hold the ``*args`` and ``**kwargs`` parameters.)
_SKIP_FIELDS = frozenset({"star", "trailing_whitespace", "leading_whitespace", "first_line",
                          "empty_lines", "last_line", "trailing_comma", "first_colon",
                          "second_colon"})
# Node types whose fields are declared in another order than they are written.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.FunctionDef: ("decorators", "asynchronous", "name", "type_parameters", "params",
                      "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.ImportFrom: ("relative", "module", "names"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params",
                     "star_kwarg"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.For: ("asynchronous", "target", "iter", "body", "orelse"),
    cst.CompFor: ("asynchronous", "target", "iter", "ifs", "inner_for_in"),
    cst.With: ("asynchronous", "items", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
MAX_ARG_TEXT = 200


def code(node: cst.CSTNode) -> str:
    """The source text of a node, as libcst writes it."""
    return cst.Module([]).code_for_node(node)


def method_params(method: cst.FunctionDef) -> list[cst.Param]:
    """The positional parameters a call of a method fills: those after ``self`` (or
    ``cls``), every one of a ``@staticmethod`` (``def forward(x)``)."""
    params = [*method.params.posonly_params, *method.params.params]
    static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                 for d in method.decorators)
    return params if static else params[1:]


@lru_cache(maxsize=1)
def tensor_methods() -> frozenset[str]:
    """Public ``torch.Tensor`` method names, from the package data."""
    text = resources.files("msready.analyzer").joinpath("data/tensor_methods.txt").read_text()
    return frozenset(ln.strip() for ln in text.splitlines() if ln.strip() and ln[0] != "#")


_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(node_type)
            if not f.name.startswith(_SKIP_FIELD_PREFIXES) and f.name not in _SKIP_FIELDS
        )
        order = _SOURCE_ORDER.get(node_type)
        if order:
            names = tuple(sorted(names, key=lambda n: order.index(n) if n in order else len(order)))
        _FIELDS[node_type] = names
    return names


_NODE_TYPES: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    # libcst's node classes are ABCs, whose isinstance checks are slow; cache per type.
    kind = type(value)
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = isinstance(value, cst.CSTNode)
    return known


# How :func:`children` reads each field of a node type, from the field's declared type:
_NODE, _OPTIONAL, _NODES, _ANY = range(4)  # a node; a node or None; nodes; look at it
_PLANS: dict[type, tuple[tuple[str, int], ...]] = {}


def _node_class(kind: object) -> bool:
    return isinstance(kind, type) and issubclass(kind, cst.CSTNode)


def _field_mode(declared: object) -> int | None:
    """How a field declared as ``declared`` is read (None: it never holds a node)."""
    if declared is str:
        return None
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin is typing.Literal and all(isinstance(a, str) for a in args):
        return None
    if _node_class(declared):
        return _NODE
    if origin is typing.Union and all(_node_class(a) or a is type(None) for a in args):
        return _OPTIONAL if type(None) in args else _NODE
    if origin is collections.abc.Sequence and len(args) == 1 and (
            _node_class(args[0]) or (typing.get_origin(args[0]) is typing.Union
                                     and all(_node_class(a) for a in typing.get_args(args[0])))):
        return _NODES
    return _ANY


def _plan(node_type: type) -> tuple[tuple[str, int], ...]:
    plan = _PLANS.get(node_type)
    if plan is None:
        declared = {f.name: f.type for f in dataclasses.fields(node_type)}
        modes = ((name, _field_mode(declared[name])) for name in _child_fields(node_type))
        plan = _PLANS[node_type] = tuple((name, mode) for name, mode in modes if mode is not None)
    return plan


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntactically meaningful children of a node, in source order (read as each
    field's declared type says: a field declared to hold nodes is not checked again)."""
    read = _READERS.get(type(node))
    if read is None:
        read = _READERS[type(node)] = _reader(type(node))
    return read(node)


_READERS: dict[type, typing.Callable[[cst.CSTNode], list[cst.CSTNode]]] = {}


def has_children(node_type: type) -> bool:
    """False for a node type that never has children (a name, a number, an operator)."""
    return bool(_plan(node_type))


def _reader(node_type: type) -> typing.Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """A function that lists the children of a node of ``node_type``: its fields read one
    after the other as :func:`_plan` says, written out once per type (a loop over the
    plan, run for each of the millions of nodes a scan walks, cost about a third more)."""
    plan = _plan(node_type)
    if all(mode == _NODE for _, mode in plan):
        body = ["    return [" + ", ".join(f"node.{name}" for name, _ in plan) + "]"]
    else:
        body = ["    out = []"]
        for name, mode in plan:
            if mode == _NODE:
                body.append(f"    out.append(node.{name})")
            elif mode == _NODES:
                body.append(f"    out.extend(node.{name})")
            elif mode == _OPTIONAL:
                body += [f"    if node.{name} is not None:", f"        out.append(node.{name})"]
            else:
                body.append(f"    _any_children(out, node.{name})")
        body.append("    return out")
    namespace: dict[str, typing.Any] = {"_any_children": _any_children}
    exec("def read(node):\n" + "\n".join(body) + "\n", namespace)
    read: typing.Callable[[cst.CSTNode], list[cst.CSTNode]] = namespace["read"]
    return read


def _any_children(out: list[cst.CSTNode], value: object) -> None:
    """Add the nodes a field of no declared node type holds."""
    if type(value) in (tuple, list):
        out.extend(item for item in value if _is_node(item))  # type: ignore[attr-defined]
    elif _is_node(value):
        out.append(value)  # type: ignore[arg-type]


# torch names whose results are not tensors: modules, devices, flags, states, files.
_NOT_TENSOR_PREFIXES = ("torch.cuda.", "torch.backends.", "torch.distributed.", "torch.utils.",
                        "torch.optim.", "torch.jit.", "torch.onnx.", "torch.amp.",
                        "torch.autograd.profiler", "torch.profiler.", "torchvision.transforms.",
                        "torchvision.datasets.", "torchvision.models.")
_NOT_TENSOR_NAMES = frozenset({"device", "dtype", "no_grad", "enable_grad", "inference_mode",
                               "finfo", "iinfo", "load", "save", "compile", "Generator",
                               "set_grad_enabled", "manual_seed", "numel"})


def torch_result_kind(target: str) -> str:
    """What calling a torch API returns, by its name: 'tensor', 'object' or 'other'.

    Classes other than tensor types build objects (``nn.Linear(...)`` is a module, whose
    methods may return anything); predicates, getters, setters and the device /
    serialisation APIs return other values.
    """
    last = target.rsplit(".", 1)[-1]
    if last.endswith("Tensor") or last == "Parameter":
        return "tensor"
    if last[:1].isupper():
        return "object"
    if target.startswith(_NOT_TENSOR_PREFIXES):
        return "other"
    if last.startswith(("is_", "get_", "set_")) or last in _NOT_TENSOR_NAMES:
        return "other"
    return "tensor"


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node and every node below it, in source order; far cheaper than libcst's
    visitors and matchers' ``findall``, which rebuild the tree they walk."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


_HOOKS: dict[tuple[type, type], tuple[typing.Any, typing.Any]] = {}


def _hooks(kind: type, name: str) -> tuple[typing.Any, typing.Any]:
    """A visitor class's own ``visit_<name>`` and ``leave_<name>`` (None for libcst's
    empty defaults)."""
    found = []
    for method in (f"visit_{name}", f"leave_{name}"):
        own = getattr(kind, method, None)
        found.append(None if own is getattr(cst.CSTVisitor, method, None) else own)
    return found[0], found[1]


def read_with(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Run a visitor that only reads, like ``node.visit(visitor)`` but without rebuilding
    the tree: its ``visit_<Type>`` and ``leave_<Type>`` methods see the nodes
    :func:`children` gives, in source order, and a ``visit_<Type>`` that returns False
    skips the node's children. Whitespace and punctuation nodes are not visited."""
    kind = type(visitor)
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, leaving = stack.pop()
        hooks = _HOOKS.get((kind, type(current)))
        if hooks is None:
            hooks = _HOOKS[kind, type(current)] = _hooks(kind, type(current).__name__)
        enter, leave = hooks
        if leaving:
            leave(visitor, current)
            continue
        if enter is not None and enter(visitor, current) is False:
            continue
        if leave is not None:
            stack.append((current, True))
        stack.extend((child, False) for child in reversed(children(current)))


def _matched_types(matcher: object) -> frozenset[type] | None:
    """The node types a matcher can match (None: it does not say)."""
    import libcst.matchers as m  # only the Cells' generator uses matchers: see is_name

    if isinstance(matcher, m.OneOf):
        kinds = [_matched_types(option) for option in matcher.options]
        return None if any(k is None for k in kinds) else frozenset().union(*kinds)  # type: ignore[arg-type]
    kind = getattr(cst, type(matcher).__name__, None) if isinstance(matcher, m.BaseMatcherNode) \
        else None
    return frozenset({kind}) if isinstance(kind, type) and _node_class(kind) else None


# The nodes below a node, by type, for the last nodes searched (see find_all): the Cells'
# generator searches the same constructor or module for one thing after another. Bounded
# by the number of nodes listed (about 80 bytes each), the oldest let go first, and
# emptied when a generation ends (forget_searches).
_TYPE_INDEX: OrderedDict[int, tuple[cst.CSTNode, dict[type, list[tuple[int, cst.CSTNode]]],
                                    int]] = OrderedDict()
_TYPE_INDEX_NODES = 1_000_000
_type_index_held = 0


def _by_type(node: cst.CSTNode) -> dict[type, list[tuple[int, cst.CSTNode]]]:
    """The nodes at or below ``node`` by type, each with its rank in source order, kept
    for the nodes asked about last (libcst trees do not change, and an entry holds its
    node, so its id is not reused while it is kept)."""
    global _type_index_held
    key = id(node)
    found = _TYPE_INDEX.get(key)
    if found is not None:
        _TYPE_INDEX.move_to_end(key)
        return found[1]
    index: dict[type, list[tuple[int, cst.CSTNode]]] = {}
    count = 0
    for count, item in enumerate(descendants(node), 1):
        index.setdefault(type(item), []).append((count, item))
    _TYPE_INDEX[key] = (node, index, count)
    _type_index_held += count
    while _type_index_held > _TYPE_INDEX_NODES and len(_TYPE_INDEX) > 1:
        _type_index_held -= _TYPE_INDEX.popitem(last=False)[1][2]
    return index


def forget_searches() -> None:
    """Let go of the indexes :func:`find_all` keeps (and the trees they hold): called when
    the Cells of a scan are generated."""
    global _type_index_held
    _TYPE_INDEX.clear()
    _type_index_held = 0


def find_all(node: cst.CSTNode, matcher: m.BaseMatcherNode | m.OneOf[m.BaseMatcherNode]
             ) -> list[cst.CSTNode]:
    """The nodes at or below ``node`` that ``matcher`` matches, in source order, as
    ``m.findall`` finds them, without rebuilding the tree: only nodes of the types the
    matcher names are tried."""
    from msready.analyzer.quick_match import compiled

    test = compiled(matcher)
    kinds = _matched_types(matcher)
    if kinds is None:
        return [n for n in descendants(node) if test(n)]
    index = _by_type(node)
    candidates = [item for kind in kinds for item in index.get(kind, ())]
    if len(kinds) > 1:
        candidates.sort(key=lambda item: item[0])  # back in source order
    return [n for _, n in candidates if test(n)]


@lru_cache(maxsize=4096)
def _token_literal(text: str) -> tuple[object, bool]:
    """The value of a string or imaginary number token (immutable, so shared); the same
    few strings recur in every file."""
    return _literal(text) if len(text) <= MAX_ARG_TEXT else (None, False)


def _literal(text: str) -> tuple[object, bool]:
    try:
        return ast.literal_eval(text), True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, False


_CONSTANTS = {"True": True, "False": False, "None": None}


def literal_of(value: cst.BaseExpression, text: str) -> tuple[object, bool]:
    """The Python value of a constant argument, and whether it is one."""
    kind = type(value)
    if kind is cst.Integer and not value.lpar:  # type: ignore[attr-defined]
        try:
            return int(text.replace("_", ""), 0), True
        except ValueError:
            return _literal(text)
    if kind is cst.Float and not value.lpar:  # type: ignore[attr-defined]
        return float(text.replace("_", "")), True
    if kind is cst.Name:
        name = value.value  # type: ignore[attr-defined]
        return (_CONSTANTS[name], True) if name in _CONSTANTS else (None, False)
    if (kind is cst.SimpleString or kind is cst.Imaginary) and not value.lpar:  # type: ignore[attr-defined]
        return _token_literal(text)
    if kind in _LITERAL_NODES and len(text) <= MAX_ARG_TEXT:
        return _shared_literal(text)
    return None, False


_SHARED: dict[str, tuple[object, bool]] = {}


def _shared_literal(text: str) -> tuple[object, bool]:
    """:func:`_literal`, read once per text when the value is immutable (``-1``,
    ``(3, 3)``: the same few recur in every file); a mutable one (a list) is made anew."""
    found = _SHARED.get(text)
    if found is None:
        found = _literal(text)
        try:
            hash(found)
        except TypeError:
            return found
        if len(_SHARED) > 20_000:
            _SHARED.clear()
        _SHARED[text] = found
    return found


_LITERAL_NODES = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                  cst.UnaryOperation, cst.Tuple, cst.List)


def blocks(stmt: cst.If | cst.Try | cst.With) -> Iterator[Sequence[cst.BaseStatement]]:
    body = stmt.body
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    if isinstance(stmt, cst.If) and stmt.orelse is not None:
        if isinstance(stmt.orelse, cst.If):
            yield [stmt.orelse]
        elif isinstance(stmt.orelse.body, cst.IndentedBlock):
            yield stmt.orelse.body.body
    if isinstance(stmt, cst.Try):
        for handler in stmt.handlers:
            if isinstance(handler.body, cst.IndentedBlock):
                yield handler.body.body
        for extra in (stmt.orelse, stmt.finalbody):
            if extra is not None and isinstance(extra.body, cst.IndentedBlock):
                yield extra.body.body


def all_params(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    yield from params.kwonly_params
    if params.star_kwarg is not None:
        yield params.star_kwarg


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


def element_of(expr: cst.BaseExpression, index: int = 0) -> cst.BaseExpression:
    """A stand-in expression for one element of ``expr`` (``expr[index]``), for data flow:
    a loop variable over a tensor is a tensor, one over a file is a line."""
    return cst.Subscript(value=expr, slice=[cst.SubscriptElement(cst.Index(
        cst.Integer(str(index))))])


def unpack(target: cst.BaseExpression,
            value: cst.BaseExpression) -> Iterator[tuple[str, cst.BaseExpression]]:
    """Pairs of (name, the part of ``value`` it receives) for an assignment target."""
    if isinstance(target, cst.Name):
        yield target.value, value
    elif isinstance(target, (cst.Tuple, cst.List)):
        parts: list[cst.BaseExpression] | None = None
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(
                target.elements) and not any(isinstance(e, cst.StarredElement)
                                             for e in value.elements):
            parts = [e.value for e in value.elements]
        for i, element in enumerate(target.elements):
            part = parts[i] if parts is not None else element_of(value, i)
            yield from unpack(element.value, part)
    elif isinstance(target, cst.StarredElement):
        yield from unpack(target.value, value)


def is_name(expr: cst.CSTNode, value: str | None = None) -> bool:
    """True for a bare name (``value``, when given): what ``m.Name(value)`` matches, without
    libcst's matchers, whose module alone takes a fifth of a second to import in every
    process that walks files."""
    return type(expr) is cst.Name and (value is None or expr.value == value)  # type: ignore[attr-defined]


def self_attr(expr: cst.BaseExpression) -> str | None:
    if (type(expr) is cst.Attribute and type(expr.value) is cst.Name  # type: ignore[attr-defined]
            and expr.value.value == "self"):  # type: ignore[attr-defined]
        return expr.attr.value  # type: ignore[attr-defined,no-any-return]
    return None
