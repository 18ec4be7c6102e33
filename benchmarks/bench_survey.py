"""Time ``msready survey`` on a folder of repositories against ``msready scan`` run on each
repository one after another.

    python benchmarks/bench_survey.py                 # ../shared/corpus beside the project
    python benchmarks/bench_survey.py path/to/repos   # a folder whose subfolders are repos

Three ways, all cold (``--no-cache``), skeletons off, one scan process per repository:

- sequential: ``msready scan REPO --jobs 1`` for each repository, one after another;
- survey on a local Ray runtime with 1 CPU, then with 2 CPUs (Ray start-up timed apart).

It prints the wall times, the ratios to the sequential run, the measured cost per
repository and per 1,000 lines, and what 10,000 repositories would need on a cluster.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray

from msready.analyzer.survey import SurveyOptions, read_sources, survey

ROOT = Path(__file__).resolve().parent.parent


def sequential(repos: list[str], work: Path) -> tuple[float, dict[str, float]]:
    """``msready scan`` on each repository in turn: total and per-repository seconds."""
    each: dict[str, float] = {}
    start = time.perf_counter()
    for repo in repos:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "msready", "scan", repo, "-o",
                        str(work / "seq" / Path(repo).name), "--skeletons", "off",
                        "--no-cache", "--jobs", "1", "-q"], check=False,
                       stdout=subprocess.DEVNULL)
        each[Path(repo).name] = time.perf_counter() - t
    return time.perf_counter() - start, each


def on_ray(corpus: str, cpus: int, work: Path) -> tuple[float, float, int, float]:
    """A survey on a fresh local runtime: start-up seconds, survey seconds, lines, and the
    CPU seconds its tasks used."""
    t0 = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level=logging.ERROR)
    t1 = time.perf_counter()
    try:
        run = survey(corpus, work / f"ray{cpus}",
                     SurveyOptions(skeletons="off", jobs=1, cache=False, num_cpus=cpus))
    finally:
        t2 = time.perf_counter()
        ray.shutdown()
    cpu = 0.0
    for entry in (work / f"ray{cpus}" / "repos").glob("*/survey-entry.json"):
        cpu += json.loads(entry.read_text(encoding="utf-8")).get("cpu_seconds", 0.0)
    return t1 - t0, t2 - t1, int(run.data["totals"]["lines"]), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--cores", type=int, default=1000,
                        help="cluster cores for the 10,000-repository estimate")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    repos = [s.spec for s in read_sources(args.corpus)]
    print(f"{len(repos)} repositories in {args.corpus}; machine cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="msready-bench-survey-") as tmp:
        work = Path(tmp)
        seq, each = sequential(repos, work)
        print(f"sequential msready scan: {seq:8.1f} s")
        results = {}
        for cpus in (1, 2):
            startup, wall, lines, cpu = on_ray(args.corpus, cpus, work)
            results[cpus] = (startup, wall, cpu)
            print(f"survey, Ray {cpus} CPU:     {wall:8.1f} s  (+{startup:.1f} s Ray start-up)"
                  f"  sequential / survey = {seq / wall:.2f}, with start-up "
                  f"{seq / (wall + startup):.2f}; tasks used {cpu:.1f} CPU s")
    one, two = results[1][1], results[2][1]
    per_repo = results[1][2] / len(repos)  # CPU seconds: what a busy machine cannot inflate
    print(f"2 CPUs / 1 CPU speed-up: {one / two:.2f}; load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"lines: {lines}; cost per repository {per_repo:.1f} CPU s, "
          f"per 1,000 lines {results[1][2] / max(1, lines) * 1000:.2f} CPU s")
    estimate = per_repo * 10_000 / args.cores
    print(f"10,000 such repositories on {args.cores} cluster cores: about "
          f"{estimate / 60:.0f} min ({per_repo:.1f} CPU s x 10,000 / {args.cores}), "
          f"bounded below by the largest repository ({max(each.values()):.0f} s here)")
    print(json.dumps({"sequential": round(seq, 2),
                      "ray": {k: [round(v, 2) for v in r] for k, r in results.items()},
                      "per_repo": {k: round(v, 2) for k, v in each.items()}}))


if __name__ == "__main__":
    main()
