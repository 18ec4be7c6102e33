"""The whole result of a scan, cached: what a warm scan of unchanged files reuses.

A scan's findings, API inventory, checklist, start-here list and score depend on every
file, the MindSpore target, the scanned repository's ``[tool.msready]`` table and the
YAML / JSON files its code loads. When none of those changed (the key below covers the
first three; the config files are read again and compared), a warm scan takes all of it
from one cache entry: it neither loads every file's facts nor rebuilds the repository
model, the value analysis, the checklist or the score. The facts and the model are still
there when something asks for them (generating Cells, a report that needs a file's
suppression comments): :class:`~msready.analyzer.result.ScanResult` loads them then.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from msready.analyzer.configvalues import ConfigValue, read_config_files
from msready.analyzer.findings import Finding
from msready.analyzer.priorities import rule_docs
from msready.analyzer.result import (
    ApiUse,
    Blocker,
    Cause,
    ChecklistItem,
    FileWork,
    ScanResult,
    Score,
)


@dataclass(frozen=True, slots=True)
class WholeScan:
    """The parts of a :class:`ScanResult` computed from all files together."""

    findings: list[Finding]
    suppressed: list[Finding]
    apis: list[ApiUse]
    score: Score | None
    checklist: list[ChecklistItem]
    causes: list[Cause]
    blockers: list[Blocker]
    files_work: list[FileWork]
    config_files: list[ConfigValue]
    config_names: list[ConfigValue]  # the config files the code names (kind ``file``)
    warnings: list[str]  # those the whole-repository steps added
    files_scanned: int
    files_failed: int
    lines: int

    @staticmethod
    def of(result: ScanResult, warnings_before: int) -> WholeScan:
        """What to keep of a finished result (``warnings_before``: how many of its
        warnings were there before the whole-repository steps ran)."""
        names = [v for r in result.files for v in r.source_facts if v.kind == "file"]
        return WholeScan(result.findings, result.suppressed, result.apis, result.score,
                         result.checklist, result.causes, result.blockers, result.files_work,
                         result.config_files, names, result.warnings[warnings_before:],
                         result.source.files_scanned, result.source.files_failed,
                         result.source.lines)

    def still_valid(self, root: Path) -> bool:
        """True when the config files the code loads still hold what they held."""
        return read_config_files(root, self.config_names) == self.config_files

    def fill(self, result: ScanResult) -> None:
        """Put the kept parts into a result whose facts are loaded on demand."""
        result.findings = self.findings
        result.suppressed = self.suppressed
        result.apis = self.apis
        result.score = self.score
        result.checklist = self.checklist
        result.causes = self.causes
        result.blockers = self.blockers
        result.files_work = self.files_work
        result.rule_docs = rule_docs(c.rule for c in self.causes)  # from the rules' own text
        result.config_files = self.config_files
        result.warnings.extend(self.warnings)


def whole_key(files_key: str, target: str, root: Path) -> str:
    """The cache key of a whole scan: every file's key, the target and the scanned
    repository's pyproject.toml (its ``[tool.msready]`` table)."""
    digest = hashlib.sha256(f"whole\0{target}\0{files_key}\0".encode())
    try:
        digest.update((root / "pyproject.toml").read_bytes())
    except OSError:
        digest.update(b"\0no pyproject.toml")
    return "whole-" + digest.hexdigest()
