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

NET = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        k = x.cuda().sum().item(){comment}
        print(k)
        return x * k
"""
ITEM_LINE = 6


def _scan(files: dict[str, str]) -> ScanResult:
    return scan_files(files, target="cpu")


def _rules_at(findings: Sequence[Finding], line: int) -> set[str]:
    return {f.rule for f in findings if f.location.line == line}


def test_without_comment_both_rules_report_the_line() -> None:
    result = _scan({"net.py": NET.format(comment="")})
    assert {"MS504", "MS516"} <= _rules_at(result.findings, ITEM_LINE)
    assert not result.suppressed


@pytest.mark.parametrize("comment", ["  # msready: ignore[MS504]",
                                     "  # msready: ignore[tensor-to-python]",
                                     "  # msready: ignore[MS999, MS504]",
                                     "  #msready:ignore[MS504]"])
def test_ignore_one_rule_keeps_the_other(comment: str) -> None:
    result = _scan({"net.py": NET.format(comment=comment)})
    assert "MS504" not in _rules_at(result.findings, ITEM_LINE)
    assert "MS516" in _rules_at(result.findings, ITEM_LINE)
    assert [f.rule for f in result.suppressed] == ["MS504"]


def test_ignore_category_suppresses_every_rule_of_that_category() -> None:
    result = _scan({"net.py": NET.format(comment="  # msready: ignore[graph-syntax]")})
    at_line = _rules_at(result.findings, ITEM_LINE)
    assert not {r for r in at_line if r.startswith("MS5")}
    assert {"MS504", "MS516"} <= {f.rule for f in result.suppressed}
    assert "MS601" in at_line  # an idiom on the same line is another category
    assert "MS505" in _rules_at(result.findings, ITEM_LINE + 1)  # the next line is untouched


def test_bare_ignore_suppresses_everything_on_the_line() -> None:
    result = _scan({"net.py": NET.format(comment="  # msready: ignore")})
    assert _rules_at(result.findings, ITEM_LINE) == set()
    assert {"MS504", "MS516", "MS601"} <= {f.rule for f in result.suppressed}
    assert "MS505" in _rules_at(result.findings, ITEM_LINE + 1)


def test_ignore_on_another_line_does_nothing() -> None:
    source = NET.format(comment="").replace("print(k)", "print(k)  # msready: ignore[MS504]")
    result = _scan({"net.py": source})
    assert "MS504" in _rules_at(result.findings, ITEM_LINE)
    assert not result.suppressed


def test_ignore_in_a_notebook_cell() -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# model"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": NET.format(comment="  # msready: ignore[MS504]").splitlines(True)},
    ]
    notebook = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    result = _scan({"model.ipynb": notebook})
    item = [f for f in result.suppressed if f.rule == "MS504"]
    assert item and item[0].location.cell == 2 and item[0].location.line == ITEM_LINE
    assert "MS516" in {f.rule for f in result.findings if f.location.line == ITEM_LINE}


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
    assert {"MS504", "MS516"} <= rules
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
    assert {"MS504", "MS505", "MS516"} <= {f.rule for f in result.suppressed}


def test_bad_config_values_warn() -> None:
    pyproject = "[tool.msready]\ndisable = \"MS504\"\ntarget = \"tpu\"\n"
    result = _scan({"pyproject.toml": pyproject, "net.py": NET.format(comment="")})
    assert any("disable" in w for w in result.warnings)
    assert any("target" in w for w in result.warnings)
    assert "MS504" in {f.rule for f in result.findings}
