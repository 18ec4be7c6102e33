"""What a survey says across repositories, computed from each repository's results.

Pure Python over plain data: each repository contributes its survey entry (name, source,
status, error, time, third-party libraries) and, when its scan finished, its
``msready.json``. Nothing here needs Ray, so it is tested on hand-written entries.

- one row per repository: score, blockers (error-severity findings), distinct missing
  APIs, Cells passing, lines, time, link to its report, or its one-line error;
- the torch APIs ranked by the number of repositories where they are missing or differ,
  with their call counts;
- the ops that block second-order chains (MS402), the dynamic-shape constructs, and the
  third-party libraries without a MindSpore counterpart;
- the decision table: "if MindSpore provided these N APIs, these M more repositories would
  have no missing API", by greedy set cover over the repositories' missing-API sets.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SURVEY_SCHEMA_VERSION = "1.0"
TORCH_ROOTS = ("torch", "torchvision")
SECOND_ORDER_BLOCKER = "MS402"  # no-second-order-op: an op on a derivative chain
GREEDY_CANDIDATES = 64  # distinct missing-API sets whose exact gain each step weighs

# Libraries that do not depend on a deep-learning framework: they run unchanged on the
# host beside MindSpore, so they are no migration gap.
HOST_LIBRARIES = frozenset({
    "numpy", "scipy", "PIL", "cv2", "sklearn", "skimage", "pandas", "matplotlib", "seaborn",
    "yaml", "tqdm", "h5py", "requests", "six", "omegaconf", "hydra", "wandb", "termcolor",
    "tabulate", "pycocotools", "lmdb", "imageio", "regex", "ftfy", "iopath", "cloudpickle",
    "psutil", "packaging", "shapely", "networkx", "sympy", "numba", "tensorboardX", "fire",
    "absl", "attr", "attrs", "pydantic", "click", "toml", "tomli", "jsonschema", "filelock",
    "setuptools", "pkg_resources", "IPython", "ipywidgets", "visdom", "dominate", "pytest",
})
# Libraries built on torch (beside names with "torch" in them): code that calls them needs
# a MindSpore equivalent or a rewrite.
TORCH_BOUND = frozenset({
    "timm", "transformers", "diffusers", "accelerate", "apex", "fairscale", "deepspeed",
    "fvcore", "detectron2", "mmcv", "mmdet", "mmseg", "mmengine", "kornia", "functorch",
    "pytorch_lightning", "lightning", "torchmetrics", "torchdiffeq", "torch_geometric",
    "ema_pytorch", "lpips", "xformers", "pytorch3d", "caffe2", "learn2learn", "cherry",
    "segmentation_models_pytorch", "open_clip", "clip", "lvis", "torchaudio", "torchtext",
})
# Torch-ecosystem libraries with a MindSpore-ecosystem counterpart.
COUNTERPARTS = {
    "timm": "mindcv",
    "transformers": "mindnlp",
    "torchaudio": "mindspore.dataset.audio",
    "torchtext": "mindspore.dataset.text",
}


@dataclass(slots=True)
class Usage:
    """How widely one thing (an API, an op, a construct, a library) is used."""

    key: str
    repos: set[str] = field(default_factory=set)
    count: int = 0
    detail: Counter[str] = field(default_factory=Counter)

    def add(self, repo: str, count: int = 1, detail: str = "") -> None:
        """Count ``count`` uses in ``repo``."""
        self.repos.add(repo)
        self.count += count
        if detail:
            self.detail[detail] += count


def library_kind(name: str) -> str:
    """``torch-bound`` (needs a MindSpore equivalent), ``host`` (runs unchanged beside
    MindSpore) or ``other`` (msready does not know)."""
    if name in TORCH_BOUND or "torch" in name.lower():
        return "torch-bound"
    return "host" if name in HOST_LIBRARIES else "other"


def library_roots(external_names: Iterable[str], local_roots: Iterable[str]) -> list[str]:
    """The third-party packages among the external names a repository calls: not torch,
    not the standard library, not builtins, not the repository's own packages."""
    local = set(local_roots)
    roots = {name.split(".")[0] for name in external_names if name}
    return sorted(r for r in roots if r and r not in TORCH_ROOTS and r != "builtins"
                  and r not in sys.stdlib_module_names and r not in local
                  and not r.startswith("_"))


def repo_row(entry: Mapping[str, Any], report: Mapping[str, Any] | None) -> dict[str, Any]:
    """One repository's survey row, from its entry and its ``msready.json`` (if any)."""
    row: dict[str, Any] = {
        "name": entry["name"],
        "source": entry.get("source", ""),
        "ref": entry.get("ref"),
        "status": entry.get("status", "error"),
        "error": entry.get("error"),
        "seconds": round(float(entry.get("seconds") or 0.0), 2),
        "score": None, "blockers": None, "missing_apis": None, "cells_passing": None,
        "cells": None, "cells_generated": None, "files": None, "lines": None, "commit": None,
        "report": None,
    }
    if report is None or row["status"] != "ok":
        return row
    findings = report.get("findings", [])
    skeletons = report.get("skeletons", [])
    ran = [s for s in skeletons if s.get("pynative") != "skipped" or s.get("graph") != "skipped"]
    source = report.get("source", {})
    row.update(
        score=report.get("summary", {}).get("score"),
        blockers=sum(1 for f in findings if f.get("severity") == "error"),
        missing_apis=len(missing_apis(report)),
        cells_passing=sum(1 for s in ran if s.get("pynative") == "pass"
                          and s.get("graph") == "pass"),
        cells=len(ran),
        cells_generated=len(skeletons),
        files=source.get("files_scanned"),
        lines=source.get("lines"),
        commit=source.get("commit"),
        report=f"repos/{entry['name']}/report.html",
    )
    return row


def missing_apis(report: Mapping[str, Any]) -> frozenset[str]:
    """The distinct torch APIs of one repository that MindSpore does not provide."""
    return frozenset(a["symbol"] for a in report.get("apis", []) if a.get("status") == "missing")


def decision_table(missing: Mapping[str, frozenset[str]]) -> list[dict[str, Any]]:
    """Greedy set cover: each step provides the APIs that free the most repositories per
    API added, so row *k* reads "with these N APIs (cumulative), M more repositories have
    no missing API". Repositories already without a missing API are not counted."""
    remaining = {name: set(apis) for name, apis in missing.items() if apis}
    provided: set[str] = set()
    rows: list[dict[str, Any]] = []
    freed_total = 0
    while remaining:
        groups: dict[frozenset[str], list[str]] = defaultdict(list)
        for name, apis in remaining.items():
            groups[frozenset(apis)].append(name)
        # Weigh the sets that look best by their own multiplicity per API; the exact gain
        # (every repository the union also frees) is computed for those only.
        ranked = sorted(groups, key=lambda s: (-len(groups[s]) / len(s), len(s), sorted(s)))
        best: tuple[float, int, list[str]] | None = None
        best_set: frozenset[str] = frozenset()
        for candidate in ranked[:GREEDY_CANDIDATES]:
            freed = [n for s, names in groups.items() if s <= candidate for n in names]
            key = (len(freed) / len(candidate), -len(candidate), sorted(candidate))
            if best is None or key[:2] > best[:2]:
                best, best_set = (key[0], key[1], freed), candidate
        assert best is not None
        freed_names = sorted(best[2])
        provided |= best_set
        freed_total += len(freed_names)
        for name in freed_names:
            del remaining[name]
        for apis in remaining.values():
            apis -= best_set
        rows.append({
            "add": sorted(best_set),
            "apis": len(provided),
            "freed": freed_names,
            "repos": freed_total,
        })
    return rows


def _ranked(usages: Iterable[Usage]) -> list[dict[str, Any]]:
    ordered = sorted(usages, key=lambda u: (-len(u.repos), -u.count, u.key))
    return [{"key": u.key, "repos": len(u.repos), "repo_names": sorted(u.repos),
             "count": u.count, "detail": dict(u.detail.most_common())}
            for u in ordered]


def aggregate(results: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
              options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole survey as JSON-ready data from (entry, msready.json or None) pairs."""
    rows = sorted((repo_row(e, r) for e, r in results), key=lambda row: row["name"])
    apis: dict[str, Usage] = {}
    second_order: dict[str, Usage] = {}
    higher_order: set[str] = set()  # repositories that differentiate a gradient
    dynamic: dict[str, Usage] = {}
    libraries: dict[str, Usage] = {}
    missing: dict[str, frozenset[str]] = {}
    for entry, report in results:
        name = entry["name"]
        if report is None or entry.get("status") != "ok":
            continue
        missing[name] = missing_apis(report)
        for api in report.get("apis", []):
            if api.get("status") in ("missing", "differs"):
                apis.setdefault(api["symbol"], Usage(api["symbol"])).add(
                    name, int(api.get("count", 0)), api["status"])
        for finding in report.get("findings", []):
            if finding.get("category") == "second-order":
                higher_order.add(name)
            if finding.get("rule") == SECOND_ORDER_BLOCKER:
                sym = finding.get("symbol", "")
                second_order.setdefault(sym, Usage(sym)).add(name)
            elif finding.get("category") == "dynamic-shape":
                key = f"{finding.get('rule')} {finding.get('rule_name')}"
                dynamic.setdefault(key, Usage(key)).add(name, 1, finding.get("symbol", ""))
        for lib in entry.get("libraries", []):
            libraries.setdefault(lib, Usage(lib)).add(name)
    gaps = {u.key for u in libraries.values()
            if library_kind(u.key) == "torch-bound" and u.key not in COUNTERPARTS}
    scores = [r["score"] for r in rows if r["score"] is not None]
    return {
        "schema_version": SURVEY_SCHEMA_VERSION,
        "options": dict(options or {}),
        "totals": {
            "repositories": len(rows),
            "scanned": sum(1 for r in rows if r["status"] == "ok"),
            "failed": sum(1 for r in rows if r["status"] != "ok"),
            "without_missing_api": sum(1 for apis_ in missing.values() if not apis_),
            "lines": sum(r["lines"] or 0 for r in rows),
            "seconds": round(sum(r["seconds"] for r in rows), 2),
            "median_score": sorted(scores)[len(scores) // 2] if scores else None,
        },
        "score_histogram": score_histogram(scores),
        "rows": rows,
        "apis": [{**row, "status": "missing" if "missing" in row["detail"] else "differs"}
                 for row in _ranked(apis.values())],
        "second_order_ops": _ranked(second_order.values()),
        "second_order_repos": sorted(higher_order),
        "dynamic_shape": _ranked(dynamic.values()),
        "libraries": _ranked(libraries[k] for k in gaps),
        "other_libraries": [
            {**row, "counterpart": COUNTERPARTS.get(row["key"]), "kind": library_kind(row["key"])}
            for row in _ranked(u for u in libraries.values() if u.key not in gaps)
        ],
        "decision": decision_table(missing),
    }


def score_histogram(scores: Sequence[int]) -> list[dict[str, Any]]:
    """How many repositories score in each band of ten (0-9, ..., 90-100)."""
    bands = Counter(min(int(s) // 10, 9) for s in scores)
    return [{"band": f"{b * 10}-{b * 10 + 9 if b < 9 else 100}", "repos": bands.get(b, 0)}
            for b in range(10)]
