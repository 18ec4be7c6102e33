"""``msready.sarif``: the findings as a SARIF 2.1.0 log for code-scanning UIs.

One ``tool.driver.rules`` entry per msready rule (with its docstring as help and a link to
its section of ``docs/rules.md``), one result per finding. Findings suppressed by an
``# msready: ignore`` comment or by the repository's configuration are kept with a SARIF
``suppressions`` entry, so that a code-scanning UI shows them as dismissed.
"""

from __future__ import annotations

import inspect
import io
import json
from collections.abc import Iterator
from typing import Any, TextIO

from msready.analyzer.config import suppressed_by_comment
from msready.analyzer.findings import FINGERPRINT_VERSION, Category, Finding, Severity
from msready.analyzer.result import ScanResult
from msready.rules.base import Rule
from msready.rules.docs import rule_doc_url
from msready.rules.registry import all_rules

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SRCROOT = "%SRCROOT%"
# Stands for the results while the rest of the log is encoded (see ``write``).
_RESULTS = "msready: the results go here"
_BATCH = 256  # results encoded before they are written

# Findings the engine itself makes, without a rule class.
ENGINE_RULES: tuple[tuple[str, str, Category, Severity, str], ...] = (
    ("MS000", "parse-error", Category.PARSE_ERROR, Severity.ERROR,
     "A file msready could not read or parse.\n\nNone of its code is checked, so every hazard "
     "in it is unknown.\n\nMake the file valid Python 3 (python3 -m py_compile) and scan again."),
    ("MS001", "rule-crashed", Category.IDIOM, Severity.INFO,
     "One of msready's rules failed on this code.\n\nThat rule's findings are missing here."
     "\n\nCheck the hazard by hand and report the failure to msready."),
)


def help_uri(rule_id: str) -> str:
    """The rule's section of the published rule documentation (an absolute URI, as SARIF
    consumers require)."""
    return rule_doc_url(rule_id)


def _descriptor(rule_id: str, name: str, category: Category, severity: Severity,
                doc: str) -> dict[str, Any]:
    paragraphs = [p.strip() for p in doc.split("\n\n") if p.strip()]
    short = " ".join(paragraphs[0].split()) if paragraphs else name
    full = "\n\n".join(" ".join(p.split()) for p in paragraphs) or short
    return {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": full, "markdown": f"{full}\n\n[Rule documentation]({help_uri(rule_id)})"},
        "helpUri": help_uri(rule_id),
        "defaultConfiguration": {"level": LEVELS[severity]},
        "properties": {"category": category.value, "tags": [category.value, "mindspore"]},
    }


def rule_descriptors(rules: tuple[type[Rule], ...] | None = None) -> list[dict[str, Any]]:
    """``tool.driver.rules``: the engine's own rules, then every msready rule by id."""
    out = [_descriptor(*engine) for engine in ENGINE_RULES]
    for rule in rules if rules is not None else all_rules():
        out.append(_descriptor(rule.id, rule.name, rule.category, rule.severity,
                               inspect.getdoc(rule) or rule.name))
    return out


def result_entry(finding: Finding, index: dict[str, int], fingerprint: str) -> dict[str, Any]:
    """One SARIF result for a finding, with its stable fingerprint
    (:func:`msready.analyzer.findings.fingerprints`)."""
    loc = finding.location
    region: dict[str, int] = {"startLine": max(1, loc.line), "startColumn": max(1, loc.column)}
    if loc.end_line >= loc.line:
        region["endLine"] = loc.end_line
        if loc.end_line > loc.line or loc.end_column > loc.column:
            region["endColumn"] = max(1, loc.end_column)
    properties: dict[str, Any] = {
        "category": finding.category.value,
        "severity": finding.severity.value,
        "confidence": finding.confidence.value,
        "symbol": finding.symbol,
        "suggestion": finding.suggestion,
        "ruleName": finding.rule_name,
    }
    if loc.cell is not None:
        properties["cell"] = loc.cell
    if finding.trace:
        properties["trace"] = list(finding.trace)
    entry: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVELS[finding.severity],
        "message": {"text": f"{finding.message} Suggestion: {finding.suggestion}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": loc.path, "uriBaseId": SRCROOT},
            "region": region,
        }}],
        "partialFingerprints": {FINGERPRINT_VERSION: fingerprint},
        "properties": properties,
    }
    if finding.rule in index:
        entry["ruleIndex"] = index[finding.rule]
    return entry


def _suppression(result: ScanResult, finding: Finding) -> dict[str, str]:
    file = result.model.files.get(finding.location.path)
    if file is not None and suppressed_by_comment(finding, file.suppressions):
        return {"kind": "inSource", "justification": "# msready: ignore comment"}
    return {"kind": "external", "justification": "disabled by [tool.msready] configuration"}


def to_sarif(result: ScanResult) -> dict[str, Any]:
    """The SARIF log as plain JSON-ready data."""
    log = _log(result)
    log["runs"][0]["results"] = list(_results(result))
    return log


def _results(result: ScanResult) -> Iterator[dict[str, Any]]:
    """The log's results, one per finding (reported, then suppressed), made one at a time."""
    index = {rule_id: i for i, rule_id in enumerate(_rule_ids())}
    prints = result.fingerprints()
    for finding in result.findings:
        yield result_entry(finding, index, prints[finding])
    for finding in result.suppressed:
        entry = result_entry(finding, index, prints[finding])
        entry["suppressions"] = [_suppression(result, finding)]
        yield entry


def _rule_ids() -> list[str]:
    return [engine[0] for engine in ENGINE_RULES] + [rule.id for rule in all_rules()]


def _log(result: ScanResult) -> dict[str, Any]:
    """The SARIF log with an empty ``results`` array."""
    score = result.score
    run_properties: dict[str, Any] = {"target": result.target,
                                      "mindspore_version": result.mindspore_version}
    if score is not None:
        run_properties.update(score=score.value, score_confidence=score.confidence)
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "msready",
            "version": result.tool_version,
            "semanticVersion": result.tool_version,
            "rules": rule_descriptors(),
        }},
        "invocations": [{"executionSuccessful": True,
                         "toolExecutionNotifications": [
                             {"message": {"text": w}, "level": "warning"}
                             for w in result.warnings]}],
        "originalUriBaseIds": {SRCROOT: {"description": {
            "text": f"The root of the scanned repository ({result.source.input})"}}},
        "results": [],
        "columnKind": "unicodeCodePoints",
        "properties": run_properties,
    }
    if result.source.commit and "://" in result.source.input:
        run["versionControlProvenance"] = [{
            "repositoryUri": result.source.input,
            "revisionId": result.source.commit,
            **({"branch": result.source.ref} if result.source.ref else {}),
        }]
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(result: ScanResult) -> str:
    """``msready.sarif`` text (what :func:`write` writes)."""
    out = io.StringIO()
    write(result, out)
    return out.getvalue()


def write(result: ScanResult, out: TextIO) -> None:
    """Write ``msready.sarif``: the log indented by two spaces, each result on one line of
    its own (as ``msready.json`` writes its findings), so that it diffs well and the C
    encoder writes it (an indented dump is several times slower on big logs). The results
    are made, encoded and written one at a time: a log of hundreds of thousands of
    results is never held as text, nor as JSON-ready data."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False)
    log = _log(result)
    if not result.findings and not result.suppressed:
        out.write(encoder.encode(log) + "\n")
        return
    placeholder = _RESULTS
    while True:  # a placeholder no warning or path of the log also reads as
        log["runs"][0]["results"] = [placeholder]
        text = encoder.encode(log)
        marker = json.dumps(placeholder)
        if text.count(marker) == 1:
            break
        placeholder += "!"
    head, _, tail = text.partition(marker)
    separator = ",\n" + head.rpartition("\n")[2]  # the marker's indentation
    out.write(head)
    batch: list[str] = []
    first = True
    for entry in _results(result):
        batch.append(_compact(entry))
        if len(batch) == _BATCH:
            out.write(("" if first else separator) + separator.join(batch))
            first = False
            batch.clear()
    out.write(("" if first or not batch else separator) + separator.join(batch) + tail + "\n")


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
