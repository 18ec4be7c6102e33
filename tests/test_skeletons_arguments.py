"""Cells for code that does not say its sizes: argparse options, config objects nothing
defines, library blocks nobody instantiates, torch layers used as values. The Cells are
generated and run on MindSpore; made-up values are reported as synthesized."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from msready.analyzer.apitable import load_table
from msready.analyzer.result import SkeletonResult
from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons import arguments, values
from msready.skeletons.generate import build_skeletons
from msready.skeletons.inputs import InputSpec
from msready.skeletons.shapes import Planner

# ``run_cells`` (conftest): write files, scan, generate and run the Cells
CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

FIXTURES = Path(__file__).parent / "fixtures" / "skeletons"
_RUNS: dict[str, tuple[Path, dict[str, SkeletonResult]]] = {}


def cells(name: str, root: Path) -> tuple[Path, dict[str, SkeletonResult]]:
    """Scan one fixture folder, build and run its Cells (once per test module)."""
    if name not in _RUNS:
        result = scan(str(FIXTURES / name), options=ScanOptions(jobs=1, cache=False,
                                                                target="cpu"))
        out = root / name / "skeletons"
        found = build_skeletons(result, out, run=True, compare_torch=False, cache=False)
        _RUNS[name] = (out, {s.torch_class.rsplit(".", 1)[1]: s for s in found})
    return _RUNS[name]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("arguments")


def test_module_level_argparse_options_become_constants(root: Path) -> None:
    out, results = cells("argparse_gan", root)
    gen = results["Generator"]
    assert (gen.status, gen.pynative, gen.graph) == ("pass", "pass", "pass")
    assert gen.input_shape == "(2, 32)" and gen.output_shape == "(2, 1, 8, 8)"
    code = (out / "models.py").read_text()
    assert "opt = types.SimpleNamespace(latent_dim=32, img_size=8, channels=1, " \
           "dry_run=False)" in code
    assert "tqdm" not in code.split("TODO(msready MS100): side libraries dropped")[0]
    assert "# TODO(msready MS100): side libraries dropped (tqdm)" in code
    # module-level values built by the standard library are kept
    assert 'Shape = namedtuple("Shape", ["channels", "height", "width"])' in code


def test_library_blocks_get_small_consistent_arguments(root: Path) -> None:
    _, results = cells("synthesized", root)
    attention = results["Attention"]
    assert (attention.status, attention.graph) == ("pass", "pass")
    assert attention.synthesized == "dim=16, num_heads=2"
    assert attention.input_shape == "(2, 8, 16)"  # B, N, C = x.shape: a sequence


def test_a_config_read_by_the_blocks_it_builds_is_synthesized_whole(root: Path) -> None:
    # GPT reads vocab_size, n_embd, n_layer; Block(config) reads n_head too. The
    # ModuleDict holds a ModuleList, which nn.CellDict cannot.
    _, results = cells("synthesized", root)
    gpt = results["GPT"]
    assert (gpt.status, gpt.graph) == ("pass", "pass"), gpt.error
    assert gpt.synthesized == "config={vocab_size=32, n_embd=16, n_layer=1, n_head=2}"
    assert gpt.input_shape == "(2, 8) int"


def test_torch_layers_used_as_values_take_torch_arguments(root: Path) -> None:
    out, results = cells("synthesized", root)
    assert results["PreNorm"].status == "pass"
    layer_norm = results["LayerNorm"]  # keeps nn.LayerNorm's constructor
    assert (layer_norm.status, layer_norm.synthesized) == ("pass", "normalized_shape=16")
    code = (out / "blocks.py").read_text()
    assert "class TorchLayerNorm(nn.LayerNorm):" in code
    assert "def __init__(self, dim, norm_layer=TorchLayerNorm):" in code
    assert "return super().construct(x) * 2" in code


def test_cells_that_cannot_be_fed_are_unverified_and_say_why(root: Path) -> None:
    _, results = cells("unverified", root)
    wrapper, loss = results["MultiCrop"], results["CodeLoss"]
    assert (wrapper.status, wrapper.pynative, wrapper.graph) == (
        "unverified", "skipped", "skipped")
    assert wrapper.error is not None and wrapper.error.startswith(
        "constructor argument backbone, head:")
    assert loss.status == "unverified"
    assert loss.error is not None and loss.error.startswith("no input it accepts was found")
    centers = results["CenterLoss"]  # given labels, which pick rows of the centers
    assert (centers.status, centers.input_shape) == ("pass", "(2, 16), (2,) int, (2, 16)")
    scheduled = results["ScheduledLoss"]
    assert (scheduled.status, scheduled.input_shape) == ("pass", "(2, 16), (2, 16), 0")


def test_a_warm_run_reads_cell_outcomes_from_the_cache(tmp_path: Path) -> None:
    result = scan(str(FIXTURES / "synthesized"), options=ScanOptions(jobs=1, cache=False))
    cache = tmp_path / "cache"
    first = build_skeletons(result, tmp_path / "a", run=True, compare_torch=False,
                            cache=True, cache_dir=cache)
    entries = sorted((cache / "cells").glob("*.json"))
    assert len(entries) == len([s for s in first if s.status in ("pass", "fail")])
    for entry in entries:  # mark each stored outcome: the warm run must return it
        outcome = json.loads(entry.read_text())
        outcome["output_shape"] = "(from the cache)"
        entry.write_text(json.dumps(outcome))
    second = build_skeletons(result, tmp_path / "a", run=True, compare_torch=False,
                             cache=True, cache_dir=cache)
    ran = [s for s in second if s.status == "pass"]
    assert ran and all(s.output_shape == "(from the cache)" for s in ran)


@pytest.mark.parametrize(("name", "value"), [
    ("in_chans", 3), ("num_heads", 2), ("embed_dim", 16), ("hidden_size", 16),
    ("vocab_size", 32), ("depth", 1), ("attn_drop", 0.0), ("num_classes", 10),
    ("vision_patch_size", 4), ("mlp_ratio", 2.0), ("qkv_bias", True),
    # a count no pattern knows is one of it; a known word in it still decides
    ("NUM_STACKED_CONVS", 1), ("n_fc", 1), ("num_channels", 16), ("NUM_CLASSES", 10),
    ("numbers", arguments.UNKNOWN), ("nfc", arguments.UNKNOWN),
])
def test_synthesized_values_follow_the_parameter_name(name: str, value: object) -> None:
    assert arguments.by_name(name) == value


def test_a_ratio_is_made_up_as_an_integer_so_that_widths_it_multiplies_stay_sizes() -> None:
    # ``oup = block_args.input_filters * block_args.expand_ratio`` -> nn.Conv2d(inp, oup)
    assert type(arguments.by_name("expand_ratio")) is int


def test_argparse_defaults_are_read_from_add_argument_calls() -> None:
    module = cst.parse_module(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--lr', type=float, default=2e-4)\n"
        "p.add_argument('--n-layers', type=int, default=2 * 3)\n"
        "p.add_argument('--cuda', action='store_true')\n"
        "p.add_argument('--hidden_dim', type=int, required=True)\n")
    assert arguments.argparse_defaults(module) == {
        "lr": 2e-4, "n_layers": 6, "cuda": False, "hidden_dim": None}


def test_a_synthesized_sequence_is_as_long_as_its_constant_indexes_need() -> None:
    init = cst.parse_statement(
        "def __init__(self, levels, channels):\n"
        "    self.last = make(channels[5], levels[-7])\n")
    assert isinstance(init, cst.FunctionDef)
    assert arguments.synthesize("channels", arguments.usage("channels", init)) == (16,) * 6
    assert arguments.synthesize("levels", arguments.usage("levels", init)) == (1,) * 7


def test_a_synthesized_sequence_unpacked_or_named_for_a_size_has_its_length() -> None:
    init = cst.parse_statement(
        "def __init__(self, input_resolution, dims, feat):\n"
        "    self.h, self.w = input_resolution\n"
        "    a, b, c = feat\n"
        "    self.stages = [make(d) for d in dims]\n")
    assert isinstance(init, cst.FunctionDef)
    got = {name: arguments.synthesize(name, arguments.usage(name, init))
           for name in ("input_resolution", "dims", "feat")}
    assert got == {"input_resolution": (32, 32), "dims": (16,) * 4, "feat": (16,) * 3}
    # ``img_size`` indexed but not unpacked: one size per spatial axis
    index = cst.parse_statement("def __init__(self, img_size):\n    self.h = img_size[0]\n")
    assert isinstance(index, cst.FunctionDef)
    assert arguments.synthesize("img_size", arguments.usage("img_size", index)) == (32, 32)


def test_a_parameter_stored_on_self_and_measured_there_is_a_sequence() -> None:
    # ``len(self.strides)``: strides is a sequence although the parameter itself is only
    # stored; ``self.dim = dim`` read as a number stays a number
    init = cst.parse_statement(
        "def __init__(self, strides, dim):\n"
        "    self.strides = strides\n"
        "    self.dim = dim\n"
        "    self.levels = len(self.strides)\n"
        "    self.proj = make(self.dim * 2)\n")
    assert isinstance(init, cst.FunctionDef)
    got = {name: arguments.synthesize(name, arguments.usage(name, init))
           for name in ("strides", "dim")}
    assert got == {"strides": (16,) * 4, "dim": 16}


def test_a_number_default_the_constructor_indexes_is_replaced_by_a_sequence() -> None:
    # ``drop_path: float = 0.`` read as ``drop_path[i]``: the callers pass one rate per
    # block, and the default cannot build the class; a default tested first stays, and
    # so does one made a sequence before it is indexed (``to_ntuple(4)(kernel_sizes)``)
    init = cst.parse_statement(
        "def __init__(self, depth: int = 2, drop_path: float = 0., scale: float = 1.,\n"
        "             kernel_sizes: int = 7):\n"
        "    kernel_sizes = to_ntuple(4)(kernel_sizes)\n"
        "    for i in range(depth):\n"
        "        make(drop_path=drop_path[i], kernel_size=kernel_sizes[i])\n"
        "    if isinstance(scale, float):\n"
        "        scale = [scale] * depth\n"
        "    self.s = scale[0]\n")
    assert isinstance(init, cst.FunctionDef)
    got = arguments.resolve([("depth", 2, False), ("drop_path", 0.0, False),
                             ("scale", 1.0, False), ("kernel_sizes", 7, False)], [], {},
                            lambda name: arguments.usage(name, init))
    assert (got.kwargs, got.missing) == ({"drop_path": (0.0,) * 4}, [])


def test_a_synthesized_width_is_divisible_by_the_classs_own_head_size() -> None:
    # dim % dim_head must be 0: the width becomes the least multiple of 16 it divides
    params = [("dim", None, True), ("dim_head", 32, False), ("groups", 8, False)]
    got = arguments.resolve(params, [], {}, lambda name: arguments.Usage())
    assert got.synthesized == {"dim": 32}
    # head counts given per stage: every one divides it
    params = [("dims", None, True), ("num_heads", (6, 12, 12), False)]
    got = arguments.resolve(params, [], {}, lambda name: arguments.Usage(indexed=True))
    assert got.synthesized == {"dims": (48,) * 4}
    # past 128 the plain width is kept
    params = [("dim", None, True), ("head_dim", 120, False)]
    got = arguments.resolve(params, [], {}, lambda name: arguments.Usage())
    assert got.synthesized == {"dim": 16}


def test_a_string_parameter_gets_the_first_value_the_code_compares_it_with() -> None:
    # ``if kind == "s": ... elif kind == "i": ...``: a value the constructor is written for
    init = cst.parse_statement(
        "def __init__(self, dim, kind: str, mode, style: str):\n"
        "    if kind == 's':\n        self.mix = make(dim)\n"
        "    elif kind == 'i':\n        self.mix = make(dim * 2)\n"
        "    self.mode = mode\n"
        "    self.fast = 'max' != style\n")
    method = cst.parse_statement(
        "def forward(self, x):\n"
        "    return x if self.mode in ('keep', 'skip') else x * 2\n")
    assert isinstance(init, cst.FunctionDef) and isinstance(method, cst.FunctionDef)
    got = {name: arguments.synthesize(name, arguments.usage(name, init))
           for name in ("kind", "style")}
    assert got == {"kind": "s", "style": "max"}
    # the constructor only stores it; forward compares what it stored
    stored = arguments.attribute_usage({"mode"}, method)
    assert arguments.synthesize("mode", stored) == "keep"
    # a string annotation alone says nothing about which string
    plain = cst.parse_statement("def __init__(self, name: str):\n    self.name = name\n")
    assert isinstance(plain, cst.FunctionDef)
    assert arguments.synthesize("name", arguments.usage("name", plain)) is arguments.UNKNOWN


def test_a_sequence_parameter_gets_a_tuple_and_a_called_one_nothing() -> None:
    init = cst.parse_statement(
        "def __init__(self, layers, backbone, act):\n"
        "    self.stages = [backbone(n) for n in layers]\n    self.act = act()\n")
    assert isinstance(init, cst.FunctionDef)
    assert arguments.synthesize("layers", arguments.usage("layers", init)) == (1, 1, 1, 1)
    assert arguments.synthesize("backbone", arguments.usage("backbone", init)) \
        is arguments.UNKNOWN
    # a norm or activation factory: a layer that keeps its input stands in
    assert arguments.synthesize("act", arguments.usage("act", init)) is arguments.KEEP_SHAPE


@pytest.mark.parametrize("annotation, kind, value", [
    ("Union[int, List[int], torch.Size]", "int", 16),
    ("Optional[float]", "float", 1.0),
    ("None | bool", "bool", False),
    ("typing.Tuple[int, int]", "Tuple", (16, 16)),
])
def test_the_first_type_of_a_union_annotation_types_the_parameter(
        annotation: str, kind: str, value: object) -> None:
    init = cst.parse_statement(f"def __init__(self, shape: {annotation}):\n    pass\n")
    assert isinstance(init, cst.FunctionDef)
    used = arguments.usage("shape", init)
    assert used.annotation == kind
    assert arguments.synthesize("shape", used) == value


def test_a_parameter_annotated_as_a_list_gets_a_list() -> None:
    # the constructor may join it to another list (``[in_dim] + out_sizes[:-1]``)
    init = cst.parse_statement("def __init__(self, in_dim: int, out_sizes: List[int]):\n"
                               "    in_sizes = [in_dim] + out_sizes[:-1]\n")
    assert isinstance(init, cst.FunctionDef)
    value = arguments.synthesize("out_sizes", arguments.usage("out_sizes", init))
    assert isinstance(value, arguments.ListValue) and value == (16, 16)


@pytest.mark.parametrize("name, value", [
    ("sample_rate", 16000), ("n_fft", 64), ("win_length", 64), ("hop_length", 16),
    ("n_mels", 8), ("n_mfcc", 8),
    ("n_layers", 1), ("num_heads", 2)])  # other counts as before
def test_a_sound_transform_s_sizes_fit_the_signal_guess(name: str, value: object) -> None:
    # a short-time transform of the 1,600-sample signal input with a window of 64
    init = cst.parse_statement(f"def __init__(self, {name}):\n    self.v = {name}\n")
    assert isinstance(init, cst.FunctionDef)
    assert arguments.synthesize(name, arguments.usage(name, init)) == value


def test_a_torch_computed_constant_other_files_import_stays_importable(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "env.py").write_text(
        "import torch\n\nTORCH_VERSION = tuple(int(x) for x in torch.__version__.split('.'))"
        "\nSCRATCH = torch.zeros(3)\n")
    (repo / "model.py").write_text(
        "import torch.nn as nn\nfrom env import TORCH_VERSION\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n")
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False))
    build_skeletons(result, tmp_path / "skeletons", run=False, compare_torch=False)
    code = (tmp_path / "skeletons" / "env.py").read_text()
    # torch.__version__ is the torch the API table was read from: a version gate
    # computed from it takes that torch's branch
    version = repr(load_table().torch_version)
    assert f"TORCH_VERSION = tuple(int(x) for x in {version}.split('.'))" in code
    # a tensor built at import time is kept as its MindSpore translation
    assert "SCRATCH = ops.zeros(3)" in code


def test_a_torch_import_with_a_fallback_keeps_the_fallback(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "utils.py").write_text(
        "try:\n    from torch import _assert\nexcept ImportError:\n"
        "    def _assert(condition, message):\n        assert condition, message\n")
    (repo / "model.py").write_text(
        "import torch.nn as nn\nfrom utils import _assert\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        _assert(x.ndim == 2, 'a batch of rows')\n"
        "        return x\n")
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False))
    build_skeletons(result, tmp_path / "skeletons", run=False, compare_torch=False)
    code = (tmp_path / "skeletons" / "utils.py").read_text()
    assert "def _assert(condition, message):" in code and "try:" not in code


def test_a_fallback_that_needs_a_side_library_is_dropped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(
        "import torch.nn as nn\nimport cv2\n\ntry:\n"
        "    from torchvision.transforms import InterpolationMode\n"
        "    BICUBIC = InterpolationMode.BICUBIC\nexcept ImportError:\n"
        "    BICUBIC = cv2.INTER_CUBIC\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n")
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False))
    build_skeletons(result, tmp_path / "skeletons", run=False, compare_torch=False)
    code = (tmp_path / "skeletons" / "model.py").read_text()
    assert "BICUBIC" not in code and "class Net(nn.Cell):" in code


NORM_BY_NAME = '''\
import torch.nn as nn

_NORMS = dict(batchnorm=nn.BatchNorm2d, identity=nn.Identity)


def get_norm(name):
    return _NORMS[name] if isinstance(name, str) else name


class ConvNorm(nn.Module):
    def __init__(self, chs, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.conv = nn.Conv2d(chs, chs, 3, padding=1)
        self.norm = norm_layer(chs)

    def forward(self, x):
        return self.norm(self.conv(x))


class Net(nn.Module):
    def __init__(self, chs=8, norm_layer='batchnorm'):
        super().__init__()
        norm_layer = get_norm(norm_layer)
        self.block = ConvNorm(chs, norm_layer=norm_layer)

    def forward(self, x):
        return self.block(x)
'''


def test_a_parameter_reassigned_before_the_instantiation_is_not_its_argument(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``norm_layer`` is a string when Net is called and a class when ConvNorm is built:
    # ConvNorm keeps its own default rather than getting the string
    _, cells = run_cells(tmp_path, {"nets.py": NORM_BY_NAME})
    block = cells["ConvNorm"]
    assert (block.status, block.synthesized, block.input_shape) == ("pass", "", "(2, 8, 16, 16)")


DEFAULT_SET_IN_A_BRANCH = '''\
import torch.nn as nn


class Pool(nn.Module):
    def __init__(self, dim, pool_type='token'):
        super().__init__()
        assert pool_type in ('', 'token')
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, dim=8, global_pool=None, head_type='attn'):
        super().__init__()
        if head_type == 'attn':
            if global_pool is None:
                global_pool = 'token'
            self.head = Pool(dim, pool_type=global_pool)
        for i in range(2):
            self.add_module(f"pool{i}", Pool(dim + i))

    def forward(self, x):
        return self.head(x)
'''


def test_a_parameter_reassigned_in_the_block_holding_the_instantiation_is_not_its_argument(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``global_pool`` is None when Net is called and 'token' when Pool is built, inside the
    # ``if``: Pool keeps its own default rather than getting None
    _, cells = run_cells(tmp_path, {"nets.py": DEFAULT_SET_IN_A_BRANCH})
    pool = cells["Pool"]
    assert (pool.status, pool.synthesized, pool.input_shape) == ("pass", "", "(2, 8)")


BLOCK_CLASS = '''\
from typing import Union

import torch.nn as nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(inplanes, planes * self.expansion, 3, stride, 1)

    def forward(self, x):
        return self.conv(x).relu()


class Bottleneck(BasicBlock):
    expansion = 4


def make_stages(block_fn, channels, inplanes):
    stages = []
    for i, c in enumerate(channels):
        stages.append(block_fn(inplanes, c, 2 if i else 1))
        inplanes = c * block_fn.expansion
    return nn.Sequential(*stages), inplanes


class ResNet(nn.Module):
    def __init__(self, block: Union[BasicBlock, Bottleneck], layers, in_chans=3):
        super().__init__()
        self.stem = nn.Conv2d(in_chans, 8, 3, padding=1)
        self.stages, width = make_stages(block, [8, 16][:len(layers)], 8)
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc(self.stages(self.stem(x)).mean((2, 3)))


class Wrapper(nn.Module):
    def __init__(self, body: BasicBlock):
        super().__init__()
        self.body = body  # a built network: no class can stand in for it

    def forward(self, x):
        return self.body(x)
'''


def test_a_block_class_named_by_the_annotation_is_synthesized(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"resnet.py": BLOCK_CLASS})
    resnet = cells["ResNet"]
    assert (resnet.status, resnet.graph, resnet.synthesized) == (
        "pass", "pass", "block=BasicBlock, layers=(1, 1, 1, 1)")
    # a network it keeps is never given a class: it gets a network of the class its
    # annotation names, built with that class's own arguments
    wrapper = cells["Wrapper"]
    assert (wrapper.status, wrapper.synthesized) == (
        "pass", "body=BasicBlock(inplanes=16, planes=16)")


CONFIG_TO_BASE = '''\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc = nn.Linear(args.input_size, args.hidden)

    def forward(self, x):
        return self.fc(x)


class Classifier(Encoder):
    def __init__(self, args):
        super().__init__(args)
        self.out = nn.Linear(args.hidden, args.num_classes)

    def forward(self, x):
        return self.out(self.fc(x))
'''


def test_a_config_passed_to_the_base_constructor_gets_the_fields_the_base_reads(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"nets.py": CONFIG_TO_BASE})
    cell = cells["Classifier"]
    assert (cell.status, cell.output_shape) == ("pass", "(2, 10)")
    assert "input_size=" in cell.synthesized and "num_classes=10" in cell.synthesized


PARENT_FEEDS_CHILD = '''\
import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim))

    def forward(self, x, mask):
        scores = x @ self.query + (mask - 1) * 1e9
        return (scores.softmax(-1).unsqueeze(-1) * x).sum(1)


class Encoder(nn.Module):
    def __init__(self, vocab=100, dim=24):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pool = Pool(dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, tokens):
        mask = (tokens > 0).float()
        return self.out(self.pool(self.embed(tokens), mask))
'''


def test_a_child_with_no_input_of_its_own_is_proven_by_the_parent_that_calls_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Nothing in Pool gives the size of x (24, from its query) or how mask matches it:
    # every guess fails alone. Encoder runs and calls it with an embedding and a mask:
    # Pool takes that run and the input the parent gave it.
    out, cells = run_cells(tmp_path, {"net.py": PARENT_FEEDS_CHILD})
    encoder, pool = cells["Encoder"], cells["Pool"]
    assert (encoder.status, encoder.input_shape, encoder.ran_inside) == ("pass", "(2, 8) int",
                                                                         "")
    assert (pool.status, pool.pynative, pool.graph) == ("pass", "pass", "pass")
    assert (pool.input_shape, pool.ran_inside) == ("(2, 8, 24), (2, 8)", "net.Encoder")
    assert "# msready: Pool: PyNative pass, GRAPH_MODE pass, input (2, 8, 24), (2, 8) " \
           "(run inside Encoder)\n" in (out / "net.py").read_text()


def test_a_child_the_parent_never_calls_stays_unverified(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Built but not called in this forward: nothing proves it.
    source = PARENT_FEEDS_CHILD.replace("self.out(self.pool(self.embed(tokens), mask))",
                                        "self.out(self.embed(tokens).mean(1))")
    _, cells = run_cells(tmp_path, {"net.py": source})
    assert cells["Encoder"].status == "pass"
    pool = cells["Pool"]
    assert (pool.status, pool.ran_inside) == ("unverified", "")
    assert pool.error is not None and pool.error.startswith("no input it accepts was found")


NORM_AND_ACTIVATION_FACTORIES = '''\
from torch import nn


def get_norm(norm, channels):
    if isinstance(norm, str):
        norm = {"BN": nn.BatchNorm2d}[norm]
    return norm(channels)


class Stem(nn.Module):
    def __init__(self, w_in, w_out, norm, activation_class):
        super().__init__()
        self.conv = nn.Conv2d(w_in, w_out, 3, stride=2, padding=1, bias=False)
        self.bn = get_norm(norm, w_out)
        self.af = activation_class()

    def forward(self, x):
        return self.af(self.bn(self.conv(x)))


class Mlp(nn.Module):
    def __init__(self, dim, act_layer, norm_layer):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 2)
        self.act = act_layer(inplace=True)
        self.norm = norm_layer(dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))
'''


def test_norm_and_activation_factories_nobody_gives_are_synthesized_as_layers_that_keep_shape(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"blocks.py": NORM_AND_ACTIVATION_FACTORIES})
    stem, mlp = cells["Stem"], cells["Mlp"]
    assert (stem.status, stem.graph, stem.output_shape) == ("pass", "pass", "(2, 16, 8, 8)")
    assert stem.synthesized == ("w_in=16, w_out=16, norm=keep_shape, "
                                "activation_class=keep_shape")
    assert (mlp.status, mlp.graph, mlp.output_shape) == ("pass", "pass", "(2, 16)")
    assert mlp.synthesized == "dim=16, act_layer=keep_shape, norm_layer=keep_shape"
    # the stand-in is written next to the Cells, for the user to read
    assert "def keep_shape(*args, **kwargs):" in (out / "msready_synthesized.py").read_text()


BUILT_FROM_A_DICT = '''\
from torch import nn


def check_widths(in_chs, out_chs):
    if in_chs == out_chs:
        raise ValueError("a stage changes the width")


class Stage(nn.Module):
    def __init__(self, in_chs, out_chs, norm_layer=None):
        super().__init__()
        check_widths(in_chs, out_chs)
        self.norm = norm_layer(in_chs)
        self.conv = nn.Conv2d(in_chs, out_chs, 3, padding=1)

    def forward(self, x):
        return self.conv(self.norm(x))


class Net(nn.Module):
    def __init__(self, widths=(8, 12)):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 3, padding=1)
        args = dict(in_chs=widths[0], out_chs=widths[1], norm_layer=nn.BatchNorm2d)
        self.stage = Stage(**args)

    def forward(self, x):
        return self.stage(self.stem(x))
'''


def test_a_child_that_fails_with_made_up_values_passes_inside_the_parent_that_builds_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Stage is built from a dict msready does not follow: alone it gets in_chs=16,
    # out_chs=16, which a check it calls refuses. Net builds it with 8 and 12 and a norm
    # layer and runs it: Stage passes with Net's values; its own failure is a note.
    out, cells = run_cells(tmp_path, {"net.py": BUILT_FROM_A_DICT})
    stage = cells["Stage"]
    assert (stage.status, stage.graph, stage.ran_inside) == ("pass", "pass", "net.Net")
    assert (stage.input_shape, stage.synthesized) == ("(2, 8, 16, 16)", "")
    assert stage.error is not None and stage.error.startswith(
        "alone, with values msready made up (in_chs=16, out_chs=16, norm_layer=keep_shape): "
        "building the Cell: ValueError: a stage changes the width")
    line = int(stage.error.rsplit(":", 1)[1].rstrip(")"))
    assert (out / "net.py").read_text().splitlines()[line - 1].strip() == \
        'raise ValueError("a stage changes the width")'


ARGS_COMPLETED_BY_A_HELPER = '''\
import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--z_size", type=int, default=8)
parser.add_argument("--no_cuda", action="store_true")
args = parser.parse_args()


def load_dataset(args):
    args.input_width = 12
    args.input_type = 'binary'
    args.shape = [1, 12]
    return args


args.cuda = not args.no_cuda and torch.cuda.is_available()


class VAE(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.enc = nn.Linear(args.input_width, args.hidden)
        self.dec = nn.Linear(args.hidden, args.z_size)
        if args.cuda or args.shape != [1, 12]:
            raise ValueError("a CPU run of a list-valued shape")
        if args.input_type == 'binary':
            self.out = nn.Sigmoid()
        elif args.input_type == 'multinomial':
            self.out = nn.Softmax(dim=-1)
        else:
            raise ValueError(args.input_type)

    def forward(self, x):
        return self.out(self.dec(self.enc(x)))


args = load_dataset(args)
model = VAE(args)
'''


def test_fields_a_helper_adds_to_the_argparse_namespace_are_synthesized(
        tmp_path: Path, run_cells: CellRun) -> None:
    # z_size comes from its argparse default; input_width, input_type and shape (a list,
    # compared with a list) are the literals load_dataset sets on the namespace; nothing
    # sets hidden or cuda with a literal: they are synthesized into the namespace (cuda is
    # False: a Cell runs on the CPU), and said so.
    _, cells = run_cells(tmp_path, {"train.py": ARGS_COMPLETED_BY_A_HELPER})
    vae = cells["VAE"]
    assert (vae.status, vae.graph) == ("pass", "pass"), vae.error
    assert (vae.input_shape, vae.output_shape) == ("(2, 12)", "(2, 8)")
    assert vae.synthesized == "args={hidden=16, cuda=False}"


NETWORK_ARGUMENT = '''\
import torch
from torch import nn


class Unet(nn.Module):
    def __init__(self, dim, channels=3):
        super().__init__()
        self.channels = channels
        self.inp = nn.Conv2d(channels, dim, 3, padding=1)
        self.out = nn.Conv2d(dim, channels, 1)

    def forward(self, x, t):
        return self.out(self.inp(x)) * t.view(-1, 1, 1, 1)


class GaussianDiffusion(nn.Module):
    def __init__(self, model, image_size, timesteps=10):
        super().__init__()
        self.model = model
        self.channels = self.model.channels
        self.image_size = image_size
        self.num_timesteps = timesteps

    def forward(self, img):
        t = torch.randint(0, self.num_timesteps, (img.shape[0],)).float()
        noise = torch.randn_like(img)
        return ((self.model(img + noise, t) - noise) ** 2).mean()


if __name__ == "__main__":
    model = Unet(dim=8)
    diffusion = GaussianDiffusion(model, image_size=16, timesteps=100)
'''


def test_a_network_passed_to_another_is_built_from_the_scripts_example(
        tmp_path: Path, run_cells: CellRun) -> None:
    # The example under ``if __name__ == "__main__":`` builds Unet(dim=8) and hands it to
    # GaussianDiffusion: its Cell gets the generated Unet, built with those arguments.
    _, cells = run_cells(tmp_path, {"diffusion.py": NETWORK_ARGUMENT})
    diffusion, unet = cells["GaussianDiffusion"], cells["Unet"]
    assert (diffusion.status, diffusion.graph, diffusion.synthesized) == ("pass", "pass", "")
    # Unet alone: its time is one number per sample
    assert (unet.status, unet.input_shape) == ("pass", "(2, 3, 16, 16), (2,)")


NONE_DEFAULTS = '''\
from torch import nn


class Disc(nn.Module):
    def __init__(self, input_nc=3, ndf=8, opt=None):
        super().__init__()
        self.size = opt.load_size
        self.conv = nn.Conv2d(input_nc, ndf, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Stage(nn.Module):
    def __init__(self, c=8, norm_layer=None, act=None):
        super().__init__()
        self.norm = norm_layer(c)
        self.act = act() if act is not None else nn.Identity()
        self.conv = nn.Conv2d(c, c, 1)

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))
'''


def test_a_none_default_used_without_a_test_for_none_gets_a_synthesized_value(
        tmp_path: Path, run_cells: CellRun) -> None:
    # opt=None read as opt.load_size, norm_layer=None called: the default cannot build
    # the Cell. act=None is tested before use: its default stays.
    _, cells = run_cells(tmp_path, {"none.py": NONE_DEFAULTS})
    disc, stage = cells["Disc"], cells["Stage"]
    assert (disc.status, disc.synthesized) == ("pass", "opt={load_size=32}")
    assert (stage.status, stage.synthesized) == ("pass", "norm_layer=keep_shape")


SHAPE_RECORDS = '''\
from torch import nn


class RetinaHead(nn.Module):
    def __init__(self, input_shape, num_classes, num_anchors=9):
        super().__init__()
        in_channels = [s.channels for s in input_shape]
        assert len(set(in_channels)) == 1
        self.stride = input_shape[0].stride
        self.cls = nn.Conv2d(in_channels[0], num_anchors * num_classes, 3, padding=1)

    def forward(self, x):
        return self.cls(x)
'''


def test_a_list_of_shape_records_is_synthesized_from_the_fields_its_items_give(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"head.py": SHAPE_RECORDS})
    head = cells["RetinaHead"]
    assert (head.status, head.graph, head.output_shape) == ("pass", "pass", "(2, 90, 16, 16)")
    record = "{channels=16, stride=1}"
    assert head.synthesized == f"input_shape=({', '.join([record] * 4)}), num_classes=10"


FIELDS_BY_USE = '''\
from torch import nn


class BoxPredictor(nn.Module):
    def __init__(self, in_channels, box_transform, num_classes):
        super().__init__()
        box_dim = len(box_transform.weights)
        self.scores = nn.Linear(in_channels, num_classes + 1)
        self.deltas = nn.Linear(in_channels, num_classes * box_dim)
        self.clamp = box_transform.scale_clamp

    def forward(self, x):
        return self.scores(x), self.deltas(x)


class PooledHead(nn.Module):
    def __init__(self, spec, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(spec.channels, 8, 3)
        self.fc = nn.Linear(8 * (spec.side - 2) ** 2, num_classes)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))
'''


def test_a_made_up_field_is_a_sequence_or_a_size_as_the_code_uses_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``len(box_transform.weights)``: a sequence (four sizes, so four box deltas per class);
    # ``spec.side - 2``: a size; ``scale_clamp``, only stored, stays None.
    _, cells = run_cells(tmp_path, {"heads.py": FIELDS_BY_USE})
    boxes = cells["BoxPredictor"]
    assert boxes.synthesized == ("in_channels=3, box_transform={weights=(16, 16, 16, 16), "
                                 "scale_clamp=None}, num_classes=10")
    assert (boxes.status, boxes.output_shape) == ("pass", "(2, 11)")
    pooled = cells["PooledHead"]
    assert pooled.synthesized == "spec={channels=16, side=16}, num_classes=10"
    assert (pooled.status, pooled.output_shape) == ("pass", "(2, 10)")


GROUPS_OF_32 = '''\
from torch import nn


def get_norm(norm, out_channels):
    return {"GN": lambda c: nn.GroupNorm(32, c), "BN": nn.BatchNorm2d}[norm](out_channels)


class ASPPConv(nn.Module):
    def __init__(self, in_channels, out_channels, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=dilation,
                              dilation=dilation)
        self.norm = get_norm("GN", out_channels)

    def forward(self, x):
        return self.norm(self.conv(x))


class NonLocal(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.norm = nn.GroupNorm(32, in_channels)
        self.theta = nn.Conv2d(in_channels, in_channels, 1)

    def forward(self, x):
        return x + self.theta(self.norm(x))


class Bottleneck(nn.Module):
    def __init__(self, channels):
        super().__init__()
        mid = channels // 4  # a quarter of the width: 32 groups need 128 channels
        self.reduce = nn.Conv2d(channels, mid, 1)
        self.norm = nn.GroupNorm(32, mid)
        self.expand = nn.Conv2d(mid, channels, 1)

    def forward(self, x):
        return x + self.expand(self.norm(self.reduce(x)))


class Gated(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.norm = nn.GroupNorm(32, in_channels)
        self.gate = nn.Linear(in_channels, in_channels)
        self.scale = self.gate.weight.missing_method()  # fails whatever the width

    def forward(self, x):
        return self.norm(x)
'''


def test_a_cell_that_a_made_up_width_does_not_suit_is_built_wider(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GroupNorm(32, 16) cannot be built: the Cell is tried again with the made-up widths
    # twice as wide, and says which values it ran with
    _, cells = run_cells(tmp_path, {"aspp.py": GROUPS_OF_32})
    cell = cells["ASPPConv"]
    assert (cell.status, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 32, 16, 16)")
    assert cell.synthesized == "in_channels=3, out_channels=32, dilation=1"
    # an image's three channels are widened only when the widths alone do not suit
    non_local = cells["NonLocal"]
    assert (non_local.status, non_local.graph, non_local.input_shape) == (
        "pass", "pass", "(2, 32, 16, 16)")
    assert non_local.synthesized == "in_channels=32"
    # a width divided before it is grouped: eight times as wide
    bottleneck = cells["Bottleneck"]
    assert (bottleneck.status, bottleneck.input_shape) == ("pass", "(2, 128, 16, 16)")
    assert bottleneck.synthesized == "channels=128"
    # when no width builds it, the error past the made-up width's is said too
    gated = cells["Gated"]
    assert gated.status == "fail" and gated.error is not None
    first, wider = gated.error.split("; with wider made-up sizes: ")
    assert first.startswith("building the Cell: ValueError: For 'GroupNorm', the "
                            "'num_channels' must be divided by 'num_groups'")
    assert wider.startswith("AttributeError: ") and "missing_method" in wider
    assert "(at skeletons/aspp.py:" in wider  # the generated line it stopped at


NONE_PASSED_DOWN = '''\
from torch import nn


def norms(norm_layer):
    return norm_layer or nn.LayerNorm, nn.LayerNorm


class Block(nn.Module):
    def __init__(self, dim, norm_layer=None):
        super().__init__()
        self.norm = norm_layer(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(self.norm(x))


class Stage(nn.Module):
    def __init__(self, dim, norm_layer=None):
        super().__init__()
        self.block = Block(dim, norm_layer=norm_layer)

    def forward(self, x):
        return self.block(x)


class Net(nn.Module):
    def __init__(self, dim=16, norm_layer=None):
        super().__init__()
        norm_layer, head_norm = norms(norm_layer)
        self.stage = Stage(dim, norm_layer=norm_layer)
        self.head = head_norm(dim)

    def forward(self, x):
        return self.head(self.stage(x))
'''


def test_a_none_default_handed_down_to_a_block_that_calls_it_is_no_value_for_the_block(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Net replaces its None before building Stage (through a tuple it unpacks); Stage
    # hands its own None default on to Block, which calls it: neither None is an argument,
    # both get a layer that keeps the shape
    _, cells = run_cells(tmp_path, {"nets.py": NONE_PASSED_DOWN})
    assert {name: (c.status, c.synthesized) for name, c in cells.items()} == {
        "Net": ("pass", ""),
        "Stage": ("pass", "norm_layer=keep_shape"),
        "Block": ("pass", "norm_layer=keep_shape"),
    }


STORED_OPTIONS = '''\
import torch
from torch import nn


class ContrastLoss(nn.Module):
    def __init__(self, opt, norm=None):
        super().__init__()
        self.opt = opt
        self.norm = norm
        self.ce = nn.CrossEntropyLoss()

    def forward(self, q, k):
        q = q.view(self.opt.batch_size, -1, q.shape[-1])
        if self.norm is not None:
            q = self.norm(q)
        return q.sum() / self.opt.nce.temperature
'''


def test_options_a_constructor_stores_are_synthesized_from_what_forward_reads(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self.opt = opt``: forward reads opt.batch_size and opt.nce.temperature; the
    # batch size is the one Cells are fed. ``self.norm`` is tested before it is called:
    # its None default stays.
    _, cells = run_cells(tmp_path, {"stored.py": STORED_OPTIONS})
    loss = cells["ContrastLoss"]
    assert (loss.status, loss.synthesized) == (
        "pass", "opt={batch_size=2, nce={temperature=1.0}}")


def test_a_stored_parameter_is_used_as_the_other_methods_use_it() -> None:
    cls = cst.parse_statement(STORED_OPTIONS.split("\n\n\n")[1])
    assert isinstance(cls, cst.ClassDef)
    init, forward = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
    assert arguments.stored_as("opt", init) == {"opt"}
    used = arguments.attribute_usage({"opt"}, forward)
    assert used.fields == (("batch_size",), ("nce", "temperature"))
    assert not used.called and not used.tested
    used = arguments.attribute_usage({"norm"}, forward)
    assert used.called and used.tested


BUILT_BY_A_METHOD = '''\
from torch import nn


class Head(nn.Module):
    def __init__(self, cfg, blocks):
        super().__init__()
        self._build(cfg, blocks)

    def _build(self, cfg, blocks):
        self.convs = nn.ModuleList(
            nn.Conv2d(cfg.channels, cfg.channels, 3, padding=1) for _ in range(len(blocks)))

    def forward(self, x):
        for conv in self.convs:
            x = conv(x)
        return x
'''


def test_a_parameter_handed_to_the_classs_own_method_is_made_up_as_that_method_uses_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self._build(cfg, blocks)`` reads ``cfg.channels`` and measures ``blocks``: a
    # configuration with a width and a sequence, not two numbers
    _, cells = run_cells(tmp_path, {"head.py": BUILT_BY_A_METHOD})
    head = cells["Head"]
    assert (head.status, head.synthesized) == (
        "pass", "cfg={channels=16}, blocks=(1, 1, 1, 1)"), head.error


BROADCAST_BY_A_HELPER = '''\
import collections.abc
import functools

import torch
from torch import nn


def _per_level(params, levels):
    assert isinstance(params, collections.abc.Sequence), "a list, one per level"
    if not isinstance(params[0], collections.abc.Sequence):
        return [params] * levels
    return params


def _bases(sizes):
    return [torch.tensor(s, dtype=torch.float32) for s in sizes]


def from_numbers(init):
    # built from one size and the strides, as detectron2's ``@configurable`` builds
    # a class from a configuration: the positional arguments go to the decorator
    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        if args:
            kwargs = {"sizes": [args[0]], "strides": args[1]}
        init(self, **kwargs)
    return wrapped


class Anchors(nn.Module):
    @from_numbers
    def __init__(self, *, sizes, strides):
        super().__init__()
        self.strides = strides
        sizes = _per_level(sizes, len(strides))
        self.bases = _bases(sizes)

    def forward(self, features):
        return [b.sum() * f.shape[-1] for b, f in zip(self.bases, features)]


def build():
    return Anchors(32, [4, 8])
'''


def test_a_parameter_a_helper_indexes_is_made_up_as_a_sequence(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``sizes = _per_level(sizes, ...)`` hands the argument to a helper that asserts it is
    # a sequence and reads ``params[0]``: a tuple, not the number 16. ``Anchors(32, [4, 8])``
    # gives no value: its arguments are positional and go to the decorator, the
    # constructor's parameters are keyword-only.
    _, cells = run_cells(tmp_path, {"anchors.py": BROADCAST_BY_A_HELPER})
    anchors = cells["Anchors"]
    assert (anchors.status, anchors.synthesized) == (
        "pass", "sizes=(16, 16), strides=(16, 16, 16, 16)"), anchors.error


RECORD_WITH_NONE_SIZES = '''\
from dataclasses import dataclass
from typing import Optional

from torch import nn


@dataclass
class Shape:
    channels: Optional[int] = None
    height: Optional[int] = None
    width: Optional[int] = None


class FlatHead(nn.Module):
    def __init__(self, input_shape, num_classes=3):
        super().__init__()
        self.reduce = nn.Conv2d(input_shape.channels, 8, kernel_size=1)
        self.fc = nn.Linear(8 * input_shape.height * input_shape.width, num_classes)

    def forward(self, x):
        return self.fc(self.reduce(x).flatten(1))
'''


def test_a_record_whose_size_fields_default_to_none_is_given_sizes(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``Shape()`` has every field the head reads, each None: the head would compute
    # ``8 * None * None``. The sizes are made up by name and said so.
    _, cells = run_cells(tmp_path, {"head.py": RECORD_WITH_NONE_SIZES})
    head = cells["FlatHead"]
    assert (head.status, head.synthesized) == (
        "pass", "input_shape={channels=16, height=32, width=32}"), head.error


BUILT_BY_A_FACTORY = '''\
from torch import nn


class PlainStem(nn.Module):
    def __init__(self, w_in, w_out, norm):
        super().__init__()
        self.conv = nn.Conv2d(w_in, w_out, 3, stride=2, padding=1)
        self.norm = nn.BatchNorm2d(w_out) if norm == "BN" else nn.Identity()

    def forward(self, x):
        return self.norm(self.conv(x))


class Decoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class Body(nn.Module):
    def __init__(self, stem_class, width):
        super().__init__()
        self.stem = stem_class(3, width, "BN")
        self.head = nn.Conv2d(width, width, 1)

    def forward(self, x):
        return self.head(self.stem(x))


class Net(Body):
    def __init__(self, *, stem_class, width):
        super().__init__(stem_class=stem_class, width=width)
'''


def test_a_parameter_the_constructor_calls_to_build_a_layer_is_a_repository_class(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``stem_class(3, width, "BN")`` builds a layer: the class standing in is one named for
    # a stem whose constructor takes that call, not a built network (``Decoder`` has a
    # forward too, but is not a stem). ``Net`` hands the parameter to its base.
    _, cells = run_cells(tmp_path, {"body.py": BUILT_BY_A_FACTORY})
    for name in ("Body", "Net"):
        cell = cells[name]
        assert (cell.status, cell.synthesized) == (
            "pass", "stem_class=PlainStem, width=32"), (name, cell.error)


FILLED_BY_APPENDS = '''\
from torch import nn


class Chain(nn.Module):
    def __init__(self, widths):
        super().__init__()
        assert len(widths) > 0, "at least one layer"
        self.layers = nn.ModuleList(nn.Linear(w, w) for w in widths)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(depth):
    widths = []
    for _ in range(depth):
        widths.append(8)
    return Chain(widths)
'''


def test_a_list_filled_after_it_is_written_is_not_its_literal(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``widths = []`` is filled by the loop: at ``Chain(widths)`` it is not the empty list
    _, cells = run_cells(tmp_path, {"chain.py": FILLED_BY_APPENDS})
    chain = cells["Chain"]
    assert (chain.status, chain.synthesized) == (
        "pass", "widths=(16, 16, 16, 16)"), chain.error


OPTIONS_DECLARED_ELSEWHERE = {
    "options.py": '''\
import argparse


class Options:
    def initialize(self, parser: argparse.ArgumentParser):
        parser.add_argument("--netD", type=str, default="basic", help="discriminator kind")
        parser.add_argument("--ndf", type=int, default=64)
        return parser
''',
    "critic.py": '''\
from torch import nn


class Critic(nn.Module):
    def __init__(self, in_ch, opt=None):
        super().__init__()
        assert opt is not None
        self.opt = opt
        width = self.opt.ndf
        stride = 1 if "patch" in self.opt.netD else 2
        self.body = nn.Conv2d(in_ch, width, 3, stride=stride, padding=1)

    def forward(self, x):
        return self.body(x)
''',
}


def test_an_options_object_asserted_given_takes_the_defaults_the_parsers_declare(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``assert opt is not None`` requires it, although its default is None. The made-up
    # ``opt`` has the fields the constructor reads; ``netD``, a string msready has no
    # guess for, is the default a parser of the repository declares for it (the width
    # ``ndf`` stays made up small).
    _, cells = run_cells(tmp_path, OPTIONS_DECLARED_ELSEWHERE)
    critic = cells["Critic"]
    assert (critic.status, critic.synthesized) == (
        "pass", "in_ch=16, opt={ndf=16, netD='basic'}"), critic.error


A_CHAIN_OF_GIVEN_LAYERS = '''\
from torch import nn


class Flow(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.chain = nn.ModuleList(layers)

    def forward(self, x, logp=None):
        for layer in self.chain:
            x, logp = layer(x, logp)
        return x
'''


def test_layers_handed_to_a_module_list_are_made_up_as_an_empty_list(
        tmp_path: Path, run_cells: CellRun) -> None:
    # no layer msready could make up is one the repository chains: the Cell runs its own
    # code over none, and says so (not ``layers=16``, which ModuleList cannot take)
    _, cells = run_cells(tmp_path, {"flow.py": A_CHAIN_OF_GIVEN_LAYERS})
    flow = cells["Flow"]
    assert (flow.status, flow.synthesized) == ("pass", "layers=()"), flow.error


ASKED_WHAT_IT_HOLDS = '''\
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, width, replacements, frozen=("bias",)):
        super().__init__()
        self.replacements = replacements
        self.fc = self._wrap(nn.Linear(width, width))
        if "weight" in frozen:
            self.fc.weight.requires_grad = False

    def _wrap(self, layer):
        if type(layer) in self.replacements:
            return self.replacements[type(layer)](layer)
        return layer

    def forward(self, x):
        return self.fc(x)
'''


def test_a_parameter_only_asked_what_it_holds_is_made_up_as_an_empty_dict(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``type(layer) in self.replacements`` (in a method the constructor runs) asks a
    # collection: an empty dictionary holds nothing, so the Cell keeps its own layer
    # (``replacements=16`` is not iterable); a parameter with a default keeps it
    _, cells = run_cells(tmp_path, {"wrap.py": ASKED_WHAT_IT_HOLDS})
    wrapper = cells["Wrapper"]
    assert (wrapper.status, wrapper.synthesized) == (
        "pass", "width=32, replacements=dict()"), wrapper.error


READ_BY_THE_BASE = '''\
from torch import nn


class Critic(nn.Module):
    def __init__(self, in_ch, opt):
        super().__init__()
        self.opt = opt
        self.body = nn.Conv2d(in_ch, self.opt.width, 3, padding=1)

    def forward(self, x):
        return self.body(x)


class TiledCritic(Critic):
    def forward(self, x):
        size = self.opt.patch_size
        b, c, h, w = x.shape
        tiles = x.reshape(b, c, h // size, size, w // size, size)
        tiles = tiles.permute(0, 2, 4, 1, 3, 5).reshape(-1, c, size, size)
        return super().forward(tiles)
'''


def test_a_subclass_reads_a_stored_parameter_as_its_base_does(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``TiledCritic`` runs ``Critic.__init__``, which reads ``self.opt.width``: its own
    # ``opt`` needs that field as well as the ``patch_size`` its forward reads
    _, cells = run_cells(tmp_path, {"critic.py": READ_BY_THE_BASE})
    tiled = cells["TiledCritic"]
    assert (tiled.status, tiled.synthesized) == (
        "pass", "in_ch=16, opt={patch_size=4, width=32}"), tiled.error


WRAPPED_NETWORK = '''\
import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, dim, channels=3):
        super().__init__()
        self.channels = channels
        self.net = nn.Conv2d(channels, channels, 3, padding=1)
        self.scale = nn.Linear(1, dim)

    def forward(self, x, t):
        return self.net(x) * self.scale(t[:, None]).mean()


class Diffusion(nn.Module):
    def __init__(self, model, image_size):
        super().__init__()
        self.model = model
        self.channels = self.model.channels
        self.image_size = image_size

    def forward(self, img):
        b, c, h, w = img.shape
        assert c == self.channels and h == self.image_size
        t = torch.rand(b)
        return ((self.model(img, t) - img) ** 2).mean()


class Meta(nn.Module):
    def __init__(self, model, lr):
        super().__init__()
        self.model = model
        self.lr = lr

    def forward(self, x, t):
        return self.model(x, t) * self.lr
'''


def test_a_network_nothing_gives_is_a_repository_network_with_what_is_read_from_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Nothing builds Diffusion: its model must have ``channels`` and be called, which the
    # file's Denoiser is; Denoiser is built with its own synthesized arguments.
    _, cells = run_cells(tmp_path, {"wrapped.py": WRAPPED_NETWORK})
    diffusion = cells["Diffusion"]
    assert (diffusion.status, diffusion.synthesized) == (
        "pass", "model=Denoiser(dim=16), image_size=32")
    # Meta only calls its model, with two inputs: the first network of the file that
    # takes two is Denoiser (Diffusion takes one)
    assert cells["Meta"].synthesized.startswith("model=Denoiser(dim=16), lr=1.0")


FEATURE_WRAPPER = '''\
from torch import nn


class Plain(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Hooked(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.feature_info = model.feature_info
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.norm(self.model(x))


class Pyramid(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.down = nn.Conv2d(width, width, 3, stride=2, padding=1)
        self.feature_info = [dict(module="stem", num_chs=width), dict(module="down", num_chs=width)]

    def forward(self, x):
        return self.down(self.stem(x))


def _feature_names(net, out_indices):
    return [net.feature_info[i]["module"] for i in out_indices]


def default(val, d):
    return val if val is not None else (d() if callable(d) else d)


class Widened(nn.Module):
    def __init__(self, dim, init_dim=None):
        super().__init__()
        self.conv = nn.Conv2d(3, default(init_dim, dim), 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class Features(nn.Module):
    def __init__(self, model, out_indices=(0, 1)):
        super().__init__()
        self.names = _feature_names(model, out_indices)
        self.model = model

    def forward(self, x):
        out = []
        for name, layer in self.model.named_children():
            x = layer(x)
            if name in self.names:
                out.append(x)
        return out
'''


def test_a_stand_in_network_has_what_a_helper_reads_from_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``_feature_names(model, ...)`` reads ``model.feature_info``: Plain, first in the
    # file, has none; Hooked has it but wraps a network it would need made up too;
    # Pyramid has it
    _, cells = run_cells(tmp_path, {"features.py": FEATURE_WRAPPER})
    features = cells["Features"]
    assert (features.status, features.graph, features.synthesized) == (
        "pass", "pass", "model=Pyramid()")
    # the wrapper itself wraps Pyramid
    assert (cells["Hooked"].status, cells["Hooked"].synthesized) == ("pass", "model=Pyramid()")
    # a generic helper that calls its argument when it is callable says nothing of it:
    # ``dim`` is still a size, not a network
    widened = cells["Widened"]
    assert (widened.status, widened.synthesized, widened.output_shape) == (
        "pass", "dim=16", "(2, 16, 16, 16)")


FORWARDED_KWARGS = '''

class Weighted(Diffusion):
    def __init__(self, model, weight=0.5, *args, **kwargs):
        super().__init__(model, *args, **kwargs)
        self.weight = weight

    def forward(self, img):
        return super().forward(img) * self.weight
'''


def test_arguments_handed_to_the_base_through_kwargs_are_the_bases_to_find(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Weighted declares only model and weight; Diffusion's image_size comes through
    # **kwargs and is found as Diffusion finds it; model is a network, as Diffusion
    # uses it.
    _, cells = run_cells(tmp_path, {"wrapped.py": WRAPPED_NETWORK + FORWARDED_KWARGS})
    weighted = cells["Weighted"]
    assert (weighted.status, weighted.synthesized) == (
        "pass", "model=Denoiser(dim=16), image_size=32")


KWARGS_TO_A_PART = '''\
from torch import nn


class Body(nn.Module):
    def __init__(self, *, dim, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class LanguageModel(nn.Module):
    """Declares what it uses itself and hands the rest to the part it builds."""

    def __init__(self, *, num_tokens, dim, **kwargs):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, dim)
        self.body = Body(dim=dim, **kwargs)
        self.out = nn.Linear(dim, num_tokens)

    def forward(self, tokens):
        return self.out(self.body(self.embed(tokens)))
'''


def test_arguments_handed_to_a_part_through_kwargs_are_the_parts_to_find(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Body's required depth is required of LanguageModel too: it comes through **kwargs
    _, cells = run_cells(tmp_path, {"lm.py": KWARGS_TO_A_PART})
    model = cells["LanguageModel"]
    assert (model.status, model.graph) == ("pass", "pass"), model.error
    assert model.synthesized == "num_tokens=32, dim=16, depth=1"


KIND_TESTED = '''\
from torch import nn


class Heads(nn.Module):
    """One head per task when given a list of widths, else one head."""

    def __init__(self, dim, output_dim):
        super().__init__()
        self.multi = isinstance(output_dim, list)
        if self.multi:
            self.heads = nn.ModuleList([nn.Linear(dim, d) for d in output_dim])
        else:
            self.head = nn.Linear(dim, output_dim)

    def forward(self, x):
        if self.multi:
            return [head(x) for head in self.heads]
        return self.head(x)
'''


def test_a_parameter_whose_kind_is_tested_is_made_up_as_a_number(
        tmp_path: Path, run_cells: CellRun) -> None:
    # iterated in one branch, a width in the other: the number is the simpler kind
    _, cells = run_cells(tmp_path, {"heads.py": KIND_TESTED})
    heads = cells["Heads"]
    assert (heads.status, heads.graph, heads.synthesized) == ("pass", "pass",
                                                              "dim=16, output_dim=16")


OWN_WEIGHT = '''\
import torch
import torch.nn.functional as F
from torch import nn


class WeightedConv1d(nn.Module):
    def __init__(self, cin, cout, kernel=3, ones=False):
        super().__init__()
        weight = torch.randn(cout, cin + int(ones), kernel)
        self.weight = nn.Parameter(weight)
        self.ones = ones

    def forward(self, x):
        if self.ones:
            x = F.pad(x, (0, 0, 1, 0), value=1.)
        return F.conv1d(x, self.weight / 2, padding=1)


class ScaledLinear(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn((fout, fin)))

    def forward(self, x):
        return F.linear(x, self.weight)


class Block(nn.Module):
    def __init__(self, cin=5, cout=6):
        super().__init__()
        self.conv = WeightedConv1d(cin, cout, ones=False)

    def forward(self, x):
        return self.conv(x).relu()
'''


def test_a_module_applying_its_own_weight_takes_the_weights_input_width(
        tmp_path: Path, run_cells: CellRun) -> None:
    # No layer gives the width: F.conv1d and F.linear apply the Module's own weight,
    # whose second size (cin + int(ones), fin) is what the input must have; F.pad before
    # the convolution keeps the rank. The parent that builds the Module takes the same
    # input.
    _, cells = run_cells(tmp_path, {"net.py": OWN_WEIGHT})
    assert (cells["Block"].status, cells["Block"].input_shape) == ("pass", "(2, 5, 32)")
    assert (cells["ScaledLinear"].status, cells["ScaledLinear"].input_shape) == ("pass",
                                                                                 "(2, 16)")
    conv = cells["WeightedConv1d"]
    assert (conv.status, conv.input_shape) == ("pass", "(2, 5, 32)")  # Block's values


FEATURE_PYRAMID = '''\
from typing import List

import torch
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def __init__(self, channels=8, anchors=3):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.logits = nn.Conv2d(channels, anchors, 1)

    def forward(self, features: List[torch.Tensor]):
        return [self.logits(F.relu(self.conv(x))) for x in features]


class Fuse(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, maps, scale):
        total = 0
        for i, x in enumerate(maps):
            total = total + self.proj(x).mean() * scale
        return total


class Image(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return [self.proj(row[None]) for row in x if x.dim() == 4]


class Levels(nn.Module):
    def __init__(self, channels=(4, 4, 4)):
        super().__init__()
        self._num_levels = len(channels)
        self.conv = nn.Conv2d(channels[0], 2, 3, padding=1)

    def forward(self, features: List[torch.Tensor]):
        assert len(features) == self._num_levels
        return [self.conv(x) for x in features]


class Joined(nn.Module):
    def __init__(self, dimension=1):
        super().__init__()
        self.d = dimension

    def forward(self, x):
        return torch.cat(x, self.d)


class Pooled(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        if isinstance(x, list):
            x = torch.cat(x, 1)
        return self.conv(x).mean((2, 3))
'''


def test_a_forward_taking_a_list_of_feature_maps_gets_a_list(
        tmp_path: Path, run_cells: CellRun) -> None:
    # features is annotated List[Tensor]; maps is iterated and never used as a tensor.
    # Image iterates its input too, but measures it (x.dim()): it is one tensor.
    _, cells = run_cells(tmp_path, {"heads.py": FEATURE_PYRAMID})
    head, fuse = cells["Head"], cells["Fuse"]
    assert (head.pynative, head.graph) == ("pass", "pass")
    assert head.input_shape == "[(2, 8, 16, 16), (2, 8, 16, 16)]"
    assert (fuse.status, fuse.input_shape) == ("pass", "[(2, 4, 16, 16), (2, 4, 16, 16)], "
                                                       "(2, 4, 16, 16)")
    assert cells["Image"].input_shape == "(2, 4, 16, 16)"
    # as many maps as forward asserts: one per level the constructor was given
    levels = cells["Levels"]
    assert (levels.pynative, levels.graph, levels.input_shape) == (
        "pass", "pass", "[(2, 4, 16, 16), (2, 4, 16, 16), (2, 4, 16, 16)]")
    # joined whole by torch.cat: a list (YOLOv5's Concat)
    joined = cells["Joined"]
    assert (joined.pynative, joined.graph) == ("pass", "pass")
    assert joined.input_shape.startswith("[(2, ")
    # joined only when it is a list (YOLOv5's Classify): one tensor will do
    assert (cells["Pooled"].status, cells["Pooled"].input_shape) == ("pass", "(2, 4, 16, 16)")


def test_a_list_of_feature_maps_is_compared_with_torch_map_by_map(tmp_path: Path) -> None:
    # torch runs the same list: each map crosses to the comparison on its own
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "heads.py").write_text(FEATURE_PYRAMID, encoding="utf-8")
    result = scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False,
                                                              target="cpu"))
    found = build_skeletons(result, tmp_path / "out", run=True, compare_torch=True,
                            cache=False)
    head = next(s for s in found if s.torch_class.endswith(".Head"))
    assert head.pynative == "pass" and head.max_abs_diff is not None
    assert head.max_abs_diff < 1e-4


PER_STEP_NORM = '''\
import torch
import torch.nn.functional as F
from torch import nn


class StepNorm(nn.Module):
    def __init__(self, num_features, steps=3):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(steps, num_features))
        self.bias = nn.Parameter(torch.zeros(steps, num_features))

    def forward(self, x, step):
        assert step < self.weight.shape[0]
        return x * self.weight[step] + self.bias[step]


class Block(nn.Module):
    def __init__(self, width=6):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.norm = StepNorm(width)

    def forward(self, x, step):
        return self.norm(self.fc(x), step)


class Lookup(nn.Module):
    def __init__(self, n=5):
        super().__init__()
        self.table = nn.Parameter(torch.randn(n, 4))

    def forward(self, ids):
        return self.table[ids]


class ScheduledLoss(nn.Module):
    def __init__(self, epochs=4):
        super().__init__()
        self.temps = [0.1 * (e + 1) for e in range(epochs)]
        self.fc = nn.Linear(4, 4)

    def forward(self, x, epoch):
        return self.fc(x) / self.temps[epoch]
'''


def test_an_argument_that_picks_a_step_is_a_python_int(tmp_path: Path,
                                                       run_cells: CellRun) -> None:
    # step indexes the per-step parameters (and is compared): the int 0, also for
    # Block, which hands it to StepNorm. ids indexes too, but is token indices.
    _, cells = run_cells(tmp_path, {"norms.py": PER_STEP_NORM})
    block = cells["Block"]
    assert (block.pynative, block.graph, block.input_shape) == ("pass", "pass", "(2, 6), 0")
    assert cells["StepNorm"].input_shape.endswith(", 0")
    assert "0" not in cells["Lookup"].input_shape.split(", ")
    # an epoch picks the schedule's value for that epoch
    loss = cells["ScheduledLoss"]
    assert (loss.pynative, loss.input_shape) == ("pass", "(2, 4), 0")


ASSERTED_SHAPE = '''\
import torch
from torch import nn


class Unet(nn.Module):
    def __init__(self, dim=8, channels=3, image_size=12):
        super().__init__()
        self.channels = channels
        self.image_size = image_size
        self.stem = nn.Conv2d(channels + 1, dim, 1)
        self.out = nn.Conv2d(dim, channels, 1)

    def forward(self, x):
        assert x.shape[1:] == (self.channels, self.image_size, self.image_size)
        ones = torch.ones_like(x[:, :1])
        return self.out(self.stem(torch.cat((x, ones), dim=1)))
'''


def test_a_shape_forward_asserts_is_the_input(tmp_path: Path, run_cells: CellRun) -> None:
    # the first layer takes channels + 1 (forward adds a plane); the assertion says
    # what comes in, image size included
    _, cells = run_cells(tmp_path, {"unet.py": ASSERTED_SHAPE})
    unet = cells["Unet"]
    assert (unet.pynative, unet.graph, unet.input_shape) == ("pass", "pass", "(2, 3, 12, 12)")


BLOCK_OR_DEFAULT = '''\
import torch
from torch import nn


class ConvAct(nn.Module):
    def __init__(self, cin, cout, k=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(x))


class Mixed(nn.Module):
    def __init__(self, conv_block=None):
        super().__init__()
        conv_block = conv_block or ConvAct
        self.branch0 = conv_block(12, 8)
        self.branch1 = conv_block(12, 4, k=3)

    def forward(self, x):
        return torch.cat([self.branch0(x), self.branch1(x)], 1)
'''


def test_a_block_class_chosen_by_or_gives_the_first_layer(tmp_path: Path,
                                                          run_cells: CellRun) -> None:
    # conv_block is None unless given, then ConvAct: its Conv2d takes 12 channels
    _, cells = run_cells(tmp_path, {"mixed.py": BLOCK_OR_DEFAULT})
    mixed = cells["Mixed"]
    assert (mixed.pynative, mixed.graph, mixed.input_shape) == ("pass", "pass",
                                                                "(2, 12, 16, 16)")


PARTIAL_BLOCK = '''\
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


class ConvBn(nn.Module):
    def __init__(self, cin, cout, kernel_size=3, stride=1, padding=None, eps=1e-5):
        super().__init__()
        padding = kernel_size // 2 if padding is None else padding
        self.conv = nn.Conv2d(cin, cout, kernel_size, stride, padding)
        self.bn = nn.BatchNorm2d(cout, eps=eps)

    def forward(self, x):
        return self.bn(self.conv(x))


class Reduce(nn.Module):
    def __init__(self, cin, conv_block=None):
        super().__init__()
        conv_block = conv_block or ConvBn
        self.conv = conv_block(cin, 8, kernel_size=3, stride=2)

    def forward(self, x):
        return torch.cat([self.conv(x), F.max_pool2d(x, 3, stride=2)], 1)


class Net(nn.Module):
    def __init__(self, in_chans=3, eps=1e-3):
        super().__init__()
        conv_block = partial(ConvBn, padding=0, eps=eps)
        self.stem = conv_block(in_chans, 16, kernel_size=3)
        self.reduce = Reduce(16, conv_block=conv_block)
        self.head = Reduce(24, conv_block=partial(ConvBn, padding=0, eps=get_eps()))

    def forward(self, x):
        return self.head(self.reduce(self.stem(x)))


def get_eps():
    return 1e-3
'''


def test_a_block_class_bound_by_partial_gives_the_first_layer_and_its_keywords(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"net.py": PARTIAL_BLOCK})
    # the stem is ``partial(ConvBn, ...)(in_chans, 16)``: three channels, not the 16 of
    # the first block whose class is named
    net = cells["Net"]
    assert (net.pynative, net.graph, net.input_shape) == ("pass", "pass", "(2, 3, 16, 16)")
    # the parent hands Reduce an unpadded convolution, which its pooling branch needs;
    # the Cell gets it (the second site's ``partial`` has a keyword msready cannot
    # compute, so it gives nothing), and runs alone
    reduce = cells["Reduce"]
    assert (reduce.pynative, reduce.graph, reduce.ran_inside) == ("pass", "pass", "")
    assert reduce.input_shape == "(2, 16, 16, 16)"


FACTORY_BUILDER = '''\
def build_model(model_cls, variant, pretrained=False, model_cfg=None, **kwargs):
    kwargs.pop("pruned", None)
    if model_cfg is None:
        model = model_cls(**kwargs)
    else:
        model = model_cls(cfg=model_cfg, **kwargs)
    return model
'''

FACTORY_MODELS = '''\
from torch import nn

from ._builder import build_model


class Net(nn.Module):
    def __init__(self, cfg, num_classes=10, in_chans=3):
        super().__init__()
        chs = cfg["stem_chs"]
        self.stem = nn.Conv2d(in_chans, chs[0], 3, padding=1)
        self.blocks = nn.Sequential(*[nn.Conv2d(a, b, 3, padding=1)
                                      for a, b in zip(chs[:-1], chs[1:])])
        self.head = nn.Linear(chs[-1], num_classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class Former(nn.Module):
    def __init__(self, dims=(8, 16)):
        super().__init__()
        self.conv = nn.Conv2d(3, dims[0], 3, padding=1)
        self.proj = nn.Linear(dims[0], dims[1])

    def forward(self, x):
        return self.proj(self.conv(x).flatten(2).transpose(1, 2))


model_cfgs = dict(
    net_s=dict(stem_chs=(8, 12, 16)),
    net_m=dict(stem_chs=(16, 24, 32)),
)


def _create_net(variant, pretrained=False, **kwargs):
    return build_model(Net, variant, pretrained, model_cfg=model_cfgs[variant], **kwargs)


def net_s(pretrained=False, **kwargs):
    return _create_net("net_s", pretrained=pretrained, **dict(num_classes=5, **kwargs))


def _create_former(variant, pretrained=False, **kwargs):
    return build_model(Former, variant, pretrained, **kwargs)


def former_s(pretrained=False, **kwargs):
    model_args = dict(dims=(8, 12))
    return _create_former("former_s", pretrained=pretrained, **dict(model_args, **kwargs))


class Stem(nn.Module):
    def __init__(self, cfg, in_chans=3):
        super().__init__()
        self.conv = nn.Conv2d(in_chans, cfg["width"], 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def _create_stem(variant, pretrained=False, **kwargs):
    model_cls = Stem
    if kwargs.pop("features_only", False):
        model_cls = None
    cfg = {}
    if variant.startswith("stem_s"):
        cfg["width"] = 6
    elif variant == "stem_m":
        cfg["width"] = 12
    return build_model(model_cls, variant, pretrained, model_cfg=cfg, **kwargs)


def stem_s(pretrained=False, **kwargs):
    return _create_stem("stem_s", pretrained=pretrained, **kwargs)
'''


def test_a_class_handed_to_a_factory_gets_the_arguments_the_factory_builds_it_with(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"models/__init__.py": "",
                                    "models/_builder.py": FACTORY_BUILDER,
                                    "models/net.py": FACTORY_MODELS})
    # ``model_cls(cfg=model_cfg, **kwargs)`` in the factory: cfg is ``model_cfgs["net_s"]``
    # (the variant net_s passes through _create_net), num_classes the 5 net_s adds
    net = cells["Net"]
    assert (net.pynative, net.graph, net.synthesized) == ("pass", "pass", "")
    assert (net.input_shape, net.output_shape) == ("(2, 3, 16, 16)", "(2, 5)")
    # ``**dict(model_args, **kwargs)``: the widths former_s gives, not the defaults
    former = cells["Former"]
    assert (former.pynative, former.graph, former.output_shape) == (
        "pass", "pass", "(2, 256, 12)")
    # handed through a local name, its config filled in the branch stem_s's variant takes
    stem = cells["Stem"]
    assert (stem.pynative, stem.synthesized, stem.output_shape) == (
        "pass", "", "(2, 6, 16, 16)")


ARCH_DECODER = """\
import re


def decode_arch(arch_def, depth_multiplier=1.0):
    stages = []
    for block_strings in arch_def:
        assert isinstance(block_strings, list)
        for text in block_strings:
            repeats, width = re.match(r"r([0-9]+)_c([0-9]+)", text).groups()
            stages.append((int(width), max(1, round(int(repeats) * depth_multiplier))))
    return stages


def make_divisible(value, divisor=8):
    return max(divisor, int(value + divisor / 2) // divisor * divisor)
"""

ARCH_MODELS = """\
from functools import partial

from torch import nn

from ._builder import build_model
from ._decoder import decode_arch, make_divisible


def scaled(channels, multiplier=1.0):
    return int(channels * multiplier)


class StageNet(nn.Module):
    def __init__(self, block_args, stem_size=8, round_fn=scaled, num_classes=10):
        super().__init__()
        layers, width = [nn.Conv2d(3, stem_size, 3, padding=1)], stem_size
        for out, repeats in block_args:
            for _ in range(repeats):
                layers += [nn.Conv2d(width, round_fn(out), 3, padding=1), nn.ReLU()]
                width = round_fn(out)
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class Widen(nn.Module):
    def __init__(self, in_chs, out_chs):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, 1)

    def forward(self, x):
        return self.conv(x)


WIDEN = Widen(make_divisible(20), 12)


def _create(variant, pretrained=False, **kwargs):
    return build_model(StageNet, variant, pretrained, **kwargs)


def _gen_stagenet(variant, multiplier=1.0, **kwargs):
    if "tall" in variant:
        arch_def: list[list[str]] = [["r1_c12"], ["r3_c16", "r1_c24"]]
    else:
        arch_def: list[list[str]] = [["r1_c12"], ["r1_c16"]]
    model_kwargs = dict(
        block_args=decode_arch(arch_def),
        stem_size=6,
        round_fn=partial(scaled, multiplier=multiplier),
        **kwargs,
    )
    return _create(variant, **model_kwargs)


def stagenet_tall(pretrained=False, **kwargs):
    return _gen_stagenet("stagenet_tall", pretrained=pretrained, **kwargs)
"""


def test_an_argument_a_repository_function_computes_is_computed_by_its_translation(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"models/__init__.py": "",
                                    "models/_builder.py": FACTORY_BUILDER,
                                    "models/_decoder.py": ARCH_DECODER,
                                    "models/net.py": ARCH_MODELS})
    # ``block_args=decode_arch(arch_def)``: the Cell's run calls the translated function
    # with the architecture the variant picks ("tall": 1 + 3 + 1 blocks), its list
    # literals lists again; ``round_fn`` (a partial of a function) keeps its default
    net = cells["StageNet"]
    assert (net.pynative, net.graph, net.synthesized) == ("pass", "pass", "")
    assert (net.input_shape, net.output_shape) == ("(2, 3, 16, 16)", "(2, 10)")
    # a size a function computes (``make_divisible(20)``) is made up instead: the input
    # shape comes from it
    widen = cells["Widen"]
    assert (widen.pynative, widen.synthesized) == ("pass", "in_chs=16")
    assert (widen.input_shape, widen.output_shape) == ("(2, 16, 16, 16)", "(2, 12, 16, 16)")


def test_a_dictionary_keeps_an_item_it_cannot_compute() -> None:
    env = module_constants("opts = dict(depth=2, norm=get_norm('bn'))\n"
                           "more = {'act': get_act(), **opts}\n")
    opts = env["opts"]
    assert isinstance(opts, values.DictValue) and opts.get("norm") is values.UNKNOWN
    assert not values.is_complete(opts)  # never handed to a Cell whole
    assert [k for k, _ in env["more"].items] == ["act", "depth", "norm"]  # type: ignore[attr-defined]
    # the item is there: ``pop`` of it takes no default
    assert values.evaluate_text("opts.pop('norm', None)", env) is values.UNKNOWN
    assert values.evaluate_text("opts.get('depth', 3)", env) == 2


def test_no_test_over_what_a_function_returns_is_decided() -> None:
    env = {"blocks": values.CallValue("models.arch", "decode_arch", (), ())}
    for test in ("blocks == 3", "blocks is None", "blocks != 'x'"):
        assert values.truth(cst.parse_expression(test), env) is None


def module_constants(source: str) -> dict[str, object]:
    return values.constants(cst.parse_module(source).body)


def test_constant_dictionaries_and_their_items_are_values() -> None:
    env = module_constants(
        "depths = {'l1': (3, 2, 6, 4), 'l3': (4, 4, 12, 6)}\n"
        "args = dict(depths=depths['l1'], num_vit=1)\n"
        "more = dict(args, num_vit=2, **{'drop': 0.0})\n"
        "last = depths['l3'][-1]\n"
        "cfg = dict(stem_chs=[48, 96], stage1={'chs': [96, 224]})\n")
    assert env["args"] == values.DictValue((("depths", (3, 2, 6, 4)), ("num_vit", 1)))
    assert env["more"] == values.DictValue((("depths", (3, 2, 6, 4)), ("num_vit", 2),
                                            ("drop", 0.0)))
    assert env["last"] == 6
    # list literals stay lists in the Cell's run, where the code may add a list to them
    cfg = env["cfg"]
    assert isinstance(cfg, values.DictValue)
    assert isinstance(cfg.get("stem_chs"), values.ListValue)
    stage = cfg.get("stage1")
    assert isinstance(stage, values.DictValue) and isinstance(stage.get("chs"), values.ListValue)
    assert values.to_json(cfg)["stem_chs"] == {values.LIST_KEY: [48, 96]}


def test_a_dictionary_changed_in_a_block_is_no_constant_but_an_added_item_is_applied() -> None:
    env = module_constants(
        "cfgs = dict(b=dict(chs=(8, 16)))\n"
        "cfgs['b_evos'] = cfgs['b']\n"
        "cfg = {}\n"
        "if VARIANT == 'b':\n"
        "    cfg['chs'] = (8, 16)\n"
        "opts = {}\n"
        "opts.update(depth=2)\n")
    assert env["cfgs"] == values.DictValue((("b", values.DictValue((("chs", (8, 16)),))),
                                            ("b_evos", values.DictValue((("chs", (8, 16)),)))))
    assert "cfg" not in env and "opts" not in env  # filled by code msready does not run


FILLED_BY_VARIANT = (
    "cfg = {}\n"
    "if variant.startswith('small'):\n"
    "    cfg['block'] = 'basic'\n"
    "    cfg['depths'] = (2, 2)\n"
    "elif variant == 'large':\n"
    "    cfg['block'] = 'bottleneck'\n"
    "else:\n"
    "    raise ValueError(variant)\n"
    "width = 64 if variant else 32\n")


@pytest.mark.parametrize(("variant", "expected"), [
    ("small_v2", {"block": "basic", "depths": (2, 2)}),
    ("large", {"block": "bottleneck"}),
])
def test_a_dictionary_filled_in_the_branch_a_known_value_picks_is_that_value(
        variant: str, expected: dict[str, object]) -> None:
    body = cst.parse_module(FILLED_BY_VARIANT).body
    env = values.constants(body, {"variant": variant})
    assert env["cfg"] == values.DictValue(tuple(expected.items()))
    # a test over a name nothing gives: the branches may fill it either way
    assert "cfg" not in values.constants(body, {})
    unknown = cst.parse_module(FILLED_BY_VARIANT + "if flag:\n    cfg['extra'] = 1\n").body
    assert "cfg" not in values.constants(unknown, {"variant": "large"})


def test_get_and_pop_of_a_known_dictionary() -> None:
    opts = {"opts": values.DictValue((("depth", 2),))}
    assert values.evaluate_text("opts.get('depth', 3)", opts) == 2
    assert values.evaluate_text("opts.pop('features_only', False)", opts) is False
    assert values.evaluate_text("opts.get('width')", opts) is None
    # a pop that takes an item changes the dictionary: no value
    assert values.evaluate_text("opts.pop('depth', 3)", opts) is values.UNKNOWN


WIDE_RESNET = '''\
from torch import nn


class WideNet(nn.Module):
    def __init__(self, depth, width, num_splits=2, norm_layer=None, use_norm=False):
        super().__init__()
        assert (depth - 4) % 6 == 0, "depth should be 6n+4"
        if num_splits < 2:
            raise ValueError("num_splits must be at least 2")
        if use_norm:
            assert norm_layer is not None
        blocks = [nn.Conv2d(width, width, 3, padding=1) for _ in range((depth - 4) // 6)]
        self.body = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), *blocks)

    def forward(self, x):
        return self.body(x)
'''


def test_a_synthesized_number_meets_the_constructors_assertions(
        tmp_path: Path, run_cells: CellRun) -> None:
    # depth would be 1 by its name; the assertion wants 6n+4, and 4 is the nearest
    _, cells = run_cells(tmp_path, {"wide.py": WIDE_RESNET})
    cell = cells["WideNet"]
    assert cell.synthesized == "depth=4, width=32"
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 32, 16, 16)")


HANDED_DOWN = '''\
from torch import nn


class Embed(nn.Module):
    def __init__(self, dim, image_size, patch_size=6):
        super().__init__()
        assert image_size % patch_size == 0, "the image must be cut into whole patches"
        self.proj = nn.Conv2d(3, dim, patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Layers(nn.Module):
    def __init__(self, dim, depth, tokens_per_layer):
        super().__init__()
        assert len(tokens_per_layer) == depth, "one token count per layer"
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Net(nn.Module):
    def __init__(self, *, image_size, dim, depth, tokens_per_layer, stages, keep_ratio):
        super().__init__()
        assert len(stages) == 3, "three stages"
        assert 0 < keep_ratio < 1
        self.embed = Embed(dim, image_size)
        self.layers = Layers(dim, depth, tokens_per_layer)
        self.heads = nn.ModuleList([nn.Linear(dim, width) for width in stages])
        self.keep_ratio = keep_ratio

    def forward(self, x):
        x = self.layers(self.embed(x))
        y = x
        for head in self.heads:
            y = y + head(x)
        return y
'''


def test_made_up_values_meet_the_assertions_of_the_modules_the_constructor_builds(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``Embed`` wants an image size its default patch size (6) divides, ``Layers`` one
    # token count per layer: asked of the names ``Net`` hands them. ``Net`` itself wants
    # three stages (a made-up sequence has four) and a ratio strictly between 0 and 1.
    _, cells = run_cells(tmp_path, {"net.py": HANDED_DOWN})
    assert cells["Net"].synthesized == ("image_size=36, dim=16, depth=4, "
                                        "tokens_per_layer=(16, 16, 16, 16), "
                                        "stages=(16, 16, 16), keep_ratio=0.5")
    assert (cells["Net"].pynative, cells["Net"].graph) == ("pass", "pass")


INSISTED_THROUGH_A_HELPER = '''\
import torch.nn as nn


def exists(val):
    """The package's own test for a value given."""
    return val is not None


class AttentionLayers(nn.Module):
    def __init__(self, dim, depth=None, heads=8, **kwargs):
        super().__init__()
        assert exists(depth), "`depth` must be passed in for `Decoder` or `Encoder`"
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Encoder(AttentionLayers):
    def __init__(self, **kwargs):
        super().__init__(causal=False, **kwargs)


class Chosen(nn.Module):
    def __init__(self, dim, depth=None, custom_layers=None, sandwich_coef=1):
        super().__init__()
        if exists(custom_layers):
            layer_types = custom_layers
        elif sandwich_coef > 1:
            layer_types = ("a",) * sandwich_coef
        else:  # the branch the defaults choose: its assertion is a requirement
            assert exists(depth), "`depth` must be passed in"
            layer_types = ("a",) * depth
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in layer_types])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


def test_a_none_default_a_helper_insists_on_gets_a_value(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``exists(depth)`` is ``depth is not None``, written out from the helper's one line;
    # ``Encoder`` hands its keywords to the base, whose ``depth`` it must give
    _, cells = run_cells(tmp_path, {"layers.py": INSISTED_THROUGH_A_HELPER})
    for name in ("AttentionLayers", "Encoder", "Chosen"):
        assert cells[name].synthesized == "dim=16, depth=1", cells[name].synthesized
        assert (cells[name].pynative, cells[name].graph) == ("pass", "pass"), cells[name].error


TYPED_NETWORK = '''\
from torch import nn


class ViT(nn.Module):
    def __init__(self, dim=16, num_patches=4):
        super().__init__()
        self.dim = dim
        self.num_patches = num_patches
        self.to_tokens = nn.Linear(dim, dim)

    def forward(self, x):
        return self.to_tokens(x)


class Probe(nn.Module):
    def __init__(self, vit, classes=3):
        super().__init__()
        assert isinstance(vit, ViT)
        self.vit = vit
        self.head = nn.Linear(vit.dim, classes)

    def forward(self, x):
        return self.head(self.vit(x))


class Masked(nn.Module):
    def __init__(self, vit: ViT, ratio=0.5):
        super().__init__()
        self.vit = vit
        self.head = nn.Linear(vit.dim, vit.num_patches)

    def forward(self, x):
        return self.head(self.vit.to_tokens(x))
'''


def test_a_parameter_typed_by_a_network_class_gets_one_of_that_class(
        tmp_path: Path, run_cells: CellRun) -> None:
    # asserted (``isinstance(vit, ViT)``) or annotated (``vit: ViT``): a ViT built with its
    # own arguments, not a namespace of the fields the constructor reads from it
    _, cells = run_cells(tmp_path, {"probe.py": TYPED_NETWORK})
    for name in ("Probe", "Masked"):
        assert cells[name].synthesized.startswith("vit=ViT("), cells[name].synthesized
        assert (cells[name].pynative, cells[name].graph) == ("pass", "pass"), cells[name].error


def requirement_changes(source: str, env: dict[str, object],
                        adjustable: dict[str, object]) -> dict[str, object]:
    function = cst.parse_module(source).body[0]
    assert isinstance(function, cst.FunctionDef)
    return arguments.meet(arguments.requirements(function), env, adjustable)


def test_a_raise_guard_an_assertion_and_a_none_the_constructor_insists_on() -> None:
    guard = "def __init__(self, n):\n    if n % 2:\n        raise ValueError(n)\n"
    assert requirement_changes(guard, {"n": 3}, {"n": 3}) == {"n": 4}
    # a value the repository gave is kept even when it fails: it is not adjustable
    assert requirement_changes(guard, {"n": 3}, {}) == {}
    insists = "def __init__(self, feat_size=None):\n    assert feat_size is not None\n"
    assert requirement_changes(insists, {"feat_size": None}, {"feat_size": None}) == \
        {"feat_size": 32}
    # a None the constructor insists on takes what the caller proposes (for ``opt``, a
    # namespace of the fields the constructor reads)
    function = cst.parse_module("def __init__(self, opt=None):\n    assert opt is not None\n")
    assert isinstance(function.body[0], cst.FunctionDef)
    assert arguments.meet(arguments.requirements(function.body[0]), {"opt": None},
                          {"opt": None}, lambda name: f"made up {name}") == {"opt": "made up opt"}
    # an assertion under a branch holds only when the branch runs: the values that choose
    # the branch are read, never changed to leave it
    branch = "def __init__(self, k, a=False):\n    if a:\n        assert k > 5\n"
    assert requirement_changes(branch, {"k": 3, "a": False}, {"k": 3}) == {}
    assert requirement_changes(branch, {"k": 3, "a": True}, {"k": 3, "a": True}) == {"k": 6}
    chosen = ("def __init__(self, k, layers=None):\n    if layers is not None:\n        pass\n"
              "    else:\n        assert k is not None\n")
    assert requirement_changes(chosen, {"k": None, "layers": None},
                               {"k": None, "layers": None}) == {"k": 3}
    # a made-up sequence of one item takes the length asked; a made-up number the
    # fraction a ratio needs
    stages = "def __init__(self, dims):\n    assert len(dims) == 3\n"
    assert requirement_changes(stages, {"dims": (16,) * 4}, {"dims": (16,) * 4}) == \
        {"dims": (16, 16, 16)}
    ratio = "def __init__(self, r):\n    assert 0 < r < 1\n"
    assert requirement_changes(ratio, {"r": 2}, {"r": 2}) == {"r": 0.5}
    # what cannot be evaluated (an attribute of self, a call) leaves the value alone
    unknown = "def __init__(self, c):\n    assert c % self.paths == 0\n"
    assert requirement_changes(unknown, {"c": 16}, {"c": 16}) == {}


EXAMPLE_CALL = '''\
import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, channels, num_classes=None):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.needs_labels = num_classes is not None
        self.labels = nn.Embedding(num_classes, channels) if self.needs_labels else None

    def forward(self, x, time, class_labels=None):
        assert (class_labels is not None) == self.needs_labels
        x = self.conv(x) * time.view(-1, 1, 1, 1)
        if self.needs_labels:
            x = x + self.labels(class_labels).view(x.shape[0], -1, 1, 1)
        return x


if __name__ == "__main__":
    num_classes = 10
    net = Denoiser(4, num_classes=num_classes).cuda()
    images = torch.randn(8, 4, 24, 24).cuda()
    labels = torch.randint(0, num_classes, (8,))
    out = net(images, time=torch.ones(8), class_labels=labels)
'''


def test_the_repositorys_own_call_of_a_module_gives_its_inputs(
        tmp_path: Path, run_cells: CellRun) -> None:
    # forward's optional class_labels is required by the assertion once num_classes is
    # given: the call in the __main__ block passes it, and its shapes are the input
    # (with the batch every Cell gets)
    _, cells = run_cells(tmp_path, {"denoise.py": EXAMPLE_CALL})
    cell = cells["Denoiser"]
    assert (cell.synthesized, cell.input_shape) == ("", "(2, 4, 24, 24), (2,), (2,) int")
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 4, 24, 24)")


@pytest.mark.parametrize(("call", "inputs"), [
    # every argument a tensor of written shape: an example
    ("net(torch.randn(2, 3, 8, 8))", [((2, 3, 8, 8), "float32")]),
    ("net(torch.zeros((4, 16)).cuda(), mask=torch.ones(4, 16).long())",
     [((2, 16), "float32"), None, ((2, 16), "int64")]),
    ("net(x=torch.rand(size=(2, 5)))", [((2, 5), "float32")]),
])
def test_an_example_call_with_written_shapes_is_read(
        call: str, inputs: list[tuple[tuple[int, ...], str] | None]) -> None:
    from msready.skeletons import example_calls
    params: list[tuple[str, object, bool]] = [("x", None, True), ("y", None, False),
                                              ("mask", None, False)]
    node = cst.parse_expression(call)
    assert isinstance(node, cst.Call)
    specs = example_calls.call_inputs(node, [], {}, params)
    assert specs is not None
    assert [(s.shape, s.dtype) if s else None for s in specs] == inputs


@pytest.mark.parametrize("call", [
    "net(batch)",  # a name nothing bound to a tensor before
    "net(torch.randn(n, 3))",  # a size msready cannot compute
    "net(torch.randn(2, 3), extra=torch.randn(2))",  # no such parameter
    "net(y=torch.randn(2, 3))",  # the required x is not given
    "net(*inputs)",
])
def test_a_call_without_written_shapes_is_no_example(call: str) -> None:
    from msready.skeletons import example_calls
    params: list[tuple[str, object, bool]] = [("x", None, True), ("y", None, False)]
    node = cst.parse_expression(call)
    assert isinstance(node, cst.Call)
    assert example_calls.call_inputs(node, [], {}, params) is None


HUGE_BLOCK = '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, num_heads=12):
        super().__init__()
        assert dim % num_heads == 0
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).unbind(2)
        attn = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v.transpose(1, 2)).transpose(1, 2).reshape(B, N, C))


class Model(nn.Module):
    def __init__(self, embed_dim=768, num_heads=12):
        super().__init__()
        embed_dim *= num_heads  # 9216 wide: over a gigabyte of weights
        self.block = Attention(embed_dim, num_heads)

    def forward(self, x):
        return self.block(x)
'''


def test_a_cell_too_big_at_the_repositorys_sizes_runs_with_small_made_up_ones(
        tmp_path: Path, run_cells: CellRun, monkeypatch: pytest.MonkeyPatch) -> None:
    from msready.skeletons import runner
    # A 9216-wide block holds 1.3 GB of weights: over this run's 1.5 GiB limit (MindSpore
    # itself holds half a gigabyte). It runs again 48 wide: small, and divisible by the
    # 12 heads its assertion asks for.
    monkeypatch.setattr(runner, "CELL_MEMORY", 3 << 29)
    _, cells = run_cells(tmp_path, {"vit.py": HUGE_BLOCK})
    cell = cells["Attention"]
    assert (cell.status, cell.pynative, cell.graph) == ("pass", "pass", "pass")
    assert cell.synthesized == "dim=48"
    assert cell.input_shape == "(2, 8, 48)" and cell.output_shape == "(2, 8, 48)"
    assert cell.error == ("at the repository's sizes it held more than 1.5 GiB of memory; "
                          "it ran with smaller made-up sizes")
    # a default is a size the repository gives too: 768 becomes 48, times 12 heads
    model = cells["Model"]
    assert (model.status, model.synthesized, model.input_shape) == (
        "pass", "embed_dim=48", "(2, 8, 576)")


def test_only_sizes_above_the_threshold_are_made_small() -> None:
    small = arguments.shrunk({"dim": 64, "num_heads": 12, "in_chs": (768, 32)},
                             ["dim", "num_heads", "in_chs"], lambda name: arguments.Usage())
    assert small == {"in_chs": (48, 32)}  # 16, widened for the 12 heads
    # an image size the constructor makes a pair of (``img_size = to_2tuple(img_size)``)
    # and then indexes is still one size, made small as one
    init = cst.parse_statement("def __init__(self, img_size=224):\n"
                               "    img_size = to_2tuple(img_size)\n"
                               "    self.grid = (img_size[0] // 16, img_size[1] // 16)\n")
    assert isinstance(init, cst.FunctionDef)
    assert arguments.shrunk({"img_size": 224}, ["img_size"],
                            lambda name: arguments.usage(name, init)) == {"img_size": 32}


BOTTLENECK = '''\
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, downsample=None):
        super().__init__()
        outplanes = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, bias=False)
        self.conv3 = nn.Conv2d(planes, outplanes, kernel_size=1, bias=False)
        self.relu = nn.ReLU()
        self.downsample = downsample

    def forward(self, x):
        shortcut = x
        x = self.relu(self.conv2(self.relu(self.conv1(x))))
        x = self.conv3(x)
        if self.downsample is not None:
            shortcut = self.downsample(shortcut)
        x += shortcut
        return self.relu(x)


class ConvBN(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size=1):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_chs)

    def forward(self, x):
        return self.bn(self.conv(x))


class WrappedBottleneck(nn.Module):
    """The same block built from a repository conv wrapper named for its widths."""

    expansion = 4

    def __init__(self, inplanes, planes):
        super().__init__()
        self.conv1 = ConvBN(inplanes, planes)
        self.conv2 = ConvBN(planes, planes, kernel_size=3)
        self.conv3 = ConvBN(planes, out_chs=planes * self.expansion)

    def forward(self, x):
        return self.conv3(self.conv2(self.conv1(x))) + x


class Widen(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.fc = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        return self.fc(x)


class PreNorm(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(self.fc1(self.norm(x)))
'''


def test_a_block_adding_its_input_to_its_output_gets_as_many_channels_in_as_out(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"blocks.py": BOTTLENECK})
    # x += shortcut: the made-up inplanes is what conv3 gives, planes * expansion
    block = cells["Bottleneck"]
    assert (block.synthesized, block.input_shape) == ("inplanes=64, planes=16",
                                                      "(2, 64, 16, 16)")
    assert (block.status, block.graph, block.output_shape) == ("pass", "pass",
                                                               "(2, 64, 16, 16)")
    wrapped = cells["WrappedBottleneck"]
    assert (wrapped.synthesized, wrapped.status) == ("inplanes=64, planes=16", "pass")
    # no addition of the input: the widths stay as made up
    assert cells["Widen"].synthesized == "in_dim=16, out_dim=16"
    # widths that already agree are left alone
    assert (cells["PreNorm"].synthesized, cells["PreNorm"].status) == (
        "dim=16, hidden=16", "pass")


CHANNELS_LAST = '''\
from torch import nn


class Downsample(nn.Module):
    def __init__(self, in_chs=96, out_chs=192):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        x = self.conv(x)
        return x.permute(0, 2, 3, 1)


class Stem(nn.Module):
    def __init__(self, in_chs=3, out_chs=16):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        return x.permute(0, 2, 3, 1)
'''


def test_an_input_permuted_before_its_first_layer_is_fed_in_the_order_it_comes(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"stages.py": CHANNELS_LAST})
    # x.permute(0, 3, 1, 2) before the convolution: the input is channels-last
    down = cells["Downsample"]
    assert (down.input_shape, down.output_shape) == ("(2, 16, 16, 96)", "(2, 8, 8, 192)")
    assert (down.status, down.graph) == ("pass", "pass")
    # a permutation after the first layer changes nothing about the input
    assert cells["Stem"].input_shape == "(2, 3, 16, 16)"


FORWARD_CHOSEN = '''\
import torch
from torch import nn


class PartialConv(nn.Module):
    def __init__(self, dim, n_div=4, mode="split_cat"):
        super().__init__()
        self.part = dim // n_div
        self.conv = nn.Conv2d(self.part, self.part, 3, 1, 1, bias=False)
        self.forward = self.forward_split_cat if mode == "split_cat" else self.forward_slicing

    def forward_slicing(self, x):
        x = x.clone()
        x[:, :self.part] = self.conv(x[:, :self.part])
        return x

    def forward_split_cat(self, x):
        x1, x2 = torch.split(x, [self.part, x.shape[1] - self.part], dim=1)
        return torch.cat((self.conv(x1), x2), 1)


class Block(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.mix = PartialConv(dim)
        self.fc = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        return x + self.fc(self.mix(x))
'''


def test_a_forward_chosen_in_the_constructor_is_what_the_cell_runs(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"partial.py": FORWARD_CHOSEN})
    block = cells["Block"]
    assert (block.status, block.graph, block.output_shape) == ("pass", "pass",
                                                               "(2, 16, 16, 16)")
    # the child has no forward of its own to find an input from: its parent proves it
    assert cells["PartialConv"].ran_inside == "partial.Block"


def test_a_parameter_whose_items_key_a_dictionary_is_made_up_as_names() -> None:
    # ``shapes[f] for f in in_features``: names of feature maps, not sizes. Numbers stay
    # for ``level`` (keying something not known as a dictionary, not named for a name),
    # ``channels`` walked as numbers, ``out_indices`` keying a list, a count
    # (``num_features``) and the ``in_features`` of a Linear
    init = cst.parse_statement(
        "def __init__(self, backbone, in_features, level, channels, out_indices,\n"
        "             num_features):\n"
        "    shapes = backbone.output_shape()\n"
        "    self.strides = [shapes[f].stride for f in in_features]\n"
        "    self.top = shapes[level].channels\n"
        "    self.norm = self.norms[num_features]\n"
        "    self.convs = [nn.Conv2d(c, c, 3) for c in channels]\n"
        "    self.outs = [self.stages[i] for i in out_indices]\n")
    linear = cst.parse_statement("def __init__(self, in_features):\n"
                                 "    self.fc = nn.Linear(in_features, 10)\n")
    assert isinstance(init, cst.FunctionDef) and isinstance(linear, cst.FunctionDef)
    got = {name: arguments.synthesize(name, arguments.usage(name, init))
           for name in ("in_features", "level", "channels", "out_indices", "num_features")}
    assert got == {"in_features": ("p2", "p3", "p4", "p5"), "level": 1,
                   "channels": (16,) * 4, "out_indices": (16,) * 4, "num_features": 16}
    assert arguments.synthesize("in_features", arguments.usage("in_features", linear)) == 16


def test_names_are_found_through_the_attribute_they_are_stored_in_and_a_dicts_keys() -> None:
    # ``self.in_features = in_features`` read by name in forward; ``k in names`` picking
    # keys of a dictionary; ``in_feature`` keying one by itself is one name
    forward = cst.parse_statement(
        "def forward(self, features):\n"
        "    top = features[self.in_features[-1]]\n"
        "    return [features[f] for i, f in enumerate(self.in_features)], features[self.key]\n")
    picked = cst.parse_statement(
        "def __init__(self, shapes, keep, in_feature):\n"
        "    shapes = {k: v for k, v in shapes.items() if k in keep}\n"
        "    self.top = self.shapes[in_feature]\n")
    assert isinstance(forward, cst.FunctionDef) and isinstance(picked, cst.FunctionDef)
    stored = arguments.attribute_usage({"in_features"}, forward)
    assert arguments.synthesize("in_features", stored) == ("p2", "p3", "p4", "p5")
    one = arguments.attribute_usage({"key"}, forward)
    assert (one.named, one.a_name) == (False, True)
    assert arguments.synthesize("keep", arguments.usage("keep", picked)) == (
        "p2", "p3", "p4", "p5")
    assert arguments.synthesize("in_feature", arguments.usage("in_feature", picked)) == "p5"


def test_a_dictionary_of_shape_records_is_made_up_by_the_same_names() -> None:
    # ``input_shape.items()`` and ``input_shape[f].channels``: a dictionary from the names
    # to records with the fields read, strides doubling from 4; a dictionary whose values
    # are not read holds widths
    init = cst.parse_statement(
        "def __init__(self, input_shape: Dict[str, ShapeSpec], in_features, sizes):\n"
        "    shapes = sorted(input_shape.items(), key=lambda kv: kv[1].stride)\n"
        "    self.strides = [v.stride for _, v in shapes]\n"
        "    self.widths = [input_shape[f].channels for f in in_features]\n"
        "    self.total = sum(sizes.values())\n")
    assert isinstance(init, cst.FunctionDef)
    shape = arguments.synthesize("input_shape", arguments.usage("input_shape", init))
    assert arguments.describe({"input_shape": shape}) == "input_shape=dict(" + ", ".join(
        f"p{level}={{stride={2 ** level}, channels=16}}" for level in (2, 3, 4, 5)) + ")"
    sizes = arguments.synthesize("sizes", arguments.usage("sizes", init))
    assert arguments.describe({"sizes": sizes}) == "sizes=dict(p2=16, p3=16, p4=16, p5=16)"
    # widened variants keep the strides
    wider = arguments.scaled("input_shape", shape, 2)
    assert arguments.describe({"input_shape": wider}).startswith(
        "input_shape=dict(p2={stride=4, channels=32}, p3={stride=8, channels=32}")


NAMED_PYRAMID = '''\
import torch.nn.functional as F
from torch import nn


class Neck(nn.Module):
    """Lateral convolutions over feature maps picked by name, fused top-down."""

    def __init__(self, input_shape, in_features, out_channels):
        super().__init__()
        self.in_features = in_features
        strides = [input_shape[f].stride for f in in_features]
        assert all(b == 2 * a for a, b in zip(strides, strides[1:]))
        self.lateral = nn.ModuleList(
            [nn.Conv2d(input_shape[f].channels, out_channels, 1) for f in in_features])

    def forward(self, features):
        maps = [conv(features[f]) for f, conv in zip(self.in_features, self.lateral)]
        out = maps[-1]
        for lateral in maps[-2::-1]:
            out = lateral + F.interpolate(out, scale_factor=2.0, mode="nearest")
        return {"out": out}


class SegHead(nn.Module):
    def __init__(self, input_shape: dict, num_classes):
        super().__init__()
        input_shape = sorted(input_shape.items(), key=lambda kv: kv[1].stride)
        self.in_features = [k for k, _ in input_shape]
        self.heads = nn.ModuleList([nn.Conv2d(v.channels, num_classes, 1)
                                    for _, v in input_shape])
        self.scales = [v.stride // input_shape[0][1].stride for _, v in input_shape]

    def forward(self, features):
        return self.fuse(features)

    def fuse(self, features):
        out = 0
        for head, scale, f in zip(self.heads, self.scales, self.in_features):
            out = out + F.interpolate(head(features[f]), scale_factor=scale, mode="nearest")
        return out
'''


def test_a_forward_reading_feature_maps_by_name_gets_them_by_the_made_up_names(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"pyramid.py": NAMED_PYRAMID})
    neck, head = cells["Neck"], cells["SegHead"]
    maps = "{" + ", ".join(f"p{level}: (2, 16, {128 >> level}, {128 >> level})"
                           for level in (2, 3, 4, 5)) + "}"
    assert (neck.pynative, neck.graph, neck.input_shape, neck.output_shape) == (
        "pass", "pass", maps, "(2, 16, 32, 32)")
    assert neck.synthesized.startswith("input_shape=dict(p2={stride=4, channels=16}, ")
    assert neck.synthesized.endswith("in_features=('p2', 'p3', 'p4', 'p5'), out_channels=16")
    assert (head.pynative, head.graph, head.input_shape, head.output_shape) == (
        "pass", "pass", maps, "(2, 10, 32, 32)")


def test_feature_maps_by_name_are_compared_with_torch_by_name(tmp_path: Path) -> None:
    # torch runs the same dictionary: each map crosses to the comparison under its name
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "pyramid.py").write_text(NAMED_PYRAMID, encoding="utf-8")
    result = scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False,
                                                              target="cpu"))
    found = build_skeletons(result, tmp_path / "out", run=True, compare_torch=True,
                            cache=False)
    neck = next(s for s in found if s.torch_class.endswith(".Neck"))
    assert neck.pynative == "pass" and neck.max_abs_diff is not None
    assert neck.max_abs_diff < 1e-4


NAMED_TRUNKS = '''\
import torch.nn.functional as F
from torch import nn


class Shape:
    def __init__(self, channels, stride):
        self.channels = channels
        self.stride = stride


class Trunk(nn.Module):
    """A network whose outputs go by name."""

    def output_shape(self):
        return {n: Shape(self.widths[n], self.strides[n]) for n in self.out_names}


class Plain(Trunk):
    def __init__(self, width=8, out_feature="last"):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, stride=16, padding=1)
        self.out_names = [out_feature]
        self.widths = {out_feature: width}
        self.strides = {out_feature: 16}

    def forward(self, x):
        return {self.out_names[0]: self.conv(x)}


LEVELS = """
class Picky(Trunk):
    def __init__(self, width=8, out_features=None):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, stride=4, padding=1)
        self.out_names = out_features or ["c2"]
        for name in self.out_names:
            assert name in ("c2",), name
        self.widths, self.strides = {"c2": width}, {"c2": 4}

    def forward(self, x):
        return {"c2": self.conv(x)}


class Stages(Trunk):
    def __init__(self, width=8, out_features=None):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=4, padding=1)
        self.downs = nn.ModuleList(
            [nn.Conv2d(width, width, 3, stride=2, padding=1) for _ in range(3)])
        self.out_names = list(out_features or ["s5"])
        self.widths = {n: width for n in self.out_names}
        self.strides = {n: 4 * 2 ** i for i, n in enumerate(self.out_names)}

    def forward(self, x):
        maps = [self.stem(x)]
        for down in self.downs:
            maps.append(down(maps[-1]))
        out = {}
        for name, level in zip(self.out_names, maps[-len(self.out_names):]):
            out[name] = level
        return out
"""


class Neck(Trunk):
    def __init__(self, bottom_up, in_features, out_channels):
        super().__init__()
        assert isinstance(bottom_up, Trunk)
        shapes = bottom_up.output_shape()
        self.lateral = nn.ModuleList(
            [nn.Conv2d(shapes[f].channels, out_channels, 1) for f in in_features])
        self.bottom_up = bottom_up
        self.in_features = in_features

    def forward(self, x):
        features = self.bottom_up(x)
        maps = [conv(features[f]) for f, conv in zip(self.in_features, self.lateral)]
        out = maps[-1]
        for i in range(len(maps) - 2, -1, -1):
            out = maps[i] + F.interpolate(out, scale_factor=2.0, mode="nearest")
        return out


class Single(nn.Module):
    def __init__(self, net, in_feature, out_channels):
        super().__init__()
        self.proj = nn.Conv2d(net.output_shape()[in_feature].channels, out_channels, 1)
        self.net = net
        self.in_feature = in_feature

    def forward(self, x):
        return self.proj(self.net(x)[self.in_feature])


class Wrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)
'''


def named_trunks(levels: bool) -> str:
    """The trunks file, with the networks that take several output names or without."""
    head, _, rest = NAMED_TRUNKS.partition("LEVELS = \"\"\"\n")
    body, _, tail = rest.partition('"""\n')
    return head + (body if levels else "") + tail


def test_a_stand_in_network_gives_the_names_the_class_reads_its_outputs_by(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Neck reads its bottom-up network's outputs and output shapes by its made-up names:
    # the first network that takes any output names (Stages; Picky checks its own) is
    # built with them. Single reads one name: the file's first network, which takes one,
    # is given it. Wrapper reads no names: its network is built as it is.
    _, cells = run_cells(tmp_path, {"trunks.py": named_trunks(levels=True)})
    neck, single = cells["Neck"], cells["Single"]
    assert (neck.pynative, neck.graph, neck.output_shape) == ("pass", "pass", "(2, 16, 8, 8)")
    assert neck.synthesized == ("bottom_up=Stages(out_features=('p2', 'p3', 'p4', 'p5')), "
                                "in_features=('p2', 'p3', 'p4', 'p5'), out_channels=16")
    assert (single.pynative, single.graph) == ("pass", "pass")
    assert single.synthesized == "net=Plain(out_feature='p5'), in_feature='p5', out_channels=16"
    assert (cells["Wrapper"].status, cells["Wrapper"].synthesized) == ("pass", "net=Plain()")


def test_a_class_reading_several_names_of_a_network_that_gives_one_reads_that_one(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"trunks.py": named_trunks(levels=False)})
    neck = cells["Neck"]
    # its input is the one planned for the network it holds (Plain's, as Plain's own Cell)
    assert neck.input_shape == cells["Plain"].input_shape
    assert (neck.pynative, neck.graph, neck.output_shape) == ("pass", "pass", "(2, 16, 1, 1)")
    assert neck.synthesized == ("bottom_up=Plain(out_feature='p5'), in_features=('p5',), "
                                "out_channels=16")


def test_output_names_a_network_checks_or_uses_as_sizes_are_not_any_names() -> None:
    init = cst.parse_statement(
        "def __init__(self, out_features, out_names, out_feature, names, widths):\n"
        "    self.fc = nn.Linear(8, out_features)\n"
        "    self._names = out_names\n"
        "    for name in self._names:\n"
        "        assert name in self.children\n"
        "    self.stages = [STAGES.get(f) for f in names]\n"
        "    self.widths = {out_feature: 8}\n"
        "    self.order = list(widths) + ['{}'.format(w) for w in widths]\n")
    assert isinstance(init, cst.FunctionDef)
    free = {name: arguments.takes_any_names(init.body, name, arguments.stored_as(name, init))
            for name in ("out_features", "out_names", "out_feature", "names", "widths")}
    assert free == {"out_features": False, "out_names": False, "out_feature": True,
                    "names": False, "widths": True}
    forward = cst.parse_statement(
        "def forward(self, x):\n"
        "    features = self.body(x)\n"
        "    top = features[self.in_features[-1]]\n"
        "    return self.other(x)[self.key], features['last']\n")
    assert isinstance(forward, cst.FunctionDef)
    assert arguments.keys_outputs(forward.body, None, {"body"}, None, {"in_features"})
    assert not arguments.keys_outputs(forward.body, None, {"body"}, None, {"key"})
    assert arguments.keys_outputs(forward.body, None, {"other"}, None, {"key"})

STAR_BASE = '''\
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, width, *extra, pooler=None):
        super().__init__()
        self.fc = nn.Linear(width, 2)
        self.pooler = pooler
        self.extra = extra

    def forward(self, x):
        if self.pooler is not None:
            x = self.pooler(x)
        return self.fc(x)


class Head(Base):
    def __init__(self, width, scale):
        super().__init__(width, scale)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale
'''


def test_a_positional_argument_to_the_base_never_binds_a_keyword_only_parameter(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``scale`` goes to ``*extra``, not to ``pooler`` (a network the base calls): it is
    # made up as a number
    _, cells = run_cells(tmp_path, {"heads.py": STAR_BASE})
    head = cells["Head"]
    assert (head.status, head.graph) == ("pass", "pass")
    assert head.synthesized == "width=32, scale=1"


KWARGS_READ = '''\
import torch
from torch import nn


class ConvAct(nn.Module):
    def __init__(self, cin, cout, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = norm_layer(cout)
        self.act = act_layer()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class Stage(nn.Module):
    def __init__(self, cin, cout, depth, **block_kwargs):
        super().__init__()
        conv_kwargs = dict(norm_layer=block_kwargs.get('norm_layer'),
                           act_layer=block_kwargs.get('act_layer'))
        self.eps = block_kwargs.get('eps', 1e-5)
        self.blocks = nn.Sequential(*[ConvAct(cin if i == 0 else cout, cout, **conv_kwargs)
                                      for i in range(depth)])

    def forward(self, x):
        return self.blocks(x)
'''


def test_layer_factories_a_constructor_reads_from_its_kwargs_are_made_up(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``block_kwargs.get('norm_layer')`` is None unless the caller passes one: made up
    # as a layer that keeps its input's shape; ``eps`` has its own default
    _, cells = run_cells(tmp_path, {"stages.py": KWARGS_READ})
    stage = cells["Stage"]
    assert (stage.status, stage.graph) == ("pass", "pass"), stage.error
    assert stage.synthesized == ("cin=16, cout=16, depth=1, norm_layer=keep_shape, "
                                 "act_layer=keep_shape")


ANNOTATED_NETWORK = '''\
import torch
from torch import nn


class Small(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Chosen(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Trainer(nn.Module):
    def __init__(self, model: Chosen, lr=0.1):
        super().__init__()
        self.model = model
        self.lr = lr
        self.count = sum(p.numel() for p in self.model.parameters())

    def forward(self, x):
        return self.model(x) * self.lr
'''


def test_a_network_nothing_gives_is_the_annotated_class_whatever_every_module_has(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``model.parameters()`` is read from it, which every network has: the class its
    # annotation names is built, not the first network of the file
    _, cells = run_cells(tmp_path, {"trainer.py": ANNOTATED_NETWORK})
    trainer = cells["Trainer"]
    assert (trainer.status, trainer.synthesized) == ("pass", "model=Chosen()"), trainer.error


HELD_MODULE = '''\
import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, module, scale=2.0):
        super().__init__()
        self.module = module
        self.scale = scale

    def forward(self, x):
        kept = self.__dict__['_modules']['module']
        return kept(x) * self.scale


class Pre(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))
'''


def test_a_layer_the_constructor_only_stores_is_made_up_as_a_layer_not_a_factory(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self.module = module``: a layer held among the Cell's children; ``fn`` is called
    # only in forward too, and is a layer as well
    _, cells = run_cells(tmp_path, {"wrap.py": HELD_MODULE})
    wrapper, pre = cells["Wrapper"], cells["Pre"]
    assert (wrapper.status, wrapper.synthesized) == ("pass", "module=KeepShape()"), \
        wrapper.error
    assert (pre.status, pre.synthesized) == ("pass", "dim=16, fn=KeepShape()")


DELEGATING = '''\
from torch import nn


class Learner(nn.Module):
    def __init__(self, module=None):
        super().__init__()
        self.module = module

    def __getattr__(self, attr):
        try:
            return super().__getattr__(attr)
        except AttributeError:
            return getattr(self.__dict__['_modules']['module'], attr)

    def forward(self, x):
        return self.module(x)
'''


def test_a_wrapper_that_hands_unknown_attributes_to_its_module_is_built_and_runs(
        tmp_path: Path, run_cells: CellRun) -> None:
    # MindSpore's Cell asks for ``bprop`` before ``self.module`` is set: the lookup of the
    # missing key answers AttributeError, as ``hasattr`` expects
    out, cells = run_cells(tmp_path, {"learner.py": DELEGATING})
    assert ("    def __getattr__(self, attr):\n"
            "        try:\n"
            "            try:\n"
            "                return super().__getattr__(attr)\n"
            "            except AttributeError:\n"
            "                return getattr(self.__dict__['_cells']['module'], attr)\n"
            "        except KeyError as error:  # MindSpore's Cell asks for attributes while it"
            " is built\n"
            "            raise AttributeError(attr) from error\n") in (
                out / "learner.py").read_text()
    learner = cells["Learner"]
    assert (learner.status, learner.synthesized) == ("pass", "module=KeepShape()"), \
        learner.error


NORMAL_POLICY = '''\
import torch
from torch import nn
from torch.distributions import Normal


class Policy(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.mean = nn.Linear(size, size)
        self.sigma = nn.Parameter(torch.ones(size))

    def forward(self, x):
        return Normal(loc=self.mean(x), scale=self.sigma).log_prob(x)
'''


def test_a_torch_distribution_becomes_mindspores_distribution_of_the_same_name(
        tmp_path: Path, run_cells: CellRun) -> None:
    # the table maps the family to MindSpore's base class; the Cell builds the namesake,
    # with its keywords (``loc`` is ``mean``, ``scale`` is ``sd``)
    out, cells = run_cells(tmp_path, {"policy.py": NORMAL_POLICY})
    assert "Normal(mean=self.mean(x), sd=self.sigma).log_prob(x)" in (
        out / "policy.py").read_text()
    policy = cells["Policy"]
    assert (policy.pynative, policy.output_shape) == ("pass", "(2, 32)"), policy.error
    # GRAPH_MODE builds a distribution only from constants: said, not hidden
    assert policy.graph == "fail"
    assert "all arguments are required to be constants" in policy.error


LEGACY_CONSTRUCTOR = '''\
import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self, size, cuda=False):
        super().__init__()
        self.mean = nn.Linear(size, size)
        self.FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        self.log_det = self.FloatTensor(1).zero_()

    def forward(self, x):
        mean = self.mean(x)
        eps = self.FloatTensor(mean.size()).normal_()
        return mean + eps + self.log_det
'''


def test_a_legacy_tensor_constructor_held_as_a_value_makes_tensors_of_the_sizes_given(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self.FloatTensor(mean.size())`` is an uninitialised tensor of that shape in torch;
    # mindspore.Tensor would have held the sizes as data
    _, cells = run_cells(tmp_path, {"sampler.py": LEGACY_CONSTRUCTOR})
    sampler = cells["Sampler"]
    assert (sampler.pynative, sampler.output_shape) == ("pass", "(2, 32)"), sampler.error


CONFIG_DEFAULTS = '''\
class CfgNode(dict):
    def __getattr__(self, name):
        return self[name]

    def __setattr__(self, name, value):
        self[name] = value


def add_head_config(cfg):
    _C = cfg
    _C.MODEL.HEAD = CfgNode()
    _C.MODEL.HEAD.CHANNELS = [8, 12]
    _C.MODEL.HEAD.NORM = "BN"
    _C.MODEL.HEAD.CONV_DIM = 512
    _C.MODEL.HEAD.STAGE = CfgNode()
    _C.MODEL.HEAD.STAGE.KERNEL = 3
    _C.MODEL.HEAD.STAGE.DILATION = 1
'''

CONFIG_READER = '''\
import torch.nn as nn


def make_stage(stage, channels):
    return nn.Conv2d(channels, channels, stage.KERNEL, padding=stage.DILATION,
                     dilation=stage.DILATION)


class Head(nn.Module):
    def __init__(self, cfg, in_channels=4):
        super().__init__()
        convs = []
        for c in cfg.MODEL.HEAD.CHANNELS:
            convs.append(nn.Conv2d(in_channels, c, 3, padding=1))
            in_channels = c
        self.convs = nn.Sequential(*convs)
        self.norm = nn.BatchNorm2d(in_channels) if cfg.MODEL.HEAD.NORM == "BN" else None
        self.stage = make_stage(cfg.MODEL.HEAD.STAGE, in_channels)
        self.proj = nn.Conv2d(in_channels, cfg.MODEL.HEAD.CONV_DIM, 1)

    def forward(self, x):
        return self.proj(self.stage(self.norm(self.convs(x))))
'''


def test_a_config_read_field_by_field_gets_the_values_the_repositorys_defaults_set(
        tmp_path: Path, run_cells: CellRun) -> None:
    # the list of widths the loop walks, the string the test compares, and a node of the
    # tree handed whole to a helper, all as the configuration code writes them; a width
    # stays the small one msready makes up (the Cell proves the translation, not the size)
    _, cells = run_cells(tmp_path, {"config.py": CONFIG_DEFAULTS, "head.py": CONFIG_READER})
    head = cells["Head"]
    assert head.synthesized == ("cfg={MODEL={HEAD={CHANNELS=(8, 12), NORM='BN', "
                                "STAGE={KERNEL=3, DILATION=1}, CONV_DIM=16}}}")
    assert (head.pynative, head.graph, head.output_shape) == ("pass", "pass", "(2, 16, 16, 16)")


def test_asserting_a_parameter_is_given_is_no_test_for_none() -> None:
    init = cst.parse_statement(
        "def __init__(self, opt=None, size=None):\n"
        "    assert opt is not None\n"
        "    assert isinstance(size, (list, tuple))\n"
        "    self.n = opt.n + len(size)\n")
    assert isinstance(init, cst.FunctionDef)
    opt = arguments.usage("opt", init)
    assert (opt.tested, opt.fields) == (False, (("n",),))
    size = arguments.usage("size", init)  # required to be a sequence, not one of two kinds
    assert (size.tested, size.type_tested, size.indexed) == (False, False, True)
    # under a condition, an assertion requires nothing always: None is expected
    init = cst.parse_statement(
        "def __init__(self, qk_norm=False, norm_layer=None):\n"
        "    if qk_norm:\n"
        "        assert norm_layer is not None\n"
        "    self.norm = norm_layer(8) if qk_norm else None\n")
    assert isinstance(init, cst.FunctionDef)
    assert arguments.usage("norm_layer", init).tested


PRETRAINED = '''\
import os

import torch
from torch import nn


class Detector(nn.Module):
    """Loads the weights the package ships, as a torch file, when it is built."""

    def __init__(self, pretrained=True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        if pretrained:
            path = os.path.join(os.path.dirname(__file__), "data", "detector.pt")
            state = torch.load(path)
            self.load_state_dict(state["model"])

    def forward(self, x):
        return self.conv(x)


class Downloaded(nn.Module):
    """Loads weights from a file that is not there."""

    def __init__(self, weights="checkpoints/best.pth"):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.load_state_dict(torch.load(weights, map_location="cpu"))

    def forward(self, x):
        return self.fc(x)
'''


def test_weights_loaded_from_a_torch_file_are_left_out_and_said(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    _, cells = run_cells(tmp_path, {"nets.py": PRETRAINED,
                                    "data/detector.pt": "a torch checkpoint\n"})
    detector, downloaded = cells["Detector"], cells["Downloaded"]
    assert (detector.status, detector.graph) == ("pass", "pass"), detector.error
    assert detector.synthesized == ("initial weights, not those of detector.pt (not a "
                                    "MindSpore checkpoint: msready convert makes one)")
    assert (downloaded.status, downloaded.graph) == ("pass", "pass"), downloaded.error
    assert "not those of best.pth" in downloaded.synthesized


TENSOR_ARGUMENT = '''\
import torch
import torch.nn as nn


class Obfuscator(nn.Module):
    def __init__(self, ratio, group_matrix):
        super().__init__()
        self.ratio = ratio
        self.group_matrix = (group_matrix > 0) + 0.
        self.num_groups = group_matrix.shape[0]

    def forward(self, x):
        groups = torch.ones((x.shape[0], self.num_groups)) * self.ratio
        return x * torch.matmul(groups, self.group_matrix)


class Settings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.size, cfg.size)  # a size field alone: a configuration

    def forward(self, x):
        return self.fc(x)
'''


def test_a_parameter_read_as_a_tensor_is_made_up_as_a_tensor_of_ones(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"nets.py": TENSOR_ARGUMENT})
    obfuscator = cells["Obfuscator"]
    assert obfuscator.synthesized == "ratio=2, group_matrix=ones(4, 4)"
    assert (obfuscator.pynative, obfuscator.graph) == ("pass", "pass")
    assert cells["Settings"].synthesized == "cfg={size=32}"
    assert cells["Settings"].pynative == "pass"


READS_CONFIG = '''\
import json
import torch.nn as nn


class FromConfig(nn.Module):
    def __init__(self, cfg='model.json'):
        super().__init__()
        with open(cfg) as f:
            spec = json.load(f)
        self.fc = nn.Linear(spec['width'], 2)

    def forward(self, x):
        return self.fc(x)
'''


def test_a_constructor_that_opens_a_missing_data_file_is_unverified_not_wrong(
        tmp_path: Path, run_cells: CellRun) -> None:
    # torch's constructor fails the same way from another folder: the check needs the
    # repository's data, the translation is not known to be wrong
    _, cells = run_cells(tmp_path, {"nets.py": READS_CONFIG})
    cell = cells["FromConfig"]
    assert cell.status == "unverified"
    assert (cell.error or "").startswith("the constructor opens `model.json`")


SWITCHES_AS_NUMBERS = '''\
from functools import partial

import torch.nn as nn


class Head(nn.Module):
    def __init__(self, dim=8, bias=1):
        super().__init__()
        linear = partial(nn.Linear, bias=0)
        self.body = nn.Sequential(nn.Linear(dim, dim * 2, 1), nn.GELU(), linear(dim * 2, dim))
        self.out = nn.Linear(dim, dim, bias=bias)
        self.norm = nn.BatchNorm1d(dim, affine=1)

    def forward(self, x):
        return self.norm(self.out(self.body(x)))
'''


def test_a_layer_switch_given_as_a_number_is_its_truth(tmp_path: Path,
                                                       run_cells: CellRun) -> None:
    # torch reads ``bias=1`` by its truth; MindSpore's layers take only a bool
    out, found = run_cells(tmp_path, {"head.py": SWITCHES_AS_NUMBERS})
    code = (out / "head.py").read_text()
    assert "nn.Dense(dim, dim * 2, has_bias=True)" in code
    assert "has_bias=bool(bias)" in code and "affine=True" in code
    assert (found["Head"].pynative, found["Head"].graph) == ("pass", "pass")


SCRIPT_MOCK = '''\
import torch
from torch import nn

SEED = int(open("seed.txt").read())


class Pooler(nn.Module):
    def __init__(self, dim, mask_maker=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.mask_maker = mask_maker

    def forward(self, x):
        mask = self.mask_maker(x) if self.mask_maker is not None else torch.ones_like(x)
        return self.proj(x * mask)


if __name__ == "__main__":
    flag = True
    Base = nn.Module if flag else object

    class HalfMask(nn.Module):
        def forward(self, x):
            return torch.ones_like(x) * 0.5

    class Scripted(Base):  # its base is the script's own variable: not kept
        def forward(self, x):
            return x

    class Seeded(nn.Module):  # reads a value the Cell file drops (it reads a file)
        seed = SEED

        def forward(self, x):
            return x

    x = torch.randn(3, 16)
    net = Pooler(16, mask_maker=HalfMask())
    print(net(x).shape)
'''


def test_a_class_the_script_part_defines_is_kept_for_the_constructor_it_is_passed_to(
        tmp_path: Path, run_cells: CellRun) -> None:
    # HalfMask, defined under ``if __name__ == "__main__":``, is built there and passed to
    # Pooler: the Cell file keeps the class (defining it runs nothing of the script), so
    # both Cells build and run; a class whose base is the script's variable stays out
    out, cells = run_cells(tmp_path, {"pool.py": SCRIPT_MOCK})
    for name in ("HalfMask", "Pooler"):
        assert (cells[name].pynative, cells[name].graph) == ("pass", "pass"), (
            name, cells[name].error)
    assert cells["Pooler"].synthesized == ""
    code = (out / "pool.py").read_text()
    assert "\n\nclass HalfMask(nn.Cell):" in code
    assert "class Scripted" not in code and "class Seeded" not in code
    assert "print(" not in code


ASSERTED_SIZES = '''\
import torch
from torch import nn


class PerPart(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(dim, dim), nn.Linear(dim, dim)])

    def forward(self, x, sizes=None):
        assert sizes is not None
        parts = x.split(sizes, dim=1)
        return torch.cat([f(p) for f, p in zip(self.heads, parts)], dim=1)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mix = PerPart(dim)

    def forward(self, x, sizes=None):
        return self.mix(x, sizes=sizes) + x


class Net(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.embed = nn.Linear(4, dim)
        self.block = Block(dim)

    def forward(self, x):
        x = self.embed(x)
        return self.block(x, sizes=(1, x.shape[1] - 1))
'''


def test_a_child_its_own_assertion_refuses_alone_passes_inside_the_parent_that_runs_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    # Block leaves ``sizes`` at None alone, which PerPart asserts against; Net passes it
    # and runs both: they pass with the input Net gives them
    _, cells = run_cells(tmp_path, {"net.py": ASSERTED_SIZES})
    for name in ("Block", "PerPart"):
        cell = cells[name]
        assert (cell.status, cell.graph, cell.ran_inside) == ("pass", "pass", "net.Net"), (
            name, cell.error)
    # a Cell with no parent that runs it keeps its failure
    alone = ASSERTED_SIZES.split("class Net")[0]
    _, cells = run_cells(tmp_path / "alone", {"net.py": alone})
    assert cells["Block"].status == "fail"


UNPACKED_WITH_MORE = '''\
from torch import nn


class Heads(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        b, n, _, h = *x.shape, self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, h, -1).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(b, n, -1)


class Volumes(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        *_, h, w, dtype = *x.shape, x.dtype
        return self.proj(x.reshape(-1, h * w)).to(dtype)
'''


def test_a_shape_unpacked_with_more_values_after_it_gives_the_rank(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``b, n, _, h = *x.shape, self.heads``: three of the four names are the input's sizes,
    # planned first (not (2, 16), what the Linear layer alone would take)
    _, cells = run_cells(tmp_path, {"heads.py": UNPACKED_WITH_MORE})
    cell = cells["Heads"]
    assert (cell.pynative, cell.graph, cell.input_shape) == ("pass", "pass", "(2, 8, 16)"), (
        cell.error)
    planner = Planner(scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False)))
    assert planner.input_of("heads.Heads", planner.environment("heads.Heads", {})) == \
        InputSpec((2, 8, 16))
    # a starred name takes any number of sizes: no rank is told
    assert planner.input_of("heads.Volumes", planner.environment("heads.Volumes", {})) == \
        InputSpec((2, 16))


VIDEO = '''\
import torch
from torch import nn
from einops.layers.torch import Rearrange


class Clips(nn.Module):
    def __init__(self, image_size=16, patch=4, frames=4, frame_patch=2, dim=8):
        super().__init__()
        self.to_tokens = nn.Sequential(
            Rearrange('b c (f pf) (h p1) (w p2) -> b f (h w) (pf p1 p2 c)', p1=patch,
                      p2=patch, pf=frame_patch),
            nn.Linear(patch * patch * frame_patch * 3, dim))
        self.pos = nn.Parameter(torch.randn(1, frames // frame_patch,
                                            (image_size // patch) ** 2, dim))

    def forward(self, video):
        return self.to_tokens(video) + self.pos
'''


def test_a_video_gets_the_frames_and_the_image_size_the_class_is_built_for(
        tmp_path: Path, run_cells: CellRun) -> None:
    # its time and space positions are made for 4 frames of 16 x 16
    _, cells = run_cells(tmp_path, {"clips.py": VIDEO})
    cell = cells["Clips"]
    assert (cell.pynative, cell.graph, cell.input_shape) == (
        "pass", "pass", "(2, 3, 4, 16, 16)"), cell.error


HANDED_NETWORK = '''\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, channels=5, dim=8):
        super().__init__()
        self.conv = nn.Conv1d(channels, dim, 3, padding=1)

    def forward(self, seq):
        return self.conv(seq)


class Recorder(nn.Module):
    def __init__(self, encoder, scale=2.0):
        super().__init__()
        self.encoder = encoder
        self.scale = scale

    def forward(self, seq):
        out = self.encoder(seq)
        return out * self.scale


class Scaled(nn.Module):
    def __init__(self, layer_class=nn.Identity):
        super().__init__()
        self.layer = layer_class

    def forward(self, x):
        return self.layer()(x)
'''


def test_a_wrapper_takes_the_input_of_the_network_it_was_handed(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self.encoder = encoder`` then ``self.encoder(seq)``: the wrapper's input is the
    # input planned for the (stand-in) network, five channels of a sequence
    _, cells = run_cells(tmp_path, {"wrap.py": HANDED_NETWORK})
    cell = cells["Recorder"]
    assert cell.synthesized == "encoder=Encoder()"
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error
    planner = Planner(scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False)))
    plan = planner.plan("wrap.Recorder")
    assert plan.inputs[0] is not None and plan.inputs[0].shape[:2] == (2, 5)
    assert not plan.guessed
    # a class kept to be called (not a network it was handed) tells no input
    assert planner.plan("wrap.Scaled").inputs[0] != plan.inputs[0]



SELF_ATTENTION = '''\
import torch
import torch.nn as nn
from einops import rearrange


class SelfAttention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        h = self.heads
        qkv = self.to_qkv(x)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> (b h) n d', h=h), (qkv, qkv, qkv))
        attn = torch.einsum('b i d, b j d -> b i j', q, k).softmax(dim=-1)
        out = torch.einsum('b i j, b j d -> b i d', attn, v)
        return self.to_out(rearrange(out, '(b h) n d -> b n (h d)', h=h))


class Table(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(2, 4, dim // 2))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        pos = rearrange(self.pos, 'h n d -> n (h d)')
        return self.proj(x) + pos.mean()
'''


def test_the_rank_an_einops_pattern_reads_the_input_with_is_planned(
        tmp_path: Path) -> None:
    # ``qkv = self.to_qkv(x)`` keeps the input's rank (a Linear), and the pattern, applied
    # through ``map(lambda t: ...)`` to a tuple holding it, reads three axes: the input is
    # a sequence, not (2, 32)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "attn.py").write_text(SELF_ATTENTION)
    planner = Planner(scan(str(repo), options=ScanOptions(jobs=1, cache=False)))
    env = planner.environment("attn.SelfAttention", {"dim": 32})
    assert planner.input_of("attn.SelfAttention", env) == InputSpec((2, 8, 32))
    # a pattern over a table the class holds says nothing about the input
    env = planner.environment("attn.Table", {"dim": 32})
    assert planner.input_of("attn.Table", env) == InputSpec((2, 32))


CROSS_ATTENTION = '''\
import torch
import torch.nn as nn
from einops import rearrange


class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        context_dim = context_dim if context_dim is not None else query_dim
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner, bias=False)
        self.to_kv = nn.Linear(context_dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, query_dim)

    def forward(self, x, context=None):
        h = self.heads
        q = self.to_q(x)
        context = context if context is not None else x
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> (b h) n d', h=h), (q, k, v))
        attn = torch.einsum('b i d, b j d -> b i j', q, k).softmax(dim=-1)
        out = torch.einsum('b i j, b j d -> b i d', attn, v)
        return self.to_out(rearrange(out, '(b h) n d -> b n (h d)', h=h))


class Latents(nn.Module):
    def __init__(self):
        super().__init__()
        self.cross = CrossAttention(32, context_dim=12)
        self.own = CrossAttention(32)

    def forward(self, x, data):
        return self.own(self.cross(x, data))
'''


def test_an_optional_context_a_layer_takes_at_its_own_width_is_given(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``self.to_kv(context)`` built for context_dim=12 while the input is 32 wide: the
    # context is given at its width; the rank is the one the einops pattern reads
    # (through ``map(lambda t: rearrange(t, ...), (q, k, v))``), three axes
    _, cells = run_cells(tmp_path, {"cross.py": CROSS_ATTENTION})
    cell = cells["CrossAttention"]
    assert cell.synthesized == "" and cell.input_shape == "(2, 8, 32), (2, 8, 12)"
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error
    planner = Planner(scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False)))
    # with the widths equal (no context_dim), the context falls back to the input: none
    own = planner._inputs("cross.CrossAttention", {"query_dim": 32}, False)[0]
    assert own == [InputSpec((2, 8, 32))]


WRAPPED_LOSS = '''\
import torch
import torch.nn as nn


class Focal(nn.Module):
    def __init__(self, loss_fcn, gamma=1.5):
        super().__init__()
        self.loss_fcn = loss_fcn
        self.gamma = gamma
        self.reduction = loss_fcn.reduction
        self.loss_fcn.reduction = "none"

    def forward(self, pred, true):
        loss = self.loss_fcn(pred, true)
        p_t = true * torch.sigmoid(pred) + (1 - true) * (1 - torch.sigmoid(pred))
        loss = loss * (1.0 - p_t) ** self.gamma
        return loss.mean() if self.reduction == "mean" else loss.sum()


class Scaled(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) * 2


def build(weight, gamma):
    criterion = nn.BCEWithLogitsLoss(pos_weight=weight)
    if gamma > 0:
        criterion = Focal(criterion, gamma)
    return criterion, Scaled(helper)


def helper(x):
    return x
'''


def test_a_torch_layer_a_site_hands_the_class_is_made_up_as_that_layer(
        tmp_path: Path, run_cells: CellRun) -> None:
    # ``Focal(criterion, gamma)`` with ``criterion = nn.BCEWithLogitsLoss(...)``: the
    # loss is made up as that layer (its defaults), built as MindSpore's
    _, cells = run_cells(tmp_path, {"losses.py": WRAPPED_LOSS})
    focal = cells["Focal"]
    assert focal.synthesized.startswith("loss_fcn=BCEWithLogitsLoss()"), focal.synthesized
    assert (focal.pynative, focal.graph) == ("pass", "pass"), focal.error
    # a function handed (not a torch layer) makes up nothing
    planner = Planner(scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False)))
    assert planner._site_torch_layer("losses.Scaled", "fn") is None


BUILT_BY_A_BUILDER = '''\
from typing import List

import torch.nn as nn


class StageConfig:
    """A plain class the network's builder fills, one per stage."""

    def __init__(self, channels: int, out_channels: int, blocks: int):
        self.channels = channels
        self.out_channels = out_channels
        self.blocks = blocks


class StagedNet(nn.Module):
    def __init__(self, stages: List[StageConfig], num_classes: int = 10):
        super().__init__()
        if not all(isinstance(s, StageConfig) for s in stages):
            raise TypeError("stages should be List[StageConfig]")
        layers = []
        for stage in stages:
            layers += [nn.Conv2d(stage.channels, stage.channels, 3, padding=1)] * stage.blocks
            layers.append(nn.Conv2d(stage.channels, stage.out_channels, 1))
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(stages[-1].out_channels, num_classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def _staged_net(stages, weights, **kwargs):
    return StagedNet(stages, **kwargs)


def staged_net_small(*, weights=None, **kwargs):
    stages = [StageConfig(3, 8, 1), StageConfig(8, 12, 2)]
    return _staged_net(stages, weights, **kwargs)
'''


def test_arguments_a_builder_function_makes_two_calls_away_are_the_site(
        tmp_path: Path, run_cells: CellRun) -> None:
    # StagedNet(stages) in _staged_net reads its parameter; staged_net_small calls it
    # with a list of StageConfig it builds: the Cell gets that list, not made-up records
    _, cells = run_cells(tmp_path, {"staged.py": BUILT_BY_A_BUILDER})
    net = cells["StagedNet"]
    assert (net.pynative, net.graph) == ("pass", "pass"), net.error
    assert net.synthesized == ""
    assert (net.input_shape, net.output_shape) == ("(2, 3, 32, 32)", "(2, 10)")


INDEXED_PAST_FOUR = '''\
from typing import List

import torch.nn as nn


class Decoder(nn.Module):
    """Five blocks, one per encoder stage after the first: six channel counts."""

    def __init__(self, encoder_channels: List[int], n_blocks: int = 5):
        super().__init__()
        channels = list(encoder_channels[1:])[::-1]
        self.blocks = nn.ModuleList(
            [nn.Conv2d(channels[i], channels[i + 1] if i + 1 < len(channels) else 8, 1)
             for i in range(n_blocks)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
'''


def test_a_made_up_sequence_is_made_longer_when_the_constructor_indexes_past_it(
        tmp_path: Path, run_cells: CellRun) -> None:
    _, cells = run_cells(tmp_path, {"decoder.py": INDEXED_PAST_FOUR})
    decoder = cells["Decoder"]
    assert (decoder.pynative, decoder.graph) == ("pass", "pass"), decoder.error
    assert decoder.synthesized == "encoder_channels=(16, 16, 16, 16, 16, 16, 16, 16)"
