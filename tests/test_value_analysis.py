"""The value analysis, by example: each kind of value and each boundary it crosses
(helper returns, lists, parameters, attributes, constructor arguments, argparse defaults),
and where code runs (graph, host, unknown). Every example names the exact line a rule must
report, or says that nothing may be reported."""

from __future__ import annotations

import pytest

from msready.analyzer.findings import Finding, Severity
from msready.analyzer.scan import ScanResult, scan_files
from msready.analyzer.valueflow import ValueAnalysis
from msready.analyzer.values import Kind, Truth
from msready.skeletons.constructors import ConstructorFinder

HEAD = "import torch\nimport torch.nn as nn\n\n"


def scan(source: str, **more: str) -> ScanResult:
    return scan_files({"model.py": HEAD + source, **more})


def found(result: ScanResult, rule: str) -> list[tuple[str, int]]:
    return [(f.location.path, f.location.line) for f in result.findings if f.rule == rule]


def only(result: ScanResult, rule: str) -> Finding:
    [finding] = [f for f in result.findings if f.rule == rule]
    return finding


# ----- values that cross a function boundary ------------------------------------------------

def test_a_mask_returned_in_a_tuple_collected_in_a_list_and_joined_with_cat() -> None:
    result = scan(
        "def split(scores):\n"                        # 4
        "    keep = scores > 0.5\n"
        "    return keep, scores.sum()\n"
        "\n"
        "class Head(nn.Module):\n"                    # 8
        "    def forward(self, preds):\n"
        "        masks = []\n"
        "        for p in preds:\n"
        "            keep, _ = split(p)\n"
        "            masks.append(keep)\n"
        "        joined = torch.cat(masks)\n"
        "        return preds[joined]\n")             # 15
    assert found(result, "MS204") == [("model.py", 15)]
    assert "built in another function" in only(result, "MS204").message


def test_int_of_a_tensor_passed_as_an_argument_bounds_a_slice() -> None:
    result = scan(
        "def crop(boxes, n):\n"                       # 4
        "    return boxes[:n]\n"                       # 5
        "\n"
        "class Net(nn.Module):\n"
        "    def forward(self, boxes, counts):\n"
        "        return crop(boxes, int(counts[0]))\n")
    assert found(result, "MS205") == [("model.py", 5)]
    assert only(result, "MS205").trace == ("Net.forward", "crop")


def test_a_shape_passed_as_an_argument_stays_quiet() -> None:
    result = scan(
        "def crop(boxes, n):\n"
        "    return boxes[:n]\n"
        "\n"
        "class Net(nn.Module):\n"
        "    def forward(self, boxes):\n"
        "        return crop(boxes, boxes.size(0) // 2)\n")
    assert found(result, "MS205") == []


def test_static_shapes_are_not_dynamic() -> None:
    result = scan(
        "class Net(nn.Module):\n"
        "    def __init__(self, k):\n"
        "        super().__init__()\n"
        "        self.k = k\n"
        "\n"
        "    def forward(self, x, t):\n"
        "        y = x[: x.size(0)]\n"
        "        top = torch.topk(y, k=min(self.k, x.size(-1)))\n"
        "        if t.size(1) == 3:\n"
        "            y = torch.repeat_interleave(y, 2)\n"
        "        return y, top\n"
        "\n"
        "net = Net(5)\n")
    assert [f for f in result.findings if f.category.value == "dynamic-shape"] == []


def test_a_data_dependent_condition_two_calls_below_a_forward() -> None:
    result = scan(
        "def error_ratio(err):\n"                     # 4
        "    return err.abs().max()\n"
        "\n"
        "def step_size(y, tol):\n"                     # 7
        "    ratio = error_ratio(y) / tol\n"
        "    while ratio > 1:\n"                       # 9
        "        ratio = ratio / 2\n"
        "    return ratio\n"
        "\n"
        "class Solver(nn.Module):\n"
        "    def forward(self, y):\n"
        "        return y * step_size(y, 1e-3)\n")
    assert found(result, "MS213") == [("model.py", 9)]
    assert only(result, "MS213").trace == ("Solver.forward", "step_size")


def test_the_call_graph_follows_an_attribute_set_from_a_constructor_argument() -> None:
    result = scan(
        "class Critic(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.nonzero()\n"                 # 6
        "\n"
        "class Generator(nn.Module):\n"
        "    def forward(self, z):\n"
        "        return z\n"
        "\n"
        "class Trainer:\n"
        "    def __init__(self, g, d):\n"
        "        self.G = g\n"
        "        self.D = d\n"
        "\n"
        "    def penalty(self, z):\n"
        "        x = self.G(z)\n"
        "        out = self.D(x)\n"
        "        return torch.autograd.grad(out.sum(), x, create_graph=True)[0]\n"
        "\n"
        "def build():\n"
        "    return Trainer(Generator(), Critic())\n")
    model = result.model
    reached = model.reachable("model.Trainer.penalty")
    assert {"model.Critic.forward", "model.Generator.forward"} <= reached


def test_a_parameter_holding_a_network_is_followed_from_its_caller() -> None:
    result = scan(
        "class Critic(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "\n"
        "def score(net_d, x):\n"
        "    return net_d(x)\n"
        "\n"
        "def run(x):\n"
        "    critic = Critic()\n"
        "    return score(critic, x)\n")
    assert "model.Critic.forward" in result.model.reachable("model.score")


def test_a_second_round_of_call_resolution_recomputes_only_what_the_new_calls_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Round one: ``net(x)`` is met before ``self.D(...)`` is resolved, so ``net`` holds no
    # network yet; ``self.D(...)`` then gives ``Critic.forward`` its caller. Round two
    # must recompute ``net`` (it read that parameter) and find ``Head.forward``.
    # ``fn(v)`` is asked about again in round two (it calls no repository function); what
    # ``fn`` holds read nothing that changed, and is not computed again.
    computed: list[object] = []
    compute = ValueAnalysis._compute

    def counted(self: ValueAnalysis, expr: tuple[object, ...]) -> object:
        computed.append(expr)
        return compute(self, expr)

    monkeypatch.setattr(ValueAnalysis, "_compute", counted)
    result = scan(
        "class Head(nn.Module):\n"
        "    def forward(self, y):\n"
        "        return y\n"
        "\n"
        "class Critic(nn.Module):\n"
        "    def forward(self, x, net):\n"
        "        return net(x)\n"
        "\n"
        "class Trainer:\n"
        "    def __init__(self, d):\n"
        "        self.D = d\n"
        "\n"
        "    def penalty(self, z):\n"
        "        return self.D(z, Head())\n"
        "\n"
        "def build():\n"
        "    return Trainer(Critic())\n"
        "\n"
        "def apply(fn, v):\n"
        "    return fn(v)\n"
        "\n"
        "def main():\n"
        "    return apply(len, 3)\n")
    assert {"model.Critic.forward", "model.Head.forward"} <= result.model.reachable(
        "model.Trainer.penalty")
    assert computed.count(("p", "model.apply", "fn")) == 1
    assert computed.count(("p", "model.Critic.forward", "net")) == 2


# ----- configuration values -----------------------------------------------------------------

def test_an_argparse_default_read_through_the_parsed_namespace_in_a_class() -> None:
    result = scan_files({"gan.py": (
        "import argparse\nimport torch.nn as nn\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--latent-dim', type=int, default=100)\n"
        "opt = parser.parse_args()\n"
        "\n"
        "class Generator(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(opt.latent_dim, 128)\n")})
    model = result.model
    [linear] = [rc for rc in model.calls if rc.external == "torch.nn.Linear"]
    [(_, size), _] = model.values.arguments(linear.file, linear.call)
    assert {(a.kind, a.const) for a in size} == {(Kind.CONST, 100)}
    assert model.values.option_line("latent_dim") == ("gan.py", 5)


def test_an_attribute_set_in_an_experiment_class_is_a_constant() -> None:
    result = scan(
        "class Exp:\n"
        "    def __init__(self):\n"
        "        self.max_epoch = 300\n"
        "        self.warmup = self.max_epoch // 100\n")
    values = result.model.values
    assert {a.const for a in values.attribute("model.Exp", "max_epoch")} == {300}
    assert {a.const for a in values.attribute("model.Exp", "warmup")} == {3}


# ----- where code runs ----------------------------------------------------------------------

def test_a_library_function_nothing_calls_is_reported_one_severity_lower() -> None:
    result = scan("def keep_positive(x):\n    return torch.nonzero(x)\n")
    finding = only(result, "MS201")
    assert (finding.location.line, finding.where) == (5, "unknown")
    assert finding.severity is Severity.WARNING
    assert "matters if a network runs it" in finding.message


def test_dataset_and_script_code_stays_quiet() -> None:
    result = scan(
        "class Pairs(torch.utils.data.Dataset):\n"
        "    def __init__(self, data):\n"
        "        self.data = data\n"
        "\n"
        "    def __getitem__(self, i):\n"
        "        x = self.data[i]\n"
        "        return x[x > 0], torch.nonzero(x)\n"
        "\n"
        "def summarise(x):\n"
        "    return torch.unique(x)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    print(summarise(torch.ones(3)))\n")
    assert [f for f in result.findings if f.category.value == "dynamic-shape"] == []


def test_a_loss_between_the_network_output_and_backward_is_graph_code() -> None:
    result = scan(
        "def detection_loss(pred, gt):\n"             # 4
        "    pos = gt > 0\n"
        "    return pred[pos].sum()\n"                  # 6
        "\n"
        "def train(model, loader, opt):\n"
        "    for x, gt in loader:\n"
        "        out = model(x)\n"
        "        loss = detection_loss(out, gt)\n"
        "        loss.backward()\n"
        "        opt.step()\n")
    finding = only(result, "MS204")
    assert (finding.location.line, finding.where) == (6, "graph")
    assert finding.trace == ("train", "detection_loss")
    assert finding.severity is Severity.ERROR


def test_a_network_helper_its_forward_never_calls_is_host_code() -> None:
    result = scan(
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "\n"
        "    def generate(self, x):\n"
        "        while (x > 0).any():\n"
        "            x = x - 1\n"
        "        return x[x > 0]\n")
    assert [f for f in result.findings if f.category.value == "dynamic-shape"] == []


def test_a_forward_parameter_annotated_with_a_non_tensor_type_is_not_a_tensor() -> None:
    result = scan(
        "Size_ = tuple[int, int]\n"
        "\n"
        "class Window(nn.Module):\n"
        "    def forward(self, x, size: Size_):\n"
        "        h, w = size\n"
        "        pad = (8 - w % 8) % 8\n"
        "        if pad > 0:\n"
        "            x = x[:, :h]\n"
        "        return x\n")
    assert [f for f in result.findings if f.category.value == "dynamic-shape"] == []


def test_the_repository_tests_are_host_code() -> None:
    result = scan_files({"tests/test_ops.py": HEAD + (
        "def test_nonzero():\n"
        "    x = torch.ones(3)\n"
        "    assert torch.nonzero(x).numel() == 3\n")})
    assert [f for f in result.findings if f.category.value == "dynamic-shape"] == []


def test_a_cell_takes_its_constructor_argument_from_an_option_parsed_in_another_file() -> None:
    result = scan_files({
        "opts.py": "import argparse\n\nparser = argparse.ArgumentParser()\n"
                   "parser.add_argument('--hidden', type=int, default=24)\n\n"
                   "def get_args():\n    return parser.parse_args()\n",
        "model.py": HEAD + "class Net(nn.Module):\n    def __init__(self, hidden):\n"
                    "        super().__init__()\n        self.fc = nn.Linear(hidden, 2)\n\n"
                    "    def forward(self, x):\n        return self.fc(x)\n",
        "train.py": "from model import Net\nfrom opts import get_args\n\n"
                    "args = get_args()\nnet = Net(args.hidden)\n",
    })
    resolved = ConstructorFinder(result).constructor_arguments("model.Net")
    assert (resolved.kwargs, resolved.synthesized) == ({"hidden": 24}, {})


def test_a_network_moved_to_a_device_is_still_the_network() -> None:
    result = scan(
        "class Critic(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "\n"
        "def score(net_d, x):\n"
        "    return net_d(x)\n"
        "\n"
        "def run(x, device):\n"
        "    critic = Critic().to(device)\n"
        "    critic.eval()\n"
        "    return score(critic.float(), x)\n")
    assert "model.Critic.forward" in result.model.reachable("model.score")


# ----- constants keep their type --------------------------------------------------------------

def test_equal_constants_of_different_types_stay_apart() -> None:
    # True == 1 == 1.0 and False == 0 == 0.0 in Python: a table keyed by the value alone
    # would hand ``unsqueeze(1)`` the True met earlier, or Adam's ``betas=(0.0, 0.9)`` False.
    from msready.analyzer.values import const, join

    for a, b in ((True, 1), (1, 1.0), (False, 0.0), ((1, 0), (True, False))):
        first, second = const(a), const(b)
        assert first != second
        [atom] = second
        assert type(atom.const) is type(b) and atom.const == b
        assert len(join(first, second)) == 2


def test_a_scalar_constant_is_made_once_per_type_and_value() -> None:
    from msready.analyzer.values import Kind, const

    assert const(1) is const(1)
    kinds = {next(iter(const(v))).const_type for v in (1, True, 1.0, "1", (1,), (True,))}
    assert kinds == {"int", "bool", "float", "str", "(int)", "(bool)"}
    assert all(next(iter(const(v))).kind is Kind.CONST for v in (1, True, None))


def test_a_call_with_values_is_the_call_replaced() -> None:
    import dataclasses

    from msready.analyzer.facts import Arg, CallKind, CallSite
    from msready.analyzer.findings import Span
    from msready.analyzer.values import const, tensor

    site = CallSite("m.f", "torch.zeros", CallKind.NAME, Span(1, 2, 3, 4),
                    (Arg(None, "3", 3, True),), "medium", 2, "x")
    assert [f.name for f in dataclasses.fields(CallSite)][-2:] == ["recv", "arg_values"]
    assert site.with_values(tensor(), (const(3),)) == dataclasses.replace(
        site, recv=tensor(), arg_values=(const(3),))


# ----- what the solver need not evaluate ------------------------------------------------------

SPARSE_USE = (
    "from graph import adjacency\n"                # 4
    "\n"
    "def propagate(adj, x):\n"
    "    return torch.mm(adj, x)\n"                # 7
    "\n"
    "class GCN(nn.Module):\n"
    "    def forward(self, x, adj):\n"
    "        return propagate(adjacency(adj), x)\n")


def test_a_sparse_tensor_built_in_another_file_reaches_a_dense_operation() -> None:
    result = scan(SPARSE_USE,
                  **{"graph.py": "import torch\n\ndef adjacency(a):\n    return a.to_sparse()\n"})
    assert found(result, "MS307") == [("model.py", 7)]
    assert [f.path for f in result.files if f.makes_sparse] == ["graph.py"]
    assert result.model.values.never == frozenset()


def test_without_a_sparse_constructor_anywhere_no_value_is_sparse() -> None:
    # ``is_sparse`` asks; it builds nothing: the solver need not follow ``adj`` at all.
    result = scan(SPARSE_USE,
                  **{"graph.py": "import torch\n\ndef adjacency(a):\n"
                                 "    return a if a.is_sparse else a * 2\n"})
    assert found(result, "MS307") == []
    assert "MS307" in [p.rule for f in result.files for p in f.pending]
    assert not any(f.makes_sparse for f in result.files)
    assert result.model.values.never == frozenset({"sparse"})


def test_a_condition_in_host_code_is_not_decided(monkeypatch: pytest.MonkeyPatch) -> None:
    source = {"model.py": HEAD + "def helper(x, y):\n"      # 4
                          "    if x.sum() > y:\n"           # 5
                          "        return x\n"
                          "    return y\n",
              "train.py": "from model import helper\n\ndef main(a, b):\n"
                          "    print(helper(a, b))\n"}
    asked: list[object] = []
    decide = ValueAnalysis.decide

    def counted(self: ValueAnalysis, condition: Truth) -> bool:
        asked.append(condition)
        return decide(self, condition)

    monkeypatch.setattr(ValueAnalysis, "decide", counted)
    result = scan_files(source)
    assert ("MS213", 5) in [(p.rule, p.line) for f in result.files for p in f.pending]
    assert result.model.placement.where("model.helper") == "host"
    assert found(result, "MS213") == []
    assert "tensor_test" not in repr(asked)
    # The same condition in a forward is decided, and reported.
    result = scan_files({**source, "net.py": HEAD + "from model import helper\n\n"
                         "class Net(nn.Module):\n    def forward(self, x):\n"
                         "        return helper(x, x.mean())\n"})
    assert found(result, "MS213") == [("model.py", 5)] and "tensor_test" in repr(asked)


RECURSIVE = (
    "class Net(nn.Module):\n"
    "    def forward(self, x, n):\n"
    "        return walk(x, n)\n"
    "\n"
    "def walk(x, n):\n"
    "    if n > 0:\n"
    "        return walk(x, trim(n))\n"
    "    return x\n"
    "\n"
    "def trim(m):\n"
    "    return m - 1\n"
    "\n"
    "def main():\n"
    "    net = Net()\n"
    "    net(torch.zeros(3), 4)\n")


@pytest.mark.parametrize("first", ["model.walk", "model.trim", "model.Net.forward"])
def test_answers_do_not_depend_on_the_order_of_the_questions(first: str) -> None:
    # ``n`` of ``walk`` joins 4 (from forward) and ``trim(n)``, which reads ``n`` again: a
    # cycle. Asked first about ``trim``'s ``m``, the solver meets ``walk``'s ``n`` inside
    # that cycle; what it computed there with the cycle cut is not what ``n`` holds.
    model = scan(RECURSIVE).model
    names = {"model.Net.forward": "n", "model.walk": "n", "model.trim": "m"}
    alone = {fn: ValueAnalysis(model).value(("p", fn, p)) for fn, p in names.items()}
    solver = ValueAnalysis(model)
    order = [first, *(fn for fn in names if fn != first)]
    asked = {fn: solver.value(("p", fn, names[fn])) for fn in order}
    assert asked == alone
    assert any(a.const == 4 for a in asked["model.walk"])


def test_a_function_returning_its_argument_returns_what_each_call_passes() -> None:
    # ``prepare`` hands back whatever network it is given, as ``init_net`` does. Joined
    # over its callers, ``self.sampler`` would also be the generator, and the generator's
    # call would bind ``num`` of ``Sampler.forward`` to a tensor.
    result = scan(
        "def prepare(net, gain=0.02):\n"               # 4
        "    return net\n"
        "\n"
        "class Generator(nn.Module):\n"                 # 7
        "    def forward(self, x, layers):\n"
        "        return x\n"
        "\n"
        "class Sampler(nn.Module):\n"                   # 11
        "    def forward(self, feats, num=64):\n"
        "        if num > 0:\n"                          # 13
        "            return feats[:, :2]\n"
        "        return feats\n"
        "\n"
        "class Model:\n"                                 # 17
        "    def __init__(self):\n"
        "        self.gen = prepare(Generator())\n"
        "        self.sampler = prepare(Sampler())\n"
        "\n"
        "    def step(self, x):\n"                       # 22
        "        feats = self.gen(x, torch.ones(3))\n"
        "        return self.sampler(feats, 256)\n")
    values = result.model.values
    gen = values.attribute("model.Model", "gen")
    assert {a.cls for a in gen} == {"model.Generator"}
    assert found(result, "MS213") == []
