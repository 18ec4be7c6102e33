"""Sources: folders (with the folders a scan must skip and the links it must not follow),
single files, and git URLs cloned at a ref."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.scan import ScanOptions, scan
from msready.analyzer.source import SourceError, discover, has_sources, is_git_url

MakeRepo = Callable[[dict[str, str]], Path]


def rels(root: Path) -> list[str]:
    return [f.rel for f in discover(root).files]


def test_walk_skips_vendored_hidden_and_build_folders(make_repo: MakeRepo) -> None:
    root = make_repo({
        "a.py": "", "pkg/b.py": "", "nb.ipynb": "{}", "notes.txt": "",
        ".git/hooks/x.py": "", ".hidden/c.py": "", "venv/lib/d.py": "",
        "myenv/pyvenv.cfg": "", "myenv/lib/e.py": "", "lib/site-packages/f.py": "",
        "build/g.py": "", "dist/h.py": "", "node_modules/i.py": "", "x.egg-info/j.py": "",
    })
    assert rels(root) == ["a.py", "nb.ipynb", "pkg/b.py"]


def test_counting_sources_early_skips_what_the_walk_skips(make_repo: MakeRepo) -> None:
    # The command decides whether to start worker processes before the scan lists the
    # files: the count agrees with the walk (3 sources here, the vendored ones not).
    root = make_repo({
        "a.py": "", "pkg/b.py": "", "nb.ipynb": "{}", "notes.txt": "",
        ".git/hooks/x.py": "", "venv/lib/d.py": "", "build/g.py": "",
    })
    assert has_sources(root, 3)
    assert not has_sources(root, 4)
    assert not has_sources(root / "missing", 1)


def test_a_folder_named_like_a_python_file_is_walked_not_read(make_repo: MakeRepo) -> None:
    root = make_repo({"x.py/inner.py": "import torch\n"})
    assert rels(root) == ["x.py/inner.py"]


def test_symlink_loops_and_links_out_of_the_root_are_not_followed(
        make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"pkg/a.py": ""})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    os.symlink(root / "pkg", root / "pkg" / "loop")
    os.symlink(root, root / "pkg" / "up")
    os.symlink(outside, root / "out")
    os.symlink(root / "missing.py", root / "dangling.py")
    os.symlink(root / "pkg" / "a.py", root / "alias.py")
    source = discover(root)
    assert [f.rel for f in source.files] == ["alias.py", "pkg/a.py"]
    reasons = dict(source.skipped)
    assert "out" in reasons and "dangling.py" in reasons


def test_single_file_and_missing_path(make_repo: MakeRepo) -> None:
    root = make_repo({"one.py": "import torch\ntorch.zeros(1)\n"})
    result = scan(str(root / "one.py"), options=ScanOptions(jobs=1, cache=False))
    assert result.source.files_scanned == 1
    assert result.apis[0].locations[0].path == "one.py"
    with pytest.raises(SourceError, match="no such file"):
        scan(str(root / "nope"))
    (root / "data.txt").write_text("x")
    with pytest.raises(SourceError, match=r"not a \.py or \.ipynb"):
        scan(str(root / "data.txt"))


@pytest.mark.parametrize("url", ["https://github.com/a/b", "git@github.com:a/b.git",
                                 "file:///tmp/x.git", "ssh://git@host/x"])
def test_git_urls_are_recognised(url: str) -> None:
    assert is_git_url(url)


def _git(*args: str, cwd: Path) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def bare_repo(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A bare repository with two commits, a branch and a tag, reached by file:// URL."""
    work = tmp_path / "work"
    work.mkdir()
    _git("init", "-q", "-b", "main", cwd=work)
    (work / "model.py").write_text("import torch\ntorch.zeros(1)\n")
    _git("add", ".", cwd=work)
    _git("commit", "-qm", "first", cwd=work)
    first = _git("rev-parse", "HEAD", cwd=work)
    _git("tag", "v1", cwd=work)
    (work / "model.py").write_text("import torch\ntorch.ones(1)\n")
    _git("commit", "-qam", "second", cwd=work)
    second = _git("rev-parse", "HEAD", cwd=work)
    _git("checkout", "-qb", "feature", cwd=work)
    (work / "model.py").write_text("import torch\ntorch.eye(1)\n")
    _git("commit", "-qam", "third", cwd=work)
    third = _git("rev-parse", "HEAD", cwd=work)
    _git("checkout", "-q", "main", cwd=work)
    bare = tmp_path / "origin.git"
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    return bare.as_uri(), {"v1": first, "main": second, "feature": third}


@pytest.mark.parametrize(("ref", "api"), [(None, "torch.ones"), ("v1", "torch.zeros"),
                                          ("feature", "torch.eye"),
                                          ("first-commit", "torch.zeros")])
def test_git_url_is_cloned_at_the_ref_and_the_commit_recorded(
        bare_repo: tuple[str, dict[str, str]], ref: str | None, api: str) -> None:
    url, commits = bare_repo
    if ref == "first-commit":
        ref = commits["v1"]
    result = scan(url, ref, ScanOptions(jobs=1, cache=False))
    assert [a.symbol for a in result.apis] == [api]
    expected = {None: commits["main"], "v1": commits["v1"], "feature": commits["feature"]}
    assert result.source.commit == expected.get(ref, commits["v1"])
    assert result.source.ref == ref


def test_bad_url_and_bad_ref_are_source_errors(bare_repo: tuple[str, dict[str, str]],
                                               tmp_path: Path) -> None:
    url, _ = bare_repo
    with pytest.raises(SourceError, match="cannot clone"):
        scan((tmp_path / "nowhere.git").as_uri())
    with pytest.raises(SourceError):
        scan(url, "no-such-branch")
