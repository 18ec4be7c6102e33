"""``checklist.md``: the migration checklist as Markdown, a list a person can work through.

It renders what the scan computed: "start here" (the port's blockers, most costly first),
the score with its parts and formula, then the checklist section by section, ending with
the migration work grouped by cause (one item per rule and API or construct, with its count
and its places folded). The full finding list stays in ``report.html`` and
``msready.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

from msready.analyzer.result import ChecklistItem, ScanResult

MAX_BLOCKERS = 12


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
        if section.startswith(WORK_PREFIX):
            continue  # rendered by cause, with places, in _work_lines
        lines += [f"### {escape(section)}", ""]
        for item in items:
            if item.path is None:
                lines.append(f"- **{escape(item.item)}**: {escape(item.value)}")
            else:
                lines.append(f"- [ ] **{escape(item.item)}**: {escape(item.value)} — "
                             f"{where(item.path, item.line, item.cell)}")
        lines.append("")
    return lines


WORK_PREFIX = "Migration work"
MAX_PLACES = 50
INLINE_PLACES = 3


def _start_lines(result: ScanResult) -> list[str]:
    if not result.blockers:
        return ["No blocker found: no API without a counterpart or workaround, no "
                "second-order chain through an unsupported op, no dynamic shape in the graph, "
                "no custom C++/CUDA operator and no third-party torch library.", ""]
    lines = []
    for i, b in enumerate(result.blockers[:MAX_BLOCKERS], 1):
        first = b.places[0] if b.places else None
        at = f", first at {where(first.path, first.line, first.cell)}" if first else ""
        anchor = f" ([places](#{b.cause}))" if b.cause else ""
        lines.append(f"{i}. **{escape(b.title)}**: `{escape(b.subject)}`, {b.count} "
                     f"place{'s' * (b.count != 1)}{at}{anchor}")
    if len(result.blockers) > MAX_BLOCKERS:
        lines.append(f"\n{len(result.blockers) - MAX_BLOCKERS} more blockers: see report.html.")
    return [*lines, ""]


def _work_lines(result: ScanResult) -> list[str]:
    """The migration work by cause: one check box per cause, its places folded."""
    lines = ["## Migration work by cause", "",
             "One item per cause (a rule on one API or construct), most urgent first: "
             "severity × where the code runs.", ""]
    if not result.causes:
        return [*lines, "No findings.", ""]
    for cause in result.causes:
        count = f"{cause.count} place{'s' * (cause.count != 1)}"
        if cause.graph_count:
            count += f", {cause.graph_count} reached from a forward"
        lines.append(f'- [ ] <a id="{cause.id}"></a>**{cause.rule} {escape(cause.rule_name)}** '
                     f"`{escape(cause.symbol)}` ({cause.severity.value}, runs in {cause.where}; "
                     f"{count}): {escape(cause.message)}  ")
        lines.append(f"  Fix: {escape(cause.suggestion)}  ")
        if cause.count <= INLINE_PLACES:
            lines.append("  At " + ", ".join(where(f.location.path, f.location.line,
                                                   f.location.cell) for f in cause.findings))
        else:
            places = [where(f.location.path, f.location.line, f.location.cell)
                      for f in cause.findings[:MAX_PLACES]]
            more = cause.count - len(places)
            lines += ["", f"  <details><summary>{cause.count} places</summary>", "",
                      "  " + ", ".join(places) + (f", ... {more} more" if more > 0 else ""),
                      "", "  </details>"]
        lines.append("")
    if result.suppressed:
        hidden = len(result.suppressed)
        verb = "finding is" if hidden == 1 else "findings are"
        lines += [f"{hidden} {verb} suppressed by `# msready: ignore` comments or "
                  "`[tool.msready]` configuration.", ""]
    return lines


def _train_step_lines(result: ScanResult) -> list[str]:
    """One item per training loop turned into a MindSpore step, with what it left out."""
    if not result.train_steps:
        return []
    lines = ["## Training steps", "",
             "Each training loop as a MindSpore step (`forward_fn`, `value_and_grad`, "
             "the optimizer update), run once on synthetic data.", ""]
    for t in result.train_steps:
        ran = (f", loss {t.loss_before:.4g} -> {t.loss_after:.4g}"
               if t.loss_before is not None and t.loss_after is not None else "")
        lines.append(f"- [ ] **{escape(t.function)}** ({where(t.path, t.line)}): "
                     f"**{t.status}**{ran}; `{escape(t.step_file)}`  ")
        details = [f"model {t.model}" if t.model else "", f"loss {t.loss}" if t.loss else "",
                   f"optimizer {t.optimizer}" if t.optimizer else ""]
        lines.append("  " + escape("; ".join(d for d in details if d) or "nothing read"))
        if t.error:
            lines.append(f"  {escape(t.error)}  ")
        lines += [f"  - not translated: {escape(n)}" for n in t.not_translated]
        lines.append("")
    return lines


def render(result: ScanResult) -> str:
    """``checklist.md`` text."""
    src = result.source
    head = f"# MindSpore migration checklist: {escape(src.input)}"
    meta = (f"msready {result.tool_version}, MindSpore {result.mindspore_version}; "
            f"{src.files_scanned} files, {src.lines} lines, {src.files_failed} unreadable")
    if src.commit:
        meta += f"; commit `{src.commit[:12]}`"
    lines = [head, "", meta, "", "## Start here", "",
             "The blockers of this port, most costly first.", "", *_start_lines(result),
             "## Readiness", "", *_score_lines(result),
             "## Checklist", "",
             "Items with a location were read from the code (check them off as you port "
             "them); items marked \"not found\" are not shown by the code. The full finding "
             "list is in report.html and msready.json.", "",
             *_checklist_lines(result), *_train_step_lines(result), *_work_lines(result)]
    if result.warnings:
        lines += ["## Warnings", "", *(f"- {escape(w)}" for w in result.warnings), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def write(result: ScanResult, out: TextIO) -> None:
    """Write ``checklist.md`` (a short text: rendered whole, then written)."""
    out.write(render(result))
