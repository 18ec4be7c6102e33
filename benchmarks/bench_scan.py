"""Time a full msready scan of a large real PyTorch code base against peers.

The code base is the Python source inside a wheel fetched from the package registry with
pip (``timm`` by default; ``--package transformers`` for a much larger one). In the same
run, on the same files and cores, it times:

* ``libcst parse``: a bare ``libcst.parse_module`` of every file, one process;
* ``libcst parse xN``: the same spread over N worker processes (N = ``--jobs``);
* ``fixit lint``: Fixit's linter with its default rules (installed into a private
  virtual environment under ``benchmarks/.work`` on first use; skipped with a note when
  it cannot be installed);
* ``msready cold``: ``msready scan --format json --skeletons off`` with an empty cache;
* ``msready warm``: the same with the cache the cold run filled.

Each is run ``--repeat`` times (each in a fresh process); the medians and the ratios to
the bare parse are printed. This is a measuring tool, not a test: shared machines are
noisy, so only ratios within one invocation mean anything.

    python benchmarks/bench_scan.py [--package timm] [--repeat 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

WORK = Path(__file__).resolve().parent / ".work"


def fetch_corpus(package: str) -> Path:
    """Download the package's wheel with pip and unpack its Python files.

    The files go outside this repository: Fixit, like git, skips what .gitignore names.
    """
    target = Path(tempfile.gettempdir()) / "msready-bench" / f"{package}-src"
    if target.is_dir() and any(target.rglob("*.py")):
        return target
    download = WORK / "wheels"
    download.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "-q", "-d", str(download), package], check=True)
    wheels = sorted(download.glob(f"{package.replace('-', '_')}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip found no wheel for {package}")
    with zipfile.ZipFile(wheels[-1]) as archive:
        for name in archive.namelist():
            if name.endswith(".py"):
                archive.extract(name, target)
    return target


def parse_files(paths: list[str]) -> None:
    """The bare-parse peer: parse every file with libcst, nothing else."""
    import libcst

    for path in paths:
        libcst.parse_module(Path(path).read_bytes())


def _parse_pool(paths: list[str], jobs: int) -> None:
    from concurrent.futures import ProcessPoolExecutor

    chunks = [paths[i::jobs * 8] for i in range(jobs * 8)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(parse_files, chunks))


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Wall-clock seconds of one command in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # fixit exits 1 when it reports something
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {' | '.join(tail)}")
    return elapsed


def fixit_python() -> Path | None:
    """A private virtual environment with Fixit, created on first use."""
    env_dir = WORK / "fixit-venv"
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(env_dir)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "fixit"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print("fixit could not be installed; its row is skipped", file=sys.stderr)
            shutil.rmtree(env_dir, ignore_errors=True)
            return None
    return python


def main() -> int:
    """Run the benchmark and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="timm")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-fixit", action="store_true")
    parser.add_argument("--parse-only", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--parse-pool", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parse_only is not None:
        parse_files(args.parse_only)
        return 0
    if args.parse_pool is not None:
        _parse_pool(args.parse_pool, args.jobs)
        return 0

    corpus = fetch_corpus(args.package)
    files = sorted(str(p) for p in corpus.rglob("*.py"))
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    print(f"corpus: {args.package} wheel, {len(files)} files, {lines} lines; "
          f"{args.jobs} jobs on {os.cpu_count()} cores; {args.repeat} runs each")

    me = [sys.executable, str(Path(__file__).resolve())]
    cache = Path(tempfile.mkdtemp(prefix="msready-bench-cache-"))
    out = Path(tempfile.mkdtemp(prefix="msready-bench-out-"))
    env = dict(os.environ, MSREADY_CACHE_DIR=str(cache))
    scan = [sys.executable, "-m", "msready", "scan", str(corpus), "-o", str(out), "--format",
            "json", "--skeletons", "off", "--jobs", str(args.jobs), "-q"]
    fixit = None if args.no_fixit else fixit_python()

    rows: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        rows.setdefault("libcst parse", []).append(timed([*me, "--parse-only", *files]))
        rows.setdefault(f"libcst parse x{args.jobs}", []).append(
            timed([*me, "--jobs", str(args.jobs), "--parse-pool", *files]))
        if fixit is not None:
            rows.setdefault("fixit lint", []).append(
                timed([str(fixit), "-m", "fixit", "lint", str(corpus)]))
        shutil.rmtree(cache, ignore_errors=True)
        rows.setdefault("msready cold", []).append(timed(scan, env))
        rows.setdefault("msready warm", []).append(timed(scan, env))
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)

    base = statistics.median(rows["libcst parse"])
    base_pool = statistics.median(rows[f"libcst parse x{args.jobs}"])
    cold = statistics.median(rows["msready cold"])
    print(f"{'run':<18}{'median s':>10}{'x parse':>10}{'x parse pool':>14}   runs")
    for name, values in rows.items():
        median = statistics.median(values)
        runs = " ".join(f"{v:.2f}" for v in values)
        ratios = f"{median / base:>10.2f}{median / base_pool:>14.2f}"
        print(f"{name:<18}{median:>10.2f}{ratios}   {runs}")
    warm = statistics.median(rows["msready warm"])
    print(f"cold scan / bare parse: {cold / base:.2f} (one process) and {cold / base_pool:.2f} "
          f"({args.jobs} processes); cold / warm: {cold / warm:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
