"""einops patterns become MindSpore reshape / transpose / tile code in the Cell, checked
against numpy on MindSpore in PyNative, and through a small einops ViT in both modes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mindspore
import numpy as np
import pytest
from mindspore import ops

from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons.einops import PatternError, function_source
from msready.skeletons.generate import build_skeletons

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
    ("reduce", "b ... -> b", {}, "mean", (2, 3, 4), lambda x: x.mean(axis=(1, 2))),
    ("reduce", "b c h w -> b c", {}, "max", (2, 3, 4, 5), lambda x: x.max(axis=(2, 3))),
    ("repeat", "d -> b d", {"b": 2}, None, (5,), lambda x: np.tile(x[None], (2, 1))),
])
def test_patterns_give_numpy_results(op: str, pattern: str, sizes: dict[str, int],
                                     how: str | None, shape: tuple[int, ...],
                                     expected: Ref) -> None:
    namespace: dict[str, Any] = {"ops": ops}
    exec(function_source("f", op, pattern, list(sizes), how), namespace)
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    got = namespace["f"](mindspore.Tensor(x), **sizes).asnumpy()
    np.testing.assert_allclose(got, expected(x), rtol=1e-6)


@pytest.mark.parametrize(("op", "pattern"), [
    ("rearrange", "b c -> b"),  # an axis on one side only
    ("rearrange", "b (h w) -> b h w"),  # two unknown sizes in one group
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
    code = (out / "vit.py").read_text()
    assert "import einops" not in code and "from einops" not in code
    assert "EinopsLayer(einops_0, p1=patch_size, p2=patch_size)" in code
    assert not [f for f in result.findings if f.rule == "MS100"]
