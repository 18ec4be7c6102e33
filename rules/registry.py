"""Every rule msready knows, collected from the rule family modules."""

from __future__ import annotations

import importlib
import inspect
from functools import lru_cache

from msready.rules import family_modules
from msready.rules.base import FileRule, RepoRule, Rule

_LOAD_ERRORS: list[str] = []


def load_errors() -> list[str]:
    """One line per rule module that failed to import (its rules do not run)."""
    all_rules()
    return list(_LOAD_ERRORS)


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every concrete rule class, ordered by id. A module that fails to import loses
    only its own rules; :func:`load_errors` says which."""
    found: dict[str, type[Rule]] = {}
    for family in family_modules():
        try:
            module = importlib.import_module(family)
        except Exception as exc:
            _LOAD_ERRORS.append(f"rules module {family} failed to load "
                                f"({type(exc).__name__}: {exc}); its rules did not run")
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (issubclass(obj, (FileRule, RepoRule)) and obj.__module__ == family
                    and "id" in vars(obj)):
                found[f"{obj.id}:{obj.__qualname__}"] = obj
    return tuple(sorted(found.values(), key=lambda r: r.id))


def file_rules() -> tuple[type[FileRule], ...]:
    """Rules that run during each file's walk."""
    return tuple(r for r in all_rules() if issubclass(r, FileRule))


def repo_rules() -> tuple[type[RepoRule], ...]:
    """Rules that run once on the repository model."""
    return tuple(r for r in all_rules() if issubclass(r, RepoRule))

