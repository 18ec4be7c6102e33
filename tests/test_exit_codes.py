"""An internal error of msready ends a scan with exit code 3, one line on stderr and the
traceback in a log file that line names: never exit 1 (the gate failed) or 2 (usage)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

import msready.analyzer.scan
import msready.cli
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import Progress, ScanOptions


def _broken_scan(spec: str, ref: str | None = None, options: ScanOptions | None = None,
                 progress: Progress | None = None) -> ScanResult:
    """A scan with a bug in it."""
    return {}["no such key"]  # type: ignore[no-any-return]


def test_an_internal_error_exits_3_with_one_line_and_a_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "m.py").write_text("import torch\n")
    # the command imports the scan when it runs one
    monkeypatch.setattr(msready.analyzer.scan, "scan", _broken_scan)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    code = msready.cli.main(["scan", str(tmp_path / "repo"), "-o", str(tmp_path / "out"),
                             "--skeletons", "off", "-q"])

    assert code == msready.cli.EXIT_INTERNAL_ERROR == 3
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("msready: internal error (KeyError: 'no such key')")
    log = Path(re.search(r"the traceback is in (\S+);", lines[0]).group(1))  # type: ignore[union-attr]
    assert log.parent == tmp_path
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "_broken_scan" in text
