"""The packaged API table against the installed MindSpore (and torch, for coverage)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.apitable import BACKENDS, STATUSES, WORKAROUNDS, import_object, load_table
from msready.analyzer.tablecli import explain, render_table

TABLE = load_table()
_PLATFORMS = re.compile(r"Supported Platforms:\s*((?:``\w+``[\s,]*)+)")


def resolve(dotted: str) -> Any:
    """Import the longest module prefix, then walk the attributes; None when absent."""
    return import_object(dotted)


def documented_platforms(api: str) -> list[str]:
    """What the installed docstring says: the union of its "Supported Platforms" sections
    (MindSpore 2.x Tensor methods document one section per overload); a Tensor method
    without any, or an overload section without its own, takes the same-name ops
    function's."""
    def read(obj: Any) -> list[str] | None:
        found: list[str] = []
        matches = list(_PLATFORMS.finditer(inspect.getdoc(obj) or ""))
        for match in matches:
            found += [p for p in re.findall(r"``(\w+)``", match.group(1)) if p not in found]
        return found if matches else None

    found = read(resolve(api))
    if api.startswith("mindspore.Tensor."):
        fn = resolve("mindspore.ops." + api.rsplit(".", 1)[1])
        if fn is not None and not inspect.isclass(fn):
            found = (found or []) + [p for p in read(fn) or [] if p not in (found or [])]
    return found or []


def test_table_is_loaded_and_large() -> None:
    assert len(TABLE) > 2000
    assert TABLE.mindspore_version == importlib.import_module("mindspore").__version__


def test_every_target_exists_and_platforms_match_the_docstrings() -> None:
    apis = {t.api: t.platforms for e in TABLE.entries() for t in e.targets.values() if t.api}
    absent = [api for api in apis if resolve(api) is None]
    assert not absent, absent[:20]
    wrong = {api: (plats, documented_platforms(api)) for api, plats in apis.items()
             if not set(plats) - measured_cpu(api, plats) <= set(documented_platforms(api))
             or (documented_platforms(api) and not plats)}
    assert not wrong, list(wrong.items())[:10]


def measured_cpu(api: str, plats: tuple[str, ...]) -> set[str]:
    """{"CPU"} when a target listed for CPU without documenting it really runs there and
    matches torch (a Tensor method measured again with the generator's probe; a function
    from the probe's stored CPU measurements), else an empty set."""
    if "CPU" not in plats or "CPU" in documented_platforms(api):
        return set()
    probe = generator().api_probe
    if any(probe.cpu_fallback(n) == api for n in probe.load_probe().get("cpu_fallbacks", {})):
        return {"CPU"}  # stored: run on CPU by tools/api_probe.py, equal to torch
    if not api.startswith("mindspore.Tensor."):
        return set()
    return {"CPU"} if generator().runs_on(api, "cpu") else set()


@lru_cache(maxsize=1)
def generator() -> Any:
    """tools/build_api_table.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location(
        "build_api_table", Path(__file__).resolve().parent.parent / "tools/build_api_table.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_backend_targets_run_on_their_backend() -> None:
    platform = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}
    bad = [(e.torch, b) for e in TABLE.entries() for b in BACKENDS
           if e.target(b).api and e.target(b).platforms
           and not e.target(b).api.startswith("mindspore.dataset.")  # host-side pipeline
           and platform[b] not in e.target(b).platforms]
    assert not bad, bad[:20]


def test_statuses_are_valid_and_consistent() -> None:
    for entry in TABLE.entries():
        assert entry.status in STATUSES, entry.torch
        live = [b for b in BACKENDS if entry.target(b).api]
        assert (entry.status == "missing") == (not live), entry.torch
        if entry.status == "consistent":
            assert not entry.params and len(live) == len(BACKENDS), entry.torch
        for backend in BACKENDS:
            assert entry.status_for(backend) in STATUSES
        for diff in entry.params:
            assert diff.kind in ("renamed", "missing", "default", "semantics"), entry.torch
            assert set(diff.backends) <= set(BACKENDS)


def test_missing_entries_say_what_to_do() -> None:
    for entry in TABLE.entries():
        if any(entry.status_for(b) == "missing" for b in BACKENDS):
            assert entry.workaround in WORKAROUNDS, entry.torch
            assert entry.suggestion, entry.torch


def test_known_facts() -> None:
    linear = TABLE.lookup("torch.nn.Linear")
    assert linear is not None and linear.target("cpu").api == "mindspore.nn.Dense"
    assert linear.target("ascend").api == "mindspore.mint.nn.Linear"
    conv = TABLE.lookup("torch.nn.modules.conv.Conv2d")
    assert conv is not None and conv.torch == "torch.nn.Conv2d"
    assert {(d.kind, d.torch, d.mindspore) for d in conv.params_for("cpu")} >= {
        ("renamed", "bias", "has_bias"), ("semantics", "padding", "pad_mode")}
    bn = TABLE.lookup("torch.nn.BatchNorm2d")
    assert bn is not None
    assert any(d.kind == "semantics" and d.torch == "momentum" for d in bn.params_for("gpu"))
    gelu = TABLE.lookup("torch.nn.GELU")
    assert gelu is not None and gelu.target("ascend").platforms == ("Ascend",)
    assert gelu.target("cpu").api == "mindspore.nn.GELU"
    cuda = TABLE.lookup("torch.cuda.is_available")
    assert cuda is not None and cuda.status == "missing" and "set_device" in cuda.suggestion
    f32 = TABLE.lookup("torch.float32")
    assert f32 is not None and f32.target("cpu").api == "mindspore.float32"
    assert TABLE.lookup("torchvision.transforms.Resize") is not None
    assert TABLE.lookup("torch.Tensor.view") is not None


def test_tensor_methods_file_matches_the_table() -> None:
    text = importlib.resources.files("msready.analyzer").joinpath(
        "data/tensor_methods.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("#")
    for method in lines[1:]:
        assert TABLE.lookup(f"torch.Tensor.{method}") is not None, method


def test_render_table_per_backend() -> None:
    import json

    rows = json.loads(render_table("json", "cpu"))
    assert len(rows) == len(TABLE)
    assert set(rows[0]) == {"torch", "mindspore", "status", "platforms", "notes"}
    fft = next(r for r in json.loads(render_table("json", "gpu")) if r["torch"] == "torch.fft.fft")
    assert fft["mindspore"] is None and fft["status"] == "missing"
    tsv = render_table("tsv", "ascend").splitlines()
    assert tsv[0] == "torch\tmindspore\tstatus\tplatforms\tnotes"
    assert len(tsv) == len(TABLE) + 1 and all(line.count("\t") == 4 for line in tsv)
    with pytest.raises(ValueError):
        render_table("xml", "cpu")


def test_explain() -> None:
    text = explain("torch.nn.Conv2d", None)
    assert text is not None and "has_bias" in text and "mindspore.mint.nn.Conv2d" in text
    assert explain("torch.nn.NoSuchLayer", None) is None


# ----- coverage against the installed torch ------------------------------------------

def _public_callables(module: Any) -> list[str]:
    out = []
    for attr in dir(module):
        if attr.startswith("_"):
            continue
        obj = getattr(module, attr)
        if inspect.ismodule(obj) or not callable(obj):
            continue
        owner = getattr(obj, "__module__", None) or "torch"
        if owner.startswith("torch") or type(obj).__name__ == "builtin_function_or_method":
            out.append(attr)
    return out


def test_every_functional_and_module_has_an_entry() -> None:
    torch = pytest.importorskip("torch")
    functional = [f"torch.nn.functional.{a}" for a in _public_callables(torch.nn.functional)]
    modules = [f"torch.nn.{a}" for a in dir(torch.nn)
               if inspect.isclass(getattr(torch.nn, a))
               and issubclass(getattr(torch.nn, a), torch.nn.Module)]
    assert len(functional) > 100 and len(modules) > 100
    absent = [n for n in functional + modules if TABLE.lookup(n) is None]
    assert not absent, absent


def test_every_tensor_method_and_dtype_has_an_entry() -> None:
    torch = pytest.importorskip("torch")
    methods = [m for m in dir(torch.Tensor)
               if not m.startswith("_") and callable(getattr(torch.Tensor, m, None))]
    dtypes = [a for a in dir(torch) if isinstance(getattr(torch, a), torch.dtype)]
    absent = [f"torch.Tensor.{m}" for m in methods if TABLE.lookup(f"torch.Tensor.{m}") is None]
    absent += [f"torch.{d}" for d in dtypes if TABLE.lookup(f"torch.{d}") is None]
    assert not absent, absent


def test_torch_parameter_orders_do_not_need_torch_installed() -> None:
    # a Cell names positional arguments the same way whether or not torch is installed
    code = ("import sys\nsys.modules['torch'] = None  # importing torch now fails\n"
            "from msready.skeletons.apis import torch_order\n"
            "print(torch_order('torch.nn.Conv2d')[:3], torch_order('numpy.prod'),"
            " 'torch' in [m for m in sys.modules if sys.modules[m] is not None])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split("\n")[0] == (
        "('in_channels', 'out_channels', 'kernel_size') None False")
