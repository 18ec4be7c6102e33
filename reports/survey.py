"""The survey reports: ``survey.html`` (self-contained: inline CSS and SVG, no network),
``survey.json`` (the aggregate as computed) and ``survey.csv`` (one row per repository).

They render the aggregate that :mod:`msready.analyzer.survey_aggregate` computed; the
only arithmetic here is the geometry of the charts.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from msready.analyzer.survey import SurveyRun

CSV_COLUMNS = ("name", "status", "score", "blockers", "missing_apis", "cells_passing", "cells",
               "cells_generated",
               "files", "lines", "seconds", "commit", "source", "ref", "report", "error")
TOP_ROWS = 30  # rows of each ranking the page shows (survey.json keeps them all)
DECISION_ROWS = 25


@dataclass(frozen=True, slots=True)
class Column:
    """One column of an SVG column chart."""

    label: str
    value: int
    x: float
    y: float
    height: float


def render_json(data: dict[str, Any]) -> str:
    """``survey.json``: the aggregate, indented."""
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def render_csv(data: dict[str, Any]) -> str:
    """``survey.csv``: one line per repository."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for row in data["rows"]:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in CSV_COLUMNS})
    return buffer.getvalue()


def columns(values: list[tuple[str, int]], width: float = 100.0,
            height: float = 40.0) -> list[Column]:
    """Columns scaled to a ``width`` x ``height`` SVG box."""
    top = max((v for _, v in values), default=0) or 1
    step = width / max(1, len(values))
    return [Column(label, value, i * step + step * 0.1, height - value / top * height,
                   value / top * height) for i, (label, value) in enumerate(values)]


def step_path(points: list[tuple[int, int]], width: float = 100.0,
              height: float = 40.0) -> str:
    """An SVG path for a cumulative step line through (x, y) points from (0, 0)."""
    if not points:
        return ""
    max_x = max(x for x, _ in points) or 1
    max_y = max(y for _, y in points) or 1
    parts = [f"M0,{height:.2f}"]
    for x, y in points:
        px, py = x / max_x * width, height - y / max_y * height
        parts.append(f"H{px:.2f}V{py:.2f}")
    return "".join(parts)


def _environment() -> Environment:
    return Environment(loader=PackageLoader("msready.reports", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(data: dict[str, Any]) -> str:
    """``survey.html``."""
    histogram = columns([(b["band"], b["repos"]) for b in data["score_histogram"]])
    decision = data["decision"]
    curve = step_path([(d["apis"], d["repos"]) for d in decision])
    rankings = [(status, [a for a in data["apis"] if a["status"] == status])
                for status in ("missing", "differs")]
    most = max((a["repos"] for a in data["apis"]), default=0) or 1
    template = _environment().get_template("survey.html.j2")
    return template.render(data=data, t=data["totals"], histogram=histogram, curve=curve,
                           decision=decision[:DECISION_ROWS], top=TOP_ROWS, most=most,
                           rankings=rankings)


def write_reports(data: dict[str, Any], out: Path) -> list[str]:
    """Write ``survey.html``, ``survey.json`` and ``survey.csv`` into ``out``."""
    written = []
    for name, render in (("survey.html", render_html), ("survey.json", render_json),
                         ("survey.csv", render_csv)):
        path = out / name
        path.write_text(render(data), encoding="utf-8")
        written.append(str(path))
    return written


def print_summary(run: SurveyRun, console: Console, written: list[str]) -> None:
    """What the survey did and the most widely missing APIs, on the terminal."""
    totals = run.data["totals"]
    console.print(f"[bold]msready survey[/bold]: {totals['repositories']} repositories, "
                  f"{len(run.scanned)} scanned, {len(run.skipped)} unchanged, "
                  f"{totals['failed']} failed")
    missing = [api for api in run.data["apis"] if api["status"] == "missing"]
    if missing:
        console.print("  most widely missing in MindSpore:")
    for api in missing[:5]:
        console.print(f"    {escape(api['key'])}: {api['repos']} repositories, "
                      f"{api['count']} calls", highlight=False)
    for path in written:
        console.print(f"  wrote {escape(path)}", highlight=False)
