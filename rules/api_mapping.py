"""MS1xx: torch calls checked against the API table for the chosen backend.

Each call to a torch API is looked up in the table (``msready.analyzer.apitable``). A call
to an API with no MindSpore target on the backend is MS101; a call that exercises a
parameter difference is MS102 (semantics), MS103 (a differing default the call relies
on) or MS104 (renamed, reordered or missing parameters). The three share one rewrite of
the call (:func:`msready.analyzer.conversion.plan_call`), so every finding on a call suggests
the same complete MindSpore code. That code is shown only when its call pattern ran on
MindSpore's CPU and equalled torch (``analyzer/data/fix_proofs.json``, written by
``tools/fix_forms.py``); otherwise the suggestion says in words what was tried.

Two filters keep the family precise. Constructs an idiom rule owns (``no_grad``, device
moves, checkpoints, AMP, data loading, ...; :data:`msready.rules.idioms.TABLE`) are left to
that rule. A method call on a receiver of unknown type whose name is also a method of
Python's built-in containers or strings (``d.values()``, ``s.split(",")``), or of numpy
arrays for APIs MindSpore lacks, is not taken for a torch call unless it passes a keyword
only torch's method has.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable, Iterator
from functools import lru_cache

from msready.analyzer.apitable import ApiEntry, load_table, proof_for
from msready.analyzer.conversion import RECEIVER, CallPlan, Issue, plan_call, rank, short
from msready.analyzer.facts import CallKind, CallSite
from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.rules import idioms
from msready.rules.base import RepoRule
from msready.rules.sparse_flow import MATMUL_APIS
from msready.skeletons.compositions import ANSWERS, COMPOSED

_SEVERITY_BY_WORKAROUND = {"custom-op": Severity.ERROR, "composition": Severity.WARNING,
                           "equivalent": Severity.INFO}


# ----- the rules -----------------------------------------------------------------------


# Tensor methods the device-handling idiom rule (MS601) reports as device moves
# (msready.rules.graph_mode_flow.call_is_device_move).
_DEVICE_MOVES = frozenset({"torch.Tensor.cuda", "torch.Tensor.cpu", "torch.Tensor.to"})
_PYTHON_TYPES: tuple[type, ...] = (dict, list, tuple, set, frozenset, str, bytes)


def _public(kind: type) -> set[str]:
    return {n for n in dir(kind) if not n.startswith("_")}


@lru_cache(maxsize=1)
def _shared_names() -> tuple[frozenset[str], frozenset[str]]:
    """Method names of Python's built-in containers and strings, and of numpy arrays."""
    python = set().union(*(_public(t) for t in _PYTHON_TYPES))
    return frozenset(python), frozenset(_public(_ndarray()))


def _ndarray() -> type:
    """numpy's array type, imported when a rule first asks: this module is imported by
    the worker processes too, which never run it, and numpy costs 22 MB in each."""
    import numpy

    return numpy.ndarray


def _python_params(method: str) -> set[str]:
    """Keyword names the same-name built-in or numpy methods accept (as far as readable)."""
    names: set[str] = set()
    for kind in (*_PYTHON_TYPES, _ndarray()):
        fn = getattr(kind, method, None)
        try:
            names |= set(inspect.signature(fn).parameters) if fn is not None else set()
        except (TypeError, ValueError):
            continue
    return names


def owned_by_idiom(symbol: str) -> bool:
    """True when an idiom rule reports this torch API with the MindSpore way, or the
    sparse rules do (MS302 reports every sparse-dense product with its MindSpore form):
    one verdict per API and location."""
    return symbol in _DEVICE_MOVES or symbol in MATMUL_APIS or idioms.lookup(symbol) is not None


def _too_many_positional(call: CallSite, entry: ApiEntry) -> bool:
    """True when the call passes more positional arguments than torch's signature takes
    (known and without ``*args``): it cannot be that torch API."""
    params = entry.torch_params
    if not params or any(p.startswith("*") and p != "*" for p in params):
        return False
    limit = params.index("*") if "*" in params else len(params)
    positional = [a for a in call.args if a.keyword is None]
    return not any(a.star for a in positional) and len(positional) > limit


def looks_like_other_type(call: CallSite, entry: ApiEntry, status: str) -> bool:
    """True for a method call passing more positional arguments than torch's method takes,
    or on a receiver of unknown type whose name also belongs to Python's containers and
    strings (or, for an API MindSpore lacks, to numpy arrays), unless a keyword only
    torch's method takes says it is torch."""
    if call.kind is not CallKind.TENSOR_METHOD:
        return False
    if _too_many_positional(call, entry):
        return True  # ``image.transpose(2, 0, 1)``: numpy's, torch's takes two axes
    if call.confidence != "low":
        return False
    method = call.target.rsplit(".", 1)[1]
    python, numpy_names = _shared_names()
    if method not in python and not (status == "missing" and method in numpy_names):
        return False
    torch_only = set(entry.torch_params) - _python_params(method)
    return not any(a.keyword in torch_only for a in call.args if a.keyword)


def torch_calls(repo: RepositoryModel) -> Iterator[tuple[ResolvedCall, ApiEntry]]:
    """Every call of a torch API the table knows and no idiom rule owns, with its entry
    (found once per repository for all the API rules)."""
    return iter(repo.provide("api_mapping.torch_calls", lambda: list(_torch_calls(repo))))


def planned_calls(repo: RepositoryModel) -> list[tuple[ResolvedCall, ApiEntry, CallPlan]]:
    """The calls of APIs that differ on the target backend, each with its rewrite plan
    (planned once per repository for all the rules that report a kind of issue)."""
    backend = _backend(repo)
    return repo.provide("api_mapping.planned_calls", lambda: [
        (rc, entry, plan_call(rc.call, entry, backend, rc.file.bindings))
        for rc, entry in torch_calls(repo) if entry.status_for(backend) == "differs"])


def _torch_calls(repo: RepositoryModel) -> Iterator[tuple[ResolvedCall, ApiEntry]]:
    backend = _backend(repo)
    checked: dict[str, tuple[ApiEntry, str] | None] = {}  # by symbol: many calls share one
    for rc in repo.calls:
        if rc.external is None or rc.call.kind not in (CallKind.NAME, CallKind.TENSOR_METHOD):
            continue
        if rc.external.split(".")[0] not in ("torch", "torchvision"):
            continue
        if rc.external not in checked:
            checked[rc.external] = _checked_entry(rc.external, backend)
        found = checked[rc.external]
        if found is None or looks_like_other_type(rc.call, found[0], found[1]):
            continue
        yield rc, found[0]


def _checked_entry(symbol: str, backend: str) -> tuple[ApiEntry, str] | None:
    """The table's entry for a torch API and its status on ``backend``; None when the
    table does not know it or an idiom rule owns it."""
    entry = load_table().lookup(symbol)
    if entry is None or owned_by_idiom(entry.torch) or owned_by_idiom(symbol):
        return None
    return entry, entry.status_for(backend)


def _backend(repo: RepositoryModel) -> str:
    return str(getattr(repo, "target", "ascend") or "ascend")


def _confidence(rc: ResolvedCall, default: Confidence) -> Confidence:
    """Tensor-method calls keep the walker's (lower) confidence."""
    if rc.call.kind is CallKind.TENSOR_METHOD:
        try:
            return Confidence(rc.call.confidence)
        except ValueError:
            return Confidence.LOW
    return default


class _ApiRule(RepoRule):
    """Shared finding construction for the MS1xx rules."""

    def _finding(self, rc: ResolvedCall, message: str, suggestion: str,
                 severity: Severity | None = None) -> Finding:
        return Finding(rule=self.id, rule_name=self.name, category=self.category,
                       severity=severity or self.severity,
                       confidence=_confidence(rc, self.confidence),
                       location=Location.at(rc.file.path, rc.call.span, rc.call.cell),
                       symbol=rc.external or rc.call.target, message=message,
                       suggestion=suggestion)


def workaround(entry: ApiEntry) -> tuple[str, str]:
    """How to do without an API MindSpore lacks: the kind (equivalent, composition,
    custom-op) and the advice. The starter Cells' own answers come first, whatever the
    table says: an API they compose from MindSpore primitives
    (:data:`msready.skeletons.compositions.COMPOSED`, each checked against torch in the
    tests) is a composition, and a query whose answer in eager code is a constant
    (``torch.is_autocast_enabled()``: :data:`~msready.skeletons.compositions.ANSWERS`) has
    an equivalent."""
    kind = entry.workaround or "custom-op"
    advice = entry.suggestion or (
        "Compose it from mindspore.ops or write a custom operator (mindspore.ops.Custom).")
    composed = COMPOSED.get(entry.torch)
    if composed is not None:
        cells = (f"msready's starter Cells replace it with `{composed}`, written into the "
                 "generated file from mindspore.ops primitives with torch's parameters and "
                 "checked against torch: copy it from there into the port.")
        return "composition", cells if kind == "custom-op" else f"{cells} Or: {advice}"
    answer = ANSWERS.get(entry.torch)
    if answer is not None and kind == "custom-op":
        return "equivalent", (f"Replace the call by `{answer}`, the answer eager code gets "
                              "(msready's starter Cells do so).")
    return kind, advice


class ApiMissing(_ApiRule):
    """Flags calls of torch APIs that have no MindSpore counterpart on the chosen backend.

    MindSpore offers no API for them there (or only on another device, e.g. a
    ``mindspore.mint`` function documented for Ascend only), so the call cannot be
    translated one-to-one.

    Use the workaround the table names: an equivalent API or idiom, a composition of
    existing ``mindspore.ops`` functions, or a custom operator. For the APIs msready's
    starter Cells write from MindSpore primitives (``torch.einsum``, ``torch.roll``,
    ``F.normalize``, ``F.layer_norm``, ``F.multi_head_attention_forward``, ...), the
    suggestion names that code, which is checked against torch: it is a composition, not
    a blocker. A query whose answer in eager code is a constant
    (``torch.is_autocast_enabled()``) is replaced by that answer.
    """

    id = "MS101"
    name = "api-missing"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    VALID = (
        "import torch\ny = torch.relu(torch.ones(3))\n",
        "import torch\nz = torch.cat([torch.ones(2), torch.ones(2)])\n",
        # owned by the idiom rules (MS606 no-grad, MS601 device handling)
        "import torch\n\ndef f(m, x):\n    with torch.no_grad():\n        return m(x)\n",
        "import torch\nif torch.cuda.is_available():\n    pass\n",
        # a dict's values() on a receiver of unknown type is not torch.Tensor.values
        "import torch\n\ndef names(features):\n    return list(features.values())\n",
    )
    INVALID = (
        "import torch.nn as nn\nnorm = nn.RMSNorm(16)\n",
        "import torch\nx = torch.ones(3)\nx.sparse_mask(x)\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per call of an API missing on the backend."""
        backend = _backend(repo)
        for rc, entry in torch_calls(repo):
            if entry.status_for(backend) != "missing":
                continue
            others = [f"{b}: {entry.target(b).api}" for b in ("ascend", "gpu", "cpu")
                      if entry.target(b).api]
            where = (f" (exists for {', '.join(others)}; the platforms are those MindSpore's "
                     "documentation lists, checked by running on CPU where msready can)"
                     if others else "")
            kind, suggestion = workaround(entry)
            yield self._finding(
                rc, f"`{entry.torch}` has no MindSpore counterpart on {backend}{where}.",
                f"{kind}: {suggestion}", _SEVERITY_BY_WORKAROUND.get(kind, self.severity))


class _IssueRule(_ApiRule):
    """Reports the issues of one kind that :func:`plan_call` finds on a call."""

    issue_kind = ""

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """One finding per call and issue of this rule's kind."""
        backend = _backend(repo)
        for rc, entry, plan in planned_calls(repo):
            issues: list[Issue] = [i for i in plan.issues if i.kind == self.issue_kind]
            if not issues:
                continue
            severity = max((i.severity for i in issues), key=rank)
            message = issues[0].message if len(issues) == 1 else \
                "; ".join(i.message.rstrip(".") for i in issues) + "."
            yield self._finding(rc, message, shown_fix(rc, entry, backend, plan.rewrite),
                                severity)


def _uses_placeholder(rewrite: str) -> bool:
    """True when the rewrite names the receiver placeholder (the call site did not keep
    the receiver's text, e.g. a long expression)."""
    try:
        tree = ast.parse(rewrite)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Name) and n.id == RECEIVER for n in ast.walk(tree))


def shown_fix(rc: ResolvedCall, entry: ApiEntry, backend: str, rewrite: str) -> str:
    """The rewrite as code when its call pattern ran on MindSpore and equalled torch
    (``analyzer/data/fix_proofs.json``); else advice in words saying what was tried."""
    proof = proof_for(entry.torch, backend, rc.call)
    if proof is not None and proof.proven:
        if rc.call.kind is CallKind.TENSOR_METHOD and not rc.call.receiver \
                and _uses_placeholder(rewrite):
            return (f"Write `{rewrite}` with `{RECEIVER}` standing for the tensor the method "
                    "is called on (this call form ran on MindSpore and equalled torch).")
        return rewrite
    api = short(entry.target(backend).api or "")
    advice = (f"use `{api}` with the differences above and compare the result with torch "
              "on real inputs.")
    version = load_table().mindspore_version
    if proof is None:
        return (f"Unverified, so not given as code: msready has not run this call form of "
                f"`{api}`; {advice}")
    if proof.pynative == "skipped":
        return (f"Unverified, so not given as code: msready could not run this call form "
                f"({proof.error}); {advice}")
    mode = "PyNative" if proof.pynative != "pass" else "GRAPH_MODE"
    outcome = "differs from torch" if "differs" in (proof.pynative, proof.graph) \
        else "fails"
    return (f"Not given as code: msready ran `{proof.rewrite}` for `{proof.torch_call}` on "
            f"MindSpore {version} CPU and it {outcome} in {mode} ({proof.error}); {advice}")


class ApiSemanticsDiffer(_IssueRule):
    """Flags arguments whose meaning differs in MindSpore although the name may not.

    The translated call runs but computes something else: BatchNorm's ``momentum`` is
    ``1 - momentum``, ``nn.Conv2d`` pads ``'same'`` unless ``pad_mode='pad'``, a positional
    ``nn.Dropout(p)`` is read as ``keep_prob``, ``nn.LayerNorm`` normalises from
    ``begin_norm_axis``. Call forms measured on CPU count too: ``ops.zeros(b, c)`` reads
    ``c`` as the dtype, ``ops.full(s, 0.5)`` holds integers, ``ops.max(x)`` also returns
    the index, ``Tensor.transpose(a, b)`` permutes every axis in GRAPH_MODE.

    Write the rewrite in the suggestion: it keeps torch's behaviour with MindSpore's
    parameters (``momentum=1 - m``, ``pad_mode='pad', padding=...``, ``p=...``).
    """

    id = "MS102"
    name = "api-semantics-differ"
    category = Category.API_MAPPING
    severity = Severity.ERROR
    confidence = Confidence.HIGH
    issue_kind = "semantics"
    VALID = (
        "import torch.nn as nn\nbn = nn.BatchNorm2d(16)\n",
        "import torch.nn as nn\ndrop = nn.Dropout(p=0.2)\n",
        "import torch.nn as nn\nfc = nn.Linear(4, 8)\n",
        # same name, same meaning in MindSpore: view, permute, masked_fill
        "import torch\nx = torch.ones((2, 3))\ny = x.view(3, 2).permute(1, 0)\n",
        # a string's split is not torch.Tensor.split
        "import torch\n\ndef parse(name):\n    return name.split('[')\n",
        # sizes already in one tuple; a function of the repository named like torch's
        "import torch\nz = torch.zeros((4, 8))\n",
        "def zeros(*size):\n    return [0.0] * size[0]\n\nz = zeros(4, 8)\n",
        # mindspore's own creation call is not torch
        "from mindspore import ops\nz = ops.zeros((4, 8))\n",
        "import torch\nmask = torch.full((2, 3), 0.5, dtype=torch.float32)\n",
        # the dim form is measured to match torch
        "import torch\n\ndef peak(x):\n    return torch.max(x, 1)\n",
    )
    INVALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(16, 32, 3, padding=1)\n",
        "import torch.nn as nn\nbn = nn.BatchNorm2d(16, momentum=0.01)\n",
        "import torch.nn as nn\ndrop = nn.Dropout(0.2)\n",
        "import torch.nn as nn\nbn = nn.BatchNorm1d(8, track_running_stats=False)\n",
        # torch.transpose swaps two axes; mindspore.ops.transpose permutes all of them
        "import torch\nx = torch.ones(2, 3, 4)\ny = torch.transpose(x, 1, 2)\n",
        # x.size is the element count in MindSpore
        "import torch\nx = torch.ones((2, 3))\nn = x.size(1)\n",
        # measured on CPU: ops.zeros(b, c) reads c as the dtype; the shape is one tuple
        "import torch\n\ndef buffer(b, c):\n    return torch.zeros(b, c)\n",
        # measured on CPU: ops.max(x) returns (value, index), torch.max(x) the value only
        "import torch\n\ndef peak(x):\n    return torch.max(x)\n",
        # measured on CPU: ops.full((2, 3), 0.5) holds integers unless dtype is given
        "import torch\nmask = torch.full((2, 3), 0.5)\n",
        # measured on CPU: the two-axis Tensor.transpose permutes all axes in GRAPH_MODE
        "import torch\nx = torch.ones((2, 3, 4))\ny = x.transpose(1, 2)\n",
        # initialisers are objects applied with set_data
        "import torch.nn as nn\nfc = nn.Linear(2, 2)\nnn.init.zeros_(fc.bias)\n",
    )


class ApiDefaultDiffers(_IssueRule):
    """Flags calls that rely on a default whose value differs in MindSpore.

    Leaving the argument out gives a different layer: ``nn.Conv2d`` has no bias by
    default, ``nn.LayerNorm`` uses ``epsilon=1e-7``, ``nn.GELU`` approximates with tanh,
    ``nn.SmoothL1Loss`` does not reduce.

    Pass torch's value explicitly under MindSpore's name, as in the suggestion.
    """

    id = "MS103"
    name = "api-default-differs"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    issue_kind = "default"
    VALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 3, bias=False)\n",
        "import torch.nn as nn\nact = nn.ReLU()\n",
    )
    INVALID = (
        "import torch.nn as nn\nconv = nn.Conv2d(3, 8, 3)\n",
        "import torch.nn as nn\nact = nn.GELU()\n",
        "import torch.nn as nn\npool = nn.MaxPool2d(2)\n",
    )


class ApiArgumentsDiffer(_IssueRule):
    """Flags arguments MindSpore names differently, expects at another position, or lacks.

    The call fails (unknown keyword) or binds a value to the wrong parameter: torch's
    ``bias=`` is ``has_bias=`` in ``nn.Conv2d`` / ``nn.Dense``, ``groups`` is ``group``,
    and a parameter such as ``padding_mode`` does not exist at all.

    Use MindSpore's keyword names from the suggestion and drop or re-implement the
    arguments MindSpore lacks.
    """

    id = "MS104"
    name = "api-arguments-differ"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    issue_kind = "arguments"
    VALID = (
        "import torch.nn as nn\nfc = nn.Linear(4, 8)\n",
        "import torch\ns = torch.sum(torch.ones(3))\n",
        # a (*args, **kwargs) signature binds nothing by position
        "import torch\nx = torch.ones(3)\ny = x.to(torch.float16)\n",
        # inplace only saves memory
        "import torch.nn as nn\nact = nn.ReLU(inplace=True)\n",
        # a positional dim is measured to work where dim= does not
        "import torch\nx = torch.ones((2, 3))\ny = torch.log_softmax(x, 1)\n",
        # a string's split takes no dim
        "def words(line):\n    return line.split(' ', 1)\n",
    )
    INVALID = (
        "import torch.nn as nn\nfc = nn.Linear(4, 8, bias=False)\n",
        # the legacy std overload on GPU/CPU counts ddof, not unbiased
        "import torch\nx = torch.ones((2, 3))\ns = x.std(1, unbiased=False)\n",
        # measured on CPU: ops.log_softmax takes axis=, not dim=
        "import torch\nx = torch.ones((2, 3))\ny = torch.log_softmax(x, dim=1)\n",
        # measured on CPU: Tensor.split(dim=) has no GRAPH_MODE kernel; axis= runs
        "import torch\nx = torch.ones((2, 3, 4))\nparts = x.split(2, dim=2)\n",
        "import torch.nn as nn\nconv = nn.Conv2d(4, 8, 3, groups=2, bias=True, padding=1)\n",
        "import torch.nn as nn\nconv = nn.Conv2d(4, 8, 3, padding_mode='reflect', bias=True,"
        " padding=1)\n",
    )
