"""What the scan holds while files are analysed: a file's bytes are let go once a worker has
them, workers give freed memory back, and the fork server ends with its pool."""

from __future__ import annotations

import multiprocessing.forkserver
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from msready.analyzer.scan import ScanOptions, analyze_files, read_files
from msready.analyzer.source import SourceFile
from msready.analyzer.workers import WorkerPool, heap_trimmer


def _count_lines(rel: str, data: bytes) -> int:
    return data.count(b"\n")


def _mark_start(rel: str, folder: bytes) -> str:
    (Path(folder.decode()) / rel).touch()
    return rel


def _server_pid() -> int | None:
    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    return server._forkserver_pid  # type: ignore[no-any-return]


def test_the_pool_takes_items_as_it_hands_them_out_and_stops_its_server() -> None:
    items = deque((f"m{i}.py", b"x\n" * i) for i in range(6))
    taken = (items.popleft() for _ in range(len(items)))
    pool = WorkerPool(_count_lines, 2)
    assert dict(pool.run(taken)) == {f"m{i}.py": i for i in range(6)}
    assert not items
    for thread in threading.enumerate():
        if thread.name == "msready-forkserver-stop":
            thread.join(10)
    assert _server_pid() is None, "the fork server outlived its pool"
    again = WorkerPool(_count_lines, 2).run([("a.py", b"\n\n")])
    assert dict(again) == {"a.py": 2}, "the next pool starts a server again"


def test_a_worker_has_its_next_file_while_the_caller_holds_its_last_result(
        tmp_path: Path) -> None:
    # One worker, two files: while the caller is still busy with the first result (as
    # the scan is, loading and caching it), the worker is already at the second file.
    folder = str(tmp_path).encode()
    results = WorkerPool(_mark_start, 1).run([("first", folder), ("second", folder)])
    assert next(results) == ("first", "first")
    for _ in range(200):
        if (tmp_path / "second").exists():
            break
        time.sleep(0.05)
    assert (tmp_path / "second").exists(), "the worker waited for the caller"
    assert list(results) == [("second", "second")]


CROSSING = """
import sys

if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    from echo import echo
    from msready.analyzer.workers import WorkerPool

    items = [(f"m{i}.py", bytes([i]) * (1 << 20)) for i in range(8)]
    assert dict(WorkerPool(echo, 2).run(list(items))) == dict(items)
    print("crossed")
"""


def test_large_files_and_large_results_cross_without_either_side_waiting(
        tmp_path: Path) -> None:
    # Each worker holds two files: while it sends a 1 MB result, the main process may be
    # sending it its next 1 MB file. Neither may wait on the other to read (with both
    # pipes full, both stopped for good): run apart, so that a stuck pool fails the test.
    (tmp_path / "echo.py").write_text("def echo(rel, data):\n    return data\n")
    (tmp_path / "crossing.py").write_text(CROSSING)
    run = subprocess.Popen([sys.executable, str(tmp_path / "crossing.py"), str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        out, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
        raise AssertionError("the pool stopped moving") from None
    assert (run.returncode, out.strip()) == (0, "crossed"), err


def test_analyze_files_takes_the_bytes_out_of_contents(tmp_path: Path) -> None:
    files = []
    for i in range(20):
        path = tmp_path / f"m{i}.py"
        path.write_text(f"import torch\nx{i} = torch.zeros({i})\n", encoding="utf-8")
        files.append(SourceFile(path, f"m{i}.py"))
    contents = read_files(files)
    results, _ = analyze_files(files, contents, ScanOptions(jobs=2, cache=False))
    assert not contents
    assert [r.path for r in results] == [f.rel for f in files]
    assert all(r.status == "parsed" for r in results)


def test_the_heap_trimmer_calls_glibc_where_there_is_glibc() -> None:
    trim = heap_trimmer()
    if platform.libc_ver()[0] == "glibc":
        assert trim() in (0, 1)  # malloc_trim: 1 when it gave memory back
    else:
        assert trim() is None


def test_a_worker_loads_neither_networkx_nor_numpy_nor_matchers() -> None:
    """The fork server imports what the workers need to walk files; networkx (the call
    graph) and numpy (one repository rule's table) are only for the main process, and
    libcst's matchers (a fifth of a second to import) only for the Cells' generator."""
    probe = (
        "import importlib, sys\n"
        "from msready.analyzer import workers\n"
        "from msready.rules.registry import family_modules\n"
        "for name in [*workers._PRELOAD, *family_modules()]:\n"
        "    importlib.import_module(name)\n"
        "from msready.analyzer.scan import analyze_safely\n"
        "analyze_safely('m.py', b'import torch\\nclass N(torch.nn.Module):\\n"
        "    def forward(self, x):\\n        return x.nonzero()\\n')\n"
        "print(sorted({'networkx', 'numpy', 'libcst.matchers'} & set(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
