"""What to do first: blockers ranked by cost, findings grouped by cause and ordered by
severity x where the code runs, the files table sorted by cost, and findings a forward
reaches counted as such whatever their rule's scope."""

from __future__ import annotations

import json

from msready.analyzer.priorities import where_runs
from msready.analyzer.scan import scan_files
from msready.reports import json_report

GCN = '''\
import torch
import torch.nn as nn


class GraphConvolution(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n, m))

    def forward(self, x, adj):
        support = torch.mm(x, self.weight)
        return torch.spmm(adj, support)
'''

MIXED = {
    "model.py": '''\
import torch
import torch.nn as nn
from einops import rearrange
from . import _ext


class Head(nn.Module):
    def forward(self, x):
        keep = torch.nonzero(x)
        y = rearrange(x, "b c -> c b")
        return _ext.roi_align(y[keep])
''',
    "train.py": '''\
import torch
from einops import repeat


def step(model, x):
    x = x.cuda()
    x = x.cuda()
    return repeat(model(x), "b -> b 2")


def unused(x):
    return x.cuda()


step(None, None)
''',
}


def test_findings_inside_a_forward_count_as_reached_from_it() -> None:
    result = scan_files({"gae/layers.py": GCN})
    spmm = [f for f in result.findings if f.symbol == "torch.spmm"]
    # One verdict per place: the sparse rule names the replacement, so no MS101 beside it.
    assert {f.rule for f in spmm} == {"MS302"}
    assert all(f.trace == ("GraphConvolution.forward",) for f in spmm)
    assert result.score is not None
    hazards = next(p for p in result.score.parts if p.name == "hazards")
    assert "1 reached from a forward" in hazards.detail
    assert result.files_work[0].graph == 1
    assert {c.symbol: c.where for c in result.causes} == {
        "torch.spmm": "graph", "torch.zeros": "host"}  # __init__ runs on the host


def test_blockers_are_ranked_by_what_they_cost() -> None:
    result = scan_files(MIXED)
    kinds = [(b.kind, b.subject, b.count) for b in result.blockers]
    assert kinds == [
        ("dynamic-shape", "tensor[index]", 1),
        ("dynamic-shape", "torch.nonzero", 1),
        ("custom-op", "_ext", 1),
        ("third-party", "einops", 2),
    ]
    nonzero = next(b for b in result.blockers if b.subject == "torch.nonzero")
    cause = next(c for c in result.causes if c.id == nonzero.cause)
    assert (cause.rule, cause.where, cause.count) == ("MS201", "graph", 1)
    assert [(p.path, p.line) for p in nonzero.places] == [("model.py", 9)]


def test_one_cause_per_rule_and_symbol_most_urgent_first() -> None:
    result = scan_files(MIXED)
    cuda = [c for c in result.causes if c.symbol == "torch.Tensor.cuda" and c.rule == "MS601"]
    assert len(cuda) == 1 and cuda[0].count == 3 and cuda[0].where == "host"
    # ``unused`` is called by nothing: its place runs where msready cannot tell.
    runs = {f.location.line: where_runs(result.model, f) for f in cuda[0].findings}
    assert runs == {6: "host", 7: "host", 12: "unknown"}
    ranks = [(c.severity.value, c.where) for c in result.causes]
    weight = {"error": 3, "warning": 2, "info": 1}
    place = {"graph": 3, "host": 2, "unknown": 1}
    scores = [weight[s] * place[w] for s, w in ranks]
    assert scores == sorted(scores, reverse=True)
    assert sum(c.count for c in result.causes) == len(result.findings)


def test_files_table_is_sorted_by_cost_and_carried_in_json() -> None:
    result = scan_files(MIXED)
    costs = [row.cost for row in result.files_work]
    assert costs == sorted(costs, reverse=True) and len(costs) == 2
    data = json.loads(json_report.render(result))
    assert [row["path"] for row in data["files"]] == [row.path for row in result.files_work]
    assert data["start_here"][0]["kind"] == "dynamic-shape"
    assert data["causes"][0]["fingerprints"][0] in {f["fingerprint"] for f in data["findings"]}


HEADER_IMPORTS = "import torch\nimport torch.nn as nn"


def test_every_kind_of_blocker_shows_in_the_first_lines() -> None:
    source = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def forward(self, x):
        a = torch.corrcoef(x) + torch.as_strided(x, (2,), (1,)) + torch.cumulative_trapezoid(x)
        b = x.clone() + torch.corrcoef(x) + torch.frexp(x)[0]
        keep = torch.nonzero(a + b)
        return keep
'''
    result = scan_files({"net.py": source})
    kinds = [b.kind for b in result.blockers]
    # Several APIs without a counterpart, one dynamic shape: each kind shows its four
    # largest first, so the dynamic shape is at most fifth.
    assert kinds[:4] == ["no-counterpart"] * 4 and "dynamic-shape" in kinds[4:5]
    assert result.blockers[0].subject == "torch.corrcoef"  # two places: the largest first


def test_an_api_the_cells_compose_is_no_blocker() -> None:
    # torch.einsum and torch.roll have no MindSpore form on CPU, but the starter Cells
    # write them from MindSpore primitives: a workaround exists, so neither blocks
    source = (HEADER_IMPORTS + "\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
              "        return torch.einsum('ij->ji', x) + torch.roll(x, 1)"
              " + torch.corrcoef(x)\n")
    result = scan_files({"net.py": source})
    assert [(b.kind, b.subject) for b in result.blockers] == [
        ("no-counterpart", "torch.corrcoef")]
