"""Constant values the planner can compute without running the repository: literals,
arithmetic over known names, module-level constants, and configuration objects (a
dataclass or class with field defaults, such as ``GPTConfig``) whose fields a
constructor reads (``config.n_embd``)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
import libcst.matchers as m

from msready.analyzer.syntax import find_all, read_with


class _Unknown:
    """A value the analysis cannot tell. One instance, :data:`UNKNOWN`, which a pickled
    plan (see msready.skeletons.plan_cache) names instead of copying."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv, cst.Divide: operator.truediv, cst.Power: operator.pow,
    cst.Modulo: operator.mod,
}
# ``n *= k`` is ``n = n * k``.
_AUGMENTED: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply, cst.FloorDivideAssign: cst.FloorDivide,
    cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power, cst.ModuloAssign: cst.Modulo,
}
CallHook = Callable[[cst.Call | cst.Name, dict[str, object]], object]
# Builtins computed over known values (``dim_in + int(concat_ones)``, ``max(1, dim // 4)``).
_PURE: dict[str, Callable[..., Any]] = {
    "int": int, "float": float, "bool": bool, "abs": abs, "max": max, "min": min,
    "round": round, "len": len,
}
_STRING_TESTS = frozenset({"startswith", "endswith"})
OBJECT_KEY = "__msready_object__"
LIST_KEY = "__msready_list__"
TENSOR_KEY = "__msready_tensor__"


class ListValue(tuple[object, ...]):
    """A list literal of the repository (``args.input_size = [1, 28, 28]``): a tuple while
    msready works with it (hashable), a list again in the Cell's run, where the code may
    compare it with a list."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class DictValue:
    """A dictionary the repository builds from constants (``dict(depths=(3, 2), num_vit=1)``,
    ``{"l1": (3, 2, 6, 4)}``, ``model_cfgs["vovnet39a"]``): its items in order, hashable
    while msready works with it, a ``dict`` again in the Cell's run. An item whose value
    msready cannot compute is kept as :data:`UNKNOWN` (the key is there: ``pop`` of it
    gives no default), and such a dictionary is never handed to a Cell whole."""

    items: tuple[tuple[object, object], ...]

    def get(self, key: object) -> object:
        return dict(self.items).get(key, UNKNOWN)


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """An instance of a repository configuration class, built with ``kwargs``; with
    ``is_class``, the class itself, whose ``kwargs`` are the keywords a
    ``functools.partial`` binds (``partial(ConvNormAct, padding=0)``)."""

    module: str
    name: str
    fields: tuple[tuple[str, object], ...]
    kwargs: tuple[tuple[str, object], ...] = ()
    is_class: bool = False  # the class itself (``ResNet(BasicBlock, ...)``), not an instance
    # False for a ``partial`` some of whose keywords msready could not compute: it still
    # names the class a constructor builds (its input), but is never handed to a Cell
    complete: bool = True

    def get(self, attr: str) -> object:
        """A field's value, :data:`UNKNOWN` when the class does not define it."""
        return dict(self.fields).get(attr, UNKNOWN)

    def to_json(self) -> dict[str, object]:
        """How a child process rebuilds the object."""
        return {OBJECT_KEY: [self.module, self.name], "class": self.is_class,
                "kwargs": {k: to_json(v) for k, v in self.kwargs}}


@dataclass(frozen=True, slots=True)
class CallValue(ConfigValue):
    """What a module-level function of the repository returns when called with constant
    arguments (``decode_arch_def(arch_def, depth_multiplier)``): msready cannot compute
    it, the child process calls the translated function with ``kwargs``. Opaque here: no
    test over it is decided."""


@dataclass(frozen=True, slots=True)
class TensorValue:
    """A tensor of ones of ``shape`` that a constructor is handed (``group_matrix``, read
    as ``group_matrix.shape[0]``): each child builds it with its own framework."""

    shape: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        return {TENSOR_KEY: list(self.shape)}


def is_complete(value: object) -> bool:
    """False when ``value`` is unknown or holds a ``partial`` with keywords msready could
    not compute or a dictionary item it could not compute."""
    if value is UNKNOWN:
        return False
    if isinstance(value, ConfigValue):
        return value.complete and all(is_complete(v) for _, v in value.kwargs)
    if isinstance(value, tuple):
        return all(is_complete(v) for v in value)
    if isinstance(value, DictValue):
        return all(is_complete(v) for _, v in value.items)
    return True


def to_json(value: object) -> object:
    """A constructor argument as JSON (configuration objects as rebuild instructions)."""
    if isinstance(value, (ConfigValue, TensorValue)):
        return value.to_json()
    if isinstance(value, ListValue):
        return {LIST_KEY: [to_json(v) for v in value]}
    if isinstance(value, DictValue):
        return {str(k): to_json(v) for k, v in value.items}
    if isinstance(value, tuple):
        return [to_json(v) for v in value]
    return value


def evaluate(node: cst.BaseExpression, env: dict[str, object],
             call: CallHook | None = None) -> object:
    """The value of a small constant expression over ``env``, or :data:`UNKNOWN`."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return ast.literal_eval(node.value)
        except (ValueError, SyntaxError):
            return UNKNOWN
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        value = env.get(node.value, UNKNOWN)
        return call(node, env) if value is UNKNOWN and call is not None else value
    if isinstance(node, cst.Attribute):
        if m.matches(node.value, m.Name("self")):
            return env.get(f"self.{node.attr.value}", UNKNOWN)
        owner = evaluate(node.value, env, call)
        return owner.get(node.attr.value) if isinstance(owner, ConfigValue) else UNKNOWN
    if isinstance(node, (cst.Tuple, cst.List)):
        items = [evaluate(e.value, env, call) for e in node.elements]
        return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
    if isinstance(node, cst.UnaryOperation) and m.matches(node.operator, m.Minus()):
        value = evaluate(node.expression, env, call)
        return -value if isinstance(value, (int, float)) else UNKNOWN
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in _BINOPS:
        left, right = evaluate(node.left, env, call), evaluate(node.right, env, call)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            try:
                return _BINOPS[type(node.operator)](left, right)
            except (ArithmeticError, ValueError):
                return UNKNOWN
    if isinstance(node, cst.BooleanOperation):  # ``conv_block or ConvNormAct``
        left = evaluate(node.left, env, call)
        if left is UNKNOWN or (isinstance(left, ConfigValue) and not left.is_class):
            return UNKNOWN
        if isinstance(node.operator, cst.Or):  # a class is true, as in Python
            return left if left else evaluate(node.right, env, call)
        return evaluate(node.right, env, call) if left else left
    if isinstance(node, cst.Dict):
        return _dict_literal(node, env, call)
    if isinstance(node, cst.Subscript):  # ``model_cfgs[variant]``, ``depths['l1']``
        return _item(node, env, call)
    if isinstance(node, cst.Call) and m.matches(node.func, m.Name()):
        assert isinstance(node.func, cst.Name)
        if node.func.value == "dict" and "dict" not in env:
            return _dict_call(node, env, call)
        pure = _PURE.get(node.func.value) if node.func.value not in env else None
        if pure is not None:
            return _apply(pure, node, env, call)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in ("get", "pop") and 1 <= len(node.args) <= 2:
        held = evaluate(node.func.value, env, call)  # ``kwargs.pop('features_only', False)``
        key = evaluate(node.args[0].value, env, call) if isinstance(held, DictValue) \
            else UNKNOWN
        if key is not UNKNOWN and isinstance(held, DictValue):
            if key not in dict(held.items):
                return evaluate(node.args[1].value, env, call) if len(node.args) == 2 \
                    else None
            # an item a ``pop`` takes changes the dictionary: not a value here
            return held.get(key) if node.func.attr.value == "get" else UNKNOWN
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in _STRING_TESTS and len(node.args) == 1:
        owner = evaluate(node.func.value, env, call)  # ``variant.startswith('selecsls42')``
        if isinstance(owner, str):
            given = evaluate(node.args[0].value, env, call)
            if isinstance(given, (str, tuple)) and all(isinstance(g, str) for g in (
                    given if isinstance(given, tuple) else (given,))):
                return bool(getattr(owner, node.func.attr.value)(given))
    if isinstance(node, cst.Call) and call is not None:
        return call(node, env)
    return UNKNOWN


_COMPARE: dict[type[cst.BaseCompOp], Callable[[Any, Any], Any]] = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge, cst.Is: operator.is_, cst.IsNot: operator.is_not,
    cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b,
}


def truth(test: cst.BaseExpression, env: dict[str, object],
          call: CallHook | None = None) -> bool | None:
    """The value of a test over known values (a requirement's, a branch's); None when it
    cannot be told."""
    if isinstance(test, cst.Comparison):
        left = evaluate(test.left, env, call)
        for target in test.comparisons:
            right = evaluate(target.comparator, env, call)
            compare = _COMPARE.get(type(target.operator))
            if left is UNKNOWN or right is UNKNOWN or compare is None or \
                    isinstance(left, CallValue) or isinstance(right, CallValue):
                return None
            try:
                if not compare(left, right):
                    return False
            except TypeError:
                return None
            left = right
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth(test.expression, env, call)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = truth(test.left, env, call), truth(test.right, env, call)
        if isinstance(test.operator, cst.And):
            return False if False in (left, right) else None if None in (left, right) else True
        return True if True in (left, right) else None if None in (left, right) else False
    value = evaluate(test, env, call)  # ``if n % 2: raise``
    return bool(value) if isinstance(value, (int, float, str, tuple)) or value is None else None


def _dict_literal(node: cst.Dict, env: dict[str, object], call: CallHook | None) -> object:
    """``{"l1": (3, 2), **base}`` with keys and values it can compute."""
    items: dict[object, object] = {}
    for element in node.elements:
        if isinstance(element, cst.StarredDictElement):
            more = evaluate(element.value, env, call)
            if not isinstance(more, DictValue):
                return UNKNOWN
            items.update(more.items)
            continue
        assert isinstance(element, cst.DictElement)
        key, value = evaluate(element.key, env, call), _held(element.value, env, call)
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            return UNKNOWN
        items[key] = value
    return DictValue(tuple(items.items()))


def _held(node: cst.BaseExpression, env: dict[str, object], call: CallHook | None) -> object:
    """A dictionary's item: a list literal stays a list in the Cell's run (the code may
    add a list to it: ``cfg['stem_chs'] + [64]``)."""
    return as_written(node, evaluate(node, env, call))


def as_written(node: cst.BaseExpression, value: object) -> object:
    """``value`` with each list literal of ``node`` a list again (``arch_def = [['ds_r1'],
    ['ir_r2']]`` handed to a function that asserts ``isinstance(block_strings, list)``)."""
    if isinstance(node, (cst.List, cst.Tuple)) and isinstance(value, tuple) and \
            len(value) == len(node.elements) and \
            not any(isinstance(e, cst.StarredElement) for e in node.elements):
        items = tuple(as_written(e.value, v) for e, v in zip(node.elements, value, strict=True))
        return ListValue(items) if isinstance(node, cst.List) else items
    return value


def _dict_call(node: cst.Call, env: dict[str, object], call: CallHook | None) -> object:
    """``dict(base, num_vit=1, **kwargs)``: a dictionary, its items updated in order."""
    items: dict[object, object] = {}
    for i, arg in enumerate(node.args):
        value = _held(arg.value, env, call)
        if arg.keyword is not None:  # an item msready cannot compute is still there
            items[arg.keyword.value] = value
        elif arg.keyword is None and (arg.star == "**" or (i == 0 and not arg.star)) \
                and isinstance(value, DictValue):
            items.update(value.items)
        else:
            return UNKNOWN
    return DictValue(tuple(items.items()))


def _item_key(node: cst.Subscript, env: dict[str, object], call: CallHook | None) -> object:
    """The key of ``owner[key]`` when it is one known string or number."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return UNKNOWN
    key = evaluate(node.slice[0].slice.value, env, call)
    return key if isinstance(key, (str, int)) and not isinstance(key, bool) else UNKNOWN


def _item(node: cst.Subscript, env: dict[str, object], call: CallHook | None) -> object:
    """One item of a known dictionary, tuple or list by a known key or index."""
    key = _item_key(node, env, call)
    if key is UNKNOWN:
        return UNKNOWN
    owner = evaluate(node.value, env, call)
    if isinstance(owner, DictValue):
        return owner.get(key)
    if isinstance(owner, tuple) and isinstance(key, int) and -len(owner) <= key < len(owner):
        return owner[key]
    return UNKNOWN


def _apply(function: Callable[..., Any], node: cst.Call, env: dict[str, object],
           call: CallHook | None) -> object:
    """A builtin applied to known positional arguments, or :data:`UNKNOWN`."""
    if any(a.keyword is not None or a.star for a in node.args):
        return UNKNOWN
    values = [evaluate(a.value, env, call) for a in node.args]
    if not values or any(v is UNKNOWN or isinstance(v, ConfigValue) for v in values):
        return UNKNOWN
    try:
        return function(*values)
    except (TypeError, ValueError, ArithmeticError):
        return UNKNOWN


def evaluate_text(text: str, env: dict[str, object], call: CallHook | None = None) -> object:
    """:func:`evaluate` on source text."""
    try:
        return evaluate(cst.parse_expression(text), env, call)
    except cst.ParserSyntaxError:
        return UNKNOWN


def constants(body: Sequence[cst.BaseStatement],
              env: dict[str, object] | None = None,
              call: CallHook | None = None, forget: bool = False) -> dict[str, object]:
    """``NAME = <constant>`` assignments of a block, evaluated in order; with ``forget``,
    a name assigned a value that cannot be computed is no longer known
    (``norm_layer = get_norm_layer(norm_layer)`` no longer holds the string passed in)."""
    out = dict(env or {})
    changed = _mutated([stmt for stmt in body if not isinstance(stmt, cst.If)])
    for stmt in body:
        if isinstance(stmt, cst.If):
            branch = _branch(stmt, out, call)
            if branch is not None:  # ``if variant.startswith('selecsls42'):``, told
                out = constants(branch, out, call, forget)
                continue
            # not told: a dictionary it fills (``cfg['block'] = ...``) is no longer one
            # value, nor, with ``forget``, a name it assigns
            for name in _mutated([stmt]) | (bound_names(stmt) if forget else set()):
                out.pop(name, None)
            continue
        if not isinstance(stmt, cst.SimpleStatementLine):
            if forget:  # ``if norm_layer is None: norm_layer = LayerNorm``: it may change
                for name in bound_names(stmt):
                    out.pop(name, None)
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and small.value is not None:
                small = cst.Assign([cst.AssignTarget(small.target)], small.value)
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(
                    small.targets[0].target, cst.Name):
                value = _held(small.value, out, call)
                name = small.targets[0].target.value
                # a dictionary or list the block changes in place (``stages = []`` and
                # ``stages.append(blocks)`` in a loop) is not the value it starts as
                changing = isinstance(value, (DictValue, tuple)) and name in changed
                if value is not UNKNOWN and not changing:
                    out[name] = value
                elif forget or changing:
                    out.pop(name, None)
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(
                    target := small.targets[0].target, cst.Subscript) and isinstance(
                    target.value, cst.Name) and isinstance(
                    held := out.get(target.value.value), DictValue):
                # ``model_cfgs['b_evos'] = model_cfgs['b']``: the dictionary gains the item
                key = _item_key(target, out, call)
                value = evaluate(small.value, out, call)
                if key is UNKNOWN or value is UNKNOWN:
                    out.pop(target.value.value)
                else:
                    out[target.value.value] = DictValue(
                        tuple({**dict(held.items), key: value}.items()))
            elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) \
                    and type(small.operator) in _AUGMENTED:  # ``embed_dim *= num_heads``
                name = small.target.value
                value = evaluate(cst.BinaryOperation(
                    small.target, _AUGMENTED[type(small.operator)](), small.value), out, call) \
                    if name in out else UNKNOWN
                if value is not UNKNOWN:
                    out[name] = value
                else:
                    out.pop(name, None)
            elif forget:  # ``norm_layer, act = get_layers(norm_layer)``
                for name in bound_names(small):
                    out.pop(name, None)
    return out


def _branch(stmt: cst.If, env: dict[str, object], call: CallHook | None
            ) -> Sequence[cst.BaseStatement] | None:
    """The statements an ``if`` runs when its test can be told over ``env`` (an ``elif``
    is an ``if`` of its own), None when it cannot."""
    told = truth(stmt.test, env, call)
    if told is None:
        return None
    if told:
        chosen: cst.BaseSuite | cst.If | None = stmt.body
    else:
        chosen = stmt.orelse.body if isinstance(stmt.orelse, cst.Else) else stmt.orelse
    if chosen is None:
        return []
    if isinstance(chosen, cst.If):
        return [chosen]
    if isinstance(chosen, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(chosen.body)]
    assert isinstance(chosen, cst.IndentedBlock)
    return chosen.body


# The methods that change a dictionary or a list in place.
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                       "append", "extend", "insert", "remove", "reverse", "sort"})

_ITEM = m.Subscript(value=m.Name())
_LINE_WRITES = m.OneOf(m.AugAssign(target=_ITEM), m.Del(target=_ITEM))
_WRITES = m.OneOf(m.AugAssign(target=_ITEM), m.Del(target=_ITEM), m.AssignTarget(target=_ITEM))
_MUTATOR_CALLS = m.Call(func=m.Attribute(value=m.Name(), attr=m.Name(
    m.MatchIfTrue(lambda method: method in _MUTATORS))))


def _mutated(body: Sequence[cst.BaseStatement]) -> set[str]:
    """Names a block changes in place (``cfg['block'] = ...``, ``cfg.update(...)``,
    ``del cfg['x']``, ``stages.append(stage)``), anywhere in it: a dictionary or list
    built from constants there is not one value for the whole block."""
    names: set[str] = set()
    for stmt in body:
        # ``cfg['x'] = v`` on a line of its own is applied in order (see ``constants``)
        writes = _LINE_WRITES if isinstance(stmt, cst.SimpleStatementLine) else _WRITES
        for node in find_all(stmt, writes):
            assert isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.Del))
            target = node.target
            assert isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
            names.add(target.value.value)
        for node in find_all(stmt, _MUTATOR_CALLS):
            assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            assert isinstance(node.func.value, cst.Name)
            names.add(node.func.value.value)
    return names


class _Binder(cst.CSTVisitor):
    """Names a statement binds in its own scope (not inside functions or classes)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._target(element.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._target(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        return False


def bound_names(node: cst.CSTNode) -> set[str]:
    """The names ``node`` assigns in the scope it runs in."""
    binder = _Binder()
    read_with(node, binder)
    return binder.names


def class_fields(node: cst.ClassDef) -> list[tuple[str, object]]:
    """Class-level fields with constant defaults, in order (dataclass style)."""
    out: list[tuple[str, object]] = []
    for stmt in node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                value = evaluate(small.value, {}) if small.value is not None else UNKNOWN
                out.append((small.target.value, value))
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(
                    small.targets[0].target, cst.Name):
                out.append((small.targets[0].target.value, evaluate(small.value, {})))
    return out


def attributes_read(node: cst.CSTNode, name: str) -> set[str]:
    """Attributes read from a name inside a node (``config.n_embd`` -> ``n_embd``)."""
    found = find_all(node, m.Attribute(value=m.Name(name)))
    return {a.attr.value for a in found if isinstance(a, cst.Attribute)}


def self_constants(body: Sequence[cst.BaseStatement], env: dict[str, object],
                   call: CallHook | None = None) -> dict[str, object]:
    """``self.name = <constant>`` assignments of a constructor, as ``self.name`` keys."""
    out = dict(env)
    target = m.AssignTarget(m.Attribute(value=m.Name("self")))
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and m.matches(small, m.Assign(targets=[target])):
                attr = small.targets[0].target
                assert isinstance(attr, cst.Attribute)
                value = evaluate(small.value, out, call)
                if value is not UNKNOWN:
                    out[f"self.{attr.attr.value}"] = value
    return out
