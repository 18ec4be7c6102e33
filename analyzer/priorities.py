"""What to do first: the port's blockers ranked by cost, findings grouped by cause, and
the files that need the most work.

Reporters only render these; everything is computed here from the finished findings, the
API table and the repository model:

- **Where code runs** (:func:`where_runs`, from :mod:`msready.analyzer.placement`):
  ``graph`` when a ``forward`` (or a training step's loss) reaches the finding's function,
  ``host`` for other code the repository runs (scripts, training loops, datasets,
  constructors), ``unknown`` for functions nothing in the repository calls.
- **Causes** (:func:`group_causes`): one item per rule and API/construct, with all its
  places, ordered by severity x where the code runs, then by how often it occurs.
- **Blockers** (:func:`blockers`): the "start here" list, in order of cost (the four
  largest of each kind first, then the rest): torch APIs with
  no MindSpore counterpart and no workaround, second-order chains through ops without
  second-order support, dynamic shapes in the graph, custom C++/CUDA operators, and
  third-party libraries without a MindSpore counterpart.
- **Files** (:func:`file_work`): per file, the findings by severity, how many run in the
  graph, and their cost as the score weighs them, most costly first.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from msready.analyzer.apitable import load_table
from msready.analyzer.findings import Category, Finding, Severity
from msready.analyzer.repo import TORCH_ROOTS, RepositoryModel
from msready.analyzer.result import ApiLocation, Blocker, Cause, FileWork, RuleDoc, ScanResult
from msready.analyzer.score import finding_cost
from msready.rules.api_mapping import workaround
from msready.rules.docs import BUILTIN_FINDINGS, docstring_parts, rule_doc_url
from msready.rules.registry import all_rules

GRAPH, HOST, UNKNOWN = "graph", "host", "unknown"
SEVERITY_WEIGHT = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}
WHERE_WEIGHT = {GRAPH: 3, HOST: 2, UNKNOWN: 1}
MAX_BLOCKERS = 12
PER_KIND = 4

# Blocker kinds, most costly first: (kind, heading).
KINDS = (
    ("no-counterpart", "no MindSpore counterpart and no workaround"),
    ("second-order", "second-order chain through an op without second-order support"),
    ("dynamic-shape", "dynamic shape in the graph"),
    ("custom-op", "custom C++/CUDA operator"),
    ("third-party", "third-party library without a MindSpore counterpart"),
)
KIND_TITLES = dict(KINDS)

# Libraries built on torch (or on its tensors) that MindSpore has no counterpart for:
# the code that calls them must be rewritten or replaced.
TORCH_ECOSYSTEM = frozenset({
    "apex", "mmcv", "mmdet", "mmseg", "mmengine", "timm", "einops", "torch_geometric",
    "torch_scatter", "torch_sparse", "torch_cluster", "pytorch_lightning", "lightning",
    "kornia", "fairscale", "deepspeed", "transformers", "accelerate", "torchmetrics",
    "torchaudio", "torchtext", "spconv", "MinkowskiEngine", "pytorch3d", "xformers",
    "flash_attn", "triton", "bitsandbytes", "segmentation_models_pytorch", "torchdiffeq",
    "detectron2", "fvcore", "dgl", "ema_pytorch", "lpips", "torch_ema", "thop",
})
CUSTOM_OP_PREFIXES = ("torch.utils.cpp_extension.", "torch.ops.", "torch.library.")
EXTENSION_PARTS = ("_C", "_ext", "_cuda", "_cpp", "_backend")


class EnclosingFunctions:
    """The repository function a place is in, for findings the rules made without naming
    their function (the repository rules' API findings): the caller of the call at that
    place, else the function whose definition and last call enclose the line."""

    def __init__(self, model: RepositoryModel) -> None:
        self._calls: dict[tuple[str, int | None, int, int], str] = {}
        last: dict[str, int] = {}
        for rc in model.calls:
            span, caller = rc.call.span, rc.call.caller
            self._calls[(rc.file.path, rc.call.cell, span.line, span.column)] = caller
            last[caller] = max(last.get(caller, 0), span.end_line)
        self._spans: dict[tuple[str, int | None], list[tuple[int, int, str]]] = defaultdict(list)
        for qualname, fact in model.functions.items():
            path = model.modules[model.function_module[qualname]].path
            end = max(fact.span.end_line, last.get(qualname, 0))
            self._spans[(path, fact.cell)].append((fact.span.line, end, qualname))
        for spans in self._spans.values():
            spans.sort(key=lambda s: (s[0], -s[1]))

    def at(self, path: str, cell: int | None, line: int, column: int) -> str | None:
        """The qualified name of the function around a place, None at module level."""
        caller = self._calls.get((path, cell, line, column))
        if caller is not None:
            return None if caller.endswith("<module>") else caller
        inner = None
        for start, end, qualname in self._spans.get((path, cell), ()):
            if start > line:
                break
            if end >= line:
                inner = qualname
        return inner


def where_runs(model: RepositoryModel, finding: Finding) -> str:
    """``graph``, ``host`` or ``unknown`` for one finding: what the scan placed it at
    (``finding.where``), else where its function runs (``model.placement``)."""
    if finding.trace:
        return GRAPH
    return finding.where or model.placement.where(finding.function)


def cause_id(rule: str, symbol: str) -> str:
    """A short anchor for a cause, stable across scans (``ms201-3fa2b1c0``)."""
    return f"{rule.lower()}-{hashlib.sha1(symbol.encode()).hexdigest()[:8]}"


def _loc(finding: Finding) -> ApiLocation:
    loc = finding.location
    return ApiLocation(loc.path, loc.line, loc.column, loc.cell)


def group_causes(model: RepositoryModel, findings: Iterable[Finding]) -> list[Cause]:
    """One cause per rule and symbol, with every place, most urgent first."""
    groups: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for finding in findings:
        groups[(finding.rule, finding.symbol)].append(finding)
    causes = []
    for (rule, symbol), unordered in groups.items():
        # The places a forward reaches first: the report shows the first place's code.
        group = sorted(unordered, key=lambda f: (where_runs(model, f) != GRAPH, f.sort_key()))
        runs = [where_runs(model, f) for f in group]
        where = max(runs, key=WHERE_WEIGHT.__getitem__)
        severity = max((f.severity for f in group), key=SEVERITY_WEIGHT.__getitem__)
        first = group[0]
        causes.append(Cause(
            id=cause_id(rule, symbol), rule=rule, rule_name=first.rule_name,
            category=first.category, severity=severity, where=where, symbol=symbol,
            message=first.message, suggestion=first.suggestion,
            findings=tuple(group), graph_count=runs.count(GRAPH),
        ))
    causes.sort(key=lambda c: (-SEVERITY_WEIGHT[c.severity] * WHERE_WEIGHT[c.where],
                               -SEVERITY_WEIGHT[c.severity], -len(c.findings), c.rule,
                               c.symbol))
    return causes


def _cause_blockers(causes: list[Cause], target: str) -> list[Blocker]:
    table = load_table()
    out = []
    for cause in causes:
        kind = None
        if cause.rule == "MS101":
            entry = table.lookup(cause.symbol)
            if entry is None or workaround(entry)[0] == "custom-op":
                kind = "no-counterpart"
        elif cause.rule == "MS402":
            kind = "second-order"
        elif cause.category is Category.DYNAMIC_SHAPE and cause.where == GRAPH:
            kind = "dynamic-shape"
        if kind is not None:
            places = tuple(_loc(f) for f in cause.findings)
            title = KIND_TITLES[kind]
            if kind == "no-counterpart":
                title = f"no MindSpore counterpart on {target} and no workaround"
            out.append(Blocker(kind, title, cause.symbol, len(places), places, cause.id))
    return out


def _library_blockers(model: RepositoryModel, kind: str,
                      library: Callable[[str], str | None]) -> list[Blocker]:
    """Blockers for external names ``library`` maps to a library (or extension) name."""
    places: dict[str, list[ApiLocation]] = defaultdict(list)
    for rc in model.calls:
        name = library(rc.external) if rc.external else None
        if name is not None:
            span = rc.call.span
            places[name].append(ApiLocation(rc.file.path, span.line, span.column, rc.call.cell))
    for file in model.modules.values():
        for ref in file.references:
            resolved = model.resolve(ref.target, file.module)
            if resolved is None or resolved.kind != "external":
                continue
            name = library(resolved.name)
            if name is not None:
                places[name].append(ApiLocation(file.path, ref.span.line, ref.span.column,
                                                ref.cell))
    out = []
    for name, found in places.items():
        unique = tuple(sorted(set(found), key=lambda p: (p.path, p.cell or 0, p.line, p.column)))
        out.append(Blocker(kind, KIND_TITLES[kind], name, len(unique), unique, None))
    return out


def custom_op_library(name: str) -> str | None:
    """The compiled extension an external name lives in (``torch.utils.cpp_extension``,
    ``pkg._C``), None for ordinary names."""
    if name.startswith(CUSTOM_OP_PREFIXES):
        return ".".join(name.split(".")[:3])
    parts = name.split(".")
    if parts[0] in TORCH_ROOTS:
        return None
    for i, part in enumerate(parts[:-1]):
        if part in EXTENSION_PARTS or part.endswith(("_cuda", "_ext")):
            return ".".join(parts[:i + 1])
    return None


def ecosystem_library(own: frozenset[str]) -> Callable[[str], str | None]:
    """Maps an external name to its torch-ecosystem library (not the repository's own)."""
    def library(name: str) -> str | None:
        root = name.split(".")[0]
        return root if root in TORCH_ECOSYSTEM and root not in own else None
    return library


def blockers(model: RepositoryModel, causes: list[Cause]) -> list[Blocker]:
    """The start-here list: blockers by kind (most costly first), then by places."""
    own = frozenset(module.split(".")[0] for module in model.modules)
    found = [*_cause_blockers(causes, model.target),
             *_library_blockers(model, "custom-op", custom_op_library),
             *_library_blockers(model, "third-party", ecosystem_library(own))]
    rank = {kind: i for i, (kind, _) in enumerate(KINDS)}
    found.sort(key=lambda b: (rank[b.kind], -b.count, b.subject))
    # The first lines show every kind: the PER_KIND largest of each, in cost order, then
    # the rest, so that a hundred missing APIs do not hide the one dynamic shape.
    seen: Counter[str] = Counter()
    order = {}
    for blocker in found:
        order[id(blocker)] = seen[blocker.kind] >= PER_KIND
        seen[blocker.kind] += 1
    return sorted(found, key=lambda b: order[id(b)])


def file_work(model: RepositoryModel, findings: Iterable[Finding]) -> list[FileWork]:
    """Per file: findings by severity, how many run in the graph, and their cost; the most
    costly file first."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    cost: dict[str, float] = defaultdict(float)
    graph: Counter[str] = Counter()
    for finding in findings:
        path = finding.location.path
        counts[path][finding.severity.value] += 1
        cost[path] += finding_cost(finding)
        if where_runs(model, finding) == GRAPH:
            graph[path] += 1
    rows = [FileWork(path, sum(c.values()), c.get("error", 0), c.get("warning", 0),
                     c.get("info", 0), graph[path], round(cost[path], 2))
            for path, c in counts.items()]
    rows.sort(key=lambda r: (-r.cost, -r.findings, r.path))
    return rows


def rule_docs(rule_ids: Iterable[str]) -> dict[str, RuleDoc]:
    """The documentation of the given rules (what, why, how, URL), for the reports."""
    wanted = set(rule_ids)
    docs = {}
    for rule in all_rules():
        if rule.id in wanted:
            # The docstrings mark code the reStructuredText way (double backticks).
            parts = [p.replace("``", "`") for p in docstring_parts(rule)] + ["", "", ""]
            docs[rule.id] = RuleDoc(rule.id, rule.name, parts[0], parts[1], parts[2],
                                    rule_doc_url(rule.id))
    for rule_id, name, text in BUILTIN_FINDINGS:
        if rule_id in wanted:
            docs[rule_id] = RuleDoc(rule_id, name, text, "", "", rule_doc_url(rule_id))
    return docs


def prioritise(result: ScanResult) -> None:
    """Fill the result's causes, start-here blockers, files table and rule documentation."""
    model = result.model
    result.causes = group_causes(model, result.findings)
    result.blockers = blockers(model, result.causes)
    result.files_work = file_work(model, result.findings)
    result.rule_docs = rule_docs(c.rule for c in result.causes)
