"""The readiness score: each part moves the way it should, unresolved APIs never raise it,
and a repository without torch scores 0 with low confidence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from msready.analyzer.apitable import ApiEntry, ApiTable, Target
from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.result import ApiLocation, ApiUse, ScanResult, SkeletonResult
from msready.analyzer.scan import scan_files
from msready.analyzer.score import compute_score, finding_cost

TORCH_FILE = "import torch\n\nx = torch.zeros(3)\ny = torch.relu(x)\n"

TABLE = ApiTable({
    "torch.zeros": ApiEntry("torch.zeros", "consistent", {
        b: Target("mindspore.ops.zeros", ("Ascend", "GPU", "CPU")) for b in ("ascend", "gpu", "cpu")
    }),
    "torch.relu": ApiEntry("torch.relu", "consistent", {
        b: Target("mindspore.ops.relu", ("Ascend", "GPU", "CPU")) for b in ("ascend", "gpu", "cpu")
    }),
    "torch.conv": ApiEntry("torch.conv", "differs", {
        "ascend": Target("mindspore.mint.conv", ("Ascend",)),
        "cpu": Target("mindspore.mint.conv", ("Ascend",)),
    }),
    "torch.gone": ApiEntry("torch.gone", "missing"),
    "torchvision.transforms.Resize": ApiEntry("torchvision.transforms.Resize", "differs", {
        b: Target("mindspore.dataset.vision.Resize", ("CPU",)) for b in ("ascend", "gpu", "cpu")
    }),
}, {})


def _use(symbol: str, status: str, count: int) -> ApiUse:
    loc = ApiLocation("m.py", 3, 5)
    return ApiUse(symbol, status, None, "function", [loc] * count)


def _finding(severity: Severity = Severity.ERROR, category: Category = Category.DYNAMIC_SHAPE,
             trace: tuple[str, ...] = (), confidence: Confidence = Confidence.HIGH) -> Finding:
    return Finding("MS201", "nonzero", category, severity, confidence,
                   Location("m.py", 3, 5, 3, 20), "torch.nonzero", "m", "s", trace)


@pytest.fixture()
def base() -> ScanResult:
    """A real scan of a small torch file whose APIs are replaced per test."""
    result = scan_files({"m.py": TORCH_FILE}, target="cpu")
    result.findings = []
    result.apis = [_use("torch.zeros", "consistent", 10), _use("torch.relu", "consistent", 10)]
    return result


def _score(result: ScanResult) -> int:
    return compute_score(result, TABLE).value


def _part(result: ScanResult, name: str) -> float:
    score = compute_score(result, TABLE)
    return next(p.value for p in score.parts if p.name == name)


def test_all_consistent_without_findings_is_fully_ready(base: ScanResult) -> None:
    score = compute_score(base, TABLE)
    assert score.value == 100
    assert score.confidence == "high"
    assert {p.name for p in score.parts} == {"API coverage", "hazards", "backend support",
                                             "unresolved"}


def test_differs_counts_half_and_missing_nothing(base: ScanResult) -> None:
    full = _part(base, "API coverage")
    base.apis[1] = _use("torch.conv", "differs", 10)
    half = _part(base, "API coverage")
    base.apis[1] = _use("torch.gone", "missing", 10)
    none = _part(base, "API coverage")
    assert (full, half, none) == (1.0, 0.75, 0.5)


def test_coverage_is_weighted_by_call_counts(base: ScanResult) -> None:
    base.apis = [_use("torch.zeros", "consistent", 1), _use("torch.gone", "missing", 9)]
    few = _score(base)
    base.apis = [_use("torch.zeros", "consistent", 9), _use("torch.gone", "missing", 1)]
    assert _score(base) > few


def test_unknown_apis_never_raise_the_score(base: ScanResult) -> None:
    before = compute_score(base, TABLE)
    base.apis.append(_use("torch.mystery", "unknown", 5))
    after = compute_score(base, TABLE)
    assert after.value < before.value
    unresolved = next(p for p in after.parts if p.name == "unresolved")
    assert unresolved.weight == 0 and unresolved.value == pytest.approx(5 / 25)
    assert after.confidence == "medium"


def test_repository_msready_does_not_understand_cannot_look_ready(base: ScanResult) -> None:
    base.apis = [_use("torch.mystery", "unknown", 40), _use("torch.zeros", "consistent", 2)]
    score = compute_score(base, TABLE)
    assert score.value <= 5
    assert score.confidence == "low"


def test_unknown_share_sets_confidence(base: ScanResult) -> None:
    base.apis.append(_use("torch.mystery", "unknown", 2))  # 2 of 22: under 10 %
    assert compute_score(base, TABLE).confidence == "high"
    base.apis[-1] = _use("torch.mystery", "unknown", 6)  # 6 of 26
    assert compute_score(base, TABLE).confidence == "medium"
    base.apis[-1] = _use("torch.mystery", "unknown", 20)  # 20 of 40
    assert compute_score(base, TABLE).confidence == "low"


def test_hazards_lower_the_score_by_severity(base: ScanResult) -> None:
    scores = []
    for severity in (Severity.INFO, Severity.WARNING, Severity.ERROR):
        base.findings = [_finding(severity)] * 3
        scores.append(_score(base))
    assert scores[0] > scores[1] > scores[2]
    base.findings = []
    assert _score(base) > scores[0]


def test_hazards_weigh_more_on_a_forward_path(base: ScanResult) -> None:
    base.findings = [_finding()] * 3
    off_path = _part(base, "hazards")
    base.findings = [_finding(trace=("Net.forward", "helper"))] * 3
    assert _part(base, "hazards") < off_path


def test_hazards_weigh_by_category_and_confidence() -> None:
    assert finding_cost(_finding(category=Category.SECOND_ORDER)) > finding_cost(
        _finding(category=Category.IDIOM))
    assert finding_cost(_finding(confidence=Confidence.LOW)) < finding_cost(_finding())


def test_the_same_hazards_weigh_less_in_a_bigger_repository(base: ScanResult) -> None:
    base.findings = [_finding()] * 3
    small = _part(base, "hazards")
    base.apis = [_use("torch.zeros", "consistent", 200)]
    assert _part(base, "hazards") > small


def test_backend_without_target_lowers_backend_support(base: ScanResult) -> None:
    base.apis[1] = _use("torch.conv", "differs", 10)
    values = {}
    for backend in ("ascend", "cpu", "gpu"):
        base.target = backend
        values[backend] = (_score(base), _part(base, "backend support"))
    assert values["ascend"][1] == 1.0
    assert values["cpu"][1] == 0.5  # the cpu target lists only Ascend among its platforms
    assert values["gpu"][1] == 0.5  # no gpu target at all
    assert values["ascend"][0] > values["cpu"][0] == values["gpu"][0]
    detail = next(p.detail for p in compute_score(base, TABLE).parts
                  if p.name == "backend support")
    assert "no gpu target for torch.conv" in detail


def test_dataset_pipeline_targets_run_on_every_backend(base: ScanResult) -> None:
    base.apis[1] = _use("torchvision.transforms.Resize", "differs", 10)
    for backend in ("ascend", "gpu", "cpu"):
        base.target = backend
        assert _part(base, "backend support") == 1.0


def test_skeleton_runs_count_when_present(base: ScanResult) -> None:
    base.apis[1] = _use("torch.conv", "differs", 10)
    without = compute_score(base, TABLE)
    assert "skeletons" not in {p.name for p in without.parts}
    base.skeletons = [SkeletonResult("m.Net", "m.py", 1, "net.py", "pass", "pass")]
    passing = _score(base)
    base.skeletons = [SkeletonResult("m.Net", "m.py", 1, "net.py", "fail", "fail")]
    failing = _score(base)
    base.skeletons = [SkeletonResult("m.Net", "m.py", 1, "net.py", "skipped", "skipped")]
    assert failing < without.value < passing
    assert _score(base) == without.value


def test_no_torch_scores_zero_with_low_confidence() -> None:
    result = scan_files({"app.py": "import numpy as np\n\nprint(np.zeros(3))\n"})
    score = result.score
    assert score is not None
    assert (score.value, score.confidence) == (0, "low")
    assert "no torch usage was found" in score.formula
    assert score.parts[0].detail.startswith("no torch usage")


def test_torch_import_without_any_call_scores_zero() -> None:
    result = scan_files({"app.py": "import torch\n"})
    assert result.score is not None and result.score.value == 0
    assert result.score.confidence == "low"


def test_formula_and_parts_are_written_out(base: ScanResult) -> None:
    score = compute_score(replace(base, findings=[_finding()]), TABLE)
    assert "exp(-2" in score.formula and "unresolved" in score.formula
    applied = score.formula.split("\n\n")[0]
    assert applied.startswith("score = min(100 x (0.35 x 1.00 + 0.35 x ")
    assert applied.endswith(f"= {score.value}")
    hazards = next(p for p in score.parts if p.name == "hazards")
    assert "1 finding (1 dynamic-shape" in hazards.detail
    assert all(0.0 <= p.value <= 1.0 for p in score.parts)


def test_engine_scores_a_real_scan() -> None:
    result = scan_files({"m.py": TORCH_FILE})
    assert result.score is not None
    assert 0 <= result.score.value <= 100
    assert result.score.formula
