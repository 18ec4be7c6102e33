"""Whole-repository fixture for the sparse rules (MS3xx).

``tests/fixtures/sparse`` is a small GCN: a sparse normalised adjacency built in a helper,
passed through ``self.propagate`` and into ``GraphConv.forward``, a sparse embedding and
``SparseAdam``, next to scipy and dense lookalikes. Lines marked ``# expect: MS3xx`` must
be reported, nothing else of the dynamic-shape or sparse families.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from msready.analyzer.findings import Category, Finding
from msready.analyzer.scan import ScanOptions, ScanResult, scan, scan_files
from msready.rules.testing import expected_findings

FIXTURES = Path(__file__).parent / "fixtures" / "sparse"


def sparse_findings(result: ScanResult) -> Iterator[Finding]:
    """The scan's sparse findings."""
    return (f for f in result.findings if f.rule.startswith("MS3"))


@pytest.fixture(scope="module")
def result() -> ScanResult:
    return scan(str(FIXTURES), options=ScanOptions(jobs=1, cache=False))


def test_fixture_findings_are_exactly_the_expected_ones(result: ScanResult) -> None:
    got = {(f.location.path, f.location.line, f.rule)
           for f in result.findings if f.rule.startswith(("MS2", "MS3"))}
    expected = expected_findings(FIXTURES)
    assert not expected - got, f"missing: {sorted(expected - got)}"
    assert not got - expected, f"unexpected: {sorted(got - expected)}"


def test_no_rule_crashed(result: ScanResult) -> None:
    assert not [f for f in result.findings if f.rule in ("MS000", "MS001")]


def test_findings_say_which_mindspore_form_or_dense(result: ScanResult) -> None:
    for finding in sparse_findings(result):
        assert finding.category is Category.SPARSE
        # Sparse hazards are reported wherever they are; inside a forward with the path.
        assert not finding.trace or finding.trace[0].endswith(".forward"), finding
        text = finding.suggestion
        assert "mindspore." in text or "ops." in text, finding
        if finding.rule in ("MS301", "MS302", "MS306", "MS307"):
            assert "dense" in text and "gradient accumulation" in text, finding


def test_coo_constructor_names_cootensor_and_the_index_layout(result: ScanResult) -> None:
    coo = [f for f in result.findings
           if f.rule == "MS301" and f.symbol == "torch.sparse_coo_tensor"]
    assert len(coo) == 2
    assert all("mindspore.COOTensor" in f.suggestion and "(nnz, 2)" in f.suggestion
               for f in coo)
    csr = [f for f in result.findings if f.rule == "MS301" and f.symbol.endswith("csr")]
    assert len(csr) == 1 and "mindspore.CSRTensor" in csr[0].suggestion


def test_sparse_argument_names_the_parameter_and_the_caller(result: ScanResult) -> None:
    (finding,) = [f for f in result.findings if f.rule == "MS307"]
    assert "`adj`" in finding.message and "GCN.forward" in finding.message
    assert finding.symbol == "torch.mm"


CASES = [
    # CSC has no MindSpore format: the suggestion says to convert or go dense
    ("def f(x):\n    return x.to_sparse_csc()\n", {(5, "MS301")}),
    # layout= picks the format of to_sparse
    ("def f(x):\n    return x.to_sparse(layout=torch.sparse_csr)\n", {(5, "MS301")}),
    # a sparse tensor stays sparse through .coalesce() and .to(device)
    ("def f(i, v, x, d):\n    a = torch.sparse_coo_tensor(i, v).coalesce().to(d)\n"
     "    return a.matmul(x)\n", {(5, "MS301"), (5, "MS303"), (6, "MS302")}),
    # .to_dense() gives a dense tensor: products after it are fine
    ("def f(i, v, x):\n    a = torch.sparse_coo_tensor(i, v).to_dense()\n"
     "    return a @ x\n", {(5, "MS301"), (5, "MS303")}),
    # a same-file helper whose argument is dense stays quiet
    ("def prop(a, x):\n    return a @ x\n\ndef run(x):\n    return prop(x.t(), x)\n", set()),
    # keyword arguments reach the parameter too
    ("def prop(x, adj=None):\n    return torch.mm(adj, x)\n\ndef run(x):\n"
     "    return prop(x, adj=x.to_sparse())\n", {(5, "MS307"), (8, "MS301")}),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_small_cases(body: str, expected: set[tuple[int, str]]) -> None:
    result = scan_files({"example.py": "import torch\n\n\n" + body}, target="cpu")
    got = {(f.location.line, f.rule) for f in sparse_findings(result)}
    assert got == expected
