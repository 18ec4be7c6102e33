"""Cell outcomes cached by what decides them: the text of the Cell's generated file and of
every generated file it imports, the job (constructor arguments, inputs), the code that
runs Cells and the installed MindSpore. A warm re-scan of an unchanged repository runs no
Cell again, and a change to one file, or to msready's analysis, runs again only the Cells
whose generated code it changed."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Iterator
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from msready.analyzer.scan import default_cache_dir
from msready.skeletons.runner import NOT_STARTED, STOPPED_FROM_OUTSIDE
from msready.skeletons.values import OBJECT_KEY


def installed_version(package: str) -> str:
    """The installed version of ``package``, ``none`` when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def _runner_fingerprint() -> str:
    """A hash of the code that runs Cells (the child process and what it imports)."""
    digest = hashlib.sha256()
    folder = resources.files("msready.skeletons")
    for name in ("child.py", "train_child.py", "weights.py", "values.py", "runner.py"):
        digest.update(folder.joinpath(name).read_bytes())
    return digest.hexdigest()[:16]


def module_of(path: str) -> str:
    """The module name of a generated file: ``a/b.py`` is ``a.b``, ``a/__init__.py`` is ``a``."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=8192)
def imported(path: str, text: str) -> frozenset[str] | None:
    """The modules a generated file imports, with every package on the way (importing
    ``a.b.c`` runs ``a`` and ``a.b`` first); None when that cannot be read from its
    syntax (it does not parse, or it imports by name at run time)."""
    if "importlib" in text or "__import__" in text:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    package = module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names.add(stem)
            names.update(f"{stem}.{alias.name}" if stem else alias.name for alias in node.names)
    return frozenset(".".join(n.split(".")[:i + 1])
                     for n in names if n for i in range(n.count(".") + 1))


def file_closures(tree: dict[str, str]) -> dict[str, set[str]]:
    """For each generated module, the generated files its import runs (itself included,
    and its packages' ``__init__`` files, which Python runs first: ``a.b.c`` runs ``a`` and
    ``a.b``). A file whose imports cannot be read depends on the whole tree."""
    paths = {module_of(path): path for path in tree}
    direct = {module_of(path): imported(path, text) for path, text in tree.items()}
    closures: dict[str, set[str]] = {}
    for module in paths:
        parts = module.split(".")
        seen = {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & paths.keys()
        stack = list(seen)
        while stack:
            names = direct[stack.pop()]
            if names is None:
                seen = set(paths)
                break
            for name in names & paths.keys() - seen:
                seen.add(name)
                stack.append(name)
        closures[module] = {paths[name] for name in seen}
    return closures


def _objects(value: object) -> Iterator[str]:
    """The modules of the classes and objects a job's arguments name (the child imports
    them to build the arguments)."""
    if isinstance(value, dict):
        named = value.get(OBJECT_KEY)
        if isinstance(named, list) and named:
            yield str(named[0])
        for item in value.values():
            yield from _objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def lasting(error: str) -> bool:
    """Whether an outcome with this error says something about the Cell, and may be
    cached: not a child process that could not start or that someone else stopped."""
    return not ("cannot start" in error or NOT_STARTED in error
                or STOPPED_FROM_OUTSIDE in error)


class CellCache:
    """Outcomes of Cell runs on disk, one small JSON file per key."""

    def __init__(self, tree: dict[str, str], folder: Path | None = None,
                 enabled: bool = True) -> None:
        self.enabled = enabled
        self.folder = (folder or default_cache_dir()) / "cells"
        self.base = f"{_runner_fingerprint()}|{installed_version('mindspore')}"
        self.tree = tree
        self._closures: dict[str, set[str]] | None = None  # found on the first key
        self._digests: dict[frozenset[str], str] = {}

    def with_files(self, files: dict[str, str]) -> CellCache:
        """The same cache over a tree with ``files`` added (the training steps, which
        import the Cells)."""
        return CellCache({**self.tree, **files}, self.folder.parent, self.enabled)

    def _digest(self, modules: frozenset[str]) -> str:
        """A hash of the generated files a Cell's run imports (every file when one of
        ``modules`` is not a generated file)."""
        digest = self._digests.get(modules)
        if digest is None:
            if self._closures is None:
                self._closures = file_closures(self.tree)
            paths: set[str] = set()
            for module in modules:
                closure = self._closures.get(module)
                if closure is None:
                    paths = set(self.tree)
                    break
                paths |= closure
            h = hashlib.sha256(self.base.encode())
            for path in sorted(paths):
                h.update(f"\0{path}\0{self.tree[path]}".encode())
            digest = self._digests[modules] = h.hexdigest()
        return digest

    def key(self, job: dict[str, Any]) -> str:
        """The key of one Cell run."""
        text = json.dumps(job, sort_keys=True, default=str)
        modules = frozenset({str(job.get("module")), *_objects(job)})
        return hashlib.sha256(f"{self._digest(modules)}|{text}".encode()).hexdigest()

    def get(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """The cached outcome of ``job``, None when it has not run with this code."""
        if not self.enabled:
            return None
        path = self.folder / f"{self.key(job)}.json"
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def split(self, jobs: list[dict[str, Any]]
              ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        """The cached outcomes of ``jobs`` by job key, and the jobs still to run."""
        found: dict[str, dict[str, Any]] = {}
        pending = []
        for job in jobs:
            hit = self.get(job)
            if hit is not None:
                found[job["key"]] = hit
            else:
                pending.append(job)
        return found, pending

    def keep(self, jobs: list[dict[str, Any]], outcomes: dict[str, dict[str, Any]]) -> None:
        """Store the outcome of every job that has one."""
        for job in jobs:
            if job["key"] in outcomes:
                self.put(job, outcomes[job["key"]])

    def put(self, job: dict[str, Any], outcome: dict[str, Any]) -> None:
        """Store an outcome, a time-out or a crash too (a big network compiles as slowly
        next time; ``--no-cache`` runs it again), but not a child that could not start or
        that someone else stopped."""
        if not self.enabled or not lasting(str(outcome.get("error") or "")):
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            target = self.folder / f"{self.key(job)}.json"
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(outcome), encoding="utf-8")
            tmp.replace(target)
        except OSError:  # a read-only cache costs speed, never the result
            return
