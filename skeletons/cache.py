"""Cell outcomes cached by what decides them: the text of every generated file the run
can import, the job (constructor arguments, inputs), msready's own code and the installed
MindSpore. A warm re-scan of an unchanged repository runs no Cell again."""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from msready.analyzer.scan import code_fingerprint, default_cache_dir


def _mindspore_version() -> str:
    try:
        return metadata.version("mindspore")
    except metadata.PackageNotFoundError:
        return "none"


def _runner_fingerprint() -> str:
    """A hash of the code that runs Cells (the child process and what it imports)."""
    digest = hashlib.sha256()
    folder = resources.files("msready.skeletons")
    for name in ("child.py", "weights.py", "values.py", "runner.py"):
        digest.update(folder.joinpath(name).read_bytes())
    return digest.hexdigest()[:16]


class CellCache:
    """Outcomes of Cell runs on disk, one small JSON file per key."""

    def __init__(self, tree: dict[str, str], folder: Path | None = None,
                 enabled: bool = True) -> None:
        self.enabled = enabled
        self.folder = (folder or default_cache_dir()) / "cells"
        digest = hashlib.sha256(
            f"{code_fingerprint()}|{_runner_fingerprint()}|{_mindspore_version()}".encode())
        for path in sorted(tree):  # the generated files, by their path in the output
            digest.update(f"\0{path}\0{tree[path]}".encode())
        self.tree = digest.hexdigest()

    def key(self, job: dict[str, Any]) -> str:
        """The key of one Cell run."""
        text = json.dumps(job, sort_keys=True, default=str)
        return hashlib.sha256(f"{self.tree}|{text}".encode()).hexdigest()

    def get(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """The cached outcome of ``job``, None when it has not run with this code."""
        if not self.enabled:
            return None
        path = self.folder / f"{self.key(job)}.json"
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, job: dict[str, Any], outcome: dict[str, Any]) -> None:
        """Store an outcome, a time-out or a crash too (a big network compiles as slowly
        next time; ``--no-cache`` runs it again), but not a child that could not start."""
        error = str(outcome.get("error") or "")
        if not self.enabled or "cannot start" in error:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            target = self.folder / f"{self.key(job)}.json"
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(outcome), encoding="utf-8")
            tmp.replace(target)
        except OSError:  # a read-only cache costs speed, never the result
            return
