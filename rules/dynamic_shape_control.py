"""Dynamic shape (MS2xx), continued: Python control flow on tensor values inside the
network, and input pipelines whose batch shapes vary.

Control flow is scoped to code a forward reaches; input pipelines (``pad_sequence``, a
``collate_fn`` that pads to the longest sample) are reported wherever they are, because
the data loader is never called from a forward.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from msready.analyzer.facts import Arg, FileResult
from msready.analyzer.findings import (
    Category,
    Confidence,
    Finding,
    Location,
    Scope,
    Severity,
)
from msready.analyzer.names import dotted
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.values import Truth, t_or
from msready.rules.base import Calls, FileRule, RepoRule
from msready.rules.dynamic_shape_base import DynamicRule, in_forward

# Calls that only report a problem: a branch made of these changes no shape.
_REPORTING_ROOTS = ("builtins.print", "warnings.", "logging.")
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                          "critical", "log"})


class TensorControlFlow(DynamicRule):
    """Flags Python control flow decided by tensor values in code a forward reaches:
    ``if mask.any():``, ``while (x > 0).any():``, ``assert`` on a tensor, a conditional
    expression on one, and loops whose bounds are read from tensor data
    (``for i in range(int(n.item()))``, ``for i in keep`` over a nonzero result).

    GRAPH_MODE turns a data-dependent condition into a control-flow graph whose branches
    must produce the same shapes and types; loop counts read from data unroll differently
    on every call. A branch that only raises or logs is left alone.

    Compute both branches and select with ``ops.select(cond, a, b)`` (shapes kept), give
    loops a constant trip count with a mask for the inactive steps, and move checks
    (``assert``) out of ``construct`` or into ``ops.Assert``-free validation of the inputs.
    """

    id = "MS213"
    name = "tensor-control-flow"
    severity = Severity.WARNING
    VALID = (
        in_forward("        if x.dim() == 3:\n            x = x.unsqueeze(0)\n        return x\n"),
        in_forward("        if torch.isnan(x).any():\n"
                   "            raise ValueError('nan input')\n        return x\n"),
        in_forward("        if y is None:\n            return x\n        return x + y\n"),
        in_forward("        for i in range(x.size(0)):\n            x = x + 1\n        return x\n"),
        in_forward("        if torch.cuda.is_available() and not torch.jit.is_scripting():\n"
                   "            x = x.cuda()\n        return x\n"),
        in_forward("        for part in y.keys():\n            if part.split('.')[0] == '':\n"
                   "                x = x + 1\n        return x\n"),
        "import torch\n\ndef train_step(loss):\n    loss.backward()\n    if loss.item() > 10:\n"
        "        return None\n    return loss\n",
    )
    INVALID = (
        in_forward("        if (x > 0).any():\n            x = x[:, :2]\n        return x\n"),
        in_forward("        while x.sum() > 1:\n            x = x / 2\n        return x\n"),
        in_forward("        assert torch.isfinite(x).all()\n        return x\n"),
        in_forward("        keep = torch.nonzero(y)\n        for i in range(len(keep)):\n"
                   "            x = x + 1\n        return x\n"),
        in_forward("        return x if y.sum() > 0 else x[:1]\n"),
    )

    def visit_If(self, node: cst.If) -> None:
        if not self._only_reports(node):
            self._report(node.test, "`if`", when=self.flow.is_tensor_test(node.test))

    def visit_While(self, node: cst.While) -> None:
        self._report(node.test, "`while`", when=self.flow.is_tensor_test(node.test))

    def visit_Assert(self, node: cst.Assert) -> None:
        self._report(node.test, "`assert`", when=self.flow.is_tensor_test(node.test))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._report(node.test, "conditional expression",
                     when=self.flow.is_tensor_test(node.test))

    def visit_For(self, node: cst.For) -> None:
        iterable = node.iter
        if isinstance(iterable, cst.Call) and self.ctx.qualify(iterable.func) == "builtins.range":
            self._report(iterable, "loop bound", loop=True,
                         when=t_or(*(self.flow.is_runtime(a.value) for a in iterable.args)))
        else:
            self._report(iterable, "loop over data-dependent values", loop=True,
                         when=t_or(self.flow.is_varlen(iterable),
                                   self.flow.is_runtime_scalar(iterable)))

    def _only_reports(self, node: cst.If) -> bool:
        """True when every branch only raises, passes or logs."""
        blocks: list[cst.BaseSuite] = [node.body]
        if isinstance(node.orelse, cst.Else):
            blocks.append(node.orelse.body)
        elif isinstance(node.orelse, cst.If):
            return False
        return all(self._reporting(stmt) for block in blocks for stmt in _statements(block))

    def _reporting(self, stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, (cst.Raise, cst.Pass)):
            return True
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            func = stmt.value.func
            target = self.ctx.qualify(func) or ""
            if target.startswith(_REPORTING_ROOTS):
                return True
            return isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS
        return False

    def _report(self, node: cst.CSTNode, construct: str, loop: bool = False,
                when: Truth = True) -> None:
        if loop:
            message = (f"This {construct} is read from tensor values, so the number of "
                       "iterations (and what they build) depends on the data.")
            fix = ("Give the loop a constant trip count (a shape or config maximum) and mask "
                   "the inactive steps, or vectorise it.")
        else:
            message = (f"This {construct} is decided by tensor values at run time; its "
                       "branches may build different shapes.")
            fix = ("Compute both branches and pick with `ops.select(cond, a, b)` so shapes "
                   "stay fixed; move input checks out of `construct`.")
        self.report(node, message, fix, symbol=f"python control flow ({construct})", when=when)


def _statements(block: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        for stmt in block.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                yield from stmt.body
            else:
                yield stmt
    elif isinstance(block, cst.SimpleStatementSuite):
        yield from block.body


_PAD_APIS = frozenset({
    "torch.nn.utils.rnn.pad_sequence", "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence", "torch.nn.utils.rnn.pad_packed_sequence",
    "torch.nn.utils.rnn.unpad_sequence", "torch.nn.utils.rnn.unpack_sequence"})
_PAD_SUGGESTION = (
    "MindSpore compiles one graph per input shape: pad to a fixed maximum length or a few "
    "bucket lengths (`dataset.padded_batch(...)` / `bucket_batch_by_length`), or declare the "
    "dynamic dimension with `Cell.set_inputs(Tensor(shape=[None, ...]))`; for RNNs pass "
    "`seq_length` to `mindspore.nn.LSTM`/`GRU` instead of packing.")


class PaddedSequence(FileRule):
    """Flags ``pad_sequence``, ``pack_padded_sequence``, ``pack_sequence`` and
    ``pad_packed_sequence`` from ``torch.nn.utils.rnn``, wherever they are.

    Padding to the longest sequence of each batch gives every batch a different length,
    and packed sequences carry data-dependent batch sizes per step; MindSpore compiles
    a new graph for every new input shape (or needs the dimension declared dynamic).

    Pad to a fixed maximum or a few bucket lengths in the dataset (``padded_batch``,
    ``bucket_batch_by_length``), or declare the dynamic axis with ``Cell.set_inputs``;
    MindSpore's ``nn.LSTM`` / ``nn.GRU`` take ``seq_length`` instead of packed input.
    """

    id = "MS220"
    name = "padded-sequence"
    category = Category.DYNAMIC_SHAPE
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE
    VALID = (
        "import torch\n\ndef collate(batch):\n    return torch.stack(batch)\n",
        "import torch.nn.functional as F\n\ndef fixed(x):\n"
        "    return F.pad(x, (0, 128 - x.size(-1)))\n",
        "# pad_sequence(batch) would vary per batch\nDOC = 'torch.nn.utils.rnn.pad_sequence'\n",
    )
    INVALID = (
        "from torch.nn.utils.rnn import pad_sequence\n\ndef collate(batch):\n"
        "    return pad_sequence(batch, batch_first=True)\n",
        "import torch.nn as nn\nfrom torch.nn.utils import rnn\n\nclass Enc(nn.Module):\n"
        "    def forward(self, x, lengths):\n"
        "        return rnn.pack_padded_sequence(x, lengths, batch_first=True)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """The padding helpers of ``_PAD_APIS``."""
        return Calls(targets=_PAD_APIS)

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node)
        if target not in _PAD_APIS:
            return
        short = target.rsplit(".", 1)[1]
        self.report(
            node,
            f"`{short}` sizes the batch by its longest sequence, so batch shapes change "
            "from batch to batch.",
            _PAD_SUGGESTION,
            symbol=target,
        )


_TRANSFORMS = ("torchvision.transforms.", "torchvision.transforms.v2.")


class VariableImageSize(FileRule):
    """Flags ``transforms.Resize(256)`` (one number: the short side, aspect kept) in a
    ``transforms.Compose([...])`` with no crop or fixed-size resize after it.

    Images of different aspect ratios then come out with different heights and widths,
    so every batch (or every image, at batch size 1) has its own shape, and MindSpore
    compiles a graph per shape.

    Give the pipeline a fixed output size: ``Resize((h, w))`` or a crop after the resize
    (``mindspore.dataset.vision.Resize([h, w])`` / ``CenterCrop``), or pad to a bucket size
    with ``padded_batch``; for detection inputs pad each batch to a fixed maximum.
    """

    id = "MS222"
    name = "variable-image-size"
    category = Category.DYNAMIC_SHAPE
    severity = Severity.WARNING
    confidence = Confidence.MEDIUM
    scope = Scope.ANYWHERE
    VALID = (
        "from torchvision import transforms as T\n\n"
        "tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])\n",
        "import torchvision.transforms as T\n\ntf = T.Compose([T.Resize((224, 224))])\n",
        "from PIL import Image\n\ndef f(im):\n    return im.resize(256)\n",
    )
    INVALID = (
        "from torchvision import transforms\n\n"
        "tf = transforms.Compose([transforms.Resize(800), transforms.ToTensor()])\n",
        "import torchvision.transforms.v2 as T\n\n"
        "def make(size):\n    return T.Compose([T.ToTensor(), T.Resize(size=512)])\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """torchvision's transforms (``Compose``)."""
        return Calls(prefixes=_TRANSFORMS)

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node) or ""
        if not (target.startswith(_TRANSFORMS) and target.endswith(".Compose") and node.args):
            return
        steps = node.args[0].value
        if not isinstance(steps, (cst.List, cst.Tuple)):
            return
        loose: cst.Call | None = None
        for element in steps.elements:
            step = element.value
            kind = self._kind(step)
            if kind == "loose":
                assert isinstance(step, cst.Call)
                loose = step
            elif kind == "fixed":
                loose = None
        if loose is not None:
            self.report(
                loose,
                "This Resize sets only the short side, and nothing after it fixes the size, so "
                "images keep their own aspect ratio and batch shapes vary.",
                "Resize to a fixed `(h, w)` or crop after the resize "
                "(`mindspore.dataset.vision.Resize([h, w])` / `CenterCrop`), or pad batches to "
                "a bucket size with `padded_batch`.",
                symbol=self.ctx.call_target(loose) or "Resize",
            )

    def _kind(self, step: cst.BaseExpression) -> str:
        """'loose' for a short-side Resize, 'fixed' for a crop or a (h, w) resize."""
        if not isinstance(step, cst.Call):
            return ""
        target = self.ctx.call_target(step) or ""
        if not target.startswith(_TRANSFORMS):
            return ""
        name = target.rsplit(".", 1)[-1]
        if name.endswith("Crop"):
            return "fixed"
        if name != "Resize":
            return ""
        size = next((a.value for a in step.args
                     if a.keyword is None or a.keyword.value == "size"), None)
        return "loose" if isinstance(size, cst.Integer) else "fixed"


_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_PADDING_CALLS = _PAD_APIS | {"torch.nn.functional.pad", "numpy.pad"}
_CREATORS = frozenset({"torch.zeros", "torch.full", "torch.ones", "torch.empty",
                       "numpy.zeros", "numpy.full", "torch.Tensor.new_zeros",
                       "torch.Tensor.new_full"})


class PaddingCollate(RepoRule):
    """Flags a ``DataLoader`` whose ``collate_fn`` pads each batch to its own longest sample:
    the collate function (or what it calls) uses ``pad_sequence`` / ``F.pad`` /
    ``np.pad``, or sizes a new tensor from ``max(len(...))``.

    Every batch then has its own shape, and MindSpore compiles a graph per shape, or
    needs the dimension declared dynamic.

    Pad to a fixed length or to bucket lengths in the MindSpore dataset
    (``GeneratorDataset(...).padded_batch`` or ``bucket_batch_by_length``), or declare the
    dynamic dimension with ``Cell.set_inputs``.
    """

    id = "MS221"
    name = "padding-collate"
    category = Category.DYNAMIC_SHAPE
    severity = Severity.WARNING
    confidence = Confidence.MEDIUM
    scope = Scope.ANYWHERE
    VALID = (
        "import torch\nfrom torch.utils.data import DataLoader\n\ndef collate(batch):\n"
        "    return torch.stack(batch)\n\ndef make(ds):\n"
        "    return DataLoader(ds, batch_size=8, collate_fn=collate)\n",
        "import torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n\n"
        "def collate(batch):\n    return [F.pad(b, (0, 1)) for b in batch]\n\n"
        "def make(ds):\n    return DataLoader(ds, batch_size=8)\n",
        "from torch.utils.data import DataLoader\nfrom transformers import DataCollatorWithPadding"
        "\n\ndef make(ds, tok):\n    return DataLoader(\n"
        "        ds, collate_fn=DataCollatorWithPadding(tok, padding='max_length'))\n",
    )
    INVALID = (
        "from torch.nn.utils.rnn import pad_sequence\nfrom torch.utils.data import DataLoader\n"
        "\ndef collate(batch):\n    return pad_sequence(batch, batch_first=True)\n\n"
        "def make(ds):\n    return DataLoader(ds, batch_size=8, collate_fn=collate)\n",
        {"data/collate.py": "import torch\n\nclass PadCollate:\n"
                            "    def __call__(self, batch):\n"
                            "        n = max(len(b) for b in batch)\n"
                            "        out = torch.zeros(len(batch), n)\n"
                            "        for i, b in enumerate(batch):\n"
                            "            out[i, :len(b)] = b\n        return out\n",
         "data/__init__.py": "",
         "train.py": "import torch\nfrom data.collate import PadCollate\n\n"
                     "loader = torch.utils.data.DataLoader([], collate_fn=PadCollate())\n"},
        "from torch.nn.utils.rnn import pad_sequence\nfrom torch.utils.data import DataLoader\n"
        "\nloader = DataLoader([], collate_fn=lambda b: pad_sequence(b, batch_first=True))\n",
        "from torch.utils.data import DataLoader\nfrom transformers import DataCollatorWithPadding"
        "\n\ndef make(ds, tok):\n"
        "    return DataLoader(ds, collate_fn=DataCollatorWithPadding(tok))\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        for rc in repo.calls:
            if rc.external not in _LOADERS:
                continue
            arg = next((a for a in rc.call.args if a.keyword == "collate_fn"), None)
            collate = _padding_collate(repo, rc.file, rc.call.caller, arg)
            if collate is None:
                continue
            call = rc.call
            yield Finding(
                rule=self.id, rule_name=self.name, category=self.category,
                severity=self.severity, confidence=self.confidence,
                location=Location.at(rc.file.path, call.span, call.cell),
                symbol=rc.external,
                message=(f"This DataLoader's collate_fn `{collate}` pads each batch to its "
                         "longest sample, so batch shapes vary."),
                suggestion=_PAD_SUGGESTION,
                function=call.caller,
                scope=self.scope,
            )


def _padding_collate(repo: RepositoryModel, file: FileResult, caller: str,
                     arg: Arg | None) -> str | None:
    """The name of the ``collate_fn=`` argument when it pads to the longest sample: a
    repository function or callable class, a lambda, or a Hugging Face data collator."""
    if arg is None:
        return None
    try:
        expr = cst.parse_expression(arg.text)
    except cst.ParserSyntaxError:
        return None
    if isinstance(expr, cst.Lambda):
        return "lambda" if any(_call_pads(repo, file, caller, c)
                               for c in _calls_in(expr.body)) else None
    wants_call = False
    if isinstance(expr, cst.Call):
        inner = dotted(expr.func)
        if inner is not None and _qualified(file, inner).endswith("functools.partial"):
            if not expr.args:
                return None
            expr = expr.args[0].value
        else:
            if inner is not None and _is_hf_collator(_qualified(file, inner), expr):
                return inner
            expr, wants_call = expr.func, True
    name = dotted(expr)
    function = None if name is None else _function(repo, file, caller, name, wants_call)
    if function is None or not _pads(repo, function):
        return None
    return repo.short_name(function)


def _function(repo: RepositoryModel, file: FileResult, caller: str, name: str,
              wants_call: bool) -> str | None:
    """The repository function ``name`` runs (``__call__`` of a class it constructs)."""
    local = f"{caller}.{name}"
    if local in repo.functions:
        return local
    resolved = repo.resolve(_qualified(file, name), file.module)
    if resolved is None:
        return None
    if resolved.kind == "class" and wants_call:
        return repo.find_method(resolved.name, "__call__")
    if resolved.kind == "function" and not wants_call:
        return resolved.name
    return None


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call inside an expression."""
    if isinstance(node, cst.Call):
        yield node
    for child in node.children:
        yield from _calls_in(child)


def _call_pads(repo: RepositoryModel, file: FileResult, caller: str, call: cst.Call) -> bool:
    """True for a padding API, or a repository function that pads."""
    name = dotted(call.func)
    if name is None:
        return False
    if _qualified(file, name) in _PADDING_CALLS:
        return True
    function = _function(repo, file, caller, name, False)
    return function is not None and _pads(repo, function)


def _is_hf_collator(qualified: str, call: cst.Call) -> bool:
    """A Hugging Face data collator, which pads to the longest sample unless told
    ``padding="max_length"``."""
    if not (qualified.startswith("transformers.") and "DataCollator" in qualified):
        return False
    return not any(a.keyword is not None and a.keyword.value == "padding"
                   and isinstance(a.value, cst.SimpleString)
                   and a.value.value in ('"max_length"', "'max_length'") for a in call.args)


def _pads(repo: RepositoryModel, function: str) -> bool:
    """True when ``function`` (or what it calls) pads to a size taken from the batch."""
    reached = repo.reachable(function)
    externals = {rc.external for rc in repo.calls if rc.call.caller in reached and rc.external}
    if externals & _PADDING_CALLS:
        return True
    return {"builtins.max", "builtins.len"} <= externals and bool(externals & _CREATORS)


def _qualified(file: FileResult, name: str) -> str:
    head, _, rest = name.partition(".")
    bound = file.bindings.get(head)
    if not bound:
        return name
    return f"{bound}.{rest}" if rest else bound

