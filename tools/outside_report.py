"""Measure the starter Cells on real PyTorch libraries that are not in ../shared/corpus.

Issue 11 asks that Cells run on the corpus *and* on real repositories kept outside this
repository. This tool fetches the published sources of a fixed list of PyTorch model
libraries from the package registry (``pip download --no-deps``, pinned versions, nothing
of them is copied into msready), scans each with Cells on, and prints per library the
Cells, how many ran in PyNative and in GRAPH_MODE, and the first line of each failure.

    python tools/outside_report.py [--work /tmp/msready-outside] [--only yolov5 lpips]
        [--json results.json] [--libraries first|second|all]

A measuring tool for developers, not a test: a scan with Cells of the larger libraries
takes minutes (vit-pytorch, 85 files and 400 Cells, most of an hour on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

# (distribution, version, the top-level package holding the modules)
LIBRARIES = [
    ("efficientnet_pytorch", "0.7.1", "efficientnet_pytorch"),
    ("lpips", "0.1.4", "lpips"),
    ("perceiver-pytorch", "0.11.0", "perceiver_pytorch"),
    ("facenet-pytorch", "2.6.0", "facenet_pytorch"),
    ("pytorch-tabnet", "4.1.0", "pytorch_tabnet"),
    ("yolov5", "7.0.14", "yolov5"),
    ("vit-pytorch", "1.26.11", "vit_pytorch"),
]
# A second set, first measured after the Cell mechanisms had been built against the first:
# how they carry over to libraries they were not made on.
SECOND = [
    ("pretrainedmodels", "0.7.4", "pretrainedmodels"),
    ("segmentation-models-pytorch", "0.6.0", "segmentation_models_pytorch"),
    ("x-transformers", "2.31.10", "x_transformers"),
    ("pytorch-metric-learning", "2.9.0", "pytorch_metric_learning"),
    ("torchvision", "0.25.0", "torchvision"),
    ("torchaudio", "2.10.0", "torchaudio"),
]


def fetch(work: Path, dist: str, version: str, package: str) -> Path | None:
    """The library's package folder, downloaded and unpacked under ``work`` once; None
    (with a note) when the registry does not give it."""
    target = work / "src" / package
    if (target / package).is_dir():
        return target
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                           str(downloads), f"{dist}=={version}"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"{dist} {version}: pip could not download it "
              f"({(proc.stderr.strip().splitlines() or ['?'])[-1]})", file=sys.stderr)
        return None
    stem = dist.replace("-", "_").lower()
    found = [p for p in downloads.iterdir()
             if p.name.lower().replace("-", "_").startswith(f"{stem}_{version}")]
    if not found:
        print(f"{dist} {version}: no archive after download", file=sys.stderr)
        return None
    archive = found[0]
    target.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(target, [n for n in wheel.namelist()
                                      if n.startswith(f"{package}/")])
    else:
        with tarfile.open(archive) as sdist:
            members = [m for m in sdist.getmembers()
                       if f"/{package}/" in f"/{m.name}" and m.isfile()]
            for member in members:
                member.name = member.name[member.name.index(f"{package}/"):]
            sdist.extractall(target, members, filter="data")
    return target


def scan(source: Path, out: Path) -> dict[str, object] | None:
    """msready's JSON report of a scan with Cells, or None when the scan failed."""
    proc = subprocess.run([sys.executable, "-m", "msready", "scan", str(source), "--format",
                           "json", "-q", "-o", str(out)], capture_output=True, text=True,
                          check=False)
    report = out / "msready.json"
    if proc.returncode not in (0, 1) or not report.is_file():
        print(f"{source.name}: msready failed ({proc.returncode}): "
              f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
        return None
    data: dict[str, object] = json.loads(report.read_text())
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/msready-outside"))
    parser.add_argument("--only", nargs="*", help="package names to measure (default: all)")
    parser.add_argument("--json", type=Path, help="write the per-library figures here")
    parser.add_argument("--libraries", choices=("first", "second", "all"), default="first",
                        help="the first set (the default), the second, or both")
    args = parser.parse_args()
    chosen = {"first": LIBRARIES, "second": SECOND, "all": LIBRARIES + SECOND}[args.libraries]
    totals: Counter[str] = Counter()
    figures: dict[str, dict[str, int]] = {}
    for dist, version, package in chosen:
        if args.only and package not in args.only and dist not in args.only:
            continue
        source = fetch(args.work, dist, version, package)
        if source is None:
            continue
        report = scan(source, args.work / "out" / package)
        if report is None:
            continue
        cells = report.get("skeletons") or []
        assert isinstance(cells, list)
        row = {"cells": len(cells),
               "pynative": sum(1 for c in cells if c.get("pynative") == "pass"),
               "graph": sum(1 for c in cells if c.get("graph") == "pass"),
               "blocked": sum(1 for c in cells if c.get("status") == "blocked"),
               "unverified": sum(1 for c in cells if c.get("status") == "unverified")}
        figures[package] = row
        totals.update(row)
        print(f"== {dist} {version}: {row['cells']} Cells, PyNative {row['pynative']}, "
              f"GRAPH_MODE {row['graph']}, blocked {row['blocked']}, "
              f"unverified {row['unverified']}")
        for cell in cells:
            if cell.get("pynative") != "pass":
                error = str(cell.get("error") or "").replace("\n", " ")[:160]
                print(f"   {cell.get('status'):10} {cell.get('torch_class')}: {error}")
    if totals["cells"]:
        print(f"all: {totals['cells']} Cells, PyNative {totals['pynative']} "
              f"({100 * totals['pynative'] / totals['cells']:.0f} %), GRAPH_MODE "
              f"{totals['graph']} ({100 * totals['graph'] / totals['cells']:.0f} %)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
