"""Constant arguments: ``literal_of`` reads the value of a constant expression once per
text when it cannot change (a tuple, a negative number), and builds a mutable one anew."""

from __future__ import annotations

import libcst as cst

from msready.analyzer.syntax import literal_of


def _literal(text: str) -> tuple[object, bool]:
    return literal_of(cst.parse_expression(text), text)


def test_constant_expressions_have_their_values() -> None:
    assert _literal("-1") == (-1, True)
    assert _literal("(3, 3)") == ((3, 3), True)
    assert _literal("'a' 'b'") == ("ab", True)
    assert _literal("(1, x)") == (None, False)
    assert _literal("True") == (True, True)


def test_an_immutable_value_is_shared_and_a_mutable_one_is_not() -> None:
    first, second = _literal("(1, 2.5)"), _literal("(1, 2.5)")
    assert first == second and first[0] is second[0]
    one, other = _literal("[1, 2]"), _literal("[1, 2]")
    assert one == other == ([1, 2], True)
    assert one[0] is not other[0]
    nested, again = _literal("([1], 2)"), _literal("([1], 2)")
    assert nested[0] is not again[0]
