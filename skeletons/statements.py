"""Statement-level pieces of a generated file: TODO comments, the module-level statements
a starter keeps, ``register_buffer`` as a frozen Parameter, and the translation result."""

from __future__ import annotations

import builtins
from collections.abc import Container
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from msready.analyzer.names import dotted
from msready.analyzer.repo import TORCH_ROOTS
from msready.analyzer.syntax import code, find_all
from msready.skeletons.adapters import STAND_IN, own_roots
from msready.skeletons.arguments import argparse_defaults
from msready.skeletons.layers import expr
from msready.skeletons.values import bound_names, constants

_KEEP_TOP = (cst.FunctionDef, cst.ClassDef)
Todo = tuple[str, str]


def is_torch(name: str | None) -> bool:
    """True for a fully qualified torch / torchvision name (not the repository's own, when
    the repository is torchvision)."""
    if name is None:
        return False
    root = name.split(".")[0]
    return root in TORCH_ROOTS and root not in own_roots()


def todo_line(rule: str, reason: str) -> cst.EmptyLine:
    """A ``# TODO(msready RULE): reason`` comment line."""
    text = " ".join(reason.split())[:300]
    return cst.EmptyLine(indent=True, comment=cst.Comment(f"# TODO(msready {rule}): {text}"))


@dataclass(slots=True)
class FileTranslation:
    """A translated file: its code, the Cells it defines and every TODO left in it."""

    code: str
    cells: list[str] = field(default_factory=list)
    todos: list[Todo] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # side libraries given the stand-in


def buffer(call: cst.Call) -> cst.BaseSmallStatement | None:
    """``self.register_buffer("name", t)`` -> ``self.name = Parameter(t, requires_grad=False)``
    (None stays None)."""
    if len(call.args) < 2 or not m.matches(call.args[0].value, m.SimpleString()):
        return None
    name_node = call.args[0].value
    assert isinstance(name_node, cst.SimpleString)
    name = name_node.evaluated_value
    if not isinstance(name, str) or not name.isidentifier():
        return None
    target = cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(name)))
    return cst.Assign([target], _held(call.args[1].value))


def _held(value: cst.BaseExpression) -> cst.BaseExpression:
    """A buffer's value as a Parameter that is not trained; what may be None stays None,
    which torch keeps as a buffer and ``Parameter`` refuses."""
    if m.matches(value, m.Name("None")):
        return value
    if isinstance(value, cst.IfExp):  # ``None if dynamic else self.get_attn_mask()``
        return value.with_changes(body=_held(value.body), orelse=_held(value.orelse))
    param = expr(f"Parameter({code(value)}, requires_grad=False)")
    if m.matches(value, m.Name() | m.Attribute()):  # a variable may hold None
        return expr(f"None if {code(value)} is None else {code(param)}")
    if m.matches(value, _REPOSITORY_CALL) and not m.matches(value, _MINDSPORE_CALL):
        # so may what the repository's own function or method returns (``def
        # get_attn_mask(self): ... return None`` without a shifted window): called once
        return expr(f"None if (buffer_ := {code(value)}) is None else "
                    "Parameter(buffer_, requires_grad=False)")
    return param


# A call of the module's own method or of a function named alone, not one of the
# MindSpore names a translated call or an adapter is written with.
_REPOSITORY_CALL = m.Call(func=m.Attribute(value=m.Name("self")) | m.Name())
_MINDSPORE_CALL = m.Call(func=m.Name(value=m.MatchIfTrue(
    lambda name: name in ("Parameter", "Tensor") or name.startswith("torch_"))))


def keep_top(stmt: cst.BaseStatement) -> bool:
    """Module-level statements kept in a starter: imports, definitions, constants."""
    if isinstance(stmt, _KEEP_TOP):
        return True
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and not find_all(small, m.Call()):
            continue
        return False
    return True


def settings(names: list[str], module: cst.Module,
             stmt: cst.BaseStatement) -> cst.BaseStatement:
    """``opt = parser.parse_args()`` -> ``opt = types.SimpleNamespace(lr=0.001, ...)``: the
    script's argparse defaults as constants, so class bodies reading ``opt.x`` import."""
    env = constants(module.body)
    defaults = argparse_defaults(module, env)
    fields = ", ".join(f"{k}={v!r}" for k, v in defaults.items()
                       if isinstance(v, (int, float, str, bool, tuple, list, type(None))))
    target = next(n for n in names if n in code(stmt))
    return cst.parse_statement(f"{target} = types.SimpleNamespace({fields})\n")


def with_head(body: list[cst.BaseStatement], head: list[cst.BaseStatement],
              todo: str | None) -> list[cst.BaseStatement]:
    """``head`` (adapters, einops functions) placed after the file's leading docstring
    and imports, with a ``TODO(msready MS100)`` line above it when ``todo`` is given."""
    at = 0
    while at < len(body) and m.matches(body[at], m.SimpleStatementLine(
            body=[m.Import() | m.ImportFrom() | m.Expr(m.SimpleString())])):
        at += 1
    rest = body[at:]
    head = list(head)
    if head and isinstance(head[0], (cst.SimpleStatementLine, cst.BaseCompoundStatement)) \
            and not head[0].leading_lines:  # two blank lines after the imports, as PEP 8 has
        head[0] = head[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    if todo is not None:
        target = head if head else rest
        if not target:
            target.append(cst.parse_statement("pass\n"))
        first = target[0]
        if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            target[0] = first.with_changes(leading_lines=[
                cst.EmptyLine(), todo_line("MS100", todo), *first.leading_lines])
    return [*body[:at], *head, *rest]


# Names the header of every generated file binds.
HEADER_NAMES = frozenset({"mindspore", "Parameter", "Tensor", "mint", "nn", "ops", "types",
                          "annotations"})


def _bound_by(stmt: cst.BaseStatement) -> set[str]:
    names: set[str] = set()
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        names.add(stmt.name.value)
    elif isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
                    small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    names.add((code(bound)).split(".")[0])
            elif isinstance(small, cst.Assign):
                for target in small.targets:
                    names |= {n.value for n in find_all(target.target, m.Name())
                              if isinstance(n, cst.Name)}
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                names.add(small.target.value)
    return names


def unbound_bases(body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """Base classes whose name nothing binds any more (a dropped torch or side-library
    import: ``class Dataset(Dataset)``) become ``object``, with a TODO, so the file
    imports."""
    bound = set(HEADER_NAMES) | set(dir(builtins))
    out: list[cst.BaseStatement] = []
    for stmt in body:
        if isinstance(stmt, cst.ClassDef):
            gone = [b for b in stmt.bases if b.keyword is None and isinstance(
                root := _root(b.value), cst.Name) and root.value not in bound]
            if gone:
                kept = [b for b in stmt.bases if b not in gone] or [cst.Arg(cst.Name("object"))]
                reason = ", ".join(code(b.value) for b in gone)
                stmt = stmt.with_changes(bases=kept, leading_lines=[
                    *stmt.leading_lines, todo_line("MS100", f"base class {reason} comes from "
                                                   "a package the Cell does not import")])
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(s, cst.ImportFrom) and isinstance(s.names, cst.ImportStar)
                for s in stmt.body):
            bound |= {"*"}
        out.append(stmt)
        bound |= _bound_by(stmt)
    if "*" in bound:  # a star import may bind anything: leave the bases alone
        return body
    return out


def _root(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.value if not isinstance(node, cst.Call) else node.func
    return node


def placeholder(stmt: cst.BaseStatement, imported: Container[str]) -> cst.BaseStatement | None:
    """A module-level assignment the Cell file cannot keep (torch or script code), as
    ``NAME = Unavailable`` with a TODO when another repository file imports ``NAME``, so that
    import still works; None (dropped) otherwise."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    names = [t.target.value for s in stmt.body if isinstance(s, cst.Assign)
             for t in s.targets if isinstance(t.target, cst.Name)]
    names += [s.target.value for s in stmt.body
              if isinstance(s, cst.AnnAssign) and isinstance(s.target, cst.Name)]
    wanted = [n for n in names if n in imported]
    if not wanted:
        return None
    # A torch version gate (``TORCH_VERSION >= (1, 8)``) takes a modern torch's branch.
    # Anything else gets the side-library stand-in: it imports as a decorator, a base,
    # a registry or a callable (``disable_compiler = getattr(torch.compiler, ...)``).
    value = "(2, 0)" if all("VERSION" in n.upper() for n in wanted) else STAND_IN
    line = cst.parse_statement(" = ".join([*wanted, value]) + "\n")
    return line.with_changes(leading_lines=[todo_line(
        "MS100", f"`{code(stmt.with_changes(leading_lines=[])).strip()[:120]}` is computed "
                 "with torch or script code; "
                 f"other files import it: {value} stands in, give it its MindSpore value")])


# ``if __name__ == "__main__":`` (either order of the comparison)
_MAIN_TEST = m.Comparison(left=m.Name("__name__"), comparisons=[m.ComparisonTarget(
    m.Equal(), comparator=m.SimpleString())]) | m.Comparison(
    left=m.SimpleString(), comparisons=[m.ComparisonTarget(m.Equal(), m.Name("__name__"))])


def script_classes(stmt: cst.BaseStatement, dropped: frozenset[str] = frozenset()
                   ) -> list[cst.BaseStatement]:
    """The classes a script defines in its ``if __name__ == "__main__":`` block (a mock
    network passed to a constructor), kept at module level when the block is dropped:
    defining a class runs no script code, as long as what runs at its definition (bases,
    decorators, class-level statements, default values) reads none of the block's own
    variables, nor a module-level name the Cell file ``dropped``. [] for any other
    statement."""
    if not isinstance(stmt, cst.If) or not m.matches(stmt.test, _MAIN_TEST) \
            or not isinstance(stmt.body, cst.IndentedBlock):
        return []
    bound = _bound(stmt.body)
    kept: list[cst.BaseStatement] = []
    for node in stmt.body.body:
        if not isinstance(node, cst.ClassDef):
            continue
        hoisted = {c.name.value for c in kept if isinstance(c, cst.ClassDef)}
        if _definition_reads(node) & ((bound - hoisted - {node.name.value}) | dropped):
            continue
        kept.append(node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    return kept


def _bound(block: cst.IndentedBlock) -> set[str]:
    """The names a block binds (assigned, looped over, imported, defined), in its own
    scope: not inside the functions and classes it defines."""
    names = bound_names(block)
    for alias in find_all(block, m.ImportAlias()):
        assert isinstance(alias, cst.ImportAlias)
        if alias.asname is None:  # (``as`` names are bound names already)
            names.add((dotted(alias.name) or "").split(".")[0])
    return names - {""}


def _definition_reads(node: cst.ClassDef | cst.FunctionDef) -> set[str]:
    """The names read when a class or function is defined: its decorators, bases and
    default values, and a class's own statements (not the bodies of its methods)."""
    parts: list[cst.CSTNode] = [d.decorator for d in node.decorators]
    if isinstance(node, cst.FunctionDef):
        parts += [p.default for p in (*node.params.params, *node.params.kwonly_params,
                                      *node.params.posonly_params) if p.default is not None]
    else:
        parts += [a.value for a in node.bases] + [a.value for a in node.keywords]
    names = {n.value for part in parts for n in _reads(part)}
    if isinstance(node, cst.ClassDef):
        for stmt in node.body.body:
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
                names |= _definition_reads(stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:  # the values, not the names they are bound to
                    value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) \
                        else small
                    names |= {n.value for n in _reads(value)} if value is not None else set()
            else:
                names |= {n.value for n in _reads(stmt)}
    return names


def _reads(node: cst.CSTNode) -> list[cst.Name]:
    """The names a piece of code reads (not the attribute names after a dot)."""
    attrs = {id(a.attr) for a in find_all(node, m.Attribute()) if isinstance(a, cst.Attribute)}
    return [n for n in find_all(node, m.Name()) if isinstance(n, cst.Name)
            and id(n) not in attrs]


def import_fallback(stmt: cst.BaseStatement) -> list[cst.BaseStatement] | None:
    """``try: from torch import _assert`` / ``except ImportError: def _assert(...)``:
    the fallback the Cell file needs (its torch or side-library import is gone, or the
    extension it loads is not there: ``except OSError``)."""
    if not isinstance(stmt, cst.Try):
        return None
    for handler in stmt.handlers:  # the first that catches a failed import or load
        caught = {n.value for n in find_all(handler.type, m.Name())
                  if isinstance(n, cst.Name)} if handler.type is not None else {"*"}
        if caught & {"*", "ImportError", "ModuleNotFoundError", "OSError", "Exception"}:
            body = handler.body
            return list(body.body) if isinstance(body, cst.IndentedBlock) else None
    return None
