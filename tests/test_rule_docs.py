"""docs/rules.md is generated from the rules; it must match them exactly."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from msready.analyzer.findings import Category, Confidence, Scope, Severity
from msready.rules.base import FileRule
from msready.rules.docs import docstring_parts, render_rule_docs, rule_anchor
from msready.rules.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "rules.md"


def _tool() -> ModuleType:
    path = ROOT / "tools" / "gen_rule_docs.py"
    spec = importlib.util.spec_from_file_location("gen_rule_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rules_page_is_up_to_date() -> None:
    assert PAGE.is_file(), "docs/rules.md is missing: run `python tools/gen_rule_docs.py`"
    assert PAGE.read_text(encoding="utf-8") == _tool().render_rule_docs(), (
        "docs/rules.md is stale: run `python tools/gen_rule_docs.py`")


def test_every_rule_has_an_anchor_a_section_and_its_examples() -> None:
    page = render_rule_docs()
    for rule in all_rules():
        anchor = f'<a id="{rule_anchor(rule.id)}"></a>'
        assert page.count(anchor) == 1, rule.id
        assert f"[{rule.id}](#{rule.id.lower()})" in page
        section = page.split(anchor, 1)[1].split('<a id="', 1)[0]
        assert f"### {rule.id} `{rule.name}`" in section
        assert f"| {rule.category.value} | {rule.severity.value} |" in section
        for title in ("What it flags", "Why MindSpore cares", "How to migrate"):
            assert f"**{title}.**" in section, (rule.id, title)
        for example in (*rule.INVALID, *rule.VALID):
            sources = example.values() if isinstance(example, dict) else [example]
            for source in sources:
                assert source.rstrip("\n") in section or not source.strip(), rule.id


def test_engine_findings_have_anchors_for_report_links() -> None:
    page = render_rule_docs()
    assert '<a id="ms000"></a>' in page and '<a id="ms001"></a>' in page


class _Sample(FileRule):
    """Flags the sample construct
    over two lines.

    MindSpore cares.

    Migrate like this.

    A fourth note."""

    id = "MS699"
    name = "sample"
    category = Category.IDIOM
    severity = Severity.INFO
    confidence = Confidence.LOW
    scope = Scope.FORWARD
    INVALID = ({"pkg/a.py": "x = '```'\n", "pkg/b.py": "y = 1\n", "pkg/__init__.py": ""},)
    VALID = ("z = 2\n",)


def test_render_unwraps_paragraphs_and_fences_examples_safely() -> None:
    assert docstring_parts(_Sample)[0] == "Flags the sample construct over two lines."
    page = render_rule_docs([_Sample])
    assert "**What it flags.** Flags the sample construct over two lines." in page
    assert "\nA fourth note.\n" in page
    assert "*One example of 3 files:*\n\n`pkg/a.py`:\n\n````python\nx = '```'\n````" in page
    assert "`pkg/__init__.py`: (empty)" in page
    assert "```python\nz = 2\n```" in page
    assert "| idiom | info | low | forward |" in page
    assert "## Porting idioms (6xx)" in page


def test_check_mode_reports_a_stale_page(tmp_path: Path) -> None:
    tool = _tool()
    tool.ROOT = tmp_path
    assert tool.main(["--check"]) == 1  # no page yet
    assert tool.main([]) == 0
    page = tmp_path / "docs" / "rules.md"
    assert page.read_text() == render_rule_docs()
    assert tool.main(["--check"]) == 0
    page.write_text("# old\n")
    assert tool.main(["--check"]) == 1
    assert page.read_text() == "# old\n"  # --check writes nothing
