"""Whole-repository fixtures for the dynamic-shape rules (MS2xx).

``tests/fixtures/dynamic_shape`` is scanned as a repository; every line that must be
reported carries ``# expect: MS2xx`` (several ids separated by commas). The set of
(path, line, rule) found for the dynamic-shape and sparse families must equal the
expectations exactly: lookalikes (numpy/jax files, three-argument ``where``,
``masked_fill``, shape-derived slices and ``k``, data prep and training code not called
from a forward) must stay quiet.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from msready.analyzer.findings import Category, Finding, Scope, Severity
from msready.analyzer.scan import ScanOptions, ScanResult, scan, scan_files
from msready.rules import registry
from msready.rules.testing import expected_findings

FIXTURES = Path(__file__).parent / "fixtures" / "dynamic_shape"
# The dynamic-shape family spans these modules (too many rules for one module); the
# sparse rules share its call helpers.
FAMILY_MODULES = ("msready.rules.dynamic_shape", "msready.rules.dynamic_shape_index",
                  "msready.rules.dynamic_shape_control", "msready.rules.sparse")


def family_findings(result: ScanResult) -> Iterator[Finding]:
    """The scan's dynamic-shape and sparse findings."""
    return (f for f in result.findings if f.rule.startswith(("MS2", "MS3")))


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return scan(str(FIXTURES), options=ScanOptions(jobs=1, cache=False))


def test_fixture_findings_are_exactly_the_expected_ones(result: ScanResult) -> None:
    got = {(f.location.path, f.location.line, f.rule) for f in family_findings(result)}
    expected = expected_findings(FIXTURES)
    assert not expected - got, f"missing: {sorted(expected - got)}"
    assert not got - expected, f"unexpected: {sorted(got - expected)}"


def test_no_rule_crashed(result: ScanResult) -> None:
    assert not [f for f in result.findings if f.rule in ("MS000", "MS001")]


def test_hazard_two_helpers_below_forward_carries_its_path(result: ScanResult) -> None:
    unique = [f for f in result.findings
              if f.rule == "MS203" and f.location.path == "detection/assigner.py"]
    assert len(unique) == 1
    assert unique[0].trace == ("Head.forward", "assign", "match")
    assert unique[0].symbol == "torch.unique"


def test_forward_hazards_have_a_trace_and_input_pipelines_do_not(result: ScanResult) -> None:
    pipelines = []
    for finding in family_findings(result):
        if finding.scope is Scope.ANYWHERE:
            assert finding.rule in ("MS220", "MS221", "MS222")
            # Reported wherever they are; a forward that reaches one gives its path.
            assert not finding.trace or finding.trace[0].endswith(".forward"), finding
            pipelines.append(finding)
        elif finding.where == "unknown":
            assert finding.trace == () and finding.severity is not Severity.ERROR
            assert "Nothing in this repository calls" in finding.message
        else:
            assert finding.trace and finding.trace[0].endswith(".forward"), finding
    assert any(not f.trace for f in pipelines)  # collate functions run on the host


def test_findings_explain_and_suggest(result: ScanResult) -> None:
    for finding in family_findings(result):
        assert finding.category is Category.DYNAMIC_SHAPE
        assert finding.message.endswith(".") and len(finding.message) > 30
        assert finding.suggestion and finding.symbol
        assert finding.location.column >= 1


def test_collate_finding_names_the_collate_function(result: ScanResult) -> None:
    messages = sorted(f.message for f in result.findings if f.rule == "MS221")
    assert any("`pad_collate`" in m for m in messages)
    assert any("`PadToLongest.__call__`" in m for m in messages)


def test_every_family_module_is_registered() -> None:
    """The scan only runs rule modules listed in the registry."""
    registered = {r.__module__ for r in registry.all_rules()}
    assert set(FAMILY_MODULES) <= registered, sorted(set(FAMILY_MODULES) - registered)


FORWARD = ("import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
           "    def forward(self, x, y):\n")
CASES = [
    # a mask kept through a reassignment
    ("mask = x > 0\n        mask = mask & (y > 0)\n        return x[mask]\n", {(8, "MS204")}),
    # an index list kept through a reassignment from itself
    ("keep = torch.nonzero(y)\n        keep = keep.squeeze(1)\n        return x[keep]\n",
     {(6, "MS201"), (8, "MS209")}),
    # a reassignment that makes the name static again
    ("k = int(y.sum())\n        k = x.size(0)\n        return x[:k]\n", set()),
    # a shape of a variable-length tensor is a runtime value
    ("keep = x.nonzero()\n        return x[: keep.shape[0]]\n", {(6, "MS201"), (7, "MS205")}),
    # .long() of a mask is an index of zeros and ones, not a mask
    ("idx = (x > 0).long()\n        return x[idx]\n", set()),
    # an if on a runtime value that only raises is no shape change
    ("if y.sum() > 0:\n            raise ValueError('bad')\n        return x\n", set()),
    # the dim of a reduction given by a keyword tensor
    ("return x.sum(dim=y.argmax())\n", {(6, "MS212")}),
    # a conditional expression on a tensor
    ("return x[:1] if x.any() else x\n", {(6, "MS213")}),
    # bincount with a minlength keeps its size
    ("return y.bincount(minlength=4), y.bincount()\n", {(6, "MS210")}),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_small_cases(body: str, expected: set[tuple[int, str]]) -> None:
    result = scan_files({"example.py": FORWARD + "        " + body}, target="cpu")
    got = {(f.location.line, f.rule) for f in family_findings(result)}
    assert got == expected
