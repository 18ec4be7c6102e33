"""Positions found for the nodes asked about are those of libcst's own code generation,
without the full pass over the module: inside an ``elif``, a class body's fields, and
for tokens, whose text is their value."""

from __future__ import annotations

import libcst as cst
import pytest

from msready.analyzer.checklist_source import text_facts
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.positions import Positions, all_spans
from msready.analyzer.syntax import children
from msready.analyzer.walk import walk_file
from msready.rules.registry import file_rules

SOURCE = """\
import torch

class Config:
    "Settings."
    lr: float = 0.1
    epochs = (3 +
              4)

def f(x, k):
    if x.sum() > 0:
        y = x
    elif (k) > 2 and torch.any(x):
        y = x[x > 0]  # a boolean mask
    elif k:
        y = 'text'
    else:
        y = 1_000
    return y


def g(x, *rest, **options):
    x = x.permute((0, 2, 1)).reshape(( 1, -1 ,), order='C')
    torch.cat([x, x], dim=(0))
    print(*rest, sep=", ", **options)
    return "".join(c if c.isalnum() else "_" for c in (x)), sum((a) for a in rest)
"""


def _parsed() -> Parsed:
    parsed = parse_text(SOURCE)
    assert isinstance(parsed, Parsed)
    walk_file("m.py", parsed, file_rules())
    return parsed


def test_every_node_gets_the_span_code_generation_gives() -> None:
    parsed = _parsed()
    expected = all_spans(parsed.module)
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(parsed.module, ())]
    while stack:
        node, above = stack.pop()
        ancestors = (*above, node)
        if not isinstance(node, cst.Module):
            assert parsed.offsets(node, ancestors) == expected[id(node)], node
        stack.extend((child, ancestors) for child in children(node))
    assert not parsed.positions.full, "a node needed the full pass"


def test_the_checklist_reads_class_fields_without_the_full_pass() -> None:
    parsed = _parsed()
    facts = [(v.name, v.value, v.line) for v in text_facts(parsed, "m.py", "m")]
    assert ("lr", "0.1", 5) in facts
    assert ("epochs", "3 + 4", 6) in facts
    assert not parsed.positions.full, "a fact needed the full pass"


PARTS = """\
import torch

def f(x: torch.Tensor, *rest: int, k: 'torch.Size' = None) -> torch.Tensor:
    if x.dim() > 2:
        y = x
    elif not torch.is_tensor(x):
        y = -x[0, 1:2] + x.sum(dim=( 0, 1 ), keepdim=True) * len(rest)
    y.view(*rest, **{'a': 1})
    a: int = (y.size(0) if k else 3)
    return y, [a]
"""


def test_expressions_in_statements_are_read_from_ast(monkeypatch: pytest.MonkeyPatch) -> None:
    """An expression below a statement, a call or an argument (an ``elif`` test, an
    annotation, a tuple in parentheses, ``*rest``) gets its position from CPython's
    node: nothing is regenerated, and the spans are libcst's."""
    parsed = parse_text(PARTS)
    assert isinstance(parsed, Parsed)
    walk_file("m.py", parsed, [])
    regenerated: list[cst.CSTNode] = []
    monkeypatch.setattr(Positions, "_generate",
                        lambda self, node, *args, **kwargs: regenerated.append(node))
    expected = all_spans(parsed.module)
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(parsed.module, ())]
    asked = 0
    while stack:
        node, above = stack.pop()
        ancestors = (*above, node)
        if isinstance(node, (cst.BaseExpression, cst.Arg)) and not isinstance(
                above[-1], (cst.Param, cst.Import, cst.ImportAlias)):
            # asked the way rules ask: from the statement being visited
            statement = next(a for a in reversed(above)
                             if isinstance(a, (cst.SimpleStatementLine, cst.If,
                                               cst.FunctionDef)))
            found = parsed.offsets(node, above[:above.index(statement) + 1])
            assert found == expected[id(node)], parsed.text[slice(*expected[id(node)])]
            asked += 1
        stack.extend((child, ancestors) for child in children(node))
    assert asked > 40
    assert regenerated == []
