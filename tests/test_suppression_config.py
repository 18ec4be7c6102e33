"""Inline ``# msready: ignore`` comments and ``[tool.msready]`` in the scanned repository.

A suppressed finding leaves ``ScanResult.findings`` and is counted in
``ScanResult.suppressed``; a finding of another rule on the same line stays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from msready.analyzer.findings import Finding
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import scan_files

NET = """import numpy as np
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        print(np.mean(x.cpu())){comment}
        self.calls = 0
        return x
"""
LINE = 7  # print (MS505), numpy (MS501), and the idiom .cpu() (MS601)
NEXT = LINE + 1  # self.calls = 0 (MS511)


def _scan(files: dict[str, str]) -> ScanResult:
    return scan_files(files, target="cpu")


def _rules_at(findings: Sequence[Finding], line: int) -> set[str]:
    return {f.rule for f in findings if f.location.line == line}


def test_without_comment_every_rule_reports_the_line() -> None:
    result = _scan({"net.py": NET.format(comment="")})
    assert {"MS501", "MS505", "MS601"} <= _rules_at(result.findings, LINE)
    assert "MS511" in _rules_at(result.findings, NEXT)
    assert not result.suppressed


@pytest.mark.parametrize("comment", ["  # msready: ignore[MS505]",
                                     "  # msready: ignore[print-in-graph]",
                                     "  # msready: ignore[MS999, MS505]",
                                     "  #msready:ignore[MS505]"])
def test_ignore_one_rule_keeps_the_other(comment: str) -> None:
    result = _scan({"net.py": NET.format(comment=comment)})
    assert "MS505" not in _rules_at(result.findings, LINE)
    assert {"MS501", "MS601"} <= _rules_at(result.findings, LINE)
    assert [f.rule for f in result.suppressed] == ["MS505"]


def test_ignore_category_suppresses_every_rule_of_that_category() -> None:
    result = _scan({"net.py": NET.format(comment="  # msready: ignore[graph-syntax]")})
    at_line = _rules_at(result.findings, LINE)
    assert not {r for r in at_line if r.startswith("MS5")}
    assert {"MS501", "MS505"} <= {f.rule for f in result.suppressed}
    assert "MS601" in at_line  # an idiom on the same line is another category
    assert "MS511" in _rules_at(result.findings, NEXT)  # the next line is untouched


def test_bare_ignore_suppresses_everything_on_the_line() -> None:
    result = _scan({"net.py": NET.format(comment="  # msready: ignore")})
    assert _rules_at(result.findings, LINE) == set()
    assert {"MS501", "MS505", "MS601"} <= {f.rule for f in result.suppressed}
    assert "MS511" in _rules_at(result.findings, NEXT)


def test_ignore_on_another_line_does_nothing() -> None:
    source = NET.format(comment="").replace("= 0", "= 0  # msready: ignore[MS505]")
    result = _scan({"net.py": source})
    assert "MS505" in _rules_at(result.findings, LINE)
    assert not result.suppressed


def test_ignore_on_the_last_line_of_a_multi_line_call() -> None:
    call = "print(\n            x.shape,\n        )  # msready: ignore[MS505]"
    source = NET.format(comment="").replace("print(np.mean(x.cpu()))", call)
    result = _scan({"net.py": source})
    assert "MS505" not in {f.rule for f in result.findings}
    assert [(f.rule, f.location.line, f.location.end_line) for f in result.suppressed] == [
        ("MS505", LINE, LINE + 2)]


def test_ignore_in_a_notebook_cell() -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# model"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": NET.format(comment="  # msready: ignore[MS505]").splitlines(True)},
    ]
    notebook = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    result = _scan({"model.ipynb": notebook})
    printed = [f for f in result.suppressed if f.rule == "MS505"]
    assert printed and printed[0].location.cell == 1 and printed[0].location.line == LINE
    assert "MS501" in {f.rule for f in result.findings if f.location.line == LINE}


PYPROJECT = """[project]
name = "demo"

[tool.msready]
disable = ["MS505", "device-handling", "idiom-typo"]
exclude = ["scripts/*"]
colour = "blue"
"""
SCRIPT = """import numpy as np
import torch


def main(model, x):
    model.eval()
    print(model(x).item())
"""


@pytest.fixture(scope="module")
def configured() -> ScanResult:
    return _scan({"pyproject.toml": PYPROJECT, "net.py": NET.format(comment=""),
                  "scripts/run.py": SCRIPT, "tools/run.py": SCRIPT})


def test_config_disables_by_rule_id_and_rule_name(configured: ScanResult) -> None:
    rules = {f.rule for f in configured.findings}
    assert "MS505" not in rules and "MS601" not in rules
    assert {"MS501", "MS511"} <= rules
    assert {"MS505", "MS601"} <= {f.rule for f in configured.suppressed}


def test_config_excludes_paths(configured: ScanResult) -> None:
    paths = {f.location.path for f in configured.findings + configured.suppressed}
    assert "scripts/run.py" not in paths
    assert "tools/run.py" in paths  # only the pattern's folder is left out
    assert any(rel == "scripts/run.py" for rel, _ in configured.source.skipped)


def test_unknown_key_is_a_warning_not_an_error(configured: ScanResult) -> None:
    assert any("tool.msready.colour" in w for w in configured.warnings)
    assert configured.findings  # the scan went on


def test_disable_by_category() -> None:
    pyproject = "[tool.msready]\ndisable = [\"graph-syntax\"]\n"
    result = _scan({"pyproject.toml": pyproject, "net.py": NET.format(comment="")})
    assert not [f for f in result.findings if f.category.value == "graph-syntax"]
    assert [f for f in result.findings if f.category.value == "idiom"]
    assert {"MS501", "MS505", "MS511"} <= {f.rule for f in result.suppressed}


def test_bad_config_values_warn() -> None:
    pyproject = "[tool.msready]\ndisable = \"MS505\"\ntarget = \"tpu\"\n"
    result = _scan({"pyproject.toml": pyproject, "net.py": NET.format(comment="")})
    assert any("disable" in w for w in result.warnings)
    assert any("target" in w for w in result.warnings)
    assert "MS505" in {f.rule for f in result.findings}
