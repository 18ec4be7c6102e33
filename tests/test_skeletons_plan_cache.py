"""After a change, the plans of the Cells (constructor arguments, inputs) are reused when
every read planning made of the repository gets the same answer; a change to something a
plan read (a new place that builds a class, a changed file planning re-parsed) plans
again. Either way the plans are those a planning without the cache makes."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons.generate import build_skeletons
from msready.skeletons.plan_cache import PlanCache
from msready.skeletons.recorded import Recorder, Unrecordable, canonical
from msready.skeletons.shapes import Plan, Planner
from msready.skeletons.values import UNKNOWN

MakeRepo = Callable[[dict[str, str | bytes]], Path]

BLOCK = """\
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""

NET = """\
from torch import nn
from .blocks import Block

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(self.block(x))
"""


def _plans(root: Path, cache: Path, keep: bool = True) -> dict[str, str]:
    """The plans the generation used, by class, as text (the Cells are written, not run)."""
    result = scan(str(root), options=ScanOptions(jobs=1, cache=True, cache_dir=cache))
    used: list[dict[str, Plan]] = []
    real = PlanCache.plans

    def kept(self: PlanCache, plan: Callable[[Recorder | None], dict[str, Plan]]
             ) -> dict[str, Plan]:
        used.append(real(self, plan))
        return used[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PlanCache, "plans", kept)
        build_skeletons(result, root.parent / "out", run=False, compare_torch=False,
                        cache=keep, cache_dir=cache)
    return {cls: canonical(plan) for cls, plan in used[0].items()}


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The classes planned (not reused) from here on."""
    classes: list[str] = []
    real = Planner.plan

    def counting(self: Planner, cls: str) -> Plan:
        classes.append(cls)
        return real(self, cls)

    monkeypatch.setattr(Planner, "plan", counting)
    return classes


def test_a_file_added_that_nothing_reads_plans_nothing_again(
        make_repo: MakeRepo, tmp_path: Path, planned: list[str]) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET})
    cache = tmp_path / "cache"
    first = _plans(root, cache)
    assert planned == ["pkg.blocks.Block", "pkg.net.Net"]
    (root / "pkg" / "added.py").write_text("def added():\n    return 1\n", encoding="utf-8")
    planned.clear()
    assert _plans(root, cache) == first
    assert planned == []
    assert _plans(root, tmp_path / "other", keep=False) == first


def test_a_new_place_that_builds_a_class_plans_again(
        make_repo: MakeRepo, tmp_path: Path, planned: list[str]) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET})
    cache = tmp_path / "cache"
    first = _plans(root, cache)
    assert "kwargs={'width':8}" in first["pkg.blocks.Block"]  # Net builds Block(8)
    (root / "pkg" / "net.py").write_text(NET.replace("Block(8)", "Block(16)").replace(
        "nn.Linear(8, 2)", "nn.Linear(16, 2)"), encoding="utf-8")
    planned.clear()
    second = _plans(root, cache)
    assert planned == ["pkg.blocks.Block", "pkg.net.Net"]
    assert "kwargs={'width':16}" in second["pkg.blocks.Block"]
    assert second == _plans(root, tmp_path / "other", keep=False)


def test_a_read_keeps_the_digest_of_its_answer_and_asks_it_again(
        make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET})
    model = scan(str(root), options=ScanOptions(jobs=1, cache=False)).model
    recorder = Recorder()
    seen = recorder.proxy(model)
    assert "pkg.blocks.Block" in seen.module_classes
    assert seen.classes.get("pkg.nowhere.Block") is None
    assert list(seen.external_bases("pkg.net.Net")) == ["torch.nn.Module"]
    assert [key for key in recorder.reads] == [
        ("in", ("module_classes",), ("pkg.blocks.Block",)),
        ("get", ("classes",), ("pkg.nowhere.Block",)),
        ("call", ("external_bases",), ("pkg.net.Net",))]

    def nothing_else(kind: str, path: tuple[str, ...], args: tuple[Any, ...]) -> object:
        raise KeyError(kind)

    assert recorder.same_answers(model, nothing_else, recorder.reads)
    changed = {**recorder.reads, ("in", ("module_classes",), ("pkg.blocks.Block",)):
               "not the digest of True"}
    assert not recorder.same_answers(model, nothing_else, changed)


def test_a_value_without_a_stable_text_is_not_recorded() -> None:
    assert canonical({"b": {2, 1}, "a": (1, None)}) == "{'a':[1,None],'b':{1,2}}"
    with pytest.raises(Unrecordable):
        canonical(object())
    recorder = Recorder()
    recorder.note(("get", ("table",), ("key",)), object())
    assert recorder.broken == "table gave a object"


def test_planning_reads_the_repository_only_through_its_record(
        make_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables built from every file are read as a whole, once each, with their
    answers kept: a file added changes none of them."""
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET,
                      "pkg/train.py": "import argparse\np = argparse.ArgumentParser()\n"
                                      "p.add_argument('--width', type=int, default=8)\n"})
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False))
    planner = Planner(result)
    recorder = Recorder()
    planner.recording(recorder)
    for cls in sorted(result.model.module_classes):
        planner.plan(cls)
    planner.argparse(result.model.modules["pkg.net"])
    tables = [key[1][0] for key in recorder.reads if key[0] == "whole_table"]
    assert sorted(tables) == sorted(set(tables))
    assert "argparse_files" in tables and "calls_by_callee" in tables
    assert not any(key[0] == "whole" and key[1] in (("modules",), ("files",))
                   for key in recorder.reads)


def test_a_kept_plan_still_holds_the_one_unknown_value() -> None:
    """Plans hold UNKNOWN where the analysis could not tell a value (timm's
    ``UniversalInvertedResidual``); the code tests it by identity."""
    plan = Plan("pkg.Net", "Net", "pkg", "pkg/net.py", 3, kwargs={"block": [UNKNOWN, 2]})
    kept = pickle.loads(pickle.dumps(plan))
    assert kept.kwargs["block"][0] is UNKNOWN
