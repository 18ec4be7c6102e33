"""The layers stay apart: no jinja2 under ``analyzer/`` and no libcst under ``reports/``.

Imports are read with :mod:`ast` from every module in the folder, including imports
inside functions and ``TYPE_CHECKING`` blocks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"analyzer": "jinja2", "reports": "libcst"}


def imported_modules(source: str) -> set[str]:
    """Every module an ``import`` or ``from ... import`` statement names (absolute ones)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize(("folder", "banned"), sorted(FORBIDDEN.items()))
def test_folder_does_not_import(folder: str, banned: str) -> None:
    modules = _modules(folder)
    assert modules, f"no modules found under {folder}/"
    offenders = [
        str(path.relative_to(ROOT))
        for path in modules
        if any(name == banned or name.startswith(banned + ".")
               for name in imported_modules(path.read_text(encoding="utf-8")))
    ]
    assert offenders == [], f"{banned} imported under {folder}/: {offenders}"


def test_import_reader_sees_every_form() -> None:
    source = (
        "import os\n"
        "def f():\n    import jinja2.sandbox\n"
        "if TYPE_CHECKING:\n    from libcst import Module\n"
        "from . import sibling\n"
    )
    assert imported_modules(source) == {"os", "jinja2.sandbox", "libcst"}


def test_html_reporter_uses_jinja2_and_analyzer_does_not() -> None:
    # The check above would pass trivially if it read nothing: the HTML reporter is the
    # one module that must import jinja2.
    assert "jinja2" in imported_modules((ROOT / "reports" / "html.py").read_text())
