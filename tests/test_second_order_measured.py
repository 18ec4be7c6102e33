"""The second-order support data agrees with the installed MindSpore.

``analyzer/data/second_order.json`` is written by ``tools/measure_second_order.py``. These
tests re-measure known facts and a sample of the data file's entries on this machine
(subprocesses running ``mindspore.grad(mindspore.grad(f))`` on CPU) and check that the file
says the same, names the installed MindSpore and covers every target the API table maps to.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.apitable import load_table
from msready.rules.second_order_sites import load_measurements

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "measure_second_order.py"
DATA = ROOT / "analyzer" / "data" / "second_order.json"
MEASURED_PREFIXES = ("mindspore.ops.", "mindspore.mint.", "mindspore.nn.", "mindspore.Tensor.")
KNOWN_PASS = ("mindspore.ops.relu", "mindspore.ops.sigmoid", "mindspore.ops.tanh",
              "mindspore.ops.exp", "mindspore.ops.sqrt")
KNOWN_FAIL = {"mindspore.ops.log_softmax": "LogSoftmaxGrad's bprop not defined"}


def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _sample() -> list[str]:
    """Six measured entries (passes and failures), chosen by a seed taken from the data
    file's measurement time so that a failure is reproducible."""
    data = _data()
    decided = sorted(n for n, e in data["entries"].items() if e["status"] in ("pass", "fail"))
    rng = random.Random(data["measured_at"])
    fails = [n for n in decided if data["entries"][n]["status"] == "fail"]
    passes = [n for n in decided if data["entries"][n]["status"] == "pass"]
    return sorted(rng.sample(passes, 4) + rng.sample(fails, 2))


@lru_cache(maxsize=1)
def remeasured() -> dict[str, dict[str, str]]:
    """Measure the known facts and the sample again, now."""
    names = sorted({*KNOWN_PASS, *KNOWN_FAIL, *_sample()})
    proc = subprocess.run([sys.executable, str(SCRIPT), "--only", *names], capture_output=True,
                          text=True, timeout=300, check=True)
    result: dict[str, dict[str, str]] = json.loads(proc.stdout)
    return result


def test_data_file_names_the_installed_mindspore() -> None:
    data = _data()
    assert data["mindspore_version"] == metadata.version("mindspore")
    assert data["backend"] == "CPU"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data["measured_at"])
    assert load_measurements().mindspore_version == data["mindspore_version"]


def test_entries_are_well_formed() -> None:
    for name, entry in _data()["entries"].items():
        assert name.startswith("mindspore."), name
        assert entry["status"] in ("pass", "fail", "untested"), name
        if entry["status"] == "fail":
            assert entry["error"], name
        if entry["status"] == "untested":
            assert entry["reason"], name


def test_every_table_target_on_cpu_is_measured() -> None:
    measured = _data()["entries"]
    stale = sorted({api for e in load_table().entries()
                    if (api := e.target("cpu").api) and api.startswith(MEASURED_PREFIXES)}
                   - set(measured))
    assert stale == [], "re-run tools/measure_second_order.py: the API table has new targets"


@pytest.mark.parametrize("name", KNOWN_PASS)
def test_known_second_order_passes(name: str) -> None:
    assert remeasured()[name]["status"] == "pass"
    assert _data()["entries"][name]["status"] == "pass"


@pytest.mark.parametrize(("name", "error"), sorted(KNOWN_FAIL.items()))
def test_known_second_order_failures(name: str, error: str) -> None:
    for entry in (remeasured()[name], _data()["entries"][name]):
        assert entry["status"] == "fail"
        assert error in entry["error"]


def test_a_sample_of_the_data_file_measures_the_same() -> None:
    now = remeasured()
    recorded = _data()["entries"]
    differ = {n: (recorded[n]["status"], now[n]["status"]) for n in _sample()
              if recorded[n]["status"] != now[n]["status"]}
    assert differ == {}, f"recorded vs measured now: {differ}"


def test_unknown_names_are_untested_not_guessed() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--only", "mindspore.ops.no_such_op"],
                          capture_output=True, text=True, timeout=120, check=True)
    entry = json.loads(proc.stdout)["mindspore.ops.no_such_op"]
    assert entry == {"status": "untested", "reason": "not found in the installed MindSpore"}


def test_a_measurement_over_its_time_limit_is_untested() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--timeout", "0.0001", "--jobs", "1",
                           "--only", "mindspore.ops.relu", "mindspore.ops.tanh"],
                          capture_output=True, text=True, timeout=180, check=True)
    entries = json.loads(proc.stdout)
    assert entries["mindspore.ops.relu"] == {"status": "untested",
                                             "reason": "timed out after 0.0001 s"}
    assert entries["mindspore.ops.tanh"]["status"] == "untested"  # a fresh worker, same limit
