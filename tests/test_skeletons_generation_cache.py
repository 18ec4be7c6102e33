"""A re-scan of unchanged code writes back the Cells the last generation wrote, with its
results, instead of planning and translating every class again; a change generates
again, and a generation whose outcomes say nothing about the code is not kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.result import ScanResult, SkeletonResult
from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons import generation_cache
from msready.skeletons.generate import build_skeletons
from msready.skeletons.generation_cache import GeneratedSet, GenerationCache
from msready.skeletons.runner import NOT_STARTED, STOPPED_FROM_OUTSIDE

MakeRepo = Callable[[dict[str, str | bytes]], Path]

NET = """\
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""

HEAD = """\
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


def _scan(root: Path, cache: Path) -> ScanResult:
    return scan(str(root), options=ScanOptions(jobs=1, cache=True, cache_dir=cache))


def _generate(result: ScanResult, out: Path, cache: Path) -> list[SkeletonResult]:
    return build_skeletons(result, out, run=False, compare_torch=False, cache=True,
                           cache_dir=cache)


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_rescan_of_unchanged_code_writes_back_the_same_cells(make_repo: MakeRepo,
                                                                tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": NET, "pkg/net.py": HEAD})
    cache = tmp_path / "cache"
    first = _generate(_scan(root, cache), tmp_path / "first", cache)
    assert {r.torch_class for r in first} == {"pkg.blocks.Block", "pkg.net.Net"}
    warm = _scan(root, cache)
    again = _generate(warm, tmp_path / "again", cache)
    assert again == first
    # into a new folder: every file, the packages' __init__.py included
    assert _files(tmp_path / "again") == _files(tmp_path / "first")
    assert "pkg/__init__.py" in _files(tmp_path / "again")
    # nothing was planned or translated: the files' facts were never loaded
    assert warm._facts is None


def test_a_changed_file_generates_again(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": NET, "pkg/net.py": HEAD})
    cache = tmp_path / "cache"
    _generate(_scan(root, cache), tmp_path / "out", cache)
    (root / "pkg" / "blocks.py").write_text(NET.replace("width=8", "width=16"),
                                            encoding="utf-8")
    changed = _scan(root, cache)
    _generate(changed, tmp_path / "out", cache)
    assert changed._facts is not None
    assert "width=16" in (tmp_path / "out" / "pkg" / "blocks.py").read_text(encoding="utf-8")


def test_without_the_scan_cache_nothing_is_kept(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": NET})
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False))
    _generate(result, tmp_path / "out", tmp_path / "cache")
    assert GenerationCache(result, False, False, tmp_path / "cache").get() is None
    assert not (tmp_path / "cache" / "generated").exists()


def test_a_generation_whose_children_did_not_run_is_not_kept(make_repo: MakeRepo,
                                                             tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": NET})
    result = _scan(root, tmp_path / "cache")
    store = GenerationCache(result, True, False, tmp_path / "cache")

    def outcome(error: str | None) -> GeneratedSet:
        cell = SkeletonResult("pkg.blocks.Block", "pkg/blocks.py", 4, "pkg/blocks.py",
                              "fail", "fail", error)
        return GeneratedSet({"pkg/blocks.py": b"..."}, [cell], [], [])

    for error in (f"{NOT_STARTED}: importing its framework took over 60 s",
                  f"{STOPPED_FROM_OUTSIDE} (signal 15): the Cell did not run to its end",
                  "cannot start the child process: [Errno 12]"):
        store.put(outcome(error))
        assert store.get() is None
    store.put(outcome("timed out after 60 s of CPU time"))  # says something about the Cell
    kept = store.get()
    assert kept is not None and kept.skeletons[0].error == "timed out after 60 s of CPU time"


def test_a_changed_generator_generates_again(make_repo: MakeRepo, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the scan's cache key covers the analyzer and the rules; a new version of the code
    # that writes Cells must not be answered by the Cells the old one wrote
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": NET})
    cache = tmp_path / "cache"
    _generate(_scan(root, cache), tmp_path / "out", cache)
    warm = _scan(root, cache)
    assert GenerationCache(warm, False, False, cache).get() is not None
    monkeypatch.setattr(generation_cache, "generator_fingerprint", lambda: "another")
    assert GenerationCache(warm, False, False, cache).get() is None
