"""The torch -> MindSpore API table: package data, loaded once and validated on load."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

BACKENDS = ("ascend", "gpu", "cpu")
STATUSES = ("consistent", "differs", "missing")


class TableError(Exception):
    """The packaged table is malformed."""


@dataclass(frozen=True, slots=True)
class ParamDiff:
    """One parameter difference between a torch API and its MindSpore target.

    ``kind`` is ``renamed`` (torch name -> ``mindspore`` name), ``missing`` (MindSpore
    has no such parameter), ``default`` (both exist, defaults differ) or ``semantics``
    (same name, different meaning, e.g. BatchNorm ``momentum``).
    """

    kind: str
    torch: str
    mindspore: str | None = None
    torch_default: str | None = None
    mindspore_default: str | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Target:
    """The MindSpore API for one backend and the platforms its docstring lists."""

    api: str | None
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ApiEntry:
    """One torch API and what to write in MindSpore instead."""

    torch: str
    status: str
    targets: dict[str, Target] = field(default_factory=dict)
    params: tuple[ParamDiff, ...] = ()
    notes: str = ""
    workaround: str | None = None  # for missing APIs: equivalent | composition | custom-op
    suggestion: str = ""

    def target(self, backend: str) -> Target:
        """The target for a backend (an empty target when none)."""
        return self.targets.get(backend, Target(None))


class ApiTable:
    """Lookup by fully qualified torch name, aliases included."""

    def __init__(self, entries: dict[str, ApiEntry], aliases: dict[str, str],
                 mindspore_version: str = "") -> None:
        self._entries = entries
        self._aliases = aliases
        self.mindspore_version = mindspore_version

    def lookup(self, symbol: str) -> ApiEntry | None:
        """The entry for a torch API, following aliases (``torch.nn.modules.conv.Conv2d``)."""
        entry = self._entries.get(symbol)
        if entry is None and symbol in self._aliases:
            entry = self._entries.get(self._aliases[symbol])
        return entry

    def entries(self) -> list[ApiEntry]:
        """Every entry, sorted by torch name."""
        return [self._entries[k] for k in sorted(self._entries)]

    def __len__(self) -> int:
        return len(self._entries)


def _entry(raw: dict[str, object]) -> ApiEntry:
    try:
        name = str(raw["torch"])
        status = str(raw["status"])
        if status not in STATUSES:
            raise TableError(f"{name}: status {status!r} is not one of {STATUSES}")
        targets_raw = raw.get("targets", {})
        assert isinstance(targets_raw, dict)
        targets = {}
        for backend, t in targets_raw.items():
            if backend not in BACKENDS:
                raise TableError(f"{name}: unknown backend {backend!r}")
            targets[backend] = Target(t.get("api"), tuple(t.get("platforms", ())))
        params_raw = raw.get("params", [])
        assert isinstance(params_raw, list)
        params = tuple(ParamDiff(**p) for p in params_raw)
        return ApiEntry(name, status, targets, params, str(raw.get("notes", "")),
                        raw.get("workaround"),  # type: ignore[arg-type]
                        str(raw.get("suggestion", "")))
    except (KeyError, TypeError, AssertionError, AttributeError) as exc:
        raise TableError(f"bad table entry {raw!r:.120}: {exc}") from exc


@lru_cache(maxsize=1)
def load_table() -> ApiTable:
    """The packaged table, parsed and validated once per process."""
    ref = resources.files("msready.analyzer").joinpath("data/api_table.json")
    if not ref.is_file():
        return ApiTable({}, {})
    data = json.loads(ref.read_text(encoding="utf-8"))
    entries = {}
    for raw in data.get("entries", []):
        entry = _entry(raw)
        entries[entry.torch] = entry
    return ApiTable(entries, dict(data.get("aliases", {})), str(data.get("mindspore_version", "")))
