"""A file rule that raises loses only its own findings for that file: the crash becomes
one finding, the rule is not called again in the file, and the other rules go on."""

from __future__ import annotations

import libcst as cst

from msready.analyzer.findings import Category, Confidence, Severity
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.walk import walk_file
from msready.rules.base import FileRule

SOURCE = "import torch\n\nx = torch.zeros(3)\ny = torch.ones(3)\nz = torch.eye(3)\n"


class EveryCall(FileRule):
    """Reports every call."""

    id = "MS990"
    name = "every-call"
    category = Category.IDIOM
    severity = Severity.INFO
    confidence = Confidence.HIGH

    def visit_Call(self, node: cst.Call) -> None:
        self.report(node, "A call.", "None.", symbol="call")


class Crashing(EveryCall):
    """Fails on the second call it sees."""

    id = "MS991"
    name = "crashing"
    seen = 0

    def visit_Call(self, node: cst.Call) -> None:
        self.seen += 1
        if self.seen == 2:
            raise ValueError("broken rule")
        super().visit_Call(node)

    def leave_Call(self, node: cst.Call) -> None:
        if self.seen >= 2:
            raise AssertionError("a crashed rule is called again")


def test_a_crashing_rule_loses_only_its_own_findings() -> None:
    parsed = parse_text(SOURCE)
    assert isinstance(parsed, Parsed)
    result = walk_file("m.py", parsed, [Crashing, EveryCall])
    rows = sorted((f.rule, f.location.line) for f in result.findings)
    # Crashing reported line 3, then crashed on line 4, and was not called after that.
    assert rows == [("MS001", 4), ("MS990", 3), ("MS990", 4), ("MS990", 5), ("MS991", 3)]
    crash = next(f for f in result.findings if f.rule == "MS001")
    assert crash.symbol == "MS991" and "ValueError: broken rule" in crash.message
