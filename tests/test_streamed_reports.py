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


def _one_result_a_line(text: str, result: ScanResult) -> None:
    """The log is the whole of it encoded at once, indented, but with each result on one
    line of its own."""
    log = sarif.to_sarif(result)
    assert json.loads(text) == log
    results = log["runs"][0]["results"]
    lines = text.splitlines()
    start = lines.index('      "results": [')
    assert [json.loads(line.strip().rstrip(",")) for line in
            lines[start + 1:start + 1 + len(results)]] == results
    assert lines[start + 1 + len(results)] == "      ],"
    whole = json.dumps({**log, "runs": [{**log["runs"][0], "results": []}]}, indent=2,
                       ensure_ascii=False)
    assert [*lines[:start], '      "results": [],', *lines[start + 2 + len(results):]] == (
        whole.splitlines())


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_sarif_is_the_whole_log_with_one_result_a_line(result: ScanResult, batch: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sarif, "_BATCH", batch)
    text = sarif.render(result)
    _one_result_a_line(text, result)
    monkeypatch.setattr(sarif, "_BATCH", 1000)
    assert sarif.render(result) == text


def test_sarif_without_results(empty: ScanResult) -> None:
    assert not empty.findings
    whole = json.dumps(sarif.to_sarif(empty), indent=2, ensure_ascii=False) + "\n"
    assert sarif.render(empty) == whole
    assert '"results": []' in whole


def test_sarif_with_a_warning_that_reads_like_its_marker(result: ScanResult,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    placeholder = sarif._RESULTS
    monkeypatch.setattr(result, "warnings", [*result.warnings, placeholder, placeholder + "!"])
    _one_result_a_line(sarif.render(result), result)



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


def test_reports_written_beside_a_forked_copy_are_the_ones_written_in_turn(
        result: ScanResult, tmp_path: Path) -> None:
    formats = list(cli.FORMATS)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    assert cli._write_reports(result, one, formats) == [
        str(one / cli.FORMATS[name][0]) for name in formats]
    cli._write_reports(result, two, formats, parallel=True)
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())
    for path in one.iterdir():
        assert (two / path.name).read_bytes() == path.read_bytes()


def test_a_page_the_forked_copy_cannot_write_is_the_scans_error(
        result: ScanResult, tmp_path: Path) -> None:
    (tmp_path / "report.html").mkdir()  # a folder where the page goes: no one can write it
    with pytest.raises(cli.UsageError, match=r"cannot write .*report\.html"):
        cli._write_reports(result, tmp_path, list(cli.FORMATS), parallel=True)
    assert (tmp_path / "msready.json").read_text(encoding="utf-8") == json_report.render(result)
