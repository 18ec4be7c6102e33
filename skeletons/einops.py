"""einops patterns as MindSpore code, decided when the Cell is generated.

``rearrange(x, 'b c (h p) w -> b h (c p w)', p=2)``, ``repeat`` and ``reduce`` (and the
``Rearrange`` / ``Reduce`` layers) with a pattern written as a string literal become a
small module-level function of the generated file: read the input's shape, split the
grouped axes (``ops.reshape``), drop reduced axes (``mean`` / ``sum`` / ``amax`` / ...),
reorder (``ops.transpose``), add repeated axes (``ops.broadcast_to``), merge groups
(``ops.reshape``). Shapes are static in GRAPH_MODE, so the tuple arithmetic folds away.
Sizes unpacked from a mapping (``rearrange(x, 'b (h w) d -> b d h w', **dims)``) are
read when the function runs. A layer whose pattern is built when the network is
(``Rearrange(f'b c {dims} -> b ({dims}) c', **sizes)``) becomes the Cells' own
``EinopsPatternLayer``, which reads the pattern when it is built, and a call with such a
pattern (``repeat(x, f'b c {dims} -> (b v) c {dims}', v=2)``) the Cells' ``einops_pattern``,
which reads it when it runs (in PyNative; GRAPH_MODE compiles no string parsing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

ELLIPSIS = "…"
MERGED = ""  # ends a group that merges the axes an ellipsis stands for: ``(...)``
FUNCTIONS = ("rearrange", "repeat", "reduce")
LAYERS = ("Rearrange", "Reduce", "Repeat")
_REDUCTIONS = {"mean": "ops.mean({t}, {axes})", "sum": "ops.sum({t}, {axes})",
               # (of a mask: any / all, as MindSpore's CPU amax / amin take no bools)
               "max": "ops.amax({t}, {axes}) if {t}.dtype != mindspore.bool_ else "
                      "ops.any({t}, {axes})",
               "min": "ops.amin({t}, {axes}) if {t}.dtype != mindspore.bool_ else "
                      "ops.all({t}, {axes})",
               "prod": "ops.prod({t}, {axes})"}


class PatternError(ValueError):
    """A pattern this module does not translate (the call stays, with a TODO)."""


Group = list[str]  # names of one axis of a side; [] is a unit axis ("1" or "()")


def _side(text: str) -> list[Group]:
    text = text.replace("...", f" {ELLIPSIS} ")
    groups: list[Group] = []
    for token in re.findall(r"\([^()]*\)|[^\s()]+", text):
        if token.startswith("("):
            names = token[1:-1].split()
            if any(n.isdigit() and n != "1" for n in names):
                raise PatternError(f"a number inside a group: {token}")
            group = [n for n in names if n != "1"]
            if ELLIPSIS in group:  # ``(...)``, ``(... d)``: the axes it stands for merged
                group.append(MERGED)
            groups.append(group)
        elif token == "1":
            groups.append([])
        elif token.isidentifier() or token == ELLIPSIS:
            groups.append([token])
        else:
            raise PatternError(f"axis {token!r}")
    return groups


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed pattern: the groups of each side."""

    left: list[Group]
    right: list[Group]

    @staticmethod
    def parse(text: str) -> Pattern:
        """``'b (h d) n -> b h d n'`` -> its two sides."""
        if text.count("->") != 1:
            raise PatternError("no single '->'")
        left, right = (_side(s) for s in text.split("->"))
        if any(MERGED in g for g in left):
            raise PatternError("an ellipsis inside a group on the left")
        for side in (left, right):
            if sum(g.count(ELLIPSIS) for g in side) > 1:
                raise PatternError("more than one ellipsis on a side")
        return Pattern(left, right)


# The side an image's patches are cut from when the pattern does not say (``(h p1)`` with
# ``p1=4``: 8 patches of 4), and the channels of an image whose channel axis is unsized.
_IMAGE_SIDE = 32
_IMAGE_CHANNELS = 3


def input_shape(pattern: str, sizes: dict[str, object]) -> tuple[tuple[int, ...], int] | None:
    """The shape of a tensor a ``Rearrange`` / ``Reduce`` layer at the front of a network
    takes, from its pattern's left side and the axis sizes it is given, and how many of
    its trailing axes are image sides (which other sizes may replace); None when the
    pattern does not say. ``'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'`` with ``p1=p2=4``:
    ``(2, 3, 32, 32)``, two sides."""
    try:
        left = Pattern.parse(pattern).left
    except PatternError:
        return None
    if len(left) < 3 or any(ELLIPSIS in g for g in left) or len(left[0]) != 1:
        return None
    shape: list[int] = [2]  # the batch, as every Cell input has
    sides = 0
    for position, group in enumerate(left[1:], start=1):
        known = [v for n in group if type(v := sizes.get(n)) is int and v > 0]
        product = 1
        for v in known:
            product *= v
        if len(known) == len(group):
            shape.append(product)
            sides = 0
        elif len(group) >= 2:  # ``(h p1)``: patches across a side, their size given or not
            shape.append(product * max(1, _IMAGE_SIDE // product))
            sides += 1
        elif position == 1 and len(group) == 1 and len(left) >= 4:
            shape.append(_IMAGE_CHANNELS)  # ``b c (h p1) (w p2)``: an image's channels
            sides = 0
        else:
            return None
    return tuple(shape), sides


def _names(groups: list[Group]) -> list[str]:
    return [n for g in groups for n in g if n != MERGED]


def _tuple(items: list[str]) -> str:
    """Source of a tuple concatenation: names, ``(a,)`` pieces and ``ell__`` tuples."""
    parts: list[str] = []
    plain: list[str] = []
    for item in items:
        if item in ("ell__", "kept__"):
            if plain:
                parts.append("(" + ", ".join(plain) + ",)")
                plain = []
            parts.append(item)
        else:
            plain.append(item)
    if plain:
        parts.append("(" + ", ".join(plain) + ",)")
    return " + ".join(parts) if parts else "()"


def _positions(order: list[str], wanted: list[str]) -> str:
    """Source of the axis positions of ``wanted`` names in ``order`` (ellipsis-aware)."""
    out: list[str] = []
    for name in wanted:
        index = order.index(name)
        before = order[:index]
        base = str(len(before)) if ELLIPSIS not in before else \
            f"{len(before) - 1} + len(ell__)"
        if name == ELLIPSIS:
            out.append(f"tuple(range({base}, {base} + len(ell__)))")
        else:
            out.append(f"({base},)")
    return " + ".join(out) if out else "()"


def function_source(name: str, op: str, pattern: str, sizes: list[str],
                    reduction: str | None = None, spread: bool = False) -> str:
    """The source of a function ``name(t, <sizes>)`` doing ``op`` with ``pattern``.
    ``spread``: more sizes come from a mapping unpacked into the call (``**dims``), so
    which axes have a size is known only when it runs: every axis of the pattern is a
    parameter, and an axis of a group left without a size is the group's size divided
    by the others'."""
    parsed = Pattern.parse(pattern)
    left, right = parsed.left, parsed.right
    left_names, right_names = _names(left), _names(right)
    maybe: list[str] = []  # axes whose size a spread mapping may give
    if spread:
        maybe = [n for n in dict.fromkeys(left_names + right_names)
                 if n != ELLIPSIS and n not in sizes]
        sizes = [*sizes, *maybe]
    new = [n for n in right_names if n not in left_names]
    gone = [n for n in left_names if n not in right_names]
    if op == "rearrange" and (new or gone):
        raise PatternError("rearrange with axes on one side only")
    if op == "repeat" and gone:
        raise PatternError("repeat dropping axes")
    if op == "reduce" and new:
        raise PatternError("reduce adding axes")
    if new and any(n not in sizes for n in new):
        raise PatternError("a repeated axis without its size")
    if op == "reduce" and reduction not in _REDUCTIONS:
        raise PatternError(f"reduction {reduction!r}")
    params = ", ".join(["x__", *[f"{s}=None" for s in sizes]])
    body = [f"def {name}({params}):", f'    """einops.{op}(t, {pattern!r})"""',
            "    s__ = x__.shape"]
    has_ellipsis = ELLIPSIS in left_names
    after = 0
    for i, group in enumerate(left):
        if group == [ELLIPSIS]:
            after = len(left) - i - 1
    elementary: list[str] = []
    split = False
    for i, group in enumerate(left):
        index = str(i) if not has_ellipsis or not any(
            g == [ELLIPSIS] for g in left[:i]) else f"len(s__) - {len(left) - i}"
        if group == [ELLIPSIS]:
            body.append(f"    ell__ = s__[{i}:len(s__) - {after}]")
            elementary.append("ell__")
            continue
        if len(group) == 1:
            body.append(f"    {group[0]} = s__[{index}]")
        elif group:
            split = True
            known = [n for n in group if n in sizes and n not in maybe]
            unknown = [n for n in group if n not in sizes]
            if any(n in maybe for n in group):  # found when it runs: one may lack a size
                for n in group:
                    if n in maybe:
                        others = " * ".join(o for o in group if o != n) or "1"
                        body += [f"    if {n} is None:",
                                 f"        {n} = s__[{index}] // ({others})"]
                elementary += list(group)
                split = True
                continue
            if len(unknown) > 1:
                raise PatternError(f"group ({' '.join(group)}) with several unknown sizes")
            for n in unknown:
                product = " * ".join(known) or "1"
                body.append(f"    {n} = s__[{index}] // ({product})")
        else:
            split = True
        elementary += ["ell__" if n == ELLIPSIS else n for n in group]
    if split:
        body.append(f"    x__ = ops.reshape(x__, {_tuple(elementary)})")
    order = list(left_names)
    if gone:
        reduced = _positions(order, gone)
        assert reduction is not None
        body.append(f"    x__ = {_REDUCTIONS[reduction].format(t='x__', axes=reduced)}")
        order = [n for n in order if n not in gone]
    kept = [n for n in right_names if n in order]
    if kept != order or ELLIPSIS in kept:
        perm = _positions(order, kept)
        body.append(f"    x__ = ops.transpose(x__, {perm})")
    if new:
        with_units = ["1" if n in new else ("ell__" if n == ELLIPSIS else n)
                      for n in right_names]
        # the new axes (of size one now) broadcast to their sizes, the others kept (-1):
        # unlike ops.tile, this runs on a tensor with no values (``repeat`` of an empty
        # table of tokens)
        sizes = [n if n in new else ("kept__" if n == ELLIPSIS else "-1")
                 for n in right_names]
        if ELLIPSIS in right_names:
            body.append("    kept__ = (-1,) * len(ell__)")
        body.append(f"    x__ = ops.reshape(x__, {_tuple(with_units)})")
        body.append(f"    x__ = ops.broadcast_to(x__, {_tuple(sizes)})")
    final: list[str] = []
    merged = False
    for group in right:
        if group == [ELLIPSIS]:
            final.append("ell__")
        elif len(group) == 1:
            final.append(group[0])
        elif MERGED in group:  # ``(...)``: the product of the axes the ellipsis stands for
            merged = True
            body += ["    n__ = 1", "    for e__ in ell__:", "        n__ *= e__"]
            final.append("(" + " * ".join("n__" if n == ELLIPSIS else n
                                          for n in group if n != MERGED) + ")")
        else:
            merged = True
            final.append("(" + " * ".join(group) + ")" if group else "1")
    if merged or new:
        body.append(f"    x__ = ops.reshape(x__, {_tuple(final)})")
    body.append("    return x__")
    return "\n".join(body) + "\n"


LAYER_SOURCE = '''
class EinopsLayer(nn.Cell):
    """An einops layer (Rearrange / Reduce / Repeat): its pattern is the function."""

    def __init__(self, fn, **sizes):
        super().__init__()
        self.fn = fn
        self.sizes = sizes

    def construct(self, t):
        return self.fn(t, **self.sizes)
'''


def _string(node: cst.BaseExpression | None) -> str | None:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def einsum_equation(pattern: str) -> str:
    """``einops.einsum``'s pattern (axis names of any length, separated by spaces:
    ``'batch i d, batch j d -> batch i j'``) as ``torch.einsum``'s equation
    (``'aid,ajd->aij'``). A one-letter name keeps its letter; longer names take the
    letters no name uses, in order; ``...`` stays."""
    inputs, arrow, output = pattern.partition("->")
    if not arrow:
        raise PatternError("einops.einsum's pattern has no '->'")
    sides = [t.split() for t in inputs.split(",")] + [output.split()]
    names = list(dict.fromkeys(n for side in sides for n in side if n != "..."))
    if not all(n.isidentifier() for n in names):
        raise PatternError("einops.einsum's pattern groups axes")
    letters = {n: n for n in names if len(n) == 1 and "a" <= n <= "z"}
    spare = iter(c for c in "abcdefghijklmnopqrstuvwxyz" if c not in letters)
    for n in names:
        if n not in letters:
            letters[n] = next(spare, "")
            if not letters[n]:
                raise PatternError("einops.einsum's pattern has more than 26 axis names")
    terms = ["".join("..." if n == "..." else letters[n] for n in side) for side in sides]
    return ",".join(terms[:-1]) + "->" + terms[-1]


def translate(name: str, call: cst.Call, fn: str) -> tuple[cst.BaseExpression, str]:
    """``rearrange(x, 'pattern', h=2)`` -> ``fn(x, h=2)`` and the source of ``fn``;
    ``Rearrange('pattern', p=2)`` -> ``EinopsLayer(fn, p=2)``; ``einsum(a, b, 'pattern')``
    -> ``torch_einsum('equation', a, b)`` (the Cells' composition of ``torch.einsum``, with
    no source of its own). A pattern that is not a literal is read when the Cell is built
    (a layer: ``EinopsPatternLayer(pattern, reduction, p=2)``) or runs (a call:
    ``einops_pattern(x, pattern, reduction, h=2)``). Raises :class:`PatternError` when
    the pattern is a literal this module does not write out, or no pattern is given."""
    short = name.rsplit(".", 1)[-1]
    if short == "einsum":
        *tensors, last = call.args or (cst.Arg(cst.Name("None")),)
        pattern = _string(last.value) if last.keyword is None else None
        if pattern is None or not tensors or any(a.star or a.keyword for a in tensors):
            raise PatternError("not a pattern written as a string literal")
        equation = cst.SimpleString(repr(einsum_equation(pattern)))
        first = tensors[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return cst.Call(cst.Name("torch_einsum"),
                        [cst.Arg(equation), *tensors[:-1], first]), ""
    layer = short in LAYERS
    at = 0 if layer else 1
    op = short.lower()
    args = [a for a in call.args if a.keyword is None]
    named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    args = [a for a in args if not a.star]
    spreads = [a for a in call.args if a.star == "**"]  # sizes from a mapping: ``**dims``
    sizes = [a for a in call.args if a.keyword is not None
             and a.keyword.value not in ("pattern", "reduction", "tensor")] + spreads
    written = named.get("pattern") or (args[at].value if len(args) > at else None)
    pattern = _string(written)
    how_written = named.get("reduction") or (args[at + 1].value if len(args) > at + 1
                                             else None)
    how = _string(how_written)
    rejected = pattern is not None and pattern.count("->") != 1  # einops raises on it
    if (pattern is None or rejected) and written is not None and op in FUNCTIONS and (
            layer or args) and not any(a.star == "*" for a in call.args):
        # a pattern built as it runs, or one einops refuses when it runs
        given = [cst.Arg(written), cst.Arg(how_written or cst.Name("None")), *sizes]
        if layer:
            return cst.Call(cst.Name("EinopsPatternLayer"), given), ""
        return cst.Call(cst.Name("einops_pattern"), [cst.Arg(args[0].value), *given]), ""
    if op not in FUNCTIONS or pattern is None or any(a.star == "*" for a in call.args) or (
            not layer and not args):
        raise PatternError("not a pattern written as a string literal")
    source = function_source(fn, op, pattern,
                             [a.keyword.value for a in sizes if a.keyword is not None], how,
                             spread=bool(spreads))
    if layer:
        return cst.Call(cst.Name("EinopsLayer"), [cst.Arg(cst.Name(fn)), *sizes]), source
    return cst.Call(cst.Name(fn), [cst.Arg(args[0].value), *sizes]), source
