"""Small Cells with torch's constructor signature, for torch layers a Cell names as a
value instead of calling (``partial(nn.LayerNorm, eps=1e-6)``, ``norm_layer=nn.LayerNorm``,
``class LayerNorm(nn.LayerNorm)``) and for containers MindSpore's counterpart cannot hold
(a ``ModuleDict`` of ``ModuleList``). A call is translated where it is written; a value is
called later with torch's arguments, so it gets an adapter that takes them. A generated
file holds the adapters it uses, after its imports."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import libcst as cst
import libcst.matchers as m

from msready.analyzer.localvalues import TORCH_ROOTS
from msready.analyzer.syntax import find_all
from msready.skeletons import compositions, empty_slices, third_party
from msready.skeletons.layers import CONV_PADDING, MESHGRID, PADDING, PLACEMENT, SIZES

# torch name -> the adapter's class name; the sources are below, one class each.
# Stands in for names imported from a side library the Cell does not import.
STAND_IN = "Unavailable"
# The stand-in for a side library's exception class, caught in an ``except`` clause
# (which takes only exception classes); nothing raises it.
STAND_IN_ERROR = "UnavailableError"

ADAPTED = {
    "torch.nn.BatchNorm1d": "TorchBatchNorm1d",
    "torch.nn.BatchNorm2d": "TorchBatchNorm2d",
    "torch.nn.BatchNorm3d": "TorchBatchNorm3d",
    "torch.nn.CrossEntropyLoss": "TorchCrossEntropyLoss",
    "torch.nn.LayerNorm": "TorchLayerNorm",
    "torch.nn.Linear": "TorchLinear",
    "torch.nn.ModuleDict": "TorchModuleDict",
    "torch.nn.ModuleList": "TorchModuleList",
    "torch.autograd.Function": "TorchFunction",
    "torch.autograd.function.Function": "TorchFunction",
}

# torch layers whose MindSpore class needs converted arguments, as values only: a class
# subclassing one gets its super().__init__ translated instead (``translate``).
VALUE_ADAPTED = {**{f"torch.nn.Conv{d}d": f"TorchConv{d}d" for d in (1, 2, 3)},
                 **{f"torch.nn.{kind}Pool{d}d": f"Torch{kind}Pool{d}d"
                    for kind in ("Max", "Avg") for d in (1, 2, 3)},
                 "torch.nn.GELU": "TorchGELU"}

KEYWORDS = "torch_kwargs"
ADD_MODULE = "torch_add_module"
REQUIRES_GRAD = "torch_requires_grad_"
WRAPS = "cell_safe_wraps"
LAYER = "torch_layer"
TO = "torch_to"
# Python's ``^`` in code GRAPH_MODE compiles (it refuses two bools)
XOR = "torch_xor"
LEGACY_TENSOR = "torch_legacy_tensor"
# A torch name left in a Cell (no MindSpore form for the target) reads as this stand-in:
# the file imports, and only the code that reaches the name fails, saying which it is.
TORCH_LEFT = "TorchLeftInCell"
LEFT_IN_CELL = "has no MindSpore form for this target and is left in the Cell"
# A base class from torch's companion packages (``torchvision.models.resnet.ResNet``): the
# class built on it imports, and building one fails, saying which base it lacks.
TORCH_LEFT_BASE = "torch_left_base"
ECOSYSTEM_ROOTS = ("torchvision", "torchaudio", "torchtext")

# One source for the three convolution adapters; ``{d}`` is the dimension.
_CONV = '''
class TorchConv{d}d(nn.Conv{d}d):
    """torch.nn.Conv{d}d's signature on MindSpore's Conv{d}d: a padding amount pads with
    ``pad_mode='pad'`` on both sides of each axis (MindSpore defaults to 'same'),
    ``groups`` / ``bias`` are ``group`` / ``has_bias`` (a bool: torch takes any value
    by its truth); sizes given as lists are tuples (MindSpore takes an int or a tuple)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        kernel_size, stride, dilation = (tuple(v) if isinstance(v, list) else v
                                         for v in (kernel_size, stride, dilation))
        if isinstance(padding, str):
            mode, padding = padding, 0
        elif not any(padding if isinstance(padding, (list, tuple)) else (padding,)):
            mode, padding = "valid", 0
        else:
            mode = "pad"
            padding = padding if {d} == 1 else torch_padding(padding)
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         pad_mode=mode, padding=padding, dilation=dilation, group=groups,
                         has_bias=bool(bias))


TorchConv{d}d.__name__ = "Conv{d}d"
'''

# One source for the three BatchNorm adapters; ``{d}`` is the dimension.
_BATCH_NORM = '''
class TorchBatchNorm{d}d(nn.BatchNorm{d}d):
    """torch.nn.BatchNorm{d}d's signature and attribute names on MindSpore's BatchNorm{d}d:
    torch's ``momentum`` weighs the new batch (MindSpore's weighs the running value),
    ``weight``/``bias``/``running_mean``/``running_var`` are ``gamma``/``beta``/
    ``moving_mean``/``moving_variance``; a subclass that re-implements torch's forward
    finds ``track_running_stats`` and ``num_batches_tracked``."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__(num_features, eps=eps,
                         momentum=1.0 - (0.1 if momentum is None else momentum),
                         affine=bool(affine),
                         use_batch_statistics=None if track_running_stats else True)
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.num_batches_tracked = Tensor(0, mindspore.int64) if track_running_stats \\
            else None

    @property
    def weight(self):
        return self.gamma

    @property
    def bias(self):
        return self.beta

    @property
    def running_mean(self):
        return self.moving_mean if self.track_running_stats else None

    @property
    def running_var(self):
        return self.moving_variance if self.track_running_stats else None


TorchBatchNorm{d}d.__name__ = "BatchNorm{d}d"  # code that dispatches on torch's class name
'''

# One source for the six pooling adapters; ``{kind}`` is Max or Avg, ``{d}`` the dimension,
# ``{params}`` / ``{passed}`` the settings after the padding in torch's order.
_POOL = '''
class Torch{kind}Pool{d}d(nn.{kind}Pool{d}d):
    """torch.nn.{kind}Pool{d}d's signature on MindSpore's {kind}Pool{d}d: the stride
    defaults to the kernel size (MindSpore's to 1), a padding pads on both sides
    (``pad_mode='pad'``; MindSpore's default pads nothing) and a list is a tuple."""

    def __init__(self, kernel_size, stride=None, padding=0, {params}):
        kernel_size, stride, padding = (tuple(v) if isinstance(v, list) else v
                                        for v in (kernel_size, stride, padding))
        super().__init__(kernel_size, kernel_size if stride is None else stride,
                         pad_mode="pad", padding=padding, {passed})
{own}        for name, value in ({settings}):
            if not hasattr(self, name):  # torch keeps it; a subclass's forward may read it
                setattr(self, name, value)


Torch{kind}Pool{d}d.__name__ = "{kind}Pool{d}d"
'''
_POOL_SETTINGS = {
    "Max": ("dilation", "return_indices", "ceil_mode"),
    "Avg": ("ceil_mode", "count_include_pad", "divisor_override"),
}
_POOL_DEFAULTS = {"dilation": "1", "return_indices": "False", "ceil_mode": "False",
                  "count_include_pad": "True", "divisor_override": "None"}


# torch layer -> the settings its MindSpore layer keeps under the same name in another
# form (a MaxPool2d's ``padding=1`` as ``(0, 1, 1)``, its depth too) where torch keeps the
# value it was given; a subclass's forward reads torch's. Checked against both in the tests.
OWN_FORM = {"torch.nn.MaxPool1d": ("kernel_size", "padding"),
            "torch.nn.MaxPool2d": ("padding",)}


def _pool(kind: str, d: int) -> str:
    names = [n for n in _POOL_SETTINGS[kind] if not (d == 1 and n == "divisor_override")]
    own = OWN_FORM.get(f"torch.nn.{kind}Pool{d}d", ())
    return (_POOL.replace("{kind}", kind).replace("{d}", str(d))
            .replace("{own}", "".join(f"        self.{n} = {n}  # torch's form (MindSpore keeps"
                                      " its own, which nothing it runs reads)\n" for n in own))
            .replace("{params}", ", ".join(f"{n}={_POOL_DEFAULTS[n]}" for n in names))
            .replace("{passed}", ", ".join(f"{n}={n}" for n in names))
            .replace("{settings}", ", ".join(f"({n!r}, {n})" for n in names)))


SOURCES = {
    LAYER: '''
def torch_layer(cls, renames, accepted, dropped, order=()):
    """A MindSpore layer class that takes torch's arguments (``act_layer(inplace=True)``
    where ``act_layer`` is ``nn.ReLU``): positional ones are named by torch's ``order``,
    then renamed or left out, see torch_kwargs; a list argument becomes the tuple
    MindSpore's constructors check for."""
    class Layer(cls):
        def __init__(self, *args, **kwargs):
            args = [tuple(a) if isinstance(a, list) else a for a in args]
            kwargs = {**dict(zip(order, args)), **kwargs}
            args = args[len(order):]
            super().__init__(*args, **torch_kwargs(kwargs, renames, accepted, dropped))

    Layer.__name__ = Layer.__qualname__ = cls.__name__
    return Layer
''',
    SIZES: '''
def torch_sizes(value):
    """A size torch takes as an int, a tuple or a list, as MindSpore takes it: an int or
    a tuple."""
    if isinstance(value, list):
        return tuple(value)
    return value
''',
    PADDING: '''
def torch_padding(padding):
    """torch's padding, one amount per spatial axis applied on both sides, as MindSpore
    takes it: an int, or both sides of every axis (a loop, not a comprehension with two
    ``for``: GRAPH_MODE compiles this inside construct)."""
    if isinstance(padding, int):
        return padding
    sides = ()
    for amount in padding:
        sides = sides + (amount, amount)
    return sides
''',
    CONV_PADDING: '''
def torch_conv_padding(padding):
    """The keywords of ops.convNd for torch's ``padding`` known only at run time: a
    string is the pad_mode; a size is padded ('pad'), one amount per axis (a MindSpore
    layer's own both-sides padding is folded back when both sides agree)."""
    if isinstance(padding, str):
        return {"pad_mode": padding}
    if isinstance(padding, (list, tuple)) and len(padding) == 4 \
            and padding[0] == padding[1] and padding[2] == padding[3]:
        padding = (padding[0], padding[2])
    if padding == 0 or (isinstance(padding, (list, tuple)) and not any(padding)):
        return {}
    return {"pad_mode": "pad", "padding": tuple(padding)
            if isinstance(padding, list) else padding}
''',
    KEYWORDS: '''
def torch_kwargs(kwargs, renames, accepted=None, dropped=()):
    """torch keyword arguments passed on with ``**``: spelled as the MindSpore API spells
    them, without those it does not take (a layer's ``device``) and without None, torch's
    way of asking for the default (``dtype=None``)."""
    out = {}
    for key, value in dict(kwargs or {}).items():
        key = renames.get(key, key)
        if value is None or key in dropped or (accepted is not None and key not in accepted):
            continue
        out[key] = value
    return out
''',
    TORCH_LEFT: f'''
class TorchLeftInCell:
    """A torch name the Cell keeps because MindSpore has no form of it for this target
    (see the TODO(msready MS100) lines): reading it works, calling it fails and says
    which name it is."""

    def __init__(self, path):
        self._path = path

    def __getattr__(self, name):
        # (not the names MindSpore asks of an object GRAPH_MODE compiles: the error then
        # names the torch name, not ``torch.x._func_graph_flags.keys``)
        if name.startswith("__") and name.endswith("__") or name == "_func_graph_flags":
            raise AttributeError(name)
        return TorchLeftInCell(f"{{self._path}}.{{name}}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{{self._path}} {LEFT_IN_CELL} (see its TODO(msready "
                                  "MS100) line)")

    def __instancecheck__(self, obj):
        # ``isinstance(m, (nn.BatchNorm2d, torch.nn.SyncBatchNorm))``: nothing the Cell
        # builds is an instance of a torch class it does not have
        return False

    def __repr__(self):
        return self._path
''',
    TORCH_LEFT_BASE: f'''
def torch_left_base(path):
    """A base class from torch's companion packages that MindSpore has no form of
    (``class Encoder(ResNet, Mixin)``, torchvision's ResNet): the class imports, its other
    bases keep their order, and building one fails and says which base it lacks."""

    class TorchLeftBase:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"{{path}} {LEFT_IN_CELL} (see its TODO(msready "
                                      "MS100) line)")

    return TorchLeftBase
''',
    # each torch package a Cell keeps a name of (``torch.version.cuda``) is bound to it
    **{root: f'\n{root} = {TORCH_LEFT}("{root}")\n' for root in TORCH_ROOTS},
    LEGACY_TENSOR: '''
def torch_legacy_tensor(dtype):
    """torch.FloatTensor and its kind held as a value, called later: with sizes (ints, or
    one shape tuple, which torch's x.size() is) zeros of that shape, where torch makes an
    uninitialised tensor; with anything else a tensor of that data, of its dtype."""
    def make(*args):
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if args and all(isinstance(size, int) for size in args):
            return ops.zeros(args, dtype)
        return mindspore.Tensor(*args, dtype=dtype)
    return make
''',
    **{f"torch_{part}": f'''
def torch_{part}(x):
    """torch's ``x.{part}``, a property; MindSpore's Tensor.{part} is a method (numpy's and
    Python's are properties)."""
    return x.{part}() if isinstance(x, Tensor) else x.{part}
''' for part in ("real", "imag")},
    TO: '''
def torch_to(x, dtype):
    """Tensor.to with a dtype known only at run time: None, torch's way of asking for
    x's own dtype, keeps x; any other dtype casts."""
    return x if dtype is None else x.astype(dtype)
''',
    XOR: '''
def torch_xor(a, b):
    """``a ^ b``: of two bools, whether they differ (GRAPH_MODE's xor takes integers
    only); of anything else, the operator."""
    if isinstance(a, bool) and isinstance(b, bool):
        return a != b
    return a ^ b
''',
    MESHGRID: '''
def torch_meshgrid(*tensors, indexing=None):
    """torch.meshgrid: the tensors one by one or as one list or tuple, indexed 'ij'
    unless told (None too; ops.meshgrid's default is 'xy'); one tensor is its own grid
    (ops.meshgrid takes two or more)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if len(tensors) == 1:
        return tensors
    return ops.meshgrid(*tensors, indexing="ij" if indexing is None else indexing)
''',
    ADD_MODULE: '''
def torch_add_module(module, name, cell):
    """nn.Module.add_module: the layer is held under ``name``; on a SequentialCell it
    also runs after the others (SequentialCell runs its ``cell_list``), on a ModuleDict's
    adapter it is one of its items."""
    if getattr(module, "items_by_name", False):
        module[name] = cell
        return
    module.insert_child_to_cell(name, cell)
    if isinstance(module, nn.SequentialCell):
        module.cell_list = list(module._cells.values())
''',
    WRAPS: '''
def cell_safe_wraps(wrapped, *args, **kwargs):
    """functools.wraps, except around a Cell: GRAPH_MODE follows ``__wrapped__`` and asks
    for the code of what it wraps, which a Cell (an object) does not have. A function
    keeps what wraps gives it: its name, and the signature inspect reads through it."""
    import functools

    if isinstance(wrapped, nn.Cell):
        return lambda wrapper: wrapper
    return functools.wraps(wrapped, *args, **kwargs)
''',
    REQUIRES_GRAD: '''
def torch_requires_grad_(value, requires_grad=True):
    """requires_grad_ on a module or a tensor: a Cell has no such method, so each of its
    parameters is trained or frozen (MindSpore reads Parameter.requires_grad); a tensor
    or parameter sets its own flag. The value comes back, as torch returns it (MindSpore's
    own method returns None)."""
    if isinstance(value, nn.Cell):
        for param in value.get_parameters():
            param.requires_grad = requires_grad
    else:
        value.requires_grad_(requires_grad)
    return value
''',
    STAND_IN_ERROR: '''
class UnavailableError(Exception):
    """Stands in for an exception class of a package the Cell does not import, where the
    code catches it: no code of that package runs here to raise it."""
''',
    STAND_IN: '''
class _UnavailableType(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # Python's own protocols: not the library's names
        return Unavailable()


class Unavailable(metaclass=_UnavailableType):
    """Stands in for a name from a package the Cell does not import, so that registries,
    decorators and base classes built from it still import: calling it or any attribute
    gives another stand-in, and used as a decorator it returns what it decorates.
    ``reached`` says that code handed one a tensor, whose result it then needs (msready's
    check of the Cell reads it; a message to a logger does not count)."""

    reached = False

    def __init__(self, *args, **kwargs):
        if any(hasattr(a, "asnumpy") for a in (*args, *kwargs.values())):
            Unavailable.reached = True

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return Unavailable(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Unavailable()

    def __mro_entries__(self, bases):
        return (Unavailable,)  # ``class Env(gym.Env)``: a base class from the library

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False


def _unavailable_operand(self, other):
    return Unavailable()


# Arithmetic with a stand-in (``DATASETS_DIR / "coco128"`` in a default argument, run when
# the file is imported) gives another stand-in, from the class or an instance.
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
    for _method in (f"__{_name}__", f"__r{_name}__"):
        setattr(_UnavailableType, _method, _unavailable_operand)
        setattr(Unavailable, _method, _unavailable_operand)
''',
    "TorchCrossEntropyLoss": '''
class TorchCrossEntropyLoss(nn.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss's signature on MindSpore's, taking class indices of any
    integer type: torch's are int64, and MindSpore's class takes int32 only (the
    function it calls takes both)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        if reduce is False:  # torch's older switches, when given, decide the reduction
            reduction = "none"
        elif size_average is False:
            reduction = "sum"
        elif size_average is not None or reduce is not None:
            reduction = "mean"
        super().__init__(weight, ignore_index, reduction, float(label_smoothing))

    def construct(self, logits, labels):
        if labels.dtype != mindspore.int32 and not ops.is_floating_point(labels):
            labels = labels.astype(mindspore.int32)
        return super().construct(logits, labels)


TorchCrossEntropyLoss.__name__ = "CrossEntropyLoss"
''',
    "TorchLayerNorm": '''
class TorchLayerNorm(nn.LayerNorm):
    """torch.nn.LayerNorm's signature (an int shape, ``eps``) on MindSpore's LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        shape = tuple(normalized_shape) if isinstance(normalized_shape, (list, tuple)) \\
            else (normalized_shape,)
        super().__init__(shape, begin_norm_axis=-len(shape), begin_params_axis=-len(shape),
                         epsilon=eps)
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.without_bias = False

    @property
    def weight(self):
        return self.gamma

    @property
    def bias(self):
        return None if self.without_bias else self.beta

    @bias.setter
    def bias(self, value):
        # ``self.bias = None``, a norm without a bias: torch's forward adds nothing, and
        # MindSpore's adds a zero that is not trained
        if value is None:
            self.beta.set_data(ops.zeros_like(self.beta))
            self.beta.requires_grad = False
            self.without_bias = True
        else:
            self.beta = value
            self.without_bias = False


TorchLayerNorm.__name__ = "LayerNorm"
''',
    **{f"TorchBatchNorm{d}d": _BATCH_NORM.replace("{d}", str(d)) for d in (1, 2, 3)},
    **{f"TorchConv{d}d": _CONV.replace("{d}", str(d)) for d in (1, 2, 3)},
    **{f"Torch{kind}Pool{d}d": _pool(kind, d) for kind in ("Max", "Avg") for d in (1, 2, 3)},
    "TorchFunctionContext": '''
class TorchFunctionContext:
    """The ``ctx`` of a torch.autograd.Function's forward: it keeps what is saved."""

    saved_tensors = ()
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        pass

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        pass
''',
    "TorchFunction": '''
class TorchFunction:
    """torch.autograd.Function: ``apply`` runs the static ``forward`` with a context.
    MindSpore differentiates that forward itself; the hand-written ``backward`` is kept
    but not used (a Cell's ``bprop`` is MindSpore's place for it). Each subclass gets its
    own plain ``apply`` function, which GRAPH_MODE compiles also when it is called under
    another name (``sparsemax = SparsemaxFunction.apply``)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        forward = cls.__dict__.get("forward")
        if forward is None:
            return
        forward = forward.__func__ if isinstance(forward, (staticmethod, classmethod)) \
            else forward

        def apply(*args):
            return forward(TorchFunctionContext(), *args)

        cls.apply = staticmethod(apply)
''',
    "TorchGELU": '''
class TorchGELU(nn.GELU):
    """torch.nn.GELU's signature: exact unless ``approximate='tanh'`` (MindSpore's GELU
    takes a bool and approximates by default)."""

    def __init__(self, approximate="none"):
        super().__init__(approximate=approximate == "tanh")


TorchGELU.__name__ = "GELU"
''',
    "TorchLinear": '''
class TorchLinear(nn.Dense):
    """torch.nn.Linear's signature (``bias``, any value by its truth) on MindSpore's
    Dense."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, has_bias=bool(bias))


TorchLinear.__name__ = "Linear"
''',
    "TorchModuleList": '''
class TorchModuleList(nn.CellList):
    """torch.nn.ModuleList on MindSpore's CellList: it takes any iterable and holds None
    where torch's does (``PEG(dim) if first else None``), as a None child, which
    iteration, indexing, ``len`` and ``zip`` give back in PyNative and GRAPH_MODE.
    A slice (``self.convs[1::2]``) holds the same Cells under the names they have: it
    does not rename their parameters for its own positions, as CellList's slice does
    (two slices would give two parameters one name, which GRAPH_MODE refuses)."""

    def __init__(self, modules=None, auto_prefix=True):
        super().__init__(auto_prefix=auto_prefix)
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return TorchModuleList(list(self._cells.values())[index], auto_prefix=False)
        return super().__getitem__(index)

    def __setitem__(self, index, cell):
        if not -len(self) <= index < len(self):
            raise IndexError(f"ModuleList index {index} is out of range")
        self._cells[str(index % len(self))] = self._named(cell, index % len(self))

    def append(self, cell):
        self._cells[str(len(self))] = self._named(cell, len(self))
        return self

    def _named(self, cell, index):
        """``cell`` with its parameters named for position ``index``, as CellList does."""
        if cell is None:
            return None
        if not isinstance(cell, nn.Cell):
            raise TypeError(f"ModuleList holds Cells or None, not {type(cell).__name__}")
        if self._auto_prefix:
            from mindspore.nn.layer.container import _get_prefix_and_index
            prefix, _ = _get_prefix_and_index(
                {key: c for key, c in self._cells.items() if c is not None})
            cell.update_parameters_name(prefix + str(index) + ".")
        return cell

    def extend(self, cells):
        for cell in cells:
            self.append(cell)
        return self

    def set_grad(self, flag=True):
        self.requires_grad = flag
        for cell in self._cells.values():
            if cell is not None:
                cell.set_grad(flag)
        return self
''',
    "TorchModuleDict": '''
class TorchModuleDict(nn.Cell):
    """torch.nn.ModuleDict as a Cell whose children are attributes: unlike nn.CellDict it
    may hold CellList / SequentialCell, and ``d.key`` works in GRAPH_MODE."""

    items_by_name = True  # what add_module adds is one of its items

    def __init__(self, modules=None):
        super().__init__()
        self.names = []
        self.update(modules or {})

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, cell):
        self.insert_child_to_cell(key, cell)
        if key not in self.names:
            self.names.append(key)

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, cell in items:
            self[key] = cell

    def pop(self, key):
        cell = getattr(self, key)
        self.names.remove(key)
        del self._cells[key]
        return cell

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __contains__(self, key):
        return key in self.names

    def keys(self):
        return list(self.names)

    def values(self):
        return [getattr(self, k) for k in self.names]

    def items(self):
        return [(k, getattr(self, k)) for k in self.names]
''',
    **compositions.SOURCES,
    **third_party.SOURCES,
    empty_slices.SETITEM: empty_slices.SOURCE,
}


def keywords_call(value: cst.BaseExpression, renames: dict[str, str],
                  accepted: frozenset[str] | None, dropped: frozenset[str]
                  ) -> cst.BaseExpression:
    """``torch_kwargs(dd, {...}, {...}, (...))``: the adapter call for ``**dd``."""
    text = (f"{KEYWORDS}(x, {dict(sorted(renames.items()))!r}, "
            f"{sorted(accepted) if accepted is not None else None!r}, "
            f"{tuple(sorted(dropped | PLACEMENT))!r})")
    call = cst.parse_expression(text)
    assert isinstance(call, cst.Call)
    return call.with_changes(args=[call.args[0].with_changes(value=value), *call.args[1:]])


def layer_call(cls: cst.BaseExpression, renames: dict[str, str], accepted: frozenset[str],
               dropped: frozenset[str], order: tuple[str, ...] = ()) -> cst.BaseExpression:
    """``torch_layer(nn.ReLU, {...}, [...], (...), ('inplace',))``: a layer class used as
    a value, with torch's positional parameter names."""
    call = keywords_call(cls, renames, accepted, dropped)
    assert isinstance(call, cst.Call)
    extra = [cst.Arg(cst.parse_expression(repr(tuple(order))))] if order else []
    return call.with_changes(func=cst.Name(LAYER), args=[*call.args, *extra])


# The torch packages the scanned repository is itself (a scan of torchvision's own
# sources): their names are the repository's code, translated like any other, and no
# stand-in is bound to them.
_OWN_ROOTS: ContextVar[frozenset[str]] = ContextVar("own_roots", default=frozenset())


@contextmanager
def repository_roots(tops: Iterable[str]) -> Iterator[None]:
    """While generating the Cells of a repository whose top-level packages are ``tops``:
    a torch root among them names the repository's own code, not torch's API."""
    token = _OWN_ROOTS.set(frozenset(tops) & frozenset(TORCH_ROOTS))
    try:
        yield
    finally:
        _OWN_ROOTS.reset(token)


def own_roots() -> frozenset[str]:
    """The torch roots that are the scanned repository's own packages (usually none)."""
    return _OWN_ROOTS.get()


def used(module: cst.Module) -> list[cst.BaseStatement]:
    """The adapter classes a generated module refers to, as statements."""
    names = {n.value for n in find_all(module, m.Name()) if isinstance(n, cst.Name)}
    wanted = [name for name in SOURCES if name in names and name not in own_roots()]
    for name in wanted:  # and what they use (torch_layer calls torch_kwargs)
        wanted += [other for other in SOURCES if other not in wanted
                   and re.search(rf"\b{other}\(", SOURCES[name])]
    out: list[cst.BaseStatement] = []
    for name, source in SOURCES.items():
        if name in wanted:
            body = list(cst.parse_module(source.lstrip("\n")).body)
            if out:  # two blank lines between one adapter and the next
                body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine()] * 2)
            out += body
    return out
