"""Writing into a slice that may select nothing.

torch writes nothing for ``mask[:, h, w, :] = cnt`` when the slice ``h`` is empty (a
window as large as the feature map: ``slice(0, -7)`` of 7 rows); MindSpore raises ("The
memcpy_s error"). An assignment whose index holds a slice computed at run time (a name
bound to ``slice(...)``, or bounds that are not literals: ``x[:, a:b] = v``) goes through
``torch_setitem``, which skips an empty selection. The result is assigned back to the
name, so GRAPH_MODE, where a write makes a new tensor, keeps it as well.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from msready.analyzer.syntax import find_all

SETITEM = "torch_setitem"

SOURCE = '''
def torch_setitem(target, index, value):
    """``target[index] = value`` as torch runs it: an index that selects nothing writes
    nothing (MindSpore raises on an empty slice). Returns the target, which GRAPH_MODE
    writes into a copy of."""
    if isinstance(target, Tensor) and 0 in target[index].shape:
        return target
    target[index] = value
    return target
'''

_SLICE_CALL = m.Call(func=m.Name("slice"))


def _slices(node: cst.BaseExpression, names: set[str]) -> bool:
    """``slice(0, -7)``, a tuple or list of them, or a name holding such a tuple."""
    if m.matches(node, _SLICE_CALL):
        return True
    if isinstance(node, (cst.Tuple, cst.List)) and node.elements:
        return all(_slices(e.value, names) for e in node.elements)
    return isinstance(node, cst.Name) and node.value in names


def slice_names(module: cst.Module) -> set[str]:
    """Names the module binds to slice objects: ``s = slice(a, b)``, ``h_slices = (slice(..),
    ...)`` and the loop variables over them (``for h in h_slices``)."""
    names: set[str] = set()
    grew = True
    while grew:  # a loop over a name bound later in the file: until nothing changes
        before = len(names)
        for assign in find_all(module, m.Assign(targets=[m.AssignTarget(m.Name())])):
            assert isinstance(assign, cst.Assign)
            target = assign.targets[0].target
            if isinstance(target, cst.Name) and _slices(assign.value, names):
                names.add(target.value)
        for loop in find_all(module, m.For(target=m.Name()) | m.CompFor(target=m.Name())):
            assert isinstance(loop, (cst.For, cst.CompFor))
            if isinstance(loop.target, cst.Name) and isinstance(
                    loop.iter, (cst.Tuple, cst.List, cst.Name)) and _slices(loop.iter, names):
                names.add(loop.target.value)
        grew = len(names) > before
    return names


def _literal(bound: cst.BaseExpression | None) -> bool:
    return bound is None or isinstance(bound, cst.Integer) or (
        isinstance(bound, cst.UnaryOperation) and isinstance(bound.expression, cst.Integer))


def may_select_nothing(target: cst.Subscript, names: set[str]) -> bool:
    """An index holding a slice known only when it runs."""
    for element in target.slice:
        part = element.slice
        if isinstance(part, cst.Slice) and not all(
                _literal(b) for b in (part.lower, part.upper, part.step)):
            return True
        if isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and \
                part.value.value in names:
            return True
    return False


def _index(target: cst.Subscript) -> cst.BaseExpression:
    """The subscript's index as a value: ``:`` -> ``slice(None)``, ``a:b`` -> ``slice(a, b)``,
    several -> a tuple."""
    parts: list[cst.BaseExpression] = []
    for element in target.slice:
        part = element.slice
        if not isinstance(part, cst.Slice):
            assert isinstance(part, cst.Index)
            parts.append(part.value)
            continue
        bounds = [part.lower, part.upper] + ([part.step] if part.step is not None else [])
        if bounds == [None, None]:
            bounds = [None]  # ``:`` is slice(None)
        parts.append(cst.Call(cst.Name("slice"), [
            cst.Arg(b if b is not None else cst.Name("None")) for b in bounds]))
    if len(parts) == 1:
        return parts[0]
    return cst.Tuple([cst.Element(p) for p in parts])


def guarded(assign: cst.Assign, names: set[str]) -> cst.Assign | None:
    """``x[:, h, w, :] = v`` -> ``x = torch_setitem(x, (slice(None), h, w, slice(None)),
    v)`` when the index may select nothing and ``x`` is a plain name; None otherwise."""
    if len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
            and may_select_nothing(target, names)):
        return None
    call = cst.Call(cst.Name(SETITEM), [cst.Arg(target.value), cst.Arg(_index(target)),
                                        cst.Arg(assign.value)])
    return assign.with_changes(targets=[cst.AssignTarget(target.value)], value=call)
