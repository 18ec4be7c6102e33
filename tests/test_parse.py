"""Parsing a scanned file: libcst's parser builds the tree without its per-node checks,
which guard hand-built trees, and every other node is still checked."""

from __future__ import annotations

import libcst as cst
import pytest

from msready.analyzer.parse import Parsed, ParseFailure, _parser_built, parse_text

SOURCE = """\
import torch
from . import (layers)

@torch.no_grad()
def step(model, *batches, scale: float = 1.0, **options):
    global seen
    with (torch.autocast("cpu") as ctx, open(path) as f):
        x = yield
    out = [b[1:2, ::3] for b in batches if b is not None]
    return lambda a=1, *r, k, **kw: (a, *r, f"{k!r:>{2}}")
"""


def test_the_tree_is_the_one_libcst_builds_with_its_checks() -> None:
    parsed = parse_text(SOURCE)
    assert isinstance(parsed, Parsed)
    assert parsed.module.deep_equals(cst.parse_module(SOURCE))
    assert parsed.module.code == SOURCE


def test_nodes_built_after_a_parse_are_checked() -> None:
    assert isinstance(parse_text(SOURCE), Parsed)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_a_node_built_while_parsing_has_the_defaults_libcsts_constructor_gives() -> None:
    # The parser's quick constructors take the same arguments, defaults and default
    # factories (``whitespace_after_func``) as the ones libcst's dataclasses wrote.
    with _parser_built():
        quick = cst.Call(cst.Name("f"), args=[cst.Arg(cst.Integer("1"))])
    assert quick.deep_equals(cst.Call(cst.Name("f"), args=[cst.Arg(cst.Integer("1"))]))
    assert cst.Module([]).code_for_node(quick) == "f(1)"


def test_nodes_built_after_a_syntax_error_are_checked() -> None:
    failure = parse_text("def f(:\n    pass\n")
    assert isinstance(failure, ParseFailure)
    assert failure.message.startswith("syntax error")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_line_starts_with_every_kind_of_line_end() -> None:
    from msready.analyzer.parse import _line_starts

    assert _line_starts("") == [0]
    assert _line_starts("a\nbc\n") == [0, 2]
    assert _line_starts("a\nbc") == [0, 2]
    assert _line_starts("\n\n") == [0, 1]
    assert _line_starts("a\r\nb\rc\n") == [0, 3, 5]


def test_bracket_depth_counts_a_stray_closing_bracket_as_nothing() -> None:
    from msready.analyzer.parse import _deepest

    assert _deepest("f(a[1], {2: (3,)})") == 3
    assert _deepest("x = ')'") == 0
    assert _deepest(")))" + "(" * 4) == 4  # the running sum would say 1
    assert _deepest("") == 0
