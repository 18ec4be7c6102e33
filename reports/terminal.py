"""The coloured summary printed at the end of a scan."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from msready.analyzer.findings import Severity
from msready.analyzer.result import ScanResult

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def print_summary(result: ScanResult, console: Console, written: list[str], top: int = 10) -> None:
    """Score, counts by category, the first findings and the files written."""
    src = result.source
    score = result.score
    head = f"[bold]msready[/bold] {escape(src.input)}"
    if src.commit:
        head += f" @ {src.commit[:12]}"
    console.print(head)
    console.print(f"  {src.files_scanned} files, {src.lines} lines, {src.files_failed} unreadable; "
                  f"target backend: {result.target}")
    if score is not None:
        colour = "green" if score.value >= 80 else "yellow" if score.value >= 50 else "red"
        console.print(f"  readiness score: [bold {colour}]{score.value}/100[/] "
                      f"(confidence {score.confidence})")
    statuses = Counter(api.status for api in result.apis)
    console.print("  torch APIs: " + ", ".join(
        f"{statuses.get(s, 0)} {s}" for s in ("consistent", "differs", "missing", "unknown")))
    if result.findings:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("category")
        table.add_column("error", justify="right")
        table.add_column("warning", justify="right")
        table.add_column("info", justify="right")
        counts = Counter((f.category.value, f.severity) for f in result.findings)
        for category in sorted({f.category.value for f in result.findings}):
            table.add_row(category, *(str(counts.get((category, s), 0)) for s in Severity))
        console.print(table)
        rank = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
        worst = sorted(result.findings, key=lambda f: (rank[f.severity], f.sort_key()))
        for finding in worst[:top]:
            loc = finding.location
            where = f"{loc.path}:{loc.line}:{loc.column}" if loc.cell is None else (
                f"{loc.path}[cell {loc.cell}]:{loc.line}:{loc.column}")
            style = _SEVERITY_STYLE[finding.severity]
            console.print(f"  [{style}]{finding.rule}[/] {escape(where)} "
                          f"{escape(finding.message)}", highlight=False, soft_wrap=True)
        if len(result.findings) > top:
            console.print(f"  ... and {len(result.findings) - top} more findings")
    else:
        console.print("  no findings")
    if result.suppressed:
        console.print(f"  {len(result.suppressed)} findings suppressed by comments or config")
    for warning in result.warnings:
        console.print(f"  [yellow]warning:[/] {escape(warning)}", highlight=False)
    for path in written:
        console.print(f"  wrote {escape(path)}", highlight=False)
