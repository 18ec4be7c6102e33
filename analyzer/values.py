"""What an expression holds: the abstract values of the value analysis.

A :data:`Value` is a small union (a frozenset) of :class:`Atom` s. An atom says what kind of
thing a value may be at run time:

- ``TENSOR``: a torch tensor, with the class of its dtype (``bool`` / ``int`` / ``float`` /
  unknown), whether its length depends on the data (``varlen``: ``nonzero`` results,
  ``x[mask]``) and whether it is a reduction of the data (``reduced``: ``mask.sum()``);
- ``SHAPE``: an integer known when a static graph is compiled (``x.size(0)``, ``x.shape``,
  ``len(x)`` of a fixed-size tensor, arithmetic on those and on constants);
- ``DATA``: a Python scalar read from tensor contents (``t.item()``, ``int(t)``,
  ``t.tolist()`` elements, ``len`` of a variable-length tensor);
- ``CONST``: a Python constant with its value; ``PYTHON``: another plain Python value
  (strings, containers of unknown content, flags);
- ``SEQ``: a list or tuple, element by element where known (``items``) and as the join of
  its elements (``item``);
- ``INSTANCE``: an object of a class (a repository class or a torch one such as
  ``torch.nn.Linear``); ``NAMESPACE``: the parsed command line of a module's argparse
  parser, whose attributes are the options' defaults;
- ``OTHER``: an object of another library; ``UNKNOWN``: nothing is known.

A value that depends on another function, another file or the class's other methods is a
symbolic :data:`Expr` until the repository is solved (:mod:`msready.analyzer.valueflow`):
``("p", function, parameter)``, ``("c", path, call index)`` for what a call returns,
``("a", class, attribute)`` for ``self.<attribute>``, ``("g", dotted name)`` for a
module-level name and ``("o", operation, ...)`` for an operation applied to those. The same
transfer functions (:data:`OPS`) evaluate an operation in a file's walk, when its operands are
known there, and in the repository solver otherwise.

Questions rules ask ("is this a boolean mask?") are :data:`Truth` s: ``True``, ``False``,
or a predicate over a symbolic expression that the solver answers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from msready.analyzer.findings import compact_reduce
from msready.analyzer.syntax import tensor_methods as tensor_method_names


class Kind(StrEnum):
    """What an atom of a value is."""

    TENSOR = "tensor"
    SHAPE = "shape"
    DATA = "data"
    CONST = "const"
    PYTHON = "python"
    SEQ = "seq"
    INSTANCE = "instance"
    NAMESPACE = "namespace"
    OTHER = "other"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Atom:
    """One thing a value may be; see the module docstring."""

    __reduce__ = compact_reduce

    kind: Kind
    dtype: str = ""  # TENSOR: "bool" | "int" | "float" | "" (unknown)
    varlen: bool = False  # TENSOR: its length depends on the data
    reduced: bool = False  # TENSOR: a reduction of the data (``mask.sum()``)
    const: object = None  # CONST: the Python value (hashable)
    cls: str = ""  # INSTANCE: qualified class; NAMESPACE: module of the parser
    items: tuple[Value, ...] | None = None  # SEQ: the elements, when their number is known
    item: Value | None = None  # SEQ, or a container INSTANCE: the join of the elements
    # TENSOR: only guessed (a comparison or a Tensor method on something unknown); a guess
    # may make a mask but never a data-dependent condition on its own.
    guess: bool = False
    layout: str = ""  # TENSOR: "" (strided) or a sparse format ("coo", "csr", ...)
    # CONST: the type of ``const`` ("int", "(bool,float)"): True == 1 == 1.0 in Python, and
    # atoms that compare equal would be interned and joined as one.
    const_type: str = ""


Value = frozenset[Atom]
# A symbolic expression: a Value, or a tuple naming what the solver must look up.
Expr = Value | tuple[Any, ...]
Truth = bool | tuple[Any, ...]

MAX_ATOMS = 8
MAX_EXPR_SIZE = 60


def one(kind: Kind, **fields: Any) -> Value:
    """A value of one atom. Values are interned, so that a file's facts share them (the
    cache and the process pool pickle each once)."""
    atom = Atom(kind, **fields)
    found = _INTERNED.get(atom)
    if found is None:
        found = frozenset((atom,))
        if len(_INTERNED) < 100_000:
            _INTERNED[atom] = found
    return found


_INTERNED: dict[Atom, Value] = {}


UNKNOWN: Value = one(Kind.UNKNOWN)
NOTHING: Value = frozenset()
OTHER: Value = one(Kind.OTHER)
PYTHON: Value = one(Kind.PYTHON)
SHAPE: Value = one(Kind.SHAPE)
DATA: Value = one(Kind.DATA)


def tensor(dtype: str = "", varlen: bool = False, reduced: bool = False,
           guess: bool = False, layout: str = "") -> Value:
    """A tensor value."""
    return one(Kind.TENSOR, dtype=dtype, varlen=varlen, reduced=reduced, guess=guess,
               layout=layout)


def const(value: object) -> Value:
    """A Python constant (numbers, strings, bools, None, tuples of those)."""
    try:
        hash(value)
    except TypeError:
        return PYTHON
    if isinstance(value, tuple):
        return one(Kind.CONST, const=value, const_type=_type_of(value))
    kind = type(value)
    # A scalar's value is found once per type and value (every ``0``, ``1`` and ``"cpu"``
    # of a scan); by type too, since True == 1 == 1.0.
    key = (kind, value)
    found = _CONSTANTS.get(key)
    if found is None:
        found = one(Kind.CONST, const=value, const_type=kind.__name__)
        if len(_CONSTANTS) < 50_000:
            _CONSTANTS[key] = found
    return found


_CONSTANTS: dict[tuple[type, object], Value] = {}


def _type_of(value: object) -> str:
    if isinstance(value, tuple):
        return f"({','.join(_type_of(v) for v in value)})"
    return type(value).__name__


def instance(cls: str) -> Value:
    """An object of class ``cls``."""
    return one(Kind.INSTANCE, cls=cls)


def seq(items: Sequence[Value] | None = None, item: Value | None = None) -> Value:
    """A list or tuple, element by element or as the join of its elements."""
    if items is not None:
        joined = join(*items) if items else NOTHING
        return one(Kind.SEQ, items=tuple(items)[:16] if len(items) <= 16 else None, item=joined)
    return one(Kind.SEQ, item=item if item is not None else NOTHING)


def join(*values: Value) -> Value:
    """The union of values, bounded: past :data:`MAX_ATOMS` atoms the precise parts
    collapse into one tensor atom and ``UNKNOWN``."""
    out: frozenset[Atom] = frozenset().union(*values)
    if len(out) <= MAX_ATOMS:
        return out
    tensors = [a for a in out if a.kind is Kind.TENSOR]
    kept: set[Atom] = {Atom(Kind.UNKNOWN)}
    if tensors:
        dtypes = {a.dtype for a in tensors}
        kept.add(Atom(Kind.TENSOR, dtype=dtypes.pop() if len(dtypes) == 1 else "",
                      varlen=any(a.varlen for a in tensors),
                      reduced=all(a.reduced for a in tensors)))
    kept.update(sorted((a for a in out if a.kind is Kind.INSTANCE), key=lambda a: a.cls)[:4])
    kept.update(a for a in out if a.kind in (Kind.DATA, Kind.SHAPE, Kind.NAMESPACE))
    return frozenset(kept)


def size(expr: Expr) -> int:
    """Rough node count of an expression (values and look-ups count one)."""
    if isinstance(expr, frozenset) or expr[0] != "o":
        return 1
    return 1 + sum(size(e) for e in expr[3:])




# ----- the transfer functions ---------------------------------------------------------------

class Deferred(Exception):
    """Raised by an operation that needs the repository (a repository class's method or
    attribute, a command-line option) when evaluated inside one file."""


class Env:
    """What operations may ask of the repository. Inside one file nothing is known: every
    question defers the operation to the repository solver."""

    def method(self, cls: str, name: str) -> Value:
        """What calling method ``name`` of repository class ``cls`` returns."""
        raise Deferred

    def attribute(self, cls: str, name: str) -> Value:
        """What ``<instance of cls>.name`` holds."""
        raise Deferred

    def option(self, module: str, name: str) -> Value:
        """The default of command-line option ``name`` of the parser in ``module``."""
        raise Deferred

    def is_repository_class(self, cls: str) -> bool:
        """True when ``cls`` is (or may be) a class of the scanned repository."""
        return not cls.startswith(("torch.", "torchvision.", "builtins.", "argparse."))


LOCAL_ENV = Env()

# What tensor methods and functions do to a tensor's kind.
BOOL_APIS = frozenset({
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isin", "isclose", "isreal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "signbit", "bool",
    "eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "bernoulli",
})
KEEP_APIS = frozenset({
    "view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "clone", "detach",
    "cpu", "cuda", "t", "expand", "expand_as", "view_as", "reshape_as", "permute",
    "transpose", "to", "requires_grad_", "type_as", "sort", "argsort", "data", "flip",
})
INT_APIS = frozenset({"long", "int", "short", "argmax", "argmin", "argsort", "nonzero",
                      "argwhere", "randint", "randperm", "bincount", "searchsorted",
                      "bucketize", "count_nonzero", "multinomial"})
FLOAT_APIS = frozenset({"float", "double", "half", "bfloat16", "rand", "randn", "softmax",
                        "log_softmax", "sigmoid", "mean", "std", "var", "norm"})
VARLEN_APIS = frozenset({"nonzero", "argwhere", "masked_select", "unique",
                         "unique_consecutive"})
VARLEN_TARGETS = frozenset({
    f"torchvision.ops.{module}{name}" for module in ("", "boxes.")
    for name in ("nms", "batched_nms", "remove_small_boxes")})
INDEX_KEEP_APIS = KEEP_APIS | {"long", "int"}
# Sparse tensors: constructors and converters with the format they build, layouts by name,
# and the methods that keep a tensor's layout.
SPARSE_CONSTRUCTORS = {
    "torch.sparse_coo_tensor": "coo",
    "torch.sparse_csr_tensor": "csr",
    "torch.sparse_csc_tensor": "csc",
    "torch.sparse_bsr_tensor": "bsr",
    "torch.sparse_bsc_tensor": "bsc",
    "torch.sparse_compressed_tensor": "csr",
    "torch.sparse.softmax": "coo",
    "torch.sparse.log_softmax": "coo",
    **{f"torch.sparse.{kind}Tensor": "coo" for kind in (
        "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Char",
        "Bool")},
}
SPARSE_CONVERTERS = {"to_sparse": "coo", "to_sparse_coo": "coo", "to_sparse_csr": "csr",
                     "to_sparse_csc": "csc", "to_sparse_bsr": "bsr", "to_sparse_bsc": "bsc"}
SPARSE_LAYOUTS = {"torch.sparse_coo": "coo", "torch.sparse_csr": "csr",
                  "torch.sparse_csc": "csc", "torch.sparse_bsr": "bsr",
                  "torch.sparse_bsc": "bsc"}
LAYOUT_KEEP_METHODS = frozenset({"coalesce", "t", "transpose", "cuda", "cpu", "to", "detach",
                                 "float", "double", "half", "clone", "requires_grad_",
                                 "type"})
# nn.Module methods that return the module itself.
SELF_RETURNING = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double",
                            "bfloat16", "requires_grad_", "apply", "type", "to_empty",
                            "share_memory"})
MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential",
                               "torch.nn.ModuleDict"})
# Functions and methods whose output size their arguments give.
CREATORS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange",
                      "eye", "linspace", "logspace", "randperm", "tensor"})
SIZED_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "view",
                           "reshape", "expand", "repeat", "tile", "narrow", "split"})
REDUCTION_APIS = frozenset({
    "sum", "max", "min", "amax", "amin", "argmax", "argmin", "count_nonzero", "mean",
    "prod", "any", "all", "norm", "median", "mode", "nansum", "std", "var", "ceil",
    "floor", "round",
})
SHAPE_METHODS = frozenset({"size", "dim", "numel", "nelement", "ndimension", "stride",
                           "element_size", "get_device"})
SHAPE_ATTRS = frozenset({"shape", "ndim"})
DATA_METHODS = frozenset({"item", "tolist"})
NON_TENSOR_METHODS = SHAPE_METHODS | DATA_METHODS | frozenset({
    "data_ptr", "type", "numpy", "storage", "untyped_storage", "dim_order", "__len__",
    "nbytes", "itemsize", "names", "qscheme", "storage_offset", "q_scale", "q_zero_point",
    "layout", "is_contiguous", "is_floating_point", "equal", "allclose", "is_nonzero",
    "backward", "register_hook", "get_device", "tolist"})
NUMBER_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.round",
                             "builtins.abs", "math.ceil", "math.floor", "math.sqrt",
                             "builtins.bool"})
MINMAX_BUILTINS = frozenset({"builtins.min", "builtins.max", "builtins.sum"})
PYTHON_BUILTINS = frozenset({"builtins.list", "builtins.dict", "builtins.tuple",
                             "builtins.str", "builtins.sorted", "builtins.range",
                             "builtins.set", "builtins.enumerate", "builtins.zip",
                             "builtins.repr", "builtins.format", "builtins.isinstance",
                             "builtins.hasattr", "builtins.getattr", "builtins.print",
                             "builtins.open", "builtins.type", "builtins.callable"})


def _tensors(value: Value) -> list[Atom]:
    return [a for a in value if a.kind is Kind.TENSOR]


def _map_tensors(value: Value, change: Callable[[Atom], Atom]) -> Value:
    tensors = _tensors(value)
    return frozenset(change(a) for a in tensors) if tensors else NOTHING


def _with_dtype(value: Value, dtype: str, varlen: bool | None = None) -> Value:
    return _map_tensors(value, lambda a: replace(
        a, dtype=dtype, varlen=a.varlen if varlen is None else varlen))


def tensor_method(receiver: Value, name: str, args: Sequence[Value],
                  keywords: Sequence[str] = ()) -> Value:
    """What ``<receiver>.<name>(*args)`` holds when the receiver may be a tensor."""
    result = _tensor_method(receiver, name, args, keywords)
    tensors = _tensors(receiver)
    if tensors and all(a.guess for a in tensors):  # a guess stays a guess
        return frozenset(replace(a, guess=True) if a.kind is Kind.TENSOR else a
                         for a in result)
    return result


def _tensor_method(receiver: Value, name: str, args: Sequence[Value],
                   keywords: Sequence[str] = ()) -> Value:
    tensors = _tensors(receiver)
    if name in SPARSE_CONVERTERS and tensors:
        layout = next((SPARSE_LAYOUTS[str(a.const)] for v in args for a in v
                       if a.kind is Kind.CONST and a.const in SPARSE_LAYOUTS),
                      SPARSE_CONVERTERS[name])
        return _map_tensors(receiver, lambda a: replace(a, layout=layout))
    if name == "to_dense":
        return _map_tensors(receiver, lambda a: replace(a, layout=""))
    if name in LAYOUT_KEEP_METHODS and any(a.layout for a in tensors):
        return _map_tensors(receiver, lambda a: a)
    if not tensors:
        return UNKNOWN
    varlen = any(a.varlen for a in tensors)
    if name in SIZED_METHODS and any(is_data(a) for a in args):
        return tensor(tensors[0].dtype if not name.startswith("new_") else "", varlen=True)
    if name in SHAPE_METHODS:
        if name == "size" and not args:
            return seq(item=DATA if varlen else SHAPE)
        return DATA if varlen else SHAPE
    if name == "tolist":
        return seq(item=DATA)
    if name == "item":
        return DATA
    if name in ("numpy", "storage", "untyped_storage"):
        return OTHER
    if name in NON_TENSOR_METHODS or name.startswith(("is_", "_", "get_", "has_")):
        return PYTHON
    if name not in tensor_method_names():
        return UNKNOWN  # not a Tensor method: the receiver is something else
    if name in VARLEN_APIS:
        dtype = "int" if name in ("nonzero", "argwhere") else tensors[0].dtype
        if name == "nonzero" and "as_tuple" in keywords:
            return seq(item=tensor("int", varlen=True))
        return tensor(dtype, varlen=True)
    if name in BOOL_APIS:
        return _with_dtype(receiver, "bool")
    if name in ("to", "type") and any(_is_dtype(a, "bool") for a in args):
        return _with_dtype(receiver, "bool")
    if name in REDUCTION_APIS:
        dtype = "int" if name in INT_APIS else ("bool" if name in ("any", "all") else "")
        return tensor(dtype or tensors[0].dtype, reduced=True)
    if name in INT_APIS:
        return _with_dtype(receiver, "int")
    if name in FLOAT_APIS:
        return _with_dtype(receiver, "float", varlen=varlen)
    if name in INDEX_KEEP_APIS:
        return _map_tensors(receiver, lambda a: a)
    if name in ("masked_fill", "masked_fill_", "clamp", "clamp_", "abs", "neg", "exp", "log",
                "sqrt", "pow", "mul", "add", "sub", "div", "__getitem__"):
        return _map_tensors(receiver, lambda a: replace(a, varlen=a.varlen, reduced=a.reduced))
    return tensor(tensors[0].dtype if name.endswith("_") else "")


def _is_dtype(value: Value, dtype: str) -> bool:
    return any(a.kind is Kind.CONST and a.const == f"torch.{dtype}" for a in value)


def torch_function(target: str, args: Sequence[Value], keywords: Sequence[str] = (),
                   kind: str = "tensor") -> Value:
    """What calling the torch API ``target`` holds (``kind`` is what the API table says the
    name returns: 'tensor', 'object' or 'other')."""
    name = target.rsplit(".", 1)[-1]
    if target in VARLEN_TARGETS:
        return tensor("int", varlen=True)
    if target in SPARSE_CONSTRUCTORS:
        return tensor(layout=SPARSE_CONSTRUCTORS[target])
    if target in MODULE_CONTAINERS:
        parts = [element(a, None) if target != "torch.nn.Sequential" else a for a in args]
        held = [frozenset(x for x in p if x.kind is Kind.INSTANCE) for p in parts]
        return one(Kind.INSTANCE, cls=target, item=join(*held) if held else NOTHING)
    if kind == "object":
        return instance(target)
    if kind == "other":
        return UNKNOWN  # a torch object (device, compiled module, loader): not a tensor
    keyed = dict(zip(keywords, args[len(args) - len(keywords):], strict=False))
    dtype_value = keyed.get("dtype")
    if dtype_value is not None:
        for dtype in ("bool", "int", "float"):
            if any(a.kind is Kind.CONST and isinstance(a.const, str)
                   and a.const.startswith(f"torch.{dtype}") for a in dtype_value):
                return tensor(dtype)
        if any(a.kind is Kind.CONST and a.const in ("torch.long", "torch.int64")
               for a in dtype_value):
            return tensor("int")
    positional = list(args[:len(args) - len(keywords)])
    if name in CREATORS and any(is_data(a) for a in (*positional, keyed.get("size", NOTHING),
                                                     keyed.get("end", NOTHING))):
        return tensor(varlen=True)
    if name in ("cat", "concat", "concatenate", "stack", "hstack", "vstack"):
        elements = [a.item for v in positional[:1] for a in v if a.kind is Kind.SEQ and a.item]
        joined = _tensors(join(*elements)) if elements else []
        dtypes = {a.dtype for a in joined}
        return tensor(dtypes.pop() if len(dtypes) == 1 else "",
                      varlen=any(a.varlen for a in joined))
    if name == "where" and len(positional) == 1 and not keywords:
        return seq(item=tensor("int", varlen=True))
    if name in VARLEN_APIS or name in BOOL_APIS or name in REDUCTION_APIS or name in INT_APIS:
        if positional and _tensors(positional[0]):
            return tensor_method(positional[0], name, positional[1:], keywords)
        if name in VARLEN_APIS:
            return tensor("int" if name in ("nonzero", "argwhere") else "", varlen=True)
        if name in BOOL_APIS:
            return tensor("bool")
        if name in REDUCTION_APIS:
            return tensor(reduced=True)
        return tensor("int")
    if name in ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
                "clone", "flatten", "reshape", "squeeze", "unsqueeze", "transpose", "permute",
                "flip", "index_select", "gather") and positional and _tensors(positional[0]):
        keep_dtype = name not in ("rand_like", "randn_like", "index_select", "gather")
        return _map_tensors(positional[0], lambda a: Atom(
            Kind.TENSOR, dtype=a.dtype if keep_dtype else "",
            varlen=a.varlen and name not in ("index_select", "gather")))
    return tensor()


def builtin_call(target: str, args: Sequence[Value]) -> Value:
    """What calling a Python builtin (or ``math`` function) holds."""
    first = args[0] if args else NOTHING
    if target in NUMBER_BUILTINS:
        if is_data(first):
            return DATA
        if is_shape(first):
            return SHAPE
        consts = [a for a in first if a.kind is Kind.CONST]
        if consts and len(first) == 1 and target in ("builtins.int", "builtins.float"):
            try:
                return const(int(consts[0].const) if target == "builtins.int"  # type: ignore[call-overload]
                             else float(consts[0].const))  # type: ignore[arg-type]
            except (TypeError, ValueError, OverflowError):
                return PYTHON
        return PYTHON if not _tensors(first) else DATA
    if target in MINMAX_BUILTINS:
        if any(is_data(a) for a in args):
            return DATA
        if args and all(is_shape(a) for a in args):
            return SHAPE
        if len(args) == 1:
            items = [a.item for a in first if a.kind is Kind.SEQ and a.item]
            if items and is_data(join(*items)):
                return DATA
        return PYTHON
    if target == "builtins.len":
        if any(a.varlen for a in _tensors(first)):
            return DATA
        return SHAPE
    if target in ("builtins.list", "builtins.tuple", "builtins.sorted"):
        items = [a.item for a in first if a.kind is Kind.SEQ and a.item is not None]
        if items:
            return seq(item=join(*items))
        if _tensors(first):
            return seq(item=_map_tensors(first, lambda a: replace(a, varlen=False)))
        return seq(item=UNKNOWN)
    if target == "builtins.range":
        return seq(item=DATA if any(is_data(a) for a in args) else SHAPE)
    if target in PYTHON_BUILTINS:
        return PYTHON
    return UNKNOWN


def subscript(base: Value, index: Value, is_slice: bool = False) -> Value:
    """What ``base[index]`` holds (``is_slice`` for ``base[a:b]``)."""
    out: list[Value] = []
    for atom in base:
        if atom.kind is Kind.TENSOR:
            varlen = atom.varlen or (is_slice and is_data(index)) or (
                not is_slice and (is_bool_mask(index) or is_varlen(index)))
            if not is_slice and is_shape(index) and not atom.varlen:
                out.append(frozenset((replace(atom, varlen=False),)))
            else:
                out.append(frozenset((replace(atom, varlen=varlen, reduced=False),)))
        elif atom.kind is Kind.SEQ:
            position = [a.const for a in index if a.kind is Kind.CONST]
            if (not is_slice and atom.items is not None and len(position) == 1
                    and isinstance(position[0], int) and -len(atom.items) <= position[0]
                    < len(atom.items)):
                out.append(atom.items[position[0]])
            elif is_slice:
                out.append(frozenset((atom,)))
            else:
                out.append(atom.item if atom.item is not None else UNKNOWN)
        elif atom.kind in (Kind.SHAPE, Kind.DATA):
            out.append(frozenset((atom,)))
        elif atom.kind is Kind.INSTANCE and atom.item is not None:
            out.append(atom.item)  # an element of ModuleList / Sequential / ModuleDict
        elif atom.kind is Kind.CONST and isinstance(atom.const, tuple):
            position = [a.const for a in index if a.kind is Kind.CONST]
            if len(position) == 1 and isinstance(position[0], int) and not is_slice:
                try:
                    out.append(const(atom.const[position[0]]))
                    continue
                except IndexError:
                    pass
            out.append(PYTHON)
        elif atom.kind is Kind.OTHER:
            out.append(OTHER)
        else:
            out.append(UNKNOWN)
    return join(*out) if out else UNKNOWN


def attribute(base: Value, name: str, env: Env) -> Value:
    """What ``base.name`` holds."""
    out: list[Value] = []
    for atom in base:
        if atom.kind is Kind.TENSOR:
            if name in SHAPE_ATTRS:
                out.append(seq(item=DATA) if atom.varlen and name == "shape" else
                           (DATA if atom.varlen else (seq(item=SHAPE) if name == "shape"
                                                      else SHAPE)))
            elif name in ("T", "mT", "data", "real", "imag", "grad", "values", "indices"):
                out.append(frozenset((atom,)))
            else:
                out.append(PYTHON)
        elif atom.kind is Kind.INSTANCE and env.is_repository_class(atom.cls):
            out.append(env.attribute(atom.cls, name))
        elif atom.kind is Kind.NAMESPACE:
            out.append(env.option(atom.cls, name))
        elif atom.kind is Kind.INSTANCE and atom.cls.startswith("torch.nn.") and name in (
                "weight", "bias"):
            out.append(tensor("float"))
        elif atom.kind is Kind.OTHER:
            out.append(OTHER)
        else:
            out.append(UNKNOWN)
    return join(*out) if out else UNKNOWN


def method(receiver: Value, name: str, args: Sequence[Value], keywords: Sequence[str],
           env: Env) -> Value:
    """What ``<receiver>.<name>(...)`` holds, for any receiver."""
    out: list[Value] = []
    if _tensors(receiver):
        out.append(tensor_method(receiver, name, args, keywords))
    for atom in receiver:
        if atom.kind is Kind.INSTANCE:
            if atom.cls == "argparse.ArgumentParser" and name in ("parse_args",
                                                                 "parse_known_args"):
                spaced = one(Kind.NAMESPACE, cls=env_module(env))
                out.append(spaced if name == "parse_args" else seq([spaced, PYTHON]))
            elif env.is_repository_class(atom.cls):
                out.append(env.method(atom.cls, name))
            elif atom.cls.startswith("torch.nn.") and name in SELF_RETURNING:
                out.append(frozenset((atom,)))
            else:
                out.append(UNKNOWN)
        elif atom.kind is Kind.SEQ and name in ("index", "count"):
            out.append(SHAPE)
        elif atom.kind is Kind.SEQ and name in ("pop",):
            out.append(atom.item or UNKNOWN)
        elif atom.kind in (Kind.CONST, Kind.PYTHON):
            out.append(PYTHON)
        elif atom.kind is Kind.OTHER:
            out.append(OTHER)
        elif atom.kind is Kind.UNKNOWN and name in tensor_method_names():
            # Something unknown calling a Tensor method may be a tensor.
            held = tensor_method(tensor(guess=True), name, args, keywords)
            out.append(join(held, UNKNOWN) if is_tensor_kind(held) else held)
        elif atom.kind is not Kind.TENSOR:
            out.append(UNKNOWN)
    return join(*out) if out else UNKNOWN


def env_module(env: Env) -> str:
    """The module an environment evaluates in ('' when not known)."""
    return getattr(env, "module", "")


def binary(operator: str, left: Value, right: Value) -> Value:
    """What ``left <operator> right`` holds (``+``, ``&``, ...)."""
    tensors = _tensors(left) + _tensors(right)
    if tensors:
        if operator in ("&", "|", "^"):
            dtype = "bool" if any(a.dtype == "bool" for a in tensors) else ""
        else:
            dtypes = {a.dtype for a in tensors}
            dtype = dtypes.pop() if len(dtypes) == 1 and operator != "/" else ""
        return tensor(dtype, varlen=any(a.varlen for a in tensors),
                      reduced=all(a.reduced for a in tensors),
                      guess=all(a.guess for a in tensors))
    if is_data(left) or is_data(right):
        return DATA
    lc = [a.const for a in left if a.kind is Kind.CONST]
    rc = [a.const for a in right if a.kind is Kind.CONST]
    if len(left) == 1 and len(right) == 1 and lc and rc:
        folded = _fold(operator, lc[0], rc[0])
        if folded is not None:
            return folded
    if is_shape(left) and is_shape(right):
        return SHAPE
    if any(a.kind is Kind.SEQ for a in left) and operator in ("+", "*"):
        items = [a.item for v in (left, right) for a in v if a.kind is Kind.SEQ and a.item]
        return seq(item=join(*items) if items else UNKNOWN)
    if all(a.kind in (Kind.CONST, Kind.PYTHON, Kind.SHAPE) for a in (*left, *right)):
        return PYTHON
    return UNKNOWN


def _fold(symbol: str, a: Any, b: Any) -> Value | None:
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if symbol == "+" and isinstance(a, str) and isinstance(b, str):
            return const(a + b)
        return None
    fold = _FOLDS.get(symbol)
    if fold is None or (symbol == "**" and abs(b) >= 64):
        return None
    try:
        return const(fold(a, b))
    except (ZeroDivisionError, OverflowError, TypeError, ValueError):
        return None


_FOLDS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow}


def compare(sides: Sequence[Value], identity: bool = False) -> Value:
    """What a comparison holds: a boolean tensor when a side is a tensor, a data-dependent
    scalar when one is read from the data, else a Python bool."""
    if identity:
        return PYTHON
    if any(a.kind is Kind.CONST and isinstance(a.const, str) for v in sides for a in v):
        return PYTHON  # compared with a string: a name, a mode, a dtype
    tensors = [a for v in sides for a in _tensors(v)]
    if tensors:
        return tensor("bool", varlen=any(a.varlen for a in tensors),
                      reduced=all(a.reduced for a in tensors),
                      guess=all(a.guess for a in tensors))
    if any(a.kind is Kind.UNKNOWN for v in sides for a in v) and not any(
            is_data(v) for v in sides):
        return join(tensor("bool", guess=True), PYTHON)  # may compare tensors
    if any(is_data(v) for v in sides):
        return DATA
    return PYTHON


def unary(operator: str, operand: Value) -> Value:
    """What ``-x``, ``~x`` or ``not x`` holds."""
    if operator == "not":
        return DATA if is_tensor_test(operand) else PYTHON
    if operator == "~":
        tensors = _tensors(operand)
        if tensors:
            return _map_tensors(operand, lambda a: replace(
                a, dtype="bool" if a.dtype in ("bool", "") else a.dtype))
    consts = [a.const for a in operand if a.kind is Kind.CONST]
    if operator == "-" and len(operand) == 1 and consts and isinstance(consts[0], (int, float)):
        return const(-consts[0])  # before the shape test, which constants also pass
    if is_data(operand):
        return DATA
    if is_shape(operand):
        return SHAPE
    return operand if _tensors(operand) else PYTHON


def element(value: Value, index: int | None) -> Value:
    """One element of a value being unpacked (``index``) or iterated (None)."""
    if index is not None:
        return subscript(value, const(index))
    out: list[Value] = []
    for atom in value:
        if atom.kind is Kind.SEQ:
            out.append(atom.item if atom.item is not None else UNKNOWN)
        elif atom.kind is Kind.TENSOR:
            out.append(frozenset((replace(atom, varlen=False, reduced=False),)))
        elif atom.kind is Kind.OTHER:
            out.append(OTHER)
        elif atom.kind in (Kind.SHAPE, Kind.DATA):
            out.append(frozenset((atom,)))
        elif atom.kind is Kind.INSTANCE and atom.item is not None:
            out.append(atom.item)
        else:
            out.append(UNKNOWN)
    return join(*out) if out else UNKNOWN


def appended(container: Value, added: Value, extend: bool = False) -> Value:
    """A list after ``append(added)`` (or ``extend``)."""
    if extend:
        added = element(added, None)
    items = [a.item for a in container if a.kind is Kind.SEQ and a.item is not None]
    return seq(item=join(*items, added))


# Operation name -> (number of leading plain parameters, function). Functions that take an
# environment name it as their last parameter.
OPS: dict[str, tuple[int, Callable[..., Value], bool]] = {
    "method": (2, lambda name, keywords, recv, *args, env: method(
        recv, name, args, keywords, env), True),
    "tensor_method": (2, lambda name, keywords, recv, *args: tensor_method(
        recv, name, args, keywords), False),
    "torch": (3, lambda target, keywords, kind, *args: torch_function(
        target, args, keywords, kind), False),
    "builtin": (1, lambda target, *args: builtin_call(target, args), False),
    "sub": (1, lambda is_slice, base, index: subscript(base, index, is_slice), False),
    "attr": (1, lambda name, base, env: attribute(base, name, env), True),
    "bin": (1, binary, False),
    "cmp": (1, lambda identity, *sides: compare(sides, identity), False),
    "un": (1, unary, False),
    "elem": (1, lambda index, value: element(value, index), False),
    "append": (1, lambda extend, container, added: appended(container, added, extend), False),
    "seq": (1, lambda fixed, *items: seq(list(items)) if fixed else seq(item=join(*items)),
            False),
    "join": (0, lambda *values: join(*values), False),
    "bool_of": (0, lambda value: DATA if is_tensor_test(value) else PYTHON, False),
}


def apply(op: str, plain: tuple[Any, ...], operands: Sequence[Expr],
          env: Env = LOCAL_ENV) -> Expr:
    """Apply operation ``op``: evaluated now when every operand is a value and the
    operation needs nothing from the repository, else kept symbolic."""
    if all(isinstance(o, frozenset) for o in operands):
        _, fn, wants_env = OPS[op]
        try:
            if wants_env:
                return fn(*plain, *operands, env=env)
            return fn(*plain, *operands)
        except Deferred:
            pass
    expr = ("o", op, plain, *operands)
    return expr if size(expr) <= MAX_EXPR_SIZE else UNKNOWN


def evaluate_op(expr: tuple[Any, ...], operands: Sequence[Value], env: Env) -> Value:
    """Evaluate a symbolic operation once its operands are values."""
    _, op, plain, *_ = expr
    _, fn, wants_env = OPS[op]
    try:
        return fn(*plain, *operands, env=env) if wants_env else fn(*plain, *operands)
    except Deferred:
        return UNKNOWN


# ----- predicates ---------------------------------------------------------------------------

def is_tensor_kind(value: Value) -> bool:
    """May be a tensor, guessed or not."""
    return any(a.kind is Kind.TENSOR for a in value)


def is_tensor(value: Value) -> bool:
    """May be a tensor (more than a guess)."""
    return any(a.kind is Kind.TENSOR and not a.guess for a in value)


def is_bool_mask(value: Value) -> bool:
    """May be a boolean tensor."""
    return any(a.kind is Kind.TENSOR and a.dtype == "bool" for a in value)


def is_varlen(value: Value) -> bool:
    """May be a tensor whose length depends on the data."""
    return any(a.kind is Kind.TENSOR and a.varlen for a in value)


def is_data_scalar(value: Value) -> bool:
    """May be a Python number read from tensor contents."""
    return any(a.kind is Kind.DATA for a in value)


def is_data(value: Value) -> bool:
    """May be a number read from the data: a data scalar or a reduction of a tensor."""
    return any(a.kind is Kind.DATA or (a.kind is Kind.TENSOR and a.reduced)
               or (a.kind is Kind.SEQ and a.item is not None and is_data(a.item)) for a in value)


def is_shape(value: Value) -> bool:
    """Certainly a number known when a graph is compiled (shapes, constants)."""
    return bool(value) and all(
        a.kind is Kind.SHAPE or (a.kind is Kind.CONST and isinstance(a.const, (int, float)))
        or (a.kind is Kind.SEQ and a.item is not None and is_shape(a.item))
        for a in value)


def is_python_constant(value: Value) -> bool:
    """Certainly a plain Python value (constant, string, container)."""
    return bool(value) and all(a.kind in (Kind.CONST, Kind.PYTHON, Kind.SEQ) for a in value)


def is_tensor_test(value: Value) -> bool:
    """May be a condition whose truth is read from tensor values at run time."""
    return any(a.kind is Kind.DATA or (a.kind is Kind.TENSOR and not a.guess) for a in value)


def is_sparse(value: Value) -> bool:
    """May be a sparse tensor."""
    return any(a.kind is Kind.TENSOR and a.layout for a in value)


def is_foreign(value: Value) -> bool:
    """Certainly something other than a torch tensor (a Python value, another library's
    object)."""
    return bool(value) and all(a.kind in (Kind.CONST, Kind.PYTHON, Kind.SEQ, Kind.OTHER)
                               for a in value)


PREDICATES: dict[str, Callable[[Value], bool]] = {
    "sparse": is_sparse,
    "foreign": is_foreign,
    "tensor": is_tensor,
    "bool_mask": is_bool_mask,
    "varlen": is_varlen,
    "data_scalar": is_data_scalar,
    "data": is_data,
    "shape": is_shape,
    "python": is_python_constant,
    "tensor_test": is_tensor_test,
}


def truth(predicate: str, expr: Expr) -> Truth:
    """``predicate`` of an expression: a bool now, or deferred to the solver."""
    if isinstance(expr, frozenset):
        return PREDICATES[predicate](expr)
    return ("pred", predicate, expr)


def _combine(head: str, unit: bool, parts: tuple[Truth, ...]) -> Truth:
    """``and`` (unit True) or ``or`` (unit False) of truths, decided where a part decides."""
    rest = [p for p in parts if p is not unit]
    if any(p is (not unit) for p in rest):
        return not unit
    if not rest:
        return unit
    return rest[0] if len(rest) == 1 else (head, *rest)


def t_and(*parts: Truth) -> Truth:
    """All parts hold."""
    return _combine("and", True, parts)


def t_or(*parts: Truth) -> Truth:
    """Some part holds."""
    return _combine("or", False, parts)


def t_not(part: Truth) -> Truth:
    """The part does not hold."""
    if isinstance(part, bool):
        return not part
    return ("not", part)


def decide(condition: Truth, evaluate: Callable[[Expr], Value],
           never: frozenset[str] = frozenset()) -> bool:
    """The answer to a truth once symbolic expressions can be evaluated. The predicates
    in ``never`` hold for no value of the repository: their expressions are not evaluated."""
    if isinstance(condition, bool):
        return condition
    head = condition[0]
    if head == "pred":
        return condition[1] not in never and PREDICATES[condition[1]](evaluate(condition[2]))
    if head == "and":
        return all(decide(p, evaluate, never) for p in condition[1:])
    if head == "or":
        return any(decide(p, evaluate, never) for p in condition[1:])
    if head == "not":
        return not decide(condition[1], evaluate, never)
    return False
