"""The table's CPU targets for the common layers really run on CPU (PyNative, small inputs).

Class names come from the table's ``cpu`` targets, so a wrong target fails here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from msready.analyzer.apitable import load_table

ms = pytest.importorskip("mindspore")
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")


def cpu_class(torch_name: str) -> Any:
    """The MindSpore class the table names as the CPU target of a torch API."""
    entry = load_table().lookup(torch_name)
    assert entry is not None, torch_name
    api = entry.target("cpu").api
    assert api is not None, f"{torch_name} has no CPU target"
    module, attr = api.rsplit(".", 1)
    return getattr(importlib.import_module(module), attr)


def t(*shape: int, dtype: Any = np.float32) -> Any:
    return ms.Tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype))


def labels(*shape: int, high: int = 4) -> Any:
    return ms.Tensor(np.random.default_rng(1).integers(0, high, shape).astype(np.int32))


# (torch name, constructor arguments, inputs, expected output shape or None for a tuple)
CASES: list[tuple[str, Callable[[], tuple[tuple[Any, ...], dict[str, Any]]],
                  Callable[[], tuple[Any, ...]], tuple[int, ...] | None]] = [
    ("torch.nn.Linear", lambda: ((4, 3), {}), lambda: (t(2, 4),), (2, 3)),
    ("torch.nn.Conv1d", lambda: ((2, 3, 3), {"pad_mode": "pad", "padding": 1}),
     lambda: (t(1, 2, 8),), (1, 3, 8)),
    ("torch.nn.Conv2d", lambda: ((2, 3, 3), {"pad_mode": "pad", "padding": 1}),
     lambda: (t(1, 2, 8, 8),), (1, 3, 8, 8)),
    ("torch.nn.Conv3d", lambda: ((2, 3, 3), {"pad_mode": "valid"}),
     lambda: (t(1, 2, 5, 5, 5),), (1, 3, 3, 3, 3)),
    ("torch.nn.ConvTranspose2d", lambda: ((2, 3, 2), {"stride": 2, "pad_mode": "valid"}),
     lambda: (t(1, 2, 4, 4),), (1, 3, 8, 8)),
    ("torch.nn.ConvTranspose1d", lambda: ((2, 3, 2), {"stride": 2, "pad_mode": "valid"}),
     lambda: (t(1, 2, 4),), (1, 3, 8)),
    ("torch.nn.BatchNorm1d", lambda: ((4,), {"momentum": 0.9}), lambda: (t(3, 4),), (3, 4)),
    ("torch.nn.BatchNorm2d", lambda: ((4,), {}), lambda: (t(2, 4, 3, 3),), (2, 4, 3, 3)),
    ("torch.nn.LayerNorm", lambda: (((8,),), {}), lambda: (t(2, 8),), (2, 8)),
    ("torch.nn.GroupNorm", lambda: ((2, 4), {}), lambda: (t(2, 4, 3, 3),), (2, 4, 3, 3)),
    ("torch.nn.Dropout", lambda: ((), {"p": 0.5}), lambda: (t(2, 4),), (2, 4)),
    ("torch.nn.Embedding", lambda: ((10, 4), {}), lambda: (labels(2, 3, high=10),), (2, 3, 4)),
    ("torch.nn.LSTM", lambda: ((4, 6), {"batch_first": True}), lambda: (t(2, 3, 4),), None),
    ("torch.nn.GRU", lambda: ((4, 6), {"batch_first": True}), lambda: (t(2, 3, 4),), None),
    ("torch.nn.MultiheadAttention", lambda: ((8, 2), {}),
     lambda: (t(3, 2, 8), t(3, 2, 8), t(3, 2, 8)), None),
    ("torch.nn.MaxPool2d", lambda: ((2,), {"stride": 2}), lambda: (t(1, 2, 4, 4),), (1, 2, 2, 2)),
    ("torch.nn.AvgPool2d", lambda: ((2,), {"stride": 2}), lambda: (t(1, 2, 4, 4),), (1, 2, 2, 2)),
    ("torch.nn.AdaptiveAvgPool2d", lambda: (((1, 1),), {}), lambda: (t(1, 2, 4, 4),),
     (1, 2, 1, 1)),
    ("torch.nn.Upsample", lambda: ((), {"size": (6, 6), "mode": "nearest"}),
     lambda: (t(1, 2, 3, 3),), (1, 2, 6, 6)),
    ("torch.nn.Upsample", lambda: ((), {"size": (6, 6), "mode": "bilinear"}),
     lambda: (t(1, 2, 3, 3),), (1, 2, 6, 6)),
    ("torch.nn.ReLU", lambda: ((), {}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.GELU", lambda: ((), {"approximate": False}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.SiLU", lambda: ((), {}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.Sigmoid", lambda: ((), {}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.Tanh", lambda: ((), {}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.Softmax", lambda: ((), {"axis": -1}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.LeakyReLU", lambda: ((), {"alpha": 0.01}), lambda: (t(2, 3),), (2, 3)),
    ("torch.nn.CrossEntropyLoss", lambda: ((), {}), lambda: (t(4, 5), labels(4, high=5)), ()),
    ("torch.nn.MSELoss", lambda: ((), {}), lambda: (t(2, 3), t(2, 3)), ()),
    ("torch.nn.L1Loss", lambda: ((), {}), lambda: (t(2, 3), t(2, 3)), ()),
    ("torch.nn.BCEWithLogitsLoss", lambda: ((), {}),
     lambda: (t(2, 3), ms.Tensor(np.ones((2, 3), np.float32))), ()),
    ("torch.nn.NLLLoss", lambda: ((), {}), lambda: (t(4, 5), labels(4, high=5)), ()),
    ("torch.nn.SmoothL1Loss", lambda: ((), {"reduction": "mean"}), lambda: (t(2, 3), t(2, 3)),
     ()),
]


@pytest.mark.parametrize(("name", "make", "inputs", "shape"), CASES,
                         ids=[f"{c[0].rsplit('.', 1)[1]}-{i}" for i, c in enumerate(CASES)])
def test_cpu_target_runs(name: str, make: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]],
                         inputs: Callable[[], tuple[Any, ...]],
                         shape: tuple[int, ...] | None) -> None:
    cls = cpu_class(name)
    entry = load_table().lookup(name)
    assert entry is not None and "CPU" in entry.target("cpu").platforms
    args, kwargs = make()
    layer = cls(*args, **kwargs)
    out = layer(*inputs())
    if shape is None:
        assert isinstance(out, tuple) and out[0].shape[-1] > 0
    else:
        assert tuple(out.shape) == shape
        assert np.isfinite(out.asnumpy()).all()
