"""Inputs from the repository's own example of a call: a Module built and called with
tensors made from literal shapes, as a ``__main__`` block, a test or a README script does::

    unet = KarrasUnet(image_size=64, dim=192, num_classes=1000)
    images = torch.randn(2, 4, 64, 64)
    out = unet(images, time=torch.ones(2,), class_labels=torch.randint(0, 1000, (2,)))

Such a call says what ``forward`` takes, optional arguments included, better than any
guess. Only tensors whose shape can be read (``torch.randn(8, 3, 128, 128)``,
``torch.randint(0, n, (8,))``) count; a call with any other argument is no example.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst
import libcst.matchers as m

from msready.analyzer.names import dotted
from msready.analyzer.parse import Parsed
from msready.analyzer.syntax import find_all
from msready.skeletons.inputs import InputSpec
from msready.skeletons.values import evaluate

# torch functions that make a tensor of a given shape, and the dtype of what they make
_MAKERS = {"randn": "float32", "rand": "float32", "zeros": "float32", "ones": "float32",
           "empty": "float32", "randint": "int64"}
# methods that leave the shape alone: where the tensor lives, its dtype, its gradient flag
_KEEP = {"cuda": None, "cpu": None, "to": None, "float": "float32", "half": "float32",
         "double": "float32", "long": "int64", "int": "int64", "requires_grad_": None,
         "detach": None, "contiguous": None}
_BATCH = 2  # the batch every Cell is fed

Block = Sequence[cst.BaseStatement]


def assignment_blocks(parsed: Parsed) -> list[tuple[int, int, str, Block, int]]:
    """Every ``name = ...`` statement of a file: (first line, last line, name, the block
    holding it, its index there)."""
    blocks: list[Block] = [parsed.module.body]
    blocks += [b.body for b in find_all(parsed.module, m.IndentedBlock())
               if isinstance(b, cst.IndentedBlock)]
    found = []
    for block in blocks:
        for i, stmt in enumerate(block):
            named = _named(stmt)
            span = parsed.span(stmt) if named else None
            if named and span is not None:
                found.append((span.line, span.end_line, named[0], block, i))
    return found


def _named(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """(name, value) of a ``name = value`` statement."""
    if not m.matches(stmt, m.SimpleStatementLine(body=[m.Assign(
            targets=[m.AssignTarget(m.Name())])])):
        return None
    assert isinstance(stmt, cst.SimpleStatementLine)
    assign = stmt.body[0]
    assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name)
    return assign.targets[0].target.value, assign.value


def example_call(assignments: list[tuple[int, int, str, Block, int]], line: int
                 ) -> tuple[cst.Call, Block] | None:
    """The first call of the name an instantiation at ``line`` is assigned to, in the
    statements after it, with the statements before that call."""
    for first, last, name, block, index in assignments:
        if not first <= line <= last:
            continue
        for j in range(index + 1, len(block)):
            calls = find_all(block[j], m.Call(func=m.Name(name)))
            if calls:
                assert isinstance(calls[0], cst.Call)
                return calls[0], block[:j]
        return None
    return None


def tensor_spec(node: cst.BaseExpression, bound: dict[str, InputSpec],
                env: dict[str, object]) -> InputSpec | None:
    """The tensor an expression makes, when its shape is written out."""
    dtype: str | None = None
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in _KEEP:  # ``torch.randn(8, 3).cuda()``
        dtype = dtype or _KEEP[node.func.attr.value]
        node = node.func.value
    if isinstance(node, cst.Name):
        spec = bound.get(node.value)
    elif isinstance(node, cst.Call):
        spec = _made(node, env)
    else:
        spec = None
    if spec is None or dtype is None or dtype == spec.dtype:
        return spec
    return replace(spec, dtype=dtype, high=spec.high if dtype == "int64" else 0)


def _made(call: cst.Call, env: dict[str, object]) -> InputSpec | None:
    name = dotted(call.func) or ""
    kind = name.rsplit(".", 1)[-1]
    if not name.startswith("torch.") or kind not in _MAKERS:
        return None
    positional = [evaluate(a.value, env) for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if "size" in keywords:
        positional.append(evaluate(keywords["size"], env))
    high = 0
    if kind == "randint":  # randint(high, size) or randint(low, high, size)
        bound = positional[-2] if len(positional) in (2, 3) else None
        if not isinstance(bound, int):
            return None
        high, positional = bound, positional[-1:]
    if len(positional) == 1 and isinstance(positional[0], (tuple, list)):
        positional = list(positional[0])
    shape = tuple(v for v in positional if isinstance(v, int) and not isinstance(v, bool)
                  and v > 0)
    if not shape or len(shape) != len(positional):
        return None
    dtype = _MAKERS[kind]
    if "dtype" in keywords:
        written = dotted(keywords["dtype"]) or ""
        dtype = "int64" if written.endswith(("long", "int64", "int32", "int")) else "float32"
    return InputSpec(shape, dtype, max(high, 2) if dtype == "int64" else 0)


def call_inputs(call: cst.Call, before: Block, env: dict[str, object],
                params: list[tuple[str, object, bool]]) -> list[InputSpec | None] | None:
    """The inputs of an example call, one per ``forward`` parameter up to the last one
    given (None where it is left to its default); None when any argument is not a tensor
    whose shape is written out, or a required parameter is not given."""
    bound: dict[str, InputSpec] = {}
    for stmt in before:
        named = _named(stmt)
        if named is None:
            continue
        spec = tensor_spec(named[1], bound, env)
        if spec is not None:
            bound[named[0]] = spec
        else:
            bound.pop(named[0], None)
    names = [n for n, _, _ in params]
    given: dict[int, InputSpec] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        index = names.index(arg.keyword.value) if arg.keyword is not None and \
            arg.keyword.value in names else i if arg.keyword is None else -1
        spec = tensor_spec(arg.value, bound, env)
        if index < 0 or index >= len(names) or spec is None:
            return None
        given[index] = spec
    if not given or any(required and i not in given for i, (_, _, required) in
                        enumerate(params)):
        return None
    specs = [given.get(i) for i in range(max(given) + 1)]
    batches = {s.shape[0] for s in specs if s is not None and s.shape}
    if len(batches) == 1 and next(iter(batches)) > _BATCH:  # the batch every Cell gets
        specs = [replace(s, shape=(_BATCH, *s.shape[1:])) if s is not None and s.shape
                 else s for s in specs]
    return specs

