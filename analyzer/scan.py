"""The scan: files -> per-file facts (in a process pool, cached) -> repository model ->
findings, API inventory and score, gathered into one :class:`ScanResult`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from itertools import chain
from pathlib import Path
from typing import TypeVar

from msready import __version__
from msready.analyzer.apitable import load_table
from msready.analyzer.checklist import build_checklist, structure_items
from msready.analyzer.config import Config, load_config, suppressed_by_comment
from msready.analyzer.configvalues import read_config_files
from msready.analyzer.facts import CallKind, FileResult, PackedList
from msready.analyzer.findings import (
    CALLERS,
    Category,
    Confidence,
    Finding,
    Location,
    Scope,
    Severity,
    Span,
)
from msready.analyzer.names import module_name
from msready.analyzer.parse import (
    MAX_FILE_BYTES,
    ParseFailure,
    decode,
    notebook_cells,
    parse_bytes,
    parse_notebook,
    too_large,
)
from msready.analyzer.priorities import EnclosingFunctions, prioritise
from msready.analyzer.repo import TORCH_ROOTS, RepositoryModel
from msready.analyzer.result import ApiLocation, ApiUse, ChecklistItem, ScanResult, SourceInfo
from msready.analyzer.score import compute_score
from msready.analyzer.source import Source, SourceFile, open_source
from msready.analyzer.walk import walk_file
from msready.analyzer.whole import WholeScan, whole_key
from msready.analyzer.workers import (
    PARALLEL_MIN_FILES,
    Forked,
    Lost,
    WorkerPool,
    few_collections,
    stop_server,
)
from msready.rules.registry import file_rules, load_errors, repo_rules

Progress = Callable[[int, int], None]
_ORIGIN = Span(1, 1, 1, 1)


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """How to scan: worker processes, cache use and the MindSpore backend."""

    jobs: int | None = None
    cache: bool = True
    cache_dir: Path | None = None
    target: str | None = None


def default_cache_dir() -> Path:
    """Where per-file results are cached (``$MSREADY_CACHE_DIR`` or the XDG cache)."""
    env = os.environ.get("MSREADY_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "msready"


def files_fingerprint(folders: Iterable[Traversable], suffixes: tuple[str, ...],
                      files: Iterable[Traversable] = ()) -> str:
    """A hash of msready's version, the files of ``folders`` (package resources) whose
    names end with ``suffixes`` and the single ``files``: a cache keyed by it is never
    read by other code."""
    digest = hashlib.sha256(__version__.encode())
    entries = [entry for folder in folders
               for entry in sorted(folder.iterdir(), key=lambda e: e.name)
               if entry.name.endswith(suffixes) and entry.is_file()]
    for entry in [*entries, *files]:
        digest.update(entry.name.encode())
        digest.update(entry.read_bytes())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of msready's own code and data, so a changed rule never reads stale cache;
    with the registry of the Cells' compositions, which MS101's advice reads."""
    return files_fingerprint([resources.files("msready.analyzer"),
                              resources.files("msready.rules"),
                              resources.files("msready.analyzer").joinpath("data")],
                             (".py", ".txt", ".json", ".toml"),
                             [resources.files("msready.skeletons").joinpath("compositions.py")])


def parse_error_finding(path: str, failure: ParseFailure) -> Finding:
    """The finding a file that cannot be read or parsed becomes."""
    span = failure.span
    return Finding(
        rule="MS000",
        rule_name="parse-error",
        category=Category.PARSE_ERROR,
        severity=Severity.ERROR,
        confidence=Confidence.HIGH,
        location=Location.at(path, span, failure.cell),
        symbol="<parse>",
        message=(failure.message if failure.suggestion
                 else f"msready could not read this file: {failure.message}."),
        suggestion=failure.suggestion or (
            "Make the file valid Python 3 (run it through `python3 -m py_compile`); until "
            "then none of its code is checked."),
    )


def lost_file(rel: str, how: str) -> FileResult:
    """What a file whose worker process died while analysing it becomes."""
    failure = ParseFailure(
        f"This file could not be analysed: the worker process died ({how}) while "
        "analysing it.", _ORIGIN,
        suggestion=("Rerun the scan; if this file is lost again, it makes msready's parser "
                    "crash or run out of memory: exclude it with `tool.msready.exclude` and "
                    "report it to msready. None of its code is checked."))
    return _failed(rel, *module_name(rel), [failure])


def analyze_bytes(rel: str, data: bytes) -> FileResult:
    """Parse and walk one file's bytes; never raises."""
    module, is_package = module_name(rel)
    if rel.endswith(".ipynb"):
        parsed, failures = parse_notebook(data)
    else:
        one = parse_bytes(data)
        parsed, failures = (None, [one]) if isinstance(one, ParseFailure) else (one, [])
    if parsed is None:
        return _failed(rel, module, is_package, failures)
    try:
        result = walk_file(rel, parsed, file_rules())
        if not parsed.positions.consistent():  # some position came from a wrong ast node
            parsed.positions.full_pass()
            result = walk_file(rel, parsed, file_rules())
    except RecursionError:
        return _failed(rel, module, is_package, [ParseFailure("nested too deeply to analyse",
                                                              _ORIGIN)])
    if failures:
        result.findings = PackedList([*(parse_error_finding(rel, f) for f in failures),
                                      *result.findings])
    return result


def _failed(rel: str, module: str, is_package: bool, failures: list[ParseFailure]) -> FileResult:
    result = FileResult(rel, module, is_package, "failed")
    result.findings = PackedList(parse_error_finding(rel, f) for f in failures)
    return result


class Cache:
    """Per-file results on disk, keyed by file content, path and msready's own code."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / code_fingerprint()
        self.enabled = True
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            self.enabled = False

    @staticmethod
    def key(rel: str, data: bytes) -> str:
        """The cache key of a file."""
        return hashlib.sha256(rel.encode() + b"\0" + data).hexdigest()

    def get(self, key: str) -> FileResult | None:
        """A cached file result, or None."""
        value = self.get_any(key)
        return value if isinstance(value, FileResult) else None

    def get_any(self, key: str) -> object:
        """A cached value, or None."""
        if not self.enabled:
            return None
        try:
            with open(self.directory / key[:2] / key, "rb") as handle:
                return pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError,
                ValueError):
            return None

    def put(self, key: str, value: FileResult) -> None:
        """Store a file result."""
        self.put_any(key, value)

    def put_any(self, key: str, value: object) -> None:
        """Store a value; a full or read-only disk only disables the cache."""
        if self.enabled:
            self.put_bytes(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def put_bytes(self, key: str, blob: bytes) -> None:
        """Store a value already pickled; a full or read-only disk only disables the cache."""
        if not self.enabled:
            return
        folder = self.directory / key[:2]
        try:
            folder.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder)
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp, folder / key)
        except OSError:
            self.enabled = False


def analyze_safely(rel: str, data: bytes) -> FileResult:
    """:func:`analyze_bytes`, with an internal error in msready turned into a finding."""
    try:
        return analyze_bytes(rel, data)
    except Exception as exc:  # one bad file never stops a scan
        failure = ParseFailure(
            f"msready failed on this file ({type(exc).__name__}: {exc})".splitlines()[0] + ".",
            _ORIGIN,
            suggestion="Report the failure to msready; none of this file's code is checked.")
        return _failed(rel, *module_name(rel), [failure])


def analyze_pickled(rel: str, data: bytes) -> bytes:
    """:func:`analyze_safely`'s result pickled, as a worker process sends it: the main
    process writes these bytes to the cache as they are and loads them once, instead of
    loading the result from the pipe and pickling it again for the cache."""
    return pickle.dumps(analyze_safely(rel, data), protocol=pickle.HIGHEST_PROTOCOL)


def read_files(files: list[SourceFile]) -> dict[str, bytes | OSError]:
    """Every file's bytes, read once for the whole scan, or the error reading it."""
    contents: dict[str, bytes | OSError] = {}
    for f in files:
        try:
            contents[f.rel] = f.path.read_bytes()
        except OSError as exc:
            contents[f.rel] = exc
    return contents


def analyze_files(files: list[SourceFile], contents: dict[str, bytes | OSError],
                  options: ScanOptions, progress: Progress | None = None,
                  cache: Cache | None = None, meanwhile: Callable[[], object] | None = None,
                  ) -> tuple[list[FileResult], str | None]:
    """Per-file results for every file, from the cache or a pool of worker processes, and
    a key for the whole set of files (None when some file could not be read).
    ``meanwhile`` runs in this process while the worker processes work, when there are
    any. The bytes are taken out of ``contents``, and each file's are let go as soon as it
    is handed to a worker, so that they are not all held until the last file is done."""
    results: dict[str, FileResult] = {}
    whole = hashlib.sha256()
    complete = True
    todo: deque[tuple[str, bytes]] = deque()
    keys: dict[str, str | None] = {}
    done = 0
    for f in files:
        data = contents.pop(f.rel)
        if isinstance(data, OSError):
            failure = ParseFailure(f"cannot read it ({data.strerror or data})", _ORIGIN)
            results[f.rel] = _failed(f.rel, *module_name(f.rel), [failure])
            complete = False
            done += 1
            continue
        key = Cache.key(f.rel, data) if cache else None
        whole.update((key or "").encode())
        cached = cache.get(key) if cache and key else None
        if cached is not None:
            results[f.rel] = cached
            done += 1
        else:
            todo.append((f.rel, data))
            keys[f.rel] = key
    total = len(files)
    if progress:
        progress(done, total)
    outputs: Iterable[tuple[str, FileResult | bytes | Lost]]
    if _parallel(options) and len(todo) >= PARALLEL_MIN_FILES:
        pool = WorkerPool(analyze_pickled, options.jobs or os.cpu_count() or 1)
        pool.start()
        outputs = _meanwhile(pool.run(_handed_out(_largest_first(todo))), meanwhile)
    else:
        stop_server()  # started early by the command, in case there was work for it
        outputs = ((rel, analyze_safely(rel, data)) for rel, data in _handed_out(todo))
    for rel, output in outputs:
        if isinstance(output, Lost):
            results[rel] = lost_file(rel, output.how)
            complete = False  # a lost file is neither cached nor part of a cached whole
        elif isinstance(output, bytes):  # from a worker: cached as it came
            if cache and keys[rel]:
                cache.put_bytes(keys[rel] or "", output)
            results[rel] = pickle.loads(output)
        else:
            if cache and keys[rel]:
                cache.put(keys[rel] or "", output)
            results[rel] = output
        done += 1
        if progress:
            progress(done, total)
    return [results[f.rel] for f in files], whole.hexdigest() if cache and complete else None


_T = TypeVar("_T")


def _meanwhile(outputs: Iterator[_T], then: Callable[[], object] | None) -> Iterator[_T]:
    """``outputs``, with ``then`` run once the first has come: the workers have their next
    files by then and this process is idle. Run before the first, it would keep the
    workers from starting (they are made when the first output is asked for)."""
    for first in outputs:
        yield first
        break
    if then is not None:
        then()
    yield from outputs


def _largest_first(todo: deque[tuple[str, bytes]]) -> deque[tuple[str, bytes]]:
    """The files of ``todo``, largest first: a large file handed out last would keep one
    worker busy while the others have nothing left to do (results are gathered by path,
    so the order changes nothing else)."""
    ordered = sorted(todo, key=lambda item: len(item[1]), reverse=True)
    todo.clear()  # each file's bytes are let go as soon as a worker has them
    return deque(ordered)


def _handed_out(todo: deque[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
    """The files of ``todo`` in order, each removed from it as it is handed out."""
    while todo:
        yield todo.popleft()


def _mindspore_version() -> str:
    from importlib import metadata  # not in the worker processes, which never ask

    try:
        return metadata.version("mindspore")
    except metadata.PackageNotFoundError:
        return "not installed"


def build_apis(model: RepositoryModel, target: str) -> list[ApiUse]:
    """One entry per distinct torch API used, with the table's status for ``target``."""
    table = load_table()
    uses: dict[str, ApiUse] = {}

    def add(symbol: str, kind: str, loc: ApiLocation) -> None:
        use = uses.get(symbol)
        if use is None:
            entry = table.lookup(symbol)
            if entry is None:
                use = ApiUse(symbol, "unknown", None, kind)
            else:
                use = ApiUse(symbol, entry.status_for(target), entry.target(target).api, kind,
                             notes=entry.notes)
            uses[symbol] = use
        use.locations.append(loc)

    for rc in model.calls:
        if rc.external is None or rc.external.split(".")[0] not in TORCH_ROOTS:
            continue
        if rc.call.kind not in (CallKind.NAME, CallKind.TENSOR_METHOD):
            continue
        kind = "tensor-method" if rc.call.kind is CallKind.TENSOR_METHOD else "function"
        span = rc.call.span
        add(rc.external, kind, ApiLocation(rc.file.path, span.line, span.column, rc.call.cell))
    for file in model.modules.values():
        for ref in file.references:
            resolved = model.resolve(ref.target, file.module)
            if resolved is None or resolved.kind != "external":
                continue
            add(resolved.name, "function",
                ApiLocation(file.path, ref.span.line, ref.span.column, ref.cell))
    for use in uses.values():
        use.locations.sort(key=lambda loc: (loc.path, loc.cell or 0, loc.line, loc.column))
    return sorted(uses.values(), key=lambda u: u.symbol)


def scope_findings(model: RepositoryModel, findings: Iterable[Finding]) -> Iterator[Finding]:
    """Place findings by where their code runs (``model.placement``). Forward-scoped ones
    are kept with the path that reaches them in graph code, dropped in host code, and
    reported one severity lower in code nothing in the repository calls (a library's API)
    when it uses torch. Anywhere-scoped ones are always kept, with where they run and, in
    graph code, the path. A finding its rule made without naming its function (the
    repository rules' API findings) gets the function around its place."""
    placement = model.placement
    enclosing = EnclosingFunctions(model)
    for finding in findings:
        if finding.function is None:
            loc = finding.location
            finding = replace(finding, function=enclosing.at(loc.path, loc.cell, loc.line,
                                                              loc.column))
        where = placement.where(finding.function)
        trace = tuple(model.short_name(p) for p in placement.trace(finding.function)) if (
            where == "graph") else ()
        if finding.scope is not Scope.FORWARD:
            yield replace(finding, where=where, trace=finding.trace or trace)
        elif where == "graph":
            yield replace(finding, where=where, trace=trace)
        elif placement.reports_forward_hazard(finding.function):
            yield replace(
                finding, where=where, severity=_LOWER[finding.severity],
                message=finding.message + _UNREACHED.format(
                    model.short_name(finding.function or "")))


_LOWER = {Severity.ERROR: Severity.WARNING, Severity.WARNING: Severity.INFO,
          Severity.INFO: Severity.INFO}
_UNREACHED = (" Nothing in this repository calls `{}` from a forward; this matters if a "
              "network runs it.")


def load_repository_rules() -> None:
    """Import the repository rules, the libraries the repository model uses (networkx
    for the call graph, numpy whose method names the API rule reads) and load the API
    table the rules read: done while the worker processes analyse the files, so that
    none of it is left for after them. A table that cannot be loaded fails later, where
    it is read, as it would without this."""
    repo_rules()
    with contextlib.suppress(Exception):
        load_table()
    with contextlib.suppress(ImportError):
        import networkx  # noqa: F401
        import numpy  # noqa: F401


def decided_findings(model: RepositoryModel) -> Iterator[Finding]:
    """Findings whose condition the value analysis decides once the repository is known;
    a condition that cannot be decided costs only its own finding."""
    placement = model.placement
    for file in model.files.values():
        for pending in file.pending:
            if pending.scope is Scope.FORWARD and pending.function is not None and (
                    not placement.reports_forward_hazard(pending.function)):
                continue  # host code: the finding would be dropped, so it is not decided
            try:
                if not model.values.decide(pending.condition):
                    continue
            except (RecursionError, KeyError, TypeError, ValueError):
                continue
            finding = pending.finding
            if CALLERS in finding.message:
                callers = sorted({model.short_name(rc.call.caller) for rc, _ in
                                  model.values.incoming.get(finding.function or "", ())})
                named = ", ".join(f"`{c}`" for c in callers[:3]) or "its callers"
                finding = replace(finding, message=finding.message.replace(CALLERS, named))
            yield finding


def repo_rule_findings(model: RepositoryModel) -> list[Finding]:
    """What the repository rules report; a crashing rule loses only its own findings."""
    raw: list[Finding] = []
    for rule in repo_rules():
        try:
            raw.extend(rule().check(model))
        except Exception as exc:  # a crashing rule loses only its own findings
            raw.append(Finding(
                rule="MS001", rule_name="rule-crashed", category=rule.category,
                severity=Severity.INFO, confidence=Confidence.LOW,
                location=Location(".", 1, 1, 1, 1), symbol=rule.id,
                message=(f"msready's rule {rule.id} ({rule.name}) failed "
                         f"({type(exc).__name__}: {exc}); its findings are missing."),
                suggestion="Report the failure to msready; check that hazard by hand meanwhile.",
            ))
    return raw


def collect_findings(placed: list[Placed]) -> tuple[list[Finding], list[Finding]]:
    """All findings, split into reported and suppressed (by comment or by config), each
    once, in order, from groups already placed (:func:`place_findings`): the files'
    findings, the repository rules', those the value analysis decided."""
    active: list[Finding] = []
    suppressed: list[Finding] = []
    seen: set[Finding] = set()
    for findings, into in [*((group.active, active) for group in placed),
                           *((group.suppressed, suppressed) for group in placed)]:
        for finding in findings:
            if finding not in seen:
                seen.add(finding)
                into.append(finding)
    active.sort(key=Finding.sort_key)
    suppressed.sort(key=Finding.sort_key)
    return active, suppressed


@dataclass
class Placed:
    """Findings placed by where their code runs, without repeats, in the order met."""

    active: list[Finding]
    suppressed: list[Finding]  # by a comment or by the configuration


def file_findings(model: RepositoryModel) -> Iterator[Finding]:
    """The findings the file rules made, file by file."""
    return chain.from_iterable(file.findings for file in model.files.values())


def place_findings(model: RepositoryModel, config: Config,
                   findings: Iterable[Finding]) -> Placed:
    """``findings`` placed (:func:`scope_findings`) and split into reported and
    suppressed. They are read one at a time: each is loaded, placed and dropped (only
    its placed copy is kept), never all of them twice over."""
    placed = Placed([], [])
    seen: set[Finding] = set()
    for finding in scope_findings(model, findings):
        if finding in seen:
            continue
        seen.add(finding)
        owner = model.files.get(finding.location.path)
        if config.disabled(finding) or (
                owner is not None and suppressed_by_comment(finding, owner.suppressions)):
            placed.suppressed.append(finding)
        else:
            placed.active.append(finding)
    return placed


def scan_source(source: Source, options: ScanOptions,
                progress: Progress | None = None) -> ScanResult:
    """Scan an opened source."""
    config = load_config(source.root)
    files = [f for f in source.files if not config.excluded(f.rel)]
    skipped = list(source.skipped) + [(f.rel, "excluded by tool.msready.exclude")
                                      for f in source.files if config.excluded(f.rel)]
    cache = Cache(options.cache_dir or default_cache_dir()) if options.cache else None
    contents = read_files(files)
    sources = source_texts(files, contents)
    # CPU by default: it is the backend whose generated Cells this machine can prove.
    target = options.target or config.target or "cpu"
    key = files_key(files, contents) if cache else None
    key = whole_key(key, target, source.root) if key else None
    whole = cache.get_any(key) if cache and key else None
    if isinstance(whole, WholeScan) and whole.still_valid(source.root):
        stop_server()  # nothing to analyse: the server the command may have started ends
        if progress:
            progress(len(files), len(files))
        kept = contents  # the facts are loaded (from the cache) only when asked for

        def facts() -> tuple[list[FileResult], RepositoryModel]:
            results, _ = analyze_files(files, kept, options, None, cache)
            return results, RepositoryModel(results, target)

        result = _new_result(source, skipped, config, target, facts, whole.files_scanned,
                             whole.files_failed, whole.lines)
        whole.fill(result)
        result.sources = sources
        result.cache_key = key
        return result
    results, done_key = analyze_files(files, contents, options, progress, cache,
                                      meanwhile=load_repository_rules)
    del contents  # the bytes of every file are not needed any more
    model = RepositoryModel(results, target)
    # The repository rules' findings and the findings the value analysis decides depend on
    # every file and the target: cached as a whole.
    repo_key = f"repo-{target}-{done_key}" if done_key else None
    repo_findings = cache.get_any(repo_key) if cache and repo_key else None
    known = isinstance(repo_findings, list)
    # A copy of this process decides the findings the value analysis decides and finds
    # the checklist's structure, while this one runs the repository rules and places the
    # findings: a second core does the other half (as long, and only small results to
    # send back).
    aside = Forked(lambda: (None if known else list(decided_findings(model)),
                            _structure(model)), fork=_parallel(options))
    if not isinstance(repo_findings, list):
        repo_findings = repo_rule_findings(model)
    placed = [place_findings(model, config, file_findings(model)),
              place_findings(model, config, repo_findings)]
    decided, structure = aside.result()
    if structure is not None:
        structure_items(model, structure)  # kept in the model for the checklist
    if decided is not None:
        placed.append(place_findings(model, config, decided))
        repo_findings += decided
        if cache and repo_key:
            cache.put_any(repo_key, repo_findings)
    result = _new_result(source, skipped, config, target, lambda: (results, model),
                         len(results), sum(1 for r in results if r.status == "failed"),
                         sum(r.lines for r in results))
    result.findings, result.suppressed = collect_findings(placed)
    del repo_findings  # their placed copies are in the result
    result.apis = build_apis(model, target)
    result.config_files = read_config_files(
        source.root, (v for r in results for v in r.source_facts if v.kind == "file"))
    result.sources = sources
    before = len(result.warnings)
    _finish(result)
    if cache and key and done_key:
        cache.put_any(key, WholeScan.of(result, before))
        result.cache_key = key
    return result


def _structure(model: RepositoryModel) -> list[ChecklistItem] | None:
    """The checklist's structure items, None when finding them failed (the checklist
    then asks again and reports the failure)."""
    try:
        return structure_items(model)
    except Exception:
        return None


def _parallel(options: ScanOptions) -> bool:
    """Whether the scan may use more than one process."""
    return (options.jobs or os.cpu_count() or 1) > 1


def files_key(files: list[SourceFile], contents: dict[str, bytes | OSError]) -> str | None:
    """A key for the whole set of files and their contents (None when some file could
    not be read)."""
    whole = hashlib.sha256()
    for f in files:
        data = contents[f.rel]
        if isinstance(data, OSError):
            return None
        whole.update(Cache.key(f.rel, data).encode())
    return whole.hexdigest()


def _new_result(source: Source, skipped: list[tuple[str, str]], config: Config, target: str,
                facts: Callable[[], tuple[list[FileResult], RepositoryModel]],
                scanned: int, failed: int, lines: int) -> ScanResult:
    info = SourceInfo(input=source.input, ref=source.ref, commit=source.commit,
                      files_scanned=scanned, files_failed=failed, lines=lines,
                      skipped=tuple(skipped))
    return ScanResult(
        tool_version=__version__,
        mindspore_version=_mindspore_version(),
        target=target,
        source=info,
        findings=[],
        suppressed=[],
        apis=[],
        facts=facts,
        warnings=[*config.warnings, *load_errors()],
        fail_under=config.fail_under,
    )


def source_texts(files: list[SourceFile], contents: dict[str, bytes | OSError],
                 ) -> dict[tuple[str, int | None], str]:
    """The text of every readable file (per code cell for notebooks)."""
    sources: dict[tuple[str, int | None], str] = {}
    for f in files:
        data = contents[f.rel]
        if isinstance(data, OSError):
            continue
        if f.is_notebook:
            for cell, text in notebook_cells(data).items():
                sources[(f.rel, cell)] = text
        elif len(data) <= MAX_FILE_BYTES:
            decoded = decode(data)
            if isinstance(decoded, str) and too_large(decoded) is None:
                sources[(f.rel, None)] = decoded
    return sources


def _finish(result: ScanResult) -> None:
    """Add the parts computed from the whole result: what to do first, checklist and
    score. A failure in any costs only that part, with a warning."""
    try:
        prioritise(result)
    except Exception as exc:
        result.warnings.append(f"the start-here list failed ({type(exc).__name__}: {exc})")
    try:
        result.checklist = build_checklist(result)
    except Exception as exc:
        result.warnings.append(f"the migration checklist failed ({type(exc).__name__}: {exc})")
    rescore(result)


def rescore(result: ScanResult) -> None:
    """(Re)compute the readiness score, e.g. after the skeletons ran."""
    try:
        result.score = compute_score(result)
    except Exception as exc:
        result.warnings.append(f"the readiness score failed ({type(exc).__name__}: {exc})")


def scan(spec: str, ref: str | None = None, options: ScanOptions | None = None,
         progress: Progress | None = None) -> ScanResult:
    """Scan a folder, file or git URL. Raises :class:`SourceError` for an unusable source."""
    with open_source(spec, ref) as source, few_collections():
        return scan_source(source, options or ScanOptions(), progress)


def scan_files(files: dict[str, str], target: str = "cpu") -> ScanResult:
    """Scan in-memory sources (path -> text), as the rule examples and tests do."""
    with tempfile.TemporaryDirectory(prefix="msready-snippet-") as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        return scan(str(root), options=ScanOptions(jobs=1, cache=False, target=target))
