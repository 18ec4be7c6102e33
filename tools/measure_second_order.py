"""Measure which MindSpore APIs support second-order differentiation on this machine.

For every differentiable target the API table maps to on the cpu backend (functions of
``mindspore.ops`` / ``mindspore.mint``, ``mindspore.Tensor`` methods and ``mindspore.nn``
Cells), plus a built-in list of common targets, the script builds a small call
automatically (it tries a fixed list of constructor arguments and inputs until the forward
pass runs), then runs ``mindspore.grad(mindspore.grad(f))`` in PyNative mode on CPU, where
``f`` sums the API's output. Each target is recorded as ``pass``, ``fail`` (with the first
line of the error) or ``untested`` (with the reason: no automatic call could be built, the
output is not a floating-point function of the input, the first-order gradient already
fails, or the measurement timed out).

Usage::

    python tools/measure_second_order.py          # rewrite analyzer/data/second_order.json
    python tools/measure_second_order.py --only mindspore.ops.relu mindspore.ops.log_softmax

Targets run in worker subprocesses with a per-API time limit, so one hanging operator cannot
stall the script; a worker that times out or dies is replaced and the rest go on.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from msready.analyzer.apitable import import_object

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "analyzer" / "data" / "api_table.json"
OUTPUT = ROOT / "analyzer" / "data" / "second_order.json"
MEASURED_PREFIXES = ("mindspore.ops.", "mindspore.mint.", "mindspore.nn.", "mindspore.Tensor.")
PER_API_SECONDS = 20.0
STARTUP_SECONDS = 60.0

# Common targets measured even when the API table does not (yet) map to them.
BUILTIN_TARGETS = (
    "mindspore.ops.relu", "mindspore.ops.sigmoid", "mindspore.ops.tanh", "mindspore.ops.exp",
    "mindspore.ops.log", "mindspore.ops.sqrt", "mindspore.ops.softmax",
    "mindspore.ops.log_softmax", "mindspore.ops.gelu", "mindspore.ops.silu",
    "mindspore.ops.leaky_relu", "mindspore.ops.elu", "mindspore.ops.softplus",
    "mindspore.ops.matmul", "mindspore.ops.conv2d", "mindspore.ops.mean", "mindspore.ops.sum",
    "mindspore.ops.pow", "mindspore.ops.abs", "mindspore.ops.sin", "mindspore.ops.cos",
    "mindspore.ops.logsumexp", "mindspore.ops.layer_norm", "mindspore.ops.mse_loss",
    "mindspore.ops.l1_loss", "mindspore.ops.cross_entropy", "mindspore.ops.max_pool2d",
    "mindspore.ops.avg_pool2d", "mindspore.ops.dense", "mindspore.ops.norm",
    "mindspore.nn.ReLU", "mindspore.nn.Sigmoid", "mindspore.nn.Tanh", "mindspore.nn.GELU",
    "mindspore.nn.LeakyReLU", "mindspore.nn.ELU", "mindspore.nn.Softplus",
    "mindspore.nn.Softmax", "mindspore.nn.LogSoftmax", "mindspore.nn.Conv1d",
    "mindspore.nn.Conv2d", "mindspore.nn.Conv3d", "mindspore.nn.Conv2dTranspose",
    "mindspore.nn.BatchNorm1d", "mindspore.nn.BatchNorm2d", "mindspore.nn.LayerNorm",
    "mindspore.nn.GroupNorm", "mindspore.nn.InstanceNorm2d", "mindspore.nn.Dense",
    "mindspore.nn.MaxPool2d", "mindspore.nn.AvgPool2d", "mindspore.nn.AdaptiveAvgPool2d",
    "mindspore.nn.MSELoss", "mindspore.nn.L1Loss", "mindspore.nn.CrossEntropyLoss",
    "mindspore.nn.Dropout", "mindspore.nn.Flatten",
)

# ----- the worker: runs inside a subprocess ----------------------------------------------


def _resolve(name: str) -> Any:
    """The object a dotted MindSpore name designates (module attributes followed)."""
    obj = import_object(name)
    if obj is None:
        raise ImportError(name)
    return obj


def _inputs(ms: Any, np: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """Candidate positional inputs, the differentiated tensor first."""
    rng = np.random.default_rng(0)

    def t(*shape: int) -> Any:
        return ms.Tensor((rng.random(shape) + 0.5).astype(np.float32))

    labels = ms.Tensor(np.array([0, 2], dtype=np.int32))
    return [
        ("float32[2,3]", (t(2, 3),)),
        ("float32[2,3], float32[2,3]", (t(2, 3), t(2, 3))),
        ("float32[2,3], float32[3,2]", (t(2, 3), t(3, 2))),
        ("float32[1,2,6,6]", (t(1, 2, 6, 6),)),
        ("float32[1,2,6,6], float32[3,2,3,3]", (t(1, 2, 6, 6), t(3, 2, 3, 3))),
        ("float32[1,2,6]", (t(1, 2, 6),)),
        ("float32[1,2,6], float32[3,2,3]", (t(1, 2, 6), t(3, 2, 3))),
        ("float32[1,2,5,5,5]", (t(1, 2, 5, 5, 5),)),
        ("float32[2,3], int32[2]", (t(2, 3), labels)),
        ("float32[4]", (t(4),)),
        ("float32[2,3,4]", (t(2, 3, 4),)),
        ("float32[2,3], -1", (t(2, 3), -1)),
        ("float32[2,3], 3, 2", (t(2, 3), 3, 2)),
        ("float32[2,3], 1", (t(2, 3), 1)),
        ("float32[1,2,6,6], 2", (t(1, 2, 6, 6), 2)),
        ("float32[1,2,6], 2", (t(1, 2, 6), 2)),
        ("float32[1,2,6,6], (3, 3)", (t(1, 2, 6, 6), (3, 3))),
        ("float32[2,3], float32[2,3], float32[2,3]", (t(2, 3), t(2, 3), t(2, 3))),
        ("float32[2,2,4,4], 4 x float32[2]", (t(2, 2, 4, 4), t(2), t(2), t(2), t(2))),
        ("float32[2,3], (3,), float32[3], float32[3]", (t(2, 3), (3,), t(3), t(3))),
        ("float32[2,4,3,3], 2, float32[4], float32[4]", (t(2, 4, 3, 3), 2, t(4), t(4))),
    ]


CONSTRUCTOR_ARGS: tuple[tuple[Any, ...], ...] = (
    (), (2, 3, 3), (3, 4), (2,), (3,), ((3,),), (1, 2), (2, 2),
)


def _first_output(out: Any) -> Any:
    while isinstance(out, (tuple, list)) and out:
        out = out[0]
    return out


def _is_float(ms: Any, value: Any) -> bool:
    return isinstance(value, ms.Tensor) and value.dtype in (ms.float16, ms.float32, ms.float64)


def _candidates(ms: Any, np: Any, name: str,
                obj: Any) -> Iterator[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    """(description, callable, inputs) pairs to try, in order."""
    inputs = _inputs(ms, np)
    short = name.rsplit(".", 1)[-1]
    if name.startswith("mindspore.Tensor."):
        for desc, args in inputs:
            def method(x: Any, *rest: Any, _m: str = short) -> Any:
                return getattr(x, _m)(*rest)
            yield f"Tensor.{short}({desc})", method, args
        return
    if isinstance(obj, type):
        if not issubclass(obj, ms.nn.Cell):
            return
        for ctor in CONSTRUCTOR_ARGS:
            try:
                cell = obj(*ctor)
            except Exception:
                continue
            cell.set_train(False)
            for desc, args in inputs:
                yield f"nn.{short}{ctor!r}({desc})", cell, args
        return
    if callable(obj):
        for desc, args in inputs:
            yield f"{short}({desc})", obj, args


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def measure_one(ms: Any, np: Any, name: str) -> dict[str, str]:
    """Measure one target: pass / fail (with the error) / untested (with the reason)."""
    try:
        obj = _resolve(name)
    except (ImportError, AttributeError):
        return {"status": "untested", "reason": "not found in the installed MindSpore"}
    last = "no candidate call applies to this kind of API"
    for desc, fn, args in _candidates(ms, np, name, obj):
        try:
            out = _first_output(fn(*args))
            if isinstance(out, ms.Tensor):
                out.asnumpy()
        except Exception as exc:
            last = _first_line(exc)
            continue
        if not _is_float(ms, out):
            return {"status": "untested", "call": desc,
                    "reason": "the output is not a floating-point tensor (not differentiable)"}
        rest = args[1:]
        # A fixed random weighting keeps the scalar from being constant by construction
        # (the plain sum of a softmax or of a normalised vector is).
        weight = ms.Tensor(np.random.default_rng(1).random(out.shape).astype(np.float32) + 0.5)
        weight2 = ms.Tensor(np.random.default_rng(2).random(args[0].shape).astype(np.float32)
                            + 0.5)

        def total(x: Any, _fn: Callable[..., Any] = fn, _rest: tuple[Any, ...] = rest,
                  _w: Any = weight) -> Any:
            return (_first_output(_fn(x, *_rest)) * _w).sum()

        first = ms.grad(total)
        try:
            g1 = first(args[0])
            nonzero = _is_float(ms, g1) and bool(np.any(g1.asnumpy() != 0))
        except Exception as exc:
            return {"status": "untested", "call": desc,
                    "reason": f"the first-order gradient fails: {_first_line(exc)}"}
        if not nonzero:
            return {"status": "untested", "call": desc,
                    "reason": "the first-order gradient is zero (not a differentiable function "
                              "of its input)"}

        def first_sum(x: Any, _g: Callable[..., Any] = first, _w: Any = weight2) -> Any:
            return (_g(x) * _w).sum()

        try:
            ms.grad(first_sum)(args[0]).asnumpy()
        except Exception as exc:
            return {"status": "fail", "call": desc, "error": _first_line(exc)}
        return {"status": "pass", "call": desc}
    return {"status": "untested", "reason": f"no automatic call could be built ({last})"}


def worker(result_fd: int) -> None:
    """Read target names from stdin, one per line; write one JSON line per result."""
    import warnings

    warnings.filterwarnings("ignore")
    import mindspore as ms
    import numpy as np

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.runtime.launch_blocking()  # errors surface at the call that caused them
    out = os.fdopen(result_fd, "w", buffering=1)
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        try:
            entry = measure_one(ms, np, name)
        except BaseException as exc:
            entry = {"status": "untested", "reason": f"measurement crashed: {_first_line(exc)}"}
        out.write(json.dumps({"name": name, "entry": entry}) + "\n")


# ----- the driver ------------------------------------------------------------------------


class Worker:
    """A measuring subprocess fed one target at a time."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, GLOG_v="3", PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(write_fd)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(write_fd,), text=True, env=env)
        os.close(write_fd)
        self.lines: queue.Queue[str | None] = queue.Queue()
        reader = os.fdopen(read_fd, "r")
        threading.Thread(target=self._pump, args=(reader,), daemon=True).start()
        self.ready = self._next(STARTUP_SECONDS) is not None

    def _pump(self, reader: Any) -> None:
        for line in reader:
            self.lines.put(line)
        self.lines.put(None)

    def _next(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        return json.loads(line) if line else None

    def measure(self, name: str, timeout: float) -> dict[str, str] | None:
        """The entry for one target, None when the worker timed out or died."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(name + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        reply = self._next(timeout)
        if reply is None or reply.get("name") != name:
            return None
        entry: dict[str, str] = reply["entry"]
        return entry

    def stop(self) -> None:
        """End the subprocess."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _run_share(names: list[str], results: dict[str, dict[str, str]], timeout: float) -> None:
    current: Worker | None = None
    for name in names:
        if current is None:
            current = Worker()
            if not current.ready:
                current.stop()
                current = None
                results[name] = {"status": "untested", "reason": "MindSpore did not start"}
                continue
        entry = current.measure(name, timeout)
        if entry is None:
            code = current.proc.poll()
            current.stop()
            current = None
            reason = (f"timed out after {timeout:g} s" if code is None
                      else f"the measuring process died (exit code {code})")
            entry = {"status": "untested", "reason": reason}
        results[name] = entry
    if current is not None:
        current.stop()


def measure(names: Sequence[str], jobs: int = 2,
            timeout: float = PER_API_SECONDS) -> dict[str, dict[str, str]]:
    """Measure every target in ``jobs`` parallel workers."""
    results: dict[str, dict[str, str]] = {}
    shares = [list(names[i::jobs]) for i in range(max(1, jobs))]
    threads = [threading.Thread(target=_run_share, args=(share, results, timeout))
               for share in shares if share]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {name: results[name] for name in sorted(results)}


def table_targets(backend: str = "cpu") -> list[str]:
    """The MindSpore targets the API table maps to on a backend, plus the built-in list."""
    names = set(BUILTIN_TARGETS)
    if TABLE.is_file():
        data = json.loads(TABLE.read_text(encoding="utf-8"))
        for entry in data.get("entries", []):
            api = entry.get("targets", {}).get(backend, {}).get("api")
            if isinstance(api, str) and api.startswith(MEASURED_PREFIXES):
                names.add(api)
    return sorted(names)


def mindspore_version() -> str:
    """The installed MindSpore version."""
    from importlib import metadata

    return metadata.version("mindspore")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and write the data file (or print the entries for ``--only``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="+", help="measure these targets and print them")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=PER_API_SECONDS,
                        help="seconds allowed per API")
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker)
        return 0
    names = args.only or table_targets()
    entries = measure(names, args.jobs, args.timeout)
    if args.only:
        print(json.dumps(entries, indent=2))
        return 0
    data = {
        "mindspore_version": mindspore_version(),
        "backend": "CPU",
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generated_by": "tools/measure_second_order.py",
        "entries": entries,
    }
    args.output.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for entry in entries.values():
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    print(f"wrote {args.output}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
