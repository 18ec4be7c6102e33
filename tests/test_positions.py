"""Positions found for the nodes asked about are those of libcst's own code generation,
without the full pass over the module: inside an ``elif``, a class body's fields, and
for tokens, whose text is their value."""

from __future__ import annotations

import libcst as cst

from msready.analyzer.checklist_source import text_facts
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.positions import all_spans
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
