"""Translations of repository files kept between scans, with what each asked of the others.

When the scan changed (a file added or edited), the whole generation cache
(:mod:`msready.skeletons.generation_cache`) misses, and translating every file again is
most of the time a re-scan with Cells takes. Most of those translations would come out the
same: a file's translation is decided by its own path and text (which decide its facts),
the findings on it, the target, msready's generator and MindSpore, and the answers it got
to its questions about the rest of the repository
(:class:`msready.skeletons.model_reads.ModelReads`). The first ones make the key; the
questions and answers are stored with the translation, and a later scan reuses it only
when asking them of its own model gives every answer again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from msready.analyzer.facts import FileResult
from msready.analyzer.findings import Finding
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.scan import Cache, default_cache_dir
from msready.skeletons.cache import installed_version
from msready.skeletons.generation_cache import generator_fingerprint
from msready.skeletons.model_reads import Judge, ModelReads, Read
from msready.skeletons.recorded import Unrecordable, canonical


@dataclass(frozen=True, slots=True)
class KeptTranslation:
    """A file's translated code, the side libraries it dropped, and what it asked."""

    code: str
    dropped: list[str]
    reads: list[Read]


class TranslationCache:
    """Translations in the scan's cache folder (under ``translated``); ``enabled=False``
    (``--no-cache``) keeps none and reads none."""

    def __init__(self, model: RepositoryModel, judge: Judge, target: str,
                 folder: Path | None = None, enabled: bool = True) -> None:
        self.model = model
        self.judge = judge
        self.target = target
        self.store = Cache((folder or default_cache_dir()) / "translated")
        self.store.enabled = self.store.enabled and enabled
        self.hits = 0

    def key(self, source: str, file: FileResult, findings: list[Finding]) -> str:
        """What decides a translation besides its reads (see the module docstring)."""
        # the file's facts are decided by its path and text (msready's own code keys the
        # cache folder)
        digest = hashlib.sha256("\0".join([
            generator_fingerprint(), installed_version("mindspore"), self.target, file.path,
            source, canonical(sorted(findings, key=canonical))]).encode())
        return digest.hexdigest()

    def translate(self, source: str, file: FileResult, findings: list[Finding],
                  translate: Callable[[ModelReads], tuple[str, list[str]]]
                  ) -> tuple[str, list[str]]:
        """The kept translation of ``file`` when its questions get the same answers, or
        ``translate``'s (called with the reads to ask through), kept for the next scan."""
        try:
            key = self.key(source, file, findings) if self.store.enabled else None
        except Unrecordable:  # a finding without a stable text: translated every time
            key = None
        if key is None:
            return translate(ModelReads(self.model, self.judge))
        kept = self.store.get_any(key)
        if isinstance(kept, KeptTranslation) and \
                ModelReads(self.model, self.judge).same_answers(kept.reads):
            self.hits += 1
            return kept.code, list(kept.dropped)
        reads = ModelReads(self.model, self.judge)
        code, dropped = translate(reads)
        self.store.put_any(key, KeptTranslation(code, list(dropped), reads.reads))
        return code, dropped
