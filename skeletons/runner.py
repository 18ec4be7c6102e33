"""Running generated Cells (and, on request, the original torch modules) in child
processes: one child per generated file, with a time and a memory limit per Cell. A Cell
that crashes the child, runs out of time or holds more memory than its limit is marked
failed and a new child runs the rest. The memory a child holds grows with the Cells it has
run, so a Cell over the limit is only marked when it ran first in its child. A Cell stopped
after PyNative ran (in GRAPH_MODE) keeps what PyNative gave."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from msready.skeletons.child import MARK, is_ready

# A Cell's time limit is CPU time (all of the child's threads), so that its outcome does
# not depend on what else the machine runs; a Cell that computes little but gives no
# result (waiting, stuck) is stopped after WALL_FACTOR times the limit in wall time.
CELL_TIMEOUT = 60.0
WALL_FACTOR = 3.0
STARTUP_TIMEOUT = 60.0  # importing MindSpore or torch, before the child says it is ready
# A whole model built at full size can hold gigabytes; the machine running the scan must not
# run out of memory for one Cell. MindSpore itself takes about half a gigabyte.
CELL_MEMORY = 4 << 30
_WATCH_EVERY = 0.2  # seconds between two looks at the child's resident memory


def child_env() -> dict[str, str]:
    """The environment of a child: CPU only, MindSpore's logging quiet."""
    env = dict(os.environ)
    env.update({"GLOG_v": "3", "MS_SUBMODULE_LOG_v": "{ME:3}", "CUDA_VISIBLE_DEVICES": "",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    return env


def _pump(stream: Any, sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


def _drain(stream: Any, tail: deque[str]) -> None:
    for line in stream:
        if line.strip():
            tail.append(line.strip())


def _resident(pid: int) -> int:
    """Bytes of memory the process holds (its resident set), 0 when unknown."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _watch(proc: subprocess.Popen[str], limit: int, over: threading.Event) -> None:
    """Stop ``proc`` when it holds more than ``limit`` bytes (Linux; elsewhere, nothing)."""
    while proc.poll() is None:
        if _resident(proc.pid) > limit:
            over.set()
            proc.kill()
            return
        over.wait(_WATCH_EVERY)


CRASHED = "the child process crashed"
NOT_STARTED = "the child process did not start"

# A child ended by a signal someone else sent (the scan interrupted, a CI job cancelled):
# not the Cell's failure, and never cached.
STOPPED_FROM_OUTSIDE = "the child process was stopped from outside"
_FROM_OUTSIDE = frozenset({-signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP})


def run_jobs(entry: str, job: dict[str, Any], cells: list[dict[str, Any]],
             timeout: float = CELL_TIMEOUT,
             memory: int = CELL_MEMORY) -> dict[str, dict[str, Any]]:
    """Run ``cells`` with the child module ``entry``; results by cell key, in any case."""
    results: dict[str, dict[str, Any]] = {}
    remaining = list(cells)
    again: set[str] = set()  # Cells whose child crashed once
    with tempfile.TemporaryDirectory(prefix="msready-run-") as tmp:
        while remaining:
            job_file = Path(tmp) / "job.json"
            job_file.write_text(json.dumps({**job, "cells": remaining}), encoding="utf-8")
            _run_child(entry, job_file, remaining, results, (timeout, memory), tmp)
            # a crash is the Cell's only when a fresh child crashes on it too: a signal
            # from outside that the child turned into an abort, or a machine out of
            # memory, would otherwise be recorded (and cached) as the Cell's failure
            for key, outcome in list(results.items()):
                if str(outcome.get("error", "")).startswith(CRASHED) and key not in again:
                    again.add(key)
                    del results[key]
            remaining = [c for c in remaining if c["key"] not in results]
    return results


def _run_child(entry: str, job_file: Path, cells: list[dict[str, Any]],
               results: dict[str, dict[str, Any]], limits: tuple[float, int],
               cwd: str) -> None:
    timeout, memory = limits
    proc = subprocess.Popen([sys.executable, "-m", entry, str(job_file)], cwd=cwd,
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")
    lines: queue.Queue[str | None] = queue.Queue()
    tail: deque[str] = deque(maxlen=5)
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    threading.Thread(target=_drain, args=(proc.stderr, tail), daemon=True).start()
    over = threading.Event()
    threading.Thread(target=_watch, args=(proc, memory, over), daemon=True).start()
    try:
        # Each Cell's limit counts from the child's ready line (its framework imported),
        # so a slow Cell that runs first in its child is stopped as soon as any other.
        started = _next_result(lines, STARTUP_TIMEOUT, proc.pid)
        ready = is_ready(started)
        for i, cell in enumerate(cells):
            cpu_start = cpu_seconds(proc.pid)
            outcome = _next_result(lines, timeout, proc.pid) if i or ready else started
            partial = None  # the result once PyNative ran, before GRAPH_MODE
            while isinstance(outcome, dict) and outcome.get("partial"):
                partial = {k: v for k, v in outcome.items() if k != "partial"}
                cpu_now = cpu_seconds(proc.pid)
                spent = cpu_now - cpu_start if cpu_now is not None and \
                    cpu_start is not None else 0.0
                outcome = _next_result(lines, max(timeout - spent, 1.0), proc.pid)
            if isinstance(outcome, dict):
                results[str(outcome.get("key", cell["key"]))] = outcome
                continue
            if outcome in ("cpu", "time", "wall") and not (i or ready):
                error = f"{NOT_STARTED}: importing its framework took over {STARTUP_TIMEOUT:g} s"
            elif outcome == "cpu":
                error = f"timed out after {timeout:g} s of CPU time"
            elif outcome == "time":
                error = f"timed out after {timeout:g} s"
            elif outcome == "wall":
                error = f"timed out after {timeout * WALL_FACTOR:g} s without a result"
            else:
                proc.wait(timeout=10)
                last = tail[-1] if tail else f"exit code {proc.returncode}"
                error = f"{CRASHED} ({last[:200]})"
                if proc.returncode in _FROM_OUTSIDE and not over.is_set():
                    error = (f"{STOPPED_FROM_OUTSIDE} (signal {-proc.returncode}): the Cell "
                             "did not run to its end")
                if over.is_set():
                    if i > 0:  # what the Cells before it left may be the excess: a new
                        return  # child runs it first
                    error = (f"stopped: it held more than {memory / (1 << 30):g} GiB of memory, "
                             "the limit for one Cell's run")
            if partial is not None and not error.startswith((CRASHED, STOPPED_FROM_OUTSIDE)):
                # stopped in GRAPH_MODE: what PyNative gave stands
                said = partial.get("error")
                results[cell["key"]] = {**partial, "graph": "fail", "error": (
                    f"{error} (in GRAPH_MODE)" + (f"; {said}" if said else ""))}
                return
            results[cell["key"]] = {"key": cell["key"], "pynative": "fail", "graph": "fail",
                                    "error": error}
            return
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, all threads) process ``pid`` has used; None when
    it cannot be read (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _next_result(lines: queue.Queue[str | None], limit: float,
                 pid: int) -> dict[str, Any] | str:
    """The next result line; "cpu" when the child used ``limit`` seconds of CPU time
    before it ("time": wall time, where CPU time cannot be read), "wall" when
    ``WALL_FACTOR`` times that passed; "eof" when the child's output ended."""
    start, cpu_start = time.monotonic(), cpu_seconds(pid)
    while True:
        try:
            line = lines.get(timeout=_WATCH_EVERY * 5)
        except queue.Empty:
            waited = time.monotonic() - start
            cpu_now = cpu_seconds(pid)
            if cpu_start is None or cpu_now is None:
                if waited > limit:
                    return "time"
            elif cpu_now - cpu_start > limit:
                return "cpu"
            if waited > limit * WALL_FACTOR:
                return "wall"
            continue
        if line is None:
            return "eof"
        if line.startswith(MARK):
            try:
                value = json.loads(line[len(MARK):])
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
