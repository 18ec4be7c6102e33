"""``msready survey``: many repositories, one scan each as a Ray task, one aggregate report.

SOURCES is a text file (one folder or git URL per line, ``URL@ref`` for a ref, ``#``
comments) or a folder whose subfolders are the repositories. Each repository is scanned
in-process exactly as ``msready scan`` does (same target, skeleton mode and jobs) inside a
Ray task; its reports land in ``DIR/repos/<name>/`` with ``survey-entry.json`` written
last, so a survey is resumable: a re-run skips every repository whose entry records the
same source fingerprint (the content hash of its ``.py``/``.ipynb`` files, or the git
commit of a URL) and the same settings, and an interrupted survey loses nothing finished.

Ray is optional (``pip install 'msready[survey]'``) and imported only here, when a survey
runs. By default a local runtime starts in-process on the loopback interface with the
machine's cores and no dashboard; ``address`` joins an existing cluster (``auto`` or
``ray://host:port``), whose workers must have msready installed and see the sources (git
URLs, or folders on a shared file system).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from msready.analyzer.scan import ScanOptions, code_fingerprint, scan
from msready.analyzer.source import SourceError, discover, is_git_url
from msready.analyzer.survey_aggregate import aggregate, library_roots

ENTRY = "survey-entry.json"
REPORT_FORMATS = ("html", "json", "sarif", "md")
INSTALL_HINT = "Ray is not installed; install it with: pip install 'msready[survey]'"
FINGERPRINT_THREADS = 16
_SHA40 = re.compile(r"^[0-9a-f]{40}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class SurveyError(SourceError):
    """A survey that cannot start; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class RepoSource:
    """One repository of a survey: its row name, a folder or git URL, and a ref."""

    name: str
    spec: str
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class SurveyOptions:
    """How every repository is scanned and where the Ray tasks run."""

    target: str | None = None
    skeletons: str = "run"
    jobs: int = 1  # scan processes per task, and the CPUs each task reserves
    cache: bool = True
    address: str | None = None  # None: a local runtime; "auto" or "ray://host:port"
    num_cpus: int | None = None  # local runtime only; default: the machine's cores
    max_retries: int = 2  # how often a task whose worker died is run again

    def settings(self) -> dict[str, Any]:
        """What changes a repository's result besides its source."""
        return {"target": self.target, "skeletons": self.skeletons, "msready": code_fingerprint()}


@dataclass(frozen=True, slots=True)
class Planned:
    """A repository to survey, with what a re-run compares and its size for scheduling."""

    source: RepoSource
    fingerprint: str | None
    size: int


# ----- sources --------------------------------------------------------------------------


def split_ref(line: str) -> tuple[str, str | None]:
    """``URL@ref`` -> (URL, ref); the ``@`` of ``git@host:`` or ``user@host`` is no ref."""
    if not is_git_url(line):
        return line, None
    start = line.index(":", line.index("git@")) + 1 if line.startswith("git@") else (
        line.find("/", line.index("://") + 3) if "://" in line else 0)
    at = line.rfind("@")
    if start <= 0 or at <= start:
        return line, None
    return line[:at], line[at + 1:] or None


def repo_name(spec: str, ref: str | None) -> str:
    """A folder name for a source: the folder's name, or ``owner__repo`` of a URL."""
    if is_git_url(spec):
        parts = [p for p in re.split(r"[/:]", spec.removesuffix("/").removesuffix(".git")) if p]
        name = "__".join(parts[-2:])
    else:
        name = Path(spec).name or "repo"
    if ref:
        name += f"@{ref}"
    return _UNSAFE.sub("_", name).strip("._") or "repo"


def read_sources(spec: str) -> list[RepoSource]:
    """The repositories a SOURCES argument names, with unique names, in its order."""
    path = Path(spec)
    entries: list[tuple[str, str | None]]
    if path.is_dir():
        entries = [(str(p.resolve()), None) for p in sorted(path.iterdir())
                   if p.is_dir() and not p.name.startswith(".")]
        if not entries:
            raise SurveyError(f"no repository folders in {spec}")
    elif path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SurveyError(f"cannot read {spec}: {exc}") from exc
        entries = []
        for raw in text.splitlines():
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            url, ref = split_ref(line)
            if not is_git_url(url):
                url = str((path.parent / url).resolve())
            entries.append((url, ref))
        if not entries:
            raise SurveyError(f"{spec} names no repository")
    else:
        raise SurveyError(f"no such file or folder: {spec}")
    sources: list[RepoSource] = []
    taken: set[str] = set()
    for url, ref in entries:
        base = name = repo_name(url, ref)
        n = 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        sources.append(RepoSource(name, url, ref))
    return sources


def fingerprint(source: RepoSource) -> tuple[str | None, int]:
    """What identifies the source's content, and its size in bytes (-1 when unknown).

    A folder: the hash of its ``.py``/``.ipynb`` files (paths and bytes); a git URL: the
    commit its ref points at. None when it cannot be told (the repository is scanned).
    """
    if is_git_url(source.spec):
        return _remote_commit(source.spec, source.ref), -1
    root = Path(source.spec)
    if source.ref is not None or not root.is_dir():
        return None, 0
    digest = hashlib.sha256()
    with contextlib.suppress(OSError):  # its [tool.msready] table changes the scan too
        digest.update((root / "pyproject.toml").read_bytes())
    size = 0
    for f in discover(root).files:
        try:
            data = f.path.read_bytes()
        except OSError:
            return None, size
        size += len(data)
        digest.update(f.rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return "files:" + digest.hexdigest(), size


def _remote_commit(url: str, ref: str | None) -> str | None:
    if ref is not None and _SHA40.match(ref):
        return "commit:" + ref
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true")
    try:
        proc = subprocess.run(["git", "ls-remote", url, ref or "HEAD"], env=env, text=True,
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.split()
    return "commit:" + lines[0] if proc.returncode == 0 and lines else None


# ----- one repository (runs in a Ray worker) ----------------------------------------------


def scan_repository(source: RepoSource, options: SurveyOptions) -> dict[str, Any]:
    """Scan one repository as ``msready scan`` does and return its entry and report files.

    The files come back as bytes (relative path -> content) so that the caller writes
    them, wherever the task ran. A source that cannot be cloned or scanned gives an entry
    with its one-line error; this function never raises.
    """
    from msready import cli  # the scan command's own steps: skeletons, then the reports

    started, cpu = time.perf_counter(), time.process_time()
    entry: dict[str, Any] = {"name": source.name, "source": source.spec, "ref": source.ref,
                             "pid": os.getpid()}
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="msready-survey-") as tmp:
        out = Path(tmp)
        try:
            result = scan(source.spec, source.ref,
                          ScanOptions(jobs=options.jobs, cache=options.cache,
                                      target=options.target))
            if options.skeletons != "off":
                cli._skeletons(result, out, options.skeletons, False)
            cli._write_reports(result, out, REPORT_FORMATS)
            model = result.model
            external = (rc.external for rc in model.calls if rc.external)
            local = {part for module in model.modules for part in module.split(".")[:1]}
            entry.update(status="ok", error=None, commit=result.source.commit,
                         libraries=library_roots(external, local))
            files = {p.relative_to(out).as_posix(): p.read_bytes()
                     for p in sorted(out.rglob("*")) if p.is_file()}
        except Exception as exc:  # every failure is a row, never a lost survey
            entry.update(status="error", error=one_line(exc), libraries=[])
    entry["seconds"] = round(time.perf_counter() - started, 3)
    entry["cpu_seconds"] = round(time.process_time() - cpu, 3)  # this process only (jobs=1)
    return {"entry": entry, "files": files}


def one_line(exc: BaseException) -> str:
    """An exception as one line for a survey row."""
    text = " ".join(str(exc).split())
    if isinstance(exc, SourceError) or type(exc).__name__ == "UsageError":
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# ----- results on disk ---------------------------------------------------------------------


def load_entry(out: Path, name: str) -> dict[str, Any] | None:
    """A repository's finished entry, or None."""
    try:
        data = json.loads((out / "repos" / name / ENTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_report(out: Path, name: str) -> dict[str, Any] | None:
    """A repository's ``msready.json``, or None."""
    try:
        data = json.loads((out / "repos" / name / "msready.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def store(out: Path, outcome: dict[str, Any], plan: Planned, settings: dict[str, Any]) -> None:
    """Write one repository's files, then its entry; an older result is replaced whole."""
    entry = dict(outcome["entry"], fingerprint=plan.fingerprint, settings=settings)
    repos = out / "repos"
    final = repos / plan.source.name
    partial = repos / f".{plan.source.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for rel, data in outcome["files"].items():
        dest = partial / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    (partial / ENTRY).write_text(json.dumps(entry, indent=1) + "\n", encoding="utf-8")
    old = repos / f".{plan.source.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    partial.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def is_current(entry: dict[str, Any] | None, plan: Planned, settings: dict[str, Any]) -> bool:
    """True when a finished entry still stands for the source and settings."""
    return (entry is not None and entry.get("status") == "ok" and plan.fingerprint is not None
            and entry.get("fingerprint") == plan.fingerprint
            and entry.get("settings") == settings)


# ----- the survey --------------------------------------------------------------------------

Report = Callable[[str, dict[str, Any] | None], None]


@dataclass(slots=True)
class SurveyRun:
    """What a survey did: repositories scanned now, skipped as unchanged, and failed."""

    scanned: list[str]
    skipped: list[str]
    failed: list[str]
    data: dict[str, Any]


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`SurveyError` telling how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise SurveyError(INSTALL_HINT) from exc
    return ray


def start_ray(ray: Any, options: SurveyOptions) -> bool:
    """Connect to Ray as asked; True when this call started the runtime (and ends it)."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    common: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    try:
        with warnings.catch_warnings():  # a failed connection is reported once, below
            warnings.simplefilter("ignore")
            if options.address:
                ray.init(address=options.address, **common)
            else:
                ray.init(num_cpus=options.num_cpus or os.cpu_count() or 1,
                         include_dashboard=False, _node_ip_address="127.0.0.1", **common)
    except Exception as exc:
        where = options.address or "a local runtime"
        raise SurveyError(f"cannot start Ray ({where}): {one_line(exc)}") from exc
    return True


def plan(sources: list[RepoSource]) -> list[Planned]:
    """Fingerprint every source; largest first (unknown sizes, i.e. git URLs, lead)."""
    with ThreadPoolExecutor(max_workers=FINGERPRINT_THREADS) as pool:  # git ls-remote waits
        planned = [Planned(s, *fp) for s, fp in zip(sources, pool.map(fingerprint, sources),
                                                     strict=True)]
    return sorted(planned, key=lambda p: (-(p.size if p.size >= 0 else 1 << 62), p.source.name))


def survey(sources_spec: str, out: Path, options: SurveyOptions,
           on_progress: Callable[[int, int, int, int], None] | None = None,
           on_done: Report | None = None) -> SurveyRun:
    """Survey every repository SOURCES names into ``out``; returns what happened.

    ``on_progress(done, running, failed, total)`` follows the tasks; ``on_done(name,
    entry)`` is called as each repository finishes (entry None: skipped as unchanged).
    """
    sources = read_sources(sources_spec)
    ray = import_ray()
    settings = options.settings()
    planned = plan(sources)
    (out / "repos").mkdir(parents=True, exist_ok=True)
    run = SurveyRun([], [], [], {})
    todo = []
    for p in planned:
        if is_current(load_entry(out, p.source.name), p, settings):
            run.skipped.append(p.source.name)
            if on_done:
                on_done(p.source.name, None)
        else:
            todo.append(p)
    total = len(planned)
    try:
        if todo:
            started = start_ray(ray, options)
            try:
                _run_tasks(ray, out, todo, options, settings, run, total, on_progress, on_done)
            finally:
                if started:
                    ray.shutdown()
    finally:
        run.data = aggregate([(e, load_report(out, s.name) if e.get("status") == "ok" else None)
                              for s in sources if (e := load_entry(out, s.name)) is not None],
                             {**asdict(options), "sources": sources_spec})
    return run


def _run_tasks(ray: Any, out: Path, todo: list[Planned], options: SurveyOptions,
               settings: dict[str, Any], run: SurveyRun, total: int,
               on_progress: Callable[[int, int, int, int], None] | None,
               on_done: Report | None) -> None:
    remote = ray.remote(scan_repository)
    pending = {remote.options(num_cpus=options.jobs, max_retries=options.max_retries,
                              retry_exceptions=False, name=f"msready-scan:{p.source.name}",
                              ).remote(p.source, options): p
               for p in todo}
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    slots = max(1, int(cpus // options.jobs))
    done = len(run.skipped)
    while pending:
        if on_progress:
            on_progress(done, min(slots, len(pending)), len(run.failed), total)
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
        for ref in ready:
            p = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception as exc:  # the worker died more often than retried, ...
                outcome = {"entry": {"name": p.source.name, "source": p.source.spec,
                                     "ref": p.source.ref, "status": "error",
                                     "error": one_line(exc).split("\n")[0][:300],
                                     "libraries": [], "seconds": 0.0},
                           "files": {}}
            try:
                store(out, outcome, p, settings)
            except OSError as exc:
                raise SurveyError(f"cannot write the results of {p.source.name} into {out}: "
                                  f"{exc.strerror or exc}") from exc
            entry = outcome["entry"]
            (run.scanned if entry["status"] == "ok" else run.failed).append(p.source.name)
            done += 1
            if on_done:
                on_done(p.source.name, entry)
    if on_progress:
        on_progress(done, 0, len(run.failed), total)

