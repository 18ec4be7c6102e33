"""Regenerate the torch -> MindSpore API table from the installed torch and MindSpore.

How to regenerate (needs torch and MindSpore installed, as in the test dependencies)::

    python tools/build_api_table.py            # rewrite analyzer/data/api_table.json
                                               # and analyzer/data/tensor_methods.txt
    python tools/build_api_table.py --check    # exit 1 when the committed files are stale
    python tools/build_api_table.py --probe    # also re-measure the call forms of the most
                                               # used APIs (tools/api_probe.py, a few
                                               # minutes) into analyzer/data/api_probe.json

Hand-written knowledge (renames MindSpore documents, semantic traps, torchvision names,
torch.cuda / amp / backends advice) lives in ``analyzer/data/overrides.toml``; every
override carries a ``reason``. Edit that file, never the generated JSON.

What is measured here: which torch APIs exist (enumerated from the installed torch), which
MindSpore target exists for each backend (same relative name first, then overrides), the
"Supported Platforms" each target's docstring lists, and the parameter differences derived
from both signatures (renamed, missing, different defaults), and (from
``analyzer/data/api_probe.json``) how the most used call forms fare when executed on CPU in
PyNative and GRAPH_MODE: a form that fails or differs from torch becomes a parameter
difference with the rewrite that matched torch, or a measured form the rules report.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_probe  # (the sibling module: call forms measured by execution)

from msready.analyzer.apitable import import_object
from msready.skeletons.apis import inplace_twin

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "analyzer" / "data"
BACKENDS = ("ascend", "gpu", "cpu")
PLATFORM_OF = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}
# torch parameters that say where a tensor lives, not what the API computes; device
# handling is reported by the idiom rules, so these never make an entry "differs".
# ``inplace`` / ``non_blocking`` only save memory or time: the result is the same without them.
IGNORED_PARAMS = frozenset({"self", "out", "device", "layout", "pin_memory", "memory_format",
                            "requires_grad", "size_average", "reduce", "inplace",
                            "non_blocking"})
IGNORED_DEFAULTS = frozenset({"dtype"})

# Where the same relative name is looked for, per torch namespace (longest prefix wins):
# (candidates for the Ascend target, candidates for the GPU / CPU targets).
CANDIDATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "torch.nn.functional.": (("mindspore.mint.nn.functional.", "mindspore.ops."),
                             ("mindspore.ops.", "mindspore.mint.nn.functional.")),
    "torch.nn.init.": (("mindspore.common.initializer.",), ("mindspore.common.initializer.",)),
    "torch.nn.": (("mindspore.mint.nn.", "mindspore.nn."), ("mindspore.nn.", "mindspore.mint.nn.")),
    "torch.Tensor.": (("mindspore.Tensor.", "mindspore.mint.", "mindspore.ops."),
                      ("mindspore.Tensor.", "mindspore.ops.")),
    "torch.linalg.": (("mindspore.mint.linalg.", "mindspore.ops."), ("mindspore.ops.",)),
    "torch.fft.": (("mindspore.ops.",), ("mindspore.ops.",)),
    "torch.special.": (("mindspore.mint.special.", "mindspore.ops."), ("mindspore.ops.",)),
    "torch.optim.lr_scheduler.": (("mindspore.experimental.optim.lr_scheduler.",),
                                  ("mindspore.experimental.optim.lr_scheduler.",)),
    "torch.optim.": (("mindspore.mint.optim.", "mindspore.experimental.optim."),
                     ("mindspore.experimental.optim.", "mindspore.mint.optim.")),
    "torch.distributed.": (("mindspore.communication.", "mindspore.communication.comm_func."),
                           ("mindspore.communication.", "mindspore.communication.comm_func.")),
    "torch.autograd.": ((), ()),
    "torch.utils.data.": ((), ()),
    "torch.cuda.": ((), ()),
    "torch.amp.": ((), ()),
    "torch.backends.": ((), ()),
    "torchvision.": ((), ()),
    "torch.": (("mindspore.mint.", "mindspore.ops.", "mindspore."),
               ("mindspore.ops.", "mindspore.mint.", "mindspore.")),
}
# The input pipeline runs on the host whatever the device: its APIs fit every backend.
HOST_SIDE = ("mindspore.dataset.",)


# ----- reading the installed MindSpore ------------------------------------------------

def resolve(dotted: str) -> Any:
    """The object a dotted name denotes (longest importable module, then attributes)."""
    return import_object(dotted)


_PLATFORMS = re.compile(r"Supported Platforms:\s*((?:``\w+``[\s,]*)+)")


def doc_platforms(obj: Any) -> list[str] | None:
    """The platforms the docstring's "Supported Platforms:" sections list (an API with
    overloads documents one section per overload: their union, in first-seen order), None
    without any."""
    return _section_platforms(inspect.getdoc(obj) or "")


def _section_platforms(text: str) -> list[str] | None:
    found: list[str] = []
    matches = list(_PLATFORMS.finditer(text))
    for match in matches:
        found += [p for p in re.findall(r"``(\w+)``", match.group(1)) if p not in found]
    return found if matches else None


def platforms(api: str) -> list[str]:
    """Platforms of a MindSpore API: its own docstring (every overload's section), else (for
    ``Tensor`` methods) the same-name ``mindspore.ops`` function's docstring, else an empty
    list (undocumented)."""
    forms = _doc_forms(api)
    if len(forms) > 1:
        found: list[str] = []
        for _params, plats in forms:
            found += [p for p in plats if p not in found]
        return found
    return _own_platforms(api, doc_platforms(resolve(api)))


def _own_platforms(api: str, found: list[str] | None) -> list[str]:
    """``found``, else for a ``Tensor`` method the same-name ``mindspore.ops`` function's."""
    if found is None and api.startswith("mindspore.Tensor."):
        ops_fn = resolve("mindspore.ops." + api.rsplit(".", 1)[1])
        if ops_fn is not None and not inspect.isclass(ops_fn):
            found = doc_platforms(ops_fn)
    return found or []


def runs_on(api: str, backend: str) -> bool:
    """True when the API's documented platforms include the backend (undocumented: yes;
    host-side data pipeline APIs: yes; overloads: any of them)."""
    if api.startswith(HOST_SIDE):
        return True
    forms = overloads(api) if api.startswith("mindspore.Tensor.") else []
    if forms:
        return any(_runs(api, params, plats, backend) for params, plats in forms)
    plats = platforms(api)
    return not plats or PLATFORM_OF[backend] in plats


def measured_platforms(api: str) -> list[str]:
    """The documented platforms of a target plus ``CPU`` when a Tensor method documented
    elsewhere was measured to match torch on this machine's CPU."""
    plats = platforms(api)
    if plats and "CPU" not in plats and api.startswith("mindspore.Tensor.") \
            and runs_on(api, "cpu"):
        plats = [*plats, "CPU"]
    fallbacks = api_probe.load_probe().get("cpu_fallbacks", {}) if plats else {}
    if plats and "CPU" not in plats and any(api_probe.cpu_fallback(n) == api for n in fallbacks):
        plats = [*plats, "CPU"]
    return plats


# ----- signatures ------------------------------------------------------------------------

Param = tuple[str, str | None, str]  # name, default as source text (None: required), kind


def _from_docstring(obj: Any, name: str) -> list[Param] | None:
    for line in (inspect.getdoc(obj) or "").splitlines()[:6]:
        match = re.match(rf"\s*(?:\w+\.)*{re.escape(name)}\((.*)\)\s*(->.*)?$", line)
        if not match:
            continue
        try:
            tree = ast.parse(f"def f({match.group(1)}): pass")
        except SyntaxError:
            return None
        fn = tree.body[0]
        assert isinstance(fn, ast.FunctionDef)
        return _params_of_ast(fn.args)
    return None


def _signature_line(line: str, name: str) -> list[Param] | None:
    """Parameters of a docstring line ``name(a, b=1) -> T`` (or ``.. method:: Tensor.name(...)``),
    None when the line is not one."""
    match = re.match(rf"\s*(?:\.\. method:: )?(?:\w+\.)*{re.escape(name)}\((.*)\)\s*(->.*)?$",
                     line)
    if not match:
        return None
    try:
        tree = ast.parse(f"def f({match.group(1)}): pass")
    except SyntaxError:
        return None
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return [p for p in _params_of_ast(fn.args) if p[0] != "self"]


Overload = tuple[list[Param], list[str]]  # parameters, documented platforms ([]: undocumented)


def overloads(api: str) -> list[Overload]:
    """The documented call forms of a MindSpore API with the platforms of each. MindSpore
    2.x Tensor methods keep a torch-like overload (often Ascend only) beside a legacy
    numpy-like one (every platform), each in its own docstring section; an API without
    such sections has one form, from its signature."""
    forms = _doc_forms(api)
    if len(forms) > 1:
        return forms
    obj = resolve(api)
    params = signature(obj, api.rsplit(".", 1)[1]) if callable(obj) else None
    return [(params, platforms(api))] if params is not None else []


def _doc_forms(api: str) -> list[Overload]:
    """The call forms a docstring documents, one section each (a section without its own
    platforms takes those of the same-name ``mindspore.ops`` function for Tensor methods)."""
    name = api.rsplit(".", 1)[1]
    forms: list[tuple[list[Param], list[str]]] = []
    for line in (inspect.getdoc(resolve(api)) or "").splitlines():
        params = _signature_line(line, name) if not line.startswith(" ") else None
        if params is not None:
            forms.append((params, []))
        elif forms:
            forms[-1][1].append(line)
    return [(p, _own_platforms(api, _section_platforms("\n".join(text)))) for p, text in forms]


# Sample keyword values for probing a Tensor method's call form on this machine's CPU (on a
# 2x3x4 float tensor); TENSOR stands for a second tensor of that shape. A form with a
# required parameter not listed here is not probed.
TENSOR = object()
PROBE_VALUES: dict[str, Any] = {"dim": 1, "dim0": 1, "dim1": 2, "keepdim": True,
                                "split_size": 2, "chunks": 2, "descending": True,
                                "start_dim": 1, "end_dim": -1, "k": 2, "largest": True,
                                "other": TENSOR, "src": TENSOR, "end": TENSOR,
                                "tensor1": TENSOR, "tensor2": TENSOR, "weight": 0.5,
                                "value": 1.5, "min": 1.0, "max": 3.0, "exponent": 2.0}


def _arrays(value: Any) -> list[Any] | None:
    """The numpy arrays of a result (a tensor or a tuple of tensors), None for others."""
    import numpy

    items = value if isinstance(value, tuple | list) else (value,)
    out = []
    for item in items:
        to_numpy = getattr(item, "asnumpy", None) or getattr(item, "numpy", None)
        if to_numpy is None:
            return None
        out.append(numpy.asarray(to_numpy(), dtype=numpy.float64))
    return out


def _probe_args(params: list[Param]) -> tuple[list[Any], dict[str, Any]] | None:
    """Arguments for a probe call of one form (required positional parameters by position,
    the others by keyword), None when it cannot be probed."""
    if any(p[2] in ("var", "varkw") and p[0] not in PROBE_VALUES for p in params):
        return None
    if any(p[1] is None and p[2] != "varkw" and p[0] not in PROBE_VALUES for p in params):
        return None
    args = [PROBE_VALUES[p[0]] for p in params if p[1] is None and p[2] == "positional"]
    kwargs = {p[0]: PROBE_VALUES[p[0]] for p in params[len(args):] if p[0] in PROBE_VALUES}
    return args, kwargs


def cpu_matches_torch(api: str, params: list[Param]) -> bool:
    """True when the ``mindspore.Tensor`` method ``api`` called in this form on CPU runs and
    gives torch's result for the same call (measured on a small tensor)."""
    import mindspore
    import numpy
    import torch

    name = api.rsplit(".", 1)[1]
    probe = _probe_args(params)
    if probe is None or not hasattr(torch.Tensor, name):
        return False
    data = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4) % 7
    second = data + 1

    def call(make: Any) -> list[Any] | None:
        def value(v: Any) -> Any:
            return make(second) if v is TENSOR else v
        args = [value(v) for v in probe[0]]
        kwargs = {k: value(v) for k, v in probe[1].items()}
        return _arrays(getattr(make(data.copy()), name)(*args, **kwargs))

    try:
        mindspore.set_device("CPU")
        ours, theirs, again = call(mindspore.Tensor), call(torch.tensor), call(torch.tensor)
    except Exception:
        return False
    if ours is None or theirs is None or again is None or len(ours) != len(theirs):
        return False
    random = not all(numpy.allclose(a, b, equal_nan=True) for a, b in zip(theirs, again,
                                                                          strict=True))
    return all(a.shape == b.shape and (random or numpy.allclose(a, b, equal_nan=True))
               for a, b in zip(ours, theirs, strict=True))  # random results: shapes only


def _runs(api: str, params: list[Param], plats: list[str], backend: str) -> bool:
    """True when a call form runs on ``backend``: documented there (or undocumented), or,
    for a Tensor method's overload documented elsewhere, measured on CPU to match torch."""
    if not plats or PLATFORM_OF[backend] in plats or api.startswith(HOST_SIDE):
        return True
    return backend == "cpu" and api.startswith("mindspore.Tensor.") \
        and cpu_matches_torch(api, params)


def overload_for(api: str, backend: str, torch_params: list[Param] | None,
                 synonyms: dict[str, list[str]], ignored: frozenset[str] = frozenset(),
                 measured: tuple[str, ...] = ()) -> list[Param] | None:
    """The call form of ``api`` that runs on ``backend`` and differs least from torch's
    (among those taking the ``measured`` keywords, when the probe found that only those
    run: ``Tensor.split(axis=)`` in GRAPH_MODE on CPU)."""
    forms = [p for p, plats in overloads(api) if _runs(api, p, plats, backend)]
    taking = [p for p in forms if set(measured) <= {name for name, _d, _k in p}]
    forms = taking or forms
    if not forms:
        return None
    if torch_params is None:
        return forms[0]
    return min(forms, key=lambda p: len(param_diffs(torch_params, p, synonyms, ignored) or []))


def encode(params: list[Param] | None) -> list[str]:
    """Parameter names in call order: ``*name`` for the variadic positional parameter, a bare
    ``*`` before keyword-only ones, ``**`` forms left out. Only names before the first ``*``
    can be passed by position."""
    out: list[str] = []
    for name, _default, kind in params or []:
        if kind == "var":
            out.append("*" + name)
        elif kind == "keyword" and not any(p.startswith("*") for p in out):
            out += ["*", name]
        elif kind != "varkw":
            out.append(name)
    return out


def _params_of_ast(args: ast.arguments) -> list[Param]:
    out: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        out.append((arg.arg, None if default is None else ast.unparse(default), "positional"))
    if args.vararg:
        out.append((args.vararg.arg, None, "var"))
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append((arg.arg, None if kw_default is None else ast.unparse(kw_default), "keyword"))
    if args.kwarg:
        out.append((args.kwarg.arg, None, "varkw"))
    return out


_KIND = {inspect.Parameter.POSITIONAL_ONLY: "positional",
         inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
         inspect.Parameter.VAR_POSITIONAL: "var", inspect.Parameter.KEYWORD_ONLY: "keyword",
         inspect.Parameter.VAR_KEYWORD: "varkw"}


def signature(obj: Any, name: str) -> list[Param] | None:
    """Parameters of a function, method or class constructor, ``self`` dropped; from
    ``inspect.signature`` when it works, else from the docstring's first lines."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return _from_docstring(obj, name)
    out: list[Param] = []
    for p in sig.parameters.values():
        default = None if p.default is p.empty else _default_text(p.default)
        out.append((p.name, default, _KIND[p.kind]))
    if out and out[0][0] == "self":
        out = out[1:]
    if inspect.isclass(obj) and [p[2] for p in out] == ["var", "varkw"]:
        return _from_docstring(obj, name)
    return out


def _default_text(value: Any) -> str:
    """Source-like text of a default; functions and classes by qualified name (their repr
    holds a memory address, which would make the generated file differ on every run)."""
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}".lstrip(".")
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def _same_default(a: str, b: str) -> bool:
    try:
        return bool(ast.literal_eval(a) == ast.literal_eval(b))
    except (ValueError, SyntaxError):
        return a == b


# ----- parameter differences ------------------------------------------------------------

def param_diffs(torch_params: list[Param], ms_params: list[Param] | None,
                synonyms: dict[str, list[str]], ignored: frozenset[str] = frozenset()
                ) -> list[dict[str, Any]] | None:
    """Renamed, missing and different-default parameters of a torch API against one target
    (``ignored`` torch parameters neither compared nor matched); None when the target's
    parameters cannot be read."""
    if ms_params is None:
        return None
    ms_by_name = {p[0]: p for p in ms_params}
    torch_names = {p[0] for p in torch_params}
    open_kwargs = any(p[2] == "varkw" for p in ms_params)
    used: set[str] = set()
    diffs: list[dict[str, Any]] = []
    for index, (name, default, kind) in enumerate(torch_params):
        if name in IGNORED_PARAMS or name in ignored or kind in ("var", "varkw"):
            continue
        match = name if name in ms_by_name else None
        if match is None:
            match = next((s for s in synonyms.get(name, []) if s in ms_by_name
                          and s not in torch_names and s not in used), None)
        if match is None and kind == "positional" and default is None \
                and index < len(ms_params):
            candidate = ms_params[index]  # two required parameters at the same place
            if (candidate[2] == "positional" and candidate[1] is None
                    and candidate[0] not in torch_names
                    and candidate[0] not in used and candidate[0] not in IGNORED_PARAMS):
                match = candidate[0]
        if match is None:
            if not open_kwargs:
                diffs.append({"kind": "missing", "torch": name, "torch_default": default})
            continue
        used.add(match)
        if match != name:
            diffs.append({"kind": "renamed", "torch": name, "mindspore": match})
        ms_default = ms_by_name[match][1]
        if (default is not None and ms_default is not None and name not in IGNORED_DEFAULTS
                and not _same_default(default, ms_default)):
            diffs.append({"kind": "default", "torch": name, "mindspore": match,
                          "torch_default": default, "mindspore_default": ms_default})
    return diffs


# ----- building entries ------------------------------------------------------------------

def candidates_for(name: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The relative name and the candidate prefixes for a torch name."""
    for prefix in sorted(CANDIDATES, key=len, reverse=True):
        if name.startswith(prefix):
            ascend, other = CANDIDATES[prefix]
            return name[len(prefix):], ascend, other
    return name, (), ()


def _usable(api: str, torch_obj: Any, backend: str) -> bool:
    obj = resolve(api)
    if obj is None or inspect.ismodule(obj):
        return False
    if torch_obj is not None and inspect.isclass(torch_obj) != inspect.isclass(obj) \
            and not api.startswith("mindspore.common.initializer."):
        return False
    return runs_on(api, backend)


def find_targets(name: str, torch_obj: Any, override: dict[str, Any]) -> dict[str, str | None]:
    """The target per backend: the override's when it names one, else the first candidate
    with the same relative name that exists and whose platforms include the backend."""
    rel, ascend, other = candidates_for(name)
    if name.startswith("torch.nn.init."):
        rel = "".join(part.capitalize() for part in rel.rstrip("_").split("_"))
    explicit: dict[str, Any] = dict(override.get("targets", {}))
    if "target" in override:
        explicit = {b: override["target"] for b in BACKENDS} | explicit
    out: dict[str, str | None] = {}
    for backend in BACKENDS:
        if backend in explicit:
            api = explicit[backend] or None
            if api is not None and not _usable(api, None, backend):
                warnings.warn(f"{name}: override target {api} unusable on {backend}",
                              stacklevel=1)
                api = None
            out[backend] = api
            continue
        prefixes = ascend if backend == "ascend" else other
        out[backend] = next((p + rel for p in prefixes if _usable(p + rel, torch_obj, backend)),
                            None)
        if backend == "cpu" and out[backend] is None:
            out[backend] = api_probe.cpu_fallback(name)  # measured here despite its docs
    return out


def _merge_params(per_backend: dict[str, list[dict[str, Any]]],
                  targets: dict[str, str | None],
                  extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One list of differences, each tagged with the backends it applies to."""
    merged: dict[str, dict[str, Any]] = {}
    for backend in BACKENDS:
        if targets[backend] is None:
            continue
        for diff in per_backend.get(backend, []):
            key = json.dumps(diff, sort_keys=True)
            merged.setdefault(key, {**diff, "backends": []})["backends"].append(backend)
    for diff in extra:
        diff = dict(diff)
        diff.setdefault("backends", [b for b in BACKENDS if targets[b]])
        for key in [k for k, d in merged.items() if d["torch"] == diff["torch"]
                    and set(d["backends"]) <= set(diff["backends"])
                    and diff.get("replaces", True)]:
            del merged[key]
        diff.pop("replaces", None)
        merged[json.dumps(diff, sort_keys=True)] = diff
    live = [b for b in BACKENDS if targets[b]]
    out = []
    for diff in merged.values():
        if sorted(diff["backends"]) == sorted(live):
            diff["backends"] = []
        out.append({k: v for k, v in diff.items() if v not in (None, "") or k == "mindspore"})
    return out


def build_entry(name: str, torch_obj: Any, overrides: dict[str, Any],
                namespaces: dict[str, Any], synonyms: dict[str, list[str]],
                probed: dict[str, Any] | None = None) -> dict[str, Any]:
    """One table entry for a torch API (``probed``: its measured call forms, merged)."""
    override = overrides.get(name, {})
    current = find_targets(name, torch_obj, override)
    if probed and probed.get("target") == current["cpu"]:  # measured on today's target
        override = api_probe.merge(override, probed, current, _ms_version())
    ns = next((v for k, v in sorted(namespaces.items(), key=lambda kv: -len(kv[0]))
               if name.startswith(k + ".")), {})
    if torch_obj is not None and not callable(torch_obj):  # a dtype: torch.float32
        dtype_target = "mindspore." + name.rsplit(".", 1)[1]
        override = {"target": dtype_target if resolve(dtype_target) is not None else "",
                    **override}
    targets = find_targets(name, torch_obj, override)
    local_synonyms = {**synonyms, **{k: [v] for k, v in override.get("renames", {}).items()}}
    short = name.rsplit(".", 1)[1]
    torch_params = signature(torch_obj, short) if callable(torch_obj) else None
    if torch_params is not None and all(p[2] in ("var", "varkw") for p in torch_params):
        # (*args, **kwargs): a deprecated spelling takes its in-place twin's parameters;
        # anything else has nothing to compare or bind by position
        twin_name = inplace_twin(name)
        twin = import_object(twin_name) if twin_name else None
        torch_params = signature(twin, short + "_") if callable(twin) else None
    ignored = frozenset([*ns.get("ignore_params", []), *override.get("ignore_params", [])])
    per_backend: dict[str, list[dict[str, Any]]] = {}
    forms: dict[str, list[Param] | None] = {}
    unread: list[str] = []
    for backend in BACKENDS:
        api = targets[backend]
        if not api:
            continue
        measured = tuple(override.get("measured_keywords", {}).get(backend, ()))
        forms[backend] = overload_for(api, backend, torch_params, local_synonyms, ignored,
                                      measured)
        diffs = param_diffs(torch_params or [], forms[backend], local_synonyms, ignored)
        if (diffs is None or torch_params is None) and callable(torch_obj) \
                and callable(resolve(api)) and api not in unread:
            unread.append(api)
        per_backend[backend] = diffs or []
    params = _merge_params(per_backend, targets, override.get("params", []))
    live = [b for b in BACKENDS if targets[b]]
    notes = override.get("notes", "") or (ns.get("notes", "") if live else "")
    if unread:
        notes = (notes + " " if notes else "") + "Parameters not compared (no readable " \
            "signature): check the call's arguments by hand."
    usage_differs = bool(live) and "differs" in (override.get("status"), ns.get("status"))
    usage_backends = [b for b in override.get("usage_backends", []) if targets.get(b)]
    measured_forms = [f for f in override.get("measured_forms", [])
                      if any(targets.get(b) for b in f["backends"] or BACKENDS)]
    if not live:
        status = "missing"
    elif params or len(live) < len(BACKENDS) or usage_differs or usage_backends \
            or measured_forms or _method_to_function(name, targets):
        status = "differs"
    else:
        status = "consistent"
    entry: dict[str, Any] = {
        "torch": name,
        "kind": _kind(torch_obj, name),
        "status": status,
        "usage_differs": usage_differs,
        "usage_backends": usage_backends,
        "targets": {b: {"api": targets[b], "platforms": measured_platforms(targets[b])
                        if targets[b] else [], "params": encode(forms.get(b))}
                    for b in BACKENDS},
        "torch_params": encode(torch_params),
        "params": params,
        "notes": notes,
        "workaround": None,
        "suggestion": override.get("suggestion", ""),
    }
    if measured_forms:
        entry["measured_forms"] = measured_forms
    if len(live) < len(BACKENDS):
        entry["workaround"] = override.get("workaround") or ns.get("workaround")
        entry["suggestion"] = entry["suggestion"] or ns.get("suggestion", "") \
            or _auto_suggestion(name, targets)
        entry["notes"] = entry["notes"] or ns.get("notes", "")
        if entry["workaround"] is None:
            entry["workaround"] = "composition" if _inplace_base(name) else "custom-op"
    return entry


def _method_to_function(name: str, targets: dict[str, str | None]) -> bool:
    """True when a torch Tensor method becomes a function on some backend (the installed
    ``mindspore.Tensor`` has no usable method of that name there)."""
    return name.startswith("torch.Tensor.") and any(
        api and not api.startswith("mindspore.Tensor.") for api in targets.values())


def _kind(obj: Any, name: str) -> str:
    if obj is not None and type(obj).__name__ == "dtype":
        return "dtype"
    if obj is None:
        return "attribute" if name.split(".")[-1][:1].islower() else "class"
    if inspect.isclass(obj):
        return "class"
    if not callable(obj):
        return "attribute"
    return "method" if name.startswith("torch.Tensor.") else "function"


def _inplace_base(name: str) -> str | None:
    head, short = name.rsplit(".", 1)
    if short.endswith("_") and not short.endswith("__"):
        return f"{head}.{short[:-1]}"
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _auto_suggestion(name: str, targets: dict[str, str | None]) -> str:
    live = {b: a for b, a in targets.items() if a}
    short = name.rsplit(".", 1)[1]
    if not live and name.startswith("torch.nn.") and short[:1].isupper():
        fn = "mindspore.ops." + _snake(short)
        if callable(resolve(fn)):
            return (f"Write a small nn.Cell whose construct returns {fn}(x, ...) with the "
                    "layer's arguments.")
    base = _inplace_base(name)
    if base is not None and not live:
        short = base.rsplit(".", 1)[1]
        if name.startswith("torch.Tensor."):
            return f"Use the out-of-place method and rebind: `x = x.{short}(...)`."
        return f"Use the out-of-place `{short}(...)` and assign its result."
    if live:
        where = ", ".join(f"{b}: {a}" for b, a in live.items())
        gone = ", ".join(b for b in BACKENDS if not targets[b])
        return (f"Available as {where}; nothing runs on {gone}: run that part on a "
                "supported device, or compose it from mindspore.ops primitives.")
    return ("No MindSpore counterpart in " + _ms_version() + ": compose it from mindspore.ops "
            "primitives, or write a custom operator (mindspore.ops.Custom).")


def _ms_version() -> str:
    import mindspore
    return f"MindSpore {mindspore.__version__}"


# ----- enumerating torch ------------------------------------------------------------

NAMESPACES = ("torch", "torch.nn.functional", "torch.nn.init", "torch.optim",
              "torch.optim.lr_scheduler", "torch.autograd", "torch.autograd.functional",
              "torch.utils.data", "torch.distributed", "torch.linalg", "torch.fft",
              "torch.special", "torch.cuda", "torch.amp", "torch.cuda.amp", "torch.backends",
              "torch.backends.cudnn", "torch.backends.cuda", "torch.backends.mps",
              "torch.backends.mkldnn", "torch.backends.cpu")


def public_callables(module: Any) -> dict[str, Any]:
    """Public callables a torch module defines or re-exports from torch (not typing helpers,
    not submodules)."""
    out = {}
    for attr in sorted(dir(module)):
        if attr.startswith("_"):
            continue
        try:
            obj = getattr(module, attr)
        except Exception:
            continue
        if inspect.ismodule(obj) or not callable(obj):
            continue
        owner = getattr(obj, "__module__", None) or "torch"
        if not (owner.startswith("torch") or type(obj).__name__ == "builtin_function_or_method"):
            continue
        out[attr] = obj
    return out


def enumerate_torch(torchvision: dict[str, Any], extra: list[str]
                    ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Every public torch API the table covers (name -> object), the aliases of their
    defining modules (``torch.nn.modules.conv.Conv2d`` -> ``torch.nn.Conv2d``), and the
    public ``torch.Tensor`` method names."""
    import torch

    names: dict[str, Any] = {}
    for ns in NAMESPACES:
        module = importlib.import_module(ns)
        for attr, obj in public_callables(module).items():
            if ns == "torch" and inspect.isclass(obj) and attr[:1].isupper() \
                    and attr not in ("Tensor", "Generator", "Size"):
                continue  # storage and tensor-type classes: not APIs a model calls
            names[f"{ns}.{attr}"] = obj
    for attr in dir(torch.nn):
        obj = getattr(torch.nn, attr)
        if (inspect.isclass(obj) and issubclass(obj, torch.nn.Module)) or attr in (
                "Parameter", "Buffer"):
            names[f"torch.nn.{attr}"] = obj
    for attr in dir(torch):
        if isinstance(getattr(torch, attr), torch.dtype):
            names[f"torch.{attr}"] = getattr(torch, attr)
    methods = sorted(m for m in dir(torch.Tensor)
                     if not m.startswith("_") and callable(getattr(torch.Tensor, m, None)))
    for m in methods:
        names[f"torch.Tensor.{m}"] = getattr(torch.Tensor, m)
    for module, attrs in torchvision.items():
        for attr in attrs.get("names", []):
            names[f"torchvision.{module}.{attr}"] = None
    for name in extra:
        names.setdefault(name, resolve(name))
    aliases = {}
    for name, obj in names.items():
        owner, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if not owner or not qual or not owner.startswith("torch"):
            continue
        alias = f"{owner}.{qual}"
        if alias != name and "._" not in alias and alias not in names:
            aliases[alias] = name
    return names, aliases, methods


# ----- the whole table -------------------------------------------------------------------

def build(overrides_path: Path = DATA / "overrides.toml", probe: bool = False
          ) -> tuple[dict[str, Any], list[str]]:
    """The table as JSON data and the public ``torch.Tensor`` method names; with ``probe``
    the call forms of :data:`api_probe.CASES` are measured again (and their file rewritten),
    else the stored measurements are merged."""
    import mindspore
    import torch

    with overrides_path.open("rb") as fh:
        over = tomllib.load(fh)
    names, aliases, tensor_methods = enumerate_torch(over.get("torchvision", {}),
                                                     over.get("extra", {}).get("names", []))
    for prefix, extra_candidates in over.get("candidates", {}).items():
        CANDIDATES[prefix] = (tuple(extra_candidates), tuple(extra_candidates))
    entries_over: dict[str, Any] = over.get("entries", {})
    for extra in entries_over:
        names.setdefault(extra, None)
    synonyms: dict[str, list[str]] = over.get("param_synonyms", {})
    if probe:
        every = {n: find_targets(n, names.get(n), entries_over.get(n, {}))
                 for n in api_probe.CASES}
        measured = api_probe.probe_all({n: t["cpu"] for n, t in every.items()})
        measured["cpu_fallbacks"] = api_probe.probe_fallbacks(every)
        api_probe.PROBE_FILE.write_text(api_probe.render_probe(measured), encoding="utf-8")
    stored = api_probe.load_probe()
    probed = {**{n: r for n, r in stored.get("cpu_fallbacks", {}).items()
                 if api_probe.cpu_fallback(n, stored)}, **stored.get("apis", {})}
    entries = [build_entry(name, names[name], entries_over, over.get("namespaces", {}), synonyms,
                           probed.get(name)) for name in sorted(names)]
    data = {"mindspore_version": mindspore.__version__,
            "torch_version": torch.__version__.split("+")[0],
            "generated_by": "tools/build_api_table.py",
            "ignored_params": sorted(IGNORED_PARAMS - {"self"}),
            "aliases": dict(sorted(aliases.items())),
            "families": [build_family(prefix, rule)
                         for prefix, rule in sorted(families(over).items())],
            "entries": entries}
    return data, tensor_methods


def families(over: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The family rules of overrides.toml, with one rule per legacy typed tensor
    (``torch.LongTensor`` and ``torch.cuda.LongTensor`` -> ``mindspore.Tensor`` with the
    dtype) from its ``legacy_tensor_types`` table."""
    out: dict[str, dict[str, Any]] = dict(over.get("families", {}))
    legacy = dict(over.get("legacy_tensor_types", {}))
    reason = legacy.pop("reason", "")
    for name, dtype in legacy.items():
        for prefix in ("torch.", "torch.cuda."):
            out[prefix + name] = {
                "reason": reason, "target": "mindspore.Tensor", "kind": "class",
                "notes": f"{prefix}{name}(data) is mindspore.Tensor(data, "
                         f"dtype=mindspore.{dtype}); isinstance checks against it become "
                         f"x.dtype == mindspore.{dtype}; placement is set once per process.",
                "suggestion": f"mindspore.Tensor(data, dtype=mindspore.{dtype})"}
    return out


def build_family(prefix: str, rule: dict[str, Any]) -> dict[str, Any]:
    """The table record of a family rule (overrides.toml ``[families."prefix"]``): one
    status, target and migration path for every name under ``prefix`` that has no entry
    of its own. A named target must exist in the installed MindSpore."""
    if not rule.get("reason"):
        raise ValueError(f"family {prefix}: every family rule needs a reason")
    explicit: dict[str, Any] = dict(rule.get("targets", {}))
    if "target" in rule:
        explicit = {b: rule["target"] for b in BACKENDS} | explicit
    targets: dict[str, str | None] = {}
    for backend in BACKENDS:
        api = explicit.get(backend) or None
        if api is not None and resolve(api) is None:
            raise ValueError(f"family {prefix}: target {api} does not exist")
        targets[backend] = api
    live = [b for b in BACKENDS if targets[b]]
    status = "missing" if not live else rule.get("status", "differs")
    return {"torch": prefix, "kind": rule.get("kind", "function"), "status": status,
            "usage_differs": bool(live) and status == "differs",
            "usage_backends": [],
            "targets": {b: {"api": targets[b], "platforms": platforms(targets[b])
                            if targets[b] else [], "params": []} for b in BACKENDS},
            "torch_params": [], "params": [], "notes": rule.get("notes", ""),
            "workaround": rule.get("workaround", "equivalent" if len(live) < len(BACKENDS)
                                   else None),
            "suggestion": rule.get("suggestion", "")}


def render(data: dict[str, Any], tensor_methods: list[str]) -> tuple[str, str]:
    """The two generated files' text."""
    methods = (f"# Public torch.Tensor methods (torch {data['torch_version']}); regenerated by "
               "tools/build_api_table.py.\n" + "".join(m + "\n" for m in tensor_methods))
    head = {k: v for k, v in data.items() if k not in ("entries", "families")}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "families": [\n'
    text += ",\n".join("  " + json.dumps(e, ensure_ascii=False, separators=(",", ":"))
                       for e in data["families"])
    text += '\n ],\n "entries": [\n'
    text += ",\n".join("  " + json.dumps(e, ensure_ascii=False, separators=(",", ":"))
                       for e in data["entries"])  # one entry per line: readable diffs
    return text + "\n ]\n}\n", methods


def torch_orders(data: dict[str, Any]) -> str:
    """``analyzer/data/torch_orders.json``: the positional parameter names of every torch
    API in the table and of ``torch.distributions``, as the installed torch declares them;
    the Cells name positional arguments with them."""
    import torch.distributions

    from msready.skeletons.apis import live_torch_order

    names = {e["torch"] for e in [*data["entries"], *data["families"]]} | set(data["aliases"])
    names |= {f"torch.distributions.{a}" for a in dir(torch.distributions)
              if not a.startswith("_")}
    orders = {n: order for n in sorted(names) if (order := live_torch_order(n)) is not None}
    return "{\n" + ",\n".join(f" {json.dumps(n)}: {json.dumps(list(o))}"
                               for n, o in orders.items()) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with ``--check`` verify) the packaged table files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the files are stale")
    parser.add_argument("--probe", action="store_true",
                        help="measure the call forms again (slow) instead of reusing "
                        "analyzer/data/api_probe.json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)
    data, methods = build(probe=args.probe and not args.check)
    table_text, methods_text = render(data, methods)
    files = {DATA / "api_table.json": table_text, DATA / "tensor_methods.txt": methods_text,
             DATA / "torch_orders.json": torch_orders(data)}
    if args.check:
        stale = [p.name for p, t in files.items()
                 if not p.is_file() or p.read_text(encoding="utf-8") != t]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    counts = {s: sum(e["status"] == s for e in data["entries"])
              for s in ("consistent", "differs", "missing")}
    print(f"{len(data['entries'])} entries {counts}, {len(data['aliases'])} aliases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
