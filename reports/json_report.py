"""``msready.json``: the scan result in the stable schema other tools rely on."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from msready.analyzer.findings import Category, Finding, Severity
from msready.analyzer.result import ApiLocation, ScanResult

SCHEMA_VERSION = "1.0"
_BATCH = 256  # rows encoded before they are written


def finding_dict(finding: Finding, fingerprint: str | None = None) -> dict[str, Any]:
    """One finding in the schema's shape; ``fingerprint`` is its stable identity
    (``ScanResult.fingerprints``), which ``--baseline`` compares."""
    loc = finding.location
    row = {
        "rule": finding.rule,
        "rule_name": finding.rule_name,
        "category": finding.category.value,
        "severity": finding.severity.value,
        "confidence": finding.confidence.value,
        "path": loc.path,
        "cell": loc.cell,
        "line": loc.line,
        "column": loc.column,
        "end_line": loc.end_line,
        "end_column": loc.end_column,
        "symbol": finding.symbol,
        "message": finding.message,
        "suggestion": finding.suggestion,
        "trace": list(finding.trace),
        "where": finding.where,
    }
    if fingerprint is not None:
        row["fingerprint"] = fingerprint
    return row


def to_dict(result: ScanResult) -> dict[str, Any]:
    """The whole result as plain JSON-ready data."""
    return {key: list(value) if isinstance(value, Iterator) else value
            for key, value in _parts(result).items()}


def _parts(result: ScanResult) -> dict[str, Any]:
    """The top-level keys of the result in order, each with its value: plain data, or an
    iterator of rows made one at a time as they are read (the findings, the APIs), so
    that :func:`write` never holds all of them at once."""
    by_category = {c.value: 0 for c in Category}
    by_severity = {s.value: 0 for s in Severity}
    for finding in result.findings:
        by_category[finding.category.value] += 1
        by_severity[finding.severity.value] += 1
    score = result.score
    src = result.source
    prints = result.fingerprints()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "msready", "version": result.tool_version,
                 "mindspore_version": result.mindspore_version},
        "target": result.target,
        "source": {
            "input": src.input,
            "ref": src.ref,
            "commit": src.commit,
            "files_scanned": src.files_scanned,
            "files_failed": src.files_failed,
            "lines": src.lines,
            "skipped": [{"path": p, "reason": r} for p, r in src.skipped],
        },
        "summary": {
            "score": score.value if score else None,
            "score_confidence": score.confidence if score else None,
            "score_parts": [
                {"name": p.name, "value": round(p.value, 4), "weight": p.weight, "detail": p.detail}
                for p in (score.parts if score else ())
            ],
            "score_formula": score.formula if score else None,
            "by_category": by_category,
            "by_severity": by_severity,
            "findings": len(result.findings),
            "suppressed": len(result.suppressed),
            "apis": {status: sum(1 for a in result.apis if a.status == status)
                     for status in ("consistent", "differs", "missing", "unknown")},
        },
        "findings": (finding_dict(f, prints[f]) for f in result.findings),
        "suppressed": (finding_dict(f, prints[f]) for f in result.suppressed),
        "apis": (
            {
                "symbol": api.symbol,
                "count": api.count,
                "status": api.status,
                "mindspore": api.mindspore,
                "kind": api.kind,
                "locations": [
                    {"path": loc.path, "cell": loc.cell, "line": loc.line, "column": loc.column}
                    for loc in api.locations
                ],
            }
            for api in result.apis
        ),
        "checklist": [
            {"item": c.item, "value": c.value, "path": c.path, "line": c.line,
             "section": c.section, "cell": c.cell}
            for c in result.checklist
        ],
        "skeletons": [
            {"torch_class": s.torch_class, "path": s.path, "line": s.line,
             "cell_file": s.cell_file, "pynative": s.pynative, "graph": s.graph,
             "error": s.error, "max_abs_diff": s.max_abs_diff, "status": s.status,
             "synthesized": s.synthesized, "input_shape": s.input_shape,
             "output_shape": s.output_shape, "ran_inside": s.ran_inside,
             "given_input": s.given_input, "given_error": s.given_error}
            for s in result.skeletons
        ],
        "train_steps": [
            {"function": t.function, "path": t.path, "line": t.line,
             "step_file": t.step_file, "status": t.status, "model": t.model, "loss": t.loss,
             "optimizer": t.optimizer, "error": t.error, "loss_before": t.loss_before,
             "loss_after": t.loss_after, "not_translated": list(t.not_translated)}
            for t in result.train_steps
        ],
        "start_here": [
            {"kind": b.kind, "title": b.title, "subject": b.subject, "count": b.count,
             "cause": b.cause, "places": [_place(p) for p in b.places]}
            for b in result.blockers
        ],
        "causes": (
            {"id": c.id, "rule": c.rule, "rule_name": c.rule_name,
             "category": c.category.value, "severity": c.severity.value, "runs": c.where,
             "symbol": c.symbol, "count": c.count, "graph_count": c.graph_count,
             "message": c.message, "fingerprints": [prints[f] for f in c.findings]}
            for c in result.causes
        ),
        "files": [
            {"path": w.path, "findings": w.findings, "errors": w.errors,
             "warnings": w.warnings, "infos": w.infos, "graph": w.graph, "cost": w.cost}
            for w in result.files_work
        ],
        "warnings": list(result.warnings),
    }


def _place(loc: ApiLocation) -> dict[str, Any]:
    return {"path": loc.path, "cell": loc.cell, "line": loc.line, "column": loc.column}


def render(result: ScanResult) -> str:
    """``msready.json`` text (what :func:`write` writes)."""
    out = io.StringIO()
    write(result, out)
    return out.getvalue()


def write(result: ScanResult, out: TextIO) -> None:
    """Write ``msready.json``: one finding or API per line, so that it diffs well and is
    written by the C encoder (an indented dump is several times slower on big results).
    Rows are made, encoded and written one at a time: a result of hundreds of thousands
    of findings is never held as text, nor as JSON-ready data."""
    parts = _parts(result)
    out.write("{")
    for i, (key, value) in enumerate(parts.items()):
        tail = "," if i < len(parts) - 1 else ""
        out.write(f"\n{json.dumps(key)}: ")
        if isinstance(value, (list, Iterator)):
            _write_rows(out, value, tail)
        else:
            out.write(f"{_compact(value)}{tail}")
    out.write("\n}\n")


def _write_rows(out: TextIO, rows: Iterable[object], tail: str) -> None:
    """A list, one element a line (``[]`` when empty), written a batch of rows at a time."""
    wrote = False
    batch: list[str] = []
    for row in rows:
        batch.append(_compact(row))
        if len(batch) == _BATCH:
            out.write((",\n  " if wrote else "[\n  ") + ",\n  ".join(batch))
            wrote = True
            batch.clear()
    if batch:
        out.write((",\n  " if wrote else "[\n  ") + ",\n  ".join(batch))
        wrote = True
    out.write(f"\n]{tail}" if wrote else f"[]{tail}")


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
