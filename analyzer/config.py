"""``[tool.msready]`` in the scanned repository's pyproject.toml, and inline ignores."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from msready.analyzer.findings import Finding

KNOWN_KEYS = {
    "disable": "rule ids, rule names or categories to turn off",
    "exclude": "glob patterns of repository paths not to scan",
    "target": "default backend: ascend, gpu or cpu",
    "fail-under": "default --fail-under score",
}


@dataclass(slots=True)
class Config:
    """The scanned repository's own settings for msready."""

    disable: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    target: str | None = None
    fail_under: float | None = None
    warnings: list[str] = field(default_factory=list)

    def excluded(self, rel_path: str) -> bool:
        """True when a repository path matches an ``exclude`` pattern."""
        return any(fnmatch.fnmatch(rel_path, p) or rel_path.startswith(p.rstrip("/") + "/")
                   for p in self.exclude)

    def disabled(self, finding: Finding) -> bool:
        """True when the finding's rule, rule name or category is disabled."""
        return bool(self.disable & {finding.rule, finding.rule_name, finding.category.value})


def load_config(root: Path) -> Config:
    """Read ``[tool.msready]`` from ``root/pyproject.toml``; problems become warnings."""
    path = root / "pyproject.toml"
    config = Config()
    if not path.is_file():
        return config
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        config.warnings.append(f"pyproject.toml: cannot read it ({exc}); [tool.msready] ignored")
        return config
    table = data.get("tool", {}).get("msready", {})
    if not isinstance(table, dict):
        config.warnings.append("pyproject.toml: [tool.msready] is not a table; ignored")
        return config
    for key in table:
        if key not in KNOWN_KEYS:
            known = ", ".join(KNOWN_KEYS)
            config.warnings.append(
                f"pyproject.toml: unknown key tool.msready.{key} (known: {known})")
    disable = table.get("disable", [])
    if isinstance(disable, list) and all(isinstance(x, str) for x in disable):
        config.disable = frozenset(disable)
    else:
        config.warnings.append("pyproject.toml: tool.msready.disable must be a list of strings")
    exclude = table.get("exclude", [])
    if isinstance(exclude, list) and all(isinstance(x, str) for x in exclude):
        config.exclude = tuple(exclude)
    else:
        config.warnings.append("pyproject.toml: tool.msready.exclude must be a list of strings")
    target = table.get("target")
    if target is not None:
        if target in ("ascend", "gpu", "cpu"):
            config.target = target
        else:
            config.warnings.append(f"pyproject.toml: tool.msready.target {target!r} is not "
                                   "ascend, gpu or cpu")
    fail_under = table.get("fail-under")
    if fail_under is not None:
        if isinstance(fail_under, (int, float)) and not isinstance(fail_under, bool):
            config.fail_under = float(fail_under)
        else:
            config.warnings.append("pyproject.toml: tool.msready.fail-under must be a number")
    return config


def suppressed_by_comment(finding: Finding,
                          suppressions: dict[tuple[int | None, int], tuple[str, ...]]) -> bool:
    """True when a ``# msready: ignore[...]`` comment on the finding's line covers it."""
    loc = finding.location
    for line in {loc.line, loc.end_line}:
        tokens = suppressions.get((loc.cell, line))
        if tokens and ("*" in tokens or finding.rule in tokens or finding.rule_name in tokens
                       or finding.category.value in tokens):
            return True
    return False
