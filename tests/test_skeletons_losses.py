"""torch losses whose MindSpore classes take less: CrossEntropyLoss's class indices are
int64 in torch and int32 only in MindSpore's class. Each example is generated and run in
PyNative and GRAPH_MODE; the adapter's values are checked against torch's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mindspore
import numpy as np
import pytest
import torch

from msready.analyzer.result import SkeletonResult
from msready.skeletons.adapters import SOURCES

# ``run_cells`` (conftest): write files, scan, generate and run the Cells
CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

CONTRASTIVE = '''\
import torch
import torch.nn as nn


class PatchContrast(nn.Module):
    """The positive pair of each row is its first column (class index 0)."""

    def __init__(self, temperature=0.07):
        super().__init__()
        self.temperature = temperature
        self.loss = nn.CrossEntropyLoss(reduction='none')

    def forward(self, feat_q, feat_k):
        logits = feat_q @ feat_k.t() / self.temperature
        target = torch.zeros(logits.size(0), dtype=torch.long)
        return self.loss(logits, target)
'''


def test_class_indices_torch_makes_int64_reach_the_loss(tmp_path: Path,
                                                        run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"contrast.py": CONTRASTIVE})
    code = [ln.strip() for ln in (out / "contrast.py").read_text().splitlines()]
    assert "self.loss = TorchCrossEntropyLoss(reduction='none')" in code
    assert "class TorchCrossEntropyLoss(nn.CrossEntropyLoss):" in code
    assert (cells["PatchContrast"].pynative, cells["PatchContrast"].graph) == ("pass", "pass")


def _adapter() -> Any:
    space: dict[str, object] = {"mindspore": mindspore, "nn": mindspore.nn,
                                "ops": mindspore.ops}
    exec(SOURCES["TorchCrossEntropyLoss"], space)  # the adapter as a generated file holds it
    return space["TorchCrossEntropyLoss"]


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
@pytest.mark.parametrize("kwargs", [{}, {"reduction": "none"}, {"reduction": "sum"},
                                    {"label_smoothing": 0.1}, {"ignore_index": 2},
                                    {"reduce": False}, {"size_average": False}])
def test_the_loss_matches_torchs_for_int64_and_int32_indices(kwargs: dict[str, Any]) -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 5)).astype(np.float32)
    labels = np.array([0, 2, 4, 1, 2, 3])
    expected = torch.nn.CrossEntropyLoss(**kwargs)(torch.tensor(logits),
                                                   torch.tensor(labels)).numpy()
    loss = _adapter()(**kwargs)
    for dtype in (np.int64, np.int32):
        got = loss(mindspore.Tensor(logits), mindspore.Tensor(labels.astype(dtype)))
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    # class probabilities (floats) are taken as they are
    probabilities = np.eye(5, dtype=np.float32)[labels]
    got = loss(mindspore.Tensor(logits), mindspore.Tensor(probabilities))
    if "ignore_index" not in kwargs:
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5, atol=1e-6)
