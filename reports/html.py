"""``report.html``: one self-contained readiness report (inline CSS, SVG and JS, no network).

The page renders the finished scan result: "start here" (the port's blockers, most
costly first), the score and why, charts of APIs by status and findings by category, the
files that need the most work (a sortable table), the findings grouped by cause (one item
per rule and API, its places folded) in order of severity and where the code runs, the
torch APIs with their MindSpore targets, the skeleton runs, the checklist and the
documentation of the rules found. Filters by category, severity and file run in plain
JavaScript and follow the URL hash (``report.html#category=dynamic-shape&severity=error``),
so a filtered view can be bookmarked or shared as a link to the local file.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from msready.analyzer.apitable import ApiEntry, load_table
from msready.analyzer.findings import Category, Finding, Severity
from msready.analyzer.result import ApiUse, Cause, ChecklistItem, ScanResult
from msready.analyzer.score import uses_torch

STATUS_ORDER = ("consistent", "differs", "missing", "unknown")
STATUS_COLOURS = {"consistent": "#2e7d32", "differs": "#f9a825", "missing": "#c62828",
                  "unknown": "#78909c"}
SEVERITY_COLOURS = {"error": "#c62828", "warning": "#ef6c00", "info": "#1e88e5"}
CONTEXT_LINES = 2
MAX_CONTEXT = 12
MAX_FILES = 25
MAX_BLOCKERS = 12
MAX_LOCATIONS = 8
_BATCH = 256  # pieces of the rendered page written at once


@dataclass(frozen=True, slots=True)
class CodeLine:
    """One line of source shown around a finding."""

    number: int
    text: str
    hit: bool


@dataclass(slots=True)
class PlaceView:
    """One place of a cause: where, its message when it differs, how a forward reaches it."""

    where: str
    path: str
    message: str | None
    trace: tuple[str, ...]


@dataclass(slots=True)
class CauseView:
    """A cause (one rule on one API or construct) with the source lines of its first
    place, every place, and the files it touches."""

    cause: Cause
    where: str
    lines: list[CodeLine]
    places: list[PlaceView]
    files: list[str]

    @property
    def finding(self) -> Finding:
        """The first finding of the cause."""
        return self.cause.findings[0]


@dataclass(slots=True)
class ChartBar:
    """One bar of a horizontal bar chart, cut into coloured segments."""

    label: str
    filter: str  # the filter a click sets: "category" or "file"
    key: str
    total: int
    segments: list[tuple[str, int, float, float]] = field(default_factory=list)


def where(path: str, line: int, cell: int | None) -> str:
    """``path:line`` or ``path[cell N]:line``."""
    return f"{path}:{line}" if cell is None else f"{path}[cell {cell}]:{line}"


_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceLines:
    """The lines of the scanned texts, split once per file as Python numbers them.

    ``ScanResult.source_lines`` uses ``str.splitlines``, which also breaks at form feeds
    and other separators the parser does not count, shifting the lines after them; this
    splits the same kept text (``ScanResult.sources``) at ``\\r\\n``, ``\\r`` and ``\\n`` only.
    """

    def __init__(self, result: ScanResult) -> None:
        self._sources = result.sources
        self._lines: dict[tuple[str, int | None], list[str]] = {}

    def __call__(self, path: str, cell: int | None) -> list[str]:
        key = (path, cell)
        if key not in self._lines:
            text = self._sources.get(key, "")
            self._lines[key] = _NEWLINE.split(text) if text else []
        return self._lines[key]


def code_lines(lines: SourceLines, finding: Finding) -> list[CodeLine]:
    """The finding's lines with a little context, from the text the scan kept."""
    loc = finding.location
    source = lines(loc.path, loc.cell)
    if not source:
        return []
    end = max(loc.line, min(loc.end_line, loc.line + MAX_CONTEXT))
    first = max(1, loc.line - CONTEXT_LINES)
    last = min(len(source), end + CONTEXT_LINES)
    return [CodeLine(n, source[n - 1], loc.line <= n <= end) for n in range(first, last + 1)]


def cause_views(result: ScanResult) -> list[CauseView]:
    """The causes in the order the analysis ranked them, each with its places."""
    lines = SourceLines(result)
    views = []
    for cause in result.causes:
        first = cause.findings[0]
        loc = first.location
        places = [PlaceView(where(f.location.path, f.location.line, f.location.cell),
                            f.location.path, f.message if f.message != first.message else None,
                            f.trace) for f in cause.findings]
        views.append(CauseView(cause, where(loc.path, loc.line, loc.cell),
                               code_lines(lines, first), places,
                               sorted({f.location.path for f in cause.findings})))
    return views


def status_donut(apis: list[ApiUse]) -> list[dict[str, Any]]:
    """Donut segments (stroke-dasharray on a circle of circumference 100) per API status."""
    counts = Counter(api.status for api in apis)
    calls = Counter[str]()
    for api in apis:
        calls[api.status] += api.count
    total = sum(counts.values()) or 1
    offset = 0.0
    out = []
    for status in STATUS_ORDER:
        share = 100.0 * counts.get(status, 0) / total
        out.append({"status": status, "apis": counts.get(status, 0),
                    "calls": calls.get(status, 0), "colour": STATUS_COLOURS[status],
                    "dash": f"{share:.3f} {100 - share:.3f}", "offset": f"{25 - offset:.3f}",
                    "share": share})
        offset += share
    return out


def _bars(kind: str, rows: list[tuple[str, str, Counter[str]]]) -> list[ChartBar]:
    peak = max((sum(c.values()) for _, _, c in rows), default=0) or 1
    bars = []
    for label, key, counts in rows:
        bar = ChartBar(label, kind, key, sum(counts.values()))
        x = 0.0
        for severity in Severity:
            n = counts.get(severity.value, 0)
            width = 100.0 * n / peak
            if n:
                bar.segments.append((SEVERITY_COLOURS[severity.value], n, x, width))
            x += width
        bars.append(bar)
    return bars


def category_bars(findings: list[Finding]) -> list[ChartBar]:
    """Findings per category, split by severity."""
    rows = []
    for category in Category:
        counts = Counter(f.severity.value for f in findings if f.category is category)
        if counts:
            rows.append((category.value, category.value, counts))
    return _bars("category", rows)


def api_rows(result: ScanResult) -> list[dict[str, Any]]:
    """The torch APIs used, with the table's entry (differences, notes) where it has one."""
    table = load_table()
    rows = []
    for api in sorted(result.apis, key=lambda a: (STATUS_ORDER.index(a.status)
                                                  if a.status in STATUS_ORDER else 9,
                                                  -a.count, a.symbol)):
        entry = table.lookup(api.symbol)
        rows.append({
            "api": api,
            "entry": entry,
            "notes": _unsaid_notes(entry),
            "locations": [where(loc.path, loc.line, loc.cell) for loc in api.locations],
            "more": max(0, api.count - MAX_LOCATIONS),
        })
    return rows


def _unsaid_notes(entry: ApiEntry | None) -> str:
    """An entry's notes without what a parameter's own note already says: a measured
    difference is kept both on its parameter and in the notes, and the row shows the
    parameters first."""
    if entry is None:
        return ""
    notes = entry.notes
    for param in entry.params:
        if param.note:
            notes = notes.replace(param.note, "")
    return " ".join(notes.split())


def checklist_sections(items: list[ChecklistItem]) -> list[tuple[str, list[ChecklistItem]]]:
    """Checklist items by section, in the order the checklist gives them."""
    sections: dict[str, list[ChecklistItem]] = {}
    for item in items:
        sections.setdefault(item.section or "Checklist", []).append(item)
    return list(sections.items())


def verdict(result: ScanResult) -> str:
    """One sentence on the first screen that reads the score and its confidence."""
    score = result.score
    if score is None:
        return "No readiness score was computed for this scan."
    if not uses_torch(result):
        return ("msready found no torch usage here: either there is nothing to migrate or the "
                "PyTorch code is not in the scanned files. The score 0 means 'not understood'.")
    if score.confidence == "low":
        return ("msready understood too little of this repository's torch use to call it "
                "ready; treat the score as a floor and read the unresolved APIs first.")
    if score.value >= 80:
        return "Close to ready: mostly direct API mappings and a few local fixes."
    if score.value >= 50:
        return "Portable with work: several hazards and API differences need changes."
    return "Hard to migrate as it stands: major hazards or unmapped APIs block a direct port."


_TICKS = re.compile(r"`([^`\n]+)`")


def ticks(text: str) -> Markup:
    """Escape text and show its `backtick` spans as code."""
    return Markup(_TICKS.sub(r"<code>\1</code>", str(escape(text))))


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("msready.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["ticks"] = ticks
    env.filters["pct"] = lambda value: f"{100 * float(value):.0f}%"
    return env


def context(result: ScanResult) -> dict[str, Any]:
    """Everything the template shows."""
    files = sorted({f.location.path for f in result.findings})
    severities = Counter(f.severity.value for f in result.findings)
    return {
        "r": result,
        "score": result.score,
        "verdict": verdict(result),
        "score_colour": ("#2e7d32" if result.score and result.score.value >= 80 else
                         "#ef6c00" if result.score and result.score.value >= 50 else "#c62828"),
        "donut": status_donut(result.apis),
        "api_total": len(result.apis),
        "category_bars": category_bars(result.findings),
        "causes": cause_views(result),
        "blockers": result.blockers[:MAX_BLOCKERS],
        "more_blockers": max(0, len(result.blockers) - MAX_BLOCKERS),
        "files_work": result.files_work[:MAX_FILES],
        "more_files": max(0, len(result.files_work) - MAX_FILES),
        "rule_docs": [result.rule_docs[k] for k in sorted(result.rule_docs)],
        "categories": [c.value for c in Category],
        "severities": [s.value for s in Severity],
        "severity_counts": severities,
        "severity_colours": SEVERITY_COLOURS,
        "status_colours": STATUS_COLOURS,
        "files": files,
        "apis": api_rows(result),
        "max_locations": MAX_LOCATIONS,
        "checklist": checklist_sections(result.checklist),
    }


def render(result: ScanResult) -> str:
    """``report.html`` text."""
    return _environment().get_template("report.html.j2").render(context(result))


def write(result: ScanResult, out: TextIO) -> None:
    """Write ``report.html`` as the template renders it, a few hundred pieces at a time,
    without holding the whole page."""
    stream = _environment().get_template("report.html.j2").stream(context(result))
    stream.enable_buffering(_BATCH)
    out.writelines(stream)
