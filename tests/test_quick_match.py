"""A compiled matcher answers exactly what ``libcst.matchers.matches`` answers."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
import pytest

from msready.analyzer.quick_match import compiled
from msready.analyzer.syntax import descendants, find_all

SOURCE = '''
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, dim, act=None, *layers, **options):
        super().__init__()
        self.fc = nn.Linear(dim, dim * 2, bias=False)
        self.norm = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList([make(dim) for _ in range(4)])
        a, b = options.get("a"), options["b"]
        x: int = 3
        for block in layers:
            self.add_module(block.name, block)

    def forward(self, x, *rest):
        y = self.fc(x) if x is not None else x
        return self.norm(y).view(-1, 2)
'''

MATCHERS = {
    "a call of a name": m.Call(func=m.Name("make")),
    "a call of any attribute": m.Call(func=m.Attribute()),
    "an attribute of self": m.Attribute(value=m.Name("self")),
    "self.<one of two>": m.Attribute(value=m.Name("self"), attr=m.Name("fc") | m.Name("norm")),
    "a keyword argument": m.Arg(keyword=m.Name("bias")),
    "no keyword": m.Arg(keyword=None),
    "a call whose second argument is block": m.Call(args=[m.DoNotCare(), m.Arg(m.Name("block")),
                                                        m.ZeroOrMore()]),
    "dim anywhere in the arguments": m.Call(args=[m.ZeroOrMore(), m.Arg(m.Name("dim")),
                                                  m.ZeroOrMore()]),
    "exactly one argument": m.Call(args=[m.Arg()]),
    "at least two arguments": m.Call(args=[m.AtLeastN(n=2)]),
    "at least one integer argument": m.Call(args=[m.ZeroOrMore(), m.AtLeastN(
        m.Arg(m.Integer()), n=1), m.ZeroOrMore()]),
    "one target, a name": m.Assign(targets=[m.AssignTarget(m.Name())]),
    "a tuple target": m.Assign(targets=[m.AssignTarget(m.Tuple())]),
    "a test by function": m.Name(m.MatchIfTrue(lambda v: v.startswith("op"))),
    "a for or comprehension": m.For() | m.CompFor(),
    "a loop over a name": m.For(target=m.Name(), iter=m.Name("layers")),
    "a name or attribute": m.Name() | m.Attribute(),
    "an annotated assignment": m.AnnAssign(),
    "a star parameter": m.Param(star="*"),
    "both": m.AllOf(m.Call(), m.Call(func=m.Attribute(attr=m.Name("view")))),
    "a captured node (libcst's to judge)": m.Call(func=m.SaveMatchedNode(m.Name(), "f")),
    "not a name (libcst's to judge)": m.Call(func=m.DoesNotMatch(m.Name())),
    "at most one argument (libcst's to judge)": m.Call(args=[m.AtMostN(n=1)]),
}


@pytest.mark.parametrize("name", sorted(MATCHERS))
def test_a_compiled_matcher_finds_what_libcst_finds(name: str) -> None:
    matcher = MATCHERS[name]
    test = compiled(matcher)
    nodes = list(descendants(cst.parse_module(SOURCE)))
    assert [n for n in nodes if test(n)] == [n for n in nodes if m.matches(n, matcher)]


def test_find_all_lists_the_matches_in_source_order() -> None:
    module = cst.parse_module(SOURCE)
    found = find_all(module, m.Call(args=[m.ZeroOrMore(), m.Arg(m.Name("dim")),
                                          m.ZeroOrMore()]))
    assert [cst.Module([]).code_for_node(c) for c in found] == [
        "nn.Linear(dim, dim * 2, bias=False)", "nn.LayerNorm(dim)", "make(dim)"]


def test_text_against_a_list_is_left_to_libcst() -> None:
    odd = m.Name(value=[m.DoNotCare()])  # libcst reads the text as a list of characters
    assert compiled(odd)(cst.Name("x")) == m.matches(cst.Name("x"), odd)
    assert compiled(odd)(cst.Name("xy")) == m.matches(cst.Name("xy"), odd)
