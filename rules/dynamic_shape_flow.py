"""Local data flow for the dynamic-shape rules: what a value is made of.

Each predicate follows a local name to the expression last assigned to it (through
``ctx.value_of``) and looks at how that expression was computed:

- a *boolean mask*: a comparison, ``~``, ``&``, ``|``, ``.bool()``, ``torch.isnan``,
  ``.eq()`` / ``.gt()``, or a creation call with ``dtype=torch.bool``;
- a *variable-length* tensor: the result of ``nonzero`` / ``masked_select`` / ``unique`` /
  one-argument ``where``, of boolean-mask indexing, or of a slice with runtime bounds;
- a *runtime value*: a number read from tensor data (``.item()``, ``int(t)``, a reduction
  such as ``mask.sum()``, the length of a variable-length tensor);
- a *shape value*: ``x.size(1)``, ``x.shape[2]``, ``len(x)``, constants and their sums.

Names that cannot be followed (parameters, attributes) count as neither: a rule reports
only what the flow proves. One exception: a parameter that a call in the same file passes
a boolean mask to is a mask inside that function.
"""

from __future__ import annotations

import weakref

import libcst as cst
import libcst.matchers as m

from msready.rules.base import FileContext
from msready.rules.dynamic_shape_calls import (
    positional,
    receiver,
    torch_api,
)

MAX_DEPTH = 12
SHAPE_METHODS = frozenset({"size", "dim", "numel", "nelement", "ndimension", "stride",
                           "element_size", "get_device"})
SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"})
VARLEN_APIS = frozenset({"nonzero", "argwhere", "masked_select", "unique",
                         "unique_consecutive"})
# Non-torch functions (fully qualified) whose result length depends on the data.
VARLEN_TARGETS = frozenset({
    f"torchvision.ops.{module}{name}" for module in ("", "boxes.")
    for name in ("nms", "batched_nms", "remove_small_boxes")})
BOOL_APIS = frozenset({
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isin", "isclose", "isreal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "signbit", "bool",
    "eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "bernoulli",
})
# Methods that keep what a tensor holds (a mask stays a mask, an index list stays one).
KEEP_APIS = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "clone", "detach",
    "cpu", "cuda", "t", "expand", "expand_as", "view_as", "reshape_as", "permute",
    "transpose", "to", "requires_grad_",
})
INDEX_KEEP_APIS = KEEP_APIS | {"long", "int", "type_as", "sort", "argsort"}
REDUCTION_APIS = frozenset({
    "sum", "max", "min", "amax", "amin", "argmax", "argmin", "count_nonzero", "mean",
    "prod", "any", "all", "norm", "median", "mode", "nansum", "std", "var", "ceil",
    "floor", "round",
})
DATA_METHODS = frozenset({"item", "tolist"})
NUMBER_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.round",
                             "builtins.abs", "math.ceil", "math.floor", "math.sqrt"})
MINMAX_BUILTINS = frozenset({"builtins.min", "builtins.max", "builtins.sum"})
TEST_APIS = frozenset({"any", "all", "item", "equal", "is_nonzero", "allclose"})
# Namespaces whose functions return tensors; other torch sub-namespaces (torch.cuda,
# torch.jit, torch.distributed, ...) mostly answer questions with Python values.
TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
NON_TENSOR_METHODS = SHAPE_METHODS | DATA_METHODS | frozenset({
    "data_ptr", "type", "tolist", "numpy", "storage", "untyped_storage", "dim_order",
    "__len__", "element_size", "nbytes", "itemsize", "names", "qscheme", "storage_offset",
    "q_scale", "q_zero_point", "layout"})
NON_TENSOR_FUNCTIONS = frozenset({"numel", "typename", "device", "dtype", "Size",
                                  "compile", "no_grad", "enable_grad", "manual_seed",
                                  "set_grad_enabled", "inference_mode", "load", "save"})
_BIT_OPS = m.BitAnd() | m.BitOr() | m.BitXor()
_IDENTITY_OPS = m.Is() | m.IsNot() | m.In() | m.NotIn()
_PYTHON_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
                    cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Tuple)


_FLOWS: weakref.WeakKeyDictionary[FileContext, Flow] = weakref.WeakKeyDictionary()
KINDS = ("python", "shape", "bool", "varlen", "runtime_scalar", "runtime")


class Flow:
    """Predicates over one file's local data flow, bound to the walking context.

    A local reassigned from itself (``keep = keep.squeeze(1)``, ``mask = mask.view(-1)``)
    has only its newest value in ``ctx.value_of``; what the earlier value was is kept here
    per kind, recorded when each assignment has been walked (:meth:`note_assign`).
    """

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.known: dict[str, set[tuple[str | None, str]]] = {kind: set() for kind in KINDS}
        self._noted: set[int] = set()
        # Functions of this file: their parameters (without self), the classes held by
        # ``self.<attr>``, and the (function, parameter) that receive a boolean mask from a
        # call seen so far, with the calling function.
        self.params: dict[str, list[str]] = {}
        self.attr_classes: dict[tuple[str, str], str] = {}
        self.mask_args: dict[tuple[str, int | str], str] = {}
        self._callees: dict[int, str | None] = {}

    @classmethod
    def of(cls, ctx: FileContext) -> Flow:
        """The one flow of the file being walked, shared by every dynamic-shape rule."""
        try:
            flow = _FLOWS.get(ctx)
            if flow is None:
                flow = _FLOWS[ctx] = cls(ctx)
        except TypeError:  # a context that cannot be weakly referenced
            return cls(ctx)
        return flow

    def note_assign(self, node: cst.Assign) -> None:
        """Record what each plain local target of ``node`` now holds (once per node)."""
        if id(node) in self._noted:
            return
        self._noted.add(id(node))
        self._note_attribute(node)
        names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        if not names:
            return
        checks = {"python": self.is_python, "shape": self.is_shape, "bool": self.is_bool,
                  "varlen": self.is_varlen, "runtime_scalar": self.is_runtime_scalar,
                  "runtime": self.is_runtime}
        for kind, check in checks.items():
            holds = check(node.value)
            for name in names:
                key = (self.ctx.function, name)
                if holds:
                    self.known[kind].add(key)
                else:
                    self.known[kind].discard(key)

    # ----- masks passed between functions of this file ---------------------------------

    def _note_attribute(self, node: cst.Assign) -> None:
        """``self.head = Head(...)``: calls of ``self.head(...)`` run ``Head.forward``."""
        target = node.targets[0].target if len(node.targets) == 1 else None
        cls = self.ctx.class_name
        if (isinstance(target, cst.Attribute) and m.matches(target.value, m.Name("self"))
                and isinstance(node.value, cst.Call) and cls is not None):
            held = self.ctx.call_target(node.value)
            if held is not None and held.startswith(self.ctx.module + "."):
                self.attr_classes[(cls, target.attr.value)] = held

    def note_function(self, node: cst.FunctionDef) -> None:
        """Record the parameters of the function being entered (``self`` dropped)."""
        function = self.ctx.function
        if function is None or function in self.params:
            return
        params = node.params
        names = [p.name.value for p in (*params.posonly_params, *params.params)]
        parents = self.ctx.ancestors
        static = any(m.matches(d.decorator, m.Name("staticmethod")) for d in node.decorators)
        if len(parents) > 2 and isinstance(parents[-3], cst.ClassDef) and names and not static:
            names = names[1:]
        self.params[function] = names + [p.name.value for p in params.kwonly_params]

    def callee(self, call: cst.Call) -> str | None:
        """The function of this file a call runs, if the file tells (once per call)."""
        key = id(call)
        if key not in self._callees:
            self._callees[key] = self._callee(call)
        return self._callees[key]

    def _callee(self, call: cst.Call) -> str | None:
        func = call.func
        cls = self.ctx.class_name
        if isinstance(func, cst.Attribute) and m.matches(func.value, m.Name("self")) and cls:
            held = self.attr_classes.get((cls, func.attr.value))
            return f"{held}.forward" if held else f"{cls}.{func.attr.value}"
        target = self.ctx.call_target(call)
        if target is not None and target.startswith(self.ctx.module + "."):
            return target
        return None

    def note_call(self, call: cst.Call) -> str | None:
        """Record the boolean masks a call passes to a function of this file; returns the
        callee (once per call node)."""
        callee = self.callee(call)
        if callee is None or id(call) in self._noted:
            return callee
        self._noted.add(id(call))
        position = 0
        for arg in call.args:
            if arg.star:
                break
            key: int | str = arg.keyword.value if arg.keyword is not None else position
            position += arg.keyword is None
            if self.is_bool(arg.value):
                self.mask_args.setdefault((callee, key), self.ctx.function or "")
        return callee

    def mask_source(self, function: str | None, name: str) -> str | None:
        """The caller that passes a boolean mask to parameter ``name`` of ``function``."""
        if function is None:
            return None
        params = self.params.get(function, [])
        found = self.mask_args.get((function, name))
        if found is None and name in params:
            found = self.mask_args.get((function, params.index(name)))
        return found

    def _recall(self, expr: cst.BaseExpression, seen: frozenset[str], kind: str
                ) -> bool | None:
        """For a name met again while following its own value: what it held before."""
        if isinstance(expr, cst.Name) and expr.value in seen:
            return (self.ctx.function, expr.value) in self.known[kind]
        return None

    def _follow(self, expr: cst.BaseExpression, seen: frozenset[str]
                ) -> tuple[cst.BaseExpression, frozenset[str]] | None:
        """The value behind a local name; None for a name without a known value."""
        if not isinstance(expr, cst.Name) or expr.value in seen:
            return None
        value = self.ctx.value_of(expr.value)
        if value is None or value is expr:
            return None
        return value, seen | {expr.value}

    def _args_of(self, call: cst.Call) -> list[cst.BaseExpression]:
        return [a.value for a in call.args]

    # ----- python values -----------------------------------------------------------

    def is_python(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                  depth: int = 0) -> bool:
        """True for a Python container or string (a literal or a ``list()``-like call)."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, _PYTHON_LITERALS):
            return True
        if isinstance(expr, cst.Call):
            target = self.ctx.qualify(expr.func)
            return target in ("builtins.list", "builtins.dict", "builtins.tuple",
                              "builtins.str", "builtins.sorted", "builtins.range")
        recalled = self._recall(expr, seen, "python")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_python(nxt[0], nxt[1], depth + 1)

    # ----- shapes --------------------------------------------------------------------

    def is_shape(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                 depth: int = 0) -> bool:
        """True for a number computed only from constants and tensor shapes."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, (cst.Integer, cst.Float)):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return self.is_shape(expr.expression, seen, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return (self.is_shape(expr.left, seen, depth + 1)
                    and self.is_shape(expr.right, seen, depth + 1))
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in SHAPE_ATTRS
        if isinstance(expr, cst.Subscript):
            base = expr.value
            if isinstance(base, cst.Attribute) and base.attr.value in SHAPE_ATTRS:
                return not self.is_varlen(base.value, seen, depth + 1)
            return isinstance(base, cst.Call) and self._is_shape_call(base, seen, depth)
        if isinstance(expr, cst.Call):
            return self._is_shape_call(expr, seen, depth)
        recalled = self._recall(expr, seen, "shape")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_shape(nxt[0], nxt[1], depth + 1)

    def _is_shape_call(self, call: cst.Call, seen: frozenset[str], depth: int) -> bool:
        """``x.size(1)`` / ``len(x)``, unless ``x``'s own length depends on data."""
        func = call.func
        if (isinstance(func, cst.Attribute) and func.attr.value in SHAPE_METHODS
                and self.ctx.qualify(func) is None):
            return not self.is_varlen(func.value, seen, depth + 1)
        if self.ctx.qualify(func) == "builtins.len":
            return not (call.args and self.is_varlen(call.args[0].value, seen, depth + 1))
        return False

    # ----- boolean masks ---------------------------------------------------------------

    def is_bool(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                depth: int = 0) -> bool:
        """True when the expression is (by local flow) a boolean mask tensor."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.Comparison):
            if any(m.matches(c.operator, _IDENTITY_OPS) for c in expr.comparisons):
                return False
            sides = [expr.left, *(c.comparator for c in expr.comparisons)]
            return not all(self.is_shape(s, seen, depth + 1) or self.is_python(s, seen, depth + 1)
                           or self.is_runtime_scalar(s, seen, depth + 1) for s in sides)
        if m.matches(expr, m.UnaryOperation(operator=m.BitInvert())):
            assert isinstance(expr, cst.UnaryOperation)
            inner = expr.expression
            if self.is_bool(inner, seen, depth + 1):
                return True
            return isinstance(inner, cst.Name) and self.ctx.value_of(inner.value) is None
        if m.matches(expr, m.BinaryOperation(operator=_BIT_OPS)):
            assert isinstance(expr, cst.BinaryOperation)
            return (self.is_bool(expr.left, seen, depth + 1)
                    or self.is_bool(expr.right, seen, depth + 1))
        if isinstance(expr, cst.Call):
            return self._is_bool_call(expr, seen, depth)
        if isinstance(expr, cst.Subscript):
            return self.is_bool(expr.value, seen, depth + 1)
        if (isinstance(expr, cst.Name) and self.ctx.value_of(expr.value) is None
                and self.mask_source(self.ctx.function, expr.value) is not None):
            return True
        recalled = self._recall(expr, seen, "bool")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_bool(nxt[0], nxt[1], depth + 1)

    def _is_bool_call(self, call: cst.Call, seen: frozenset[str], depth: int) -> bool:
        api = torch_api(self.ctx, call)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self.ctx.qualify(arg.value) == "torch.bool"
        if api is None:
            return False
        name, is_method = api
        if name in BOOL_APIS:
            return True
        if name in ("to", "type") and any(self.ctx.qualify(a) == "torch.bool"
                                          for a in self._args_of(call)):
            return True
        if is_method and name in KEEP_APIS:
            inner = receiver(call)
            return inner is not None and self.is_bool(inner, seen, depth + 1)
        return False

    # ----- variable-length tensors -------------------------------------------------------

    def is_varlen(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                  depth: int = 0) -> bool:
        """True for a tensor whose length depends on data (``nonzero`` results, ``x[mask]``,
        ``order[:n]`` with a runtime ``n``)."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            api = torch_api(self.ctx, expr)
            if api is None:
                return self.ctx.call_target(expr) in VARLEN_TARGETS
            name, is_method = api
            if name in VARLEN_APIS:
                return True
            args = positional(expr)
            if name == "where" and not is_method and args is not None and len(args) == 1:
                return True
            inner = receiver(expr)
            return (is_method and name in INDEX_KEEP_APIS and inner is not None
                    and self.is_varlen(inner, seen, depth + 1))
        if isinstance(expr, cst.Subscript):
            if self.is_varlen(expr.value, seen, depth + 1):
                return True
            return any(self.element_is_mask(e, seen, depth) or self.element_is_runtime_slice(
                e, seen, depth) for e in expr.slice)
        recalled = self._recall(expr, seen, "varlen")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_varlen(nxt[0], nxt[1], depth + 1)

    def element_is_mask(self, element: cst.SubscriptElement, seen: frozenset[str] = frozenset(),
                        depth: int = 0) -> bool:
        """True for a subscript element that is a boolean mask."""
        return isinstance(element.slice, cst.Index) and self.is_bool(
            element.slice.value, seen, depth + 1)

    def element_is_runtime_slice(self, element: cst.SubscriptElement,
                                 seen: frozenset[str] = frozenset(), depth: int = 0) -> bool:
        """True for a ``a:b`` slice with a bound read from tensor data."""
        piece = element.slice
        if not isinstance(piece, cst.Slice):
            return False
        return any(b is not None and self.is_runtime(b, seen, depth + 1)
                   for b in (piece.lower, piece.upper))

    # ----- runtime numbers --------------------------------------------------------------

    def is_runtime_scalar(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                          depth: int = 0) -> bool:
        """True for a Python number read from tensor data (``.item()``, ``int(t.sum())``,
        ``len(keep)`` of a variable-length ``keep``)."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.BinaryOperation):
            return (self.is_runtime_scalar(expr.left, seen, depth + 1)
                    or self.is_runtime_scalar(expr.right, seen, depth + 1))
        if isinstance(expr, cst.UnaryOperation):
            return self.is_runtime_scalar(expr.expression, seen, depth + 1)
        if isinstance(expr, cst.Subscript):
            base = expr.value
            return (isinstance(base, cst.Attribute) and base.attr.value == "shape"
                    and self.is_varlen(base.value, seen, depth + 1)) or (
                self.is_runtime_scalar(base, seen, depth + 1))
        if isinstance(expr, cst.Call):
            return self._is_runtime_scalar_call(expr, seen, depth)
        recalled = self._recall(expr, seen, "runtime_scalar")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_runtime_scalar(nxt[0], nxt[1], depth + 1)

    def _is_runtime_scalar_call(self, call: cst.Call, seen: frozenset[str], depth: int) -> bool:
        target = self.ctx.qualify(call.func)
        args = self._args_of(call)
        if target in NUMBER_BUILTINS:
            return bool(args) and self.is_runtime(args[0], seen, depth + 1)
        if target in MINMAX_BUILTINS:
            return any(self.is_runtime(a, seen, depth + 1) for a in args)
        if target == "builtins.len":
            return bool(args) and self.is_varlen(args[0], seen, depth + 1)
        api = torch_api(self.ctx, call)
        if api is None or not api[1]:
            return False
        inner = receiver(call)
        if api[0] in DATA_METHODS:
            return True
        return (api[0] in SHAPE_METHODS and inner is not None
                and self.is_varlen(inner, seen, depth + 1))

    def is_runtime(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                   depth: int = 0) -> bool:
        """True for a number or a 0-d tensor whose value is read from tensor data: a runtime
        scalar, or a reduction such as ``mask.sum()`` / ``scores.argmax()``."""
        if depth > MAX_DEPTH:
            return False
        if self.is_runtime_scalar(expr, seen, depth):
            return True
        if isinstance(expr, cst.BinaryOperation):
            return (self.is_runtime(expr.left, seen, depth + 1)
                    or self.is_runtime(expr.right, seen, depth + 1))
        if isinstance(expr, cst.Call):
            api = torch_api(self.ctx, expr)
            if api is None:
                return False
            if api[0] in REDUCTION_APIS:
                return True
            inner = receiver(expr)
            return (api[1] and api[0] in KEEP_APIS | {"long", "int"} and inner is not None
                    and self.is_runtime(inner, seen, depth + 1))
        recalled = self._recall(expr, seen, "runtime")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self.is_runtime(nxt[0], nxt[1], depth + 1)

    # ----- conditions ---------------------------------------------------------------------

    def is_tensor_test(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset(),
                       depth: int = 0) -> bool:
        """True for a condition whose truth is read from tensor values at run time."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.BooleanOperation):
            return (self.is_tensor_test(expr.left, seen, depth + 1)
                    or self.is_tensor_test(expr.right, seen, depth + 1))
        if m.matches(expr, m.UnaryOperation(operator=m.Not())):
            assert isinstance(expr, cst.UnaryOperation)
            return self.is_tensor_test(expr.expression, seen, depth + 1)
        if isinstance(expr, cst.Comparison):
            if any(m.matches(c.operator, _IDENTITY_OPS) for c in expr.comparisons):
                return False
            sides = [expr.left, *(c.comparator for c in expr.comparisons)]
            if any(self._is_constant(s) for s in sides):
                return False  # compared with a string, a container or torch.float32
            return any(self._is_tensor_value(s, seen, depth + 1) for s in sides)
        if isinstance(expr, cst.Call):
            api = torch_api(self.ctx, expr)
            if api is not None and api[0] in TEST_APIS:
                return True
        return self._is_tensor_value(expr, seen, depth + 1)

    def _is_constant(self, expr: cst.BaseExpression) -> bool:
        """A string or container literal, or a torch constant (``torch.float32``)."""
        if isinstance(expr, _PYTHON_LITERALS):
            return True
        return isinstance(expr, cst.Attribute) and (self.ctx.qualify(expr) or "").startswith(
            "torch.")

    def _is_tensor_value(self, expr: cst.BaseExpression, seen: frozenset[str], depth: int
                         ) -> bool:
        """True for a tensor computed from data (not a flag such as
        ``torch.cuda.is_available()`` or a comparison of unknown Python values)."""
        if depth > MAX_DEPTH:
            return False
        if self.is_shape(expr, seen, depth) or self.is_python(expr, seen, depth):
            return False
        if self.is_runtime(expr, seen, depth) or self.is_varlen(expr, seen, depth):
            return True
        if isinstance(expr, cst.Call):
            return self._returns_tensor(expr, seen, depth)
        if isinstance(expr, cst.Subscript):
            return self._is_tensor_value(expr.value, seen, depth + 1)
        if isinstance(expr, cst.Comparison):
            return self.is_tensor_test(expr, seen, depth + 1)
        if isinstance(expr, (cst.UnaryOperation, cst.BinaryOperation)):
            return self.is_bool(expr, seen, depth)
        recalled = self._recall(expr, seen, "bool")
        if recalled is not None:
            return recalled
        nxt = self._follow(expr, seen)
        return nxt is not None and self._is_tensor_value(nxt[0], nxt[1], depth + 1)

    def _returns_tensor(self, call: cst.Call, seen: frozenset[str], depth: int) -> bool:
        """True for a torch function returning a tensor, or a Tensor method returning one
        called on a value the flow knows is a tensor."""
        api = torch_api(self.ctx, call)
        if api is None:
            target = self.ctx.call_target(call) or ""
            return target.startswith(TENSOR_NAMESPACES)
        name, is_method = api
        if name.startswith(("is_", "_", "get_", "set_", "has_")):
            return False
        if not is_method:
            return name not in NON_TENSOR_FUNCTIONS
        inner = receiver(call)
        return (name not in NON_TENSOR_METHODS and inner is not None
                and self._is_tensor_value(inner, seen, depth + 1))
