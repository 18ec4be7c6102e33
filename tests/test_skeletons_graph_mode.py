"""Python that runs eagerly but that GRAPH_MODE compiles differently: what the translation
writes so the same Cell also compiles. Each example is generated and run in both modes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst

from msready.analyzer.result import SkeletonResult
from msready.skeletons.translate import _bound_before

# ``run_cells`` (conftest): write files, scan, generate and run the Cells
CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

SKIPS = '''\
import torch
import torch.nn as nn


class UNet(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.downs = nn.ModuleList([nn.Conv2d(dim, dim, 3, padding=1) for _ in range(2)])
        self.ups = nn.ModuleList([nn.Conv2d(dim * 2, dim, 3, padding=1) for _ in range(2)])

    def forward(self, x):
        skips = []
        for down in self.downs:
            x = down(x)
            skips.append(x)
        for up in self.ups:
            x = up(torch.cat((x, skips.pop()), dim=1))
        last = skips.pop() if skips else x
        return x + last
'''


def test_a_pop_inside_an_expression_is_written_alone_on_its_line(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE's list.pop inside an expression gives (list, value); alone, the value
    out, cells = run_cells(tmp_path, {"unet.py": SKIPS})
    code = [ln.strip() for ln in (out / "unet.py").read_text().splitlines()]
    assert code[code.index("popped_1 = skips.pop()") + 1] == \
        "x = up(ops.cat((x, popped_1), axis=1))"
    # a pop that may not run stays where it is
    assert "last = skips.pop() if skips else x" in code
    assert (cells["UNet"].pynative, cells["UNet"].graph) == ("pass", "pass")


CHILDREN = '''\
import torch.nn as nn


class Stack(nn.Module):
    def __init__(self, width=8, depth=3):
        super().__init__()
        for i in range(depth):
            self.add_module(f"fc{i}", nn.Linear(width, width))
        self.names = [name for name, _ in self.named_children()]

    def forward(self, x):
        for layer in self.children():
            x = layer(x).relu()
        for name, layer in self.named_children():
            x = x + layer(x)
        return x
'''


def test_children_iterated_in_forward_read_the_cells_table(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"stack.py": CHILDREN})
    code = [ln.strip() for ln in (out / "stack.py").read_text().splitlines()]
    assert "for layer in self._cells.values():" in code
    assert "for name, layer in self._cells.items():" in code
    # the constructor runs eagerly: MindSpore's own method
    assert "self.names = [name for name, _ in self.name_cells().items()]" in code
    assert (cells["Stack"].pynative, cells["Stack"].graph) == ("pass", "pass")


CACHE = '''\
import torch
import torch.nn as nn


class Biased(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.bias = nn.Parameter(torch.zeros(dim))
        self.cache = {}

    def biases(self, device):
        key = str(device)
        if key not in self.cache:
            self.cache[key] = self.bias * 2
        return self.cache[key]

    def forward(self, x):
        return self.fc(x) + self.biases(x.device)


class Averaged(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.averages = {}

    def forward(self, x):
        x = self.fc(x)
        if 'x' not in self.averages:
            self.averages['x'] = x.detach()
        self.averages['x'] = self.averages['x'] * 0.9 + x.detach() * 0.1
        return x - self.averages['x']
'''


def test_a_cache_forward_fills_becomes_a_local_value(tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE cannot write into a Cell's dict: the value is computed where it was cached
    out, cells = run_cells(tmp_path, {"biased.py": CACHE})
    code = [ln.strip() for ln in (out / "biased.py").read_text().splitlines()]
    start = code.index("key = str(device)")
    assert code[start + 1:start + 3] == ["cached_1 = self.bias * 2", "return cached_1"]
    assert (cells["Biased"].pynative, cells["Biased"].graph) == ("pass", "pass")
    # an entry written again later is state (a moving average), not a cache: kept
    assert "if 'x' not in self.averages:" in code
    assert cells["Averaged"].pynative == "pass"


QUIET = '''\
import warnings

import torch.nn as nn


class Quiet(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        with warnings.catch_warnings():  # the constructor runs eagerly: kept
            warnings.simplefilter("ignore")

    def forward(self, x):
        with warnings.catch_warnings(record=True):
            y = self.fc(x)
        return y
'''


def test_a_context_that_only_changes_warnings_is_dropped_in_forward(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"quiet.py": QUIET})
    code = [ln.strip() for ln in (out / "quiet.py").read_text().splitlines()]
    todo = next(i for i, ln in enumerate(code) if ln.startswith(
        "# TODO(msready MS100): warnings.catch_warnings: GRAPH_MODE compiles no Python "
        "context manager"))
    assert code[todo + 1] == "y = self.fc(x)"
    assert "with warnings.catch_warnings():  # the constructor runs eagerly: kept" in code
    assert (cells["Quiet"].pynative, cells["Quiet"].graph) == ("pass", "pass")


COUNTED = '''\
from torch import nn


def divisible_by(numer, denom):
    return (numer % denom) == 0


class Down(nn.Module):
    def __init__(self, channels=4, factor=2):
        super().__init__()
        self.factor = factor
        self.pool = nn.AvgPool2d(factor)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        assert all([divisible_by(d, self.factor) for d in x.shape[-2:]]), 'odd size'
        return self.proj(self.pool(x))
'''


def test_all_over_a_comprehension_calling_a_module_function_compiles(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE would look for divisible_by in vain inside all(); counted, it compiles
    out, cells = run_cells(tmp_path, {"down.py": COUNTED})
    assert (cells["Down"].pynative, cells["Down"].graph) == ("pass", "pass")
    assert "assert (len([0 for d in x.shape[-2:] if not (divisible_by(d, self.factor))]) " \
           "== 0), 'odd size'" in (out / "down.py").read_text()


DEVICE_AND_DTYPE = '''\
import torch
import torch.nn as nn


class Freqs(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (100 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, x):
        device, dtype = x.device, x.dtype
        rows, cols = x.shape[0], x.shape[1]
        seq = torch.arange(rows * cols, device=device, dtype=dtype)
        return seq[:, None] * self.inv_freq.to(dtype) + x.sum()
'''


def test_a_device_read_with_a_dtype_in_one_assignment_is_written_apart(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE breaks the dtype of a tuple that also holds a tensor's device
    out, cells = run_cells(tmp_path, {"freqs.py": DEVICE_AND_DTYPE})
    code = [ln.strip() for ln in (out / "freqs.py").read_text().splitlines()]
    start = code.index("device = x.device")
    assert code[start + 1] == "dtype = x.dtype"
    assert "rows, cols = x.shape[0], x.shape[1]" in code  # no device: one assignment
    assert (cells["Freqs"].pynative, cells["Freqs"].graph) == ("pass", "pass")



UNPACKED_SHAPE_AND_DEVICE = '''\
import torch
import torch.nn as nn


def sincos(patches, temperature=10000, dtype=torch.float32):
    _, n, dim, device, dtype = *patches.shape, patches.device, patches.dtype
    omega = 1.0 / (temperature ** (torch.arange(dim // 2, device=device) / (dim // 2 - 1)))
    pos = torch.arange(n, device=device)[:, None] * omega[None, :]
    return torch.cat((pos.sin(), pos.cos()), dim=1).type(dtype)


class Tokens(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        *_, n, dtype = *x.shape, x.dtype
        return self.proj(x) + sincos(x).to(dtype)[:n]
'''


def test_a_device_read_beside_a_shape_unpacked_in_place_is_written_apart(
        tmp_path: Path, run_cells: CellRun) -> None:
    # the shape's sizes keep one assignment of their own; a tuple with no device stays
    out, cells = run_cells(tmp_path, {"tokens.py": UNPACKED_SHAPE_AND_DEVICE})
    code = [ln.strip() for ln in (out / "tokens.py").read_text().splitlines()]
    start = code.index("_, n, dim = patches.shape")
    assert code[start + 1:start + 3] == ["device = patches.device", "dtype = patches.dtype"]
    assert "*_, n, dtype = *x.shape, x.dtype" in code
    assert (cells["Tokens"].pynative, cells["Tokens"].graph) == ("pass", "pass"), \
        cells["Tokens"].error



PARTLY_BOUND = '''\
import random

import torch.nn as nn


class Selector(nn.Module):
    def __init__(self, dim=8, choice="a"):
        super().__init__()
        self.options = nn.ModuleDict({"a": nn.Linear(dim, dim), "b": nn.Identity()})
        self.choice = choice
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])

    def forward(self, x):
        if isinstance(self.choice, tuple):
            key = random.choice(self.choice)
        elif isinstance(self.choice, str):
            key = self.choice
        if x.ndim == 3:
            scale = 1.0
        else:
            scale = 2.0
        total = x
        for i, layer in enumerate(self.layers):
            total = total + layer(x)
            last = layer(total)
        return self.options[key](last) * scale + total
'''


def test_a_name_bound_on_some_paths_only_is_bound_to_none_before(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE refuses a name bound in one branch (no ``else``) or in a loop body and
    # read after; bound to None first, every run that worked gives the same result
    out, cells = run_cells(tmp_path, {"selector.py": PARTLY_BOUND})
    code = [ln.strip() for ln in (out / "selector.py").read_text().splitlines()]
    start = code.index("def construct(self, x):")
    body = code[start + 1:]
    assert body[0] == "key = None" and body[1] == "if isinstance(self.choice, tuple):"
    assert body[body.index("total = x") + 1:][:2] == ["last = None",
                                                     "for i, layer in enumerate(self.layers):"]
    # bound in every branch, or bound before: left as written
    assert "scale = None" not in body and "total = None" not in body and "i = None" not in body
    cell = cells["Selector"]
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


def test_a_name_bound_inside_a_loop_is_left_as_written() -> None:
    # a later iteration reads what an earlier one bound: None there would change it
    source = ("def f(xs):\n    for i, x in enumerate(xs):\n        if i == 0:\n"
              "            first = x\n        y = x + first\n    return y\n")
    function = cst.parse_module(source).body[0]
    assert isinstance(function, cst.FunctionDef)
    bound = _bound_before(function)
    assert cst.Module([bound]).code == source.replace("    for", "    y = None\n    for")


EXCLUSIVE = '''\
import torch
import torch.nn as nn


def exists(v):
    return v is not None


class Attend(nn.Module):
    def __init__(self, dim=8, cross=False):
        super().__init__()
        self.cross = cross
        self.proj = nn.Linear(dim, dim)
        self.bits = 6

    def forward(self, x, context=None):
        assert not (self.cross ^ exists(context)), 'context only when cross attending'
        flipped = (x > 0) ^ (x > 1)
        return self.proj(x) * flipped.float() * (self.bits ^ 3)
'''


def test_an_exclusive_or_of_two_bools_compiles(tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE's ``^`` refuses two bools: they are compared; integers and tensors keep
    # the operator
    out, cells = run_cells(tmp_path, {"attend.py": EXCLUSIVE})
    code = (out / "attend.py").read_text()
    assert "assert not (torch_xor(self.cross, exists(context)))" in code
    assert "flipped = torch_xor(x > 0, x > 1)" in code
    assert (cells["Attend"].pynative, cells["Attend"].graph) == ("pass", "pass"), (
        cells["Attend"].error)


MEMBERSHIP = '''\
import torch.nn as nn


class Mask(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.kinds = {'cls', 'mean'}

    def forward(self, x):
        assert x.ndim in {3, 2}, 'tokens or one vector'
        assert x.ndim not in {5}
        return self.proj(x)
'''


def test_a_set_a_value_is_looked_up_in_is_written_as_a_tuple(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE has no sets; the constructor's set stays one
    out, cells = run_cells(tmp_path, {"mask.py": MEMBERSHIP})
    code = (out / "mask.py").read_text()
    assert "assert x.ndim in (3, 2), 'tokens or one vector'" in code
    assert "assert x.ndim not in (5,)" in code
    assert "self.kinds = {'cls', 'mean'}" in code
    assert (cells["Mask"].pynative, cells["Mask"].graph) == ("pass", "pass"), (
        cells["Mask"].error)


FLAG_ALIAS = '''\
import torch
import torch.nn as nn


class Tokens(nn.Module):
    def __init__(self, dim=8, use_cls=True):
        super().__init__()
        self.use_cls = use_cls
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        has_cls = self.use_cls
        scale = self.proj.weight
        if has_cls:
            x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1)
            n_cls = 1
        x = self.proj(x)
        if not has_cls:
            return x
        return x[:, n_cls:]
'''


def test_a_local_name_for_a_cells_flag_is_read_as_the_flag_in_a_test(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``n_cls`` is bound under ``if has_cls:`` only: GRAPH_MODE takes the branch a Cell's
    # attribute selects, and compiles both for a local name
    out, cells = run_cells(tmp_path, {"tokens.py": FLAG_ALIAS})
    code = (out / "tokens.py").read_text()
    assert "        if self.use_cls:\n" in code and "        if not self.use_cls:\n" in code
    assert (cells["Tokens"].pynative, cells["Tokens"].graph) == ("pass", "pass"), (
        cells["Tokens"].error)


LIST_SIZES = '''\
import torch.nn as nn
import torch.nn.functional as F


class SamePool(nn.MaxPool2d):
    def __init__(self, kernel_size, stride, padding=0, dilation=1):
        super().__init__(kernel_size, stride, padding, dilation)
        self.kernel_size = [self.kernel_size] * 2 if isinstance(self.kernel_size, int) \\
            else self.kernel_size
        self.stride = [self.stride] * 2 if isinstance(self.stride, int) else self.stride

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)


class PaddedPool(nn.MaxPool2d):
    def __init__(self, kernel_size, stride, **kwargs):
        super().__init__(kernel_size, stride, **kwargs)
        self.stride = [self.stride] * 2 if isinstance(self.stride, int) else self.stride

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class WrittenPool(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(F.max_pool2d(x, [2, 2], 2), 1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = SamePool(3, 2)
        self.padded = PaddedPool(3, 1, padding=1)
        self.written = WrittenPool()

    def forward(self, x):
        return self.written(self.padded(self.pool(x)))
'''


def test_a_size_torch_takes_as_a_list_reaches_mindspore_as_a_tuple(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ops.max_pool2d checks for an int or a tuple where torch also takes a list
    out, cells = run_cells(tmp_path, {"pool.py": LIST_SIZES})
    code = (out / "pool.py").read_text()
    assert "ops.max_pool2d(x, torch_sizes(self.kernel_size), torch_sizes(self.stride)" in code
    # the padding a subclass reads is torch's, not MindSpore's (0, 0, 0)
    assert "self.padding = padding" in code
    assert "def torch_sizes(value):" in code
    # a list written in the call is written as the tuple; an int is kept as it is
    assert "ops.max_pool2d(x, (2, 2), 2)" in code
    assert "torch_sizes(1)" not in code and "torch_sizes(2)" not in code
    for name in ("SamePool", "PaddedPool", "WrittenPool", "Model"):
        assert (cells[name].pynative, cells[name].graph) == ("pass", "pass"), cells[name].error


def test_the_pooling_settings_mindspore_keeps_in_its_own_form_are_listed() -> None:
    # adapters.OWN_FORM: the settings a subclass reads that MindSpore's layer keeps in
    # another form than the one torch keeps, measured on both frameworks
    import mindspore.nn as ms_nn
    import torch

    from msready.skeletons.adapters import OWN_FORM

    for kind in ("Max", "Avg"):
        for d in (1, 2, 3):
            name = f"torch.nn.{kind}Pool{d}d"
            torch_layer = getattr(torch.nn, f"{kind}Pool{d}d")(2, 2, 1)
            ms_layer = getattr(ms_nn, f"{kind}Pool{d}d")(2, 2, pad_mode="pad", padding=1)
            given = {"kernel_size": 2, "padding": 1}
            differ = {n for n, v in given.items() if getattr(torch_layer, n) == v
                      and hasattr(ms_layer, n) and getattr(ms_layer, n) != v}
            assert differ == set(OWN_FORM.get(name, ())), name


WRAPPED_LAYER = '''\
from functools import wraps

import torch.nn as nn


def maybe(fn=None):
    if fn is None:
        return lambda x: x

    @wraps(fn)
    def inner(x, *args, **kwargs):
        if x is None:
            return x
        return fn(x, *args, **kwargs)

    return inner


class Head(nn.Module):
    def __init__(self, dim=8, project=True):
        super().__init__()
        self.proj = maybe(nn.Linear(dim, dim) if project else None)

    def forward(self, x):
        return self.proj(x)
'''


def test_a_layer_wrapped_by_functools_wraps_compiles(tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE follows the wrapper's __wrapped__ to the layer and asks for its code: the
    # adapter wraps only a function (whose signature inspect may read through it)
    out, cells = run_cells(tmp_path, {"head.py": WRAPPED_LAYER})
    code = (out / "head.py").read_text()
    assert "    @cell_safe_wraps(fn)\n    def inner(x, *args, **kwargs):" in code
    cell = cells["Head"]
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


SIGNATURE_READ_THROUGH_WRAPS = '''\
import functools
import inspect

import torch.nn as nn


def logged(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


def keyword_only(fn):
    """Reads the signature of what it decorates, through ``logged``'s wraps."""
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind == p.KEYWORD_ONLY]
    if not names:
        raise TypeError(f"no keyword-only parameter on {fn.__name__}")
    return fn


@keyword_only
@logged
def build(*, width=8):
    return nn.Linear(width, width)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = build(width=8)

    def forward(self, x):
        return self.body(x)
'''


def test_a_function_wrapped_by_functools_wraps_keeps_its_signature(
        tmp_path: Path, run_cells: CellRun) -> None:
    # torchvision's model builders: a decorator reads the builder's keyword-only
    # parameters through another decorator's wraps, when the file is imported
    _, cells = run_cells(tmp_path, {"build.py": SIGNATURE_READ_THROUGH_WRAPS})
    assert (cells["Net"].pynative, cells["Net"].graph) == ("pass", "pass"), cells["Net"].error


MAPPED_CLOSURE = '''\
import torch.nn as nn


def double(t):
    return t * 2


class Heads(nn.Module):
    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x):
        def split_heads(t):
            return t.unflatten(-1, (self.heads, -1))

        q, k = map(split_heads, (self.to_q(x), self.to_k(x)))
        a, b = map(double, (q, k))
        return (a * b).sum(-1)
'''


def test_a_function_defined_in_forward_mapped_over_values_is_called_on_each(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE's map takes no closure over free variables (here ``self``)
    out, cells = run_cells(tmp_path, {"heads.py": MAPPED_CLOSURE})
    code = [ln.strip() for ln in (out / "heads.py").read_text().splitlines()]
    assert "q, k = [split_heads(item_) for item_ in (self.to_q(x), self.to_k(x))]" in code
    assert "a, b = map(double, (q, k))" in code  # a module's function: map takes it
    cell = cells["Heads"]
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


SCALED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from math import sqrt


class ScaledConv(nn.Module):
    def __init__(self, dim_in=4, dim_out=8):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim_out, dim_in, 3, 3))

    def forward(self, x):
        weight = self.weight / sqrt(self.weight.shape[1] * 9)
        return F.conv2d(x, weight, padding="same")
'''


def test_a_function_imported_from_math_is_called_through_the_module(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE folds ``math.sqrt`` over sizes; ``sqrt`` alone gives a value of no type,
    # and the convolution's weight scaled by it no shape to build the operator from
    again = "import math\n" + SCALED.replace("ScaledConv", "Again")
    out, cells = run_cells(tmp_path, {"scaled.py": SCALED, "both.py": again})
    code = (out / "scaled.py").read_text()
    assert "weight = self.weight / math.sqrt(self.weight.shape[1] * 9)" in code
    assert code.count("import math\n") == 1
    assert (out / "both.py").read_text().count("import math\n") == 1  # imported once
    assert (cells["ScaledConv"].pynative, cells["ScaledConv"].graph) == ("pass", "pass")
