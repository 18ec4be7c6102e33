"""``syntax.children`` reads each field as its declared type says; it gives the same
children as looking at every value of every field, in the order they are written, without
whitespace and punctuation. ``find_all`` and ``read_with`` walk them instead of libcst's
visitors, which rebuild the tree, and find what those find."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m

from msready.analyzer.syntax import (
    _child_fields,
    children,
    descendants,
    find_all,
    forget_searches,
    read_with,
)

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


def _source_order(module: cst.Module) -> None:
    for node in descendants(module):
        ours = children(node)
        # libcst's own ``children`` is in source order, with whitespace and punctuation
        written = [c for c in node.children if any(c is o for o in ours)]
        assert [id(c) for c in written] == [id(c) for c in ours], type(node)
        assert len(written) == len(ours), type(node)


def test_children_come_in_the_order_they_are_written() -> None:
    _source_order(cst.parse_module(SOURCE))
    for path in sorted(FIXTURES.rglob("*.py")):
        _source_order(cst.parse_module(path.read_bytes()))
    call = cst.parse_expression("f(x, key=value)")
    assert isinstance(call, cst.Call)
    assert [type(c).__name__ for c in children(call.args[1])] == ["Name", "Name"]
    assert children(call.args[1])[0] is call.args[1].keyword


def test_star_parameters_are_children() -> None:
    fn = cst.parse_statement("def f(a, *args, b, **kwargs): pass")
    assert isinstance(fn, cst.FunctionDef)
    names = [p.name.value for p in children(fn.params) if isinstance(p, cst.Param)]
    assert names == ["a", "args", "b", "kwargs"]


MATCHERS = [m.Name(), m.Call(), m.Param(), m.Name("a") | m.Attribute(), m.AssignTarget(),
            m.Call(func=m.Name("open")), m.Comparison() | m.CompFor(), m.Arg(keyword=m.Name())]


def test_find_all_finds_what_findall_finds_in_the_same_order() -> None:
    # each search after the first reads the module's index of nodes by type; a part of
    # the module has its own, and an index let go is built again
    module = cst.parse_module(SOURCE)
    parts = [module, *module.body, module]
    for node in parts:
        for matcher in MATCHERS:
            assert find_all(node, matcher) == m.findall(node, matcher), matcher
        forget_searches()


class _Reads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.append(node.value)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False  # its names are not read

    def leave_Return(self, node: cst.Return) -> None:
        self.seen.append("<return>")


def test_read_with_runs_a_visitor_as_libcst_does() -> None:
    module = cst.parse_module(SOURCE)
    ours, libcsts = _Reads(), _Reads()
    read_with(module, ours)
    module.visit(libcsts)
    assert ours.seen == libcsts.seen
    small = _Reads()
    read_with(cst.parse_module("def f(a):\n    return (lambda hidden: hidden)(a)\n"), small)
    assert small.seen == ["f", "a", "a", "<return>"]
