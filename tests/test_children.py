"""``syntax.children`` reads each field as its declared type says; it gives the same
children as looking at every value of every field."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from msready.analyzer.syntax import _child_fields, children

FIXTURES = Path(__file__).parent / "fixtures"
SOURCE = """\
@dec(1)
async def f(a, /, b: int = 2, *args, c=3, **kw) -> "x":
    global g
    x = [i async for i in y if i if not i] + {**d, 'k': v} + (lambda q=1: q)(2)
    y: list[int] = a[1:2, ::3, ...] if b else f'{a!r:>{b}}' 'tail'
    from . import (m as n, o)
    with open(p) as h, q: del h[0]
    try:
        pass
    except* E as e:
        raise
    elif_ = 1 if 2 else 3
    match x:
        case [1, *rest] | {'a': 2, **kw2} if rest: pass
    return (yield from z)
class C(B, metaclass=M): pass
if a: pass
elif b: pass
else: pass
"""


def _every_value(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        for item in value if isinstance(value, (tuple, list)) else [value]:
            if isinstance(item, cst.CSTNode):
                out.append(item)
    return out


def _check(module: cst.Module) -> int:
    count = 0
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        expected = _every_value(node)
        found = children(node)
        assert len(found) == len(expected), type(node)
        assert all(a is b for a, b in zip(found, expected, strict=True)), type(node)
        stack.extend(expected)
        count += 1
    return count


def test_children_are_those_of_every_field_value() -> None:
    assert _check(cst.parse_module(SOURCE)) > 100
    for path in sorted(FIXTURES.rglob("*.py")):
        _check(cst.parse_module(path.read_bytes()))
