"""The torch -> MindSpore API table: package data, loaded once and validated on load."""

from __future__ import annotations

import importlib
import json
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from msready.analyzer.facts import Arg, CallKind, CallSite

BACKENDS = ("ascend", "gpu", "cpu")
STATUSES = ("consistent", "differs", "missing")
WORKAROUNDS = ("equivalent", "composition", "custom-op")


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
    backends: tuple[str, ...] = ()  # the backends whose target differs so; () = all

    def applies_to(self, backend: str) -> bool:
        """True when this difference holds for the target of ``backend``."""
        return not self.backends or backend in self.backends


@dataclass(frozen=True, slots=True)
class MeasuredForm:
    """A call form measured on CPU to fail or to differ from torch, with no rewrite found.

    Calls passing as many positional arguments and the same keywords are concerned (e.g.
    ``torch.flatten(x)``: one positional argument, no keyword); ``note`` says what was
    measured.
    """

    positional: int
    keywords: tuple[str, ...]
    note: str
    backends: tuple[str, ...] = ()  # () = all

    def applies_to(self, backend: str) -> bool:
        """True when this measurement holds for the target of ``backend``."""
        return not self.backends or backend in self.backends


@dataclass(frozen=True, slots=True)
class Target:
    """The MindSpore API for one backend and the platforms its docstring lists."""

    api: str | None
    platforms: tuple[str, ...] = ()
    params: tuple[str, ...] = ()  # the target's parameter names, in positional order


_NO_TARGET = Target(None)


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
    kind: str = "function"  # function | class | method | dtype | attribute
    torch_params: tuple[str, ...] = ()  # the torch parameter names, in positional order
    usage_differs: bool = False  # the target is used differently as a whole (not per parameter)
    usage_backends: tuple[str, ...] = ()  # the backends where it is used differently; () = all
    measured_forms: tuple[MeasuredForm, ...] = ()  # call forms measured to fail or differ

    def usage_differs_on(self, backend: str) -> bool:
        """True when the target of ``backend`` is used differently as a whole."""
        if self.usage_backends:
            return backend in self.usage_backends and self.target(backend).api is not None
        return self.usage_differs

    def becomes_function(self, backend: str) -> bool:
        """True when a torch Tensor method has no MindSpore Tensor method on ``backend`` and
        becomes a function that takes the tensor first."""
        api = self.target(backend).api
        return (self.torch.startswith("torch.Tensor.") and api is not None
                and not api.startswith("mindspore.Tensor."))

    def target(self, backend: str) -> Target:
        """The target for a backend (an empty target when none)."""
        return self.targets.get(backend, _NO_TARGET)

    def forms_for(self, backend: str) -> tuple[MeasuredForm, ...]:
        """The measured failing call forms that hold on ``backend``."""
        return tuple(f for f in self.measured_forms if f.applies_to(backend))

    def params_for(self, backend: str) -> tuple[ParamDiff, ...]:
        """The parameter differences that hold on ``backend``."""
        return tuple(p for p in self.params if p.applies_to(backend))

    def renames(self, backend: str) -> dict[str, str]:
        """torch keyword -> MindSpore keyword on ``backend`` (the ``renamed`` differences):
        the one list the ``Fix:`` text and the Cells rename by."""
        return {p.torch: p.mindspore for p in self.params_for(backend)
                if p.kind == "renamed" and p.mindspore}

    def dropped(self, backend: str) -> frozenset[str]:
        """The torch parameters MindSpore does not have on ``backend``."""
        return frozenset(p.torch for p in self.params_for(backend) if p.kind == "missing")

    def status_for(self, backend: str) -> str:
        """``missing`` without a target on ``backend``; ``differs`` with parameter
        differences there or when the target is used differently as a whole; else
        ``consistent``."""
        if self.target(backend).api is None:
            return "missing"
        if self.params_for(backend) or self.usage_differs_on(backend) \
                or self.becomes_function(backend) or self.forms_for(backend):
            return "differs"
        return "consistent"


class ApiTable:
    """Lookup by fully qualified torch name, aliases included, then by family: a rule for
    every name under a prefix (``torch.jit.`` -> ``mindspore.jit``), kept in the data with
    its reason instead of one hand entry per name."""

    def __init__(self, entries: dict[str, ApiEntry], aliases: dict[str, str],
                 mindspore_version: str = "",
                 ignored_params: frozenset[str] = frozenset(),
                 families: dict[str, ApiEntry] | None = None, torch_version: str = "") -> None:
        self._entries = entries
        self._aliases = aliases
        self.mindspore_version = mindspore_version
        # the torch the table was read from: whose behaviour the translations follow
        self.torch_version = torch_version
        # torch parameters about placement or memory (device, pin_memory, inplace, ...):
        # never compared, and left out of MindSpore calls unless the target has them
        self.ignored_params = ignored_params
        self._families = dict(sorted((families or {}).items(), key=lambda kv: -len(kv[0])))

    def lookup(self, symbol: str) -> ApiEntry | None:
        """The entry for a torch API, following aliases (``torch.nn.modules.conv.Conv2d``),
        else the rule of the longest family prefix the name falls under, named for it."""
        entry = self._entries.get(symbol)
        if entry is None and symbol in self._aliases:
            entry = self._entries.get(self._aliases[symbol])
        if entry is None:
            family = self.family(symbol)
            if family is not None:
                entry = replace(family, torch=symbol)
        return entry

    def exact(self, symbol: str) -> bool:
        """True when the table names ``symbol`` itself (or an alias of it), not a family."""
        return symbol in self._entries or symbol in self._aliases

    def family(self, symbol: str) -> ApiEntry | None:
        """The family rule a name falls under (its ``torch`` field is the prefix), or None."""
        return next((f for prefix, f in self._families.items()
                     if symbol.startswith(prefix) or symbol == prefix.rstrip(".")), None)

    def families(self) -> list[ApiEntry]:
        """Every family rule, sorted by prefix."""
        return [self._families[k] for k in sorted(self._families)]

    def entries(self) -> list[ApiEntry]:
        """Every entry, sorted by torch name."""
        return [self._entries[k] for k in sorted(self._entries)]

    def __len__(self) -> int:
        return len(self._entries)

    def aliases(self) -> dict[str, str]:
        """Defining-module names mapped to their public torch names."""
        return dict(self._aliases)


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
            targets[backend] = Target(t.get("api"), tuple(t.get("platforms", ())),
                                      tuple(t.get("params", ())))
        params_raw = raw.get("params", [])
        assert isinstance(params_raw, list)
        params = tuple(ParamDiff(**{**p, "backends": tuple(p.get("backends", ()))})
                       for p in params_raw)
        torch_params = raw.get("torch_params", [])
        assert isinstance(torch_params, list)
        usage_backends = raw.get("usage_backends", [])
        assert isinstance(usage_backends, list)
        forms_raw = raw.get("measured_forms", [])
        assert isinstance(forms_raw, list)
        forms = tuple(MeasuredForm(int(f["positional"]), tuple(f["keywords"]), str(f["note"]),
                                   tuple(f.get("backends", ()))) for f in forms_raw)
        workaround = raw.get("workaround")
        if workaround not in (None, *WORKAROUNDS):
            raise TableError(f"{name}: workaround {workaround!r} is not one of {WORKAROUNDS}")
        return ApiEntry(name, status, targets, params, str(raw.get("notes", "")),
                        None if workaround is None else str(workaround),
                        str(raw.get("suggestion", "")), str(raw.get("kind", "function")),
                        tuple(str(p) for p in torch_params), bool(raw.get("usage_differs")),
                        tuple(str(b) for b in usage_backends), forms)
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
    families = {}
    for raw in data.get("families", []):
        family = _entry(raw)
        families[family.torch] = family
    return ApiTable(entries, dict(data.get("aliases", {})), str(data.get("mindspore_version", "")),
                    frozenset(str(p) for p in data.get("ignored_params", ())), families,
                    str(data.get("torch_version", "")))


# ----- rewrites proven by execution ------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Proof:
    """What running the MS1xx rewrite of one call pattern gave on this machine's CPU:
    ``torch_call`` (generated inputs named ``x``, ``v0``, ...), the ``rewrite`` msready
    printed for it, and the status in PyNative and GRAPH_MODE (``pass``: ran and equalled
    torch; ``differs``; ``fail``; ``skipped``: not runnable in that mode, e.g. a
    host-side initialiser)."""

    torch_call: str
    rewrite: str
    pynative: str
    graph: str
    error: str = ""

    @property
    def proven(self) -> bool:
        """True when the rewrite ran and equalled torch in PyNative, and in GRAPH_MODE
        wherever it can run there."""
        return self.pynative == "pass" and self.graph in ("pass", "skipped")


def arg_kind(arg: Arg) -> str:
    """The kind of an argument a rewrite depends on: a literal's type (the value itself
    for strings, booleans and None, which select behaviour), ``tuple<n>``, or ``expr``."""
    if arg.star:
        return arg.star + "expr"
    if not arg.is_literal:
        return "expr"
    value = arg.literal
    if value is None or isinstance(value, bool | str):
        return repr(value)[:40]
    if isinstance(value, tuple | list):
        return f"tuple{len(value)}"
    return type(value).__name__


def call_pattern(call: CallSite) -> str:
    """The shape of a call that decides its rewrite: method or function, the kinds of its
    positional arguments in order, then its keywords (sorted) with their kinds. Calls of
    one API with one pattern get rewrites of one shape, so one execution proves them."""
    positional = [arg_kind(a) for a in call.args if a.keyword is None]
    keywords = sorted(f"{a.keyword}={arg_kind(a)}" for a in call.args if a.keyword)
    head = "x." if call.kind is CallKind.TENSOR_METHOD else ""
    return f"{head}F(" + ", ".join(positional + keywords) + ")"


@lru_cache(maxsize=1)
def load_proofs() -> dict[tuple[str, str, str], Proof]:
    """The packaged proofs, by (torch API, backend, call pattern)."""
    ref = resources.files("msready.analyzer").joinpath("data/fix_proofs.json")
    if not ref.is_file():
        return {}
    data = json.loads(ref.read_text(encoding="utf-8"))
    out = {}
    for row in data.get("proofs", []):
        proof = Proof(str(row["torch_call"]), str(row["rewrite"]), str(row["pynative"]),
                      str(row["graph"]), str(row.get("error", "")))
        for backend in row["backends"]:
            out[(str(row["api"]), str(backend), str(row["pattern"]))] = proof
    return out


def proof_for(api: str, backend: str, call: CallSite) -> Proof | None:
    """The proof of this call's pattern for ``api`` on ``backend``, or None (never run)."""
    return load_proofs().get((api, backend, call_pattern(call)))


@lru_cache(maxsize=1)
def _overrides() -> dict[str, Any]:
    """``analyzer/data/overrides.toml``, read once: the hand-written knowledge the table
    builder merged, of which the Cells read a few tables themselves."""
    ref = resources.files("msready.analyzer").joinpath("data/overrides.toml")
    return tomllib.loads(ref.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def legacy_tensor_types() -> dict[str, str]:
    """torch's legacy typed tensor constructors -> the MindSpore dtype they hold
    (``torch.FloatTensor`` -> ``float32``; ``torch.Tensor`` too), from the
    ``[legacy_tensor_types]`` of ``analyzer/data/overrides.toml``."""
    data = _overrides().get("legacy_tensor_types", {})
    return {"torch.Tensor": "float32", **{f"torch.{name}": str(dtype)
                                          for name, dtype in data.items() if name != "reason"}}


@lru_cache(maxsize=1)
def param_synonyms() -> dict[str, tuple[str, ...]]:
    """torch keyword -> the MindSpore names it is often renamed to, in order: the
    ``[param_synonyms]`` of ``analyzer/data/overrides.toml``, which the table builder
    matched signatures with; the Cells use them for APIs the table does not know."""
    data = _overrides().get("param_synonyms", {})
    return {str(k): tuple(str(v) for v in vs) for k, vs in data.items()}


def synonym(key: str, known: frozenset[str] | set[str] | None) -> str | None:
    """The MindSpore spelling of torch keyword ``key`` for an API accepting ``known``
    keywords, when ``key`` itself is not among them (``dim`` -> ``axis``)."""
    if known is None or key in known:
        return None
    return next((s for s in param_synonyms().get(key, ()) if s in known), None)


def import_object(dotted: str) -> Any:
    """The installed object a dotted name denotes (the longest importable module, then
    its attributes), or None when it does not exist."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:  # any import failure means "not a module"
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None
