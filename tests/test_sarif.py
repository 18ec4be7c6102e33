"""``msready.sarif`` is a valid SARIF 2.1.0 log (checked against the official JSON schema
shipped in ``reports/data``) that carries every finding with its rule, level and location."""

from __future__ import annotations

import copy
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import scan_files
from msready.reports import sarif
from msready.rules.docs import DOCS_URL
from msready.rules.registry import all_rules

SOURCE = '''\
import torch

def f(x):
    y = torch.nonzero(x)
    z = torch.unique(x)  # msready: ignore
    return y, z
'''


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    text = resources.files("msready.reports").joinpath("data/sarif-schema-2.1.0.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


def _finding(path: str, line: int, severity: Severity, cell: int | None = None,
             rule: str = "MS201") -> Finding:
    return Finding(rule=rule, rule_name="nonzero", category=Category.DYNAMIC_SHAPE,
                   severity=severity, confidence=Confidence.MEDIUM,
                   location=Location(path, line, 9, line, 25, cell), symbol="torch.nonzero",
                   message="Output shape depends on the data.",
                   suggestion="Use a fixed-size mask instead.", trace=("Net.forward", "f"))


@pytest.fixture(scope="module")
def result() -> ScanResult:
    scanned = scan_files({"pkg/ops.py": SOURCE}, target="cpu")
    scanned.findings = [
        _finding("pkg/ops.py", 4, Severity.ERROR),
        _finding("pkg/ops.py", 4, Severity.WARNING, rule="MS000"),
        _finding("nb.ipynb", 2, Severity.INFO, cell=3),
    ]
    scanned.suppressed = [_finding("pkg/ops.py", 5, Severity.WARNING)]
    return scanned


@pytest.fixture(scope="module")
def log(result: ScanResult) -> dict[str, Any]:
    return json.loads(sarif.render(result))  # type: ignore[no-any-return]


def test_valid_against_official_schema(log: dict[str, Any], schema: dict[str, Any]) -> None:
    jsonschema.Draft4Validator(schema).validate(log)
    assert log["version"] == "2.1.0"


def test_schema_rejects_a_broken_log(log: dict[str, Any], schema: dict[str, Any]) -> None:
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(broken)
    broken = copy.deepcopy(log)
    del broken["runs"][0]["tool"]["driver"]["name"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(broken)


def test_one_rule_per_msready_rule(log: dict[str, Any]) -> None:
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == ["MS000", "MS001", *(r.id for r in all_rules())]
    for descriptor in rules:
        assert descriptor["helpUri"] == f"{DOCS_URL}#{descriptor['id'].lower()}"
        assert descriptor["shortDescription"]["text"]
        assert descriptor["defaultConfiguration"]["level"] in ("error", "warning", "note")


def test_rule_descriptor_from_docstring() -> None:
    from msready.rules.base import FileRule

    class Example(FileRule):
        """Flags example calls.

        MindSpore cares because
        of reasons.

        Write something else."""

        id = "MS699"
        name = "example-rule"
        category = Category.IDIOM
        severity = Severity.INFO
        confidence = Confidence.HIGH

    descriptor = sarif.rule_descriptors((Example,))[-1]
    assert descriptor["shortDescription"]["text"] == "Flags example calls."
    assert descriptor["fullDescription"]["text"] == (
        "Flags example calls.\n\nMindSpore cares because of reasons.\n\nWrite something else.")
    assert descriptor["defaultConfiguration"]["level"] == "note"
    assert descriptor["properties"]["category"] == "idiom"


def test_results_carry_location_level_and_properties(log: dict[str, Any]) -> None:
    results = log["runs"][0]["results"]
    first = results[0]
    assert first["ruleId"] == "MS201" and first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/ops.py"
    assert location["region"] == {"startLine": 4, "startColumn": 9, "endLine": 4,
                                  "endColumn": 25}
    props = first["properties"]
    assert props["category"] == "dynamic-shape" and props["confidence"] == "medium"
    assert props["symbol"] == "torch.nonzero"
    assert props["suggestion"] == "Use a fixed-size mask instead."
    assert props["trace"] == ["Net.forward", "f"]
    assert "Use a fixed-size mask instead." in first["message"]["text"]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[results[1]["ruleIndex"]]["id"] == "MS000"


def test_levels_follow_severity(log: dict[str, Any]) -> None:
    levels = [r["level"] for r in log["runs"][0]["results"]]
    assert levels[:3] == ["error", "warning", "note"]


def test_notebook_cell_is_a_property(log: dict[str, Any]) -> None:
    notebook = log["runs"][0]["results"][2]
    assert notebook["properties"]["cell"] == 3
    assert "cell" not in log["runs"][0]["results"][0]["properties"]


def test_suppressed_findings_are_marked(log: dict[str, Any]) -> None:
    suppressed = log["runs"][0]["results"][3]
    assert suppressed["suppressions"] == [
        {"kind": "inSource", "justification": "# msready: ignore comment"}]
    assert all("suppressions" not in r for r in log["runs"][0]["results"][:3])


def test_fingerprints_are_stable_and_distinct(result: ScanResult, log: dict[str, Any]) -> None:
    again = json.loads(sarif.render(result))
    prints = [r["partialFingerprints"]["msready/v2"] for r in log["runs"][0]["results"]]
    assert prints == [r["partialFingerprints"]["msready/v2"] for r in again["runs"][0]["results"]]
    assert len(set(prints)) == len(prints)


def test_real_scan_without_findings_is_valid(schema: dict[str, Any]) -> None:
    clean = scan_files({"a.py": "import torch\nx = torch.zeros(3)\n"}, target="ascend")
    log = json.loads(sarif.render(clean))
    jsonschema.Draft4Validator(schema).validate(log)
    assert log["runs"][0]["properties"]["target"] == "ascend"
    assert log["runs"][0]["properties"]["score"] == clean.score.value  # type: ignore[union-attr]


def test_example_repository_scan_is_valid(schema: dict[str, Any]) -> None:
    from pathlib import Path

    from msready.analyzer.scan import ScanOptions, scan

    example = Path(__file__).resolve().parent.parent / "examples" / "tinynet"
    scanned = scan(str(example), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    log = json.loads(sarif.render(scanned))
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    assert len(results) == len(scanned.findings) + len(scanned.suppressed) > 0
    known = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} <= known
    notebook = [r for r in results
                if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
                    ".ipynb")]
    assert notebook and all("cell" in r["properties"] for r in notebook)


# ----- the rules real SARIF consumers apply beyond the schema ---------------------------------


def _absolute(uri: str) -> bool:
    parts = urlsplit(uri)
    return bool(parts.scheme) and (bool(parts.netloc) or parts.scheme == "file")


def sarif_rule_errors(log: dict[str, Any]) -> list[str]:
    """What the SARIF multitool's validation rules (SARIF1xxx, the errors) reject that the
    JSON schema lets through: relative or malformed URIs where an absolute one is required
    (SARIF1002 / SARIF1005), uriBaseIds whose artifact URIs are not relative (SARIF1004),
    inconsistent regions (SARIF1007), rule indexes out of range or naming another rule
    (SARIF1009 / SARIF1010), and a $schema that is not the final 2.1.0 one (SARIF1011)."""
    errors = []
    if not _absolute(log.get("$schema", "")) or "2.1.0" not in log["$schema"]:
        errors.append("SARIF1011: $schema is not the absolute 2.1.0 schema URI")
    for run in log["runs"]:
        rules = run["tool"]["driver"].get("rules", [])
        for rule in rules:
            uri = rule.get("helpUri")
            if uri is not None and not _absolute(uri):
                errors.append(f"SARIF1002: {rule['id']} helpUri {uri!r} is not absolute")
            if "/" in rule["id"]:
                errors.append(f"SARIF1001: rule id {rule['id']!r} contains '/'")
        for base, value in run.get("originalUriBaseIds", {}).items():
            uri = value.get("uri")
            if uri is not None and (not _absolute(uri) or not uri.endswith("/")):
                errors.append(f"SARIF1004: uriBaseId {base} uri {uri!r}")
        for result in run["results"]:
            index = result.get("ruleIndex")
            named = rules[index]["id"] if index is not None and index < len(rules) else None
            if index is not None and named != result["ruleId"]:
                errors.append(f"SARIF1010: ruleIndex {index} does not name {result['ruleId']}")
            for location in result.get("locations", []):
                physical = location["physicalLocation"]
                artifact = physical["artifactLocation"]
                uri = artifact["uri"]
                if "uriBaseId" in artifact and (_absolute(uri) or uri.startswith("/")):
                    errors.append(f"SARIF1004: {uri!r} has a uriBaseId but is absolute")
                if "uriBaseId" not in artifact and not _absolute(uri):
                    errors.append(f"SARIF1004: {uri!r} is relative without a uriBaseId")
                if " " in uri or "\\" in uri:
                    errors.append(f"SARIF1002: {uri!r} is not a valid URI")
                region = physical.get("region", {})
                start, end = region.get("startLine", 1), region.get("endLine")
                if end is not None and end < start:
                    errors.append(f"SARIF1007: endLine {end} before startLine {start}")
                if (end in (None, start) and "endColumn" in region
                        and region["endColumn"] < region.get("startColumn", 1)):
                    errors.append("SARIF1007: endColumn before startColumn")
    return errors


def test_strict_rules_reject_what_the_multitool_rejects(log: dict[str, Any]) -> None:
    broken = copy.deepcopy(log)
    broken["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] = "docs/rules.md#ms000"
    assert sarif_rule_errors(broken) == [
        "SARIF1002: MS000 helpUri 'docs/rules.md#ms000' is not absolute"]
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["ruleIndex"] = 1
    assert sarif_rule_errors(broken)[0].startswith("SARIF1010")


def test_a_real_scan_passes_schema_and_strict_rules(schema: dict[str, Any]) -> None:
    from msready.analyzer.scan import ScanOptions, scan

    example = Path(__file__).resolve().parent.parent / "examples" / "tinynet"
    scanned = scan(str(example), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    log = json.loads(sarif.render(scanned))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    assert sarif_rule_errors(log) == []
    uris = {r["helpUri"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert all(u.startswith("https://") for u in uris)


def test_help_uri_is_the_documentation_url_of_the_project() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml")
                              .read_text(encoding="utf-8"))
    assert pyproject["project"]["urls"]["Documentation"] == DOCS_URL
    assert sarif.help_uri("MS201") == f"{DOCS_URL}#ms201"
