"""A finding keeps its identity when code moves: one fingerprint function serves
``--baseline`` and SARIF ``partialFingerprints``, built from the rule, the file, the symbol
and the enclosing function, and messages name no line numbers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from msready.analyzer.findings import fingerprint_key
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import ScanOptions, scan
from msready.cli import main
from msready.reports import json_report, sarif

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tinynet"
SECOND_ORDER = Path(__file__).resolve().parent / "fixtures" / "second_order"


def _copy(tmp_path: Path, source: Path) -> Path:
    dest = tmp_path / source.name
    shutil.copytree(source, dest)
    return dest


def _scan(root: Path) -> ScanResult:
    return scan(str(root), options=ScanOptions(jobs=1, cache=False, target="cpu"))


def _push_down(root: Path) -> None:
    """Insert lines at the top of every Python file: every finding moves down."""
    for path in sorted(root.rglob("*.py")):
        path.write_text("# moved\n\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")


def _sarif_prints(result: ScanResult) -> list[str]:
    log = json.loads(sarif.render(result))
    return sorted(r["partialFingerprints"]["msready/v2"] for r in log["runs"][0]["results"])


def _json_prints(result: ScanResult) -> list[str]:
    data = json.loads(json_report.render(result))
    return sorted(f["fingerprint"] for f in data["findings"] + data["suppressed"])


def test_inserting_lines_above_code_changes_no_fingerprint(tmp_path: Path) -> None:
    repo = _copy(tmp_path, SECOND_ORDER)
    before = _scan(repo)
    _push_down(repo)
    after = _scan(repo)
    assert len(before.findings) > 5
    assert [f.location.line + 3 for f in before.findings] == [
        f.location.line for f in after.findings]
    assert _json_prints(before) == _json_prints(after)
    assert _sarif_prints(before) == _sarif_prints(after)
    assert _json_prints(before) == _sarif_prints(before)  # one function serves both
    assert len(set(_json_prints(before))) == len(_json_prints(before))


def test_messages_name_no_line_numbers() -> None:
    for root in (SECOND_ORDER, EXAMPLES):
        for finding in _scan(root).findings:
            assert not re.search(r"\bline \d|\.py:\d|\bcell \d", finding.message), finding.message
            assert str(finding.location.line) not in fingerprint_key(finding).split("\0")


def test_baseline_ignores_moved_code_and_reports_new_findings(tmp_path: Path) -> None:
    repo = _copy(tmp_path, EXAMPLES)
    old = tmp_path / "old"
    assert main(["scan", str(repo), "-o", str(old), "--format", "json", "--skeletons", "off",
                 "--no-cache", "-q"]) == 0
    _push_down(repo)
    baseline = str(old / "msready.json")
    args = ["scan", str(repo), "-o", str(tmp_path / "new"), "--format", "json",
            "--skeletons", "off", "--no-cache", "-q", "--baseline", baseline]
    assert main(args) == 0
    extra = repo / "tinynet" / "extra.py"
    extra.write_text("import torch\n\nnorm = torch.nn.RMSNorm(16)\n", encoding="utf-8")
    assert main(args) == 1
