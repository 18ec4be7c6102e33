"""``checklist.md``: the score with its parts, the checklist sections with ``path:line``,
the migration work list, and the findings per category with their suggestion."""

from __future__ import annotations

from dataclasses import replace

import pytest

from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import scan_files
from msready.reports import markdown

SOURCE = '''\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x[x > 0])


opt = torch.optim.SGD(Net().parameters(), lr=0.01, momentum=0.9)
'''


@pytest.fixture(scope="module")
def result() -> ScanResult:
    scanned = scan_files({"net.py": SOURCE}, target="cpu")
    scanned.findings = [Finding(
        "MS204", "boolean-mask-index", Category.DYNAMIC_SHAPE, Severity.ERROR, Confidence.HIGH,
        Location("net.py", 11, 24, 11, 33), "x[x > 0]", "Boolean mask | shape depends on data.",
        "Use `mindspore.ops.masked_fill` with a fixed shape.", ("Net.forward",),
        function="net.Net.forward")]
    scanned.suppressed = [replace(scanned.findings[0], rule="MS201")]
    from msready.analyzer.checklist import build_checklist
    from msready.analyzer.priorities import prioritise
    prioritise(scanned)
    scanned.checklist = build_checklist(scanned)
    return scanned


def test_score_with_parts_and_formula(result: ScanResult) -> None:
    text = markdown.render(result)
    score = result.score
    assert score is not None
    assert f"**Readiness score: {score.value}/100** (confidence: {score.confidence}" in text
    for part in score.parts:
        assert f"| {part.name} | {part.value:.2f} | {part.weight:g} |" in text
    assert "Formula: `score = min(100 x (0.35 x " in text
    assert "In general: score = 100 x (weighted mean of the parts present)." in text


def test_checklist_sections_with_locations(result: ScanResult) -> None:
    text = markdown.render(result)
    assert "### Network structure" in text
    assert "- [ ] **optimizer SGD**: lr=0.01, momentum=0.9 — `net.py:14`" in text
    assert "- [ ] **SGD momentum**: 0.9 — `net.py:14`" in text
    assert "- **neck**: not found" in text


def test_start_here_lists_the_blockers_first(result: ScanResult) -> None:
    text = markdown.render(result)
    assert text.index("## Start here") < text.index("## Readiness") < text.index("## Checklist")
    cause = result.causes[0].id
    assert (f"1. **dynamic shape in the graph**: `x\\[x &gt; 0\\]`, 1 place, first at "
            f"`net.py:11` ([places](#{cause}))") in text


def test_work_by_cause_with_path_line_and_fix(result: ScanResult) -> None:
    text = markdown.render(result)
    assert "## Migration work by cause" in text
    assert (f'- [ ] <a id="{result.causes[0].id}"></a>**MS204 boolean-mask-index** '
            "`x\\[x &gt; 0\\]` (error, runs in graph; 1 place, 1 reached from a forward): "
            "Boolean mask \\| shape depends on data.") in text
    assert "  Fix: Use \\`mindspore.ops.masked\\_fill\\` with a fixed shape." in text
    assert "  At `net.py:11`" in text
    assert "1 finding is suppressed" in text
    # The checklist is not the full finding list: that stays in the HTML and JSON.
    assert "## Findings" not in text


def test_repeated_work_is_one_item_with_its_places_folded() -> None:
    scanned = scan_files({"net.py": SOURCE}, target="cpu")
    one = Finding("MS102", "api-semantics-differ", Category.API_MAPPING, Severity.ERROR,
                  Confidence.HIGH, Location("net.py", 8, 19, 8, 34), "torch.nn.Linear", "m.", "s")
    scanned.findings = [one, *(replace(one, location=Location("net.py", line, 7, line, 20))
                               for line in (14, 11, 12))]
    from msready.analyzer.priorities import prioritise
    prioritise(scanned)
    text = markdown.render(scanned)
    assert text.count("**MS102 api-semantics-differ**") == 1
    assert "(error, runs in host; 4 places)" in text
    assert "<details><summary>4 places</summary>" in text
    assert "`net.py:8`, `net.py:11`, `net.py:12`, `net.py:14`" in text


def test_notebook_locations_name_the_cell() -> None:
    assert markdown.where("nb.ipynb", 4, 2) == "`nb.ipynb[cell 2]:4`"
    assert markdown.where(None, None) == "not found"


def test_escape_neutralises_markdown_and_html() -> None:
    assert markdown.escape("a|b <script> *x* [l](u)") == (
        "a\\|b &lt;script&gt; \\*x\\* \\[l\\](u)")


def test_clean_repository() -> None:
    clean = scan_files({"a.py": "import torch\nx = torch.zeros(2)\n"})
    text = markdown.render(clean)
    assert text.startswith("# MindSpore migration checklist: ")
    assert "No findings." in text
    assert "### Optimizer" in text and "**torch.optim optimizer**: not found" in text
    assert text.endswith("\n") and not text.endswith("\n\n")
