"""How a Cell's or a training step's error is written down."""

from __future__ import annotations

import re

# Where a value sits in memory, as MindSpore's messages name it (``value_ptr: 0x55c1…``,
# ``<object at 0x7f3a…>``): different on every run.
_VALUE_PTR = re.compile(r",? ?value_ptr: 0x[0-9a-fA-F]+")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{8,}\b")


def stable_error(error: str | None) -> str | None:
    """A Cell's or a training step's error without the memory addresses in it, so that
    the same failure reads the same on every run (in the report, the generated file's
    status line, a diff)."""
    if not error:
        return error
    return _ADDRESS.sub("0x…", _VALUE_PTR.sub("", error))
