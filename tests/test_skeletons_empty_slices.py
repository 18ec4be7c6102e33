"""Writing into a slice that may select nothing: torch writes nothing, MindSpore raises.
An assignment whose index holds a slice known only at run time goes through
``torch_setitem``; one with literal indexes stays as written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest

from msready.analyzer.result import SkeletonResult
from msready.skeletons import empty_slices

CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

# Swin's attention mask: with a window as large as the feature map (8 of 8 rows), the first
# slice, slice(0, -8), is empty.
SHIFTED_WINDOWS = '''\
import torch
import torch.nn as nn


class ShiftedWindows(nn.Module):
    def __init__(self, dim=8, window_size=8, shift_size=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.window_size = window_size
        self.shift_size = shift_size

    def forward(self, x):
        B, H, W, C = x.shape
        img_mask = torch.zeros((1, H, W, 1))
        h_slices = (
            slice(0, -self.window_size),
            slice(-self.window_size, -self.shift_size),
            slice(-self.shift_size, None),
        )
        cnt = 0
        for h in h_slices:
            for w in h_slices:
                img_mask[:, h, w, :] = cnt
                cnt += 1
        band = torch.zeros(H, W)
        band[:, W - 2:] = 1.0
        band[0] = 2.0
        return self.fc(x) + img_mask + band[None, :, :, None]
'''


def test_a_mask_written_slice_by_slice_runs_when_a_slice_is_empty(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"masks.py": SHIFTED_WINDOWS})
    text = [ln.strip() for ln in (out / "masks.py").read_text().splitlines()]
    assert "img_mask = torch_setitem(img_mask, (slice(None), h, w, slice(None)), cnt)" in text
    assert "band = torch_setitem(band, (slice(None), slice(W - 2, None)), 1.0)" in text
    assert "band[0] = 2.0" in text  # a literal index selects something or fails in torch too
    cell = cells["ShiftedWindows"]
    assert (cell.pynative, cell.graph, cell.input_shape) == ("pass", "pass", "(2, 8, 8, 8)")


@pytest.mark.parametrize(("source", "expected"), [
    ("s = slice(1, n)\nx[s] = 0", "x = torch_setitem(x, s, 0)"),
    ("x[a:b, ::2] = y", "x = torch_setitem(x, (slice(a, b), slice(None, None, 2)), y)"),
    ("x[:, 1:-1] = 0", None),  # literal bounds: as written
    ("x[i] = 0", None),  # an index, not a slice
    ("self.buf[:, a:b] = 0", None),  # not a plain name: the write cannot be assigned back
])
def test_which_assignments_are_guarded(source: str, expected: str | None) -> None:
    module = cst.parse_module(source + "\n")
    names = empty_slices.slice_names(module)
    assign = module.body[-1].body[0]  # type: ignore[attr-defined]
    assert isinstance(assign, cst.Assign)
    guarded = empty_slices.guarded(assign, names)
    assert (None if guarded is None else module.code_for_node(guarded)) == expected
