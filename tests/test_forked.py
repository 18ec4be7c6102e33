"""Whole-repository work in a forked copy of the scanning process: the same answer as
computing it in place, and computed in place when the copy cannot give it."""

from __future__ import annotations

import os
import signal

import pytest

from msready.analyzer import workers
from msready.analyzer.workers import Forked


@pytest.fixture(autouse=True)
def small_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test process itself may be past the size limit (MindSpore loaded by other
    # tests): these tests are about forking, so the limit is lifted.
    monkeypatch.setattr(workers, "FORK_BELOW", 2**62)


def test_the_result_comes_from_a_copy_of_this_process() -> None:
    here = os.getpid()
    forked = Forked(lambda: (os.getpid(), os.getppid(), [1, "two", (3.0,)]))
    pid, parent, value = forked.result()
    assert pid != here and parent == here
    assert value == [1, "two", (3.0,)]


def test_without_fork_the_result_is_computed_here() -> None:
    assert Forked(os.getpid, fork=False).result() == os.getpid()


def test_a_copy_that_dies_leaves_the_work_to_this_process() -> None:
    here = os.getpid()

    def compute() -> str:
        if os.getpid() != here:  # the copy is killed, as the out-of-memory killer would
            os.kill(os.getpid(), signal.SIGKILL)
        return "computed here"

    assert Forked(compute).result() == "computed here"


def test_a_copy_whose_work_fails_leaves_the_work_to_this_process() -> None:
    here = os.getpid()

    def compute() -> int:
        if os.getpid() != here:
            raise ValueError("only in the copy")
        return 7

    assert Forked(compute).result() == 7


def test_a_process_past_the_size_limit_computes_here(monkeypatch: pytest.MonkeyPatch) -> None:
    # A copy of a large process would write to much of what it shares, so a large
    # process does the work itself, in the same memory.
    monkeypatch.setattr(workers, "FORK_BELOW", 0)
    assert Forked(os.getpid).result() == os.getpid()
