"""A worker process that dies costs the file it held, never the scan.

The out-of-memory killer or a crash in a native parser ends a worker with no warning. The
test does what they do: it kills (``kill -9``) the worker holding a known file in the middle
of a real scan. To know which worker that is, the scan runs with the test hook
``MSREADY_TEST_STOP_AT``: the worker that picks up that file stops itself (SIGSTOP) before
analysing it, and the test kills that stopped process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from msready.analyzer.workers import STOP_AT_ENV

CONV = "import torch\n\nconv = torch.nn.Conv2d(3, 8, 3)\n"
FILES = [f"pkg/m{i:02d}.py" for i in range(24)]
VICTIM = "pkg/m07.py"


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2:].split()[1])
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found.extend(children)
        frontier.extend(children)
    return found


def _stopped_worker(root: int, deadline: float) -> int:
    """The pid of the process below ``root`` that stopped itself."""
    while time.monotonic() < deadline:
        for pid in _descendants(root):
            try:
                stat = Path(f"/proc/{pid}/stat").read_bytes()
            except OSError:
                continue
            if stat[stat.rindex(b")") + 2:].split()[0] == b"T":
                return pid
        time.sleep(0.05)
    raise AssertionError("no worker stopped at the victim file")


def test_a_killed_worker_costs_only_the_file_it_held(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    for rel in FILES:
        (repo / rel).write_text(CONV)
    out = tmp_path / "out"
    env = dict(os.environ, **{STOP_AT_ENV: VICTIM})
    scan = subprocess.Popen(
        [sys.executable, "-m", "msready", "scan", str(repo), "-o", str(out), "--format", "json",
         "--skeletons", "off", "--no-cache", "--jobs", "2", "-q"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        victim = _stopped_worker(scan.pid, time.monotonic() + 120)
        os.kill(victim, signal.SIGKILL)
        _, stderr = scan.communicate(timeout=300)
    finally:
        scan.kill()
    assert scan.returncode == 0, stderr
    assert stderr == ""

    report = json.loads((out / "msready.json").read_text())
    lost = [f for f in report["findings"] if f["path"] == VICTIM]
    assert [(f["rule"], f["category"], f["line"]) for f in lost] == [("MS000", "parse-error", 1)]
    assert "could not be analysed: the worker process died" in lost[0]["message"]
    assert "SIGKILL" in lost[0]["message"]
    conv = {f["path"] for f in report["findings"] if f["symbol"] == "torch.nn.Conv2d"}
    assert conv == set(FILES) - {VICTIM}
    assert report["source"]["files_scanned"] == len(FILES) + 1
    assert report["source"]["files_failed"] == 1
