"""How the scan uses its processes: the collector's settings and the work the main
process does while the worker processes start."""

from __future__ import annotations

import gc
import multiprocessing
from pathlib import Path
from typing import Any

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


def test_meanwhile_runs_once_while_the_workers_work(tmp_path: Path) -> None:
    # Not before the workers exist: they are made when the first result is asked for,
    # and work run before that would delay them all.
    files = _files(tmp_path, 20)
    calls: list[int] = []
    results, _ = analyze_files(
        files, read_files(files), ScanOptions(jobs=2, cache=False),
        meanwhile=lambda: calls.append(len(multiprocessing.active_children())))
    assert calls == [2]
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


def test_the_pool_hands_out_the_largest_files_first_and_lets_go_of_them() -> None:
    from collections import deque

    from msready.analyzer.scan import _largest_first

    todo = deque([("a.py", b"x"), ("b.py", b"xxx"), ("c.py", b"xx")])
    ordered = _largest_first(todo)
    assert [rel for rel, _ in ordered] == ["b.py", "c.py", "a.py"]
    assert not todo  # the caller's queue no longer holds the bytes


def test_a_workers_pickled_result_is_cached_as_it_came(tmp_path: Path) -> None:
    from msready.analyzer.scan import Cache

    root = tmp_path / "src"
    root.mkdir()
    files = _files(root, 20)
    cache = Cache(tmp_path / "cache")
    pooled, _ = analyze_files(files, read_files(files), ScanOptions(jobs=2), cache=cache)
    contents = read_files(files)
    for f, result in zip(files, pooled, strict=True):
        data = contents[f.rel]
        assert isinstance(data, bytes)
        assert cache.get(Cache.key(f.rel, data)) == result
    alone, _ = analyze_files(files, read_files(files), ScanOptions(jobs=1, cache=False))
    assert pooled == alone


def test_the_cache_key_covers_the_composition_registry_ms101_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rules/api_mapping reads skeletons/compositions: a composition added there changes
    # MS101's advice, so it changes the key of every cached result too
    from msready.analyzer import scan as scan_module

    code = tmp_path / "code"
    code.mkdir()
    (code / "rule.py").write_text("A = 1\n")
    registry = tmp_path / "compositions.py"
    registry.write_text("COMPOSED = {}\n")
    before = scan_module.files_fingerprint([code], (".py",), [registry])
    registry.write_text("COMPOSED = {'torch.unflatten': 'torch_unflatten'}\n")
    assert scan_module.files_fingerprint([code], (".py",), [registry]) != before

    read: list[str] = []
    real = scan_module.files_fingerprint

    def spy(folders: Any, suffixes: tuple[str, ...], files: Any = ()) -> str:
        read.extend(f.name for f in files)
        return real(folders, suffixes, files)

    monkeypatch.setattr(scan_module, "files_fingerprint", spy)
    scan_module.code_fingerprint.cache_clear()
    try:
        scan_module.code_fingerprint()
    finally:
        scan_module.code_fingerprint.cache_clear()
    assert read == ["compositions.py"]


def test_findings_placed_by_a_forked_copy_are_the_ones_placed_in_turn(tmp_path: Path) -> None:
    from msready.analyzer.scan import scan

    (tmp_path / "ops.py").write_text(
        "import torch\n\n"
        "def f(x):\n"
        "    a = torch.nonzero(x)\n"
        "    b = torch.unique(a)  # msready: ignore\n"
        "    return a[a > 0], b\n", encoding="utf-8")
    (tmp_path / "net.py").write_text(
        "import torch\nfrom ops import f\n\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return f(x)\n", encoding="utf-8")
    alone = scan(str(tmp_path), options=ScanOptions(jobs=1, cache=False))
    beside = scan(str(tmp_path), options=ScanOptions(jobs=2, cache=False))
    assert alone.findings and alone.suppressed
    assert beside.findings == alone.findings
    assert beside.suppressed == alone.suppressed
