"""The child-process runner: one Cell's crash or time-out never hides the others."""

from __future__ import annotations

import time
from pathlib import Path

from msready.skeletons import runner
from msready.skeletons.cache import CellCache
from msready.skeletons.error_text import stable_error
from msready.skeletons.generate import _borrow_from_parents, _ran_smaller
from msready.skeletons.shapes import Plan

CELLS = '''\
import os
import time

from mindspore import nn, ops


class Good(nn.Cell):
    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Dense(width, 2)

    def construct(self, x):
        return self.fc(x)


class Sleeper(nn.Cell):
    def construct(self, x):
        time.sleep(600)
        return x


class Spinner(nn.Cell):
    def construct(self, x):
        while True:
            pass


class Crasher(nn.Cell):
    def construct(self, x):
        os._exit(3)


class CrashesOnce(nn.Cell):
    def construct(self, x):
        marker = os.path.join(os.path.dirname(__file__), "crashed-once")
        if not os.path.exists(marker):  # as a child aborted by a signal from outside
            open(marker, "w").close()
            os.abort()
        return x


class Broken(nn.Cell):
    def __init__(self):
        super().__init__()
        raise ValueError("bad constructor")


class Hog(nn.Cell):
    def construct(self, x):
        import numpy
        held = numpy.ones(3 << 27)  # 3 GiB of float64, every page written
        return x + float(held[-1])


class Stopped(nn.Cell):
    def construct(self, x):
        import signal
        os.kill(os.getpid(), signal.SIGTERM)  # as a cancelled job's would be
        time.sleep(5)
        return x


class GraphHog(nn.Cell):
    """Runs in PyNative; holds 3 GiB when GRAPH_MODE compiles it (a large graph)."""

    def construct(self, x):
        return x * 2

    def compile_and_run(self, *args, **kwargs):
        import numpy
        held = numpy.ones(3 << 27)
        time.sleep(5)
        return super().compile_and_run(*args, **kwargs) + float(held[-1])


class GraphSpinner(nn.Cell):
    def construct(self, x):
        return x * 2

    def compile_and_run(self, *args, **kwargs):
        while True:
            pass


class GraphOnlyFails(nn.Cell):
    def construct(self, x):
        try:
            y = ops.relu(x)
        except ValueError:
            y = x
        return y
'''


def job(name: str, kwargs: dict[str, object] | None = None) -> dict[str, object]:
    return {"key": name, "module": "cells", "name": name, "kwargs": kwargs or {},
            "compare": None, "inputs": [{"shape": [2, 4], "dtype": "float32", "high": 0}]}


def test_crash_and_timeout_lose_only_their_own_cell(tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    jobs = [job("Good", {"width": 4}), job("Sleeper"), job("Spinner"), job("Crasher"),
            job("Broken"), job("GraphOnlyFails")]
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)}, jobs, timeout=8)
    # the limit is CPU time, the same however busy the machine is; a Cell that computes
    # nothing and gives no result is stopped after three times as long
    assert got["Spinner"]["error"] == "timed out after 8 s of CPU time"
    assert got["Sleeper"]["error"] == "timed out after 24 s without a result"
    assert (got["Good"]["pynative"], got["Good"]["graph"], got["Good"]["error"]) == (
        "pass", "pass", None)
    assert got["Good"]["weights"]["params"] == {"fc.weight": "fc.weight", "fc.bias": "fc.bias"}
    assert got["Crasher"]["pynative"] == "fail"
    assert got["Crasher"]["error"].startswith("the child process crashed")
    # a build failure names the generated line it stopped at
    line = next(i for i, text in enumerate(CELLS.splitlines(), 1) if "bad constructor" in text)
    assert got["Broken"]["error"] == ("building the Cell: ValueError: bad constructor "
                                      f"(at {tmp_path.name}/cells.py:{line})")
    assert (got["GraphOnlyFails"]["pynative"], got["GraphOnlyFails"]["graph"]) == (
        "pass", "fail")
    assert got["GraphOnlyFails"]["error"].startswith("GRAPH_MODE: ")


def test_a_cells_time_limit_counts_from_when_its_child_is_ready(tmp_path: Path) -> None:
    # The spinner runs first in its child: importing MindSpore is not counted against it,
    # and it gets no more than its own limit (the import has a limit of its own).
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    started = time.monotonic()
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Spinner"), job("Good", {"width": 4})], timeout=8)
    assert got["Spinner"]["error"] == "timed out after 8 s of CPU time"
    assert got["Good"]["pynative"] == "pass"
    assert time.monotonic() - started < runner.STARTUP_TIMEOUT


def test_a_cell_that_holds_too_much_memory_is_stopped_and_the_next_one_runs(
        tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    # Hog runs second: its child is stopped, and a new child runs it first before it is
    # marked (memory the Cells before it left is not counted against it)
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Good"), job("Hog"), job("Good", {"width": 4}) | {"key": "After"}],
                          timeout=60, memory=2 << 30)
    assert got["Hog"]["pynative"] == "fail"
    assert got["Hog"]["error"] == ("stopped: it held more than 2 GiB of memory, the limit for "
                                   "one Cell's run")
    assert got["Good"]["pynative"] == got["After"]["pynative"] == "pass"


def test_a_cell_stopped_in_graph_mode_keeps_what_pynative_gave(tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("GraphHog"), job("GraphSpinner"), job("Good", {"width": 4})],
                          timeout=8, memory=2 << 30)
    hog, spinner = got["GraphHog"], got["GraphSpinner"]
    assert (hog["pynative"], hog["graph"], hog["input_shape"]) == ("pass", "fail", "(2, 4)")
    assert hog["error"] == ("stopped: it held more than 2 GiB of memory, the limit for one "
                            "Cell's run (in GRAPH_MODE)")
    assert (spinner["pynative"], spinner["graph"]) == ("pass", "fail")
    assert spinner["error"] == "timed out after 8 s of CPU time (in GRAPH_MODE)"
    assert got["Good"]["graph"] == "pass"
    # a Cell stopped before PyNative gave a result is failed in both modes, as before
    early = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                            [job("Spinner")], timeout=8)
    assert (early["Spinner"]["pynative"], early["Spinner"]["graph"]) == ("fail", "fail")


def test_a_smaller_run_replaces_a_first_run_stopped_in_graph_mode_only_when_it_runs() -> None:
    first = {"pynative": "pass", "graph": "fail",
             "error": "timed out after 60 s of CPU time (in GRAPH_MODE)"}
    broken = {"pynative": "fail", "graph": "fail", "error": "building the Cell: ValueError"}
    ran = {"pynative": "pass", "graph": "pass", "error": None}
    assert _ran_smaller(first, broken) is first
    assert _ran_smaller(first, ran)["error"] == (
        "at the repository's sizes it timed out after 60 s of CPU time (in GRAPH_MODE); "
        "it ran with smaller made-up sizes")


def test_a_cell_stopped_in_graph_mode_with_made_up_values_is_proven_by_its_parent() -> None:
    block = Plan("m.Block", "Block", "m", "m.py", 1, synthesized={"dim": 64})
    net = Plan("m.Net", "Net", "m", "m.py", 9)
    stopped = {"pynative": "pass", "graph": "fail", "input_fits": True,
               "error": "stopped: it held more than 4 GiB of memory, the limit for one "
                        "Cell's run (in GRAPH_MODE)"}
    parent = {"pynative": "pass", "graph": "pass", "error": None,
              "ran": {"m.Block": "(2, 8, 16)"}}
    outcomes = {"m.Block": dict(stopped), "m.Net": parent}
    _borrow_from_parents({"m.Block": block, "m.Net": net}, outcomes)
    assert (outcomes["m.Block"]["graph"], outcomes["m.Block"]["inside"]) == ("pass", "m.Net")
    assert outcomes["m.Block"]["error"] == (
        "alone, with values msready made up (dim=64): " + stopped["error"])
    # a parent that does not compile either proves nothing more
    outcomes = {"m.Block": dict(stopped), "m.Net": {**parent, "graph": "fail"}}
    _borrow_from_parents({"m.Block": block, "m.Net": net}, outcomes)
    assert outcomes["m.Block"] == stopped


def test_a_time_out_is_cached_but_a_child_that_could_not_start_is_not(tmp_path: Path) -> None:
    store = CellCache({"m.py": "class Big: ..."}, tmp_path)
    slow, broken = {"key": "m.Big", "inputs": [[2, 3]]}, {"key": "m.Other", "inputs": []}
    store.put(slow, {"pynative": "fail", "graph": "fail", "error": "timed out after 60 s"})
    store.put(broken, {"pynative": "fail", "graph": "fail",
                       "error": "cannot start the child process: [Errno 12]"})
    stopped = {"key": "m.Stopped", "inputs": [[2, 3]]}
    store.put(stopped, {"pynative": "fail", "graph": "fail",
                        "error": f"{runner.STOPPED_FROM_OUTSIDE} (signal 15): the Cell did "
                                 "not run to its end"})
    assert (store.get(slow) or {}).get("error") == "timed out after 60 s"
    assert store.get(broken) is None
    assert store.get(stopped) is None


def test_a_child_stopped_from_outside_is_not_a_crash_of_the_cell(tmp_path: Path) -> None:
    # SIGTERM (a scan interrupted, a CI job cancelled): said as such, and never cached
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Stopped"), job("Good", {"width": 4})], timeout=60)
    assert got["Stopped"]["error"] == (f"{runner.STOPPED_FROM_OUTSIDE} (signal 15): the Cell "
                                       "did not run to its end")
    assert got["Good"]["pynative"] == "pass"


def test_a_crash_is_the_cells_only_when_a_fresh_child_crashes_on_it_too(
        tmp_path: Path) -> None:
    # the first child aborts; a second one runs the Cell to its end, and that is its result
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("CrashesOnce"), job("Crasher"), job("Good", {"width": 4})],
                          timeout=60)
    assert (got["CrashesOnce"]["pynative"], got["CrashesOnce"]["error"]) == ("pass", None)
    assert (tmp_path / "crashed-once").exists()
    assert got["Crasher"]["error"].startswith(runner.CRASHED)  # crashed twice
    assert got["Good"]["pynative"] == "pass"


SCRIPT = '''\
from mindspore import nn


def helper(x):
    return x * 2


if __name__ == "__main__":
    class Probe(nn.Cell):
        def construct(self, x):
            return helper(x)

    Probe()(None)
'''


def test_a_class_defined_only_when_the_file_runs_as_a_script_is_built_from_its_lines(
        tmp_path: Path) -> None:
    # the module imports without running its script part; the class is built on its own,
    # with the module's names
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Probe") | {"module": "script"},
                           job("Missing") | {"module": "script"}], timeout=60)
    assert (got["Probe"]["pynative"], got["Probe"]["graph"], got["Probe"]["error"]) == (
        "pass", "pass", None)
    assert got["Missing"]["error"] == ("building the Cell: AttributeError: module 'script' "
                                       "has no attribute 'Missing'")


def test_an_error_naming_memory_addresses_reads_the_same_on_every_run() -> None:
    first = ("GRAPH_MODE: TypeError: When creating an instance of 'Normal', all arguments "
             "are required to be constants, but input 0 is a variable, which is "
             "AbstractTensor(shape: (2, 32), element: AbstractScalar(Type: Float32), "
             "value_ptr: 0x55c1def73ed0, value: ValueAny)")
    second = first.replace("0x55c1def73ed0", "0x557412603f50")
    assert stable_error(first) == stable_error(second) == (
        "GRAPH_MODE: TypeError: When creating an instance of 'Normal', all arguments "
        "are required to be constants, but input 0 is a variable, which is "
        "AbstractTensor(shape: (2, 32), element: AbstractScalar(Type: Float32), "
        "value: ValueAny)")
    assert stable_error("TypeError: <Cell object at 0x7f3a12bc4d90> is not callable") == \
        "TypeError: <Cell object at 0x…> is not callable"
    assert stable_error("ValueError: mask 0xff is invalid") == "ValueError: mask 0xff is invalid"
    assert stable_error(None) is None
