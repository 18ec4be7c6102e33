"""The survey's aggregate, computed from hand-written per-repository results (no Ray)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.survey import SurveyError, read_sources, repo_name, split_ref
from msready.analyzer.survey_aggregate import aggregate, decision_table, library_roots
from msready.reports.survey import render_csv, render_html


def entry(name: str, libraries: tuple[str, ...] = (), error: str | None = None) -> dict[str, Any]:
    return {"name": name, "source": f"/src/{name}", "ref": None,
            "status": "error" if error else "ok", "error": error, "seconds": 1.5,
            "libraries": list(libraries)}


def report(apis: dict[str, tuple[str, int]], findings: tuple[tuple[str, str, str, str], ...] = (),
           score: int = 60) -> dict[str, Any]:
    return {
        "source": {"files_scanned": 2, "lines": 40, "commit": None},
        "summary": {"score": score},
        "apis": [{"symbol": s, "status": st, "count": n} for s, (st, n) in apis.items()],
        "findings": [{"rule": r, "rule_name": rn, "category": c, "symbol": sym,
                      "severity": "error"} for r, rn, c, sym in findings],
        "skeletons": [{"pynative": "pass", "graph": "pass"}, {"pynative": "pass", "graph": "fail"},
                      {"pynative": "skipped", "graph": "skipped"}],
    }


SURVEY = [
    (entry("alpha", ("ema_pytorch", "numpy", "timm")),
     report({"torch.nonzero": ("differs", 3), "torch.special.zeta": ("missing", 1)},
            (("MS402", "no-second-order-op", "second-order", "torch.nn.functional.grid_sample"),
             ("MS201", "nonzero", "dynamic-shape", "torch.nonzero")))),
    (entry("beta", ("ema_pytorch", "einops")),
     report({"torch.nonzero": ("differs", 1), "torch.special.zeta": ("missing", 2),
             "torch.fft.hfft": ("missing", 1)},
            (("MS201", "nonzero", "dynamic-shape", "torch.nonzero"),))),
    (entry("gamma"), report({"torch.nn.Linear": ("consistent", 4)}, score=90)),
    (entry("broken", error="cannot clone https://example.invalid/x: not found"), None),
]


def test_every_repository_has_a_row_and_the_failed_one_its_error() -> None:
    data = aggregate(SURVEY)
    rows = {r["name"]: r for r in data["rows"]}
    assert sorted(rows) == ["alpha", "beta", "broken", "gamma"]
    assert rows["broken"]["error"] == "cannot clone https://example.invalid/x: not found"
    assert rows["broken"]["score"] is None
    assert rows["alpha"].items() >= {
        "score": 60, "blockers": 2, "missing_apis": 1, "cells_passing": 1, "cells": 2,
        "cells_generated": 3, "lines": 40, "seconds": 1.5,
        "report": "repos/alpha/report.html"}.items()
    assert data["totals"].items() >= {"repositories": 4, "scanned": 3, "failed": 1,
                                      "without_missing_api": 1}.items()


def test_apis_are_ranked_by_repositories_then_calls() -> None:
    ranked = [(a["key"], a["repos"], a["count"], a["status"])
              for a in aggregate(SURVEY)["apis"]]
    assert ranked == [("torch.nonzero", 2, 4, "differs"), ("torch.special.zeta", 2, 3, "missing"),
                      ("torch.fft.hfft", 1, 1, "missing")]


def test_second_order_dynamic_shape_and_libraries() -> None:
    data = aggregate(SURVEY)
    assert [(o["key"], o["repo_names"]) for o in data["second_order_ops"]] == [
        ("torch.nn.functional.grid_sample", ["alpha"])]
    assert [(d["key"], d["repos"], d["count"]) for d in data["dynamic_shape"]] == [
        ("MS201 nonzero", 2, 2)]
    assert data["second_order_repos"] == ["alpha"]
    # torch-bound without a counterpart; the rest by kind, with counterparts where known
    assert [(lib["key"], lib["repos"]) for lib in data["libraries"]] == [("ema_pytorch", 2)]
    assert [(lib["key"], lib["kind"], lib["counterpart"]) for lib in data["other_libraries"]] == [
        ("einops", "other", None), ("numpy", "host", None), ("timm", "torch-bound", "mindcv")]


def test_decision_table_frees_the_cheapest_repositories_first() -> None:
    missing = {
        "a": frozenset({"x"}), "b": frozenset({"x"}), "c": frozenset({"x", "y"}),
        "d": frozenset({"z", "w", "v"}), "clean": frozenset(),
    }
    rows = decision_table(missing)
    assert [(r["add"], r["apis"], r["repos"], r["freed"]) for r in rows] == [
        (["x"], 1, 2, ["a", "b"]),
        (["y"], 2, 3, ["c"]),
        (["v", "w", "z"], 5, 4, ["d"]),
    ]


def test_library_roots_leave_out_torch_stdlib_and_the_repository() -> None:
    names = ["numpy.stack", "torch.cat", "os.path.join", "einops.rearrange", "mypkg.util.f",
             "builtins.len", "torchvision.ops.nms"]
    assert library_roots(names, {"mypkg"}) == ["einops", "numpy"]


def test_csv_has_one_line_per_repository() -> None:
    rows = list(csv.DictReader(io.StringIO(render_csv(aggregate(SURVEY)))))
    assert [(r["name"], r["status"], r["score"]) for r in rows] == [
        ("alpha", "ok", "60"), ("beta", "ok", "60"), ("broken", "error", ""),
        ("gamma", "ok", "90")]


def test_html_is_self_contained_and_escapes_names() -> None:
    hostile = [(entry("<script>x</script>", error="<b>no</b>"), None), *SURVEY]
    page = render_html(aggregate(hostile, {"target": None, "skeletons": "off",
                                           "sources": "list.txt"}))
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "&lt;b&gt;no&lt;/b&gt;" in page
    assert "http://" not in page and "https://" not in page.replace(
        "https://example.invalid/x", "")
    assert 'href="repos/alpha/report.html"' in page
    assert "torch.special.zeta" in page


@pytest.mark.parametrize(("line", "expected"), [
    ("https://github.com/owner/repo", ("https://github.com/owner/repo", None)),
    ("https://github.com/owner/repo@v1.2", ("https://github.com/owner/repo", "v1.2")),
    ("git@github.com:owner/repo.git", ("git@github.com:owner/repo.git", None)),
    ("git@github.com:owner/repo.git@main", ("git@github.com:owner/repo.git", "main")),
    ("https://user@host.example/repo", ("https://user@host.example/repo", None)),
    ("repos/local", ("repos/local", None)),
])
def test_split_ref(line: str, expected: tuple[str, str | None]) -> None:
    assert split_ref(line) == expected


def test_repo_names() -> None:
    assert repo_name("https://github.com/owner/repo.git", None) == "owner__repo"
    assert repo_name("git@github.com:owner/repo.git", "feature/x") == "owner__repo_feature_x"
    assert repo_name("/data/some repo", None) == "some_repo"


def test_sources_file_and_folder(tmp_path: Path) -> None:
    for name in ("one", "two", ".hidden"):
        (tmp_path / "corpus" / name).mkdir(parents=True)
    listing = tmp_path / "list.txt"
    listing.write_text("# mine\ncorpus/one\n\nhttps://github.com/a/one@v2  # pinned\n"
                       "corpus/one\n", encoding="utf-8")
    assert [(s.name, s.ref) for s in read_sources(str(listing))] == [
        ("one", None), ("a__one_v2", "v2"), ("one-2", None)]
    assert read_sources(str(listing))[0].spec == str(tmp_path / "corpus" / "one")
    assert [s.name for s in read_sources(str(tmp_path / "corpus"))] == ["one", "two"]
    with pytest.raises(SurveyError, match="no such file or folder"):
        read_sources(str(tmp_path / "nothing"))
