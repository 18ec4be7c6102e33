"""The value analysis inside one file: what every expression holds, as far as the file tells.

The walk (:mod:`msready.analyzer.walk`) keeps, per function, an environment from local
names to :data:`~msready.analyzer.values.Expr` s, updated as assignments, loops, ``with``
items and ``list.append`` calls are walked (in source order, the newest assignment wins).
:meth:`LocalValues.expr` evaluates any expression against it. What the file cannot know
stays symbolic: a parameter (``("p", function, name)``), what a call of the repository
returns (``("c", path, call key)``), ``self.<attribute>`` (``("a", class, attribute)``) and
module-level names (``("g", dotted name)``). The repository solver
(:mod:`msready.analyzer.valueflow`) fills those in.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from msready.analyzer.syntax import literal_of, torch_result_kind
from msready.analyzer.values import (
    DATA,
    LOCAL_ENV,
    OTHER,
    PYTHON,
    SHAPE,
    SPARSE_CONSTRUCTORS,
    SPARSE_CONVERTERS,
    UNKNOWN,
    Expr,
    Truth,
    Value,
    apply,
    const,
    evaluate_op,
    instance,
    one,
    tensor,
    truth,
)
from msready.analyzer.values import (
    Kind as ValueKind,
)

if TYPE_CHECKING:
    from msready.analyzer.walk import FileWalker

TORCH_ROOTS = ("torch", "torchvision")
MAX_DEPTH = 24
# Libraries whose calls never run repository code: their results are other objects.
OTHER_FRAMEWORKS = frozenset({
    "mindspore", "tensorflow", "keras", "jax", "flax", "optax", "paddle", "mxnet", "oneflow",
    "sklearn", "xgboost", "lightgbm", "catboost", "gensim", "fasttext",
    "sentencepiece", "tokenizers", "spacy", "gym", "gymnasium", "pandas", "numpy", "scipy",
    "cv2", "PIL", "yaml", "tqdm", "matplotlib", "skimage", "imageio", "h5py", "lmdb"})
FOREIGN_ROOTS = frozenset(sys.stdlib_module_names) | OTHER_FRAMEWORKS
_BINARY = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/",
           cst.FloorDivide: "//", cst.Modulo: "%", cst.Power: "**", cst.BitAnd: "&",
           cst.BitOr: "|", cst.BitXor: "^", cst.LeftShift: "<<", cst.RightShift: ">>",
           cst.MatrixMultiply: "@"}
_AUGMENTED = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*",
              cst.DivideAssign: "/", cst.FloorDivideAssign: "//", cst.ModuloAssign: "%",
              cst.PowerAssign: "**", cst.BitAndAssign: "&", cst.BitOrAssign: "|",
              cst.BitXorAssign: "^", cst.MatrixMultiplyAssign: "@"}
_IDENTITY = (cst.Is, cst.IsNot, cst.In, cst.NotIn)
_PYTHON_NODES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Dict,
                 cst.Set, cst.DictComp, cst.SetComp, cst.Lambda)


def binary_operator(op: cst.BaseBinaryOp | cst.BaseAugOp) -> str:
    """The operator's symbol (``+``, ``&``, ...)."""
    return _BINARY.get(type(op), "") or _AUGMENTED.get(type(op), "?")  # type: ignore[arg-type]


def is_torch_metadata(target: str) -> bool:
    """``torch.__version__``, ``torch.version.cuda``: strings about torch, not tensors."""
    return "__" in target or ".version" in target


def torch_constant(target: str) -> Expr:
    """What a torch name used as a value holds: dtypes are constants (``torch.bool``);
    version strings are plain Python values."""
    last = target.rsplit(".", 1)[-1]
    if is_torch_metadata(target):
        return PYTHON
    if last[:1].islower() and not target.startswith(("torch.nn.", "torch.optim.")):
        return const(target)
    return OTHER


class LocalValues:
    """Evaluates expressions of the file being walked; see the module docstring."""

    def __init__(self, walker: FileWalker) -> None:
        self.walker = walker
        self._memo: dict[int, tuple[cst.BaseExpression, Expr]] = {}
        self._scratch: list[dict[str, Expr]] = []

    def release(self) -> None:
        """Let go of the walker and everything remembered (the file is done)."""
        self._memo.clear()
        self._scratch.clear()
        del self.walker

    def forget(self) -> None:
        """Drop remembered results (when a function's walk ends)."""
        self._memo.clear()

    # ----- environments ----------------------------------------------------------------

    def lookup(self, name: str) -> Expr:
        """What a name holds at this point of the walk."""
        for scratch in reversed(self._scratch):
            if name in scratch:
                return scratch[name]
        walker = self.walker
        for state in reversed(walker.function_states):
            if name in state.env:
                return state.env[name]
        if name in ("True", "False", "None"):
            return const({"True": True, "False": False, "None": None}[name])
        bound = walker.resolver.lookup(name)
        if bound is None:
            if any(scope.kind == "function" and name in scope.bindings
                   for scope in walker.resolver.scopes):
                return UNKNOWN  # a local assigned further down (in a loop)
            if walker.function_states:
                return ("g", f"{walker.module}.{name}")
            return walker.module_env.get(name, UNKNOWN)
        return self._qualified_value(bound)

    def _qualified_value(self, target: str) -> Expr:
        root = target.split(".")[0]
        if root in TORCH_ROOTS:
            return torch_constant(target)
        if root == "builtins" or root in FOREIGN_ROOTS:
            return OTHER
        return ("g", target)

    # ----- expressions -------------------------------------------------------------------

    def expr(self, node: cst.BaseExpression, depth: int = 0) -> Expr:
        """What ``node`` holds (a value, or symbolic where the file cannot tell)."""
        key = id(node)
        found = self._memo.get(key)
        if found is not None and found[0] is node:
            return found[1]
        if depth > MAX_DEPTH:
            return UNKNOWN
        value = self._expr(node, depth + 1)
        self._memo[key] = (node, value)  # the node kept alive: its id stays its own
        return value

    def local(self, node: cst.BaseExpression) -> Value:
        """What ``node`` holds as far as this file shows: what other functions decide
        counts as unknown."""
        return self.settle(self.expr(node))

    def settle(self, expr: Expr, depth: int = 0) -> Value:
        """A symbolic expression evaluated with every look-up outside the file unknown."""
        if isinstance(expr, frozenset):
            return expr
        if depth > MAX_DEPTH:
            return UNKNOWN
        head = expr[0]
        if head == "o":
            return evaluate_op(expr, [self.settle(e, depth + 1) for e in expr[3:]], LOCAL_ENV)
        if head == "l":
            for state in reversed(self.walker.function_states):
                if state.qualname == expr[2] and expr[3] < len(state.locals):
                    return self.settle(state.locals[expr[3]], depth + 1)
        return UNKNOWN

    def truth(self, predicate: str, node: cst.BaseExpression) -> Truth:
        """``predicate`` (see :data:`msready.analyzer.values.PREDICATES`) of ``node``."""
        return truth(predicate, self.expr(node))

    def _expr(self, node: cst.BaseExpression, depth: int) -> Expr:
        kind = type(node)
        if kind is cst.Name:
            return self.lookup(node.value)  # type: ignore[attr-defined]
        if kind is cst.SimpleString:
            literal, ok = literal_of(node, self.walker.text(node))
            return const(literal) if ok and len(str(literal)) <= 80 else PYTHON
        if kind is cst.Integer or kind is cst.Float:
            literal, ok = literal_of(node, self.walker.text(node))
            return const(literal) if ok else PYTHON
        if kind is cst.Attribute:
            return self._attribute(node, depth)  # type: ignore[arg-type]
        if kind is cst.Call:
            return self._call(node, depth)  # type: ignore[arg-type]
        if kind is cst.Subscript:
            return self._subscript(node, depth)  # type: ignore[arg-type]
        if kind is cst.BinaryOperation:
            return apply("bin", (binary_operator(node.operator),),  # type: ignore[attr-defined]
                         [self.expr(node.left, depth),  # type: ignore[attr-defined]
                          self.expr(node.right, depth)])  # type: ignore[attr-defined]
        if kind is cst.UnaryOperation:
            op = node.operator  # type: ignore[attr-defined]
            symbol = {cst.Not: "not", cst.BitInvert: "~", cst.Minus: "-", cst.Plus: "+"}[type(op)]
            return apply("un", (symbol,), [self.expr(node.expression, depth)])  # type: ignore[attr-defined]
        if kind is cst.Comparison:
            identity = any(isinstance(c.operator, _IDENTITY)
                           for c in node.comparisons)  # type: ignore[attr-defined]
            sides = [node.left, *(c.comparator for c in node.comparisons)]  # type: ignore[attr-defined]
            return apply("cmp", (identity,), [self.expr(s, depth) for s in sides])
        if kind is cst.BooleanOperation:
            return apply("join", (), [self.expr(node.left, depth),  # type: ignore[attr-defined]
                                      self.expr(node.right, depth)])  # type: ignore[attr-defined]
        if kind is cst.IfExp:
            return apply("join", (), [self.expr(node.body, depth),  # type: ignore[attr-defined]
                                      self.expr(node.orelse, depth)])  # type: ignore[attr-defined]
        if kind is cst.Tuple or kind is cst.List:
            return self._sequence(node, depth)  # type: ignore[arg-type]
        if kind is cst.ListComp or kind is cst.GeneratorExp:
            return self._comprehension(node, depth)  # type: ignore[arg-type]
        if kind is cst.NamedExpr:
            return self.expr(node.value, depth)  # type: ignore[attr-defined]
        if kind is cst.Await:
            return self.expr(node.expression, depth)  # type: ignore[attr-defined]
        if isinstance(node, _PYTHON_NODES):
            return PYTHON
        return UNKNOWN

    def _sequence(self, node: cst.Tuple | cst.List, depth: int) -> Expr:
        parts: list[Expr] = []
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                return apply("seq", (False,), [apply("elem", (None,), [self.expr(
                    element.value, depth)]), *parts])
            parts.append(self.expr(element.value, depth))
        if isinstance(node, cst.Tuple) and all(isinstance(p, frozenset) and len(p) == 1
                                               and next(iter(p)).kind is ValueKind.CONST
                                               for p in parts):
            return const(tuple(next(iter(p)).const for p in parts))  # type: ignore[union-attr]
        return apply("seq", (True,), parts)

    def _comprehension(self, node: cst.ListComp | cst.GeneratorExp, depth: int) -> Expr:
        scratch: dict[str, Expr] = {}
        self._scratch.append(scratch)
        saved, self._memo = self._memo, {}  # names mean something else inside
        try:
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                for name, part in self.unpack(comp.target, self.expr(comp.iter, depth),
                                              iterate=True):
                    scratch[name] = part
                comp = comp.inner_for_in
            return apply("seq", (False,), [self.expr(node.elt, depth)])
        finally:
            self._scratch.pop()
            self._memo = saved

    def _attribute(self, node: cst.Attribute, depth: int) -> Expr:
        walker = self.walker
        base = node.value
        if isinstance(base, cst.Name) and base.value == "self" and walker.function_states:
            state = walker.function_states[-1]
            local = state.env.get(f"self.{node.attr.value}")
            if local is not None:
                return local
            if state.class_qualname is not None:
                return ("a", state.class_qualname, node.attr.value)
        target = walker.qualify(node)
        if target is not None:
            return self._qualified_value(target)
        return apply("attr", (node.attr.value,), [self.expr(base, depth)])

    def _subscript(self, node: cst.Subscript, depth: int) -> Expr:
        base = self.expr(node.value, depth)
        if len(node.slice) != 1:
            index: Expr = apply("seq", (True,), [self._slice_bound(e.slice, depth)
                                                 for e in node.slice])
            is_slice = any(isinstance(e.slice, cst.Slice) for e in node.slice)
            if any(isinstance(e.slice, cst.Index) and self._is_mask_like(e.slice.value, depth)
                   for e in node.slice):
                return apply("sub", (False,), [base, self.expr(
                    next(e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)
                         and self._is_mask_like(e.slice.value, depth)), depth)])
            return apply("sub", (is_slice,), [base, index])
        piece = node.slice[0].slice
        if isinstance(piece, cst.Index):
            return apply("sub", (False,), [base, self.expr(piece.value, depth)])
        return apply("sub", (True,), [base, self._slice_bound(piece, depth)])

    def _is_mask_like(self, node: cst.BaseExpression, depth: int) -> bool:
        value = self.expr(node, depth)
        return not isinstance(value, frozenset) or any(
            a.kind is ValueKind.TENSOR for a in value)

    def _slice_bound(self, piece: cst.BaseSlice, depth: int) -> Expr:
        if isinstance(piece, cst.Index):
            return self.expr(piece.value, depth)
        bounds = [b for b in (piece.lower, piece.upper) if b is not None]  # type: ignore[attr-defined]
        if not bounds:
            return SHAPE
        return apply("join", (), [self.expr(b, depth) for b in bounds])

    # ----- calls ----------------------------------------------------------------------

    def call_args(self, call: cst.Call, depth: int = 0) -> tuple[list[Expr], tuple[str, ...]]:
        """The arguments' values, positional first then keyword, and the keywords' names."""
        positional: list[Expr] = []
        keyword: list[Expr] = []
        names: list[str] = []
        for arg in call.args:
            value = self.expr(arg.value, depth)
            if arg.star == "*":
                value = apply("elem", (None,), [value])
            if arg.keyword is not None:
                keyword.append(value)
                names.append(arg.keyword.value)
            elif arg.star != "**":
                positional.append(value)
        return positional + keyword, tuple(names)

    def _call(self, call: cst.Call, depth: int) -> Expr:
        walker = self.walker
        func = call.func
        target = walker.qualify(func)
        if target is not None:
            root = target.split(".")[0]
            if root in TORCH_ROOTS:
                args, names = self.call_args(call, depth)
                if is_torch_metadata(target):
                    return PYTHON  # torch.__version__.split("."): strings, not tensors
                if target.startswith("torch.Tensor."):
                    return tensor()
                if target in SPARSE_CONSTRUCTORS:
                    walker.result.makes_sparse = True
                return apply("torch", (target, names, torch_result_kind(target)), args)
            if root == "builtins" or target.startswith("math."):
                args, _ = self.call_args(call, depth)
                return apply("builtin", (target,), args)
            if target == "argparse.ArgumentParser":
                return instance(target)
            if root in FOREIGN_ROOTS:
                return OTHER
            return self.call_ref(call)
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if (isinstance(receiver, cst.Name) and receiver.value == "self"
                    and walker.function_states) or (
                    isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
                    and receiver.func.value == "super"):
                return self.call_ref(call)
            args, names = self.call_args(call, depth)
            if func.attr.value in SPARSE_CONVERTERS:
                walker.result.makes_sparse = True
            return apply("method", (func.attr.value, names), [self.expr(receiver, depth), *args])
        if isinstance(func, cst.Name):
            return self.call_ref(call)
        return UNKNOWN

    def call_ref(self, call: cst.Call) -> Expr:
        """What a call of (possibly) repository code returns: the solver's look-up."""
        return ("c", self.walker.path, self.walker.call_key(call))

    # ----- targets ------------------------------------------------------------------------

    def unpack(self, target: cst.BaseExpression, value: Expr, iterate: bool = False,
               ) -> Iterator[tuple[str, Expr]]:
        """(name, what it receives) for an assignment or loop target."""
        if iterate:
            value = apply("elem", (None,), [value])
        if isinstance(target, cst.Name):
            yield target.value, value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                if isinstance(element, cst.StarredElement):
                    yield from self.unpack(element.value, apply("seq", (False,), [
                        apply("elem", (None,), [value])]))
                else:
                    yield from self.unpack(element.value, apply("elem", (i,), [value]))
        elif isinstance(target, cst.StarredElement):
            yield from self.unpack(target.value, value)

    def loop_values(self, node: cst.For) -> Iterator[tuple[str, Expr]]:
        """What a ``for`` loop's names hold, with ``enumerate`` and ``zip`` looked through."""
        iterable = node.iter
        target = node.target
        if isinstance(iterable, cst.Call) and self.walker.qualify(iterable.func) in (
                "builtins.enumerate", "builtins.zip") and isinstance(target, (cst.Tuple,
                                                                          cst.List)):
            is_zip = self.walker.qualify(iterable.func) == "builtins.zip"
            sources: list[Expr] = [self.expr(a.value) for a in iterable.args
                                   if a.keyword is None]
            parts: list[Expr] = (sources if is_zip else [SHAPE, *sources[:1]])
            parts = [p if (not is_zip and i == 0) else apply("elem", (None,), [p])
                     for i, p in enumerate(parts)]
            if len(parts) == len(target.elements):
                for element, part in zip(target.elements, parts, strict=True):
                    yield from self.unpack(element.value, part)
                return
        yield from self.unpack(target, self.expr(iterable), iterate=True)


def annotation_value(annotation: str | None) -> Expr | None:
    """What a parameter annotated with a (qualified) type holds: tensors for torch tensor
    types, ints for ``int``."""
    if annotation is None:
        return None
    if annotation in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
                      "torch.nn.Parameter"):
        return tensor("int" if annotation == "torch.LongTensor" else "")
    if annotation == "torch.BoolTensor":
        return tensor("bool")
    return None


def option_value(call: cst.Call, text: Callable[[cst.CSTNode], str]
                 ) -> tuple[str, Expr] | None:
    """``(dest, default)`` of an argparse ``add_argument`` call, or None."""
    flags: list[str] = []
    default: Expr | None = None
    dest: str | None = None
    action = ""
    for arg in call.args:
        if arg.keyword is None:
            if isinstance(arg.value, cst.SimpleString):
                literal, ok = literal_of(arg.value, text(arg.value))
                if ok and isinstance(literal, str):
                    flags.append(literal)
            continue
        name = arg.keyword.value
        if name == "default":
            literal, ok = literal_of(arg.value, text(arg.value))
            default = const(literal) if ok else UNKNOWN
        elif name == "dest" and isinstance(arg.value, cst.SimpleString):
            literal, ok = literal_of(arg.value, text(arg.value))
            dest = literal if ok and isinstance(literal, str) else None
        elif name == "action" and isinstance(arg.value, cst.SimpleString):
            literal, ok = literal_of(arg.value, text(arg.value))
            action = literal if ok and isinstance(literal, str) else ""
    if dest is None:
        longs = [f for f in flags if f.startswith("--")]
        chosen = longs[0] if longs else (flags[0] if flags else "")
        dest = chosen.lstrip("-").replace("-", "_")
    if not dest:
        return None
    if default is None:
        default = const(action == "store_false") if action in ("store_true",
                                                                "store_false") else const(None)
    return dest, default


__all__ = ["DATA", "LocalValues", "annotation_value", "one", "option_value"]
