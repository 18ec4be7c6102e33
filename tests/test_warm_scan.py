"""A warm scan of unchanged files takes its whole result from the cache, and is the same
result a cold scan gives; what the cache key does not cover (the config files the code
loads) is checked again, and the facts and the model are still there when asked for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from msready.analyzer.result import ScanResult
from msready.analyzer.scan import ScanOptions, scan

MakeRepo = Callable[[dict[str, str | bytes]], Path]

TRAIN = """\
import argparse
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x[x > 0])

parser = argparse.ArgumentParser()
parser.add_argument("--config", default="train.yaml")
parser.add_argument("--epochs", type=int, default=90)
"""


def _scan(root: Path, cache: Path) -> ScanResult:
    return scan(str(root), options=ScanOptions(jobs=1, cache=True, cache_dir=cache))


def _summary(result: ScanResult) -> tuple[object, ...]:
    return (result.findings, result.suppressed, [(a.symbol, a.locations) for a in result.apis],
            result.checklist, result.score, result.causes, result.blockers, result.files_work,
            result.rule_docs, result.config_files, result.source.lines,
            result.source.files_scanned)


def test_warm_scan_gives_the_cold_result(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"train.py": TRAIN, "train.yaml": "lr: 0.1\n"})
    cold = _scan(root, tmp_path / "cache")
    warm = _scan(root, tmp_path / "cache")
    assert _summary(warm) == _summary(cold)
    assert any(f.rule_name == "boolean-mask-index" for f in warm.findings)
    assert "MS204" in warm.rule_docs  # the HTML report documents the rules it shows
    # The facts and the model are loaded when something asks for them, not before.
    assert warm._facts is None
    assert [f.path for f in warm.files] == ["train.py"]
    assert "train.Net" in warm.model.module_classes


def test_a_changed_config_file_is_read_again(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"train.py": TRAIN, "train.yaml": "lr: 0.1\n"})
    _scan(root, tmp_path / "cache")
    (root / "train.yaml").write_text("lr: 0.5\n", encoding="utf-8")
    warm = _scan(root, tmp_path / "cache")
    assert [(v.name, v.value) for v in warm.config_files] == [("lr", "0.5")]


def test_a_changed_msready_table_changes_the_findings(make_repo: MakeRepo,
                                                      tmp_path: Path) -> None:
    root = make_repo({"train.py": TRAIN})
    before = _scan(root, tmp_path / "cache")
    assert any(f.category.value == "dynamic-shape" for f in before.findings)
    (root / "pyproject.toml").write_text('[tool.msready]\ndisable = ["dynamic-shape"]\n',
                                         encoding="utf-8")
    after = _scan(root, tmp_path / "cache")
    assert not any(f.category.value == "dynamic-shape" for f in after.findings)
    assert any(f.category.value == "dynamic-shape" for f in after.suppressed)
