"""Second-order rules (MS401-MS405) on small repositories and on a whole fixture.

``tests/fixtures/second_order`` is a WGAN-GP (script and class styles, the penalty in a
helper module), a MAML learner with first- and second-order inner loops and a file of
Hessians / Jacobians with lookalikes. Lines that must be reported carry
``# expect: MS4xx``; the fixture test compares the exact set of (path, line, rule).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.findings import Finding, Severity
from msready.analyzer.result import ScanResult
from msready.analyzer.scan import ScanOptions, scan, scan_files
from msready.rules.second_order_chain import analyse
from msready.rules.second_order_sites import create_graph_flag
from msready.rules.testing import expected_findings

FIXTURE = Path(__file__).parent / "fixtures" / "second_order"
FAMILY = "MS4"

MODELS = """\
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.act = nn.LeakyReLU(0.2)
        self.out = nn.LogSoftmax(dim=1)

    def forward(self, x):
        return self.out(self.act(self.conv(x)).flatten(1))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 3 * 8 * 8)
        self.norm = nn.LayerNorm(3 * 8 * 8)

    def forward(self, z):
        return self.norm(self.fc(z)).view(-1, 3, 8, 8)
"""

LOSSES = """\
import torch
from torch.autograd import grad as torch_grad


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(mixed)
    g = torch_grad(out, mixed, torch.ones_like(out), create_graph=True)[0]
    return torch.log_softmax(g.flatten(1), 1).mean()
"""

TRAIN = """\
import torch

from models import Critic, Generator
from losses import gradient_penalty


def train(data, opt_d, opt_g):
    critic = Critic()
    gen = Generator()
    for real in data:
        fake = gen(torch.randn(4, 16)).detach()
        opt_d.zero_grad()
        d_loss = critic(fake).mean() - critic(real).mean()
        d_loss = d_loss + gradient_penalty(critic, real, fake)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = -critic(gen(torch.randn(4, 16))).mean()
        g_loss.backward()
        opt_g.step()
"""

WGAN = {"models.py": MODELS, "losses.py": LOSSES, "train.py": TRAIN}


def _ours(result: ScanResult, rule: str | None = None) -> list[Finding]:
    return [f for f in result.findings
            if f.rule.startswith(FAMILY) and (rule is None or f.rule == rule)]


def _lines(result: ScanResult, rule: str) -> list[tuple[str, int]]:
    return sorted((f.location.path, f.location.line) for f in _ours(result, rule))


def _scan(source: str, target: str = "cpu") -> ScanResult:
    return scan_files({"example.py": source}, target=target)


# ----- the whole fixture ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_result() -> ScanResult:
    return scan(str(FIXTURE), options=ScanOptions(jobs=1, cache=False, target="cpu"))


def test_exact_second_order_findings(fixture_result: ScanResult) -> None:
    got = {(f.location.path, f.location.line, f.rule) for f in _ours(fixture_result)}
    want = expected_findings(FIXTURE, FAMILY)
    assert want, "the fixture lost its expectations"
    assert sorted(got - want) == [], "unexpected findings"
    assert sorted(want - got) == [], "missing findings"


def test_fixture_chains_name_the_model_code(fixture_result: ScanResult) -> None:
    chains = {(s.rc.file.path, s.span.line): c for s, c in analyse(fixture_result.model).sites}
    penalty = chains[("gan/losses.py", 11)]
    assert penalty.functions == ["gan.models.Discriminator.forward", "gan.models.Block.forward"]
    assert {"torch.nn.Conv2d", "torch.nn.LeakyReLU", "torch.nn.AvgPool2d", "torch.nn.Linear",
            "torch.nn.functional.log_softmax"} <= set(penalty.apis())
    # The generator's LayerNorm fails second order too, but it is not on the critic's chain.
    assert "torch.nn.LayerNorm" not in penalty.apis()
    assert chains[("gan/trainer.py", 30)].apis() == penalty.apis()
    assert chains[("meta/maml.py", 24)].classes == ["meta.learner.Learner"]


# ----- the WGAN-GP across three files ----------------------------------------------------------


@pytest.fixture(scope="module")
def wgan() -> ScanResult:
    return scan_files(WGAN, target="cpu")


def test_penalty_site_lists_the_critic_chain(wgan: ScanResult) -> None:
    [site] = _ours(wgan, "MS401")
    assert (site.location.path, site.location.line) == ("losses.py", 9)
    assert site.symbol == "torch.autograd.grad"
    assert site.severity is Severity.ERROR
    assert "through Critic.forward" in site.message
    assert "1 without second-order support on cpu (torch.nn.LogSoftmax)" in site.message
    assert "torch.nn.Conv2d → mindspore.nn.Conv2d (second order runs)" in site.message
    assert "torch.nn.LogSoftmax → mindspore.nn.LogSoftmax (second order fails)" in site.message
    [(_, chain)] = analyse(wgan.model).sites
    assert {"torch.nn.Conv2d", "torch.nn.LeakyReLU", "torch.nn.LogSoftmax"} <= set(chain.apis())
    targets = {op.api: op.target for op in chain.ops}
    assert targets["torch.nn.Conv2d"] == "mindspore.nn.Conv2d"
    assert targets["torch.nn.LogSoftmax"] == "mindspore.nn.LogSoftmax"
    statuses = {op.api: op.status for op in chain.ops}
    assert statuses["torch.nn.LeakyReLU"] == "pass"
    assert statuses["torch.nn.LogSoftmax"] == "fail"


def test_log_softmax_flagged_at_its_constructor(wgan: ScanResult) -> None:
    [op] = _ours(wgan, "MS402")
    assert (op.location.path, op.location.line, op.symbol) == ("models.py", 10,
                                                              "torch.nn.LogSoftmax")
    assert "LogSoftmaxGrad's bprop not defined" in op.message
    assert "bprop" in op.suggestion and "logsumexp" in op.suggestion


def test_log_softmax_after_the_gradient_is_not_on_the_chain(wgan: ScanResult) -> None:
    # losses.py applies torch.log_softmax to the gradient itself: differentiated once.
    assert not any(f.symbol == "torch.log_softmax" for f in _ours(wgan))


def test_callers_and_the_backward_through_the_penalty(wgan: ScanResult) -> None:
    assert _lines(wgan, "MS404") == [("train.py", 14)]
    assert _lines(wgan, "MS405") == [("train.py", 15)]  # not the generator's backward


def test_every_caller_of_the_helper_is_reported() -> None:
    files = dict(WGAN)
    files["eval.py"] = ("from losses import gradient_penalty\n\n\n"
                        "def check(critic, real, fake):\n"
                        "    return gradient_penalty(critic, real, fake).item()\n")
    result = scan_files(files, target="cpu")
    assert _lines(result, "MS404") == [("eval.py", 5), ("train.py", 14)]


def test_other_backends_report_only_what_was_measured(wgan: ScanResult) -> None:
    result = scan_files(WGAN, target="ascend")
    assert _ours(result, "MS402") == []  # ascend targets are mint APIs, not measured on CPU
    [site] = _ours(result, "MS401")
    assert "measured on CPU" in site.message and "unmeasured" in site.message


def test_missing_bprops_carry_over_to_gpu_but_cpu_kernels_do_not() -> None:
    source = """\
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.out = nn.LogSoftmax(dim=1)

    def forward(self, x):
        return self.out(self.pool(x).flatten(1))


def penalty(x):
    critic = Critic()
    g = torch.autograd.grad(critic(x).sum(), x, create_graph=True)[0]
    return g.pow(2).mean()
"""
    on_cpu = {f.symbol for f in _ours(_scan(source, "cpu"), "MS402")}
    on_gpu = {f.symbol for f in _ours(_scan(source, "gpu"), "MS402")}
    assert on_cpu == {"torch.nn.MaxPool2d", "torch.nn.LogSoftmax"}
    assert on_gpu == {"torch.nn.LogSoftmax"}  # "MaxPoolGradGrad does not support on CPU!"


# ----- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize("source", [
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, create_graph=True)\n",
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, None, False, True)\n",
    "import torch.autograd as ag\n\ndef f(y, x):\n    return ag.grad([y], [x], create_graph=1)\n",
    "from torch import autograd\n\ndef f(y, x):\n"
    "    return autograd.grad(outputs=y, inputs=x, create_graph=True)\n",
    "try:\n    from torch.autograd import grad as g\nexcept ImportError:\n    raise\n\n"
    "def f(y, x):\n    return g(y, x, create_graph=True)\n",
    "import torch\n\ndef f(x):\n    loss = torch.sum(x ** 2)\n"
    "    loss.backward(create_graph=True)\n",
    "import torch\n\ndef f(x):\n    loss = torch.sum(x ** 2)\n"
    "    loss.backward(None, None, True)\n",
    "import torch\n\ndef f(loss):\n    torch.autograd.backward(loss, None, None, True)\n",
    "import torch\n\ndef f(fn, x, v):\n    return torch.autograd.functional.hvp(fn, x, v)\n",
    "from torch.autograd.functional import vjp\n\ndef f(fn, x, v):\n"
    "    return vjp(fn, x, v, True)\n",
    "import torch\n\ndef f(fn, x):\n    return torch.func.hessian(fn)(x)\n",
    "import functorch\n\ndef f(fn, x):\n    return functorch.grad(functorch.grad(fn))(x)\n",
    "from torch.func import grad\n\ndef inner(x):\n    return grad(energy)(x).sum()\n\n"
    "def energy(x):\n    return (x ** 3).sum()\n\ndef f(x):\n    return grad(inner)(x)\n",
])
def test_double_backward_is_detected(source: str) -> None:
    assert _ours(_scan(source), "MS401"), source


@pytest.mark.parametrize("source", [
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, create_graph=False)\n",
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, retain_graph=True)\n",
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, None, True)\n",
    "import torch\n\ndef f(y, x):\n    return torch.autograd.grad(y, x, create_graph=None)\n",
    "import torch\n\ndef f(m, x):\n    x.requires_grad_(True)\n"
    "    return torch.autograd.grad(m(x).max(), x)[0].abs()\n",
    "import torch\n\ndef f(x):\n    loss = torch.sum(x ** 2)\n"
    "    loss.backward(retain_graph=True)\n",
    "import torch\n\ndef f(fn, x):\n    return torch.autograd.functional.jacobian(fn, x)\n",
    "import torch\n\ndef f(fn, x, v):\n    return torch.autograd.functional.jvp(fn, x, v)\n",
    "from torch.func import grad, vmap\n\ndef f(fn, xs):\n    return vmap(grad(fn))(xs)\n",
    "import paddle\n\ndef f(y, x):\n    return paddle.grad(y, x, create_graph=True)\n",
    "import mindspore as ms\n\ndef f(fn, x):\n    return ms.grad(ms.grad(fn))(x)\n",
    "def grad(y, x, create_graph=False):\n    return y\n\n"
    "def f(a, b):\n    return grad(a, b, create_graph=True)\n",
    "class Opt:\n    def backward(self, create_graph=False):\n        return self\n\n"
    "def f():\n    Opt().backward(create_graph=True)\n",
])
def test_lookalikes_and_first_order_are_quiet(source: str) -> None:
    assert _ours(_scan(source)) == [], source


def test_conditional_create_graph_is_reported_with_its_condition() -> None:
    result = _scan("import torch\n\ndef inner(loss, params, first_order):\n"
                   "    return torch.autograd.grad(loss, params, create_graph=not first_order)\n")
    [site] = _ours(result, "MS401")
    assert "create_graph=not first_order" in site.message
    assert site.confidence.value == "medium"


def test_create_graph_flag_positions() -> None:
    from msready.analyzer.facts import Arg

    def arg(text: str, keyword: str | None = None) -> Arg:
        import ast
        return Arg(keyword, text, ast.literal_eval(text), True)

    assert create_graph_flag((arg("1"), arg("2"), arg("None"), arg("True"), arg("True")),
                             4).value == "yes"
    assert create_graph_flag((arg("1"), arg("2"), arg("None"), arg("True")), 4).value == "no"
    assert create_graph_flag((arg("1"), Arg(None, "rest", star="*")), 4).value == "no"
    assert create_graph_flag((Arg("create_graph", "flag"),), 4).value == "maybe"


# ----- MAML ----------------------------------------------------------------------------------

MAML = """\
import torch
import torch.nn.functional as F


def adapt(model, x, y, lr=0.01, steps=5):
    weights = list(model.parameters())
    for _ in range(steps):
        loss = F.cross_entropy(model.functional_forward(x, weights), y)
        grads = torch.autograd.grad(loss, weights{flag})
        weights = [w - lr * g for w, g in zip(weights, grads)]
    return weights
"""


def test_maml_first_order() -> None:
    result = _scan(MAML.format(flag=""))
    [maml] = _ours(result)
    assert (maml.rule, maml.location.line, maml.severity) == ("MS403", 9, Severity.INFO)
    assert "first-order" in maml.message and "model.functional_forward" in maml.message


def test_maml_second_order() -> None:
    result = _scan(MAML.format(flag=", create_graph=True"))
    assert sorted((f.rule, f.location.line) for f in _ours(result)) == [("MS401", 9),
                                                                         ("MS403", 9)]
    [maml] = _ours(result, "MS403")
    assert maml.severity is Severity.WARNING and "second-order (create_graph=True)" in maml.message


def test_maml_conditional_order() -> None:
    result = _scan(MAML.format(flag=", create_graph=not first_order"))
    [maml] = _ours(result, "MS403")
    assert "second-order whenever `not first_order` is true" in maml.message


def test_maml_with_functional_call_and_dict_weights() -> None:
    result = _scan("""\
import torch
from torch.func import functional_call


def inner(model, params, x, y, lr):
    out = functional_call(model, params, (x,))
    grads = torch.autograd.grad((out - y).pow(2).mean(), list(params.values()))
    new = {}
    for (name, p), g in zip(params.items(), grads):
        new[name] = p - lr * g
    return functional_call(model, new, (x,))
""")
    assert [(f.rule, f.location.line) for f in _ours(result)] == [("MS403", 7)]


def test_sgd_and_adversarial_inputs_are_not_maml() -> None:
    result = _scan("""\
import torch


def sgd(model, loss, lr):
    grads = torch.autograd.grad(loss, list(model.parameters()))
    with torch.no_grad():
        for p, g in zip(model.parameters(), grads):
            p -= lr * g


def fgsm(model, x, y, eps, loss_fn):
    g = torch.autograd.grad(loss_fn(model(x), y), x)[0]
    x_adv = x - eps * g.sign()
    return model(x_adv)


def pgd_step(model, x, y, eps, loss_fn):
    g = torch.autograd.grad(loss_fn(model(x), y), x)[0]
    x_adv = x - eps * g.sign()
    return x_adv, model(x, x_adv)
""")
    assert _ours(result) == []


def test_hessian_of_a_repository_function_walks_into_it() -> None:
    result = _scan("""\
import torch
import torch.nn.functional as F


def energy(x):
    return F.elu(x).sum()


def curvature(x):
    return torch.autograd.functional.hessian(energy, x)
""")
    assert [(f.rule, f.location.line) for f in _ours(result)] == [("MS402", 6), ("MS401", 10)]
    [site] = _ours(result, "MS401")
    assert site.symbol == "torch.autograd.functional.hessian"
    assert "through energy" in site.message


def test_the_penalty_value_is_followed_up_to_the_backward() -> None:
    files = dict(WGAN)
    files["train.py"] = """\
import torch

from models import Critic
from losses import gradient_penalty


def critic_loss(critic, real, fake):
    return critic(fake).mean() - critic(real).mean() + gradient_penalty(critic, real, fake)


def train(data, opt):
    critic = Critic()
    for real, fake in data:
        opt.zero_grad()
        loss = critic_loss(critic, real, fake)
        loss.backward()
        opt.step()
"""
    result = scan_files(files, target="cpu")
    assert _lines(result, "MS404") == [("train.py", 8), ("train.py", 15)]
    assert _lines(result, "MS405") == [("train.py", 16)]
    outer = next(f for f in _ours(result, "MS404") if f.location.line == 15)
    assert outer.message.startswith("`critic_loss` calls `gradient_penalty`, which takes")
    assert _ours(result, "MS402")  # the critic is still found through two callers


PASS_THROUGH = """\
import torch


def input_grad(y, x, create_graph):
    return torch.autograd.grad(y, x, create_graph=create_graph)[0]


def use(model, x):
    return input_grad(model(x).sum(), x, {flag})
"""


def test_create_graph_decided_by_the_callers() -> None:
    assert _ours(_scan(PASS_THROUGH.format(flag="False"))) == []
    [site] = _ours(_scan(PASS_THROUGH.format(flag="create_graph=True")), "MS401")
    assert "passed as True at example.py)" in site.message
    assert site.confidence.value == "high"
    [site] = _ours(_scan(PASS_THROUGH.format(flag="flag")), "MS401")
    assert site.confidence.value == "medium"


def test_a_model_returned_in_a_tuple_reaches_the_chain_through_a_parameter() -> None:
    files = {"losses.py": LOSSES, "models.py": """\
import torch
from torch import nn


class DenseHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(x)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = DenseHead()

    def forward(self, z):
        return self.head(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x).mean()


def build():
    return Generator(), Discriminator()
""", "train.py": """\
from losses import gradient_penalty
from models import build


def step(netD, real, fake):
    return gradient_penalty(netD, real, fake)


def main(real, fake):
    _, critic = build()
    return step(critic, real, fake)
"""}
    result = scan_files(files, target="cpu")
    [(_, chain)] = analyse(result.model).sites
    # The value analysis follows the tuple's second element through two parameters.
    assert chain.classes == ["models.Discriminator"]
    assert "torch.nn.MaxPool2d" not in chain.apis()


def test_callers_that_pass_a_false_create_graph_are_first_order() -> None:
    source = PASS_THROUGH.format(flag="create_graph=True") + """

def saliency(model, x):
    return input_grad(model(x).sum(), x, False).abs()
"""
    result = _scan(source)
    assert _lines(result, "MS404") == [("example.py", 9)]


def test_the_model_the_caller_builds_beats_a_name_match_elsewhere() -> None:
    files = {"losses.py": LOSSES, "models.py": """\
from torch import nn


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(x)


class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ELU()

    def forward(self, x):
        return self.act(x)


def backbone():
    return ResNet()
""", "train.py": """\
from losses import gradient_penalty
from models import Learner


def step(real, fake):
    net = Learner()
    return gradient_penalty(net, real, fake)
"""}
    [(_, chain)] = analyse(scan_files(files, target="cpu").model).sites
    assert chain.classes == ["models.Learner"]


def test_a_penalty_term_is_not_a_weight_update() -> None:
    result = _scan("""\
import torch


def penalised(model, x, params, log):
    grads = torch.autograd.grad(model(x).sum(), params)
    excess = torch.stack([g.norm() for g in grads]).sum() - 1
    log("grad-norm", excess)
    return excess
""")
    assert _ours(result) == []


def test_a_method_parameter_is_matched_without_self() -> None:
    source = """\
import torch


class Regulariser:
    def _grad(self, y, x, create_graph):
        return torch.autograd.grad(y, x, create_graph=create_graph)[0]

    def penalty(self, y, x):
        return self._grad(y, x, {flag}).pow(2).sum()
"""
    assert _ours(_scan(source.format(flag="False"))) == []
    [site] = _ours(_scan(source.format(flag="True")), "MS401")
    assert "passed as True at example.py)" in site.message


def test_a_torchvision_backbone_is_listed_on_the_chain() -> None:
    result = _scan("""\
import torch
import torchvision
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torchvision.models.resnet18(num_classes=1)

    def forward(self, x):
        return self.backbone(x)


def penalty(x):
    critic = Critic()
    g = torch.autograd.grad(critic(x).sum(), x, create_graph=True)[0]
    return g.pow(2).mean()
""")
    [site] = _ours(result, "MS401")
    assert "torchvision.models.resnet18" in site.message


def test_notebook_findings_name_their_cells(
        make_repo: Callable[[dict[str, str | bytes]], Path]) -> None:
    cells = [MODELS, LOSSES,
             "def step(real, fake):\n    critic = Critic()\n"
             "    gradient_penalty(critic, real, fake).backward()\n"]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                           "execution_count": None} for c in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = make_repo({"gan.ipynb": json.dumps(notebook)})
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    got = {(f.rule, f.location.cell, f.location.line) for f in _ours(result)}
    assert got == {("MS402", 1, 10), ("MS401", 2, 9), ("MS404", 3, 3), ("MS405", 3, 3)}
    [op] = _ours(result, "MS402")
    assert "gan.ipynb (in `gradient_penalty`)" in op.message


def test_maml_with_torch_func_gradients() -> None:
    result = _scan("""\
import torch
from torch.func import functional_call, grad


def inner(model, params, x, y, lr):
    def loss_fn(p):
        return torch.nn.functional.mse_loss(functional_call(model, p, (x,)), y)
    grads = grad(loss_fn)(params)
    new = {k: v - lr * grads[k] for k, v in params.items()}
    return functional_call(model, new, (x,))
""")
    [maml] = _ours(result, "MS403")
    assert maml.location.line == 8 and "torch.func gradients stay differentiable" in maml.message


GAN_STEP = MODELS + """

class GAN:
    def __init__(self):
        self.G = Generator()
        self.D = Critic()

    def d_step(self, real, z, opt):
        fake = self.G(z).detach()
        x_hat = (real + fake) / 2
        x_hat.requires_grad_(True)
        g = torch.autograd.grad(self.D(x_hat).sum(), x_hat, create_graph=True)[0]
        (self.D(fake).mean() + g.pow(2).mean()).backward()
        opt.step()


def d_step(netG, netD, real, z):
    fake = netG(z).detach()
    x_hat = ((real + fake) / 2).requires_grad_(True)
    g = torch.autograd.grad(netD(x_hat).sum(), x_hat, create_graph=True)[0]
    return g.pow(2).mean()


def run(data):
    for real, z in data:
        d_step(Generator(), Critic(), real, z).backward()
"""


def test_a_penalty_computed_in_the_call_leaves_the_generator_off_the_chain() -> None:
    result = _scan(GAN_STEP)
    chains = [chain for _, chain in analyse(result.model).sites]
    assert len(chains) == 2
    for chain in chains:
        assert chain.classes == ["example.Critic"]
        assert "torch.nn.LayerNorm" not in chain.apis()
    assert {f.symbol for f in _ours(result, "MS402")} == {"torch.nn.LogSoftmax"}


STEP_BY_NAME = MODELS + """

class Step:
    def __init__(self):
        self.G = Generator()
        self.D = Critic()
        self.enc = Critic()
        self.head = nn.Linear(8, 1)

    def penalty(self, real, z):
        fake = self.G(z).detach()
        x_hat = ((real + fake) / 2).requires_grad_(True)
        out = self.D(x_hat)
        return torch.autograd.grad(out.sum(), inputs=x_hat, create_graph=True)[0]

    def smoothness(self, x):
        h = self.enc(x)
        out = self.head(h)
        return torch.autograd.grad(out.sum(), x, create_graph=True)[0]
"""


def test_calls_before_the_differentiated_inputs_are_off_the_chain() -> None:
    sites = {s.span.line: c for s, c in analyse(_scan(STEP_BY_NAME).model).sites}
    penalty, smoothness = (sites[k] for k in sorted(sites))
    assert penalty.classes == ["example.Critic"]  # not the generator that built the inputs
    assert "torch.nn.LayerNorm" not in penalty.apis()
    # from the first call on ``x`` onwards: the encoder and the head
    assert "example.Critic" in smoothness.classes and "torch.nn.Linear" in smoothness.apis()
