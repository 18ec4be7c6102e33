"""``msready survey`` on a real local Ray runtime (2 CPUs, loopback only, no dashboard).

The repositories are small torch projects the tests write themselves, plus one source
that cannot be cloned. One runtime serves every test of this module.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from msready.analyzer.survey import SurveyOptions, survey
from msready.cli import main

OPTIONS = SurveyOptions(skeletons="off", jobs=1, cache=False, max_retries=1)
HEAD = "import torch\nfrom torch import nn\n\n"
REPOS = {
    "alpha": HEAD + "def f(x):\n    return torch.as_strided(x, (2, 2), (1, 2))\n\n"
                    "layer = nn.Linear(4, 2)\n",
    "beta": HEAD + "def g(x):\n    y = torch.alpha_dropout(x, 0.5, True)\n"
                   "    return torch.as_strided(y, (2, 2), (1, 2))\n",
    "gamma": HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
                    "        return self.fc(x)\n",
}


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


def write_corpus(root: Path, repos: dict[str, str]) -> Path:
    for name, text in repos.items():
        (root / "corpus" / name).mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name / "model.py").write_text(text, encoding="utf-8")
    listing = root / "sources.txt"
    lines = [f"corpus/{name}" for name in repos] + [f"file://{root}/no-such-repo.git"]
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def test_survey_rows_ranking_and_resume(ray_runtime: None, tmp_path: Path) -> None:
    listing = write_corpus(tmp_path, REPOS)
    out = tmp_path / "out"

    first = survey(str(listing), out, OPTIONS)
    bad = f"{tmp_path.name}__no-such-repo"  # owner__repo of the URL

    assert sorted(first.scanned) == ["alpha", "beta", "gamma"]
    assert first.failed == [bad]
    rows = {r["name"]: r for r in first.data["rows"]}
    assert sorted(rows) == ["alpha", "beta", "gamma", bad]
    assert rows[bad]["error"].startswith(f"cannot clone file://{tmp_path}/no-such")
    assert rows["gamma"]["missing_apis"] == 0 and rows["beta"]["missing_apis"] == 2
    assert (out / "repos" / "alpha" / "report.html").is_file()
    report = json.loads((out / "repos" / "beta" / "msready.json").read_text())
    assert report["source"]["files_scanned"] == 1
    ranking = {a["key"]: (a["repos"], a["count"]) for a in first.data["apis"]}
    assert ranking["torch.as_strided"] == (2, 2)
    assert ranking["torch.alpha_dropout"] == (1, 1)
    assert [(d["apis"], d["repos"]) for d in first.data["decision"]] == [(1, 1), (2, 2)]

    # A re-run skips the unchanged repositories and scans the changed one again.
    (tmp_path / "corpus" / "beta" / "model.py").write_text(REPOS["gamma"], encoding="utf-8")
    second = survey(str(listing), out, OPTIONS)

    assert sorted(second.skipped) == ["alpha", "gamma"]
    assert second.scanned == ["beta"] and second.failed == [bad]
    rows = {r["name"]: r for r in second.data["rows"]}
    assert rows["beta"]["missing_apis"] == 0
    assert {a["key"]: a["repos"] for a in second.data["apis"]}["torch.as_strided"] == 1


def _kill_first_worker(title: str, killed: list[int], stop: threading.Event) -> None:
    """Kill the first process whose title is ``title`` (Ray names a worker by its task)."""
    while not stop.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(title.encode()):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
                return
        time.sleep(0.01)


def test_a_killed_worker_is_retried_and_the_survey_completes(ray_runtime: None,
                                                              tmp_path: Path) -> None:
    # Big enough that the scan is still running when the test finds its worker.
    layers = "".join(f"class Block{i}(nn.Module):\n    def forward(self, x):\n"
                     f"        return torch.relu(x) * {i}\n\n" for i in range(150))
    listing = write_corpus(tmp_path, {f"slow{i}": HEAD + layers for i in range(1)}
                           | {"small": REPOS["alpha"]})
    for i in range(15):
        (tmp_path / "corpus" / "slow0" / f"part{i}.py").write_text(HEAD + layers)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_worker,
                              args=("ray::msready-scan:slow0", killed, stop))
    killer.start()
    try:
        run = survey(str(listing), tmp_path / "out", OPTIONS)
    finally:
        stop.set()
        killer.join()

    assert len(killed) == 1
    assert sorted(run.scanned) == ["slow0", "small"]
    entry = json.loads((tmp_path / "out" / "repos" / "slow0" / "survey-entry.json").read_text())
    assert entry["status"] == "ok" and entry["pid"] != killed[0]
    bad = f"{tmp_path.name}__no-such-repo"
    assert {r["name"] for r in run.data["rows"]} == {"slow0", "small", bad}


def test_the_survey_command_writes_the_three_reports(ray_runtime: None, tmp_path: Path) -> None:
    listing = write_corpus(tmp_path, {"alpha": REPOS["alpha"]})
    out = tmp_path / "out"

    code = main(["survey", str(listing), "-o", str(out), "--skeletons", "off", "--no-cache",
                 "-q"])

    assert code == 0
    assert "torch.as_strided" in (out / "survey.html").read_text()
    assert json.loads((out / "survey.json").read_text())["totals"]["repositories"] == 2
    lines = (out / "survey.csv").read_text().splitlines()
    assert lines[0].startswith("name,status,score") and len(lines) == 3


def test_bad_survey_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    assert main(["survey", str(tmp_path / "nothing.txt"), "-o", str(tmp_path / "o")]) == 2
    assert main(["survey", str(tmp_path), "--jobs", "0"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"msready: error: no such file or folder: {tmp_path / 'nothing.txt'}",
        "msready: error: --jobs must be at least 1",
    ]


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   cwd=cwd, check=True, capture_output=True)


def test_a_git_source_is_scanned_again_only_for_a_new_commit(ray_runtime: None,
                                                             tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    repo.mkdir()
    (repo / "model.py").write_text(REPOS["alpha"], encoding="utf-8")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "one", cwd=repo)
    listing = tmp_path / "sources.txt"
    listing.write_text(f"file://{repo}@main\n", encoding="utf-8")
    out = tmp_path / "out"
    name = f"{tmp_path.name}__upstream_main"

    assert survey(str(listing), out, OPTIONS).scanned == [name]
    assert survey(str(listing), out, OPTIONS).skipped == [name]
    (repo / "model.py").write_text(REPOS["gamma"], encoding="utf-8")
    git("commit", "-q", "-am", "two", cwd=repo)
    again = survey(str(listing), out, OPTIONS)

    assert again.scanned == [name]
    row = again.data["rows"][0]
    assert row["ref"] == "main" and row["missing_apis"] == 0
