"""Time a scan with starter Cells against the same scan without them.

On one repository folder (``SOURCE``; by default the Python files of the ``timm`` wheel,
fetched as ``bench_scan.py`` does), in the same run, it times:

* ``off``: ``msready scan --format json --skeletons off`` with a warm file cache;
* ``cells cold``: ``--skeletons run`` with an empty Cell cache (every Cell generated and
  run on MindSpore, in a few workers that import MindSpore once each);
* ``cells warm``: the same again, nothing changed: the last generation's Cells, results
  and warnings are written back from the cache;
* ``cells, file added``: the same after a new file (one small function) is added: the
  scan's key changes, so the whole generation is not written back; each file's
  translation and the plans are reused when what they read of the repository gets the
  same answers (:mod:`msready.skeletons.translation_cache`,
  :mod:`msready.skeletons.plan_cache`), and every outcome is read from the Cell cache by
  the hash of its generated source and inputs. Its peer is ``off, file added``: a scan
  without Cells after a new file, which analyses that file and builds the repository
  model again.

The repository is copied to a temporary folder first (the last row writes into it).

Each is run ``--repeat`` times in fresh processes; medians and the ratios to ``off`` are
printed with the Cell counts. A measuring tool, not a test: only ratios within one
invocation mean anything on a shared machine.

    python benchmarks/bench_skeletons.py [SOURCE] [--repeat 3] [--package timm]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scan import fetch_corpus


def _msready() -> str:
    local = Path(sys.executable).with_name("msready")
    return str(local) if local.exists() else shutil.which("msready") or "msready"


def scan(source: Path, skeletons: str, cache: Path) -> tuple[float, dict[str, int]]:
    """One scan in a fresh process: wall seconds and the Cell statuses."""
    out = Path(tempfile.mkdtemp(prefix="msready-bench-cells-"))
    env = dict(os.environ, MSREADY_CACHE_DIR=str(cache))
    start = time.perf_counter()
    subprocess.run([_msready(), "scan", str(source), "--format", "json", "-o", str(out),
                    "--skeletons", skeletons, "--quiet"], env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    counts: dict[str, int] = {}
    result = out / "msready.json"
    if result.exists():
        for cell in json.loads(result.read_text()).get("skeletons", []):
            key = f"py {cell.get('pynative')}"
            counts[key] = counts.get(key, 0) + 1
    shutil.rmtree(out, ignore_errors=True)
    return wall, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", help="a repository folder")
    parser.add_argument("--package", default="timm")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = Path(args.source) if args.source else fetch_corpus(args.package)
    if not source.is_dir():
        parser.error(f"{source}: no such folder")
    lines = sum(len(p.read_text(errors="replace").splitlines()) for p in source.rglob("*.py"))
    print(f"{source} ({lines} lines of Python)")
    work = Path(tempfile.mkdtemp(prefix="msready-bench-cache-"))
    copy = work / "source"
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    scan(copy, "off", work)  # fill the file cache: every row below reads it
    rows: dict[str, list[float]] = {"off": [], "cells cold": [], "cells warm": [],
                                    "off, file added": [], "cells, file added": []}
    counts: dict[str, int] = {}
    for round_ in range(args.repeat):
        rows["off"].append(scan(copy, "off", work)[0])
        # Cell outcomes, whole generations, translations and plans
        for cached in ("cells", "generated", "translated", "plans"):
            shutil.rmtree(work / cached, ignore_errors=True)
        wall, counts = scan(copy, "run", work)
        rows["cells cold"].append(wall)
        rows["cells warm"].append(scan(copy, "run", work)[0])
        for kind, skeletons in (("off", "off"), ("cells", "run")):
            added = copy / f"msready_bench_added_{round_}_{kind}.py"
            added.write_text("def added():\n    return 1\n", encoding="utf-8")
            rows[f"{kind}, file added"].append(scan(copy, skeletons, work)[0])
    base = statistics.median(rows["off"])
    for name, times in rows.items():
        median = statistics.median(times)
        print(f"{name:17} median {median:7.1f} s   x{median / base:6.2f} of off")
    ratios = [c / o for c, o in zip(rows["cells, file added"],
                                         rows["off, file added"], strict=True)]
    print(f"cells, file added / off, file added: x{statistics.median(ratios):.2f} "
          "(median of the rounds' ratios)")
    print("Cells:", ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
