"""The command line: reports written where asked, one-line errors with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from msready.cli import main

MakeRepo = Callable[[dict[str, str]], Path]
MODEL = "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n" \
        "    def forward(self, x):\n        return torch.relu(x)\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "msready", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def test_scan_writes_json_and_exits_zero(make_repo: MakeRepo, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run("scan", str(make_repo({"m.py": MODEL})), "-o", str(out), "--format", "json",
               "--skeletons", "off", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "msready.json").read_text())
    assert data["source"]["files_scanned"] == 1
    assert not (out / "report.html").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["scan", "/no/such/path"], "no such file or folder"),
        (["scan", "{repo}", "--format", "pdf"], "unknown --format"),
        (["scan", "file:///no/such/repo.git"], "cannot clone"),
        (["scan", "{repo}", "--jobs", "0"], "--jobs"),
        (["scan", "{repo}", "--bogus"], "unrecognized arguments"),
        (["scan", "{repo}", "-o", "/proc/msready-out"], "output folder"),
        (["scan", "{repo}", "--ref", "main"], "--ref needs a git URL"),
        (["table", "lookup", "torch.not_an_api"], "not in the API table"),
        ([], "required"),
    ],
)
def test_errors_are_one_line_with_exit_2(make_repo: MakeRepo, args: list[str], words: str) -> None:
    repo = str(make_repo({"m.py": MODEL}))
    proc = run(*[a.replace("{repo}", repo) for a in args])
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0] and "Traceback" not in proc.stderr


def test_unwritable_output_folder(make_repo: MakeRepo, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = "/proc/1/msready"  # not writable even for root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "out")
    code = main(["scan", str(make_repo({"m.py": MODEL})), "-o", target, "--skeletons", "off"])
    assert code == 2


def test_python_dash_m_and_console_script_agree() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("msready ")


def test_cells_run_with_a_relative_output_folder(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"net.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n"
                                "    def __init__(self):\n        super().__init__()\n"
                                "        self.fc = nn.Linear(4, 2)\n\n"
                                "    def forward(self, x):\n        return self.fc(x)\n"})
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "msready", "scan", str(repo), "-o", "out",
                           "--format", "json", "--no-cache"], cwd=work, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    cells = json.loads((work / "out" / "msready.json").read_text())["skeletons"]
    assert [(c["torch_class"], c["pynative"], c["graph"]) for c in cells] == [
        ("net.Net", "pass", "pass")]


def test_fail_under_gates_on_the_score(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = str(make_repo({"m.py": MODEL}))
    common = ["scan", repo, "-o", str(tmp_path / "out"), "--format", "json",
              "--skeletons", "off", "--no-cache", "-q"]
    assert main([*common, "--fail-under", "0"]) == 0
    assert main([*common, "--fail-under", "100.5"]) == 1


def test_fail_under_from_the_scanned_repository_config(make_repo: MakeRepo,
                                                       tmp_path: Path) -> None:
    repo = make_repo({"m.py": MODEL, "pyproject.toml": "[tool.msready]\nfail-under = 101\n"})
    assert main(["scan", str(repo), "-o", str(tmp_path / "out"), "--format", "json",
                 "--skeletons", "off", "--no-cache", "-q"]) == 1


def test_baseline_fails_only_on_new_findings(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"m.py": MODEL})
    first = tmp_path / "first"
    common = ["--format", "json", "--skeletons", "off", "--no-cache", "-q"]
    assert main(["scan", str(repo), "-o", str(first), *common]) == 0
    baseline = str(first / "msready.json")
    assert main(["scan", str(repo), "-o", str(tmp_path / "same"), "--baseline", baseline,
                 *common]) == 0
    (repo / "m.py").write_text(MODEL + "\n\ndef g(x):\n    return torch.nonzero(x)\n\n"
                               "class Other(nn.Module):\n    def forward(self, x):\n"
                               "        print(x)\n        return g(x)\n")
    assert main(["scan", str(repo), "-o", str(tmp_path / "new"), "--baseline", baseline,
                 *common]) == 1
    assert main(["scan", str(repo), "-o", str(tmp_path / "bad"), "--baseline",
                 str(tmp_path / "missing.json"), *common]) == 2


def _git_repo(repo: Path) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo.resolve().as_uri()


@pytest.mark.parametrize("kind", ["folder", "git URL", "file"])
def test_fail_under_from_config_is_read_for_every_kind_of_source(
        make_repo: MakeRepo, tmp_path: Path, kind: str) -> None:
    repo = make_repo({"m.py": MODEL, "pyproject.toml": "[tool.msready]\nfail-under = 101\n"})
    source = {"folder": str(repo), "git URL": _git_repo(repo), "file": str(repo / "m.py")}[kind]
    assert main(["scan", source, "-o", str(tmp_path / "out"), "--format", "json",
                 "--skeletons", "off", "--no-cache", "-q"]) == 1
    # The command line wins over the repository's setting.
    assert main(["scan", source, "-o", str(tmp_path / "out"), "--format", "json",
                 "--skeletons", "off", "--no-cache", "-q", "--fail-under", "0"]) == 0


def test_a_scan_that_fails_creates_no_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    assert main(["scan", str(tmp_path / "missing"), "-o", str(out), "--skeletons", "off"]) == 2
    assert main(["scan", (tmp_path / "nothing.git").as_uri(), "-o", str(out)]) == 2
    assert not out.exists() and not (tmp_path / "deep").exists()


def test_rule_prints_one_rules_documentation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "MS201"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("### MS201 `nonzero`")
    for part in ("**What it flags.**", "**Why MindSpore cares.**", "**How to migrate.**",
                 "**Reported (INVALID examples)**", "```python"):
        assert part in text
    assert text.rstrip().endswith("docs/rules.md#ms201")
    assert main(["rule", "masked-select"]) == 0
    assert capsys.readouterr().out.startswith("### MS202 `masked-select`")
    assert main(["rule", "MS000"]) == 0
    assert "parse-error" in capsys.readouterr().out


def test_rule_unknown_is_a_one_line_error() -> None:
    proc = run("rule", "MS999")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("msready: error: no rule 'MS999'; the rules are listed in "
                                   "docs/rules.md")


def _server_pid() -> int | None:
    import multiprocessing.forkserver

    return multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined,no-any-return]


def _stop_server_now() -> None:
    import multiprocessing.forkserver

    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("files", "extra", "started"),
    [
        (20, [], True),  # enough files for workers: their server starts at once
        (3, [], False),  # analysed in this process: no server
        (20, ["--jobs", "1"], False),
    ],
)
def test_the_worker_server_starts_before_the_scan_only_when_workers_will_run(
        make_repo: MakeRepo, files: int, extra: list[str], started: bool) -> None:
    from msready.cli import _parser, _start_workers_early

    root = make_repo({f"m{i}.py": "x = 1\n" for i in range(files)})
    _stop_server_now()
    try:
        _start_workers_early(_parser().parse_args(["scan", str(root), *extra]))
        assert (_server_pid() is not None) is started
    finally:
        _stop_server_now()
