"""Files that cannot be read or parsed become parse-error findings with a location, and
the rest of the scan completes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.findings import Category
from msready.analyzer.scan import ScanOptions, scan

MakeRepo = Callable[[dict[str, str | bytes]], Path]
GOOD = "import torch\ntorch.zeros(1)\n"


def scan_with(make_repo: MakeRepo, bad: str | bytes, name: str = "bad.py"):  # type: ignore[no-untyped-def]
    result = scan(str(make_repo({name: bad, "good.py": GOOD})),
                  options=ScanOptions(jobs=1, cache=False))
    assert [a.symbol for a in result.apis] == ["torch.zeros"], "the good file was lost"
    return result


@pytest.mark.parametrize(
    ("content", "line", "column", "words"),
    [
        ('print "hello"\n', 1, 1, "syntax error"),
        ("x = 1\nexec 'code'\n", 2, 1, "syntax error"),
        (b"x = 1\n# caf\xe9\ny = '\xff'\n", 2, 6, "cannot decode byte 0xe9"),
        (b"\x7fELF\x02\x01\x00\x00binary", 1, 7, "binary"),
        (b"# -*- coding: klingon -*-\nx = 1\n", 1, 1, "encoding"),
        ("x = " + "(" * 400 + "1" + ")" * 400 + "\n", 1, 1, "nested"),
        ("def f():\n" + "".join("    " * (i + 1) + "if x:\n" for i in range(400))
         + "    " * 401 + "pass\n", 1, 1, "indentation"),
    ],
    ids=["python2-print", "python2-exec", "latin1-undeclared", "binary", "bad-codec",
         "400-deep-brackets", "400-deep-blocks"],
)
def test_unparsable_files_become_located_findings(
        make_repo: MakeRepo, content: str | bytes, line: int, column: int, words: str) -> None:
    result = scan_with(make_repo, content)
    errors = [f for f in result.findings if f.category is Category.PARSE_ERROR]
    assert len(errors) == 1
    error = errors[0]
    assert error.location.path == "bad.py"
    assert words in error.message
    assert error.location.line >= 1 and error.location.column >= 1
    if words not in ("nested", "indentation"):
        assert (error.location.line, error.location.column) == (line, column)
    assert result.source.files_failed == 1


@pytest.mark.parametrize(
    "content",
    [
        "\ufeffimport torch\ntorch.ones(1)\n".encode(),
        b"import torch\r\ntorch.ones(1)\r\n",
        b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\ntorch.ones(1)\n",
        "# coding: utf-8\nimport torch\ns = 'é'\ntorch.ones(1)\n".encode(),
    ],
    ids=["bom", "crlf", "pep263-latin1", "pep263-utf8"],
)
def test_bom_crlf_and_declared_encodings_are_honoured(make_repo: MakeRepo, content: bytes) -> None:
    result = scan(str(make_repo({"m.py": content})), options=ScanOptions(jobs=1, cache=False))
    assert not result.findings
    locations = result.apis[0].locations
    assert result.apis[0].symbol == "torch.ones"
    assert (locations[0].line, locations[0].column) == (content.count(b"\n"), 1)


def test_huge_line_and_long_file_are_scanned(make_repo: MakeRepo) -> None:
    wide = "import torch\nx = [" + ", ".join(str(i) for i in range(200_000)) + "]\ntorch.ones(1)\n"
    result = scan(str(make_repo({"wide.py": wide})), options=ScanOptions(jobs=1, cache=False))
    assert result.apis[0].locations[0].line == 3


def test_a_file_over_the_size_limit_is_reported_not_read(make_repo: MakeRepo) -> None:
    result = scan_with(make_repo, "x = 1\n" * 2_000_000)
    assert "limit" in result.findings[0].message


def test_empty_and_comment_only_files_are_fine(make_repo: MakeRepo) -> None:
    result = scan(str(make_repo({"a.py": "", "b.py": "# nothing\n", "c.py": GOOD})),
                  options=ScanOptions(jobs=1, cache=False))
    assert not result.findings and result.source.files_failed == 0
