"""Name resolution: the one place that turns an expression into a fully qualified name.

Only names bound by an import (or a definition, or an alias of either) resolve:
``import torch.nn as nn; nn.Linear`` is ``torch.nn.Linear``; ``from torch.nn import
functional as F; F.relu`` is ``torch.nn.functional.relu``. A method called on an
expression (``torch.zeros(3).view``) is not a dotted name at all and resolves to None
here; the tensor-method bucket lives in :mod:`msready.analyzer.walk`.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst

BUILTIN_NAMES = frozenset(dir(builtins))
# A binding whose target is this marks a local variable that shadows outer names.
LOCAL = ""


def module_name(rel_path: str) -> tuple[str, bool]:
    """The dotted module name of a repository file and whether it is a package."""
    parts = rel_path[: -len(".py")].split("/") if rel_path.endswith(".py") else (
        rel_path.rsplit(".", 1)[0].split("/")
    )
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(p for p in parts if p) or "__main__", is_package


def dotted(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, None for anything else."""
    parts: list[str] = []
    node: cst.BaseExpression = expr
    while type(node) is cst.Attribute:  # no isinstance: libcst's classes are slow ABCs
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_path(node: cst.BaseExpression | cst.ImportStar | None) -> str:
    if node is None or isinstance(node, cst.ImportStar):
        return ""
    return dotted(node) or ""


def relative_base(module: str, is_package: bool, level: int) -> str | None:
    """The package a relative import of ``level`` dots starts from, None if above root."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    drop = level - 1
    if drop > len(parts):
        return None
    return ".".join(parts[: len(parts) - drop])


@dataclass(slots=True)
class ScopeNames:
    """The names one scope binds: name -> qualified target, or LOCAL when shadowed."""

    kind: str  # "module", "class" or "function"
    qualname: str
    bindings: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Resolver:
    """Resolves names against a stack of scopes (module at the bottom).

    Class scopes are skipped when resolving from inside a method, as Python does.
    """

    module: str
    is_package: bool
    scopes: list[ScopeNames] = field(default_factory=list)
    # Bumped whenever a binding or a scope changes: a name qualified at one generation
    # means the same until the next.
    generation: int = 0
    # node id -> (node, generation, qualified name): the rules and the walk ask for the
    # same nodes again and again (a call's callee, an assignment's target, by a dozen
    # rules each); the node is held so that its id stays its own.
    _qualified: dict[int, tuple[cst.BaseExpression, int, str | None]] = field(
        default_factory=dict)

    def __post_init__(self) -> None:
        if not self.scopes:
            self.scopes.append(ScopeNames("module", self.module))

    @property
    def current(self) -> ScopeNames:
        """The innermost scope."""
        return self.scopes[-1]

    def push(self, kind: str, qualname: str) -> None:
        """Enter a class or function scope."""
        self.generation += 1
        self.scopes.append(ScopeNames(kind, qualname))

    def pop(self) -> None:
        """Leave the innermost scope."""
        self.generation += 1
        self.scopes.pop()

    def bind(self, name: str, target: str) -> None:
        """Bind ``name`` in the innermost scope (``LOCAL`` shadows outer bindings)."""
        self.generation += 1
        self.current.bindings[name] = target

    def forget(self) -> None:
        """Drop the names qualified so far (and the nodes held with them)."""
        self._qualified.clear()

    def lookup(self, name: str) -> str | None:
        """The qualified target of a bare name, or None when it is local or unknown."""
        innermost = len(self.scopes) - 1
        for i in range(innermost, -1, -1):
            scope = self.scopes[i]
            if scope.kind == "class" and i != innermost:
                continue
            target = scope.bindings.get(name)
            if target is not None:
                return target or None
        if name in BUILTIN_NAMES:
            return f"builtins.{name}"
        return None

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The fully qualified name of a name or attribute chain, or None (found once
        per node while the bindings stay as they are)."""
        known = self._qualified.get(id(expr))
        if known is not None and known[1] == self.generation and known[0] is expr:
            return known[2]
        qualified = self._qualify(expr)
        self._qualified[id(expr)] = (expr, self.generation, qualified)
        return qualified

    def _qualify(self, expr: cst.BaseExpression) -> str | None:
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.lookup(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def bind_import(self, node: cst.Import | cst.ImportFrom) -> None:
        """Record the names an import statement binds in the innermost scope."""
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.bind(alias.asname.name.value, full)
                else:
                    head = full.split(".")[0]
                    self.bind(head, head)
            return
        base = _module_path(node.module)
        level = len(node.relative)
        if level:
            anchor = relative_base(self.module, self.is_package, level)
            if anchor is None:
                return
            base = f"{anchor}.{base}".strip(".") if base else anchor
        if isinstance(node.names, cst.ImportStar):
            self.bind(f"*{base}", base)
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            target = f"{base}.{name}" if base else name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind(alias.asname.name.value, target)
            else:
                self.bind(name, target)
