"""What one file's translation asks of the rest of the repository, written down.

A file's Cell code depends on its own text and facts, on the findings on it, and on
questions about other files: how a name resolves, whether a class is a Module, what an
attribute holds, whether a top-level package is the repository's, whether another file's
function is safe to call at import. The translation asks them through
:class:`ModelReads`, which answers from the repository model and keeps each question with
the text of its answer. :mod:`msready.skeletons.translation_cache` reuses a translation
when the same questions, asked of a later scan's model, get the same answers: adding a
file or changing one changes the answers of the files that depend on it, not of all.

Every question has an answer with a stable ``repr`` (strings, booleans, tuples, the
model's frozen ``Resolved``), so the text written down compares across processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from msready.analyzer.repo import RepositoryModel, Resolved

T = TypeVar("T")
# (question, its arguments, the repr of its answer)
Read = tuple[str, tuple[str | bool, ...], str]
# Whether a repository function or class is safe to call at import (``build``: a Module
# class may be built): see :class:`msready.skeletons.module_level.RepositoryPurity`.
Judge = Callable[[str, bool], bool]


def repository_tops(model: RepositoryModel) -> frozenset[str]:
    """The top-level package names of the repository's modules (computed once)."""
    return model.provide("repository_tops", lambda: frozenset(
        name.split(".")[0] for name in model.modules))


class ModelReads:
    """The repository model as one file's translation sees it: each answer is noted."""

    def __init__(self, model: RepositoryModel, judge: Judge | None = None) -> None:
        self._model = model
        self._judge = judge
        self.reads: list[Read] = []
        self._asked: set[tuple[str, tuple[str | bool, ...]]] = set()
        # the repository's top-level package names
        self.tops = Asked(self.is_repository_top)

    def _noted(self, question: str, args: tuple[str | bool, ...], answer: T) -> T:
        if (question, args) not in self._asked:
            self._asked.add((question, args))
            self.reads.append((question, args, repr(answer)))
        return answer

    # ----- names --------------------------------------------------------------------

    def qualify(self, name: str, module: str) -> str | None:
        """The fully qualified name ``name`` has in ``module`` (see the model's)."""
        return self._noted("qualify", (name, module), self._model.qualify(name, module))

    def resolve(self, name: str, module: str) -> Resolved | None:
        """What ``name`` is, seen from ``module``."""
        return self._noted("resolve", (name, module), self._model.resolve(name, module))

    def is_repository_top(self, top: str) -> bool:
        """Whether a top-level package name is one of the repository's."""
        return self._noted("is_repository_top", (top,), top in repository_tops(self._model))

    def has_module(self, name: str) -> bool:
        """Whether the repository holds the module ``name`` or a module under it."""
        held = self._model.provide("model_reads.prefixes", lambda: frozenset(
            ".".join(parts[:cut]) for parts in (m.split(".") for m in self._model.modules)
            for cut in range(1, len(parts) + 1)))
        return self._noted("has_module", (name,), name in held)

    def is_module(self, name: str) -> bool:
        """Whether the repository holds the module ``name`` itself."""
        return self._noted("is_module", (name,), name in self._model.modules)

    def module_global(self, module: str, name: str) -> bool:
        """Whether the repository module ``module`` binds ``name`` at module level."""
        file = self._model.modules.get(module)
        return self._noted("module_global", (module, name),
                           file is not None and name in file.globals)

    def is_imported(self, module: str, name: str) -> bool:
        """Whether some repository file imports ``name`` from ``module``."""
        table = self._model.provide("model_reads.imported", self._imported_table)
        return self._noted("is_imported", (module, name), (module, name) in table)

    def _imported_table(self) -> frozenset[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for target in (t for f in self._model.modules.values() for t in f.bindings.values()):
            module, dot, name = target.rpartition(".")
            while dot:  # ``a.b.c`` names ``c`` of ``a.b`` and ``b.c`` of ``a``
                found.add((module, name))
                module, dot, head = module.rpartition(".")
                name = f"{head}.{name}"
        return frozenset(found)

    def imported_from(self, module: str) -> Asked:
        """The names of ``module`` other repository files import, as a container."""
        return Asked(lambda name: self.is_imported(module, name))

    def star_imported(self, module: str) -> bool:
        """Whether some repository file star-imports ``module``."""
        stars = self._model.provide("model_reads.stars", lambda: frozenset(
            name[1:] for f in self._model.modules.values() for name in f.bindings
            if name.startswith("*")))
        return self._noted("star_imported", (module,), module in stars)

    # ----- classes ------------------------------------------------------------------

    def is_class(self, name: str) -> bool:
        """Whether ``name`` is a repository class."""
        return self._noted("is_class", (name,), name in self._model.classes)

    def is_function(self, name: str) -> bool:
        """Whether ``name`` is a repository function."""
        return self._noted("is_function", (name,), name in self._model.functions)

    def is_module_class(self, name: str) -> bool:
        """Whether ``name`` is a repository ``nn.Module`` class."""
        return self._noted("is_module_class", (name,), name in self._model.module_classes)

    def is_function_class(self, name: str) -> bool:
        """Whether ``name`` is a repository ``torch.autograd.Function``."""
        return self._noted("is_function_class", (name,),
                           name in self._model.function_classes)

    def find_method(self, cls: str, name: str) -> str | None:
        """The function a method name resolves to on a class, following its bases."""
        return self._noted("find_method", (cls, name), self._model.find_method(cls, name))

    def held(self, cls: str, attr: str) -> list[Resolved]:
        """What ``self.<attr>`` of the repository class ``cls`` holds (none for a name
        that is no repository class)."""
        found = self._model.attribute_classes(cls, attr) if cls in self._model.classes else []
        return self._noted("held", (cls, attr), found)

    def external_bases(self, cls: str) -> tuple[str, ...]:
        """The classes from outside the repository ``cls`` derives from."""
        return self._noted("external_bases", (cls,), tuple(self._model.external_bases(cls)))

    def reached_from_forward(self, function: str) -> bool:
        """Whether some forward's calls reach the function."""
        return self._noted("reached_from_forward", (function,),
                           self._model.path_from_forward(function) is not None)

    # ----- other files' code --------------------------------------------------------

    def safe(self, name: str, build: bool) -> bool:
        """Whether a repository function or class is safe to call at import."""
        answer = self._judge is not None and self._judge(name, build)
        return self._noted("safe", (name, build), answer)

    def same_answers(self, reads: list[Read]) -> bool:
        """Whether asking ``reads``' questions here gives the answers written there."""
        for question, args, answer in reads:
            ask = getattr(self, question, None)
            if question.startswith("_") or not callable(ask) or repr(ask(*args)) != answer:
                return False
        return True


class Asked:
    """A set of names the translation tests membership of, each test a noted question: a
    file asks about the few names it has, while the whole set (the repository's
    top-level packages, the names other files import from a module) changes whenever a
    file is added."""

    def __init__(self, question: Callable[[str], bool]) -> None:
        self._question = question

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._question(name)
