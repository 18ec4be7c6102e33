"""Which module-level code a generated Cell file may keep.

Importing a Cell file runs its module-level statements, so a starter keeps only code that
is safe to run there: values built by builtins, the standard library's pure modules,
MindSpore, and the repository's own functions and classes, in this file or another, when
their bodies call only such code (``to_2tuple = _ntuple(2)``, ``PREFIX =
colorstr("AutoAnchor: ")`` with ``colorstr`` imported from a helper file, ``_ACT_FNS =
dict(relu=ops.relu, ...)``, a ``for`` loop filling a registry). Script work (reading files,
parsing arguments, training) is left out."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import libcst as cst
import libcst.matchers as m

from msready.analyzer.names import dotted
from msready.analyzer.repo import TORCH_ROOTS
from msready.analyzer.syntax import find_all
from msready.skeletons import adapters

if TYPE_CHECKING:
    from msready.analyzer.parse import Parsed
    from msready.analyzer.repo import RepositoryModel


class RepositoryJudge(Protocol):
    """Whether a repository function or class (by qualified name) is safe to call at
    import; with ``build``, a Module class may be built when its code is."""

    def __call__(self, name: str, build: bool) -> bool: ...

# Names the header of every generated file binds: calls through them are MindSpore's.
MINDSPORE_NAMES = frozenset({"mindspore", "Parameter", "Tensor", "mint", "nn", "ops"})
# Builtins that reach outside the process or run arbitrary code.
_IMPURE_BUILTINS = frozenset({"open", "input", "exec", "eval", "compile", "__import__",
                              "breakpoint", "exit", "quit", "help"})
_BUILTINS = frozenset(dir(builtins)) - _IMPURE_BUILTINS
# Standard-library modules whose calls touch files, processes or the network.
_IMPURE_MODULES = frozenset({"subprocess", "shutil", "socket", "urllib", "http", "pickle",
                             "multiprocessing", "threading", "asyncio", "ftplib", "smtplib",
                             "tempfile", "glob", "pathlib", "io", "sys", "signal", "ctypes",
                             "sqlite3", "shelve", "zipfile", "tarfile", "gzip", "webbrowser"})
# ``os`` is pure only through these.
_OS_PURE = ("os.path.", "os.environ.get", "os.getenv", "os.sep", "os.cpu_count")
# Path objects are names of files, not the files: building one (``FILE =
# Path(__file__).resolve()``, ``ROOT = FILE.parents[1]``) touches nothing.
_PATHS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PurePosixPath",
                    "pathlib.PureWindowsPath"})
# Methods of a path that compute another path and write nothing (``resolve`` reads links).
_PATH_METHODS = frozenset({"resolve", "absolute", "with_name", "with_suffix", "with_stem",
                           "joinpath", "relative_to", "as_posix", "expanduser"})


def _stdlib_pure(name: str) -> bool:
    if name in _PATHS:
        return True
    top = name.split(".")[0]
    if top not in sys.stdlib_module_names or top in _IMPURE_MODULES:
        return False
    return top != "os" or name.startswith(_OS_PURE)


def bound_names(node: cst.CSTNode) -> set[str]:
    """Names a statement or function body binds (assignment and loop targets, defs)."""
    names = {n.value for t in find_all(node, m.AssignTarget() | m.For() | m.CompFor()
                                         | m.AugAssign() | m.AnnAssign() | m.WithItem())
             for part in (getattr(t, "target", None), getattr(t, "asname", None))
             if part is not None
             for n in find_all(part, m.Name()) if isinstance(n, cst.Name)}
    names |= {d.name.value for d in find_all(node, m.FunctionDef() | m.ClassDef())
              if isinstance(d, (cst.FunctionDef, cst.ClassDef))}
    names |= {p.name.value for p in find_all(node, m.Param()) if isinstance(p, cst.Param)}
    return names


class Purity:
    """Decides whether running an expression or statement at import time is safe.

    Building one of the file's own Modules is not a constant: a module-level ``model =
    Net()`` would make every Cell of the file pay for (or fail with) that network when the
    file is imported. It is kept only where the file's code needs it (see
    :meth:`needed`), as the layer registry ``ACTS = {"swish": Swish(), "relu": nn.ReLU()}``
    that a constructor reads, and when the Module's own code is pure."""

    def __init__(self, module: cst.Module, qualify: Callable[[cst.BaseExpression], str | None],
                 cells: set[str], outside: Callable[[str], bool],
                 repository: RepositoryJudge | None = None) -> None:
        self.qualify = qualify
        # is a qualified name from outside the repository safe to call at import (a side
        # library's stand-in, a torch name the Cell writes in a working form)
        self.outside = outside
        self.cells = cells  # the file's nn.Module classes
        self.repository = repository  # judges what other files of the repository define
        self.functions = {s.name.value: s for s in module.body
                          if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
        self._pure: dict[tuple[str, bool], bool] = {}
        self._read: set[str] | None = None

    def needed(self, names: set[str]) -> bool:
        """True when the file's functions or classes read one of ``names``."""
        if self._read is None:
            self._read = {n.value for d in self.functions.values()
                          for n in find_all(d, m.Name()) if isinstance(n, cst.Name)}
        return bool(names & self._read)

    def definition(self, name: str, build: bool = False) -> bool:
        """True for a function or class of this file whose code calls only pure code; a
        Module class only when ``build`` (the statement may build the file's Modules)."""
        key = (name, build)
        if key in self._pure:
            return self._pure[key]
        node = self.functions.get(name)
        self._pure[key] = False  # a recursive call is judged by the rest of the body
        if node is None or (name in self.cells and not build):
            return False
        local = bound_names(node) | set(self.functions)
        self._pure[key] = self.calls(node, local, build)
        return self._pure[key]

    def calls(self, node: cst.CSTNode, local: set[str], build: bool = False) -> bool:
        """True when every call inside ``node`` is pure; ``local`` are names bound by the
        surrounding code (parameters, loop variables, names kept earlier); with ``build``,
        building one of the file's Modules is allowed when its code is pure."""
        for call in find_all(node, m.Call()):
            assert isinstance(call, cst.Call)
            if not self.callee(call.func, local, build):
                return False
        return True

    def callee(self, func: cst.BaseExpression, local: set[str], build: bool = False) -> bool:
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and \
                func.attr.value in _PATH_METHODS and self.qualify(func.value.func) in _PATHS:
            return self.calls(func.value, local, build)  # ``Path(__file__).resolve()``
        root = func
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if not isinstance(root, cst.Name):  # ``"".join``, ``(a or b)(x)``: literals' methods
            return self.calls(root, local, build)
        head = root.value
        if head in self.functions:
            return self.definition(head, build)
        if head in local or head in MINDSPORE_NAMES or (
                head in adapters.SOURCES and head not in TORCH_ROOTS):
            return True  # (``torch.x`` is judged by its name: some stay torch's)
        name = self.qualify(func)
        if name is None:  # not imported: a builtin, or a name a star import may bind
            return head in _BUILTINS
        if self.repository is not None and self.repository(name, build):
            return True
        return self.outside(name) or _stdlib_pure(name)


class RepositoryPurity:
    """:class:`Purity` across the repository's files: a function or class another file
    defines is judged in that file, by its own imports (one :class:`Purity` per file,
    shared by every file that asks)."""

    def __init__(self, model: RepositoryModel, parsed: Callable[[str], Parsed | None],
                 outside: Callable[[str], bool]) -> None:
        self.model = model
        self.parsed = parsed  # a scanned file's tree, by path
        self.outside = outside
        self._files: dict[str, Purity | None] = {}

    def __call__(self, name: str, build: bool) -> bool:
        model = self.model
        module = model.function_module.get(name) or model.class_module.get(name)
        if module is None or "." in name[len(module) + 1:]:  # methods, nested definitions
            return False
        purity = self._file(module)
        return purity is not None and purity.definition(name[len(module) + 1:], build)

    def _file(self, module: str) -> Purity | None:
        if module not in self._files:
            self._files[module] = None  # a cycle of imports is judged from the rest
            file = self.model.modules.get(module)
            parsed = self.parsed(file.path) if file is not None else None
            if file is not None and parsed is not None:
                cells = {c.name for c in file.classes if c.qualname in self.model.module_classes}
                self._files[module] = Purity(parsed.module, self._qualifier(module), cells,
                                             self.outside, self)
        return self._files[module]

    def _qualifier(self, module: str) -> Callable[[cst.BaseExpression], str | None]:
        def qualify(node: cst.BaseExpression) -> str | None:
            name = dotted(node)
            return self.model.qualify(name, module) if name is not None else None
        return qualify


_SMALL = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Pass, cst.Import,
          cst.ImportFrom)


def simple(stmt: cst.CSTNode, nested: bool = False) -> bool:
    """Assignments, imports and expression statements, alone or inside ``for`` / ``if`` /
    ``try`` blocks made of them or of definitions (``if hasattr(nn, "SiLU"): Swish =
    nn.SiLU`` / ``else: class Swish(nn.Module): ...``); never the ``if __name__ ==
    "__main__":`` block of a script."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(isinstance(s, _SMALL) for s in stmt.body)
    if nested and isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return True
    if isinstance(stmt, cst.If):
        if find_all(stmt.test, m.Name("__name__")):
            return False
        rest = stmt.orelse
        if isinstance(rest, cst.Else):
            return _block(stmt.body) and _block(rest.body)
        return _block(stmt.body) and (rest is None or simple(rest))
    if isinstance(stmt, cst.For):
        return stmt.orelse is None and stmt.asynchronous is None and _block(stmt.body)
    if isinstance(stmt, cst.Try):  # ``try: from .fast import X`` / ``except ImportError:``
        return stmt.orelse is None and stmt.finalbody is None and _block(stmt.body) and \
            all(_block(h.body) for h in stmt.handlers)
    return False


def _block(body: cst.BaseSuite) -> bool:
    if isinstance(body, cst.SimpleStatementSuite):
        return all(isinstance(s, _SMALL) for s in body.body)
    return all(simple(s, nested=True) for s in body.body)


class _WithoutBodies(cst.CSTTransformer):
    def leave_FunctionDef(self, original: cst.FunctionDef,
                          updated: cst.FunctionDef) -> cst.FunctionDef:
        return updated.with_changes(body=cst.SimpleStatementSuite([cst.Pass()]))


def run_at_import(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """The statement as importing its file runs it: the functions it defines (methods
    included) with their bodies left out, since they run only when called."""
    if not find_all(stmt, m.FunctionDef()):
        return stmt
    new = stmt.visit(_WithoutBodies())
    assert isinstance(new, cst.BaseStatement)
    return new
