"""The porting-idiom family on a whole small repository.

``tests/fixtures/idioms`` holds a torch training script and model that use every idiom
the family knows, beside a utilities file full of lookalikes (``frame.eval("...")``,
``env.step()``, ``line.split()``, ``pickle``, ``random.seed``) and a MindSpore training
step. Lines that must be reported carry ``# expect: MS6xx``; the test compares the exact
set of (path, line, rule).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from msready.analyzer.result import ScanResult
from msready.analyzer.scan import ScanOptions, scan, scan_files
from msready.rules.testing import fixture_mismatch

FIXTURE = Path(__file__).parent / "fixtures" / "idioms"
FAMILY = "MS6"


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return scan(str(FIXTURE), options=ScanOptions(jobs=1, cache=False, target="cpu"))


def test_exact_idiom_findings(result: ScanResult) -> None:
    unexpected, missing = fixture_mismatch(result.findings, FIXTURE, FAMILY)
    assert unexpected == [], "unexpected findings"
    assert missing == [], "missing findings"


def test_one_finding_per_construct_per_line(result: ScanResult) -> None:
    lines = Counter((f.location.path, f.location.line)
                    for f in result.findings if f.rule.startswith(FAMILY))
    assert [key for key, n in lines.items() if n > 1] == []


def test_symbols_name_the_torch_api(result: ScanResult) -> None:
    symbols = {f.symbol for f in result.findings if f.rule.startswith(FAMILY)}
    assert {"torch.nn.Module.train", "torch.nn.Module.eval", "torch.optim.Optimizer.zero_grad",
            "torch.optim.Optimizer.step", "torch.nn.Module.load_state_dict",
            "torch.nn.Module.register_buffer", "torch.Tensor.cuda",
            "torch.nn.parallel.DistributedDataParallel"} <= symbols


def test_severity_follows_effort(result: ScanResult) -> None:
    by_symbol = {f.symbol: f.severity.value for f in result.findings
                 if f.rule.startswith(FAMILY)}
    assert by_symbol["torch.nn.Module.train"] == "info"  # a rename
    assert by_symbol["torch.Tensor.backward"] == "warning"  # restructures the step
    assert by_symbol["torch.autograd.Function"] == "warning"


def test_no_equivalent_is_an_error() -> None:
    result = scan_files({"x.py": "import torch.fx\n\ndef f(m):\n"
                                 "    return torch.fx.symbolic_trace(m)\n"}, target="cpu")
    found = [f for f in result.findings if f.rule.startswith(FAMILY)]
    assert [(f.rule, f.severity.value) for f in found] == [("MS611", "error")]
    assert "no equivalent" in found[0].message
