"""The graph-mode family on a whole small repository.

``tests/fixtures/graph_mode`` is a detection network whose ``forward`` reaches hazards
in its own file, in a method, and two helper calls below it in other files; beside it sit
a training script, a dataset and a MindSpore port that use the same constructs outside any
forward, and a file of everyday forward code (`net/clean.py`) that must stay quiet. Every
line that must be reported carries ``# expect: MS5xx``; the test compares
the exact set of (path, line, rule) of the MS5xx findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from msready.analyzer.result import ScanResult
from msready.analyzer.scan import ScanOptions, scan
from msready.rules.testing import fixture_mismatch

FIXTURE = Path(__file__).parent / "fixtures" / "graph_mode"
FAMILY = "MS5"


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return scan(str(FIXTURE), options=ScanOptions(jobs=1, cache=False, target="cpu"))


def test_exact_graph_mode_findings(result: ScanResult) -> None:
    unexpected, missing = fixture_mismatch(result.findings, FIXTURE, FAMILY)
    assert unexpected == [], "unexpected findings"
    assert missing == [], "missing findings"


def test_deep_hazard_carries_the_path_from_forward(result: ScanResult) -> None:
    yields = [f for f in result.findings if f.rule == "MS507"]
    assert [f.trace for f in yields] == [
        ("Detector.forward", "decode", "match_boxes", "torch_boxes")]
    scipy = [f for f in result.findings if f.symbol == "scipy.optimize.linear_sum_assignment"]
    assert scipy and scipy[0].trace == ("Detector.forward", "decode", "match_boxes")


def test_every_graph_finding_names_the_static_graph_and_a_rewrite(result: ScanResult) -> None:
    findings = [f for f in result.findings if f.rule.startswith(FAMILY)]
    for f in findings:
        assert "GRAPH_MODE" in f.message, f
        assert f.suggestion and f.suggestion != f.message, f
        assert f.category.value == "graph-syntax"
        assert f.trace and f.trace[0] == "Detector.forward", f


def test_other_framework_and_training_code_stay_quiet(result: ScanResult) -> None:
    quiet = {"train.py", "data.py", "ms_port.py"}
    assert not [f for f in result.findings
                if f.rule.startswith(FAMILY) and f.location.path in quiet]


def test_graph_mode_modules_are_loaded() -> None:
    from msready.rules.registry import all_rules

    loaded = {r.__module__ for r in all_rules()}
    missing = {"msready.rules.graph_mode", "msready.rules.graph_mode_flow"} - loaded
    assert not missing, f"{sorted(missing)} define no loaded rules"
