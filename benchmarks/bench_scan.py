"""Time a full msready scan of a large real PyTorch code base against peers.

The code base is the Python source inside a wheel fetched from the package registry with
pip (``timm`` by default; ``--package transformers`` for a much larger one). In the same
run, on the same files and cores, it times:

* ``libcst parse``: a bare ``libcst.parse_module`` of every file, one process;
* ``libcst parse xN``: the same spread over N worker processes (N = ``--jobs``);
* ``fixit lint``: Fixit's linter with its default rules (installed into a private
  virtual environment under ``benchmarks/.work`` on first use; skipped with a note when
  it cannot be installed);
* ``paconvert``: PaConvert (torch -> Paddle, ``--no_format``), the fastest real converter,
  installed like Fixit into a private virtual environment (skipped with a note when it
  cannot be installed or run);
* ``msready cold``: ``msready scan --format json --skeletons off`` with an empty cache;
* ``msready warm``: the same with the cache the cold run filled;
* ``msready 1M cold``: a cold scan of a tree of about a million lines (``--million``
  lines: the corpus copied several times over), run once.

msready is timed with its modules' bytecode written first, as an install writes it.
Each is timed ``--repeat`` times (each in a fresh process); the medians and the ratios to
the bare parse are printed. Memory is measured in one more run of each command, not in the
timed ones: the peak of the whole process tree (the command and all its children, sampled
every 50 ms), as the sum of their resident sets, which counts pages shared by forked
processes once per process, and as the sum of their proportional set sizes (PSS), which
splits shared pages between their sharers. Sampling reads /proc for every process 20
times a second on one of the cores the commands share, which slowed a command using every
core (the scan, the parse pool) by several percent and a one-process peer hardly at all.
This is a measuring tool, not a test: shared machines are noisy, so only ratios within
one invocation mean anything.

    python benchmarks/bench_scan.py [--package timm] [--repeat 3] [--jobs 2]
        [--no-fixit] [--no-paconvert] [--million 1000000 | --million 0]
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import venv
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
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


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process /proc shows."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: split after it.
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def tree_memory(pid: int) -> tuple[int, int]:
    """Bytes resident in ``pid`` and all its descendants: the sum of their resident sets
    (pages shared between processes counted in each) and of their proportional set sizes
    (shared pages split between the processes sharing them); (0, 0) when it is gone."""
    tree = _children()
    rss = pss = 0
    todo = [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/statm", "rb") as handle:
                rss += int(handle.read().split()[1]) * page
            with open(f"/proc/{current}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
                        break
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(tree.get(current, ()))
    return rss, pss


def process_memory(pid: int) -> int:
    """Bytes resident in one process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


@dataclass
class Run:
    """One command's wall-clock seconds and its process tree's peak resident memory."""

    seconds: float
    peak: int = 0  # the largest sum of resident sets
    peak_pss: int = 0  # the largest sum of proportional set sizes
    peak_main: int = 0  # the command's own process's largest resident set
    cpu: float = 0.0  # user + system seconds of the command and the children it waited for


def timed(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1),
          cwd: Path | None = None, sample: bool = False) -> Run:
    """Run one command in a fresh process: wall-clock seconds, CPU seconds, and with
    ``sample`` the peak memory of its tree (the timing is then disturbed a little)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        peak = peak_pss = peak_main = 0
        done = threading.Event()

        def sample_memory() -> None:
            nonlocal peak, peak_pss, peak_main
            while not done.is_set():
                rss, pss = tree_memory(proc.pid)
                peak, peak_pss = max(peak, rss), max(peak_pss, pss)
                peak_main = max(peak_main, process_memory(proc.pid))
                done.wait(0.05)

        sampler = threading.Thread(target=sample_memory, daemon=True) if sample else None
        if sampler is not None:
            sampler.start()
        # wait4, not wait: the rusage it returns counts the command's CPU time and that of
        # every descendant that was waited for (worker pools, the fork server's workers).
        _, status, usage = os.wait4(proc.pid, 0)
        code = proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        done.set()
        if sampler is not None:
            sampler.join()
        if code not in ok:  # fixit exits 1 when it reports something
            out.seek(0)
            tail = out.read().decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{cmd[0]} failed ({code}): {' | '.join(tail)}")
    return Run(elapsed, peak, peak_pss, peak_main, usage.ru_utime + usage.ru_stime)


def private_python(name: str, requirement: str) -> Path | None:
    """A private virtual environment under benchmarks/.work with one package, created on
    first use; None (with a note) when it cannot be installed."""
    env_dir = WORK / f"{name}-venv"
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(env_dir)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", requirement],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
            print(f"{name} could not be installed ({' '.join(tail)}); its row is skipped",
                  file=sys.stderr)
            shutil.rmtree(env_dir, ignore_errors=True)
            return None
    return python


def fixit_python() -> Path | None:
    """A private virtual environment with Fixit."""
    return private_python("fixit", "fixit")


def paconvert_command(corpus: Path, out: Path) -> list[str] | None:
    """PaConvert converting the corpus without formatting its output, or None (with a
    note) when it cannot be installed or does not run here."""
    python = private_python("paconvert", "paconvert")
    if python is None:
        return None
    cmd = [str(python), "-m", "paconvert.main", "--in_dir", str(corpus), "--out_dir", str(out),
           "--no_format"]
    probe = subprocess.run([*cmd[:3], "--help"], capture_output=True, text=True, check=False)
    if probe.returncode != 0 or "--no_format" not in probe.stdout:
        tail = (probe.stderr or probe.stdout).strip().splitlines()[-1:]
        print(f"paconvert does not run here ({' '.join(tail)}); its row is skipped",
              file=sys.stderr)
        return None
    return cmd


def compile_msready() -> Path:
    """Write the bytecode of msready's modules, as ``pip install .`` does when it installs
    a package (the README's install). An editable install has none until a first run
    writes it, and none at all where PYTHONDONTWRITEBYTECODE is set: every scan would
    then compile msready's sources in the main process and in the workers' server, a
    cost no installed copy pays (the peers' packages are installed with their bytecode)."""
    spec = importlib.util.find_spec("msready")
    if spec is None or spec.origin is None:
        raise SystemExit("msready is not installed in this Python")
    package = Path(spec.origin).parent
    for entry in package.iterdir():  # an editable install's folder also holds .venv
        if entry.suffix == ".py":
            compileall.compile_file(entry, quiet=1)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name != "tests":
            compileall.compile_dir(entry, quiet=1)
    return package


def million_tree(corpus: Path, lines: int, per_copy: int) -> tuple[Path, int]:
    """A tree of at least ``lines`` lines: the corpus copied as many times as needed,
    each copy its own top-level package. Returns the folder and the number of copies."""
    copies = max(1, -(-lines // max(per_copy, 1)))
    target = corpus.parent / f"{corpus.name}-x{copies}"
    if not (target / f"copy{copies - 1}").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        for i in range(copies):
            shutil.copytree(corpus, target / f"copy{i}")
    return target, copies


def main() -> int:
    """Run the benchmark and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="timm")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-fixit", action="store_true")
    parser.add_argument("--no-paconvert", action="store_true")
    parser.add_argument("--million", type=int, default=1_000_000, metavar="LINES",
                        help="lines of the large tree scanned once (0: skip it)")
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

    print(f"msready's bytecode written under {compile_msready()}, as an install does")
    me = [sys.executable, str(Path(__file__).resolve())]
    cache = Path(tempfile.mkdtemp(prefix="msready-bench-cache-"))
    out = Path(tempfile.mkdtemp(prefix="msready-bench-out-"))
    env = dict(os.environ, MSREADY_CACHE_DIR=str(cache))

    def scan(source: Path) -> list[str]:
        return [sys.executable, "-m", "msready", "scan", str(source), "-o", str(out),
                "--format", "json", "--skeletons", "off", "--jobs", str(args.jobs), "-q"]

    fixit = None if args.no_fixit else fixit_python()
    paconvert = None if args.no_paconvert else paconvert_command(corpus, out / "paddle")

    # (name, command, environment, working folder, what to do first) in the order a
    # round runs them; the warm scan reuses the cache the cold one before it filled.
    commands: list[tuple[str, list[str], dict[str, str] | None, Path | None,
                         Callable[[], object] | None]] = [
        ("libcst parse", [*me, "--parse-only", *files], None, None, None),
        (f"libcst parse x{args.jobs}", [*me, "--jobs", str(args.jobs), "--parse-pool", *files],
         None, None, None)]
    if fixit is not None:
        commands.append(("fixit lint", [str(fixit), "-m", "fixit", "lint", str(corpus)], None,
                         None, None))
    if paconvert is not None:
        commands.append(("paconvert", paconvert, None, out,
                         lambda: shutil.rmtree(out / "paddle", ignore_errors=True)))
    commands.append(("msready cold", scan(corpus), env, None,
                     lambda: shutil.rmtree(cache, ignore_errors=True)))
    commands.append(("msready warm", scan(corpus), env, None, None))

    rows: dict[str, list[Run]] = {}
    memory: dict[str, Run] = {}
    for round_ in range(args.repeat + 1):
        for name, cmd, cmd_env, cwd, prepare in commands:
            if prepare is not None:
                prepare()
            if round_ < args.repeat:
                rows.setdefault(name, []).append(timed(cmd, cmd_env, cwd=cwd))
            else:  # the extra round measures memory
                memory[name] = timed(cmd, cmd_env, cwd=cwd, sample=True)
    big_lines = 0
    if args.million > 0:
        big, copies = million_tree(corpus, args.million, lines)
        big_lines = lines * copies
        shutil.rmtree(cache, ignore_errors=True)
        rows["msready 1M cold"] = [timed(scan(big), env, sample=True)]
        memory["msready 1M cold"] = rows["msready 1M cold"][0]
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)

    def median(name: str) -> float:
        return statistics.median(r.seconds for r in rows[name])

    def median_cpu(name: str) -> float:
        return statistics.median(r.cpu for r in rows[name])

    base = median("libcst parse")
    base_pool = median(f"libcst parse x{args.jobs}")
    cold = median("msready cold")
    warm = median("msready warm")
    mib = 2 ** 20
    print("(times from runs without memory sampling; RSS and PSS from one more run of each, "
          "sampled)")
    print(f"{'run':<18}{'median s':>10}{'x parse':>10}{'x parse pool':>14}{'CPU s':>8}"
          f"{'RSS MiB':>10}{'PSS MiB':>10}   runs")
    for name, values in rows.items():
        mid = median(name)
        runs = " ".join(f"{v.seconds:.2f}" for v in values)
        ratios = f"{mid / base:>10.2f}{mid / base_pool:>14.2f}"
        peak = memory[name].peak / mib
        pss = memory[name].peak_pss / mib
        print(f"{name:<18}{mid:>10.2f}{ratios}{median_cpu(name):>8.2f}{peak:>10.0f}{pss:>10.0f}"
              f"   {runs}")
    print(f"cold scan / bare parse: {cold / base:.2f} (one process) and {cold / base_pool:.2f} "
          f"({args.jobs} processes; target <= 2); warm is {cold / warm:.1f}x faster than cold "
          "(target >= 10)")
    if "paconvert" in rows:
        print(f"cold scan / paconvert --no_format: {cold / median('paconvert'):.2f} "
              "(target <= 1)")
    # The commands of one round run one after the other, so a round's ratio is the least
    # touched by a machine whose speed drifts between rounds: their median, with the range.
    peers = [f"libcst parse x{args.jobs}", "paconvert"]
    paired = [(peer, [c.seconds / p.seconds for c, p in zip(rows["msready cold"], rows[peer],
                                                             strict=True)])
              for peer in peers if peer in rows]
    print("cold scan / peer, round by round (median, min-max): " + "; ".join(
        f"{peer} {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})" for peer, r in paired))
    # On a shared machine other processes stretch wall-clock time (the more processes a
    # run has, the more so); CPU time, the work done, much less.
    cpu_line = (f"CPU time (user + system, whole process tree): cold scan / bare parse "
                f"{median_cpu('msready cold') / median_cpu('libcst parse'):.2f}")
    if "paconvert" in rows:
        cpu_line += (f", cold scan / paconvert "
                     f"{median_cpu('msready cold') / median_cpu('paconvert'):.2f}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{cpu_line}; load average at the end {load} on {os.cpu_count()} cores")
    if "msready 1M cold" in rows:
        big_run = rows["msready 1M cold"][0]
        print(f"{big_lines} lines cold: {big_run.seconds:.1f} s (memory sampled), peak memory "
              f"of the whole process tree {big_run.peak / mib:.0f} MiB as the sum of resident "
              f"sets, {big_run.peak_pss / mib:.0f} MiB proportional (target < 1024); "
              f"the main process alone {big_run.peak_main / mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
