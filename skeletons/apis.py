"""Where a torch API goes in MindSpore, for one backend: the API table first, then a
measured fallback (the same relative name in the installed MindSpore) while the table
does not know the API. Also the keyword renames a call needs: the table's own
(:meth:`~msready.analyzer.apitable.ApiEntry.renames`, the list the ``Fix:`` text renames by)
and, for APIs the table does not know, the synonyms the table was built with
(:func:`~msready.analyzer.apitable.synonym`)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol

from msready.analyzer.apitable import (
    ApiEntry,
    load_table,
    param_synonyms,
    synonym,
)
from msready.skeletons import ms_facts

# Where the same relative name is looked for when the table has no entry (longest prefix
# first), per backend family. Mirrors the table builder's candidates for GPU / CPU.
_FALLBACK: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("torch.nn.functional.", ("mindspore.ops.",)),
    ("torch.nn.init.", ("mindspore.common.initializer.",)),
    ("torch.nn.", ("mindspore.nn.",)),
    ("torch.Tensor.", ("mindspore.Tensor.",)),
    ("torch.linalg.", ("mindspore.ops.",)),
    ("torch.", ("mindspore.ops.", "mindspore.")),
)


@dataclass(frozen=True, slots=True)
class Mapping:
    """A torch API's MindSpore target for one backend and how its keywords change."""

    torch: str
    api: str | None
    renames: dict[str, str] = field(default_factory=dict)
    dropped: frozenset[str] = frozenset()  # torch keywords MindSpore does not have
    platforms: tuple[str, ...] = ()
    note: str = ""
    from_table: bool = True


def torch_default(name: str, param: str, backend: str) -> str | None:
    """The default of a torch API's parameter, as source text (``False``), when msready
    knows it: the API table's, where it says the defaults differ, else the default of
    the parameter MindSpore's target takes for it (by its MindSpore name), which is then
    the same; None when neither is known or the default is not a plain constant."""
    entry = load_table().lookup(name)
    if entry is not None:
        for diff in entry.params_for(backend):
            if diff.torch == param and diff.kind == "default":
                return diff.torch_default
            if diff.torch == param and diff.kind in ("missing", "semantics"):
                return None
    mapping = lookup(name, backend)
    wanted = mapping.renames.get(param, param)
    default = next((d for n, _, d in ms_facts.params(mapping.api) or () if n == wanted),
                   None) if mapping.api else None
    return repr(default[0]) if isinstance(default, list) else None


def _signature_names(api: str) -> set[str] | None:
    params = ms_facts.params(api)
    if params is None or any(kind == "VAR_KEYWORD" for _, kind, _ in params):
        return None
    return {name for name, _, _ in params}


def _from_entry(entry: ApiEntry, backend: str) -> Mapping:
    target = entry.target(backend)
    return Mapping(entry.torch, target.api, entry.renames(backend), entry.dropped(backend),
                   target.platforms, entry.suggestion or entry.notes)


def _synonym_renames(api: str) -> dict[str, str]:
    """torch keywords -> the names ``api`` takes for them, by the table's synonyms."""
    names = _signature_names(api)
    return {} if names is None else {
        old: new for old in param_synonyms() if (new := synonym(old, names)) is not None}


def _fallback(name: str) -> Mapping:
    for prefix, candidates in _FALLBACK:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):]
        if any(part.startswith("_") and not part.startswith("__") for part in rest.split(".")):
            break  # a private name promises nothing: a namesake may take other arguments
        for base in candidates:
            if not ms_facts.exists(base + rest):
                continue
            return Mapping(name, base + rest, _synonym_renames(base + rest), from_table=False,
                           note="same name in the installed MindSpore (not in the API table)")
        break
    return Mapping(name, None, from_table=False)


@lru_cache(maxsize=4096)
def lookup(name: str, backend: str) -> Mapping:
    """The MindSpore target of a fully qualified torch name for ``backend``."""
    table = load_table()
    entry = table.lookup(name)
    if entry is None:
        return _fallback(name)
    mapping = _from_entry(entry, backend)  # the table's word, also with no target here
    family = table.family(name)
    if family is None or table.exact(name) or family.torch.rstrip(".") == name:
        return mapping
    # A member of a family mapped to a namespace (``torch.nn.functional.x`` -> ``ops``):
    # the member of that namespace when MindSpore has one, else nothing to call.
    member = name[len(family.torch.rstrip(".")) + 1:]
    if mapping.api is None:
        return mapping
    if ms_facts.kind(mapping.api) == "module":
        target = f"{mapping.api}.{member}"
        return replace(mapping, api=target if ms_facts.exists(target) else None)
    # A family mapped to one function stands for what its own members do
    # (``torch.jit.script`` / ``trace`` -> ``mindspore.jit``, ``torch.onnx.export`` ->
    # ``mindspore.export``); a member of one of its submodules is a helper of that
    # machinery, not the function (``torch.onnx.symbolic_helper.parse_args``).
    if ms_facts.kind(mapping.api) == "other" and "." in member:
        return replace(mapping, api=None)
    # A family mapped to one class names where its members live, not what they become
    # (``torch.distributions.Normal`` is no ``Distribution()``): the member of that
    # class's namespace with the same name (``distribution.Normal``), else the class
    # itself only for the member it is (``torch.profiler.profile``), else nothing.
    *modules, member = [family.torch.rstrip(".").rpartition(".")[2], *member.split(".")]
    if ms_facts.kind(mapping.api) != "class" or member.startswith("_") or not all(
            part.islower() for part in modules):
        return mapping  # torch.nn.Module.train: a member of a class, not of a namespace
    namespace, _, own = mapping.api.rpartition(".")
    target = f"{namespace}.{member}"
    if ms_facts.exists(target) and target != mapping.api:
        return replace(mapping, api=target, renames={**_synonym_renames(target),
                                                     **mapping.renames})
    return mapping if member == own else replace(mapping, api=None)


def canonical(name: str) -> str:
    """The table's own spelling of a torch name (``torch.nn.modules.conv.Conv2d`` ->
    ``torch.nn.Conv2d``); public re-export paths are recognised without the table too."""
    entry = load_table().lookup(name)
    if entry is not None:
        return entry.torch
    parts = name.split(".")
    if name.startswith("torch.nn.modules.") and len(parts) >= 5:
        return "torch.nn." + parts[-1]
    if name.startswith("torch.nn.functional."):
        return name
    return name


class HasBases(Protocol):
    """What :func:`inherits` reads: the repository model, or one file's noted reads of it."""

    def external_bases(self, class_qualname: str, /) -> Iterable[str]: ...


def inherits(model: HasBases, cls: str, torch_name: str) -> bool:
    """True when a repository class derives from the torch class ``torch_name``."""
    return any(canonical(base) == torch_name for base in model.external_bases(cls))


def short_name(api: str) -> str:
    """How generated code spells a MindSpore API, given its header imports."""
    for prefix, alias in (("mindspore.nn.", "nn."), ("mindspore.ops.", "ops."),
                          ("mindspore.mint.", "mint."), ("mindspore.Tensor.", "Tensor.")):
        if api.startswith(prefix):
            return alias + api[len(prefix):]
    return api


@lru_cache(maxsize=1)
def _torch_orders() -> dict[str, tuple[str, ...]]:
    """The packaged positional parameter names of torch's APIs (written by
    tools/build_api_table.py from the torch it was built with)."""
    text = resources.files("msready.analyzer").joinpath("data/torch_orders.json").read_text(
        encoding="utf-8")
    return {name: tuple(order) for name, order in json.loads(text).items()}


def torch_order(name: str) -> tuple[str, ...] | None:
    """The positional parameter names of a torch API, None when unknown. They come from
    msready's data, not from an installed torch, so a Cell is the same whether or not
    torch is installed next to msready."""
    return _torch_orders().get(name)


def inplace_twin(name: str) -> str | None:
    """The in-place function a deprecated ``torch.nn.init`` spelling calls
    (``kaiming_normal`` -> ``kaiming_normal_``): it takes anything (``*args, **kwargs``),
    so its parameters are the twin's."""
    return f"{name}_" if name.startswith("torch.nn.init.") and not name.endswith("_") else None


def live_torch_order(name: str) -> tuple[str, ...] | None:
    """The positional parameter names of a torch API, read from the installed torch
    (what tools/build_api_table.py packages)."""
    if not name.startswith("torch."):
        return None
    try:
        obj: Any = importlib.import_module("torch")
        for attr in name.split(".")[1:]:
            obj = getattr(obj, attr)
        target = obj.__init__ if inspect.isclass(obj) else obj
        params = list(inspect.signature(target).parameters.values())
    except ValueError:  # a builtin: its docstring's first line holds the signature
        return _doc_order(obj)
    except Exception:  # torch missing, or no such API
        return None
    only_varargs = bool(params) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                        for p in params)
    twin = inplace_twin(name)
    if twin and only_varargs:
        return live_torch_order(twin) or ()
    if only_varargs:  # a dispatching wrapper (``F.max_pool2d``): its documented signature
        documented = _doc_order(obj)
        if documented:
            return documented
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds and p.name != "self")


@lru_cache(maxsize=1024)
def ms_order(api: str) -> tuple[str, ...] | None:
    """The positional parameter names of a MindSpore API, None when unknown."""
    params = ms_facts.params(api)
    if params is None:
        return None
    kinds = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    return tuple(name for name, kind, _ in params if kind in kinds)


@lru_cache(maxsize=1024)
def ms_keywords(api: str) -> frozenset[str] | None:
    """Every keyword a MindSpore API accepts, None when unknown or open (``**kwargs``)."""
    names = _signature_names(api)
    return frozenset(names) if names is not None else None


def _doc_order(obj: Any) -> tuple[str, ...] | None:
    """Positional parameters from the signature a docstring opens with
    (``cat(tensors, dim=0, *, out=None) -> Tensor``, possibly over several lines)."""
    doc = (getattr(obj, "__doc__", None) or "").strip()
    opening = doc.find("(")
    if opening <= 0 or not all(part.isidentifier() for part in doc[:opening].split(".")):
        return None
    depth, end = 0, -1
    for index, char in enumerate(doc[opening:], start=opening):  # the matching ")"
        depth += (char == "(") - (char == ")")
        if depth == 0:
            end = index
            break
    if end < 0:
        return None
    params = doc[opening + 1:end]
    try:
        tree = ast.parse(f"def f({params}): pass")
    except SyntaxError:
        return None
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args] if a.arg != "self")


@lru_cache(maxsize=1024)
def ms_switches(api: str) -> frozenset[str]:
    """The parameters of a MindSpore API whose default is True or False: switches, which
    MindSpore's layers check to be a bool where torch takes any value as one."""
    params = (ms_facts.params(api) if api else None) or ()
    return frozenset(name for name, _, default in params
                     if isinstance(default, list) and isinstance(default[0], bool))


@lru_cache(maxsize=1024)
def ms_tuple_params(api: str) -> frozenset[str]:
    """The parameters of a MindSpore API documented to take a tuple and not a list
    (``kernel_size (Union[int, tuple[int]])``): its checks refuse the list torch also
    takes there (``F.max_pool2d(x, [2, 2])``)."""
    return ms_facts.tuple_params(api) if api else frozenset()


@lru_cache(maxsize=1024)
def ms_varargs(api: str) -> bool:
    """True when a MindSpore function takes ``*args`` (``ops.randn(*size)``)."""
    params = (ms_facts.params(api) if api else None) or ()
    return any(kind == "VAR_POSITIONAL" for _, kind, _ in params)
