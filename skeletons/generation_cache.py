"""Everything a generation of Cells wrote and reported, cached for a re-scan of unchanged
code.

Generating the Cells of a repository takes seconds even when every Cell's outcome is in
the Cell cache (:mod:`msready.skeletons.cache`): the facts of every file are loaded, the
repository model is rebuilt, every constructor is planned and every file is translated
again. When the scan itself was unchanged (the same files, target and ``[tool.msready]``
table: the key of its cached whole result), the same msready (its generator's code
included), the same MindSpore (and
torch, when comparing) and the same YAML / JSON values the code loads, that work would
produce the same files and the same results. This cache keeps them: the files written
under the output folder, the Cell and training-step results and the warnings the
generation added, written back as they were.

A generation in which some child process could not start, or was stopped from outside,
is not kept: those outcomes say nothing about the Cells (the Cell cache keeps none of
them either).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from msready.analyzer.result import ScanResult, SkeletonResult, TrainStepResult
from msready.analyzer.scan import Cache, default_cache_dir, files_fingerprint
from msready.skeletons.cache import installed_version, lasting

# A file's state before a generation: (modification time in ns, size).
Stamps = dict[Path, tuple[int, int]]


@lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """A hash of the code and templates that generate Cells: the scan's own cache key
    covers only the analyzer and the rules."""
    package = resources.files("msready.skeletons")
    return files_fingerprint([package, package.joinpath("templates")], (".py", ".j2"))


@dataclass(frozen=True, slots=True)
class GeneratedSet:
    """What one generation wrote (paths under the output folder) and reported."""

    files: dict[str, bytes]
    skeletons: list[SkeletonResult]
    train_steps: list[TrainStepResult]
    warnings: list[str]

    def lasts(self) -> bool:
        """Whether every outcome in it says something about the code (see the module
        docstring)."""
        errors = [r.error for r in self.skeletons] + [r.error for r in self.train_steps]
        return all(lasting(error or "") for error in errors)

    def restore(self, out_dir: Path, result: ScanResult) -> list[SkeletonResult]:
        """Write the files back under ``out_dir``, put the training steps and warnings
        into ``result`` and return the Cell results."""
        for rel, data in self.files.items():
            if rel.startswith("/") or ".." in rel.split("/"):
                continue  # only ever a path below the output folder
            path = out_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        result.train_steps = list(self.train_steps)
        result.warnings.extend(self.warnings)
        return list(self.skeletons)


def stamps(out_dir: Path) -> Stamps:
    """The state of every file under ``out_dir`` (none when it does not exist)."""
    found: Stamps = {}
    if not out_dir.is_dir():
        return found
    for folder, _, names in os.walk(out_dir):
        for name in names:
            path = Path(folder) / name
            try:
                st = path.stat()
            except OSError:
                continue
            found[path] = (st.st_mtime_ns, st.st_size)
    return found


def written_since(out_dir: Path, before: Stamps) -> dict[str, bytes]:
    """The files under ``out_dir`` written since ``before`` was taken, with the package
    markers (``__init__.py``) of their folders, which a generation leaves as they are
    when they exist already; by path under ``out_dir``."""
    after = stamps(out_dir)
    paths: set[Path] = set()
    for path, stamp in after.items():
        if before.get(path) == stamp:
            continue
        paths.add(path)
        for folder in path.parents:
            if folder / "__init__.py" in after:
                paths.add(folder / "__init__.py")
            if folder == out_dir or out_dir not in folder.parents:
                break
    files: dict[str, bytes] = {}
    for path in sorted(paths):
        try:
            files[path.relative_to(out_dir).as_posix()] = path.read_bytes()
        except OSError:
            continue
    return files


class GenerationCache:
    """Cached generations, keyed by everything that decides one (see the module
    docstring), in the scan's cache (under ``generated``, per version of msready's code);
    disabled when the scan's whole result has no key (``--no-cache``, a file that could
    not be read)."""

    def __init__(self, result: ScanResult, run: bool, compare_torch: bool,
                 folder: Path | None = None, enabled: bool = True) -> None:
        self.folder = (folder or default_cache_dir()) / "generated"
        self.key: str | None = None
        if not enabled or result.cache_key is None:
            return
        digest = hashlib.sha256("\0".join([
            "cells", result.cache_key, generator_fingerprint(), installed_version("mindspore"),
            installed_version("torch") if compare_torch else "", f"run={run}",
            f"compare={compare_torch}", repr(result.config_files)]).encode())
        self.key = digest.hexdigest()

    def get(self) -> GeneratedSet | None:
        """The cached generation, or None."""
        if self.key is None:
            return None
        value = Cache(self.folder).get_any(self.key)
        return value if isinstance(value, GeneratedSet) else None

    def put(self, value: GeneratedSet) -> None:
        """Keep a generation whose outcomes last; a full or read-only disk only costs
        speed."""
        if self.key is not None and value.lasts():
            Cache(self.folder).put_any(self.key, value)
