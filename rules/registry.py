"""Every rule msready knows, collected from the rule family modules."""

from __future__ import annotations

import importlib
import inspect
from functools import lru_cache

from msready.rules.base import FileRule, RepoRule, Rule

# One module per hazard family. A family not written yet is simply absent.
FAMILIES = (
    "msready.rules.api_mapping",
    "msready.rules.dynamic_shape",
    "msready.rules.sparse",
    "msready.rules.second_order",
    "msready.rules.graph_mode",
    "msready.rules.idioms",
)


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every concrete rule class, ordered by id."""
    found: dict[str, type[Rule]] = {}
    for family in FAMILIES:
        try:
            module = importlib.import_module(family)
        except ModuleNotFoundError as exc:
            if exc.name != family:
                raise
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


def rule_by_id(rule_id: str) -> type[Rule] | None:
    """The rule with this id, or None."""
    return next((r for r in all_rules() if r.id == rule_id), None)
