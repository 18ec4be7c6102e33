"""Where libcst nodes sit in their source text, computed only for the nodes asked about.

libcst nodes carry no positions; libcst's ``PositionProvider`` regenerates the code of the
whole module to find them, which cost a fifth of a scan. Here positions come from CPython's
own parser instead: ``ast`` gives the exact start and end of every call, function and
class (in C, several times faster than regenerating the code). The walk visits nodes in
source order and notes each call, function and class as it meets it, so the n-th libcst
call is the n-th ``ast`` call in source order. The nodes whose positions the walk asks for
(calls, their arguments and receivers, function and class names, decorators, bases and
parameter defaults, keyword names) are read straight from the ``ast`` node; any other node
inside a call gets its position by regenerating only the argument (with its keyword or
star), receiver or callee it sits in, from where CPython says that part starts, or else
the whole call, from the call's known start; every generated token is checked against
the source text.

Anything else (a node outside every noted call, a file CPython cannot parse, a check that
fails) falls back to the full pass over the module, once, so an answer is always exact:
the spans are those of libcst's code generation, the syntactic span of each node.
"""

from __future__ import annotations

import ast
import operator
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst._add_slots import add_slots
from libcst._nodes.internal import CodegenState

from msready.analyzer.syntax import children

Offsets = tuple[int, int]
_RECURSION = 20000


@add_slots
@dataclass(frozen=False)
class _SpanState(CodegenState):
    """Codegen that only counts characters and records each node's start and end offset.

    With ``text`` set, every token is also checked against the source at its offset; a
    difference raises :class:`_Mismatch`.
    """

    offset: int = 0
    spans: dict[int, Offsets] = field(default_factory=dict)
    text: str | None = None
    stop_at: int = 0  # id of a node (a statement's body) where regenerating stops
    _stack: list[int] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if self.text is not None and not self.text.startswith(value, self.offset):
            raise _Mismatch
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) == self.stop_at:
            raise _Stop
        self._stack.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        key = id(node)
        if key not in self.spans:
            self.spans[key] = (start, self.offset)

    def record_syntactic_position(  # type: ignore[override]  # any context manager serves
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _Record:
        return _Record(self, node, start_node, end_node)


class _Mismatch(Exception):
    """A regenerated token differs from the source: the start offset was wrong."""


class _Stop(Exception):  # a signal, not an error
    """Regenerating reached the part of the node that is not needed."""


class _Record:
    """Records a node's span without whitespace it owns (a cheap context manager)."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state: _SpanState, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node = state, node
        self.start_node, self.end_node = start_node, end_node
        self.start = 0

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:  # regenerating stopped inside the node: its end is unknown
            return
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = self.state.offset if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)


def all_spans(module: cst.Module) -> dict[int, Offsets]:
    """The span of every node of a module, by regenerating its code (raises
    RecursionError for a tree nested too deeply)."""
    state = _SpanState(default_indent=module.default_indent,
                       default_newline=module.default_newline)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION))
    try:
        module._codegen(state)
    finally:
        sys.setrecursionlimit(old_limit)
    return state.spans


# How a noted node finds its ast counterpart: (kind, ordinal of the owner, part, index).
_Key = tuple[str, int, str, int]
# Nodes whose children the walk (``syntax.children``, in libcst's field order) visits out
# of source order, with the parts that come first in the source but later in the walk.
_OUT_OF_ORDER: dict[type, tuple[str, ...]] = {
    cst.IfExp: ("body",),
    cst.ClassDef: ("bases", "keywords"),
    cst.FunctionDef: ("returns",),
    cst.ExceptHandler: ("type", "name"),
    cst.ExceptStarHandler: ("type", "name"),
}
# Statements, whose ast counterparts are the n-th ``ast.stmt`` in source order. A line of
# simple statements (``a = 1; b = 2``) stands for as many ast statements.
_COMPOUND = frozenset({cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.With,
                       cst.FunctionDef, cst.ClassDef, cst.Match})
_SIMPLE = frozenset({cst.SimpleStatementLine, cst.SimpleStatementSuite})
# Tokens: the text of one is its ``value``, exactly as written, and its syntactic span is
# that text (any parentheses around it belong to the node, outside its span).
LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString})
# What the walk notes as it enters it.
NOTED = frozenset({cst.Call, *_OUT_OF_ORDER, *_COMPOUND, *_SIMPLE})
# The same children in source order.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.IfExp: ("body", "test", "orelse"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
}


def _source_descendants(value: object) -> Iterator[cst.CSTNode]:
    """Nodes below (and including) ``value`` (a node, a sequence of nodes or None) in
    source order."""
    stack: list[object] = [value]
    while stack:
        current = stack.pop()
        if current is None:
            continue
        if isinstance(current, (list, tuple)):
            stack.extend(reversed(current))
            continue
        if not isinstance(current, cst.CSTNode):
            continue
        yield current
        order = _SOURCE_ORDER.get(type(current))
        if order is None:
            stack.extend(reversed(children(current)))
        else:
            stack.extend(reversed([getattr(current, name) for name in order]))
# Expressions whose ast extent includes brackets that libcst gives to their owner.
_OWN_BRACKETS = (cst.Tuple, cst.GeneratorExp)

# Below a noted node, libcst's children and CPython's: for a parent type, the ast type it
# stands for and, for each field of libcst's node, the field of the ast node that holds
# the counterpart ("value" of ``cst.Attribute`` is ``ast.Attribute.value``). Parents with
# lists of children are paired up in :func:`_step`.
_STEPS: dict[type, tuple[type, dict[str, str]]] = {
    cst.Expr: (ast.Expr, {"value": "value"}),
    cst.AnnAssign: (ast.AnnAssign, {"target": "target", "annotation": "annotation",
                                    "value": "value"}),
    cst.AugAssign: (ast.AugAssign, {"target": "target", "value": "value"}),
    cst.Return: (ast.Return, {"value": "value"}),
    cst.If: (ast.If, {"test": "test"}),
    cst.While: (ast.While, {"test": "test"}),
    cst.For: (ast.For, {"target": "target", "iter": "iter"}),
    cst.Assert: (ast.Assert, {"test": "test", "msg": "msg"}),
    cst.Attribute: (ast.Attribute, {"value": "value"}),
    cst.BinaryOperation: (ast.BinOp, {"left": "left", "right": "right"}),
    cst.UnaryOperation: (ast.UnaryOp, {"expression": "operand"}),
    cst.IfExp: (ast.IfExp, {"test": "test", "body": "body",
                            "orelse": "orelse"}),
    cst.Await: (ast.Await, {"expression": "value"}),
    cst.Slice: (ast.Slice, {"lower": "lower", "upper": "upper",
                            "step": "step"}),
    cst.Lambda: (ast.Lambda, {"body": "body"}),
}
# Tokens a node's text starts with, for the check of a position read from ast.
_OPENERS: dict[type, str] = {cst.List: "[", cst.ListComp: "[", cst.Dict: "{", cst.Set: "{",
                             cst.DictComp: "{", cst.SetComp: "{", cst.Lambda: "lambda",
                             cst.Await: "await"}


def _first_token(node: cst.CSTNode) -> str | None:
    """The text a node's syntactic span starts with, as far as cheaply known."""
    while True:
        kind = type(node)
        if kind in LEAVES:
            return node.value  # type: ignore[attr-defined,no-any-return]
        opener = _OPENERS.get(kind)
        if opener is not None:
            return opener
        if kind is cst.UnaryOperation:
            return node.operator._get_token()  # type: ignore[attr-defined,no-any-return]
        if kind in (cst.Attribute, cst.Subscript):
            node = node.value  # type: ignore[attr-defined]
        elif kind is cst.Call:
            node = node.func  # type: ignore[attr-defined]
        elif kind in (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison):
            node = node.left  # type: ignore[attr-defined]
        elif kind is cst.IfExp:
            node = node.body  # type: ignore[attr-defined]
        elif kind is cst.Tuple and node.elements:  # type: ignore[attr-defined]
            first = node.elements[0]  # type: ignore[attr-defined]
            if type(first) is not cst.Element:
                return "*"
            node = first.value
        else:
            return None
        if node.lpar:  # type: ignore[attr-defined]
            return "("


def _whitespace(value: object) -> int | None:
    """The length of a parenthesis' whitespace, when it is simple (one line)."""
    return len(value.value) if type(value) is cst.SimpleWhitespace else None  # type: ignore[attr-defined]


def _parameter(parent: cst.Parameters, child: cst.CSTNode, item: ast.AST) -> ast.AST | None:
    """The ``ast.arg`` of a parameter, by its place among the function's parameters."""
    if not isinstance(item, ast.arguments):
        return None
    pairs: list[tuple[object, object]] = [
        *zip(parent.posonly_params, item.posonlyargs, strict=False),
        *zip(parent.params, item.args, strict=False),
        (parent.star_arg, item.vararg),
        *zip(parent.kwonly_params, item.kwonlyargs, strict=False),
        (parent.star_kwarg, item.kwarg)]
    if (len(parent.posonly_params), len(parent.params), len(parent.kwonly_params)) != (
            len(item.posonlyargs), len(item.args), len(item.kwonlyargs)):
        return None
    for param, arg in pairs:
        if param is child:
            return arg if isinstance(arg, ast.arg) else None
    return None


def _paired(child: cst.CSTNode, nodes: Sequence[cst.CSTNode],
            items: Sequence[ast.AST]) -> ast.AST | None:
    """The item at ``child``'s place among ``nodes``, when the two lists pair one to one."""
    if len(nodes) != len(items):
        return None
    return next((found for node, found in zip(nodes, items, strict=True) if node is child),
                None)


# libcst wrappers whose ast counterpart is their parent's own (``Arg.value``: the
# argument's value), by the field that holds the wrapped node.
_SAME = {cst.Arg: "value", cst.Element: "value", cst.ComparisonTarget: "comparator",
         cst.SubscriptElement: "slice", cst.Index: "value", cst.AssignTarget: "target",
         cst.Annotation: "annotation"}


def _step(parent: cst.CSTNode, child: cst.CSTNode, item: ast.AST) -> ast.AST | None:
    """The ast counterpart of ``child`` of ``parent``, whose counterpart is ``item``."""
    kind = type(parent)
    same = _SAME.get(kind)
    if same is not None:
        return item if child is getattr(parent, same) else None
    if kind in (cst.Tuple, cst.List, cst.Set):
        if not isinstance(item, (ast.Tuple, ast.List, ast.Set)) or type(child) is not cst.Element:
            return None
        return _paired(child, parent.elements, item.elts)  # type: ignore[attr-defined]
    if kind is cst.Comparison:
        if not isinstance(item, ast.Compare):
            return None
        if child is parent.left:  # type: ignore[attr-defined]
            return item.left
        return _paired(child, parent.comparisons, item.comparators)  # type: ignore[attr-defined]
    if kind is cst.Subscript:
        if not isinstance(item, ast.Subscript):
            return None
        if child is parent.value:  # type: ignore[attr-defined]
            return item.value
        elements = parent.slice  # type: ignore[attr-defined]
        alone = len(elements) == 1 and elements[0].comma is cst.MaybeSentinel.DEFAULT
        if alone and child is elements[0]:
            return item.slice
        return _paired(child, elements, item.slice.elts) \
            if isinstance(item.slice, ast.Tuple) else None
    if kind is cst.Assign:
        if not isinstance(item, ast.Assign):
            return None
        if child is parent.value:  # type: ignore[attr-defined]
            return item.value
        return _paired(child, parent.targets, item.targets)  # type: ignore[attr-defined]
    if kind is cst.Call:
        if not isinstance(item, ast.Call):
            return None
        if child is parent.func:  # type: ignore[attr-defined]
            return item.func
        for i, arg in enumerate(parent.args):  # type: ignore[attr-defined]
            if arg is child:
                return Positions._part(item, "arg", i)
        return None
    if kind is cst.If and child is parent.orelse:  # type: ignore[attr-defined]
        orelse: list[ast.stmt] = getattr(item, "orelse", [])
        return orelse[0] if len(orelse) == 1 and type(orelse[0]) is ast.If else None
    if kind is cst.FunctionDef:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        if child is parent.params:  # type: ignore[attr-defined]
            return item.args
        return item.returns if child is parent.returns else None  # type: ignore[attr-defined]
    if kind is cst.Parameters:
        return _parameter(parent, child, item)  # type: ignore[arg-type]
    if kind is cst.Param:  # its annotation; its default is noted with its function
        if not isinstance(item, ast.arg) or child is not parent.annotation:  # type: ignore[attr-defined]
            return None
        return item.annotation
    step = _STEPS.get(kind)
    if step is None or not isinstance(item, step[0]):
        return None
    for name, field_name in step[1].items():
        if getattr(parent, name) is child:
            found = getattr(item, field_name)
            return found if isinstance(found, ast.AST) else None
    return None


# What :func:`_collect` keeps of each ast node type: the kinds it counts as and the
# fields that may hold nodes; built on first sight of the type (non-node values too).
_Shape = tuple[tuple[str, ...], tuple[str, ...]]
_SHAPES: dict[type, _Shape] = {}
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "type_comment", "kind"})
_START = operator.attrgetter("lineno", "col_offset")


def _shape(kind: type) -> _Shape:
    if not issubclass(kind, ast.AST) or kind is ast.Constant:  # a name, a value
        return (), ()
    kinds: tuple[str, ...] = ("call",) if kind is ast.Call else (
        ("def", "stmt") if kind in (ast.FunctionDef, ast.AsyncFunctionDef) else
        ("class", "stmt") if kind is ast.ClassDef else
        ("stmt",) if issubclass(kind, ast.stmt) else ())
    return kinds, tuple(f for f in kind._fields if f not in _NOT_CHILDREN)


def _collect(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """The calls, functions, classes and statements of an ast tree, each parent before
    its children (so that a stable sort by start keeps an outer call ``f(x)(y)`` before
    the inner one, as a sort by start and then by end, longest first, does)."""
    found: dict[str, list[ast.AST]] = {"call": [], "def": [], "class": [], "stmt": []}
    shapes = _SHAPES
    stack: list[object] = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        shape = shapes.get(kind)
        if shape is None:
            shape = shapes[kind] = _shape(kind)
        kinds, fields = shape
        for name in kinds:
            found[name].append(node)  # type: ignore[arg-type]
        for name in fields:
            value = getattr(node, name)
            if type(value) is list:
                extend(reversed(value))
            elif value is not None:
                push(value)
    return found


def _sorted(nodes: list[ast.AST]) -> list[ast.AST]:
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset,  # type: ignore[attr-defined]
                                        -n.end_lineno, -n.end_col_offset))  # type: ignore[attr-defined]


def _head(node: cst.CSTNode) -> str | None:
    """The first name of a call's callee (``a`` of ``a.b(c)[d]``), if it starts with one."""
    while True:
        if isinstance(node, cst.Name):
            return None if node.lpar else node.value
        if isinstance(node, (cst.Attribute, cst.Subscript)) and not node.lpar:
            node = node.value
        elif isinstance(node, cst.Call) and not node.lpar:
            node = node.func
        else:
            return None


def _path_to(top: cst.CSTNode, node: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes from below ``top`` down to ``node`` (None when it is not below ``top``
    or sits in a block of statements, which have positions of their own)."""
    stack: list[tuple[cst.CSTNode, int]] = [(top, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        current, level = stack.pop()
        if level:
            del path[level - 1:]
            path.append(current)
        if current is node:
            return path
        kind = type(current)
        if kind is cst.IndentedBlock or kind is cst.SimpleStatementSuite:
            continue
        stack.extend((child, level + 1) for child in reversed(children(current)))
    return None


@dataclass
class Positions:
    """Offsets of a module's nodes, found lazily; see the module docstring."""

    module: cst.Module
    text: str
    line_starts: list[int]
    spans: dict[int, Offsets] = field(default_factory=dict)
    full: bool = False
    failed: bool = False  # an ast position did not fit: the walk must be redone
    _noted: dict[int, _Key] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=lambda: {"call": 0, "def": 0, "class": 0,
                                                             "stmt": 0})
    _nodes: dict[int, cst.CSTNode] = field(default_factory=dict)  # keeps noted ids alive
    _definitions: dict[int, cst.FunctionDef | cst.ClassDef] = field(default_factory=dict)
    _call_ordinals: dict[int, int] = field(default_factory=dict)  # numbered ahead of the walk
    _ordered: set[int] = field(default_factory=set)
    _headers: set[int] = field(default_factory=set)  # statements whose header was regenerated
    _done: set[int] = field(default_factory=set)  # calls regenerated from their anchor
    _ast: dict[str, list[ast.AST]] | None = None

    # ----- noting nodes in source order ------------------------------------------------

    def note(self, node: cst.CSTNode) -> None:
        """Note a call, function or class (or an expression whose parts the walk visits
        out of source order) as the walk enters it, with the parts of it whose positions
        are asked for."""
        if self.full:
            return
        kind = type(node)
        if kind in _SIMPLE or kind in _COMPOUND:
            ordinal = self._counts["stmt"]
            self._counts["stmt"] = ordinal + (len(node.body) if kind in _SIMPLE  # type: ignore[attr-defined]
                                              else 1)
            if kind is not cst.SimpleStatementSuite:
                self._add(node, ("stmt", ordinal, "", 0))
            if kind is not cst.FunctionDef and kind is not cst.ClassDef:
                return
        if kind in _OUT_OF_ORDER:
            self._order_calls(node)
            if kind is not cst.FunctionDef and kind is not cst.ClassDef:
                return
        if kind is cst.Call:
            ordinal = self._call_ordinals.pop(id(node), -1)
            if ordinal < 0:
                ordinal = self._counts["call"]
                self._counts["call"] = ordinal + 1
            self._add_call(node, ordinal)  # type: ignore[arg-type]
            return
        name = "def" if kind is cst.FunctionDef else "class"
        ordinal = self._counts[name]
        self._counts[name] = ordinal + 1
        self._add_definition(node, name, ordinal)  # type: ignore[arg-type]

    def _order_calls(self, node: cst.CSTNode) -> None:
        """Number the calls below a node whose children the walk visits out of source
        order (the test of ``a if test else b`` before ``a``, a class's body before its
        bases): in source order, before the walk meets them."""
        if id(node) in self._ordered:
            return
        parts = _OUT_OF_ORDER[type(node)]
        if not any(type(d) is cst.Call for part in parts
                   for d in _source_descendants(getattr(node, part))):
            return
        for item in _source_descendants(node):
            if type(item) is cst.Call:
                self._call_ordinals[id(item)] = self._counts["call"]
                self._counts["call"] += 1
            elif type(item) in _OUT_OF_ORDER:
                self._ordered.add(id(item))

    def _add_call(self, node: cst.Call, ordinal: int) -> None:
        self._add(node, ("call", ordinal, "", 0))
        if not node.lpar:
            self._add(node.func, ("call", ordinal, "func", 0))
            if isinstance(node.func, cst.Attribute):
                self._add(node.func.value, ("call", ordinal, "receiver", 0))
        for i, arg in enumerate(node.args):
            self._add(arg.value, ("call", ordinal, "arg", i))
            self._add(arg, ("call", ordinal, "argnode", i))
            if arg.keyword is not None:
                self._add(arg.keyword, ("call", ordinal, "keyword", i))

    def _add_definition(self, node: cst.FunctionDef | cst.ClassDef, kind: str,
                        ordinal: int) -> None:
        self._add(node.name, (kind, ordinal, "name", 0))
        self._definitions[id(node.name)] = node
        for i, decorator in enumerate(node.decorators):
            self._add(decorator.decorator, (kind, ordinal, "decorator", i))
        if isinstance(node, cst.ClassDef):
            for i, arg in enumerate((*node.bases, *node.keywords)):
                self._add(arg.value, (kind, ordinal, "base", i))
            return
        params = node.params
        defaults = [p.default for p in (*params.posonly_params, *params.params,
                                         *params.kwonly_params) if p.default is not None]
        for i, default in enumerate(defaults):
            self._add(default, (kind, ordinal, "default", i))

    def _add(self, node: cst.CSTNode, key: _Key) -> None:
        self._noted[id(node)] = key
        self._nodes[id(node)] = node

    def consistent(self) -> bool:
        """True when the positions given so far came from ast nodes that fit: the walk
        noted exactly the calls, functions and classes CPython sees."""
        if self.full or self._ast is None:
            return not self.failed
        return not self.failed and all(
            self._counts[kind] == len(nodes) for kind, nodes in self._ast.items())

    # ----- answering ---------------------------------------------------------------------

    def offsets(self, node: cst.CSTNode, ancestors: Sequence[cst.CSTNode] = ()) -> Offsets | None:
        """Start and end offset of ``node``, or None for a node not in this module."""
        key = id(node)
        found = self.spans.get(key)
        if found is not None or self.full:
            return found
        noted = self._noted.get(key)
        if noted is not None and not self.failed:
            found = self._from_ast(node, noted)
            if found is not None:
                self.spans[key] = found
                return found
            if noted[0] != "stmt" and noted[2] != "name" and id(node) not in self._done:
                self._regenerate_part(node, noted, ancestors)
                found = self.spans.get(key)
                if found is not None:
                    return found
        for depth in range(len(ancestors) - 1, -1, -1):
            if self.failed:
                break
            owner = ancestors[depth]
            noted = self._noted.get(id(owner))
            if noted is None or id(owner) in self._done:
                continue
            found = self._descend(owner, noted, node, ancestors, depth)
            if found is not None:
                self.spans[key] = found
                return found
            if type(owner) is cst.Call:
                self._regenerate(owner, ancestors[:depth])  # type: ignore[arg-type]
            elif noted[0] != "stmt" and noted[2] != "name":
                # A call's argument or receiver, a decorator, a base, a default: only
                # that expression is regenerated, from where CPython says it starts.
                self._regenerate_part(owner, noted, ancestors[:depth])
            elif noted[0] == "stmt":
                if type(owner) is cst.If and depth and getattr(
                        ancestors[depth - 1], "orelse", None) is owner:
                    continue  # an elif: libcst writes it only within the if it belongs to
                # The header first (``if test:``); then, for the node itself or one of its
                # clauses (``except``, ``else``), the whole statement.
                for _ in range(2):
                    self._regenerate_statement(owner, ancestors[:depth])
                    found = self.spans.get(key)
                    if found is not None or self.failed or id(owner) in self._done:
                        break
                break
            else:
                continue
            found = self.spans.get(key)
            if found is not None:
                return found
        found = self.spans.get(key)
        if found is not None:
            return found
        self.full_pass()
        return self.spans.get(key)

    def full_pass(self) -> None:
        """Compute every node's span the slow, sure way."""
        if not self.full:
            self.spans = all_spans(self.module)
            self.full = True

    def _tree(self) -> dict[str, list[ast.AST]] | None:
        if self._ast is None:
            try:
                tree = ast.parse(self.text)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                self.failed = True
                return None
            found = _collect(tree)
            self._ast = {kind: sorted(nodes, key=_START) for kind, nodes in found.items()}
        return self._ast

    def _offset(self, line: int, col: int) -> int:
        start = self.line_starts[line - 1]
        if col and not self.text.isascii():
            end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
            col = len(self.text[start:end].encode("utf-8")[:col].decode("utf-8", "replace"))
        return start + col

    def _extent(self, item: ast.AST) -> Offsets:
        return (self._offset(item.lineno, item.col_offset),  # type: ignore[attr-defined]
                self._offset(item.end_lineno, item.end_col_offset))  # type: ignore[attr-defined]

    def _from_ast(self, node: cst.CSTNode, noted: _Key) -> Offsets | None:
        """The offsets of a noted node read from its ast counterpart, or None when the
        node needs its call regenerated (or the ast nodes do not fit)."""
        tree = self._tree()
        if tree is None:
            return None
        kind, ordinal, part, index = noted
        if kind == "stmt":
            return None  # regenerated from its first line
        owners = tree[kind]
        if ordinal >= len(owners):
            self.failed = True
            return None
        owner = owners[ordinal]
        if part == "name":
            return self._name(node, owner)
        if part == "argnode":  # an argument with its keyword or star
            item = self._part(owner, part, index)
            return None if item is None else self._argument(node, item)  # type: ignore[arg-type]
        if part == "keyword":  # ``k`` of ``k=v``, where CPython's keyword starts
            item = self._part(owner, part, index)
            if item is None:
                return None
            start = self._extent(item)[0]
            name = node.value  # type: ignore[attr-defined]
            return (start, start + len(name)) if self.text.startswith(name, start) else None
        if part == "":
            found = self._extent(owner)
            if isinstance(node, cst.Call) and not self._fits_call(node, found):
                self.failed = True
                return None
            return found if isinstance(node, cst.Call) else None
        if type(node) is cst.Tuple and len(node.lpar) == 1:  # type: ignore[attr-defined]
            item = self._part(owner, part, index)
            return None if item is None else self._inside_parentheses(
                node, *self._extent(item))  # type: ignore[arg-type]
        if isinstance(node, _OWN_BRACKETS) or getattr(node, "lpar", None):
            return None
        item = self._part(owner, part, index)
        if item is None:
            self.failed = True
            return None
        found = self._extent(item)
        if isinstance(node, cst.Name) and self.text[found[0]:found[1]] != node.value:
            self.failed = True
            return None
        return found

    def _anchor(self, owner: cst.CSTNode, noted: _Key) -> ast.AST | None:
        """The ast counterpart of a noted node, for :meth:`_descend`."""
        tree = self._tree()
        kind, ordinal, part, index = noted
        if tree is None or ordinal >= len(tree[kind]):
            return None
        item = tree[kind][ordinal]
        if kind == "stmt" or part == "":
            return item
        if part in ("func", "receiver", "arg", "decorator", "base", "default"):
            return self._part(item, part, index)
        return None

    def _descend(self, owner: cst.CSTNode, noted: _Key, node: cst.CSTNode,
                 ancestors: Sequence[cst.CSTNode], depth: int) -> Offsets | None:
        """The offsets of an expression below a noted node, read from the ast node found
        by stepping down both trees along the path to it (the walk's ancestors, then a
        search below the last of them); None where the trees cannot be paired up."""
        if not isinstance(node, cst.BaseExpression) or isinstance(node, cst.GeneratorExp) or (
                type(owner) is cst.If and depth and getattr(ancestors[depth - 1], "orelse",
                                                            None) is owner):
            return None  # an elif: its ast statement is found through its if
        path = list(ancestors[depth + 1:])
        if not path or path[-1] is not node:
            below = _path_to(path[-1] if path else owner, node)
            if below is None:
                return None
            path.extend(below)
        item = self._anchor(owner, noted)
        parent = owner
        if type(owner) in _SIMPLE and path:  # a line of small statements
            body = owner.body  # type: ignore[attr-defined]
            first = path[0]
            index = next((i for i, small in enumerate(body) if small is first), -1)
            tree = self._ast
            if index < 0 or tree is None or noted[1] + index >= len(tree["stmt"]):
                return None
            item, parent, path = tree["stmt"][noted[1] + index], first, path[1:]
        for child in path:
            if item is None:
                return None
            if type(parent) is cst.Attribute and child is parent.attr and child is node:
                # ``b`` of ``a.b``: CPython's attribute ends with it
                if not isinstance(item, ast.Attribute):
                    return None
                _, end = self._extent(item)
                name = parent.attr.value
                return (end - len(name), end) if self.text.startswith(name, end - len(name)) \
                    else None
            item = _step(parent, child, item)
            parent = child
        if item is None or not hasattr(item, "end_col_offset"):
            return None
        start, end = self._extent(item)
        if type(node) is cst.Tuple and node.lpar:
            return self._inside_parentheses(node, start, end)
        if type(node) is cst.Tuple and not node.elements:
            return None
        token = _first_token(node)
        if token is None or not self.text.startswith(token, start):
            return None
        return start, end

    def _inside_parentheses(self, node: cst.Tuple, start: int, end: int) -> Offsets | None:
        """A tuple in one pair of parentheses: CPython's extent takes them in, libcst's
        span is inside them and the whitespace they own."""
        if len(node.lpar) != 1 or self.text[start] != "(" or self.text[end - 1] != ")":
            return None
        after = _whitespace(node.lpar[0].whitespace_after)
        before = _whitespace(node.rpar[0].whitespace_before)
        if after is None or before is None or start + 1 + after > end - 1 - before:
            return None
        return start + 1 + after, end - 1 - before

    def _argument(self, node: cst.Arg, item: ast.AST) -> Offsets | None:
        """An argument with its star or keyword: CPython's ``Starred`` or ``keyword``
        extent; a plain one: its value's, unless in parentheses."""
        start, end = self._extent(item)
        if node.star:
            return (start, end) if self.text.startswith(node.star, start) else None
        if node.keyword is not None:
            return (start, end) if self.text.startswith(node.keyword.value, start) else None
        value = node.value
        if getattr(value, "lpar", None) or isinstance(value, _OWN_BRACKETS):
            return None
        first = _first_token(value)
        return (start, end) if first is not None and self.text.startswith(first, start) else None

    def _fits_call(self, call: cst.Call, found: Offsets) -> bool:
        head = _head(call.func)
        return self.text[found[1] - 1] == ")" and (
            head is None or self.text.startswith(head, found[0]))

    @staticmethod
    def _part(owner: ast.AST, part: str, index: int) -> ast.AST | None:
        items: list[ast.AST]
        if part == "func":
            return owner.func  # type: ignore[attr-defined,no-any-return]
        if part == "receiver":
            func = owner.func  # type: ignore[attr-defined]
            return func.value if isinstance(func, ast.Attribute) else None  # type: ignore[no-any-return]
        if part == "decorator":
            items = owner.decorator_list  # type: ignore[attr-defined]
        elif part in ("arg", "argnode", "keyword", "base"):
            items = _sorted([*owner.args, *owner.keywords] if part != "base"  # type: ignore[attr-defined]
                            else [*owner.bases, *owner.keywords])  # type: ignore[attr-defined]
        else:  # parameter defaults, in source order
            arguments = owner.args  # type: ignore[attr-defined]
            items = _sorted([*arguments.defaults, *(d for d in arguments.kw_defaults if d)])
        if index >= len(items):
            return None
        item = items[index]
        if part in ("argnode", "keyword"):
            return item
        return item.value if isinstance(item, (ast.Starred, ast.keyword)) else item

    def _name(self, name: cst.CSTNode, owner: ast.AST) -> Offsets | None:
        """A function's or class's name: after its keyword and the whitespace libcst keeps."""
        assert isinstance(name, cst.Name)
        start, _ = self._extent(owner)
        definition = self._definitions.get(id(name))
        if isinstance(definition, cst.FunctionDef):
            if definition.asynchronous is not None:
                start += len("async") + len(definition.asynchronous.whitespace_after.value)
            start += len("def") + len(definition.whitespace_after_def.value)
        elif isinstance(definition, cst.ClassDef):
            start += len("class") + len(definition.whitespace_after_class.value)
        if definition is None or not self.text.startswith(name.value, start):
            self.failed = True
            return None
        return start, start + len(name.value)

    def _regenerate(self, call: cst.Call, ancestors: Sequence[cst.CSTNode]) -> None:
        """Spans of every node inside a noted call, regenerated from the call's start."""
        self._done.add(id(call))
        start = self.offsets(call) if not call.lpar else None
        if start is not None and not self.failed:
            self._generate(call, start[0], ancestors)

    def _regenerate_part(self, part: cst.CSTNode, noted: _Key,
                         ancestors: Sequence[cst.CSTNode]) -> None:
        """Spans of every node inside a noted part of a call or definition (see
        :meth:`_add_call`), regenerated from its start; nothing for a part in parentheses,
        whose start CPython does not give (its owner is regenerated instead)."""
        self._done.add(id(part))
        start = self._part_start(part, noted)
        if start is not None and not self.failed:
            self._generate(part, start, ancestors, checked=True)

    def _part_start(self, part: cst.CSTNode, noted: _Key) -> int | None:
        """Where regenerating a noted part starts: CPython's start of it, or of the
        parentheses of a tuple (which CPython counts as the tuple's), or None."""
        known = self.spans.get(id(part))
        if known is not None:
            return known[0]
        if noted[2] == "argnode":  # ``*a``, ``k=v`` or ``v``: CPython starts where it does
            assert isinstance(part, cst.Arg)
            if not part.star and part.keyword is None and (
                    part.value.lpar or isinstance(part.value, _OWN_BRACKETS)):
                return None  # CPython's start is not the argument's
            item = self._item(noted)
            return None if item is None else self._extent(item)[0]
        if isinstance(part, cst.Tuple) and len(part.lpar) == 1:
            item = self._item(noted)
            start = None if item is None else self._extent(item)[0]
            return start if start is not None and self.text.startswith("(", start) else None
        found = self._from_ast(part, noted)
        return None if found is None else found[0]

    def _item(self, noted: _Key) -> ast.AST | None:
        """The ast node of a noted part of a call or definition, as :meth:`_part` finds
        it (None when the ast nodes do not fit)."""
        tree = self._tree()
        kind, ordinal, part, index = noted
        if tree is None or ordinal >= len(tree[kind]):
            return None
        return self._part(tree[kind][ordinal], part, index)

    def _regenerate_statement(self, statement: cst.CSTNode,
                              ancestors: Sequence[cst.CSTNode]) -> None:
        """Spans inside a noted statement, regenerated from the start of its first line:
        first its header only (``if test:``), and the whole statement when asked again."""
        tree = self._tree()
        if tree is None:
            return
        kind = type(statement)
        if kind is cst.If and ancestors and getattr(ancestors[-1], "orelse", None) is statement:
            self._done.add(id(statement))  # an elif: libcst writes it only within its if
            return
        _, ordinal, _, _ = self._noted[id(statement)]
        if ordinal >= len(tree["stmt"]):
            self.failed = True
            return
        first = tree["stmt"][ordinal]
        line = first.lineno  # type: ignore[attr-defined]
        decorators = getattr(statement, "decorators", ())
        skipped = len(statement.leading_lines)  # type: ignore[attr-defined]
        if decorators:
            line = first.decorator_list[0].lineno  # type: ignore[attr-defined]
            skipped += len(decorators[0].leading_lines)
        if line - 1 - skipped < 0:
            self.failed = True
            return
        start = self.line_starts[line - 1 - skipped]
        body = getattr(statement, "body", None)
        header_only = kind in _COMPOUND and id(statement) not in self._headers
        if header_only:
            self._headers.add(id(statement))
        else:
            self._done.add(id(statement))
        self._generate(statement, start, ancestors, id(body) if header_only else 0)

    def _generate(self, node: cst.CSTNode, start: int, ancestors: Sequence[cst.CSTNode],
                  stop_at: int = 0, checked: bool = False) -> None:
        """Regenerate ``node`` from offset ``start``, checking every token against the
        text, and keep the spans found. A token that differs means the ast positions do
        not fit (the walk is redone), unless ``checked``: then the start was only a
        guess, and nothing is kept."""
        indents = [self.module.default_indent if b.indent is None else b.indent
                   for b in ancestors if isinstance(b, cst.IndentedBlock)]
        state = _SpanState(default_indent=self.module.default_indent,
                           default_newline=self.module.default_newline, text=self.text,
                           offset=start, stop_at=stop_at)
        state.indent_tokens = indents
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, _RECURSION))
        try:
            node._codegen(state)
        except _Mismatch:
            self.failed = self.failed or not checked
            return
        except _Stop:
            pass
        finally:
            sys.setrecursionlimit(old_limit)
        for key, value in state.spans.items():
            self.spans.setdefault(key, value)
