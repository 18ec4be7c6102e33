"""Whole-file fixtures with inline expectations, as the rule tests use them.

A fixture line that must be reported carries ``# expect: MS201`` (several ids separated
by commas); the expectation set is compared with what a scan reports, line for line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from msready.analyzer.findings import Finding

_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def expected_findings(root: Path, prefixes: str | tuple[str, ...] = "MS"
                      ) -> set[tuple[str, int, str]]:
    """(path, line, rule) for every ``# expect:`` id starting with ``prefixes`` in the
    ``.py`` files under ``root``."""
    found: set[tuple[str, int, str]] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _EXPECT.search(line)
            if match:
                found.update((rel, number, rule.strip()) for rule in match.group(1).split(",")
                             if rule.strip().startswith(prefixes))
    return found


def fixture_mismatch(findings: Iterable[Finding], root: Path,
                     prefixes: str | tuple[str, ...] = "MS"
                     ) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """(unexpected, missing): reported findings of ``prefixes`` no ``# expect:`` asks for,
    and expectations nothing reported. Both are empty when the fixture holds."""
    want = expected_findings(root, prefixes)
    if not want:
        raise AssertionError(f"{root} has no '# expect:' comments for {prefixes}")
    got = {(f.location.path, f.location.line, f.rule) for f in findings
           if f.rule.startswith(prefixes)}
    return sorted(got - want), sorted(want - got)
