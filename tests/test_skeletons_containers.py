"""torch containers whose MindSpore counterparts hold less: a ModuleList that holds None,
a ParameterList grown by ``append``. Each example is generated and run in PyNative and
GRAPH_MODE."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mindspore
import numpy as np

from msready.analyzer.result import SkeletonResult
from msready.skeletons.adapters import SOURCES

# ``run_cells`` (conftest): write files, scan, generate and run the Cells
CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

OPTIONAL_LAYERS = '''\
import torch.nn as nn


def optional_norm(dim, on):
    return nn.LayerNorm(dim) if on else None


class Stack(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList([])
        self.norms = nn.ModuleList([])
        for i in range(depth):
            self.blocks.append(nn.ModuleList([
                nn.Linear(dim, dim),
                nn.Linear(dim, dim) if i > 0 else None,
            ]))
            self.norms.append(optional_norm(dim, i % 2 == 1))
        self.heads = nn.ModuleList(None if i == 0 else nn.Linear(dim, dim) for i in range(3))

    def forward(self, x):
        for (fc, extra), norm in zip(self.blocks, self.norms):
            x = fc(x)
            if extra is not None:
                x = x + extra(x)
            if norm is not None:
                x = norm(x)
        if self.heads[0] is None:
            x = self.heads[1](x)
        for head in self.heads[2:]:
            x = head(x)
        return x * len(self.norms)
'''


def test_a_module_list_holds_none_where_torchs_does(tmp_path: Path, run_cells: CellRun) -> None:
    # None comes in appended, as a list item, from a generator and from a function
    out, cells = run_cells(tmp_path, {"stack.py": OPTIONAL_LAYERS})
    code = (out / "stack.py").read_text()
    assert "self.norms = TorchModuleList([])" in code
    assert "class TorchModuleList(nn.CellList):" in code
    assert (cells["Stack"].pynative, cells["Stack"].graph) == ("pass", "pass")


def _module_list() -> type:
    space: dict[str, object] = {"nn": mindspore.nn}
    exec(SOURCES["TorchModuleList"], space)  # the adapter as a generated file holds it
    held = space["TorchModuleList"]
    assert isinstance(held, type)
    return held


def test_a_module_list_of_cells_names_parameters_as_cell_list_does() -> None:
    held = _module_list()

    def names(container: type) -> list[str]:
        class Net(mindspore.nn.Cell):
            def __init__(self) -> None:
                super().__init__()
                self.layers = container([mindspore.nn.Dense(2, 2)])
                self.layers.append(container([mindspore.nn.Dense(2, 2), mindspore.nn.Dense(2, 2)]))
                self.layers.extend([mindspore.nn.Dense(2, 2)])
        return [p.name for p in Net().trainable_params()]

    assert names(held) == names(mindspore.nn.CellList)
    layers = held([mindspore.nn.Dense(2, 2), None])
    layers[0] = None
    layers[1] = mindspore.nn.Dense(2, 3)
    assert layers[0] is None and len(layers) == 2 and len(layers[1:]) == 1
    out = layers[1](mindspore.Tensor(np.ones((1, 2), np.float32)))
    assert out.shape == (1, 3)


PAIRED_LAYERS = '''\
import torch.nn as nn


class Paired(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        self.convs = nn.ModuleList()
        for _ in range(depth):
            self.convs.append(nn.Linear(dim, dim))
            self.convs.append(nn.Linear(dim, dim))

    def forward(self, x):
        for first, second in zip(self.convs[::2], self.convs[1::2]):
            x = second(first(x))
        return x
'''


def test_slices_of_a_module_list_keep_their_layers_parameter_names(
        tmp_path: Path, run_cells: CellRun) -> None:
    # CellList's own slice renames the parameters of the Cells it takes ('0.weight'):
    # the two slices would then hold two parameters named alike
    out, cells = run_cells(tmp_path, {"paired.py": PAIRED_LAYERS})
    assert "zip(self.convs[::2], self.convs[1::2])" in (out / "paired.py").read_text()
    assert (cells["Paired"].pynative, cells["Paired"].graph) == ("pass", "pass")
    held = _module_list()
    layers = held([mindspore.nn.Dense(2, 2) for _ in range(4)])
    before = [p.name for p in layers.trainable_params()]
    assert len(layers[::2]) == 2 and len(layers[1::2]) == 2
    assert [p.name for p in layers.trainable_params()] == before


GROWN_PARAMETERS = '''\
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])
        self.scales = nn.ParameterList([])
        self.shifts = nn.ParameterList()
        for _ in range(depth):
            self.scales.append(nn.Parameter(torch.ones(dim) * 0.5))
        self.shifts.extend([nn.Parameter(torch.zeros(dim)) for _ in range(depth)])
        self.names = []
        self.names.append("scaled")

    def forward(self, x):
        for layer, scale, shift in zip(self.layers, self.scales, self.shifts):
            x = layer(x) * scale + shift
        return x * len(self.scales) + self.scales[0]
'''


def test_a_parameter_list_grown_by_append_gets_a_new_parameter_tuple(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"scaled.py": GROWN_PARAMETERS})
    code = [ln.strip() for ln in (out / "scaled.py").read_text().splitlines()]
    assert "self.shifts = mindspore.ParameterTuple(())" in code
    assert "self.scales = mindspore.ParameterTuple((*self.scales, " \
           "Parameter(ops.ones(dim) * 0.5)))" in code
    assert "self.shifts = mindspore.ParameterTuple((*self.shifts, " \
           "*[Parameter(ops.zeros(dim)) for _ in range(depth)]))" in code
    assert 'self.names.append("scaled")' in code  # a list that is not a ParameterList
    assert (cells["Scaled"].pynative, cells["Scaled"].graph) == ("pass", "pass")


FROZEN = '''\
import torch
import torch.nn as nn


class Frozen(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.proj.requires_grad_(False)
        self.head = nn.Linear(dim, 2).requires_grad_(False)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.detach().requires_grad_()
        return self.head(self.proj(y) * self.scale)
'''


def test_a_module_frozen_by_requires_grad_freezes_its_parameters(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"frozen.py": FROZEN})
    code = (out / "frozen.py").read_text()
    assert "        torch_requires_grad_(self.proj, False)\n" in code
    assert "        self.head = torch_requires_grad_(nn.Dense(dim, 2), False)\n" in code
    # in forward, the tensor itself: MindSpore differentiates by inputs, not by a flag
    assert "        y = ops.stop_gradient(x)\n" in code
    assert (cells["Frozen"].pynative, cells["Frozen"].graph) == ("pass", "pass")
    space: dict[str, object] = {"nn": mindspore.nn}
    exec(SOURCES["torch_requires_grad_"], space)  # the adapter as the generated file holds it
    freeze = space["torch_requires_grad_"]
    assert callable(freeze)
    dense = mindspore.nn.Dense(2, 2)
    assert freeze(dense, False) is dense
    assert [p.requires_grad for p in dense.get_parameters()] == [False, False]
    weight = mindspore.Parameter(mindspore.Tensor(np.ones(2, np.float32)))
    assert freeze(weight, False) is weight and weight.requires_grad is False
