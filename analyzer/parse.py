"""Reading and parsing one file with libcst, without ever raising.

Every outcome is a value: :class:`Parsed` (the tree, the text and where each node sits)
or :class:`ParseFailure` (what went wrong, with line and column). Notebooks become one
module made of their code cells, with a map back to cell and line.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import io
import json
import re
import tokenize
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate

import libcst as cst
from libcst._nodes.base import CSTNode

from msready.analyzer.findings import Span
from msready.analyzer.positions import Positions

# Files far beyond normal size are not analysed: their tree, walk and memory grow with
# them (a 200,000-statement function took minutes and gigabytes). The limits are checked
# on the text, before parsing; the largest file of timm has 5,300 lines.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_FILE_LINES = 30_000
MAX_FILE_TOKENS = 500_000
_COUNT_TOKENS_FROM = 256 * 1024  # characters; smaller files cannot reach the token limit
_TOKEN = re.compile(r"\w+|[^\s\w]")
_TOO_LARGE_FIX = ("Exclude generated or data files with `tool.msready.exclude`; split a "
                  "hand-written file this large into modules. None of its code is checked.")
# CPython refuses more than 200 nested brackets; libcst's parser would crash on them.
MAX_BRACKET_DEPTH = 200
_BRACKETS = re.compile(r"[()\[\]{}]")
_OPEN = frozenset("([{")
_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _deepest(text: str) -> int:
    """How deep the brackets of ``text`` nest (a closing bracket with none open counts as
    nothing)."""
    brackets = "".join(_BRACKETS.findall(text))
    depths = list(accumulate(map(_STEP.__getitem__, brackets)))  # the loop in C
    if not depths:
        return 0
    if min(depths) >= 0:  # no bracket closes more than were open: the running sum is it
        return max(depths)
    depth = deepest = 0
    for bracket in brackets:
        if bracket in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """A file that could not be read or parsed; ``span`` points at the trouble.

    ``message`` says what is wrong with the file ("syntax error: ..."). A file that is
    fine but was not analysed (too large, its worker died) carries a ``suggestion`` and a
    ``message`` that is a whole sentence.
    """

    message: str
    span: Span
    cell: int | None = None
    suggestion: str | None = None


@dataclass(slots=True)
class CellMap:
    """Maps lines of a notebook's joined code back to (cell index, line in cell)."""

    starts: list[int] = field(default_factory=list)  # first joined line of each cell
    cells: list[int] = field(default_factory=list)  # 1-based index among the code cells

    def locate(self, line: int) -> tuple[int, int]:
        """The cell and the line inside it for a line of the joined code."""
        i = bisect.bisect_right(self.starts, line) - 1
        return self.cells[i], line - self.starts[i] + 1


@dataclass(slots=True)
class Parsed:
    """A parsed module, its text, and where its nodes sit (found when asked)."""

    module: cst.Module
    text: str
    lines: int
    line_starts: list[int]
    cells: CellMap | None = None
    positions: Positions = field(init=False)

    def __post_init__(self) -> None:
        self.positions = Positions(self.module, self.text, self.line_starts)

    def offsets(self, node: cst.CSTNode,
                ancestors: Sequence[cst.CSTNode] = ()) -> tuple[int, int] | None:
        """Start and end character offsets of ``node`` (its syntactic extent, without
        the whitespace and parentheses it owns), or None for a node not in this module.
        ``ancestors`` (the nodes from the module down to one enclosing ``node``) make
        the answer cheaper."""
        return self.positions.offsets(node, ancestors)

    def span(self, node: cst.CSTNode, ancestors: Sequence[cst.CSTNode] = ()) -> Span | None:
        """The 1-based span of ``node``, or None for a node not in this module."""
        offsets = self.positions.offsets(node, ancestors)
        if offsets is None:
            return None
        line, col = self._point(offsets[0])
        end_line, end_col = self._point(offsets[1])
        return Span(line, col, end_line, end_col)

    def _point(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i] + 1


def _line_starts(text: str) -> list[int]:
    starts = [0]
    if "\r" in text:
        for match in re.finditer(r"\r\n|\r|\n", text):
            starts.append(match.end())
    else:  # the usual case: the lines' lengths added up in C, not a match object per line
        starts.extend(accumulate(len(line) + 1 for line in text.split("\n")[:-1]))
    if starts[-1] == len(text) and len(starts) > 1:
        starts.pop()
    return starts


def _point_of(text: str, offset: int) -> Span:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(line, col, line, col)


def decode(data: bytes) -> str | ParseFailure:
    """Source bytes to text, honouring a BOM and a PEP 263 coding declaration."""
    if b"\x00" in data:
        offset = data.index(b"\x00")
        return ParseFailure("binary content (NUL byte); not a Python source file",
                            _point_of(data[:offset].decode("latin-1"), offset))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return ParseFailure(f"bad encoding declaration: {exc.msg}", Span(1, 1, 1, 1))
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start].decode(encoding, errors="replace")
        return ParseFailure(
            f"cannot decode byte 0x{data[exc.start]:02x} as {encoding}",
            _point_of(prefix, len(prefix)),
        )
    except LookupError:
        return ParseFailure(f"unknown encoding {encoding!r}", Span(1, 1, 1, 1))
    return text[1:] if text.startswith("\ufeff") else text


def _too_deep(text: str) -> ParseFailure | None:
    if _deepest(text) <= MAX_BRACKET_DEPTH:
        return None
    # Brackets inside strings and comments count above; let CPython decide.
    try:
        compile(text, "<msready>", "exec", flags=0x400, dont_inherit=True)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        return ParseFailure(f"syntax error: {exc.msg}", Span(line, col, line, col))
    except (ValueError, MemoryError, RecursionError) as exc:
        return ParseFailure(f"cannot parse: {exc}", Span(1, 1, 1, 1))
    return None


def too_large(text: str) -> ParseFailure | None:
    """Why a file's text is too large to analyse, or None; cheap next to parsing it."""
    lines = text.count("\n") + 1
    if lines > MAX_FILE_LINES:
        what = f"it has {lines:,} lines, over msready's limit of {MAX_FILE_LINES:,} lines"
    elif len(text) >= _COUNT_TOKENS_FROM and len(_TOKEN.findall(text)) > MAX_FILE_TOKENS:
        what = f"it has more than {MAX_FILE_TOKENS:,} tokens (names, numbers, operators)"
    else:
        return None
    return ParseFailure(f"This file was skipped as far beyond normal size: {what} per file, "
                        "which would take minutes and gigabytes to analyse.", Span(1, 1, 1, 1),
                        suggestion=_TOO_LARGE_FIX)


def _node_classes() -> list[type[CSTNode]]:
    """libcst's node classes that have their own constructor: the slotted dataclasses
    its parser builds (a class ``add_slots`` replaced stays a subclass without slots of
    its own, and is skipped)."""
    found: list[type[CSTNode]] = []
    todo: list[type[CSTNode]] = [CSTNode]  # type: ignore[type-abstract]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return [c for c in found if dataclasses.is_dataclass(c) and "__slots__" in c.__dict__
            and "__init__" in c.__dict__]


def _quick_constructor(cls: type[CSTNode]) -> Callable[..., None]:
    """A constructor for ``cls`` with the same parameters and defaults as the one the
    dataclass wrote, that sets each field through its slot directly and runs no checks.

    A frozen dataclass's constructor sets each field with ``object.__setattr__`` (looked
    up anew for every field) and then runs ``__post_init__``: for the two million nodes
    of a large repository that is a tenth of the parse. Written as the dataclass module
    writes its own, as source compiled once per class.
    """
    names: dict[str, object] = {"MISSING": dataclasses.MISSING}
    params: list[str] = []
    body: list[str] = []
    for i, f in enumerate(dataclasses.fields(cls)):
        names[f"set{i}"] = getattr(cls, f.name).__set__  # the slot's own setter
        value = f.name
        if f.default is not dataclasses.MISSING:
            names[f"default{i}"] = f.default
            params.append(f"{f.name}=default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            names[f"factory{i}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            value = f"factory{i}() if {f.name} is MISSING else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    set{i}(self, {value})\n")
    source = f"def __init__(self, {', '.join(params)}):\n{''.join(body) or '    pass'}\n"
    exec(source, names)  # generated from the class's own fields
    made: Callable[..., None] = names["__init__"]  # type: ignore[assignment]
    made.__qualname__ = f"{cls.__qualname__}.__init__"
    return made


@functools.cache
def _constructors() -> tuple[tuple[tuple[type[CSTNode], object], ...],
                             tuple[tuple[type[CSTNode], object], ...]]:
    """(class, quick constructor) and (class, its own constructor) for every node class."""
    classes = _node_classes()
    return (tuple((c, _quick_constructor(c)) for c in classes),
            tuple((c, c.__dict__["__init__"]) for c in classes))


@contextmanager
def _parser_built() -> Iterator[None]:
    """Build nodes quickly, without libcst's per-node checks, while its own parser
    builds a tree.

    Every libcst node checks its invariants when it is built (``__post_init__`` calls
    ``_validate``): a guard for trees written by hand. A tree from the parser satisfies
    them by construction, since the grammar already rejected what they reject, and the
    checks cost about an eighth of a parse. The parser calls each node's class, whose
    constructor is swapped for the time of the parse for a quick one that runs no checks
    (see :func:`_quick_constructor`). Nodes built outside this block, such as the Cells'
    translations, are built and checked as usual.
    """
    quick, own = _constructors()
    for cls, init in quick:
        type.__setattr__(cls, "__init__", init)
    try:
        yield
    finally:
        for cls, init in own:
            type.__setattr__(cls, "__init__", init)


def parse_text(text: str) -> Parsed | ParseFailure:
    """Parse decoded source text with libcst and compute node spans."""
    deep = too_large(text) or _too_deep(text)
    if deep is not None:
        return deep
    try:
        with _parser_built():
            module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).strip().splitlines()[0] if str(exc.message).strip() else "?"
        line, col = exc.raw_line, exc.raw_column + 1
        return ParseFailure(f"syntax error: {first}", Span(line, col, line, col))
    except (RecursionError, MemoryError, ValueError) as exc:
        return ParseFailure(f"cannot parse: {type(exc).__name__}", Span(1, 1, 1, 1))
    starts = _line_starts(text)
    return Parsed(module, text, len(starts) if text else 0, starts)


def parse_bytes(data: bytes) -> Parsed | ParseFailure:
    """Decode and parse a ``.py`` file's bytes."""
    if len(data) > MAX_FILE_BYTES:
        return ParseFailure(
            f"This file was skipped as far beyond normal size: it is "
            f"{len(data) // 1024 // 1024} MiB, over msready's limit of "
            f"{MAX_FILE_BYTES // 2**20} MiB per file.", Span(1, 1, 1, 1),
            suggestion=_TOO_LARGE_FIX)
    text = decode(data)
    if isinstance(text, ParseFailure):
        return text
    return parse_text(text)


# IPython syntax that is not Python: line magics, shell escapes, help queries and
# assignments from them. Each such line becomes ``pass`` at the same indentation, so
# line numbers and blocks stay intact.
_MAGIC_LINE = re.compile(r"^(\s*)(%|!|\?|\w+\s*=\s*[!%]|.*\?\s*$)")
# Cell magics whose body is still Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy"})


def _python_lines(cell_source: str) -> list[str]:
    lines = cell_source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].lstrip()[2:].split()[0] if lines[0].lstrip()[2:].split() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return ["pass"] * len(lines)
        lines[0] = "pass"
    out = []
    for line in lines:
        match = _MAGIC_LINE.match(line)
        if match and not line.lstrip().startswith("#"):
            out.append(f"{match.group(1)}pass")
        else:
            out.append(line)
    return out


def notebook_cells(data: bytes) -> dict[int, str]:
    """The source of each code cell by 1-based cell index; empty for a broken notebook."""
    try:
        cells = json.loads(data.decode("utf-8-sig"))["cells"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        return {}
    out = {}
    code = [c for c in (cells if isinstance(cells, list) else [])
            if isinstance(c, dict) and c.get("cell_type") == "code"]
    for index, cell in enumerate(code, start=1):
        source = cell.get("source", "")
        out[index] = "".join(source) if isinstance(source, list) else str(source)
    return out


def parse_notebook(data: bytes) -> tuple[Parsed | None, list[ParseFailure]]:
    """Parse a notebook's code cells as one module.

    Returns the parsed module (None when nothing parses) and one failure per cell that
    does not parse, or one for the whole notebook when it is not valid JSON.
    """
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
        cells = notebook["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        line = getattr(exc, "lineno", 1)
        col = getattr(exc, "colno", 1)
        return None, [ParseFailure(f"not a readable notebook: {exc}".splitlines()[0],
                                   Span(line, col, line, col))]
    # Cells are numbered among the code cells, 1-based, as notebook linters do.
    code_cells: list[tuple[int, list[str]]] = []
    code = [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    for index, cell in enumerate(code, start=1):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        code_cells.append((index, _python_lines(text)))
    failures: list[ParseFailure] = []
    good: list[tuple[int, list[str]]] = []
    for index, lines in code_cells:
        alone = parse_text("\n".join(lines) + "\n")
        if isinstance(alone, ParseFailure):
            failures.append(ParseFailure(alone.message, alone.span, index))
        else:
            good.append((index, lines))
    cell_map = CellMap()
    joined: list[str] = []
    for index, lines in good:
        cell_map.starts.append(len(joined) + 1)
        cell_map.cells.append(index)
        joined.extend(lines)
    if not good:
        return None, failures
    parsed = parse_text("\n".join(joined) + "\n")
    if isinstance(parsed, ParseFailure):
        return None, [*failures, parsed]
    parsed.cells = cell_map
    return parsed, failures
