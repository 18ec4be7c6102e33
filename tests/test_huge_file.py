"""A file far beyond normal size is skipped with a finding that says why; the rest of the
scan goes on. The limits are checked on the text, before the file is parsed."""

from __future__ import annotations

from pathlib import Path

from msready.analyzer.parse import MAX_FILE_LINES, MAX_FILE_TOKENS
from msready.analyzer.scan import ScanOptions, scan

CONV = "import torch\n\nconv = torch.nn.Conv2d(3, 8, 3)\n"


def _scan(root: Path, files: dict[str, str]) -> list[tuple[str, str, int, str]]:
    for rel, text in files.items():
        (root / rel).write_text(text)
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False))
    return [(f.location.path, f.rule, f.location.line, f.message) for f in result.findings]


def test_one_function_of_200k_statements_is_skipped_and_the_scan_goes_on(tmp_path: Path) -> None:
    huge = "import torch\n\ndef f(x):\n" + "".join(
        f"    y{i} = torch.nn.Conv2d(3, 8, 3)(x) + {i}\n" for i in range(200_000))

    findings = _scan(tmp_path, {"huge.py": huge, "small.py": CONV})

    skipped = [f for f in findings if f[0] == "huge.py"]
    assert [(path, rule, line) for path, rule, line, _ in skipped] == [("huge.py", "MS000", 1)]
    assert skipped[0][3] == (
        "This file was skipped as far beyond normal size: it has 200,004 lines, over "
        f"msready's limit of {MAX_FILE_LINES:,} lines per file, which would take minutes and "
        "gigabytes to analyse.")
    assert {(path, line) for path, _, line, _ in findings if path == "small.py"} == {
        ("small.py", 3)}


def test_a_few_lines_with_too_many_tokens_are_skipped(tmp_path: Path) -> None:
    data = "import torch\nx = [" + ", ".join("1" for _ in range(MAX_FILE_TOKENS // 2 + 1)) + "]\n"

    findings = _scan(tmp_path, {"table.py": data, "small.py": CONV})

    assert [m for path, _, _, m in findings if path == "table.py"] == [
        "This file was skipped as far beyond normal size: it has more than "
        f"{MAX_FILE_TOKENS:,} tokens (names, numbers, operators) per file, which would take "
        "minutes and gigabytes to analyse."]
    assert any(path == "small.py" for path, _, _, _ in findings)
