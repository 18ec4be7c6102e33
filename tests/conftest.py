"""Shared helpers: write small repositories to temporary folders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a missing feature here: fail the run when any test skipped."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and exitstatus == 0:
        session.exitstatus = 1
