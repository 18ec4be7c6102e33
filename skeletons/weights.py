"""torch ``state_dict`` keys -> MindSpore parameter names, and checkpoint conversion.

Most names carry over (``fc.weight``, ``features.0.bias``, ``lstm.weight_ih_l0``); a few
Cells name their parameters differently: BatchNorm (``gamma``, ``beta``,
``moving_mean``, ``moving_variance``), LayerNorm / GroupNorm (``gamma``, ``beta``) and
Embedding (``embedding_table``). The map is measured on the generated Cell itself (the
owning sub-Cell of every parameter says which renames apply) and written next to the
Cell; ``msready convert-weights`` applies it, or, without a map, the same renames by key
suffix (BatchNorm recognised by its ``running_mean`` sibling).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

_BATCH_NORM = {"gamma": "weight", "beta": "bias", "moving_mean": "running_mean",
               "moving_variance": "running_var"}
_NORM = {"gamma": "weight", "beta": "bias"}
# MindSpore Cell class -> {MindSpore parameter leaf: torch state_dict leaf}
CELL_RENAMES: dict[str, dict[str, str]] = {
    "BatchNorm1d": _BATCH_NORM, "BatchNorm2d": _BATCH_NORM, "BatchNorm3d": _BATCH_NORM,
    "LayerNorm": _NORM, "GroupNorm": _NORM, "Embedding": {"embedding_table": "weight"},
    "PReLU": {"w": "weight"},
}
# torch keys with no MindSpore counterpart, per owning Cell class.
CELL_EXTRA: dict[str, tuple[str, ...]] = {
    "BatchNorm1d": ("num_batches_tracked",), "BatchNorm2d": ("num_batches_tracked",),
    "BatchNorm3d": ("num_batches_tracked",),
}


def weight_map(cell: Any) -> dict[str, Any]:
    """For an instantiated MindSpore Cell: ``params`` (torch ``state_dict`` key ->
    MindSpore parameter name, None when there is nothing to load) and ``shapes``
    (MindSpore parameter name -> shape, for weights laid out differently, such as Conv1d's
    ``(out, in, 1, k)`` against torch's ``(out, in, k)``)."""
    cells = dict(cell.cells_and_names())
    params: dict[str, str | None] = {}
    shapes: dict[str, list[int]] = {}
    for name, param in cell.parameters_and_names():
        prefix, _, leaf = name.rpartition(".")
        kind = type(cells.get(prefix)).__name__
        torch_leaf = CELL_RENAMES.get(kind, {}).get(leaf, leaf)
        params[f"{prefix}.{torch_leaf}" if prefix else torch_leaf] = param.name
        shapes[param.name] = [int(d) for d in param.shape]
    for prefix, sub in cells.items():
        for extra in CELL_EXTRA.get(type(sub).__name__, ()):
            params[f"{prefix}.{extra}" if prefix else extra] = None
    return {"params": params, "shapes": shapes}


def fit_shape(array: Any, shape: list[int] | tuple[int, ...] | None) -> Any:
    """``array`` reshaped to the MindSpore parameter's shape when only the layout differs."""
    if shape is None or tuple(array.shape) == tuple(shape):
        return array
    if int(np.prod(array.shape)) == int(np.prod(shape)):
        return array.reshape(tuple(shape))
    return array


def builtin_map(keys: list[str], shapes: Mapping[str, tuple[int, ...]]) -> dict[str, str | None]:
    """The renames applied without a map: by key suffix, BatchNorm detected through a
    ``running_mean`` sibling, 1-D ``weight``/``bias`` pairs without one read as
    LayerNorm/GroupNorm."""
    out: dict[str, str | None] = {}
    present = set(keys)
    for key in keys:
        prefix, _, leaf = key.rpartition(".")
        head = f"{prefix}." if prefix else ""
        is_bn = f"{head}running_mean" in present
        one_d_norm = (not is_bn and leaf in ("weight", "bias") and len(shapes.get(key, ())) == 1
                      and len(shapes.get(f"{head}weight", ())) == 1
                      and f"{head}bias" in present)
        if is_bn and leaf == "num_batches_tracked":
            out[key] = None
        elif is_bn:
            renames = {v: k for k, v in _BATCH_NORM.items()}
            out[key] = head + renames.get(leaf, leaf)
        elif one_d_norm:
            out[key] = head + ("gamma" if leaf == "weight" else "beta")
        else:
            out[key] = key
    return out


def _error(message: str) -> int:
    print(f"msready: error: {message}", file=sys.stderr)
    return 2


def _state_dict(loaded: object) -> dict[str, Any] | None:
    """The tensors of a loaded checkpoint: a state_dict, or one under a usual key."""
    if isinstance(loaded, Mapping):
        for key in ("state_dict", "model_state_dict", "model", "net"):
            inner = loaded.get(key)
            if isinstance(inner, Mapping) and inner:
                loaded = inner
                break
        tensors = {str(k): v for k, v in loaded.items() if hasattr(v, "detach")}  # type: ignore[union-attr]
        if tensors:
            if all(k.startswith("module.") for k in tensors):
                tensors = {k[len("module."):]: v for k, v in tensors.items()}
            return tensors
    return None


Names = dict[str, str | None]
Shapes = dict[str, list[int]]


def _read_map(path: Path, keys: list[str]) -> tuple[Names, Shapes]:
    """A weight map file: one class's ``{"params", "shapes"}``, a flat torch key -> name
    object, or a generated file's map (per class; the class whose keys match the
    checkpoint best)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("the map is not a JSON object")
    if all(isinstance(v, (str, type(None))) for v in data.values()):
        return dict(data), {}
    if isinstance(data.get("params"), dict):
        return _entry(data)
    per_class = [v for v in data.values() if isinstance(v, dict)]
    entries = [_entry(v) for v in per_class]
    if not entries:
        raise ValueError("the map holds no torch -> MindSpore names")
    return max(entries, key=lambda e: len(set(e[0]) & set(keys)))


def _entry(raw: dict[str, Any]) -> tuple[Names, Shapes]:
    params = raw.get("params", raw)
    shapes = raw.get("shapes", {})
    if not isinstance(params, dict) or not isinstance(shapes, dict):
        raise ValueError("the map's params and shapes must be objects")
    return ({str(k): (None if v is None else str(v)) for k, v in params.items()},
            {str(k): [int(d) for d in v] for k, v in shapes.items()})


def _builtin_shape(key: str, shape: tuple[int, ...]) -> list[int] | None:
    """Without a map: a 3-D ``weight`` is a Conv1d kernel, 2-D in MindSpore."""
    if key.rpartition(".")[2] == "weight" and len(shape) == 3:
        return [shape[0], shape[1], 1, shape[2]]
    return None


def convert_checkpoint(pth: Path, ckpt: Path, weight_map: Path | None) -> int:
    """Convert a torch checkpoint to a MindSpore one; returns the exit code."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return _error("converting a torch checkpoint needs torch; install it "
                      "(pip install torch) and run again")
    if not pth.is_file():
        return _error(f"checkpoint {pth} does not exist")
    try:
        loaded = torch.load(str(pth), map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable file is one error line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return _error(f"cannot read {pth} as a torch checkpoint: {first}")
    tensors = _state_dict(loaded)
    if tensors is None:
        return _error(f"{pth} holds no state_dict of tensors")
    keys = list(tensors)
    torch_shapes = {k: tuple(int(d) for d in v.shape) for k, v in tensors.items()}
    try:
        if weight_map is not None:
            names, shapes = _read_map(weight_map, keys)
        else:
            names = builtin_map(keys, torch_shapes)
            shapes = {str(names[k]): s for k in keys
                      if names.get(k) and (s := _builtin_shape(k, torch_shapes[k]))}
    except (OSError, ValueError, TypeError) as exc:
        return _error(f"cannot read weight map {weight_map}: {exc}")
    mindspore = importlib.import_module("mindspore")
    params: list[dict[str, Any]] = []
    unmapped: list[str] = []
    for key, value in tensors.items():
        if key not in names:
            unmapped.append(key)
            continue
        name = names[key]
        if name is None:
            continue
        array = fit_shape(value.detach().cpu().numpy(), shapes.get(name))
        params.append({"name": name, "data": mindspore.Tensor(array)})
    if not params:
        return _error("no checkpoint key matches the weight map")
    try:
        mindspore.save_checkpoint(params, str(ckpt))
    except (OSError, RuntimeError, ValueError) as exc:
        return _error(f"cannot write {ckpt}: {exc}")
    note = f"; not in the map: {', '.join(unmapped[:5])}" if unmapped else ""
    print(f"msready: wrote {len(params)} parameters to {ckpt}{note}")
    return 0
