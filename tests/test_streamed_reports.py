"""Reports are written a batch of rows at a time, never held whole: the text is the same
whatever the batch size, and the same as the whole data encoded at once."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TextIO

import pytest

import msready.cli as cli
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import scan_files
from msready.reports import html, json_report, sarif

SOURCE = '''\
import torch

def f(x):
    a = torch.nonzero(x)
    b = torch.nonzero(a)
    c = torch.nonzero(b)
    d = torch.nonzero(c)
    e = torch.unique(d)  # msready: ignore
    return torch.nonzero(e)
'''


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return scan_files({"pkg/ops.py": SOURCE}, target="cpu")


@pytest.fixture(scope="module")
def empty() -> ScanResult:
    return scan_files({"pkg/none.py": "x = 1\n"}, target="cpu")


def test_the_example_has_enough_findings_to_fill_batches(result: ScanResult) -> None:
    assert len(result.findings) >= 5 and result.suppressed


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_sarif_is_the_whole_log_dumped_at_once(result: ScanResult, batch: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sarif, "_BATCH", batch)
    whole = json.dumps(sarif.to_sarif(result), indent=2, ensure_ascii=False) + "\n"
    assert sarif.render(result) == whole


def test_sarif_without_results(empty: ScanResult) -> None:
    assert not empty.findings
    whole = json.dumps(sarif.to_sarif(empty), indent=2, ensure_ascii=False) + "\n"
    assert sarif.render(empty) == whole
    assert '"results": []' in whole


def test_sarif_with_a_warning_that_reads_like_its_marker(result: ScanResult,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result, "warnings", [*result.warnings, sarif._RESULTS])
    whole = json.dumps(sarif.to_sarif(result), indent=2, ensure_ascii=False) + "\n"
    assert sarif.render(result) == whole


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_json_text_does_not_depend_on_the_batch(result: ScanResult, batch: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    whole = json_report.render(result)
    monkeypatch.setattr(json_report, "_BATCH", batch)
    assert json_report.render(result) == whole
    assert json.loads(whole) == json_report.to_dict(result)
    lines = whole.splitlines()
    assert sum(1 for line in lines if line.startswith('  {"rule": ')) == (
        len(result.findings) + len(result.suppressed))  # one finding a line
    assert '"findings": [' in lines and "]," in lines


def test_json_empty_lists_stay_on_their_key_line(empty: ScanResult) -> None:
    text = json_report.render(empty)
    assert '"findings": [],' in text.splitlines()
    assert text.startswith("{\n") and text.endswith("\n}\n")


def test_html_written_in_pieces_is_the_rendered_page(result: ScanResult) -> None:
    out = io.StringIO()
    html.write(result, out)
    assert out.getvalue() == html.render(result)


def test_a_failed_report_leaves_the_old_file_and_no_partial_one(
        result: ScanResult, tmp_path: Path) -> None:
    path = tmp_path / "msready.json"
    path.write_text("old\n", encoding="utf-8")

    def broken(scanned: ScanResult, out: TextIO) -> None:
        out.write("half a rep")
        raise RuntimeError("the reporter failed")

    with pytest.raises(RuntimeError):
        cli._write_report(path, broken, result)
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["msready.json"]
    cli._write_report(path, json_report.write, result)
    assert path.read_text(encoding="utf-8") == json_report.render(result)
