"""Rule families: one module per hazard family, each rule a small class."""

from __future__ import annotations

import importlib
import pkgutil

_NOT_RULES = frozenset({"base", "registry", "docs", "testing"})


def family_modules() -> list[str]:
    """Every module of the rules package that may define rules, in name order.

    Rules are found, not registered: a family may spread over several modules
    (``dynamic_shape``, ``dynamic_shape_index``, ...) and each one is imported. Listing
    them imports none (the worker server is started with this list before the main
    process has loaded libcst).
    """
    package = importlib.import_module("msready.rules")
    return sorted(f"msready.rules.{m.name}" for m in pkgutil.iter_modules(package.__path__)
                  if m.name not in _NOT_RULES)
