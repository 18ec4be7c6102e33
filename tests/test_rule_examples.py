"""Every rule's VALID and INVALID examples, run through a real scan.

An INVALID example must produce at least one finding of its rule; a VALID example none.
The meta-tests fail a rule without examples, without the three-part docstring, or whose
id or name is taken by another rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from msready.analyzer.findings import Category
from msready.analyzer.scan import scan_files
from msready.rules.base import Example, Rule
from msready.rules.registry import all_rules, load_errors

RULES = all_rules()
ID_BLOCKS = {
    Category.API_MAPPING: "1",
    Category.DYNAMIC_SHAPE: "2",
    Category.SPARSE: "3",
    Category.SECOND_ORDER: "4",
    Category.GRAPH_SYNTAX: "5",
    Category.IDIOM: "6",
}


def _files(example: Example) -> dict[str, str]:
    if isinstance(example, Mapping):
        return dict(example)
    return {"example.py": example}


def _cases(kind: str) -> list[object]:
    cases = []
    for rule in RULES:
        for i, example in enumerate(getattr(rule, kind)):
            cases.append(pytest.param(rule, example, id=f"{rule.id}-{rule.name}-{i}"))
    return cases


def _target(rule: type[Rule]) -> str:
    return str(getattr(rule, "EXAMPLE_TARGET", "cpu"))


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_is_reported(rule: type[Rule], example: Example) -> None:
    result = scan_files(_files(example), target=_target(rule))
    assert any(f.rule == rule.id for f in result.findings), (
        f"{rule.id} {rule.name} did not report:\n{example}"
    )


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_is_quiet(rule: type[Rule], example: Example) -> None:
    result = scan_files(_files(example), target=_target(rule))
    hits = [f for f in result.findings if f.rule == rule.id]
    assert not hits, f"{rule.id} {rule.name} reported {hits[0].message!r} on:\n{example}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.id}-{r.name}")
def test_rule_is_documented_by_examples(rule: type[Rule]) -> None:
    assert rule.INVALID, f"{rule.id} has no INVALID examples"
    assert rule.VALID, f"{rule.id} has no VALID examples"
    doc = rule.__doc__ or ""
    assert len([p for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]) >= 3, (
        f"{rule.id} docstring needs three parts: what it flags, why MindSpore cares, how to migrate"
    )
    assert re.fullmatch(r"MS\d{3}", rule.id)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.id[2] == ID_BLOCKS[rule.category], f"{rule.id} is outside its family's id block"


def test_every_rule_module_loads() -> None:
    assert not load_errors()


def test_rule_ids_and_names_are_unique() -> None:
    ids = [r.id for r in RULES]
    names = [r.name for r in RULES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
