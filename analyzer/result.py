"""The one object a scan produces; every reporter renders it and computes nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from msready.analyzer.findings import Category, Finding, Severity, fingerprints

if TYPE_CHECKING:
    from msready.analyzer.configvalues import ConfigValue
    from msready.analyzer.facts import FileResult
    from msready.analyzer.repo import RepositoryModel


@dataclass(frozen=True, slots=True)
class ApiLocation:
    """Where a torch API is used."""

    path: str
    line: int
    column: int
    cell: int | None = None


@dataclass(slots=True)
class ApiUse:
    """One distinct torch API used by the repository, with the table's verdict."""

    symbol: str
    status: str  # consistent | differs | missing | unknown
    mindspore: str | None
    kind: str  # "function" (resolved through imports) or "tensor-method"
    locations: list[ApiLocation] = field(default_factory=list)
    notes: str = ""

    @property
    def count(self) -> int:
        """How many times the repository uses it."""
        return len(self.locations)


@dataclass(frozen=True, slots=True)
class ChecklistItem:
    """One entry of the migration guide's checklist, filled from the code."""

    item: str
    value: str
    path: str | None
    line: int | None
    section: str = ""
    cell: int | None = None


@dataclass(frozen=True, slots=True)
class SkeletonResult:
    """A generated MindSpore Cell and what happened when it ran."""

    torch_class: str
    path: str
    line: int
    cell_file: str
    pynative: str  # pass | fail | skipped
    graph: str  # pass | fail | skipped
    error: str | None = None
    max_abs_diff: float | None = None
    # pass (ran) | fail (the translation is wrong) | unverified (no input it accepts was
    # found) | blocked (needs a package msready cannot provide) | skipped (not run)
    status: str = ""
    synthesized: str = ""  # constructor arguments msready made up: ``dim=16, heads=2``
    input_shape: str = ""  # the input the Cell ran with: ``(2, 3, 32, 32)``
    output_shape: str = ""  # the first output's shape in PyNative
    ran_inside: str = ""  # the parent Cell it ran in, when it found no input of its own
    # when the input the repository's layers give failed and the input it ran with was
    # found by following the errors: that given input, and its PyNative error
    given_input: str = ""
    given_error: str = ""


@dataclass(frozen=True, slots=True)
class TrainStepResult:
    """A training loop turned into a MindSpore training step, and what one step on
    synthetic data did. Not part of the readiness score."""

    function: str  # the loop's function (qualified), or the module of a script's loop
    path: str
    line: int
    step_file: str  # the generated file, relative to the output folder ("" when none)
    # pass (ran, loss finite, a parameter changed) | fail (the step is wrong: the error
    # and the generated line) | unverified (what is missing) | blocked | skipped (not run)
    status: str
    model: str = ""  # the torch class trained
    loss: str = ""  # the torch loss APIs: ``torch.nn.CrossEntropyLoss``
    optimizer: str = ""  # the MindSpore optimizer built: ``nn.SGD(learning_rate=0.1)``
    error: str | None = None
    loss_before: float | None = None
    loss_after: float | None = None
    not_translated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScorePart:
    """One term of the readiness score: its value (0-1), weight and explanation."""

    name: str
    value: float
    weight: float
    detail: str


@dataclass(frozen=True, slots=True)
class Score:
    """The readiness score (0-100), the parts it is made of and the formula in words."""

    value: int
    parts: tuple[ScorePart, ...]
    formula: str
    confidence: str  # high | medium | low: how much of the code msready understood


@dataclass(frozen=True, slots=True)
class Cause:
    """One cause of migration work: the findings of one rule on one API or construct,
    with every place. ``where`` is where the code runs (graph, host or unknown; the most
    urgent of its places), ``graph_count`` how many places a ``forward`` reaches."""

    id: str
    rule: str
    rule_name: str
    category: Category
    severity: Severity
    where: str
    symbol: str
    message: str
    suggestion: str
    findings: tuple[Finding, ...]
    graph_count: int = 0

    @property
    def count(self) -> int:
        """How many places."""
        return len(self.findings)


@dataclass(frozen=True, slots=True)
class Blocker:
    """One line of "start here": a blocker of the port, its kind (see
    :mod:`msready.analyzer.priorities`), what it is about, its places and the cause it
    links to (None when it is not a finding, e.g. a third-party library)."""

    kind: str
    title: str
    subject: str
    count: int
    places: tuple[ApiLocation, ...]
    cause: str | None


@dataclass(frozen=True, slots=True)
class RuleDoc:
    """A rule's documentation, carried in the result so that reports can show it: what it
    flags, why MindSpore cares, how to migrate, and the published page's URL."""

    id: str
    name: str
    what: str
    why: str
    how: str
    url: str


@dataclass(frozen=True, slots=True)
class FileWork:
    """One row of "files that need the most work"."""

    path: str
    findings: int
    errors: int
    warnings: int
    infos: int
    graph: int  # findings a forward reaches
    cost: float  # as the score weighs the findings


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What was scanned."""

    input: str
    ref: str | None
    commit: str | None
    files_scanned: int
    files_failed: int
    lines: int
    skipped: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ScanResult:
    """Everything a scan found, ready to render."""

    tool_version: str
    mindspore_version: str
    target: str
    source: SourceInfo
    findings: list[Finding]
    suppressed: list[Finding]
    apis: list[ApiUse]
    # The per-file facts and the repository model built from them, made when first asked
    # for (a warm scan whose whole result was cached never needs them for its reports).
    facts: Callable[[], tuple[list[FileResult], RepositoryModel]] = field(repr=False)
    score: Score | None = None
    checklist: list[ChecklistItem] = field(default_factory=list)
    skeletons: list[SkeletonResult] = field(default_factory=list)
    train_steps: list[TrainStepResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # What to do first (msready.analyzer.priorities): findings by cause, blockers, files.
    causes: list[Cause] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    files_work: list[FileWork] = field(default_factory=list)
    rule_docs: dict[str, RuleDoc] = field(default_factory=dict)
    # Values of the YAML / JSON files the code loads (msready.analyzer.configvalues).
    config_files: list[ConfigValue] = field(default_factory=list)
    # ``fail-under`` from the scanned repository's ``[tool.msready]`` (any kind of source).
    fail_under: float | None = None
    # Source text by (path, notebook cell or None), kept so that reports can show the
    # lines around a finding after a cloned source is gone.
    sources: dict[tuple[str, int | None], str] = field(default_factory=dict)
    # The key of this scan's whole result in the cache (analyzer.whole): None when it is
    # not cached (``--no-cache``, a file that could not be read). Generated Cells are
    # cached under it too.
    cache_key: str | None = None
    _facts: tuple[list[FileResult], RepositoryModel] | None = field(
        default=None, init=False, repr=False, compare=False)

    @property
    def files(self) -> list[FileResult]:
        """Every scanned file's facts, in discovery order."""
        return self._loaded()[0]

    @property
    def model(self) -> RepositoryModel:
        """The repository model the findings were computed from."""
        return self._loaded()[1]

    def _loaded(self) -> tuple[list[FileResult], RepositoryModel]:
        if self._facts is None:
            self._facts = self.facts()
        return self._facts

    def source_lines(self, path: str, cell: int | None = None) -> list[str]:
        """The lines of a scanned file (or notebook cell), empty when unknown."""
        # Only real line ends count (str.splitlines also breaks at form feeds).
        return re.split(r"\r\n|\r|\n", self.sources.get((path, cell), "").rstrip("\r\n"))

    def fingerprints(self) -> dict[Finding, str]:
        """Every finding's (reported and suppressed) stable fingerprint, counted in file
        order over both lists, so that every output gives a finding the same one."""
        ordered = sorted([*self.findings, *self.suppressed], key=Finding.sort_key)
        return dict(zip(ordered, fingerprints(ordered), strict=True))
