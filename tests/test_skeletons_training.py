"""Training loops become MindSpore training steps: the forward function returning the loss,
``mindspore.value_and_grad`` over it and the optimizer update, run for one step on
synthetic data. Each example below is a small training script of the kind found in public
repositories; all of them are scanned together and their steps really run on MindSpore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msready.analyzer.result import ScanResult, TrainStepResult
from msready.analyzer.scan import ScanOptions, scan
from msready.reports import json_report, markdown
from msready.reports.html import render as render_html
from msready.skeletons.generate import build_skeletons
from msready.skeletons.training_build import OPTIMIZERS, optimizer_code

MLP = '''
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, in_features=20, hidden=32, classes=5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)
'''

# A classifier: CrossEntropyLoss, SGD with momentum, gradient clipping, a StepLR schedule.
CLASSIFIER = '''
import torch
import torch.nn as nn
from torch import optim

from model import MLP


def train(model, loader, epochs=3):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
        scheduler.step()


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            model(x)


def saliency(model, x):
    x.requires_grad_(True)
    model(x).sum().backward()
    return x.grad


if __name__ == "__main__":
    train(MLP(20, 64, 10), [])
'''

# A script whose hyper-parameters are argparse defaults; the loop is module-level code.
ARGPARSE = '''
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=2e-4)
parser.add_argument("--b1", type=float, default=0.5)
parser.add_argument("--b2", type=float, default=0.99)
parser.add_argument("--hidden", type=int, default=48)
args = parser.parse_args()


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden)
        self.fc2 = nn.Linear(hidden, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


net = Net(args.hidden)
optimizer = torch.optim.Adam(net.parameters(), lr=args.lr, betas=(args.b1, args.b2))
for x, y in []:
    optimizer.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    optimizer.step()
'''

# A regression: an arithmetic expression of functional losses, the lr a default argument.
REGRESSION = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x)


def fit(model, data, lr=0.01):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for x, y in data:
        pred = model(x)
        loss = F.mse_loss(pred, y) + 0.1 * F.l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


fit(Regressor(), [])
'''

# Losses that are the repository's own functions: one is written inline in forward_fn
# (its torch calls and Tensor methods through the API table), the other uses a Tensor
# method whose MindSpore form differs, so it is not translated.
CUSTOM_LOSS = '''
import torch
import torch.nn as nn

from model import MLP


def focal_loss(logits, target, gamma=2.0):
    p = torch.softmax(logits, dim=-1)
    picked = p.gather(1, target.unsqueeze(1))
    return (-(1 - picked) ** gamma * picked.log()).mean()


def hinge_loss(logits, target):
    margin = logits.max(dim=1)[0] - logits.gather(1, target.unsqueeze(1)).squeeze(1)
    return margin.clamp(min=0).mean()


def train_focal(model, loader, optimizer):
    for x, y in loader:
        loss = focal_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_hinge(model, loader, optimizer):
    for x, y in loader:
        loss = hinge_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


net = MLP()
train_focal(net, [], torch.optim.SGD(net.parameters(), lr=0.1))
train_hinge(net, [], torch.optim.SGD(net.parameters(), lr=0.1))
'''

# A WGAN-GP critic update: a gradient penalty through torch.autograd.grad(create_graph=True).
WGAN = '''
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, z):
        return self.fc(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc(x)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    grads = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def train(generator, critic, loader):
    opt_d = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
    for real in loader:
        z = torch.randn(real.size(0), 8)
        fake = generator(z)
        d_loss = critic(fake).mean() - critic(real).mean() + 10 * gradient_penalty(
            critic, real, fake)
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = -critic(generator(z)).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()


train(Generator(), Critic(), [])
'''

# The model is a torch layer itself, the loss a torch loss called inline.
LAYER = '''
import torch
import torch.nn as nn

model = nn.Linear(8, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in []:
    optimizer.zero_grad()
    criterion(model(x), y).backward()
    optimizer.step()
'''

REPOSITORY = {"classifier/model.py": MLP, "classifier/train.py": CLASSIFIER,
              "argparse_adam/train.py": ARGPARSE, "regression/fit.py": REGRESSION,
              "custom_loss/model.py": MLP, "custom_loss/train.py": CUSTOM_LOSS,
              "wgan/train.py": WGAN, "linear.py": LAYER}


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[ScanResult, Path]:
    """The examples scanned together, their Cells and training steps built and run."""
    root = tmp_path_factory.mktemp("training")
    for rel, text in REPOSITORY.items():
        (root / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "repo" / rel).write_text(text, encoding="utf-8")
    result = scan(str(root / "repo"), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    result.skeletons = build_skeletons(result, root / "out" / "skeletons", run=True,
                                       compare_torch=False, cache=False)
    return result, root / "out"


def step(result: ScanResult, function: str) -> TrainStepResult:
    found = [t for t in result.train_steps if t.function == function]
    assert len(found) == 1, [t.function for t in result.train_steps]
    return found[0]


def test_a_classifier_loop_runs_one_mindspore_step(scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "classifier.train.train")
    assert got.status == "pass", got.error
    assert got.model == "classifier.model.MLP"
    assert got.loss == "torch.nn.CrossEntropyLoss"
    assert got.optimizer == "nn.SGD(learning_rate=0.1, momentum=0.9)"
    assert got.loss_before is not None and got.loss_after is not None
    assert got.loss_after != got.loss_before
    assert any(n.startswith("scheduler StepLR: the step runs with the base learning rate")
               for n in got.not_translated)
    code = (out / got.step_file).read_text()
    assert "model = MLP(in_features=20, hidden=64, classes=10)" in code
    assert "grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters, " \
           "has_aux=True)" in code
    assert "    grads = ops.clip_by_global_norm(grads, 1.0)\n    optimizer(grads)" in code
    assert "# Dropped: optimizer.zero_grad()" in code
    assert code.startswith("# msready: pass, loss ")


def test_what_is_not_a_training_loop(scanned: tuple[ScanResult, Path]) -> None:
    result, _ = scanned
    functions = {t.function for t in result.train_steps}
    # an evaluation loop, and a backward() with no optimizer step (a saliency map)
    assert "classifier.train.evaluate" not in functions
    assert "classifier.train.saliency" not in functions


def test_hyper_parameters_come_from_argparse_defaults(
        scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "argparse_adam.train.<module>")  # a script: module-level code
    assert got.status == "pass", got.error
    assert got.optimizer == "nn.Adam(learning_rate=0.0002, beta1=0.5, beta2=0.99)"
    assert got.loss == "torch.nn.functional.cross_entropy"
    code = (out / got.step_file).read_text()
    assert "model = Net(hidden=48)" in code
    assert "    loss = ops.cross_entropy(outputs, label)" in code


def test_a_regression_with_an_expression_of_functional_losses(
        scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "regression.fit.fit")
    assert got.status == "pass", got.error
    assert got.optimizer == "nn.SGD(learning_rate=0.01)"  # the default of fit(lr=0.01)
    code = (out / got.step_file).read_text()
    assert "    loss = (ops.mse_loss(outputs, label) + (0.1 * ops.l1_loss(outputs, label)))" \
        in code
    assert 'LOSS_KIND = "regression"' in code


def test_a_torch_layer_is_trained_through_its_mindspore_form(
        scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "linear.<module>")
    assert got.status == "pass", got.error
    assert (got.model, got.loss) == ("torch.nn.Linear", "torch.nn.MSELoss")
    code = (out / got.step_file).read_text()
    assert "model = nn.Dense(8, 1)" in code
    assert "loss_fn0 = nn.MSELoss()" in code


def test_a_repository_loss_function_is_written_inline(
        scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "custom_loss.train.train_focal")
    assert got.status == "pass", got.error
    assert got.optimizer == "nn.SGD(learning_rate=0.1)"  # passed in by the caller
    assert got.loss == "custom_loss.train.focal_loss (inlined)"
    assert got.not_translated == ("the repository loss function custom_loss.train.focal_loss "
                                  "is written inline in forward_fn",)
    code = (out / got.step_file).read_text()
    # -(1 - picked) ** gamma * picked.log(), with p.gather -> gather_elements, dim -> axis
    picked = "ops.softmax(outputs, axis=-1).gather_elements(1, label.unsqueeze(1))"
    line = next(ln for ln in code.splitlines() if ln.startswith("    loss = "))
    # gamma's default 2.0 may read as 2: the value analysis keeps equal constants once
    assert line.replace("** 2.0", "** 2") == \
        f"    loss = (-((1 - {picked}) ** 2) * {picked}.log()).mean()"


def test_a_repository_loss_function_msready_cannot_translate_leaves_the_step_unverified(
        scanned: tuple[ScanResult, Path]) -> None:
    result, out = scanned
    got = step(result, "custom_loss.train.train_hinge")
    assert got.status == "unverified"
    assert got.error == ("loss computed by repository function hinge_loss, not translated "
                         "(the Tensor method max differs in MindSpore: not translated)")
    code = (out / got.step_file).read_text()
    compile(code, got.step_file, "exec")  # the generated file still parses
    assert "raise NotImplementedError" in code


def test_a_gradient_penalty_is_listed_as_not_translated(
        scanned: tuple[ScanResult, Path]) -> None:
    result, _ = scanned
    got = step(result, "wgan.train.train")
    assert got.status == "unverified"
    assert "gradient penalty / second order (torch.autograd.grad(..., create_graph=True) " \
           "in gradient_penalty): not translated" in got.not_translated
    assert any(n.startswith("a second optimizer steps in the same loop")
               for n in got.not_translated)
    assert got.optimizer == "nn.Adam(learning_rate=0.0001, beta1=0.0, beta2=0.9)"


def test_reports_show_the_training_steps(scanned: tuple[ScanResult, Path]) -> None:
    result, _ = scanned
    data = json.loads(json_report.render(result))
    by_function = {t["function"]: t for t in data["train_steps"]}
    assert by_function["classifier.train.train"]["status"] == "pass"
    assert by_function["custom_loss.train.train_hinge"]["not_translated"] == []
    text = markdown.render(result)
    assert "## Training steps" in text
    assert "- [ ] **classifier.train.train** (`classifier/train.py:9`): **pass**" in text
    html = render_html(result)
    assert '<table class="skeletons train-steps">' in html
    assert '<span class="run run-unverified">unverified</span>' in html


def test_write_mode_writes_the_step_without_running_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for rel in ("classifier/model.py", "classifier/train.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(REPOSITORY[rel], encoding="utf-8")
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    build_skeletons(result, tmp_path / "out" / "skeletons", run=False, compare_torch=False)
    [got] = result.train_steps
    assert (got.status, got.error) == ("skipped", "not run (--skeletons write)")
    assert (tmp_path / "out" / got.step_file).read_text().startswith(
        "# msready: skipped: not run (--skeletons write)")


def test_a_step_that_ran_is_read_from_the_cache_next_time(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for rel in ("classifier/model.py", "classifier/train.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(REPOSITORY[rel], encoding="utf-8")
    cache = tmp_path / "cache"

    def build() -> TrainStepResult:
        result = scan(str(repo), options=ScanOptions(jobs=1, cache=False, target="cpu"))
        build_skeletons(result, tmp_path / "out" / "skeletons", run=True, compare_torch=False,
                        cache_dir=cache)
        [got] = result.train_steps
        return got

    first = build()
    assert first.status == "pass", first.error
    stored = [p for p in (cache / "cells").glob("*.json")
              if "loss_before" in p.read_text(encoding="utf-8")]
    assert len(stored) == 1
    # the outcome msready reads next time is the stored one: mark it to tell
    outcome = json.loads(stored[0].read_text(encoding="utf-8"))
    stored[0].write_text(json.dumps({**outcome, "loss_after": 123.0}), encoding="utf-8")
    again = build()
    assert (again.status, again.loss_before, again.loss_after) == (
        "pass", first.loss_before, 123.0)
    # a failure naming where MindSpore held a value reads the same on every run
    stored[0].write_text(json.dumps({"status": "fail", "error": (
        "TypeError: For 'Add', value_ptr: 0x55c1def73ed0 is not <Tensor at 0x7f3a12bc4d90>")}),
        encoding="utf-8")
    failed = build()
    assert (failed.status, failed.error) == (
        "fail", "TypeError: For 'Add' is not <Tensor at 0x…>")
    assert "0x7f3a" not in (tmp_path / "out" / failed.step_file).read_text(encoding="utf-8")


@pytest.mark.parametrize(("torch_name", "kwargs", "expected"), [
    ("torch.optim.SGD", {"lr": 0.1, "momentum": 0, "nesterov": False},
     "nn.SGD(model.trainable_params(), learning_rate=0.1, momentum=0.0, nesterov=False)"),
    ("torch.optim.Adam", {"lr": 1e-3, "betas": (0.5, 0.9), "weight_decay": 1e-4},
     "nn.Adam(model.trainable_params(), learning_rate=0.001, beta1=0.5, beta2=0.9, "
     "weight_decay=0.0001)"),
    ("torch.optim.AdamW", {"lr": 3e-4, "betas": (0.9, 0.95)},
     "nn.AdamWeightDecay(model.trainable_params(), learning_rate=0.0003, beta1=0.9, "
     "beta2=0.95, eps=1e-08, weight_decay=0.01)"),
    ("torch.optim.RMSprop", {"lr": 1e-3, "momentum": 0.9},
     "nn.RMSProp(model.trainable_params(), learning_rate=0.001, momentum=0.9, decay=0.99, "
     "epsilon=1e-08)"),
    ("torch.optim.Adagrad", {"lr": 0.05},
     "nn.Adagrad(model.trainable_params(), learning_rate=0.05, accum=0.0)"),
    ("torch.optim.Adadelta", {}, "nn.Adadelta(model.trainable_params(), learning_rate=1.0, "
                                  "epsilon=1e-06)"),
    ("torch.optim.Adamax", {"betas": (0.8, 0.9)},
     "nn.AdaMax(model.trainable_params(), beta1=0.8, beta2=0.9, learning_rate=0.002, "
     "eps=1e-08)"),
])
def test_each_optimizer_mapping_updates_a_mindspore_model(
        torch_name: str, kwargs: dict[str, object], expected: str) -> None:
    import mindspore
    import numpy as np
    from mindspore import nn

    code, notes = optimizer_code(torch_name, [None], kwargs)
    assert (code, notes) == (expected, [])
    model = nn.Dense(3, 2)
    optimizer = eval(code, {"nn": nn, "model": model})  # the generated line, as written

    def forward(x: mindspore.Tensor) -> mindspore.Tensor:
        return model(x).sum()

    grad_fn = mindspore.value_and_grad(forward, None, optimizer.parameters)
    before = model.weight.asnumpy().copy()
    _, grads = grad_fn(mindspore.Tensor(np.ones((4, 3), np.float32)))
    optimizer(grads)
    assert not np.array_equal(before, model.weight.asnumpy())
    assert set(OPTIMIZERS) >= {torch_name}
