"""libcst matchers turned into plain Python tests, for searches that try one matcher on
many nodes.

``libcst.matchers.matches`` reads the matcher's dataclass fields again for every node it
tries, compares every field (the ``DoNotCare`` ones too) and builds a dictionary of
captures along the way. :func:`compiled` reads a matcher once and returns a function
that answers the same question with only the tests the matcher asks for. It handles the
matchers msready writes: node matchers with fields, ``OneOf`` / ``TypeOf`` / ``AllOf``,
``MatchIfTrue``, literal strings, booleans and None, and sequences with ``DoNotCare`` and
``ZeroOrMore`` / ``AtLeastN`` in them. For anything else (captures, metadata, inverted
matchers, ``AtMostN``) it hands the node to libcst, so the answer is always libcst's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst
import libcst.matchers as m

Test = Callable[[Any], bool]


class _Unhandled(Exception):
    """A matcher (or, at match time, a value) libcst must judge itself."""


def compiled(matcher: Any) -> Test:
    """A function of one node that is True exactly when ``m.matches(node, matcher)``."""
    try:
        quick = _node_test(matcher)
    except _Unhandled:
        return lambda node: m.matches(node, matcher)

    def test(node: Any) -> bool:
        try:
            return quick(node)
        except _Unhandled:
            return m.matches(node, matcher)

    return test


def _node_test(matcher: Any) -> Test:
    """The test of a node against a matcher in a node's place (libcst's ``_matches``)."""
    if isinstance(matcher, (m.OneOf, m.TypeOf)):
        options = [_node_test(option) for option in matcher.options]
        return lambda node: any(option(node) for option in options)
    if isinstance(matcher, m.AllOf):
        required = [_node_test(option) for option in matcher.options]
        return lambda node: all(need(node) for need in required)
    if isinstance(matcher, m.MatchIfTrue):
        func = matcher.func
        return lambda node: not isinstance(node, cst.MaybeSentinel) and bool(func(node))
    if not isinstance(matcher, m.BaseMatcherNode) or not dataclasses.is_dataclass(matcher):
        raise _Unhandled
    name = type(matcher).__name__
    checks: list[tuple[str, Test]] = []
    for field in dataclasses.fields(matcher):
        desired = getattr(matcher, field.name)
        if field.name == "_metadata" or isinstance(desired, m.DoNotCareSentinel):
            continue
        if field.name == "metadata":
            raise _Unhandled
        checks.append((field.name, _attribute_test(desired)))

    def test(node: Any) -> bool:
        if type(node).__name__ != name:
            return False
        return all(check(getattr(node, field)) for field, check in checks)

    return test


def _attribute_test(desired: Any) -> Test:
    """The test of a node's attribute (libcst's ``_attribute_matches``)."""
    if isinstance(desired, m.DoNotCareSentinel):
        return lambda value: True
    if isinstance(desired, m.MatchIfTrue):
        func = desired.func
        return lambda value: bool(func(value))
    if desired is None:
        return lambda value: value is None
    if isinstance(desired, bool):
        return lambda value: value is desired
    if isinstance(desired, str):
        return lambda value: value == desired
    if isinstance(desired, (list, tuple)):
        items = [_item(part) for part in desired]

        def sequence(value: Any) -> bool:
            if isinstance(value, str):  # libcst matches text character by character
                raise _Unhandled
            return isinstance(value, Sequence) and _sequence(value, 0, items, 0)

        return sequence
    if isinstance(desired, (m.OneOf, m.TypeOf, m.AllOf)):
        node = _node_test(desired)

        def either(value: Any) -> bool:
            if isinstance(value, Sequence):  # a sequence of options: libcst's to judge
                raise _Unhandled
            return node(value)

        return either
    node = _node_test(desired)
    return lambda value: not isinstance(value, Sequence) and node(value)


# One place of a sequence matcher: ("one", test) matches one item, ("any",) any one item,
# ("many", least, test) at least ``least`` items that each pass ``test``.
_Item = tuple[Any, ...]


def _item(part: Any) -> _Item:
    if isinstance(part, m.DoNotCareSentinel):
        return ("any",)
    if isinstance(part, m.AtLeastN):
        return ("many", part.n, _attribute_test(part.matcher))
    if isinstance(part, m.AtMostN):
        raise _Unhandled
    return ("one", _node_test(part))


def _sequence(values: Sequence[Any], i: int, items: list[_Item], j: int) -> bool:
    """libcst's ``_sequence_matches``: greedy, trying fewer items on failure."""
    if j == len(items):
        return i == len(values)
    item = items[j]
    if i == len(values):
        return all(rest[0] == "many" and rest[1] == 0 for rest in items[j:])
    if item[0] == "any":
        return _sequence(values, i + 1, items, j + 1)
    if item[0] == "one":
        return bool(item[1](values[i])) and _sequence(values, i + 1, items, j + 1)
    _, least, test = item
    if test(values[i]):
        rest = items if least == 0 else [*items[:j], ("many", least - 1, test), *items[j + 1:]]
        if _sequence(values, i + 1, rest, j):
            return True
    return least == 0 and _sequence(values, i, items, j + 1)
