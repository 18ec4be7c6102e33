"""einops patterns become MindSpore reshape / transpose / tile code in the Cell, checked
against numpy on MindSpore in PyNative, and through a small einops ViT in both modes."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mindspore
import numpy as np
import pytest
import torch
from mindspore import ops

from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons import compositions
from msready.skeletons.einops import (
    PatternError,
    einsum_equation,
    function_source,
    input_shape,
)
from msready.skeletons.generate import build_skeletons
from msready.skeletons.inputs import InputSpec
from msready.skeletons.shapes import Planner

FIXTURES = Path(__file__).parent / "fixtures" / "skeletons"
Ref = Callable[[Any], Any]


@pytest.mark.parametrize(("op", "pattern", "sizes", "how", "shape", "expected"), [
    ("rearrange", "b c h w -> b (h w) c", {}, None, (2, 3, 4, 5),
     lambda x: x.transpose(0, 2, 3, 1).reshape(2, 20, 3)),
    ("rearrange", "b n (h d) -> b h n d", {"h": 2}, None, (2, 4, 6),
     lambda x: x.reshape(2, 4, 2, 3).transpose(0, 2, 1, 3)),
    ("rearrange", "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 2, "p2": 2}, None,
     (2, 3, 8, 8),
     lambda x: x.reshape(2, 3, 4, 2, 4, 2).transpose(0, 2, 4, 3, 5, 1).reshape(2, 16, 12)),
    ("rearrange", "b c -> b c 1 1", {}, None, (2, 3), lambda x: x.reshape(2, 3, 1, 1)),
    ("rearrange", "b ... c -> b c ...", {}, None, (2, 3, 4, 5),
     lambda x: x.transpose(0, 3, 1, 2)),
    # the axes an ellipsis stands for, merged into one (LeViT's heads over a feature map)
    ("rearrange", "b (h d) ... -> b h (...) d", {"h": 2}, None, (2, 6, 4, 5),
     lambda x: x.reshape(2, 2, 3, 4, 5).transpose(0, 1, 3, 4, 2).reshape(2, 2, 20, 3)),
    ("rearrange", "b ... d -> b (... d)", {}, None, (2, 3, 4, 5),
     lambda x: x.reshape(2, 60)),
    ("reduce", "b ... -> b", {}, "mean", (2, 3, 4), lambda x: x.mean(axis=(1, 2))),
    ("reduce", "b c h w -> b c", {}, "max", (2, 3, 4, 5), lambda x: x.max(axis=(2, 3))),
    ("repeat", "d -> b d", {"b": 2}, None, (5,), lambda x: np.tile(x[None], (2, 1))),
    ("repeat", "b ... -> b r ...", {"r": 3}, None, (2, 4, 5),
     lambda x: np.broadcast_to(x[:, None], (2, 3, 4, 5))),
    # a table with no rows (no register tokens asked for) is repeated all the same
    ("repeat", "n d -> b n d", {"b": 2}, None, (0, 4), lambda x: np.zeros((2, 0, 4))),
])
def test_patterns_give_numpy_results(op: str, pattern: str, sizes: dict[str, int],
                                     how: str | None, shape: tuple[int, ...],
                                     expected: Ref) -> None:
    namespace: dict[str, Any] = {"ops": ops, "mindspore": mindspore}
    exec(function_source("f", op, pattern, list(sizes), how), namespace)
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    got = namespace["f"](mindspore.Tensor(x), **sizes).asnumpy()
    np.testing.assert_allclose(got, expected(x), rtol=1e-6)


@pytest.mark.parametrize(("how", "expected"), [("max", np.any), ("min", np.all)])
def test_a_mask_reduced_by_max_or_min_tells_whether_any_or_all_hold(
        how: str, expected: Callable[..., Any]) -> None:
    # (a mask pooled per patch; MindSpore's CPU amax / amin take no bools)
    namespace: dict[str, Any] = {"ops": ops, "mindspore": mindspore}
    exec(function_source("f", "reduce", "b (h p) -> b h", ["p"], how), namespace)
    mask = np.random.default_rng(0).random((2, 6)) > 0.5
    got = namespace["f"](mindspore.Tensor(mask), p=2).asnumpy()
    np.testing.assert_array_equal(got, expected(mask.reshape(2, 3, 2), axis=2))


@pytest.mark.parametrize(("op", "pattern"), [
    ("rearrange", "b c -> b"),  # an axis on one side only
    ("rearrange", "b (h w) -> b h w"),  # two unknown sizes in one group
    ("rearrange", "(...) d -> d ..."),  # an ellipsis grouped on the left
    ("repeat", "d -> b d"),  # the new axis has no size
])
def test_patterns_that_cannot_be_written_out_are_refused(op: str, pattern: str) -> None:
    with pytest.raises(PatternError):
        function_source("f", op, pattern, [])


def test_an_einops_vit_runs_in_both_modes(tmp_path: Path) -> None:
    result = scan(str(FIXTURES / "einops_vit"), options=ScanOptions(jobs=1, cache=False))
    out = tmp_path / "skeletons"
    cells = {s.torch_class.rsplit(".", 1)[1]: s for s in build_skeletons(
        result, out, run=True, compare_torch=False, cache=False)}
    assert {name: (s.pynative, s.graph) for name, s in cells.items()} == {
        "PatchEmbed": ("pass", "pass"), "Attention": ("pass", "pass"),
        "ViT": ("pass", "pass")}
    assert cells["ViT"].output_shape == "(2, 10)"
    # the patch embedding's pattern says what image it cuts: no search from (2, 48)
    assert cells["PatchEmbed"].input_shape == "(2, 3, 32, 32)"
    assert cells["PatchEmbed"].given_input == ""
    code = (out / "vit.py").read_text()
    assert "import einops" not in code and "from einops" not in code
    assert "EinopsLayer(einops_0, p1=patch_size, p2=patch_size)" in code
    assert not [f for f in result.findings if f.rule == "MS100"]


@pytest.mark.parametrize(("pattern", "sizes", "expected"), [
    # an image cut into patches: its channels, and each side a whole number of patches
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 4, "p2": 4}, ((2, 3, 32, 32), 2)),
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 7, "p2": 7}, ((2, 3, 28, 28), 2)),
    # patch sizes the code computes (``p1=patch_height`` from a helper): sides of 32
    ("b c (h p1) (w p2) -> b h w (p1 p2 c)", {}, ((2, 3, 32, 32), 2)),
    # a clip: frames in patches too
    ("b c (f pf) (h p1) (w p2) -> b (f h w) (p1 p2 pf c)", {"pf": 2, "p1": 8, "p2": 8},
     ((2, 3, 32, 32, 32), 3)),
    # every axis sized
    ("b (h w) c -> b c h w", {"h": 4, "w": 4, "c": 8}, ((2, 16, 8), 0)),
    # the pattern does not say: the layers after it will
    ("b n (h d) -> b h n d", {"h": 2}, None),
    ("b ... d -> b d", {}, None),
])
def test_a_leading_einops_layer_says_what_input_the_network_takes(
        pattern: str, sizes: dict[str, int],
        expected: tuple[tuple[int, ...], int] | None) -> None:
    assert input_shape(pattern, sizes) == expected


PACKED = '''\
from einops import pack, unpack
from torch import nn


def pack_one(t, pattern):
    return pack([t], pattern)


class Mixer(nn.Module):
    """Mixes the positions of a (B, C, H, W) map: pattern strings pass through helpers."""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim, 1)
        self.mix = nn.Linear(dim, dim)

    def forward(self, x, context):
        x = self.proj(x).permute(0, 2, 3, 1)
        x, ps = pack_one(x, "b * c")
        both, shapes = pack([x, context], "b * c")
        both = self.mix(both)
        x, context = unpack(both, shapes, "b * c")
        x, = unpack(x, ps, "b * c")
        return x.permute(0, 3, 1, 2) + context.mean()
'''


def test_pack_and_unpack_read_their_pattern_when_they_run(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    out, cells = run_cells(tmp_path, {"mixer.py": PACKED})
    mixer = cells["Mixer"]
    assert (mixer.status, mixer.graph) == ("pass", "pass"), mixer.error
    assert (mixer.input_shape, mixer.output_shape) == ("(2, 8, 8, 8), (2, 8, 8, 8)",
                                                       "(2, 8, 8, 8)")
    code = (out / "mixer.py").read_text()
    assert "both, shapes = einops_pack([x, context], \"b * c\")" in code
    assert "x, context = einops_unpack(both, shapes, \"b * c\")" in code


def test_pack_then_unpack_gives_back_each_tensor() -> None:
    namespace: dict[str, Any] = {"ops": ops}
    exec(compositions.SOURCES["einops_pack"] + compositions.SOURCES["einops_unpack"],
         namespace)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((2, 7, 5)).astype(np.float32)
    packed, shapes = namespace["einops_pack"]([mindspore.Tensor(a), mindspore.Tensor(b)],
                                              "b * c")
    assert (tuple(packed.shape), shapes) == ((2, 19, 5), [(3, 4), (7,)])
    expected = np.concatenate([a.reshape(2, 12, 5), b], axis=1)
    np.testing.assert_array_equal(packed.asnumpy(), expected)
    back = namespace["einops_unpack"](packed, shapes, "b * c")
    np.testing.assert_array_equal(back[0].asnumpy(), a)
    np.testing.assert_array_equal(back[1].asnumpy(), b)



def test_a_piece_with_no_values_is_packed_and_unpacked() -> None:
    # no register tokens: a (2, 0, 5) table packed beside the tokens, and back
    namespace: dict[str, Any] = {"ops": ops}
    exec(compositions.SOURCES["einops_pack"] + compositions.SOURCES["einops_unpack"],
         namespace)
    empty = np.zeros((2, 0, 5), np.float32)
    tokens = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
    packed, shapes = namespace["einops_pack"](
        [mindspore.Tensor(empty), mindspore.Tensor(tokens)], "b * c")
    none, back = namespace["einops_unpack"](packed, shapes, "b * c")
    assert tuple(none.shape) == (2, 0, 5)
    np.testing.assert_array_equal(back.asnumpy(), tokens)


TIMESTEP_EMBEDDING = '''\
import math

import torch
from einops import rearrange
from torch import nn


class LearnedSinusoidalPosEmb(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(dim // 2))

    def forward(self, x):
        x = rearrange(x, 'b -> b 1')
        freqs = x * rearrange(self.weights, 'd -> 1 d') * 2 * math.pi
        fouriered = torch.cat((freqs.sin(), freqs.cos()), dim=-1)
        return torch.cat((x, fouriered), dim=-1)
'''


def test_a_timestep_embedding_is_fed_one_number_per_sample(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    _, cells = run_cells(tmp_path, {"emb.py": TIMESTEP_EMBEDDING})
    cell = cells["LearnedSinusoidalPosEmb"]
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert (cell.input_shape, cell.output_shape) == ("(2,)", "(2, 17)")


@pytest.mark.parametrize(("pattern", "equation"), [
    ("b i d, b j d -> b i j", "bid,bjd->bij"),
    ("batch head i d, batch head j d -> batch head i j", "abid,abjd->abij"),
    ("... i d, ... d -> ... i", "...id,...d->...i"),
])
def test_einops_einsum_patterns_become_torch_equations(pattern: str, equation: str) -> None:
    assert einsum_equation(pattern) == equation


def test_an_einops_einsum_pattern_without_an_output_is_refused() -> None:
    with pytest.raises(PatternError):
        einsum_equation("b i d, b j d")


EINSUM = '''\
import torch
from einops import einsum
from torch import nn


class Similarity(nn.Module):
    """einops.einsum takes its pattern last, with axis names of any length."""

    def __init__(self, dim=8):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x):
        sim = einsum(self.q(x), self.k(x), "batch i d, batch j d -> batch i j")
        return sim.softmax(dim=-1)
'''


def test_einops_einsum_runs_as_the_cells_einsum(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    out, cells = run_cells(tmp_path, {"sim.py": EINSUM})
    sim = cells["Similarity"]
    assert (sim.status, sim.graph) == ("pass", "pass"), sim.error
    code = (out / "sim.py").read_text()
    assert "sim = torch_einsum('aid,ajd->aij', self.q(x), self.k(x))" in code
    assert "from einops" not in code and "einsum(self" not in code.replace("torch_einsum", "")


NORMED_PATCHES = '''\
import torch.nn as nn
from einops.layers.torch import Rearrange


def pair(t):
    return t if isinstance(t, tuple) else (t, t)


class PatchTokens(nn.Module):
    """A simple ViT's patch embedding: the patches normed before and after projection,
    their sizes computed by a helper."""

    def __init__(self, image_size=32, patch_size=4, channels=3, dim=16):
        super().__init__()
        patch_height, patch_width = pair(patch_size)
        patch_dim = channels * patch_height * patch_width
        self.to_patch_embedding = nn.Sequential(
            Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=patch_height,
                      p2=patch_width),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )

    def forward(self, img):
        return self.to_patch_embedding(img).mean(dim=1)
'''


def test_a_network_opening_with_a_rearrange_layer_gets_the_image_its_pattern_cuts(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    _, cells = run_cells(tmp_path, {"patches.py": NORMED_PATCHES})
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass")
    assert (cell.input_shape, cell.output_shape) == ("(2, 3, 32, 32)", "(2, 16)")
    # the input planned first, not found by trying others: not (2, 8, 16), what the last
    # LayerNorm would take, the first layer whose size is known
    planner = Planner(scan(str(tmp_path / "repo"), options=ScanOptions(jobs=1, cache=False)))
    name = "patches.PatchTokens"
    assert planner.input_of(name, planner.environment(name, {})) == InputSpec(
        (2, 3, 32, 32), spatial=2)


RUNTIME_SIZES = '''\
import torch.nn as nn
from einops import rearrange


class ToMap(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        side = int(x.shape[1] ** 0.5)
        dims = {'h': side, 'w': side}
        return self.conv(rearrange(x, 'b (h w) d -> b d h w', **dims))
'''


def test_sizes_unpacked_from_a_mapping_are_read_when_the_cell_runs(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    # the pattern is written out; which axes the mapping sizes is known only at run time
    out, cells = run_cells(tmp_path, {"tomap.py": RUNTIME_SIZES})
    code = (out / "tomap.py").read_text()
    assert "rearrange = Unavailable" not in code and "**dims)" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


@pytest.mark.parametrize(("given", "shape"), [
    ({"h": 3, "w": 4}, (2, 5, 3, 4)), ({"w": 4}, (2, 5, 3, 4)), ({"h": 4}, (2, 5, 4, 3))])
def test_a_group_sized_by_a_mapping_takes_the_missing_size_from_the_others(
        given: dict[str, int], shape: tuple[int, ...]) -> None:
    namespace: dict[str, Any] = {"ops": ops, "mindspore": mindspore}
    exec(function_source("f", "rearrange", "b (h w) d -> b d h w", [], spread=True),
         namespace)
    x = np.random.default_rng(0).random((2, 12, 5)).astype(np.float32)
    got = namespace["f"](mindspore.Tensor(x), **given).asnumpy()
    h, w = shape[2:]
    np.testing.assert_allclose(got, x.reshape(2, h, w, 5).transpose(0, 3, 1, 2))


STARRED_TENSORS = '''\
import torch.nn as nn
from einops import rearrange


class Swap(nn.Module):
    def forward(self, x):
        args = (x, 'b c -> c b')
        return rearrange(*args)
'''


def test_an_einops_call_left_as_written_needs_einops_instead_of_failing_on_its_name(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    # the tensor and pattern unpacked from a tuple: the pattern is not written out
    out, cells = run_cells(tmp_path, {"swap.py": STARRED_TENSORS})
    code = [ln.strip() for ln in (out / "swap.py").read_text().splitlines()]
    assert "rearrange = Unavailable" in code
    (cell,) = cells.values()
    assert cell.status == "blocked" and "einops" in (cell.error or "")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The Cells' einops layer and functions, imported from a file as in a generated Cell
    (GRAPH_MODE reads their source)."""
    folder = tmp_path_factory.mktemp("runtime_einops")
    (folder / "runtime_einops.py").write_text(
        "import mindspore\nfrom mindspore import nn, ops\n" + "".join(
            compositions.SOURCES[name] for name in (
                "EinopsPatternLayer", "einops_pattern", "einops_groups", "einops_expand",
                "einops_apply")), encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("runtime_einops")
    finally:
        sys.path.remove(str(folder))


@pytest.mark.parametrize("mode", [mindspore.PYNATIVE_MODE, mindspore.GRAPH_MODE])
@pytest.mark.parametrize(("pattern", "how", "sizes", "expected"), [
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", None, {"p1": 2, "p2": 4},
     lambda t: t.reshape(2, 3, 4, 2, 2, 4).permute(0, 2, 4, 3, 5, 1).reshape(2, 8, 24)),
    ("b c h w -> b c", "mean", {}, lambda t: t.mean((2, 3))),
    ("b c h w -> b c", "max", {}, lambda t: t.amax((2, 3))),
    ("b ... -> b (...)", None, {}, lambda t: t.reshape(2, -1)),
    ("b c ... -> b ... c", None, {}, lambda t: t.permute(0, 2, 3, 1)),
    ("b (h d) ... -> b h (...) d", None, {"h": 1},
     lambda t: t.reshape(2, 1, 3, 64).permute(0, 1, 3, 2)),
    ("b c h w -> b c 1 h w", None, {}, lambda t: t[:, :, None]),
    ("b (c r) ... -> b ... r c", None, {"r": 3},
     lambda t: t.reshape(2, 1, 3, 8, 8).permute(0, 3, 4, 2, 1)),
    ("b c h w -> b r c h w", None, {"r": 2},
     lambda t: t[:, None].expand(2, 2, 3, 8, 8)),
])
def test_a_layer_built_from_a_pattern_when_the_network_is_matches_torch(
        runtime: Any, mode: int, pattern: str, how: str | None, sizes: dict[str, int],
        expected: Ref) -> None:
    x = np.random.default_rng(0).random((2, 3, 8, 8)).astype(np.float32)
    mindspore.set_context(mode=mode)
    try:
        got = runtime.EinopsPatternLayer(pattern, how, **sizes)(mindspore.Tensor(x))
    finally:
        mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    np.testing.assert_allclose(got.asnumpy(), expected(torch.tensor(x)).numpy(), rtol=1e-6)


def test_a_pattern_built_when_the_code_runs_is_read_then(runtime: Any) -> None:
    x = np.random.default_rng(0).random((2, 3, 4, 4)).astype(np.float32)
    dims = "h w"
    got = runtime.einops_pattern(mindspore.Tensor(x), f"b c {dims} -> (b v) c {dims}", None,
                                 v=2)
    reference = torch.tensor(x)[:, None].expand(2, 2, 3, 4, 4).reshape(4, 3, 4, 4)
    np.testing.assert_allclose(got.asnumpy(), reference.numpy())


BUILT_PATTERNS = '''\
import torch.nn as nn
from einops import repeat
from einops.layers.torch import Rearrange


class NDPatches(nn.Module):
    """Patches of an input with any number of sides: the patterns are built from them."""

    def __init__(self, ndim=2, patch=4, channels=3, dim=16):
        super().__init__()
        names = 'hwd'[:ndim]
        sides = ' '.join(f'({n} p{i})' for i, n in enumerate(names))
        patches = ' '.join(f'p{i}' for i in range(ndim))
        self.dims = ' '.join(names)
        sizes = {f'p{i}': patch for i in range(ndim)}
        self.views = 2
        self.to_patches = nn.Sequential(
            Rearrange(f'b c {sides} -> b ({self.dims}) ({patches} c)', **sizes),
            nn.Linear(channels * patch ** ndim, dim))

    def forward(self, x):
        return self.to_patches(x)


class Views(NDPatches):
    def forward(self, x):
        return self.to_patches(repeat(x, f'b c {self.dims} -> (b v) c {self.dims}',
                                      v=self.views))
'''


def test_einops_patterns_built_from_the_networks_sides_run(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    out, cells = run_cells(tmp_path, {"nd.py": BUILT_PATTERNS})
    code = (out / "nd.py").read_text()
    assert "= Unavailable" not in code
    assert "EinopsPatternLayer(f'b c {sides} -> b ({self.dims}) ({patches} c)', None, " \
           "**sizes)" in code
    patches, views = cells["NDPatches"], cells["Views"]
    assert (patches.pynative, patches.graph) == ("pass", "pass"), patches.error
    assert patches.output_shape == "(2, 64, 16)"
    # the call's pattern is read when it runs: PyNative
    assert views.pynative == "pass", views.error
    assert views.output_shape == "(4, 64, 16)"


def test_a_pattern_einops_refuses_raises_when_it_runs(runtime: Any) -> None:
    with pytest.raises(ValueError, match="'b 1 c h w' has no single '->'"):
        runtime.einops_pattern(mindspore.Tensor(np.zeros((2, 3, 4, 4), np.float32)),
                               "b 1 c h w")


MALFORMED_BRANCH = '''\
import torch.nn as nn
from einops import rearrange


class Frames(nn.Module):
    """Takes (batch, frames, channels, height, width); a lone image's branch has a
    pattern einops refuses (no '->'), so it fails there as the torch code does."""

    def __init__(self, channels=3, dim=8):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, 1)

    def forward(self, video):
        if video.ndim == 4:
            video = rearrange(video, 'b 1 c h w')
        frames = rearrange(video, 'b f c h w -> (b f) c h w')
        return self.proj(frames)
'''


def test_a_pattern_einops_refuses_is_no_missing_library(
        tmp_path: Path, run_cells: Callable[..., Any]) -> None:
    out, cells = run_cells(tmp_path, {"frames.py": MALFORMED_BRANCH})
    code = (out / "frames.py").read_text()
    assert "= Unavailable" not in code
    assert "einops_pattern(video, 'b 1 c h w', None)" in code
    (cell,) = cells.values()
    # an input of four axes (the convolution's) reaches the branch and fails as in torch;
    # not a library msready lacks
    assert cell.status == "pass" or (
        cell.status == "fail" and "'b 1 c h w' has no single '->'" in (cell.error or ""))
