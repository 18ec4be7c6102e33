"""The ``msready`` command: ``scan``, ``survey``, ``table``, ``rule`` and ``convert-weights``.

Exit codes: 0 for a completed scan, 1 when ``--fail-under`` is not met (or ``--baseline``
shows new findings), 2 for usage and source errors, which are one line on stderr, 3 for an
internal error of msready (one line on stderr naming the log file that holds the
traceback), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from msready import __version__
from msready.analyzer.source import SourceError, has_sources, is_git_url
from msready.analyzer.workers import PARALLEL_MIN_FILES, Forked, few_collections, start_server

if TYPE_CHECKING:
    from rich.console import Console

    from msready.analyzer.result import ScanResult

# format name -> (file written, reporter module with ``write(result, text_file)``)
FORMATS = {
    "html": ("report.html", "msready.reports.html"),
    "json": ("msready.json", "msready.reports.json_report"),
    "sarif": ("msready.sarif", "msready.reports.sarif"),
    "md": ("checklist.md", "msready.reports.markdown"),
}
TARGETS = ("ascend", "gpu", "cpu")
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="msready", description="How ready is a PyTorch repository for MindSpore.")
    parser.add_argument("--version", action="version", version=f"msready {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("scan", help="scan a folder, a .py/.ipynb file or a git URL")
    s.add_argument("source", help="folder, .py or .ipynb file, or git URL (https://, git@, file://)")
    s.add_argument("--ref", help="branch, tag or commit to scan (git sources)")
    s.add_argument("-o", "--output", default="out", help="output folder (default: out)")
    s.add_argument("--format", default="html,json,sarif,md",
                   help="comma-separated: html, json, sarif, md (default: all)")
    s.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    s.add_argument("--target", choices=TARGETS, default=None,
                   help="MindSpore backend to migrate to (default: cpu, or the repo's config)")
    s.add_argument("--skeletons", choices=("run", "write", "off"), default="run",
                   help="generate MindSpore Cells and run them (run), only write them, or skip")
    s.add_argument("--compare-torch", action="store_true",
                   help="import the original modules and compare outputs with the Cells")
    s.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    s.add_argument("--fail-under", type=float, default=None, metavar="SCORE",
                   help="exit 1 when the readiness score is below SCORE")
    s.add_argument("--baseline", default=None, metavar="JSON",
                   help="an earlier msready.json: exit 1 only for findings not in it")
    s.add_argument("-q", "--quiet", action="store_true", help="no summary on the terminal")

    v = sub.add_parser("survey", help="scan many repositories on Ray and rank what blocks them")
    v.add_argument("sources", help="text file of folders / git URLs (URL@ref), or a folder "
                                   "whose subfolders are repositories")
    v.add_argument("-o", "--output", default="survey", help="output folder (default: survey)")
    v.add_argument("--jobs", type=int, default=1, help="scan processes per repository (default 1)")
    v.add_argument("--target", choices=TARGETS, default=None,
                   help="MindSpore backend to migrate to (default: cpu, or each repo's config)")
    v.add_argument("--skeletons", choices=("run", "write", "off"), default="run",
                   help="generate MindSpore Cells and run them (run), only write them, or skip")
    v.add_argument("--address", default=None,
                   help="Ray cluster: auto or ray://HOST:PORT (default: a local runtime)")
    v.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the local Ray runtime (default: all cores)")
    v.add_argument("--max-retries", type=int, default=2,
                   help="runs of a repository again when its worker dies (default 2)")
    v.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    v.add_argument("-q", "--quiet", action="store_true", help="no progress or summary")

    t = sub.add_parser("table", help="print the torch -> MindSpore API table")
    t.add_argument("action", nargs="?", choices=("lookup",), help="lookup: explain one entry")
    t.add_argument("symbol", nargs="?", help="torch API for lookup, e.g. torch.nn.Conv2d")
    t.add_argument("--format", choices=("json", "tsv"), default="json")
    t.add_argument("--target", choices=TARGETS, default=None,
                   help="backend (default: cpu for the table, every backend for lookup)")

    r = sub.add_parser("rule", help="print one rule's documentation (what, why, how, examples)")
    r.add_argument("rule", help="rule id or name, e.g. MS201 or masked-select")

    c = sub.add_parser("convert-weights", help="convert a torch checkpoint to a MindSpore one")
    c.add_argument("checkpoint", help="torch .pth / .pt file (a state_dict)")
    c.add_argument("output", help="MindSpore .ckpt to write")
    c.add_argument("--map", dest="weight_map", default=None,
                   help="weight-name map JSON from out/skeletons (default: built-in renames)")
    return parser


def _formats(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise UsageError(f"unknown --format {','.join(unknown) or text!r}; "
                         f"choose from {', '.join(FORMATS)}")
    return names


def _check_output(path: Path) -> None:
    """Fail early when the output folder cannot be written, without creating it: a scan
    that fails before writing anything leaves no empty folder behind."""
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"output folder {path} is a file")
        if not os.access(path, os.W_OK):
            raise UsageError(f"output folder {path} is not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"cannot create output folder {path}: {parent} is not writable")


def _prepare_output(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output folder {path}: {exc.strerror or exc}") from exc
    if not os.access(path, os.W_OK):
        raise UsageError(f"output folder {path} is not writable")


def _start_workers_early(args: argparse.Namespace) -> None:
    """Start the server that worker processes are forked from now, when the source is a
    folder with enough files to need them: it loads the analyzer while this process
    loads its own modules and reads the files, instead of after."""
    if args.ref or is_git_url(args.source) or (args.jobs or os.cpu_count() or 1) < 2:
        return
    root = Path(args.source)
    if root.is_dir() and has_sources(root, PARALLEL_MIN_FILES):
        start_server()


def _run_scan(args: argparse.Namespace, console: Console) -> int:
    formats = _formats(args.format)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from msready.analyzer.scan import ScanOptions, scan

    out = Path(args.output)
    _check_output(out)
    baseline = _load_baseline(args.baseline) if args.baseline else None
    options = ScanOptions(jobs=args.jobs, cache=not args.no_cache, target=args.target)
    show_bar = console.is_terminal and not args.quiet
    with Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True, disable=not show_bar) as bar:
        task = bar.add_task("scan", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = scan(args.source, args.ref, options, progress)
    _prepare_output(out)
    if args.skeletons != "off":
        _skeletons(result, out, args.skeletons, args.compare_torch, not args.no_cache)
    written = _write_reports(result, out, formats,
                             parallel=(args.jobs or os.cpu_count() or 1) > 1)
    if not args.quiet:
        from msready.reports.terminal import print_summary
        print_summary(result, console, written)
    return _exit_code(result, args, baseline, console)


def _skeletons(result: ScanResult, out: Path, mode: str, compare: bool,
               cache: bool = True) -> None:
    from msready.analyzer.scan import rescore
    from msready.skeletons.generate import build_skeletons

    try:
        result.skeletons = build_skeletons(result, out / "skeletons", run=mode == "run",
                                           compare_torch=compare, cache=cache)
    except Exception as exc:  # the reports still get written
        result.warnings.append(f"skeleton generation failed ({type(exc).__name__}: {exc})")
    rescore(result)


def _write_report(path: Path, write: Callable[[ScanResult, TextIO], None],
                  result: ScanResult) -> None:
    """Stream one report into a temporary file beside ``path`` and put it in place when
    complete: a failed write never leaves half a report behind."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        try:
            with partial.open("w", encoding="utf-8") as handle:
                write(result, handle)
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_reports(result: ScanResult, out: Path, formats: Sequence[str],
                   parallel: bool = False) -> list[str]:
    """Write the reports named in ``formats``; the paths written. With ``parallel``, the
    HTML page, the slowest to render, is written by a forked copy of this process while
    this one writes the others (where there is no fork, or the copy fails, it is written
    here afterwards)."""
    aside = [name for name in formats if name == "html"] if parallel and len(formats) > 1 else []
    copy = Forked(lambda: _write_named(result, out, aside)) if aside else None
    _write_named(result, out, [name for name in formats if name not in aside])
    if copy is not None:
        copy.result()
    return [str(out / FORMATS[name][0]) for name in formats]


def _write_named(result: ScanResult, out: Path, formats: Sequence[str]) -> None:
    for name in formats:
        filename, module_name = FORMATS[name]
        reporter = importlib.import_module(module_name)
        _write_report(out / filename, reporter.write, result)


def _load_baseline(path: str) -> set[str]:
    """The fingerprints of an earlier ``msready.json``'s findings (reported and suppressed)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = [*data["findings"], *data.get("suppressed", [])]
        return {row.get("fingerprint") or _legacy_key(row) for row in rows}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"cannot read baseline {path}: {exc}") from exc


def _legacy_key(row: dict[str, str]) -> str:
    """A finding of a msready.json written before findings carried a fingerprint."""
    return "\0".join((row["rule"], row["path"], row["symbol"], row["message"]))


def _exit_code(result: ScanResult, args: argparse.Namespace,
               baseline: set[str] | None, console: Console) -> int:
    code = 0
    if baseline is not None:
        prints = result.fingerprints()
        new = [f for f in result.findings if prints[f] not in baseline
               and _legacy_key({"rule": f.rule, "path": f.location.path, "symbol": f.symbol,
                                "message": f.message}) not in baseline]
        if new:
            console.print(f"{len(new)} findings are not in the baseline", highlight=False)
            code = EXIT_GATE_FAILED
    # --fail-under wins; else the scanned repository's [tool.msready] fail-under, read by
    # the scan itself, so that a folder, a file and a git URL behave the same.
    threshold = args.fail_under if args.fail_under is not None else result.fail_under
    if threshold is not None and result.score is not None and result.score.value < threshold:
        console.print(f"readiness score {result.score.value} is under {threshold:g}",
                      highlight=False)
        code = EXIT_GATE_FAILED
    return code


def _run_rule(args: argparse.Namespace) -> int:
    from msready.rules.docs import rule_text

    text = rule_text(args.rule)
    if text is None:
        raise UsageError(f"no rule {args.rule!r}; the rules are listed in docs/rules.md")
    sys.stdout.write(text)
    return 0


def _run_survey(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from msready.analyzer.survey import SurveyOptions, survey
    from msready.reports.survey import print_summary, write_reports

    for flag, value in (("--jobs", args.jobs), ("--num-cpus", args.num_cpus)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1")
    if args.max_retries < 0:
        raise UsageError("--max-retries must be 0 or more")
    out = Path(args.output)
    _prepare_output(out)
    options = SurveyOptions(target=args.target, skeletons=args.skeletons, jobs=args.jobs,
                            cache=not args.no_cache, address=args.address,
                            num_cpus=args.num_cpus, max_retries=args.max_retries)
    show_bar = console.is_terminal and not args.quiet
    with Progress(TextColumn("surveying"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[running]} running, {task.fields[failed]} failed"),
                  TimeElapsedColumn(), console=console, transient=True,
                  disable=not show_bar) as bar:
        task = bar.add_task("survey", total=None, running=0, failed=0)

        def progress(done: int, running: int, failed: int, total: int) -> None:
            bar.update(task, completed=done, total=total, running=running, failed=failed)

        def finished(name: str, entry: dict[str, Any] | None) -> None:
            if args.quiet:
                return
            state = "unchanged" if entry is None else (
                f"done in {entry['seconds']:.1f} s" if entry["status"] == "ok"
                else f"failed: {entry['error']}")
            bar.console.print(f"  {name}: {state}", highlight=False, markup=False,
                              soft_wrap=True)

        run = survey(args.sources, out, options, progress, finished)
    try:
        written = write_reports(run.data, out)
    except OSError as exc:
        raise UsageError(f"cannot write the survey reports into {out}: "
                         f"{exc.strerror or exc}") from exc
    if not args.quiet:
        print_summary(run, console, written)
    return 0


def _run_table(args: argparse.Namespace) -> int:
    tablecli = importlib.import_module("msready.analyzer.tablecli")
    if args.action == "lookup":
        if not args.symbol:
            raise UsageError("table lookup needs a torch API, e.g. torch.nn.Conv2d")
        text = tablecli.explain(args.symbol, args.target)
        if text is None:
            raise UsageError(f"{args.symbol} is not in the API table")
        sys.stdout.write(text.rstrip("\n") + "\n")
        return 0
    sys.stdout.write(tablecli.render_table(args.format, args.target or "cpu"))
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    weights = importlib.import_module("msready.skeletons.weights")
    return int(weights.convert_checkpoint(Path(args.checkpoint), Path(args.output),
                                          Path(args.weight_map) if args.weight_map else None))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``msready`` command; returns the exit code. Run as the program
    (``argv`` None), the process ends right after: what the command built is frozen out
    of the cyclic garbage collector, whose last pass at exit would otherwise walk and
    free all of it (about a second after a large scan) only for the process to end."""
    code = _command(argv)
    if argv is None:
        gc.freeze()
    return code


def _command(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command == "scan":
            if args.jobs is not None and args.jobs < 1:
                raise UsageError("--jobs must be at least 1")
            _start_workers_early(args)  # before this process loads the rest of itself
        from rich.console import Console

        console = Console(stderr=False)
        if args.command == "scan":
            # The scan's result (millions of objects) stays out of the collector's passes
            # while the reports are rendered, not only while it is built.
            with few_collections():
                return _run_scan(args, console)
        if args.command == "survey":
            return _run_survey(args, console)
        if args.command == "table":
            return _run_table(args)
        if args.command == "rule":
            return _run_rule(args)
        return _run_convert(args)
    except (UsageError, SourceError) as exc:
        print(f"msready: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("msready: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in msready: one line, the traceback in a log file
        log = _write_crash_log()
        where = f"the traceback is in {log}" if log else "the traceback could not be saved"
        first = f"{type(exc).__name__}: {exc}".splitlines()[0]
        print(f"msready: internal error ({first}); {where}; please report it", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def _write_crash_log() -> str | None:
    """Write the exception being handled, with msready's version, to a new log file."""
    try:
        fd, path = tempfile.mkstemp(prefix="msready-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"msready {__version__}, Python {sys.version.split()[0]}\n")
            handle.write(f"command: {' '.join(sys.argv)}\n\n")
            traceback.print_exc(file=handle)
    except OSError:
        return None
    return path
