"""Calls are handed only to the rules whose declared :class:`Calls` name them; a rule
without a declaration sees every call. The declarations change no finding: every rule
example and fixture gives the same findings with every call handed to every rule."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import libcst as cst
import pytest

from msready.analyzer.facts import FileResult
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.walk import FileWalker, walk_file
from msready.rules.base import Calls, FileContext, FileRule
from msready.rules.registry import all_rules, file_rules

FIXTURES = Path(__file__).parent / "fixtures"


def _walk(source: str, rules: list[type[FileRule]], path: str = "example.py") -> FileResult:
    parsed = parse_text(source)
    assert isinstance(parsed, Parsed)
    return walk_file(path, parsed, rules)


class _Seen(FileRule):
    seen: ClassVar[list[str]] = []

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        self.seen.append(cst.Module([]).code_for_node(node.func))


class _Zeros(_Seen):
    seen: ClassVar[list[str]] = []

    @classmethod
    def calls(cls) -> Calls:
        return Calls(apis=frozenset({"zeros"}))


class _Cuda(_Seen):
    seen: ClassVar[list[str]] = []

    @classmethod
    def calls(cls) -> Calls:
        return Calls(methods=frozenset({"cuda"}), prefixes=("numpy.",), starred=True)


SOURCE = """\
import numpy as np
import torch

def f(x, *rest):
    y = torch.zeros(3) + x.zeros() + np.ones(2)
    print(len(rest), *rest)
    return y.cuda(), torch.nn.functional.relu(y)
"""


def test_a_call_reaches_the_rules_that_name_it() -> None:
    for rule in (_Seen, _Zeros, _Cuda):
        rule.seen = []
    _walk(SOURCE, [_Seen, _Zeros, _Cuda])
    assert _Seen.seen == ["torch.zeros", "x.zeros", "np.ones", "print", "len", "y.cuda",
                          "torch.nn.functional.relu"]
    assert _Zeros.seen == ["torch.zeros"]  # x.zeros is no tensor method call here
    assert _Cuda.seen == ["np.ones", "print", "y.cuda"]


def _examples() -> Iterator[tuple[str, str]]:
    for rule in all_rules():
        for kind in ("VALID", "INVALID"):
            for i, example in enumerate(getattr(rule, kind)):
                files = dict(example) if isinstance(example, Mapping) else {"example.py": example}
                for path, source in files.items():
                    yield f"{rule.id}-{kind}-{i}-{path}", source
    for fixture in sorted(FIXTURES.rglob("*.py")):
        yield str(fixture.relative_to(FIXTURES)), fixture.read_text(encoding="utf-8")


def _findings(result: FileResult) -> list[object]:
    return [*result.findings, *result.pending]


def test_declarations_change_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = file_rules()
    cases = list(_examples())
    declared = [_findings(_walk(source, rules)) for _, source in cases]
    monkeypatch.setattr(FileWalker, "declared_calls", False)
    for (name, source), expected in zip(cases, declared, strict=True):
        assert _findings(_walk(source, rules)) == expected, name


def test_a_rule_set_is_planned_once_and_its_choices_are_kept() -> None:
    from msready.analyzer.walk import _dispatch_of

    rules: list[type[FileRule]] = [_Seen, _Zeros, _Cuda]
    plan = _dispatch_of(rules, True)
    assert _dispatch_of(list(rules), True) is plan  # every file of a scan shares it
    assert _dispatch_of(rules, False) is not plan
    for _ in range(2):  # the second walk takes every choice from the plan's memo
        for rule in rules:
            rule.seen = []  # type: ignore[attr-defined]
        _walk(SOURCE, rules)
        assert _Zeros.seen == ["torch.zeros"]
        assert _Cuda.seen == ["np.ones", "print", "y.cuda"]
    assert plan.calls.chosen("torch.zeros", None, False) == (0, 1)
    assert plan.calls.chosen(None, "cuda", False) == (0, 2)
    assert plan.calls.chosen("builtins.print", None, True) == (0, 2)


class _Numbers(FileRule):
    seen: ClassVar[list[str]] = []

    def visit_Integer(self, node: cst.Integer) -> None:
        self.seen.append(node.value)

    def leave_SimpleString(self, node: cst.SimpleString) -> None:
        self.seen.append(node.value)


def test_leaves_a_rule_handles_are_walked_and_the_others_skipped() -> None:
    from msready.analyzer.walk import _INERT, _INNER, _LEAF, _dispatch_of

    _Numbers.seen = []
    _walk("x = f(1, 'a') + [2, (3, 'b')]\n", [_Numbers])
    assert _Numbers.seen == ["1", "'a'", "2", "3", "'b'"]
    plan = _dispatch_of([_Numbers], True)
    assert plan.kind(cst.Integer) == _LEAF  # a handler reads it
    assert plan.kind(cst.Name) == _LEAF  # the walk resolves names
    assert plan.kind(cst.Float) == _INERT  # nothing does
    assert plan.kind(cst.Call) == _INNER
