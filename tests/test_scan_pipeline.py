"""How the scan uses its processes: the collector's settings and the work the main
process does while the worker processes start."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from msready.analyzer.scan import ScanOptions, analyze_files, read_files
from msready.analyzer.source import SourceFile
from msready.analyzer.workers import GC_THRESHOLD, few_collections

CONV = "import torch\n\nconv = torch.nn.Conv2d(3, 8, 3)\n"


def _files(root: Path, count: int) -> list[SourceFile]:
    files = []
    for i in range(count):
        path = root / f"m{i:02d}.py"
        path.write_text(CONV, encoding="utf-8")
        files.append(SourceFile(path, path.name))
    return files


def test_nested_few_collections_leave_the_outer_settings() -> None:
    before = gc.get_threshold()
    with few_collections():
        with few_collections():
            assert gc.get_threshold() == GC_THRESHOLD
        assert gc.get_threshold() == GC_THRESHOLD  # the inner block restored nothing
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before


def test_meanwhile_runs_once_while_a_pool_starts(tmp_path: Path) -> None:
    files = _files(tmp_path, 20)
    calls: list[int] = []
    results, _ = analyze_files(files, read_files(files), ScanOptions(jobs=2, cache=False),
                               meanwhile=lambda: calls.append(1))
    assert calls == [1]
    assert [r.path for r in results] == [f.rel for f in files]
    assert all(r.status == "parsed" for r in results)


def test_meanwhile_does_not_run_without_a_pool(tmp_path: Path) -> None:
    files = _files(tmp_path, 3)
    calls: list[int] = []
    analyze_files(files, read_files(files), ScanOptions(jobs=1, cache=False),
                  meanwhile=lambda: calls.append(1))
    assert calls == []


def test_only_the_program_leaves_its_objects_to_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    import msready.cli

    frozen: list[int] = []
    monkeypatch.setattr(msready.cli.gc, "freeze", lambda: frozen.append(1))
    args = ["msready", "table", "lookup", "torch.nn.Conv2d"]
    assert msready.cli.main(args[1:]) == 0  # called by code: nothing is frozen
    assert frozen == []
    monkeypatch.setattr(msready.cli.sys, "argv", args)
    assert msready.cli.main() == 0  # run as the program
    assert frozen == [1]
