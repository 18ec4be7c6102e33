"""What the Cells' translation asks of the installed MindSpore, remembered per version.

Translating a Cell asks the installed MindSpore a few questions about the APIs it calls:
does the name exist, is it a module or a class, what parameters does it take (and their
defaults), which of them its documentation wants as tuples, which attributes its
constructor keeps. Answering needs ``import mindspore``, about three seconds, which a
re-scan of a changed repository would pay only to ask again what the last scan asked.

The answers depend only on the installed MindSpore, so they are kept in msready's cache
folder under its version (``mindspore-facts/<format>-<version>.json``) and read back by
the next scan: a scan whose Cells' APIs were all asked about before does not import
MindSpore in the main process. Without a cache (``--no-cache``, or outside a scan) the
answers live in memory only.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from msready.analyzer.apitable import import_object

# Part of the file's name: a new number when the answers change shape, so that files in
# the older shape are not read.
FORMAT = 1

# One parameter of a signature: (name, kind, default). The kind is inspect's
# (``POSITIONAL_OR_KEYWORD``...); the default is EMPTY, OTHER (a value that is not a plain
# constant), or a one-item list holding the constant (None, a bool, an int, a float).
Param = tuple[str, str, Any]
EMPTY = "empty"
OTHER = "other"

# One parameter of a docstring's ``Args:`` section: ``kernel_size (Union[int, tuple[int]]):``
_DOC_PARAM = re.compile(r"^\s+(\w+) \((.+?)\)\s*(?:,\s*optional)?:", re.M)
_QUESTIONS = ("kind", "params", "tuple_params", "kept")


def _version() -> str:
    from msready.skeletons.cache import installed_version

    return installed_version("mindspore")


@dataclass
class _Answers:
    """Every answer known, by question and dotted name; where they are kept, if anywhere."""

    by_question: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {q: {} for q in _QUESTIONS})
    path: Path | None = None
    new: int = 0  # answers found since the file was read

    def read(self, path: Path) -> None:
        """Take the answers kept in ``path``; a file that is not there, not JSON or holds
        answers of another shape (written by hand, cut short) gives those it can."""
        self.path = path
        with contextlib.suppress(OSError, ValueError, AttributeError):
            kept = json.loads(path.read_text(encoding="utf-8"))
            for question in _QUESTIONS:
                answers = kept.get(question)
                if isinstance(answers, dict):
                    valid = {k: v for k, v in answers.items() if _VALID[question](v)}
                    self.by_question[question] = {**valid, **self.by_question[question]}

    def write(self) -> None:
        """Merge the new answers into the file (another scan may have added its own)."""
        if self.path is None or not self.new:
            return
        on_disk = _Answers()
        on_disk.read(self.path)
        for question in _QUESTIONS:
            on_disk.by_question[question].update(self.by_question[question])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(on_disk.by_question, handle, sort_keys=True)
            os.replace(tmp, self.path)
            self.new = 0
        except OSError:  # a cache that cannot be written costs time, never the scan
            self.path = None


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _param(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) \
        and isinstance(value[1], str) and (value[2] in (EMPTY, OTHER) or (
            isinstance(value[2], list) and len(value[2]) == 1))


# What a kept answer to each question looks like.
_VALID: dict[str, Callable[[Any], bool]] = {
    "kind": lambda v: v is None or v in ("module", "class", "other"),
    "params": lambda v: v is None or (isinstance(v, list) and all(_param(p) for p in v)),
    "tuple_params": _names,
    "kept": _names,
}
_answers = _Answers()


def remember_in(cache_dir: Path | None) -> None:
    """Read and keep the answers in ``cache_dir`` (None: in memory only), for the
    installed MindSpore."""
    global _answers
    _answers = _Answers()
    if cache_dir is not None:
        _answers.read(cache_dir / "mindspore-facts" / f"{FORMAT}-{_version()}.json")


def save() -> None:
    """Write the answers found since :func:`remember_in` (when they are kept)."""
    _answers.write()


def _ask(question: str, dotted: str, answer: Any) -> Any:
    known = _answers.by_question[question]
    if dotted not in known:
        known[dotted] = answer(dotted)
        _answers.new += 1
    return known[dotted]


def kind(dotted: str) -> str | None:
    """``module``, ``class`` or ``other`` for what a dotted MindSpore name denotes; None
    when it does not exist."""
    return _ask("kind", dotted, _kind)  # type: ignore[no-any-return]


def exists(dotted: str) -> bool:
    return kind(dotted) is not None


def params(dotted: str) -> list[Param] | None:
    """The parameters a call of the API takes (a class's constructor's, without
    ``self``); None when it does not exist or has no readable signature."""
    found = _ask("params", dotted, _params)
    return None if found is None else [(str(n), str(k), d) for n, k, d in found]


def tuple_params(dotted: str) -> frozenset[str]:
    """The parameters the API's documentation wants as a tuple and not a list."""
    return frozenset(_ask("tuple_params", dotted, _tuple_params))


def kept_attributes(dotted: str) -> frozenset[str]:
    """The attributes the constructors of a MindSpore class (its own and its bases') set
    on the instance (``self.stride = ...``), read from their source; empty when the
    class or its source is not there."""
    return frozenset(_ask("kept", dotted, _kept))


def _kind(dotted: str) -> str | None:
    obj = import_object(dotted)
    if obj is None:
        return None
    if isinstance(obj, ModuleType):
        return "module"
    return "class" if inspect.isclass(obj) else "other"


def _signature(obj: Any) -> inspect.Signature:
    """What a call of ``obj`` takes: a class's own ``__init__``, else its ``__new__``
    (``ParameterTuple(iterable)``, whose ``__init__`` is tuple's ``*args``)."""
    if inspect.isclass(obj) and not inspect.isfunction(obj.__init__):
        return inspect.signature(obj)
    return inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)


def _default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return EMPTY
    if value is None or isinstance(value, (bool, int, float)):
        return [value]
    return OTHER


def _params(dotted: str) -> list[Param] | None:
    obj = import_object(dotted)
    if obj is None:
        return None
    try:
        found = _signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind.name, _default(p.default)) for p in found if p.name != "self"]


def _tuple_params(dotted: str) -> list[str]:
    obj = import_object(dotted)
    doc = (getattr(obj, "__doc__", None) or "") if obj is not None else ""
    start = doc.find("Args:")
    if start < 0:
        return []
    end = doc.find("Returns:", start)
    section = doc[start:end if end > 0 else len(doc)]
    return sorted(name for name, kind in _DOC_PARAM.findall(section)
                  if "tuple" in kind.lower() and "list" not in kind.lower())


def _kept(dotted: str) -> list[str]:
    cls = import_object(dotted)
    if not inspect.isclass(cls):
        return []
    found: set[str] = set()
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        try:
            source = inspect.getsource(init) if init is not None else ""
        except (OSError, TypeError):
            continue
        found.update(re.findall(r"self\.(\w+)\s*=", source))
    return sorted(found)
