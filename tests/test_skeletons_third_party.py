"""Third-party torch layers a Cell gets written for MindSpore: timm's ``DropPath``, ``Mlp``
and ``trunc_normal_``, fairscale's ``checkpoint_wrapper``. A name imported from them is
bound to msready's MindSpore version, so the blocks that build them run; the library's
other names stay the ``Unavailable`` stand-in, said in the file's TODO."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from msready.analyzer.result import SkeletonResult

CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

BLOCKS = '''\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0, drop_path=0.1):
        super().__init__()
        from timm.models.layers import DropPath, Mlp

        self.norm = nn.LayerNorm(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=nn.GELU)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        return x + self.drop_path(self.mlp(self.norm(x)))


class Stack(nn.Module):
    def __init__(self, dim=8, depth=2, use_checkpoint=True):
        super().__init__()
        blocks = []
        for _ in range(depth):
            block = Block(dim)
            if use_checkpoint:
                from fairscale.nn.checkpoint import checkpoint_wrapper
                block = checkpoint_wrapper(block)
            blocks.append(block)
        self.blocks = nn.ModuleList(blocks)
        self.pos = nn.Parameter(torch.zeros(1, 4, dim))
        from timm.layers import trunc_normal_, to_2tuple
        trunc_normal_(self.pos, std=0.02)

    def forward(self, x):
        x = x + self.pos
        for block in self.blocks:
            x = block(x)
        return x
'''

ONLY_PROVIDED = '''\
from torch import nn
from timm.layers import DropPath


class Residual(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop_path = DropPath(0.2)

    def forward(self, x):
        return x + self.drop_path(self.fc(x))
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, run_cells: CellRun
          ) -> tuple[Path, dict[str, SkeletonResult]]:
    return run_cells(tmp_path_factory.mktemp("third_party"),
                     {"blocks.py": BLOCKS, "residual.py": ONLY_PROVIDED})


def lines(out: Path, name: str) -> list[str]:
    return [ln.strip() for ln in (out / name).read_text().splitlines()]


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem + "_generated", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_timm_and_fairscale_names_are_bound_to_their_mindspore_versions(
        built: tuple[Path, dict[str, SkeletonResult]]) -> None:
    out, cells = built
    text = lines(out, "blocks.py")
    assert "DropPath, Mlp = TimmDropPath, TimmMlp" in text
    assert "checkpoint_wrapper = fairscale_checkpoint_wrapper" in text
    # a name msready has no version of stays the stand-in, and the TODO says which library
    assert "trunc_normal_, to_2tuple = timm_trunc_normal_, Unavailable" in text
    assert any(ln.startswith("# TODO(msready MS100): side libraries dropped (timm)")
               for ln in text)
    for name in ("Block", "Stack"):
        assert (cells[name].pynative, cells[name].graph) == ("pass", "pass")
    assert cells["Stack"].output_shape == "(2, 4, 8)"


def test_a_file_that_imports_only_provided_names_drops_no_library(
        built: tuple[Path, dict[str, SkeletonResult]]) -> None:
    out, cells = built
    text = lines(out, "residual.py")
    assert "DropPath = TimmDropPath" in text
    assert not any("side libraries dropped" in ln or "Unavailable" in ln for ln in text)
    assert cells["Residual"].status == "pass"


def test_drop_path_drops_whole_samples_in_training_and_scales_the_rest(
        built: tuple[Path, dict[str, SkeletonResult]]) -> None:
    import mindspore

    out, _ = built
    drop = load(out / "residual.py").TimmDropPath(0.5)
    x = mindspore.Tensor(np.ones((64, 3, 2), np.float32))
    drop.set_train(False)
    assert (drop(x).asnumpy() == 1.0).all()  # the identity in evaluation
    drop.set_train(True)
    per_sample = drop(x).asnumpy().reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, 2.0}  # dropped, or kept and scaled by 1/0.5
    assert (per_sample == per_sample[:, :1]).all()  # a whole sample at a time
    assert 0 < (per_sample[:, 0] == 0.0).sum() < 64


OWN_DROP_PATH = '''\
import torch
from torch import nn


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return x
'''

OWN_NET = '''\
from torch import nn
from timm.layers import DropPath


class Net(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop_path = DropPath(0.1)

    def forward(self, x):
        return x + self.drop_path(self.fc(x))
'''


def test_the_scanned_library_s_own_layers_are_translated_not_replaced(
        tmp_path: Path, run_cells: CellRun) -> None:
    # scanning timm itself: ``timm.layers`` is the repository's own package
    out, cells = run_cells(tmp_path, {
        "timm/__init__.py": "", "timm/layers/__init__.py": "from .drop import DropPath\n",
        "timm/layers/drop.py": OWN_DROP_PATH, "timm/models/__init__.py": "",
        "timm/models/net.py": OWN_NET})
    text = lines(out, "timm/models/net.py")
    assert "from timm.layers import DropPath" in text
    assert not any("TimmDropPath" in ln for ln in text)
    assert cells["Net"].status == "pass"


VERSION_CHECKED = '''\
import pkg_resources as pkg
import torch
from torch import nn


def check_version(current="0.0.0", minimum="0.0.0"):
    current, minimum = (pkg.parse_version(x) for x in (current, minimum))
    return current >= minimum


class Detect(nn.Module):
    """Checks a version when the class is defined, in a default argument."""

    def __init__(self, ch=8):
        super().__init__()
        self.conv = nn.Conv2d(ch, 4, 1)

    def forward(self, x, new_torch=check_version(torch.__version__, "1.10.0")):
        return self.conv(x) if new_torch else self.conv(x) * 0
'''


def test_pkg_resources_version_parsing_is_packagings(tmp_path: Path,
                                                      run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"yolo.py": VERSION_CHECKED})
    detect = cells["Detect"]
    assert (detect.status, detect.graph) == ("pass", "pass"), detect.error
    code = (out / "yolo.py").read_text()
    assert "pkg = PkgResources" in code and "class PkgResources(" in code
