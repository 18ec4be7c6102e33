"""Shared helpers: write small repositories to temporary folders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.result import SkeletonResult
from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons.generate import build_skeletons

CellRun = tuple[Path, dict[str, SkeletonResult]]


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test caches into a folder of its own (``MSREADY_CACHE_DIR``): what one test
    cached (a Cell generated while it replaced a function, say) never answers another
    test that scans the same text, and no test reads what an earlier run left in the
    user's cache."""
    monkeypatch.setenv("MSREADY_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """Write {relative path: text or bytes} under a fresh folder and return it."""

    def make(files: dict[str, str | bytes]) -> Path:
        root = tmp_path / "repo"
        for rel, content in files.items():
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                dest.write_bytes(content)
            else:
                dest.write_text(content, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return make


@pytest.fixture(scope="session")
def run_cells() -> Callable[[Path, dict[str, str]], CellRun]:
    """Write {relative path: text} under ``root / "repo"``, scan it for the CPU target,
    generate and run its Cells; the generated folder and the results by class name."""

    def run(root: Path, files: dict[str, str]) -> CellRun:
        repo = root / "repo"
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text, encoding="utf-8")
        result = scan(str(repo), options=ScanOptions(jobs=1, cache=False, target="cpu"))
        out = root / "out" / "skeletons"
        found = build_skeletons(result, out, run=True, compare_torch=False, cache=False)
        return out, {s.torch_class.rsplit(".", 1)[1]: s for s in found}

    return run


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a missing feature here: fail the run when any test skipped."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and exitstatus == 0:
        session.exitstatus = 1
