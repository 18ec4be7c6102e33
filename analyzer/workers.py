"""A pool of worker processes for per-file work that survives the death of a worker.

Each worker holds at most one file at a time, so when one dies (``kill -9``, the kernel's
out-of-memory killer, a crash in a native parser) the pool knows exactly which file it
lost: that file is reported to the caller as lost, a fresh worker takes the dead one's
place, and the remaining files are analysed. Results come back as each worker finishes
(results are streamed, in completion order, not in input order). A worker whose resident
memory has grown gives the free pages of its C heap back to the system after a file
(glibc's ``malloc_trim``): the native parser's and the large Python objects' memory, which
the heap's fragmentation would otherwise keep resident, so that a worker stays near
100 MB over thousands of files instead of growing towards the limit. A worker whose
resident memory is still past :data:`WORKER_RSS_LIMIT` after a large file is retired and
replaced, so one big file does not keep its memory for the rest of the scan.

Workers are forked from a small server process started once per pool (``forkserver``)
that has imported the analyzer and the rules, so they start fast and do not inherit the
main process's memory (every file's bytes, the results so far); it ends with the pool.

Test hook: when ``MSREADY_TEST_STOP_AT`` names a file (its repository-relative path), the
worker that picks that file up stops itself with SIGSTOP before analysing it, so that a
test can kill exactly the worker holding a known file, as the out-of-memory killer would.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import queue
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Generic, TypeVar, cast

R = TypeVar("R")
T = TypeVar("T")
Work = Callable[[str, bytes], R]

WORKER_RSS_LIMIT = 256 * 2**20
# A worker gives its free heap memory back after a file when its resident memory is past
# TRIM_ABOVE and has grown by TRIM_STEP since it last did. Not after every file: the pages
# given back are faulted in again by the next files, which costs system time (trimming
# after every file cost 3% of a cold scan's time); this way a worker trims about once in
# a hundred files and stays between 80 and 130 MB.
TRIM_ABOVE = 128 * 2**20
TRIM_STEP = 8 * 2**20
# Parsing allocates millions of small objects that reference counting frees; with the
# default threshold (700) the cyclic collector runs thousands of times per file and each
# older-generation pass walks every live object. A threshold this high (as mypy does)
# took a fifth off a cold scan's CPU time and left its peak memory unchanged.
GC_THRESHOLD = (100_000, 50, 100)
STOP_AT_ENV = "MSREADY_TEST_STOP_AT"
# A process larger than this does its whole-repository work itself rather than in a forked
# copy (Forked): the copy wrote to about half the pages it shares, so a scan of a million
# lines (an 843 MB main process) peaked at 1,279 MiB with it and at 863 MiB without. Below
# this size, the process and its copy stay under about 880 MiB together (the workers are
# gone by then).
FORK_BELOW = 576 * 2**20
# How many files a worker holds at once: the one it analyses and the next, waiting in its
# pipe (with one, each worker waited for this process between two files: 3% of its time).
QUEUED = 2
# Fewer files than this are analysed in the main process: starting workers costs more.
PARALLEL_MIN_FILES = 16
_PRELOAD = ["msready.analyzer.scan"]
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class PoolError(RuntimeError):
    """The worker processes cannot run at all (they die before taking any work)."""


@dataclass(frozen=True, slots=True)
class Lost:
    """A file whose worker died while analysing it."""

    rel: str
    how: str  # "killed by signal 9 (SIGKILL)", "exited with code 1", ...


def resident_bytes() -> int:
    """This process's resident memory in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Run a block with the cyclic garbage collector out of the way: the objects alive
    on entry (imported modules, tables) are frozen out of its passes and it runs after
    :data:`GC_THRESHOLD` allocations instead of 700. Restored on exit. Inside another
    such block it changes nothing (the outer block restores)."""
    old = gc.get_threshold()
    if old == GC_THRESHOLD:
        yield
        return
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def heap_trimmer() -> Callable[[], object]:
    """A function that gives the free memory of the C heap back to the system (glibc's
    ``malloc_trim(0)``), or one that does nothing where there is no such call."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


def _serve(conn: Connection, work: Work[object]) -> None:
    """A worker's loop: take (path, bytes), send back (result, resident bytes), then give
    back the memory the file freed. The files are read from the pipe by a thread of
    their own, as soon as they come: the main process, sending the next file while this
    loop sends a result, is never blocked by a full pipe while this loop is blocked by
    the main process not reading (both directions would wait on each other)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    gc.freeze()  # what the server preloaded stays out of every collection
    gc.set_threshold(*GC_THRESHOLD)
    stop_at = os.environ.get(STOP_AT_ENV)
    trim = heap_trimmer()
    trimmed = resident_bytes()
    tasks: queue.SimpleQueue[tuple[str, bytes] | None] = queue.SimpleQueue()
    threading.Thread(target=_take, args=(conn, tasks), name="msready-worker-input",
                     daemon=True).start()
    while True:
        task = tasks.get()
        if task is None:
            return
        rel, data = task
        if stop_at is not None and rel == stop_at:
            os.kill(os.getpid(), signal.SIGSTOP)
        result = work(rel, data)
        del task, data
        rss = resident_bytes()
        conn.send((result, rss))
        del result
        if rss > max(TRIM_ABOVE, trimmed + TRIM_STEP):  # while the main process reads
            trim()
            trimmed = resident_bytes()


def _take(conn: Connection, tasks: queue.SimpleQueue[tuple[str, bytes] | None]) -> None:
    """Put every file the pipe brings in ``tasks``, then None (the pipe's end, or the
    main process's None)."""
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            task = None
        tasks.put(task)
        if task is None:
            return


def _how(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {-code} ({name})"
    return f"exited with code {code}"


Context = multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext


class _Worker:
    __slots__ = ("conn", "process", "retiring", "served", "tasks")

    def __init__(self, context: Context, work: Work[object]) -> None:
        ours, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(target=_serve, args=(theirs, work),
                                                    daemon=True)
        self.process.start()
        theirs.close()
        self.conn = ours
        # the files sent, in order: the first is the one it works on, the others wait in
        # its pipe
        self.tasks: deque[tuple[str, bytes]] = deque()
        self.served = 0
        self.retiring = False  # past its memory limit: no more files, closed once done

    def close(self) -> None:
        """Ask the worker to exit and wait a little for it."""
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.conn.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def _context() -> Context:
    if "forkserver" in multiprocessing.get_all_start_methods():
        from msready.rules import family_modules

        context = multiprocessing.get_context("forkserver")
        # The server imports the analyzer and every rule module once; workers forked
        # from it start with them loaded.
        context.set_forkserver_preload([*_PRELOAD, *family_modules()])
        return context
    return multiprocessing.get_context("spawn")


def start_server() -> None:
    """Start the server the workers are forked from (where there is one) without waiting
    for it, so that it imports the analyzer while the caller does other work. Does
    nothing when it runs already."""
    if isinstance(_context(), multiprocessing.context.ForkServerContext):
        multiprocessing.forkserver.ensure_running()


def stop_server() -> None:
    """End the fork server once its workers are done (the next pool starts it again):
    idle, it would hold the analyzer's and the rules' imports, some 70 MB, while the
    main process builds the repository model and writes the reports. The standard
    library stops it only at exit; its own tests use ``ForkServer._stop``, which is used
    here where it exists."""
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    stop = getattr(server, "_stop", None)
    if callable(stop):  # in the background: the server takes a tenth of a second to exit
        threading.Thread(target=_quietly, args=(stop,), name="msready-forkserver-stop",
                         daemon=True).start()


def _quietly(stop: Callable[[], object]) -> None:
    with contextlib.suppress(OSError):
        stop()


@dataclass
class WorkerPool(Generic[R]):
    """Runs ``work(path, bytes)`` for many files in ``jobs`` worker processes."""

    work: Work[R]
    jobs: int

    def start(self) -> None:
        """Start the server the workers are forked from (see :func:`start_server`);
        :meth:`run` starts it otherwise."""
        start_server()

    def run(self, items: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, R | Lost]]:
        """(path, result) for every item as workers finish; (path, :class:`Lost`) for a
        file whose worker died. Raises :class:`PoolError` when workers keep dying before
        they take any work.

        Each worker holds up to :data:`QUEUED` files, so that it starts the next one as
        soon as it sends a result, without waiting for this process to read it and answer.
        A worker that dies loses the file it worked on; the files waiting in its pipe go
        to another."""
        context = _context()
        pending = deque(items)
        del items
        workers: list[_Worker] = []
        ready: list[tuple[str, R | Lost]] = []
        stillborn = 0
        try:
            while True:
                while pending and sum(not w.retiring for w in workers) < self.jobs:
                    workers.append(_Worker(context, self.work))  # type: ignore[arg-type]
                for worker in workers:
                    while pending and len(worker.tasks) < QUEUED and not worker.retiring:
                        task = pending.popleft()
                        try:
                            worker.conn.send(task)
                            worker.tasks.append(task)
                        except (OSError, ValueError):  # died before it took the file
                            pending.appendleft(task)
                            break
                # Results are handed on only once every worker has its next files: the
                # caller's work on them (loading, caching) does not keep workers idle.
                yield from ready
                ready.clear()
                for worker in [w for w in workers if w.retiring and not w.tasks]:
                    worker.close()  # a fresh worker takes its place
                    workers.remove(worker)
                if not pending and all(not w.tasks for w in workers):
                    break
                owners: dict[object, _Worker] = {}
                handles: list[Connection | int] = []
                for worker in workers:
                    owners[worker.process.sentinel] = worker
                    handles.append(worker.process.sentinel)
                    if worker.tasks:
                        owners[worker.conn] = worker
                        handles.append(worker.conn)
                handled: set[int] = set()
                for handle in wait(handles):
                    worker = owners[handle]
                    if id(worker) in handled:
                        continue
                    handled.add(id(worker))
                    message = self._receive(worker)
                    if message is not None:
                        rel, result, rss = message
                        worker.retiring = worker.retiring or rss > WORKER_RSS_LIMIT
                        ready.append((rel, result))
                    elif not worker.process.is_alive() or handle is worker.conn:
                        worker.kill()
                        workers.remove(worker)
                        if worker.tasks:
                            held = worker.tasks.popleft()[0]
                            ready.append((held, Lost(held, _how(worker.process))))
                            pending.extendleft(reversed(worker.tasks))
                        elif worker.served == 0:
                            stillborn += 1
                            if stillborn > 2 * self.jobs + 2:
                                raise PoolError("worker processes die before taking any work "
                                                f"({_how(worker.process)})")
        finally:
            for worker in workers:
                worker.close()
            if isinstance(context, multiprocessing.context.ForkServerContext):
                stop_server()

    @staticmethod
    def _receive(worker: _Worker) -> tuple[str, R, int] | None:
        """The result a worker sent, if it sent one."""
        if not worker.tasks:
            return None
        try:
            if not worker.conn.poll():
                return None
            result, rss = worker.conn.recv()
        except (EOFError, OSError):
            return None
        rel = worker.tasks.popleft()[0]
        worker.served += 1
        return rel, result, rss


class Forked(Generic[T]):
    """A computation run in a forked copy of this process while this process goes on, for
    the whole-repository work after the workers are done (which would otherwise leave all
    but one core idle). Only while this process is smaller than :data:`FORK_BELOW`.

    The copy shares this process's memory until it writes to it; it runs ``compute``,
    sends the pickled result through a pipe and exits without cleaning up. Where there is
    no ``fork`` (Windows, macOS's default), when forking fails, or when the copy dies or
    fails, :meth:`result` runs ``compute`` in this process instead: the answer is the same,
    only later. ``compute`` must depend on nothing this process changes meanwhile.
    """

    def __init__(self, compute: Callable[[], T], *, fork: bool = True) -> None:
        self._compute = compute
        self._pid = 0
        self._read = -1
        if not fork or not hasattr(os, "fork") or resident_bytes() >= FORK_BELOW:
            return
        try:
            read, write = os.pipe()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:  # the copy: never returns
            os.close(read)
            _run_forked(compute, write)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> T:
        """The copy's result (waiting for it), or ``compute()`` run here."""
        if self._pid:
            with os.fdopen(self._read, "rb") as pipe:  # read to the end before reaping
                blob = pipe.read()
            _, status = os.waitpid(self._pid, 0)
            self._pid = 0
            if os.waitstatus_to_exitcode(status) == 0 and blob:
                with contextlib.suppress(Exception):  # a truncated result: computed here
                    return cast(T, pickle.loads(blob))
        return self._compute()


def _run_forked(compute: Callable[[], object], write: int) -> None:
    """The forked copy's whole life: no collections (a pass would write to every object
    and so copy every page it shares with its parent), the result down the pipe, and an
    exit that runs no clean-up of the parent's (its atexit handlers, its buffered output)."""
    code = 1
    try:
        gc.disable()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        blob = pickle.dumps(compute(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as pipe:
            pipe.write(blob)
        code = 0
    finally:
        os._exit(code)
