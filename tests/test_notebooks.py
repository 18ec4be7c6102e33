"""Notebooks: code cells are scanned as one module, IPython syntax does not break parsing,
and every location names the cell and the line inside it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from msready.analyzer.findings import Category
from msready.analyzer.scan import ScanOptions, scan

MakeRepo = Callable[[dict[str, str | bytes]], Path]


def notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True),
                   **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                  for kind, src in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })


def scan_nb(make_repo: MakeRepo, text: str | bytes):  # type: ignore[no-untyped-def]
    return scan(str(make_repo({"nb.ipynb": text})), options=ScanOptions(jobs=1, cache=False))


def test_cells_share_imports_and_locations_name_the_cell(make_repo: MakeRepo) -> None:
    result = scan_nb(make_repo, notebook(
        ("markdown", "# title"),
        ("code", "%matplotlib inline\nimport torch\n!pip install x\nfiles = !ls\n"),
        ("code", "%%time\nx = torch.zeros(3)\ny = x.nonzero()\ntorch.nonzero?\n"),
        ("code", "%%bash\necho this is not python\n"),
        ("code", "for i in range(2):\n    !echo $i\n    z = torch.ones(i)\n"),
    ))
    assert not [f for f in result.findings if f.category is Category.PARSE_ERROR]
    where = {a.symbol: (a.locations[0].path, a.locations[0].cell, a.locations[0].line,
                        a.locations[0].column) for a in result.apis}
    # Cells count among code cells: the markdown cell is not numbered.
    assert where["torch.zeros"] == ("nb.ipynb", 2, 2, 5)
    assert where["torch.Tensor.nonzero"] == ("nb.ipynb", 2, 3, 5)
    assert where["torch.ones"] == ("nb.ipynb", 4, 3, 9)


def test_a_broken_cell_is_a_finding_and_the_other_cells_are_scanned(make_repo: MakeRepo) -> None:
    result = scan_nb(make_repo, notebook(
        ("code", "import torch\n"),
        ("code", "print 'python 2'\n"),
        ("code", "torch.eye(2)\n"),
    ))
    errors = [f for f in result.findings if f.category is Category.PARSE_ERROR]
    assert [(e.location.path, e.location.cell, e.location.line) for e in errors] == [
        ("nb.ipynb", 2, 1)]
    assert [a.symbol for a in result.apis] == ["torch.eye"]


def test_a_notebook_that_is_not_json_is_a_finding(make_repo: MakeRepo) -> None:
    files = {"nb.ipynb": "{not json", "ok.py": "import torch\ntorch.eye(1)\n"}
    result = scan(str(make_repo(files)),
                  options=ScanOptions(jobs=1, cache=False))
    errors = [f for f in result.findings if f.category is Category.PARSE_ERROR]
    assert [e.location.path for e in errors] == ["nb.ipynb"]
    assert "notebook" in errors[0].message
    assert [a.symbol for a in result.apis] == ["torch.eye"]


def test_a_notebook_with_odd_cells_is_tolerated(make_repo: MakeRepo) -> None:
    text = json.dumps({"cells": [{"cell_type": "code", "source": "import torch\ntorch.eye(1)"},
                                 "not a cell", {"cell_type": "code"}],
                       "nbformat": 4})
    result = scan_nb(make_repo, text)
    assert [a.symbol for a in result.apis] == ["torch.eye"]
