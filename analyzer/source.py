"""Where the code comes from: a folder, one ``.py`` / ``.ipynb`` file, or a git URL.

Folder walks never leave the root through a symlink and never go round a loop; a git URL
is cloned shallowly with the ``git`` command at the requested ref, and the commit scanned
is recorded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_SUFFIXES = (".py", ".ipynb")

# Folders that hold no code of the repository's own.
SKIPPED_DIRS = frozenset(
    {
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        "site-packages",
        "dist-packages",
        "venv",
        "env",
        "virtualenv",
    }
)

_URL_RE = re.compile(r"^(https?://|git@[^:]+:|ssh://|git://|file://)")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
GIT_TIMEOUT_S = 600


class SourceError(Exception):
    """A source that cannot be scanned at all; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file to scan: its absolute path and its repository-relative posix path."""

    path: Path
    rel: str

    @property
    def is_notebook(self) -> bool:
        """True for Jupyter notebooks."""
        return self.rel.endswith(".ipynb")


@dataclass(slots=True)
class Source:
    """The files of one scan and where they came from."""

    input: str
    root: Path
    files: list[SourceFile]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ref: str | None = None
    commit: str | None = None


def is_git_url(spec: str) -> bool:
    """True when ``spec`` names a remote (or ``file://``) git repository."""
    return bool(_URL_RE.match(spec))


@contextmanager
def open_source(spec: str, ref: str | None = None) -> Iterator[Source]:
    """Yield the :class:`Source` for ``spec``; a clone lives only inside the ``with``."""
    if is_git_url(spec):
        with _cloned(spec, spec, ref) as source:
            yield source
        return
    path = Path(spec)
    if ref is not None and not (path / ".git").exists():
        raise SourceError(f"--ref needs a git URL or a git checkout, got {spec!r}")
    if not path.exists():
        raise SourceError(f"no such file or folder: {spec}")
    if path.is_file():
        if not path.name.endswith(SOURCE_SUFFIXES):
            raise SourceError(f"not a .py or .ipynb file: {spec}")
        resolved = path.resolve()
        yield Source(spec, resolved.parent, [SourceFile(resolved, resolved.name)])
        return
    if ref is not None:  # a local checkout at another ref: clone it at that ref
        with _cloned(path.resolve().as_uri(), spec, ref) as source:
            yield source
        return
    source = discover(path)
    source.input = spec
    source.commit = _head_commit(path)
    yield source


@contextmanager
def _cloned(url: str, spec: str, ref: str | None) -> Iterator[Source]:
    """A temporary clone of ``url`` at ``ref``, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="msready-clone-"))
    try:
        checkout = tmp / "repo"
        commit = clone(url, ref, checkout)
        source = discover(checkout)
        source.input, source.ref, source.commit = spec, ref, commit
        yield source
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def discover(root: Path) -> Source:
    """Every ``.py`` and ``.ipynb`` file under ``root``, in a stable order.

    Hidden folders, virtual environments, installed packages and build output are
    skipped. Symlinks are followed only while they stay inside the root, and a folder is
    never entered twice, so a link loop ends the walk of that branch.
    """
    real_root = root.resolve()
    files: list[SourceFile] = []
    skipped: list[tuple[str, str]] = []
    seen_dirs: set[tuple[int, int]] = set()
    stack: list[Path] = [real_root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
        except OSError as exc:
            skipped.append((_rel(folder, real_root), f"cannot read folder: {exc.strerror}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            continue
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append((_rel(folder, real_root), f"cannot list folder: {exc.strerror}"))
            continue
        subdirs: list[Path] = []
        for entry in entries:
            entry_path = Path(entry.path)
            rel = _rel(entry_path, real_root)
            if entry.is_symlink():
                target = _inside_root(entry_path, real_root)
                if target is None:
                    if entry.name.endswith(SOURCE_SUFFIXES) or _is_dir(entry_path):
                        skipped.append((rel, "symlink points outside the repository or nowhere"))
                    continue
            if _is_dir(entry_path):
                if not _skip_dir(entry_path):
                    subdirs.append(entry_path)
            elif entry.name.endswith(SOURCE_SUFFIXES) and _is_file(entry_path):
                files.append(SourceFile(entry_path, rel))
        stack.extend(reversed(subdirs))
    files.sort(key=lambda f: f.rel)
    return Source(str(root), real_root, files, skipped)


def has_sources(root: Path, count: int) -> bool:
    """True when the folder holds at least ``count`` source files (symbolic links not
    followed): a walk that stops as soon as it has seen that many, for deciding early,
    before the scan lists the files, whether it will need worker processes."""
    stack = [root]
    seen = 0
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not _skip_dir(Path(entry.path)):
                        stack.append(Path(entry.path))
                elif entry.name.endswith(SOURCE_SUFFIXES):
                    seen += 1
                    if seen >= count:
                        return True
            except OSError:
                continue
    return False


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _inside_root(link: Path, root: Path) -> Path | None:
    """The link's target when it exists and lies inside ``root``, else None."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if target == root or root in target.parents:
        return target
    return None


def _skip_dir(path: Path) -> bool:
    name = path.name
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    return (path / "pyvenv.cfg").exists()


def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true")
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise SourceError("the git command is not installed; it is needed for git URLs") from exc
    except subprocess.TimeoutExpired as exc:
        raise SourceError(f"git {args[0]} did not finish within {GIT_TIMEOUT_S} s") from exc


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    return lines[-1] if lines else f"git exited with status {proc.returncode}"


def clone(url: str, ref: str | None, dest: Path) -> str:
    """Clone ``url`` at ``ref`` into ``dest`` as shallowly as the ref allows.

    Branches and tags are cloned with depth 1; a commit id is fetched alone when the
    server allows it, otherwise from a full clone. Returns the commit checked out.
    """
    if ref is None or not _SHA_RE.match(ref):
        args = ["clone", "--depth", "1", "--quiet", "--no-tags"]
        if ref is not None:
            args += ["--branch", ref]
        proc = _git([*args, url, str(dest)])
        if proc.returncode != 0 and ref is None:
            raise SourceError(f"cannot clone {url}: {_last_line(proc)}")
        if proc.returncode == 0:
            return _head_commit(dest) or ""
        shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    for args in (["init", "--quiet"], ["remote", "add", "origin", url]):
        _git(args, cwd=dest)
    assert ref is not None
    fetched = _git(["fetch", "--quiet", "--depth", "1", "origin", ref], cwd=dest)
    if fetched.returncode != 0:
        fetched = _git(["fetch", "--quiet", "origin"], cwd=dest)
        if fetched.returncode != 0:
            raise SourceError(f"cannot clone {url}: {_last_line(fetched)}")
        target = ref
    else:
        target = "FETCH_HEAD"
    checkout = _git(["checkout", "--quiet", "--detach", target], cwd=dest)
    if checkout.returncode != 0:
        raise SourceError(f"no branch, tag or commit {ref!r} in {url}")
    return _head_commit(dest) or ""


def _head_commit(path: Path) -> str | None:
    if not (path / ".git").exists():
        return None
    try:
        proc = _git(["rev-parse", "HEAD"], cwd=path)
    except SourceError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None
