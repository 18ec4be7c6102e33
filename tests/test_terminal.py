"""The summary printed at the end of a scan: the start-here blockers first, then one line
per cause with its count of places, most urgent first."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.priorities import prioritise
from msready.analyzer.scan import scan_files
from msready.reports.terminal import print_summary

SOURCE = '''\
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        keep = torch.nonzero(x)
        return x[keep]


def host(x):
    return x.cuda()
'''


def _summary() -> str:
    result = scan_files({"net.py": SOURCE}, target="cpu")
    device = Finding("MS601", "device-handling", Category.IDIOM, Severity.INFO, Confidence.HIGH,
                     Location("net.py", 12, 12, 12, 20), "torch.Tensor.cuda", "m.", "s.",
                     function="net.host")
    result.findings = [*result.findings, device,
                       replace(device, location=Location("net.py", 11, 1, 11, 5)),
                       replace(device, location=Location("net.py", 10, 1, 10, 5))]
    prioritise(result)
    console = Console(record=True, width=300, color_system=None)
    print_summary(result, console, ["out/report.html"])
    return console.export_text()


def test_start_here_comes_before_the_causes() -> None:
    text = _summary()
    assert "start here (the port's blockers, most costly first):" in text
    assert "1. dynamic shape in the graph: " in text
    assert text.index("start here") < text.index("causes; the most urgent")


def test_one_line_per_cause_with_its_count() -> None:
    text = _summary()
    lines = [ln for ln in text.splitlines() if "MS601" in ln]
    # The scan's own finding on x.cuda() and the three added: one cause, four places.
    assert len(lines) == 1 and "torch.Tensor.cuda x4 net.py:10:1" in lines[0]
    dynamic = text.index("MS201 torch.nonzero x1 (1 in the graph)")
    assert dynamic < text.index("MS601")  # graph errors before host notes
