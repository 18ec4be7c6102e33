"""Porting idioms: the PyTorch habits around a model that a MindSpore port rewrites —
devices, data parallelism, train/eval mode, checkpoints, buffers, ``no_grad``, custom
``autograd.Function``, seeds, the training step, mixed precision, compilation/export and
data loading.

The rules are table-driven. :data:`TABLE` maps fully qualified torch names (exact, or a
module prefix ending in ``.``) to the rule that owns them and its advice; the longest
match wins, so each construct is reported by exactly one rule. Methods that only exist on
modules and optimizers (``model.eval()``, ``opt.zero_grad()``) are matched by name in
files that import torch, unless data flow shows a plain Python receiver.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

import libcst as cst

from msready.analyzer.findings import Category, Confidence, Scope, Severity
from msready.analyzer.syntax import is_name
from msready.rules.base import Calls, FileContext, FileRule
from msready.rules.graph_mode_flow import DEVICE_MOVES, call_is_device_move, python_value


@dataclass(frozen=True, slots=True)
class Advice:
    """What a construct is in MindSpore terms: a message tail and the rewrite."""

    rule: str
    message: str
    suggestion: str
    severity: Severity | None = None
    symbol: str | None = None  # the torch API a method name stands for


def _a(rule: str, message: str, suggestion: str, severity: Severity | None = None,
       symbol: str | None = None) -> Advice:
    return Advice(rule, message, suggestion, severity, symbol)


_CKPT = ("Use `mindspore.save_checkpoint(net, path)` / `mindspore.load_checkpoint(path)` + "
         "`mindspore.load_param_into_net(net, params)`; convert torch weights with a name map "
         "(`running_mean`→`moving_mean`, `weight`→`gamma` for BatchNorm, ...)")
W = Severity.WARNING


def _load_table() -> dict[str, Advice]:
    """``analyzer/data/idioms.toml``: fully qualified torch names (or module prefixes ending
    in ".") -> owning rule and advice, each with the MindSpore fact it rests on."""
    text = resources.files("msready.analyzer").joinpath("data/idioms.toml").read_text(
        encoding="utf-8")
    return {name: _a(str(e["rule"]), str(e["message"]), str(e["suggestion"]),
                     Severity(e["severity"]) if e.get("severity") else None,
                     e.get("symbol"))
            for name, e in tomllib.loads(text).items()}


TABLE: dict[str, Advice] = _load_table()

# Method names that belong to modules / optimizers in torch code -> owning rule and advice.
METHODS: dict[str, Advice] = {
    "train": _a("MS603", "switches the module to training mode",
                "Use `net.set_train(True)` (`set_train(False)` for evaluation).",
                symbol="torch.nn.Module.train"),
    "eval": _a("MS603", "switches the module to evaluation mode", "Use `net.set_train(False)`.",
               symbol="torch.nn.Module.eval"),
    "state_dict": _a("MS604", "reads parameters by torch names", f"{_CKPT}.", W,
                     symbol="torch.nn.Module.state_dict"),
    "load_state_dict": _a("MS604", "loads parameters by torch names", f"{_CKPT}.", W,
                          symbol="torch.nn.Module.load_state_dict"),
    "register_buffer": _a("MS605", "registers a non-trainable buffer",
                          "Use `Cell.register_buffer` (MindSpore 2.x) or "
                          "`mindspore.Parameter(t, requires_grad=False)`; check it still "
                          "lands in the checkpoint.", symbol="torch.nn.Module.register_buffer"),
    "register_parameter": _a("MS605", "registers a parameter by name",
                             "Assign `self.name = mindspore.Parameter(t, name='name')`.",
                             symbol="torch.nn.Module.register_parameter"),
    "zero_grad": _a("MS609", "clears gradients for the next step",
                    "Drop it: `mindspore.value_and_grad` returns fresh gradients each step.", W,
                    symbol="torch.optim.Optimizer.zero_grad"),
    "backward": TABLE["torch.Tensor.backward"],
    "register_hook": TABLE["torch.Tensor.register_hook"],
    **{name: _a("MS613", "registers a module hook",
                f"MindSpore Cells have `{ms_name}` with their own hook signature; hooks run in "
                "PyNative mode only, so keep them out of GRAPH_MODE training.",
                symbol=f"torch.nn.Module.{name}")
       for name, ms_name in (("register_forward_hook", "register_forward_hook"),
                             ("register_forward_pre_hook", "register_forward_pre_hook"),
                             ("register_full_backward_hook", "register_backward_hook"),
                             ("register_backward_hook", "register_backward_hook"),
                             ("register_full_backward_pre_hook", "register_backward_pre_hook"))},
}
_MODE_ARGS = frozenset({"train", "eval"})
EFFORT = {
    Severity.INFO: "in MindSpore this is a mechanical change",
    Severity.WARNING: "the MindSpore port restructures this code",
    Severity.ERROR: "MindSpore has no equivalent, so this needs a redesign",
}


def lookup(name: str | None) -> Advice | None:
    """The advice for a qualified torch name: exact entry, else the longest prefix."""
    if name is None:
        return None
    if name in TABLE:
        return TABLE[name]
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        advice = TABLE.get(".".join(parts[:i]) + ".")
        if advice is not None:
            return advice
    return None


def _mode_call(call: cst.Call) -> bool:
    """``train()`` / ``train(False)`` / ``train(mode=True)`` / ``eval()``: the module API,
    not ``df.eval("a + b")``."""
    if not call.args:
        return True
    return len(call.args) == 1 and is_name(call.args[0].value)  # True, False or a flag


def method_advice(ctx: FileContext, call: cst.Call) -> Advice | None:
    """Advice for a module / optimizer method call found by name in torch code."""
    func = call.func
    if not ctx.imports_torch or not isinstance(func, cst.Attribute):
        return None
    name = func.attr.value
    advice = METHODS.get(name)
    if advice is None:
        return None
    owner = ctx.qualify(func.value)
    if owner is not None or python_value(ctx, func.value):
        return None
    if name in _MODE_ARGS and not _mode_call(call):
        return None
    return advice


_last_call: list[tuple[cst.Call, tuple[str, Advice, Confidence | None] | None]] = []


def classify_call(ctx: FileContext,
                  node: cst.Call) -> tuple[str, Advice, Confidence | None] | None:
    """The symbol, advice and confidence for a call, or None. Every idiom rule asks about
    the same node in turn, so the answer for the last node is kept."""
    if _last_call and _last_call[0][0] is node:
        return _last_call[0][1]
    target = ctx.call_target(node)
    advice = lookup(target)
    found: tuple[str, Advice, Confidence | None] | None = None
    if advice is not None and target is not None:
        found = (target, advice, None)
    else:
        by_name = method_advice(ctx, node)
        if by_name is not None and isinstance(node.func, cst.Attribute):
            found = (target or by_name.symbol or node.func.attr.value, by_name,
                     Confidence.MEDIUM)
    _last_call[:] = [(node, found)]
    return found


class _IdiomRule(FileRule):
    category = Category.IDIOM
    severity = Severity.INFO
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._lines: set[int] = set()

    def emit(self, node: cst.CSTNode, symbol: str, advice: Advice,
             confidence: Confidence | None = None) -> None:
        """Report once per line: nested parts of one construct give one finding."""
        span = self.ctx.span(node)
        line = span.line if span else 0
        if advice.rule != self.id or line in self._lines:
            return
        self._lines.add(line)
        short = symbol.removeprefix("torch.Tensor.")
        severity = advice.severity or self.severity
        self.report(node, f"`{short}` {advice.message}; {EFFORT[severity]}.",
                    advice.suggestion, symbol=symbol, severity=severity,
                    confidence=confidence)

    @classmethod
    def calls(cls) -> Calls:
        """The table's names and prefixes of this rule, and its methods by name."""
        mine = [name for name, advice in TABLE.items() if advice.rule == cls.id]
        return Calls(targets=frozenset(n for n in mine if not n.endswith(".")),
                     prefixes=tuple(n for n in mine if n.endswith(".")),
                     methods=frozenset(n for n, a in METHODS.items() if a.rule == cls.id))

    def visit_Call(self, node: cst.Call) -> None:
        """Report table entries called here, and module/optimizer methods by name."""
        found = classify_call(self.ctx, node)
        if found is not None and found[1].rule == self.id:
            symbol, advice, confidence = found
            self.emit(node, symbol, advice, confidence)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        """Report bare decorators (``@torch.no_grad``, ``@torch.jit.script``)."""
        for part, name, advice in _advised(self.ctx, node):
            self.emit(part, name, advice)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """Report torch base classes (``autograd.Function``, ``Dataset``)."""
        for part, name, advice in _advised(self.ctx, node):
            self.emit(part, name, advice)

    def visit_Assign(self, node: cst.Assign) -> None:
        """Report assignments to torch flags (``torch.backends.cudnn.benchmark = True``)."""
        for part, name, advice in _advised(self.ctx, node):
            self.emit(part, name, advice)


_Advised = tuple[tuple[cst.CSTNode, str, Advice], ...]
_last_advised: list[tuple[cst.CSTNode, _Advised]] = []


def _advised(ctx: FileContext, node: cst.Decorator | cst.ClassDef | cst.Assign) -> _Advised:
    """The table entries a decorator, a class's bases or an assignment's targets name,
    each with the part of ``node`` it is reported at. Every idiom rule asks about the same
    node in turn (and keeps only its own entries), so the answer for the last node is kept."""
    last = _last_advised[0] if _last_advised else None
    if last is not None and last[0] is node:
        return last[1]
    parts: list[tuple[cst.CSTNode, cst.BaseExpression]] = []
    if type(node) is cst.Decorator:
        if type(node.decorator) is cst.Name or type(node.decorator) is cst.Attribute:
            parts.append((node, node.decorator))
    elif type(node) is cst.ClassDef:
        parts.extend((base, base.value) for base in node.bases)
    else:
        parts.extend((target.target, target.target) for target in node.targets  # type: ignore[union-attr]
                     if type(target.target) is cst.Attribute)
    found: list[tuple[cst.CSTNode, str, Advice]] = []
    for part, expr in parts:
        name = ctx.qualify(expr)
        advice = lookup(name)
        if advice is not None and name is not None:
            found.append((part, name, advice))
    advised = tuple(found)
    _last_advised[:] = [(node, advised)]
    return advised


class DeviceHandling(_IdiomRule):
    """Flags device handling: `.to(device)`, `.cuda()`, `.cpu()`, `torch.device`,
    `torch.cuda.*` queries and `torch.backends.*` flags.

    MindSpore has no per-tensor device placement: the backend is chosen once per process
    and every tensor and Cell lives there.

    Call `mindspore.set_device("Ascend" | "GPU" | "CPU", device_id)` at start-up and
    delete the moves; `x.cpu().numpy()` becomes `x.asnumpy()`.
    """

    id = "MS601"
    name = "device-handling"
    VALID = (
        "import torch\n\ndef half(x):\n    return x.to(torch.float16)\n",
        "import mindspore\n\nmindspore.set_device('CPU')\n",
        "def f(rows):\n    line = 'a b'\n    return line.split(), rows.to_csv()\n",
    )
    INVALID = (
        "import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "import torch\n\ndef run(model, x, device):\n    model.to(device)\n"
        "    return model(x.cuda()).cpu()\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Device moves on anything, and the table's device APIs."""
        return super().calls() | Calls(methods=DEVICE_MOVES)

    def visit_Call(self, node: cst.Call) -> None:
        """Report device moves, then torch device APIs."""
        move = call_is_device_move(self.ctx, node)
        if move is not None and self.ctx.imports_torch:
            advice = _a(self.id, "moves data between devices",
                        "Delete it: after `mindspore.set_device(...)` everything is on that "
                        "device" + ("; use `.asnumpy()` to get host data." if move == "cpu"
                                    else "."))
            self.emit(node, f"torch.Tensor.{move}", advice)
            return
        super().visit_Call(node)


class DataParallel(_IdiomRule):
    """Flags data parallelism and torch.distributed: `DataParallel`,
    `DistributedDataParallel`, `torch.distributed.*`, `SyncBatchNorm`,
    `DistributedSampler`, `torch.multiprocessing.spawn`.

    MindSpore parallelises a whole training script through a communication backend and
    a parallel context, not by wrapping the model object.

    Call `mindspore.communication.init()`, set `mindspore.set_auto_parallel_context(
    parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)`, shard the dataset
    with `num_shards`/`shard_id`, and launch with `msrun`.
    """

    id = "MS602"
    name = "data-parallel"
    severity = Severity.WARNING
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.nn.functional.relu(x)\n",
    )
    INVALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "import torch.distributed as dist\n\ndef wrap(model):\n"
        "    dist.init_process_group('nccl')\n    return DDP(model)\n",
        "import torch.nn as nn\n\ndef wrap(model):\n    return nn.DataParallel(model)\n",
    )


class TrainEvalMode(_IdiomRule):
    """Flags `model.train()` / `model.eval()` / `model.train(False)`.

    MindSpore Cells switch between training and inference behaviour (Dropout,
    BatchNorm) with `set_train`, not `train`/`eval`.

    Rename: `net.set_train(True)` for training, `net.set_train(False)` for evaluation.
    """

    id = "MS603"
    name = "train-eval-mode"
    confidence = Confidence.MEDIUM
    VALID = (
        "import pandas as pd\nimport torch\n\ndef f(df):\n    return df.eval('a + b')\n",
        "def evaluate(expr):\n    return eval(expr)\n",
        "import mindspore\n\ndef f(net):\n    net.set_train(False)\n",
        "import torch\nfrom mindspore.train import Model\n\ndef fit(net, epochs):\n"
        "    model = Model(net)\n    model.train(epochs)\n",
    )
    INVALID = (
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "import torch\n\ndef fit(model):\n    model.train(True)\n",
    )


class CheckpointIO(_IdiomRule):
    """Flags checkpoint reading and writing: `torch.save`, `torch.load`, `state_dict()`,
    `load_state_dict()`, torch hub / model-zoo weight downloads.

    MindSpore checkpoints are `.ckpt` files keyed by MindSpore parameter names, which
    differ from torch's (`gamma`/`beta`/`moving_mean` for BatchNorm, for instance); torch
    pickles cannot be loaded directly.

    Use `mindspore.save_checkpoint` / `load_checkpoint` + `load_param_into_net`, and
    convert existing torch weights once with an explicit parameter-name map.
    """

    id = "MS604"
    name = "checkpoint-io"
    severity = Severity.WARNING
    VALID = (
        "import pickle\n\ndef save(obj, path):\n    with open(path, 'wb') as f:\n"
        "        pickle.dump(obj, f)\n",
        "import numpy as np\n\ndef load(path):\n    return np.load(path)\n",
    )
    INVALID = (
        "import torch\n\ndef save(model, path):\n    torch.save(model.state_dict(), path)\n",
        "import torch\n\ndef restore(model, path):\n"
        "    model.load_state_dict(torch.load(path, map_location='cpu'))\n",
    )


class RegisterBuffer(_IdiomRule):
    """Flags `register_buffer(...)` and `register_parameter(...)`.

    MindSpore keeps all Cell state as `Parameter`s; non-trainable state is a Parameter
    with `requires_grad=False`, and whether it is saved depends on that choice rather than
    on `persistent=`.

    Use `Cell.register_buffer` (MindSpore 2.x) or `mindspore.Parameter(t,
    requires_grad=False)`, and check the checkpoint still contains it.
    """

    id = "MS605"
    name = "register-buffer"
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale = torch.nn.Parameter(torch.ones(1))\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.register_buffer('mask', torch.ones(4))\n",
    )


class NoGrad(_IdiomRule):
    """Flags gradient switches: `torch.no_grad()`, `torch.inference_mode()`,
    `torch.enable_grad()`, `torch.set_grad_enabled(...)` as context managers or
    decorators.

    MindSpore records no tape: gradients are computed only for functions passed to
    `mindspore.grad` / `value_and_grad`, so "no grad" regions are the default.

    Drop the context manager; use `ops.stop_gradient(x)` to cut a gradient inside a
    differentiated function and `net.set_train(False)` for inference.
    """

    id = "MS606"
    name = "no-grad"
    VALID = (
        "import torch\n\ndef freeze(model):\n    for p in model.parameters():\n"
        "        p.requires_grad = False\n",
    )
    INVALID = (
        "import torch\n\ndef predict(model, x):\n    with torch.no_grad():\n"
        "        return model(x)\n",
        "import torch\n\n@torch.inference_mode()\ndef predict(model, x):\n    return model(x)\n",
        "import torch\n\n@torch.no_grad\ndef predict(model, x):\n    return model(x)\n",
    )


class CustomAutogradFunction(_IdiomRule):
    """Flags classes derived from `torch.autograd.Function`.

    MindSpore has no `autograd.Function` / `ctx.save_for_backward`; a custom gradient is
    a Cell with a `bprop` method, which also works in GRAPH_MODE.

    Turn `forward` into the Cell's `construct` and `backward` into `bprop(self, *inputs,
    out, dout)` returning one gradient per input; call the Cell instead of `.apply`.
    """

    id = "MS607"
    name = "custom-autograd-function"
    severity = Severity.WARNING
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n",
        "class Function:\n    pass\n\nclass Op(Function):\n    pass\n",
    )
    INVALID = (
        "import torch\n\nclass Clip(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, x):\n        return x.clamp(0, 1)\n\n    @staticmethod\n"
        "    def backward(ctx, g):\n        return g\n",
    )


class RandomSeed(_IdiomRule):
    """Flags seeding and random-state control: `torch.manual_seed`,
    `torch.cuda.manual_seed(_all)`, `torch.Generator`, `torch.use_deterministic_algorithms`,
    `torch.backends.cudnn.deterministic`.

    MindSpore has one global seed for operators and datasets, and determinism is a
    context setting.

    Use `mindspore.set_seed(seed)` (or `mindspore.manual_seed`), `mindspore.Generator`
    for explicit generators, and `mindspore.set_context(deterministic='ON')`.
    """

    id = "MS608"
    name = "random-seed"
    VALID = (
        "import random\nimport numpy as np\n\ndef seed_all(s):\n    random.seed(s)\n"
        "    np.random.seed(s)\n",
    )
    INVALID = (
        "import torch\n\ndef seed_all(s):\n    torch.manual_seed(s)\n"
        "    torch.cuda.manual_seed_all(s)\n",
        "import torch\n\ntorch.backends.cudnn.deterministic = True\n",
    )


class TrainingStep(_IdiomRule):
    """Flags the torch training step: `loss.backward()`, `optimizer.zero_grad()` and
    `optimizer.step()`.

    MindSpore differentiates a function instead of recording a tape: gradients come back
    as values from `value_and_grad`, and the optimizer is a Cell called with them.

    Write `grad_fn = mindspore.value_and_grad(forward_fn, None, optimizer.parameters)`,
    then per step `loss, grads = grad_fn(data, label)` and `optimizer(grads)`; drop
    `zero_grad`.
    """

    id = "MS609"
    name = "training-step"
    severity = Severity.WARNING
    VALID = (
        "import torch\n\ndef rollout(env, action, sched, opt, scaler):\n    env.step(action)\n"
        "    sched.step()\n    scaler.step(opt)\n",
        "import mindspore\n\ndef step(grad_fn, opt, x):\n    loss, grads = grad_fn(x)\n"
        "    opt(grads)\n",
    )
    INVALID = (
        "import torch\n\ndef train(model, loader):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x, y in loader:\n"
        "        opt.zero_grad()\n        loss = torch.nn.functional.mse_loss(model(x), y)\n"
        "        loss.backward()\n        opt.step()\n",
        "import torch\n\ndef train_epoch(model, optimizer, batches):\n    for x in batches:\n"
        "        optimizer.zero_grad()\n        model(x).sum().backward()\n"
        "        optimizer.step()\n",
    )

    STEP = _a("MS609", "applies the gradients",
              "Call the MindSpore optimizer with the gradients: `optimizer(grads)`.",
              Severity.WARNING)

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        # (function, receiver text) of objects whose zero_grad() was called: optimizers.
        self._zeroed: set[tuple[str | None, str]] = set()

    @classmethod
    def calls(cls) -> Calls:
        """``step`` / ``zero_grad`` on anything, and the table's training-step APIs."""
        return super().calls() | Calls(methods=frozenset({"step", "zero_grad"}))

    def visit_Call(self, node: cst.Call) -> None:
        """Report backward / zero_grad, and step() of an optimizer: one built from
        ``torch.optim`` in this function, or one whose ``zero_grad()`` ran before."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("step", "zero_grad"):
            key = (self.ctx.function, self.ctx.text(func.value))
            if func.attr.value == "zero_grad":
                self._zeroed.add(key)
            elif key in self._zeroed or self._built_optimizer(func.value):
                self.emit(node, "torch.optim.Optimizer.step", self.STEP)
                return
        super().visit_Call(node)

    def _built_optimizer(self, receiver: cst.BaseExpression) -> bool:
        if not isinstance(receiver, cst.Name):
            return False
        value = self.ctx.value_of(receiver.value)
        target = self.ctx.call_target(value) if isinstance(value, cst.Call) else None
        return target is not None and target.startswith("torch.optim.") and (
            ".lr_scheduler." not in target)


class MixedPrecision(_IdiomRule):
    """Flags automatic mixed precision: `torch.autocast`, `torch.cuda.amp.autocast`,
    `torch.amp.*` and `GradScaler`.

    MindSpore applies mixed precision to a network once, by casting Cells and operators,
    and scales the loss with its own loss scalers.

    Use `mindspore.amp.auto_mixed_precision(net, "O1"|"O2"|"O3")` and
    `mindspore.amp.DynamicLossScaler` with `mindspore.amp.all_finite` for the gradients.
    """

    id = "MS610"
    name = "mixed-precision"
    severity = Severity.WARNING
    VALID = (
        "import torch\n\ndef half(model):\n    return model.to(torch.float16)\n",
    )
    INVALID = (
        "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n\ndef step(model, x):\n"
        "    with torch.autocast('cuda'):\n        return model(x)\n",
    )


class CompileAndExport(_IdiomRule):
    """Flags torch compilation, export and profiling tools: `torch.compile`, `torch.jit.*`,
    `torch.fx.*`, `torch.onnx.*`, `torch.export.*`, `torch.profiler.*`.

    MindSpore has its own compiler (`mindspore.jit`, GRAPH_MODE), exporter
    (`mindspore.export` to MINDIR/ONNX) and profiler; there is no FX-style graph API.

    Use `mindspore.jit` instead of `torch.compile`/TorchScript, `mindspore.export` for
    deployment, `mindspore.Profiler` for profiling; rewrite FX transformations by hand.
    """

    id = "MS611"
    name = "compile-and-export"
    VALID = (
        "import jax\n\n@jax.jit\ndef f(x):\n    return x * 2\n",
    )
    INVALID = (
        "import torch\n\ndef fast(model):\n    return torch.compile(model)\n",
        "import torch\n\n@torch.jit.script\ndef gelu(x):\n    return x * 0.5\n",
        "import torch\n\ndef export(model, x):\n    torch.onnx.export(model, x, 'm.onnx')\n",
    )


class DataLoading(_IdiomRule):
    """Flags torch data loading: `DataLoader`, `Dataset` subclasses, samplers and other
    `torch.utils.data` helpers.

    MindSpore's input pipeline is `mindspore.dataset`: a Python source wrapped in
    `GeneratorDataset`, then `map` / `batch` / `shuffle` operations that run in parallel
    workers.

    Keep the `Dataset` class as a plain Python source, wrap it with
    `GeneratorDataset(source, column_names=[...], shuffle=True)` and call
    `.batch(batch_size, drop_remainder=True)`.
    """

    id = "MS612"
    name = "dataloader"
    VALID = (
        "import mindspore.dataset as ds\n\ndef build(source):\n"
        "    return ds.GeneratorDataset(source, ['x']).batch(8)\n",
    )
    INVALID = (
        "from torch.utils.data import DataLoader, Dataset\n\nclass Data(Dataset):\n"
        "    def __len__(self):\n        return 1\n\n"
        "loader = DataLoader(Data(), batch_size=4)\n",
    )


class ModuleHooks(_IdiomRule):
    """Flags module and tensor hooks: `register_forward_hook`, `register_forward_pre_hook`,
    `register_full_backward_hook`, `register_backward_hook` and `Tensor.register_hook`.

    MindSpore Cells and tensors have hooks of the same kind, but with their own
    signatures, and they run only in PyNative mode; a GRAPH_MODE network ignores them.

    Port each hook to the MindSpore signature and run the network in PyNative where the
    hook matters (feature extraction, gradient inspection); for gradient changes inside a
    compiled graph write a `bprop`.
    """

    id = "MS613"
    name = "module-hooks"
    VALID = (
        "import torch\n\ndef features(model, x):\n    return model.forward_features(x)\n",
    )
    INVALID = (
        "import torch\n\ndef tap(model, store):\n"
        "    model.layer4.register_forward_hook(lambda m, i, o: store.append(o))\n",
        "import torch\n\ndef clip(x):\n    y = torch.relu(x)\n"
        "    y.register_hook(lambda g: g.clamp(-1, 1))\n    return y\n",
    )


class ActivationCheckpoint(_IdiomRule):
    """Flags activation checkpointing with `torch.utils.checkpoint` (`checkpoint`,
    `checkpoint_sequential`).

    MindSpore recomputes activations per Cell, as a property of the network rather than a
    call wrapped around a function in `forward`.

    Call `block.recompute()` on each sub-Cell to recompute (in `__init__`), or wrap the
    function with `mindspore.recompute`; drop the checkpoint call from `construct`.
    """

    id = "MS614"
    name = "activation-checkpoint"
    VALID = (
        "import torch\n\ndef save(model, path):\n    checkpoint = {'model': 1}\n"
        "    return checkpoint\n",
    )
    INVALID = (
        "import torch\nfrom torch.utils.checkpoint import checkpoint\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return checkpoint(self.block, x, use_reentrant=False)\n",
    )
