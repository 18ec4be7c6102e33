"""After a change, a file whose translation asked nothing the change answers differently
is not translated again: its kept code is reused. A file that asked about what changed
(a name it imports is no longer in the other file) is translated again, and both come out
as a translation without the cache would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons import generate
from msready.skeletons.generate import build_skeletons
from msready.skeletons.model_reads import ModelReads
from msready.skeletons.translate import FileTranslation

MakeRepo = Callable[[dict[str, str | bytes]], Path]

BLOCK = """\
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""

# ``Block`` renamed away: ``Net`` still imports it, and its translation asked what the
# name is in ``pkg.blocks``.
RENAMED = BLOCK.replace("class Block(", "class Layer(")

NET = """\
import torch
from torch import nn
from .blocks import Block

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(self.block(x)).view(-1)
"""

OTHER = """\
from torch import nn

class Double(nn.Module):
    def forward(self, x):
        return x * 2
"""


def _generate(root: Path, out: Path, cache: Path, keep: bool = True) -> dict[str, str]:
    """The generated files, scanning and generating with the cache in ``cache`` (Cells
    are written, not run); ``keep=False`` translates without the translation cache."""
    result = scan(str(root), options=ScanOptions(jobs=1, cache=True, cache_dir=cache))
    build_skeletons(result, out, run=False, compare_torch=False, cache=keep,
                    cache_dir=cache)
    return {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(out.rglob("*.py"))}


@pytest.fixture
def translated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the files translated (not reused) from here on."""
    paths: list[str] = []
    real = generate.translate_file

    def counting(parsed: Any, file: Any, model: ModelReads, *args: Any) -> FileTranslation:
        paths.append(file.path)
        return real(parsed, file, model, *args)

    monkeypatch.setattr(generate, "translate_file", counting)
    return paths


def test_a_file_added_elsewhere_translates_nothing_again(
        make_repo: MakeRepo, tmp_path: Path, translated: list[str]) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET})
    cache = tmp_path / "cache"
    _generate(root, tmp_path / "first", cache)
    assert sorted(translated) == ["pkg/__init__.py", "pkg/blocks.py", "pkg/net.py"]
    (root / "pkg" / "added.py").write_text("def added():\n    return 1\n", encoding="utf-8")
    translated.clear()
    reused = _generate(root, tmp_path / "second", cache)
    assert translated == []
    assert reused == _generate(root, tmp_path / "fresh", tmp_path / "other", keep=False)
    assert sorted(translated) == ["pkg/__init__.py", "pkg/blocks.py", "pkg/net.py"]


def test_a_file_that_asked_about_a_changed_name_is_translated_again(
        make_repo: MakeRepo, tmp_path: Path, translated: list[str]) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET,
                      "pkg/other.py": OTHER})
    cache = tmp_path / "cache"
    first = _generate(root, tmp_path / "first", cache)
    assert "class Block(nn.Cell)" in first["pkg/blocks.py"] and "pkg/other.py" in first
    (root / "pkg" / "blocks.py").write_text(RENAMED, encoding="utf-8")
    translated.clear()
    second = _generate(root, tmp_path / "second", cache)
    # net.py asked what ``Block`` is there: the answer changed; other.py and the
    # package's __init__.py asked nothing about it
    assert sorted(translated) == ["pkg/blocks.py", "pkg/net.py"]
    assert second == _generate(root, tmp_path / "fresh", tmp_path / "other", keep=False)
    assert "from .blocks import Block" in first["pkg/net.py"]
    assert "Block = Unavailable" in second["pkg/net.py"]


def test_a_translation_notes_each_question_once_with_its_answer(
        make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/net.py": NET})
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False))
    reads = ModelReads(result.model)
    assert reads.is_module_class("pkg.blocks.Block")
    assert reads.is_module_class("pkg.blocks.Block")
    assert not reads.is_repository_top("numpy")
    assert reads.reads == [("is_module_class", ("pkg.blocks.Block",), "True"),
                           ("is_repository_top", ("numpy",), "False")]
    assert ModelReads(result.model).same_answers(reads.reads)
    assert not ModelReads(result.model).same_answers(
        [("is_module_class", ("pkg.blocks.Block",), "False")])
    assert not ModelReads(result.model).same_answers([("_noted", (), "None")])
