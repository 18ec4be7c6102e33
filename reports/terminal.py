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
    """Score, the start-here blockers, counts by category, the most urgent causes (one line
    per rule and API, with its count of places) and the files written."""
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
    if result.blockers:
        console.print("  [bold]start here[/bold] (the port's blockers, most costly first):")
        for i, b in enumerate(result.blockers[:top], 1):
            first = b.places[0] if b.places else None
            at = "" if first is None else f" {first.path}:{first.line}"
            console.print(f"  {i}. {escape(b.title)}: {escape(b.subject)}, {b.count} "
                          f"place{'s' * (b.count != 1)}{escape(at)}", highlight=False,
                          soft_wrap=True)
        if len(result.blockers) > top:
            console.print(f"  ... and {len(result.blockers) - top} more blockers (report.html)")
    else:
        console.print("  start here: no blocker found; work through the causes below")
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
        causes = result.causes
        console.print(f"  {len(result.findings)} findings in {len(causes)} causes; "
                      "the most urgent (severity x where the code runs):")
        for cause in causes[:top]:
            loc = cause.findings[0].location
            where = f"{loc.path}:{loc.line}:{loc.column}" if loc.cell is None else (
                f"{loc.path}[cell {loc.cell}]:{loc.line}:{loc.column}")
            style = _SEVERITY_STYLE[cause.severity]
            count = f"x{cause.count}" + (f" ({cause.graph_count} in the graph)"
                                         if cause.graph_count else "")
            console.print(f"  [{style}]{cause.rule}[/] {escape(cause.symbol)} {count} "
                          f"{escape(where)}: {escape(cause.message)}", highlight=False,
                          soft_wrap=True)
        if len(causes) > top:
            console.print(f"  ... and {len(causes) - top} more causes (report.html)")
    else:
        console.print("  no findings")
    if result.suppressed:
        console.print(f"  {len(result.suppressed)} findings suppressed by comments or config")
    if result.train_steps:
        steps = Counter(t.status for t in result.train_steps)
        console.print("  training steps: " + ", ".join(
            f"{n} {s}" for s, n in sorted(steps.items())), highlight=False)
        for t in result.train_steps[:top]:
            ran = (f", loss {t.loss_before:.4g} -> {t.loss_after:.4g}"
                   if t.loss_before is not None and t.loss_after is not None else "")
            why = f": {t.error}" if t.error and t.status != "pass" else ""
            console.print(f"    {t.status} {escape(t.function)} ({escape(t.path)}:{t.line})"
                          f"{ran}{escape(why[:200])}", highlight=False, soft_wrap=True)
    for warning in result.warnings:
        console.print(f"  [yellow]warning:[/] {escape(warning)}", highlight=False)
    for path in written:
        console.print(f"  wrote {escape(path)}", highlight=False)
