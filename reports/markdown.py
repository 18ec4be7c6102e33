"""``checklist.md``: the migration checklist, the score and the findings as Markdown.

It renders what the scan computed: the score with its parts and formula, the checklist
section by section (the migration work list included), then the findings per category with
``path:line`` and the suggestion.
"""

from __future__ import annotations

from collections.abc import Iterable

from msready.analyzer.findings import Category, Finding
from msready.analyzer.result import ChecklistItem, ScanResult


def escape(text: str) -> str:
    """Text safe inside a Markdown table cell or list item."""
    for char in "\\|*_`[]":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def where(path: str | None, line: int | None, cell: int | None = None) -> str:
    """``path:line`` (``path[cell 3]:line`` in a notebook), or "not found"."""
    if path is None or line is None:
        return "not found"
    return f"`{path}:{line}`" if cell is None else f"`{path}[cell {cell}]:{line}`"


def _score_lines(result: ScanResult) -> list[str]:
    score = result.score
    if score is None:
        return ["No readiness score was computed.", ""]
    lines = [f"**Readiness score: {score.value}/100** (confidence: {score.confidence}; "
             f"target backend: {result.target})", "",
             "| part | value | weight | detail |", "|---|---:|---:|---|"]
    lines += [f"| {escape(p.name)} | {p.value:.2f} | {p.weight:g} | {escape(p.detail)} |"
              for p in score.parts]
    applied, _, general = score.formula.partition("\n\n")
    lines += ["", f"Formula: `{applied}`", ""]
    if general:
        lines += [escape(general), ""]
    return lines


def _sections(items: Iterable[ChecklistItem]) -> dict[str, list[ChecklistItem]]:
    sections: dict[str, list[ChecklistItem]] = {}
    for item in items:
        sections.setdefault(item.section or "Checklist", []).append(item)
    return sections


def _checklist_lines(result: ScanResult) -> list[str]:
    lines: list[str] = []
    sections = _sections(result.checklist)
    if not sections:
        return ["No checklist was built.", ""]
    for section, items in sections.items():
        lines += [f"### {escape(section)}", ""]
        for item in items:
            if item.path is None:
                lines.append(f"- **{escape(item.item)}**: {escape(item.value)}")
            else:
                lines.append(f"- [ ] **{escape(item.item)}**: {escape(item.value)} — "
                             f"{where(item.path, item.line, item.cell)}")
        lines.append("")
    return lines


def _finding_line(finding: Finding) -> str:
    loc = finding.location
    text = (f"- {where(loc.path, loc.line, loc.cell)} **{finding.rule} {finding.rule_name}** "
            f"({finding.severity.value}, {finding.confidence.value} confidence) "
            f"`{escape(finding.symbol)}`: {escape(finding.message)}  \n"
            f"  Fix: {escape(finding.suggestion)}")
    if finding.trace:
        text += f"  \n  Reached from: {escape(' → '.join(finding.trace))}"
    return text


def _findings_lines(result: ScanResult) -> list[str]:
    if not result.findings:
        return ["No findings.", ""]
    lines: list[str] = []
    for category in Category:
        group = [f for f in result.findings if f.category is category]
        if group:
            lines += [f"### {category.value} ({len(group)})", ""]
            lines += [_finding_line(f) for f in group]
            lines.append("")
    if result.suppressed:
        count = len(result.suppressed)
        verb = "finding is" if count == 1 else "findings are"
        lines += [f"{count} {verb} suppressed by `# msready: ignore` comments or "
                  "`[tool.msready]` configuration.", ""]
    return lines


def render(result: ScanResult) -> str:
    """``checklist.md`` text."""
    src = result.source
    head = f"# MindSpore migration checklist: {escape(src.input)}"
    meta = (f"msready {result.tool_version}, MindSpore {result.mindspore_version}; "
            f"{src.files_scanned} files, {src.lines} lines, {src.files_failed} unreadable")
    if src.commit:
        meta += f"; commit `{src.commit[:12]}`"
    lines = [head, "", meta, "", "## Readiness", "", *_score_lines(result),
             "## Checklist", "",
             "Items with a location were read from the code (check them off as you port "
             "them); items marked \"not found\" are not shown by the code.", "",
             *_checklist_lines(result), "## Findings", "", *_findings_lines(result)]
    if result.warnings:
        lines += ["## Warnings", "", *(f"- {escape(w)}" for w in result.warnings), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
