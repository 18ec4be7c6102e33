"""msready.json keeps the contract in DESIGN.md; the pool and the cache change nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from msready.analyzer.scan import ScanOptions, scan
from msready.reports.json_report import render, to_dict

MakeRepo = Callable[[dict[str, str]], Path]
CATEGORIES = {"api-mapping", "dynamic-shape", "sparse", "second-order", "graph-syntax", "idiom",
              "parse-error"}
FINDING_KEYS = {"rule", "category", "severity", "confidence", "path", "line", "column",
                "end_line", "end_column", "symbol", "message", "suggestion"}
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tinynet"


def test_example_project_json_follows_the_contract() -> None:
    result = scan(str(EXAMPLE), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    data = json.loads(render(result))
    assert {"schema_version", "tool", "source", "summary", "findings", "apis", "checklist",
            "skeletons"} <= data.keys()
    assert data["tool"]["name"] == "msready" and data["tool"]["mindspore_version"]
    source_keys = {"input", "ref", "commit", "files_scanned", "files_failed", "lines"}
    assert source_keys <= data["source"].keys()
    assert data["source"]["files_scanned"] == 8
    assert data["findings"], "the example project has hazards"
    for finding in data["findings"]:
        assert finding.keys() >= FINDING_KEYS
        assert finding["category"] in CATEGORIES
        assert finding["severity"] in {"error", "warning", "info"}
        assert finding["confidence"] in {"high", "medium", "low"}
        assert finding["line"] >= 1 and finding["column"] >= 1
        assert not finding["path"].startswith("/") and "\\" not in finding["path"]
        assert finding["message"] and finding["suggestion"]
    for api in data["apis"]:
        assert api["status"] in {"consistent", "differs", "missing", "unknown"}
        assert api["count"] == len(api["locations"]) >= 1
        assert all({"path", "line", "column"} <= loc.keys() for loc in api["locations"])
    notebook = [loc for api in data["apis"] for loc in api["locations"]
                if loc["path"] == "explore.ipynb"]
    assert notebook and all(loc["cell"] in (1, 2) for loc in notebook)
    summary = data["summary"]
    assert sum(summary["by_category"].values()) == len(data["findings"])
    assert sum(summary["by_severity"].values()) == len(data["findings"])


def test_known_apis_get_table_statuses() -> None:
    result = scan(str(EXAMPLE), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    status = {api.symbol: api for api in result.apis}
    assert status["torch.nn.Conv2d"].mindspore == "mindspore.nn.Conv2d"
    assert status["torch.nn.Conv2d"].status == "differs"
    assert status["torch.nn.Linear"].mindspore == "mindspore.nn.Dense"


def _comparable(data: dict[str, object]) -> dict[str, object]:
    data = dict(data)
    data.pop("source")
    return data


def test_pool_and_cache_give_the_same_result(make_repo: MakeRepo, tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": f"import torch\n\ndef f{i}(x):\n    return torch.nonzero(x) + {i}\n"
             for i in range(40)}
    files["pkg/__init__.py"] = ""
    root = make_repo(files)
    single = to_dict(scan(str(root), options=ScanOptions(jobs=1, cache=False)))
    cache = tmp_path / "cache"
    pooled = to_dict(scan(str(root), options=ScanOptions(jobs=2, cache=True, cache_dir=cache)))
    assert any(cache.rglob("*")), "the cache was not written"
    warm = to_dict(scan(str(root), options=ScanOptions(jobs=2, cache=True, cache_dir=cache)))
    assert _comparable(single) == _comparable(pooled) == _comparable(warm)
    (root / "pkg" / "m0.py").write_text("import torch\n\ndef f0(x):\n    return torch.eye(2)\n")
    changed = to_dict(scan(str(root), options=ScanOptions(jobs=2, cache=True, cache_dir=cache)))
    assert {a["symbol"] for a in changed["apis"]} == {"torch.nonzero", "torch.eye"}
