"""The readiness score: one number from 0 to 100, the parts it is made of, and how sure it is.

Four parts, each a value from 0 to 1 with a weight:

- **API coverage**: every torch call counts once; a call of a ``consistent`` API counts
  fully, ``differs`` half, ``missing`` not at all. Calls of APIs the table does not know
  (``unknown``) form the *unresolved* bucket: they count as 0 here (what msready does not
  understand can never make a repository look ready) and they lower the confidence.
- **Hazards**: every finding costs ``severity x category x confidence`` points, half as much
  again when a ``forward`` reaches it (``finding.trace``); the cost per torch call gives the
  density ``d`` and the part is ``exp(-2 d)``.
- **Backend support**: of the calls of known, non-missing APIs, the share whose MindSpore
  target exists for the chosen backend and lists it among its platforms.
- **Skeletons**: when generated Cells ran, the share of PyNative and GRAPH_MODE runs that
  passed.

The score is the weighted mean of the parts present, times 100, rounded, and never more
than the share of torch calls the table resolved: unresolved calls can lower the score but
never raise it, and a repository msready does not understand cannot look ready.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from msready.analyzer.apitable import ApiTable, load_table
from msready.analyzer.findings import Category, Confidence, Finding, Severity
from msready.analyzer.result import ApiUse, ScanResult, Score, ScorePart

COVERAGE_CREDIT = {"consistent": 1.0, "differs": 0.5, "missing": 0.0, "unknown": 0.0}
SEVERITY_COST = {Severity.ERROR: 3.0, Severity.WARNING: 1.0, Severity.INFO: 0.25}
CATEGORY_COST = {
    Category.SECOND_ORDER: 1.5,
    Category.DYNAMIC_SHAPE: 1.25,
    Category.SPARSE: 1.25,
    Category.GRAPH_SYNTAX: 1.0,
    Category.PARSE_ERROR: 1.0,
    Category.API_MAPPING: 0.75,
    Category.IDIOM: 0.5,
}
CONFIDENCE_COST = {Confidence.HIGH: 1.0, Confidence.MEDIUM: 0.75, Confidence.LOW: 0.5}
FORWARD_FACTOR = 1.5
HAZARD_STEEPNESS = 2.0
MIN_CALLS = 20  # density is per torch call, never per fewer than this many
WEIGHTS = {"API coverage": 0.35, "hazards": 0.35, "backend support": 0.15, "skeletons": 0.15}

FORMULA = (
    "In general: score = 100 x (weighted mean of the parts present). "
    "API coverage = (consistent calls + 0.5 x differs calls) / all torch calls, where calls of "
    "APIs the table does not know (unresolved) count as 0. "
    "hazards = exp(-2 x cost / max(20, torch calls)), cost = sum over findings of "
    "severity (error 3, warning 1, info 0.25) x category (second-order 1.5, dynamic-shape and "
    "sparse 1.25, graph-syntax and parse-error 1, api-mapping 0.75, idiom 0.5) x confidence "
    "(high 1, medium 0.75, low 0.5) x 1.5 when a forward reaches it. "
    "backend support = calls of known, non-missing APIs with a target on the chosen backend / "
    "calls of known, non-missing APIs. skeletons = passed runs / all runs (PyNative and "
    "GRAPH_MODE) of the generated Cells. Weights: API coverage 0.35, hazards 0.35, "
    "backend support 0.15, skeletons 0.15 (only when Cells ran). The score never exceeds "
    "the share of torch calls msready resolved (100 x (1 - unresolved share)), so code it does "
    "not understand can never look ready."
)
NO_TORCH = ("no torch usage was found (no call or reference to torch or torchvision), so there "
            "is nothing msready can judge: the score is 0 and means 'not understood', not "
            "'not ready'.")


@dataclass(frozen=True, slots=True)
class ApiCounts:
    """Call counts of the repository's torch APIs by table status."""

    consistent: int
    differs: int
    missing: int
    unknown: int

    @property
    def total(self) -> int:
        """All torch calls."""
        return self.consistent + self.differs + self.missing + self.unknown

    @property
    def unresolved_share(self) -> float:
        """The share of calls whose API the table does not know."""
        return self.unknown / self.total if self.total else 1.0


def api_counts(apis: list[ApiUse]) -> ApiCounts:
    """How many torch calls fall into each status."""
    counts: Counter[str] = Counter()
    for api in apis:
        counts[api.status if api.status in COVERAGE_CREDIT else "unknown"] += api.count
    return ApiCounts(counts["consistent"], counts["differs"], counts["missing"], counts["unknown"])


def coverage_part(counts: ApiCounts) -> ScorePart:
    """API coverage weighted by call counts; unresolved calls earn nothing."""
    total = counts.total
    value = (counts.consistent + 0.5 * counts.differs) / total if total else 0.0
    detail = (f"{total} torch calls: {counts.consistent} consistent, {counts.differs} differ, "
              f"{counts.missing} missing, {counts.unknown} unresolved (not in the API table; "
              "counted as 0)")
    return ScorePart("API coverage", value, WEIGHTS["API coverage"], detail)


def finding_cost(finding: Finding) -> float:
    """What one finding costs the hazards part."""
    cost = (SEVERITY_COST[finding.severity] * CATEGORY_COST.get(finding.category, 1.0)
            * CONFIDENCE_COST[finding.confidence])
    return cost * FORWARD_FACTOR if finding.trace else cost


def hazards_part(findings: list[Finding], calls: int) -> ScorePart:
    """Hazards by category and severity, per torch call, heavier on forward paths."""
    cost = sum(finding_cost(f) for f in findings)
    density = cost / max(MIN_CALLS, calls)
    value = math.exp(-HAZARD_STEEPNESS * density)
    by_category = Counter(f.category.value for f in findings)
    on_forward = sum(1 for f in findings if f.trace)
    listed = ", ".join(f"{n} {c}" for c, n in sorted(by_category.items())) or "none"
    noun = "finding" if len(findings) == 1 else "findings"
    detail = (f"{len(findings)} {noun} ({listed}; {on_forward} reached from a forward) "
              f"cost {cost:.1f} points over {max(MIN_CALLS, calls)} calls")
    return ScorePart("hazards", value, WEIGHTS["hazards"], detail)


# Targets that run on the host whatever the device: the dataset pipeline's operations list
# only CPU among their platforms because they run there for every backend.
HOST_SIDE = ("mindspore.dataset.",)


def supports(api: str, platforms: tuple[str, ...], backend: str) -> bool:
    """True when a MindSpore target runs for ``backend``: its platforms list it, it lists
    none, or it is a host-side (dataset pipeline) operation."""
    return (not platforms or backend in {p.lower() for p in platforms}
            or api.startswith(HOST_SIDE))


def backend_part(apis: list[ApiUse], backend: str, table: ApiTable) -> ScorePart:
    """The share of portable calls whose MindSpore target runs on the chosen backend."""
    portable = supported = 0
    lacking: list[str] = []
    for api in apis:
        entry = table.lookup(api.symbol)
        if entry is None or entry.status == "missing":
            continue
        portable += api.count
        target = entry.target(backend)
        if target.api is not None and supports(target.api, target.platforms, backend):
            supported += api.count
        else:
            lacking.append(api.symbol)
    value = supported / portable if portable else 0.0
    if not portable:
        detail = (f"no call of a known API with a MindSpore counterpart, so nothing is shown "
                  f"to run on {backend}")
    else:
        detail = (f"{supported} of {portable} calls of portable APIs have a MindSpore target "
                  f"on {backend}")
        if lacking:
            shown = ", ".join(lacking[:5]) + (" ..." if len(lacking) > 5 else "")
            detail += f"; no {backend} target for {shown}"
    return ScorePart("backend support", value, WEIGHTS["backend support"], detail)


def skeletons_part(result: ScanResult) -> ScorePart | None:
    """The share of generated-Cell runs that passed, None when none ran."""
    runs = [state for s in result.skeletons for state in (s.pynative, s.graph)
            if state != "skipped"]
    if not runs:
        return None
    passed = sum(1 for state in runs if state == "pass")
    detail = (f"{passed} of {len(runs)} runs of {len(result.skeletons)} generated Cells "
              "passed (PyNative and GRAPH_MODE)")
    return ScorePart("skeletons", passed / len(runs), WEIGHTS["skeletons"], detail)


def unresolved_part(counts: ApiCounts) -> ScorePart:
    """The explicit bucket of calls msready could not judge: its value is their share of
    all torch calls; weight 0, because it sets the confidence instead of the score."""
    share = counts.unresolved_share if counts.total else 0.0
    detail = (f"{counts.unknown} of {counts.total} torch calls use APIs the table does not know "
              f"({share:.0%}); not a term of the mean (weight 0): they earn nothing in API "
              "coverage and set the confidence")
    return ScorePart("unresolved", share, 0.0, detail)


def score_confidence(counts: ApiCounts, result: ScanResult) -> str:
    """high / medium / low: how much of the repository's torch use msready understood."""
    level = 2 if counts.unresolved_share <= 0.1 else 1 if counts.unresolved_share <= 0.35 else 0
    scanned = result.source.files_scanned
    if scanned and result.source.files_failed / scanned > 0.1:
        level -= 1
    if counts.total < 5:
        level = min(level, 1)
    return ("low", "medium", "high")[max(level, 0)]


def uses_torch(result: ScanResult) -> bool:
    """True when the repository calls or references torch at all."""
    return bool(result.apis) or any(f.imports_torch for f in result.files)


def compute_score(result: ScanResult, table: ApiTable | None = None) -> Score:
    """The readiness score of a scan result, its parts, formula and confidence."""
    table = table if table is not None else load_table()
    counts = api_counts(result.apis)
    if not uses_torch(result):
        part = ScorePart("torch usage", 0.0, 1.0, NO_TORCH)
        return Score(0, (part,), f"score = 0: {NO_TORCH}", "low")
    parts = [
        coverage_part(counts),
        hazards_part(result.findings, counts.total),
        backend_part(result.apis, result.target, table),
    ]
    skeletons = skeletons_part(result)
    if skeletons is not None:
        parts.append(skeletons)
    weight = sum(p.weight for p in parts)
    parts.append(unresolved_part(counts))
    mean = sum(p.value * p.weight for p in parts) / weight
    understood = 1.0 - counts.unresolved_share
    value = round(100 * min(mean, understood))
    confidence = score_confidence(counts, result)
    value = max(0, min(100, value))
    if counts.total == 0:
        applied = ("score = 0: the repository imports torch but uses no torch API msready "
                   "could find.")
    else:
        terms = " + ".join(f"{p.weight:g} x {p.value:.2f}" for p in parts if p.weight)
        applied = (f"score = min(100 x ({terms}) / {weight:g}, 100 x {understood:.2f} resolved)"
                   f" = min({100 * mean:.1f}, {100 * understood:.1f}) = {value}")
    return Score(value, tuple(parts), f"{applied}\n\n{FORMULA}", confidence)
