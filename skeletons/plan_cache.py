"""The plans of a repository's Cells kept between scans, with what planning read.

After a change to the scanned code, the whole generation cache
(:mod:`msready.skeletons.generation_cache`) misses and every class is planned again
(constructor arguments from the instantiation sites, inputs from the layers): after the
translations (:mod:`msready.skeletons.translation_cache`), the largest part of a re-scan.
Planning reads the repository model through a :class:`~msready.skeletons.recorded.Recorder`;
the plans are kept with those reads, and a later scan takes them when every read gets the
same answer from its model (the same text of each file re-parsed, the same resolutions,
the same tables built from every file). Adding a file that defines and builds no class
and declares no command-line option leaves every answer as it was; a change to anything
some plan read plans every class again (the plans are kept as one set).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msready.analyzer.facts import FileResult
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import Cache, default_cache_dir
from msready.skeletons.cache import installed_version
from msready.skeletons.constructors import ConstructorFinder
from msready.skeletons.generation_cache import generator_fingerprint
from msready.skeletons.recorded import Key, Recorder
from msready.skeletons.shapes import Plan


@dataclass(frozen=True, slots=True)
class KeptPlans:
    """The plans of one planning (pickled as they were made) and what it read."""

    plans: bytes
    reads: dict[Key, str]


class PlanCache:
    """Plans in the scan's cache folder (under ``plans``); ``enabled=False``
    (``--no-cache``) keeps none and reads none."""

    def __init__(self, result: ScanResult, folder: Path | None = None,
                 enabled: bool = True) -> None:
        self.result = result
        self.store = Cache((folder or default_cache_dir()) / "plans")
        self.store.enabled = self.store.enabled and enabled and result.cache_key is not None
        # what planning does not read through the model: which classes it plans, the
        # target, the YAML / JSON values the code loads, msready and MindSpore
        self.key = hashlib.sha256("\0".join([
            "plans", generator_fingerprint(), installed_version("mindspore"), result.target,
            repr(result.config_files), *sorted(result.model.module_classes)]).encode()
        ).hexdigest()
        self.reused = False
        self._finder: ConstructorFinder | None = None  # answers the whole-table reads

    def plans(self, plan: Callable[[Recorder | None], dict[str, Plan]]) -> dict[str, Plan]:
        """The kept plans when every read gets the same answer, else ``plan``'s (given the
        recorder to read through), kept for the next scan."""
        if not self.store.enabled:
            return plan(None)
        kept = self.store.get_any(self.key)
        if isinstance(kept, KeptPlans) and Recorder(self._file_text).same_answers(
                self.result.model, self._answer, kept.reads):
            plans = pickle.loads(kept.plans)
            if isinstance(plans, dict):
                self.reused = True
                return plans
        recorder = Recorder(self._file_text)
        made = plan(recorder)
        if recorder.broken is None:
            try:
                value = KeptPlans(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL),
                                  dict(recorder.reads))
                self.store.put_any(self.key, value)
            except (pickle.PicklingError, TypeError, AttributeError):
                pass  # a plan or a read that cannot be kept: planned again next time
        return made

    def _file_text(self, value: object) -> str | None:
        """A file's facts, named by its path and the digest of its text: the scan decides
        them from those alone (msready's own code keys the cache folder)."""
        if not isinstance(value, FileResult):
            return None
        text = self.result.sources.get((value.path, None))
        if text is None:
            return None
        return f"file {value.path} {hashlib.sha256(text.encode()).hexdigest()}"

    def _answer(self, kind: str, path: tuple[str, ...], args: tuple[Any, ...]) -> object:
        """What this scan answers to the reads planning makes besides the model's."""
        if kind == "source":
            return self.result.sources.get((path[0], None))
        if kind == "whole_table":
            if self._finder is None:
                self._finder = ConstructorFinder(self.result)
            return getattr(self._finder, f"whole_{path[0]}")()
        raise KeyError(kind)
