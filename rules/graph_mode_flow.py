"""Graph-mode hazards that depend on what a value holds (MS504, MS513-MS518), and the
helpers every graph-mode rule asks: does an expression hold a torch tensor, is it a
device, is it a plain Python or other-framework value, which function encloses it.

The walk's own data flow (:meth:`FileContext.is_tensor`) treats every ``torch.Tensor``
method as returning a tensor; these helpers add what graph-mode hazards need on top:
``x.size(0)`` and ``x.dim()`` are Python numbers, ``torch.cuda.is_available()`` is a
Python bool, ``x.shape`` is a tuple, and a comparison of a tensor is still a tensor.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from msready.analyzer.findings import Category, Confidence, Scope, Severity
from msready.analyzer.localvalues import FOREIGN_ROOTS as FOREIGN_LIBRARIES
from msready.analyzer.values import Kind, is_foreign
from msready.rules.base import Calls, FileContext, FileRule

TORCH_ROOTS = frozenset({"torch", "torchvision"})
# Tensor methods that return Python values (numbers, tuples, strings, bools of metadata).
PYTHON_VALUED_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "item", "tolist",
    "data_ptr", "get_device", "stride", "storage_offset", "type", "has_names", "numpy",
    "untyped_storage", "storage", "dim_order", "__len__",
})
# Tensor method names that str, list, set or dict methods share (``name.split(".")``).
SHARED_METHOD_NAMES = frozenset({"split", "sort", "add", "values", "index"})
# torch modules whose lower-case functions compute tensors.
TENSOR_MODULES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.fft",
                            "torch.special", "torch.Tensor"})
# Lower-case torch functions that return Python objects rather than tensors.
PYTHON_VALUED_FUNCTIONS = frozenset({
    "device", "dtype", "finfo", "iinfo", "get_default_dtype", "numel", "typename",
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "compile", "load", "save",
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_default_dtype",
})
# Attributes of a tensor that are tensors again (``x.T``, ``x.grad``).
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
DEVICE_STRINGS = ("cuda", "cpu", "mps", "xpu", "npu", "meta")
FOREIGN_ROOTS = FOREIGN_LIBRARIES | {"builtins"}

_MAX_DEPTH = 8
GRAPH = "MindSpore GRAPH_MODE (static graph, `mindspore.jit`)"


def root(name: str) -> str:
    """The top-level package of a dotted name."""
    return name.split(".", 1)[0]


def is_torch(name: str | None) -> bool:
    """True for a name inside torch or torchvision."""
    return name is not None and root(name) in TORCH_ROOTS


def _tensor_call(ctx: FileContext, call: cst.Call, depth: int) -> bool:
    target = ctx.call_target(call)
    if target is None or not is_torch(target):
        return False
    module, _, name = target.rpartition(".")
    if module == "torch.Tensor":
        if name in PYTHON_VALUED_METHODS or name.startswith(("is_", "__")):
            return False
        if name in SHARED_METHOD_NAMES and isinstance(call.func, cst.Attribute):
            return _tensor_receiver(ctx, call, depth)
        return True
    if module not in TENSOR_MODULES or not name[:1].islower():
        return False
    return name not in PYTHON_VALUED_FUNCTIONS and not name.startswith(
        ("is_", "are_", "get_", "set_", "use_"))


def _tensor_receiver(ctx: FileContext, call: cst.Call, depth: int) -> bool:
    """For a method name that str/list/set/dict share with torch.Tensor: True only when
    the receiver is known to be a tensor, or (``split``) the arguments are a tensor's."""
    assert isinstance(call.func, cst.Attribute)
    receiver = call.func.value
    if ctx.is_tensor(receiver) or tensor_valued(ctx, receiver, depth + 1):
        return True
    if call.func.attr.value == "split":
        first = call.args[0].value if call.args else None
        return first is not None and not isinstance(
            first, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
    return False


def tensor_valued(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True when the value analysis shows, inside this file, that ``expr`` holds a torch
    tensor (a guess from an unknown value does not count).

    Unknown values (function parameters, attributes of ``self``) count as not tensors,
    so that callers stay quiet unless the code itself shows a tensor.
    """
    value = ctx.values.local(expr)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and (
            expr.func.attr.value in SHARED_METHOD_NAMES):
        return any(a.kind is Kind.TENSOR and not a.guess for a in value)
    # A Tensor method on an unknown value counts, as the walk's call targets do.
    return any(a.kind is Kind.TENSOR for a in value)


def device_valued(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True when ``expr`` names a device: ``"cuda"``, ``torch.device(...)``,
    ``x.device``, or a local assigned from one of those."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.SimpleString):
        text = expr.raw_value.lower()
        return text.split(":", 1)[0] in DEVICE_STRINGS
    if isinstance(expr, cst.Call):
        if ctx.call_target(expr) == "torch.device":
            return True
        return isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "device"
    if isinstance(expr, cst.Attribute):  # x.device, self.device, cfg.DEVICE, args.target_device
        return "device" in expr.attr.value.lower()
    if isinstance(expr, cst.IfExp):
        return device_valued(ctx, expr.body, depth + 1) or device_valued(
            ctx, expr.orelse, depth + 1)
    if isinstance(expr, cst.Name):
        value = ctx.value_of(expr.value)
        if value is not None and value is not expr:
            return device_valued(ctx, value, depth + 1)
        # A parameter or module-level setting: its name is the only evidence left.
        return value is None and "device" in expr.value.lower()
    return False


def python_value(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True when the value analysis shows a value that is not torch's: a literal, a
    container, the result of a builtin (``open``, ``str``) or an object of another library
    (``numpy``, the standard library), whose ``train``/``eval``/``step`` methods are their
    own."""
    if isinstance(expr, cst.Call):
        target = ctx.qualify(expr.func)
        if target is not None and root(target) in FOREIGN_ROOTS:
            return True
    return is_foreign(ctx.values.local(expr))


DEVICE_MOVES = frozenset({"cuda", "cpu", "to"})


def call_is_device_move(ctx: FileContext, call: cst.Call) -> str | None:
    """``cuda``/``cpu``/``to`` when ``call`` moves a tensor or a module between devices
    (``x.cuda()``, ``model.to(device)``); ``x.to(torch.float16)`` is a cast, not a move."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in DEVICE_MOVES:
        return None
    owner = ctx.qualify(func.value)
    if (owner is not None and not is_torch(owner)) or python_value(ctx, func.value):
        return None
    method = func.attr.value
    if method != "to":
        return method
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return "to"
            continue
        if device_valued(ctx, arg.value):
            return "to"
    return None


def enclosing_function(ctx: FileContext) -> cst.FunctionDef | None:
    """The innermost ``def`` around the current node."""
    for node in reversed(ctx.ancestors[:-1]):
        if type(node) is cst.FunctionDef:  # not isinstance: an ABC's is slow
            return node  # type: ignore[return-value]
    return None


def in_init(ctx: FileContext) -> bool:
    """True inside ``__init__`` (where a Cell's attributes are legitimately set)."""
    fn = enclosing_function(ctx)
    return fn is not None and fn.name.value == "__init__"


class GraphRule(FileRule):
    """Base of the graph-mode file rules: forward-scoped, graph-syntax category."""

    category = Category.GRAPH_SYNTAX
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.FORWARD


class TensorToPython(GraphRule):
    """Flags tensor-to-Python conversions in forward: `.item()`, `.tolist()`,
    `.numpy()`, and `int()` / `float()` / `bool()` / `math.*` applied to a tensor.

    In a static graph tensor values exist only at run time; converting one to a Python
    number forces a device sync in PyNative and is rejected (or frozen to a compile-time
    constant) in GRAPH_MODE.

    Keep the value a tensor: compare with `ops.select`/masks instead of Python numbers,
    return the tensor and call `.asnumpy()` outside the network.
    """

    id = "MS504"
    name = "tensor-to-python"
    METHODS = frozenset({"item", "tolist", "numpy"})
    CASTS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex"})
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        n = int(x.size(0))\n        return x.view(n, -1)\n",
        "import torch\n\ndef train(model, loader):\n    for x in loader:\n"
        "        loss = model(x).sum()\n        print(loss.item())\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x, names):\n"
        "        parts = 'a b'.split()\n        return x, float('1.5'), parts\n",
        "import numpy as np\nimport torch\n\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        sizes = np.array([1, 2])\n"
        "        return x.split(sizes.tolist())\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        k = x.sum().item()\n        return x * k\n",
        {"net.py": "import torch\nfrom stats import peak\n\nclass Net(torch.nn.Module):\n"
                   "    def forward(self, x):\n        return x / peak(x)\n",
         "stats.py": "def peak(t):\n    return t.max().item()\n"},
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        n = int(torch.max(x))\n        return x[:, :n]\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """``.item()`` / ``.tolist()`` / ``.numpy()`` on anything, casts and ``math``."""
        return Calls(targets=cls.CASTS | {f"torch.Tensor.{m}" for m in cls.METHODS},
                     roots=frozenset({"math"}), methods=cls.METHODS)

    def visit_Call(self, node: cst.Call) -> None:
        """Report conversions of tensors to Python values."""
        target = self.ctx.call_target(node)
        confidence = None
        if target is None and self._helper_conversion(node):
            # A helper module without torch imports: the receiver is most likely a tensor
            # handed down from forward, but nothing in the file proves it.
            assert isinstance(node.func, cst.Attribute)
            target, confidence = f"torch.Tensor.{node.func.attr.value}", Confidence.LOW
        if target is None:
            return
        method = target.removeprefix("torch.Tensor.")
        if target.startswith("torch.Tensor.") and method in self.METHODS:
            self.report(node, f"`.{method}()` turns a tensor into a Python value inside "
                        f"forward; {GRAPH} has no Python values at run time.",
                        "Keep it a tensor (use `ops.*` on it); call `.asnumpy()` on the "
                        "network's output instead.", symbol=target, confidence=confidence)
            return
        if (target in self.CASTS or root(target) == "math") and any(
                tensor_valued(self.ctx, a.value) for a in node.args):
            self.report(node, f"`{target.removeprefix('builtins.')}(...)` of a tensor needs "
                        f"its runtime value; {GRAPH} cannot compile that conversion.",
                        "Stay in tensors: use `ops.cast`, `ops.sqrt`, comparisons and masks "
                        "instead of Python numbers.", symbol=target)

    def _helper_conversion(self, node: cst.Call) -> bool:
        func = node.func
        return (not self.ctx.imports_torch and isinstance(func, cst.Attribute)
                and func.attr.value in self.METHODS and self.ctx.qualify(func.value) is None
                and not python_value(self.ctx, func.value))



class IsinstanceTensorInGraph(GraphRule):
    """Flags `isinstance(x, torch.Tensor)` (or any torch type) in code a forward reaches.

    The static graph compiler evaluates `isinstance` once, at compile time, from the
    inferred type; type-dispatching code written for torch classes must name MindSpore
    types and cannot depend on values that change per call.

    Use `isinstance(x, mindspore.Tensor)` with the port, or split the Cell into one per
    input type so that every branch is decided by the signature.
    """

    id = "MS513"
    name = "isinstance-tensor-in-graph"
    severity = Severity.INFO
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if isinstance(x, (list, tuple)):\n            x = x[0]\n        return x\n",
        "import torch\n\ndef collate(batch):\n    return [b for b in batch "
        "if isinstance(b, torch.Tensor)]\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if isinstance(x, torch.Tensor):\n            x = [x]\n        return x\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """``isinstance``."""
        return Calls(targets=frozenset({"builtins.isinstance"}))

    def visit_Call(self, node: cst.Call) -> None:
        """Report isinstance checks against torch types."""
        if self.ctx.qualify(node.func) != "builtins.isinstance" or len(node.args) < 2:
            return
        kinds = node.args[1].value
        options = ([e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple)
                   else [kinds])
        torch_types = [q for q in (self.ctx.qualify(o) for o in options) if is_torch(q)]
        if torch_types:
            self.report(node, f"`isinstance(..., {torch_types[0]})` in forward is decided at "
                        f"compile time by {GRAPH}, against MindSpore types.",
                        "Check `mindspore.Tensor` in the port, or give each input type its "
                        "own Cell.", symbol=str(torch_types[0]))


class InplaceOpInGraph(GraphRule):
    """Flags in-place tensor operations in code a forward reaches: methods ending in `_`
    (`x.add_(y)`, `buf.copy_(v)`, `x.zero_()`) and augmented assignment on a tensor known
    by data flow (`t += 1`).

    MindSpore's graph is functional: an in-place update on a plain tensor becomes a new
    value, so aliases (module buffers, views) do not see it, and gradients may differ.
    Only `Parameter`s are true state, updated with `ops.assign`.

    Write the out-of-place form (`x = x + y`, `ops.add`), and keep persistent state in a
    `mindspore.Parameter` updated with `ops.assign` / `ops.assign_add`.
    """

    id = "MS514"
    name = "inplace-op-in-graph"
    EXEMPT = frozenset({"requires_grad_", "share_memory_", "retain_grad"})
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        x = x.add(1)\n        count = 0\n        count += 1\n        return x * count\n",
        "import torch\n\ndef train(model, opt):\n    for p in model.parameters():\n"
        "        p.grad.zero_()\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n\nif __name__ == '__main__':\n    train(Net(), None)\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        x.add_(1)\n        return x\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        acc = torch.zeros(3)\n        acc += x\n        return acc\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Tensor methods."""
        return Calls(prefixes=("torch.Tensor.",))

    def visit_Call(self, node: cst.Call) -> None:
        """Report in-place tensor methods."""
        target = self.ctx.call_target(node)
        if target is None or not target.startswith("torch.Tensor."):
            return
        method = target.removeprefix("torch.Tensor.")
        if method.endswith("_") and not method.startswith("_") and method not in self.EXEMPT:
            self.report(node, f"`.{method}()` updates a tensor in place in forward; {GRAPH} "
                        "is functional, so aliases and buffers do not see the update.",
                        f"Use the out-of-place `{method[:-1]}` and rebind the name; for "
                        "persistent state use a `Parameter` with `ops.assign`.", symbol=target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """Report augmented assignment on a tensor."""
        target = node.target
        if isinstance(target, cst.Subscript) or not tensor_valued(self.ctx, target):
            return
        op = self.ctx.text(node.operator).strip()
        self.report(node, f"`{op}` updates a tensor in place in forward; {GRAPH} rebinds it "
                    "as a new value that aliases do not see.",
                    f"Write `{self.ctx.text(target)} = {self.ctx.text(target)} "
                    f"{op[:-1]} ...` (or `ops.assign_add` on a Parameter).",
                    symbol=f"augmented {op}", severity=Severity.INFO)


class SliceAssignInGraph(GraphRule):
    """Flags item and slice assignment into a tensor in code a forward reaches
    (`x[:, 0] = v`, `out[..., :k] += y`).

    In GRAPH_MODE a set-item is compiled into a scatter that produces a new tensor; it is
    not visible through other references (views, buffers) and needs static index shapes.

    Build the result functionally: `ops.concat` of the pieces, `ops.select` / `ops.where`
    with a mask, or `ops.tensor_scatter_elements` with static indices.
    """

    id = "MS515"
    name = "slice-assign-in-graph"
    confidence = Confidence.MEDIUM
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        cache = {}\n        cache['x'] = x\n        return cache['x']\n",
        "import numpy as np\n\ndef prepare(n):\n    a = np.zeros((n, 3))\n    a[:, 0] = 1\n"
        "    return a\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        out = torch.zeros_like(x)\n        out[:, 0] = x[:, 1]\n        return out\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        x[..., :2] = 0\n        return x\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        """Report `t[...] = v`."""
        for target in node.targets:
            self._check(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """Report `t[...] += v`."""
        self._check(node.target)

    def _check(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Subscript):
            return
        if not (tensor_valued(self.ctx, target.value) or _array_index(target)):
            return
        self.report(target, f"`{self.ctx.text(target)} = ...` assigns into a tensor in "
                    f"forward; {GRAPH} turns it into a scatter producing a new tensor.",
                    "Build the value functionally (`ops.concat`, `ops.select` with a mask, "
                    "`ops.tensor_scatter_elements`).", symbol="tensor setitem")


def _array_index(target: cst.Subscript) -> bool:
    """``x[:, 0]`` / ``x[..., 1]``: an index only arrays take (several axes or ``...``),
    unlike a dict or list item (``d[key]``, ``items[i]``)."""
    elements = target.slice
    return len(elements) > 1 or any(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)
        for e in elements)


class DeviceMoveInGraph(GraphRule):
    """Flags `.to(device)`, `.cuda()` and `.cpu()` in code a forward reaches.

    A compiled graph runs entirely on the device chosen with `mindspore.set_device`;
    there is no per-tensor placement, so device moves inside `construct` have no
    equivalent and host round trips break the graph.

    Delete the move; choose the device once with `mindspore.set_device("Ascend")` and
    keep dtype casts (`.to(torch.float16)`) as `ops.cast`.
    """

    id = "MS516"
    name = "device-move-in-graph"
    severity = Severity.INFO
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x.to(torch.float16)\n\n"
        "def train(model, loader, device):\n    for x in loader:\n"
        "        model(x.to(device))\n\n"
        "if __name__ == '__main__':\n    train(Net(), [], 'cpu')\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        mask = torch.ones(3).to(x.device)\n        return x.cuda() * mask\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """``.cuda()`` / ``.cpu()`` / ``.to(...)`` on anything."""
        return Calls(methods=DEVICE_MOVES)

    def visit_Call(self, node: cst.Call) -> None:
        """Report device moves."""
        move = call_is_device_move(self.ctx, node)
        if move is None:
            return
        self.report(node, f"`.{move}(...)` moves a tensor between devices in forward; "
                    f"{GRAPH} runs the whole graph on one device.",
                    "Remove the move; select the device once with `mindspore.set_device`. "
                    "New tensors are created on that device already.",
                    symbol=f"torch.Tensor.{move}")


class TrainingStepInGraph(GraphRule):
    """Flags `backward()`, `torch.autograd.backward` and an optimizer's `step()` /
    `zero_grad()` called from code a forward reaches.

    In MindSpore the network's `construct` is differentiated from outside
    (`mindspore.value_and_grad`); a backward pass or a parameter update inside the graph
    that is being differentiated has no equivalent.

    Move the step out of forward: compute `loss, grads = value_and_grad(fn, None,
    optimizer.parameters)(...)` in the training step and call `optimizer(grads)` there.
    """

    id = "MS517"
    name = "training-step-in-graph"
    severity = Severity.ERROR
    OPTIMIZER_METHODS = frozenset({"step", "zero_grad"})
    VALID = (
        "import torch\n\ndef train(model, x, opt):\n    loss = model(x).sum()\n"
        "    loss.backward()\n    opt.step()\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        loss = (x * 2).sum()\n        loss.backward()\n        return loss\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        opt = torch.optim.SGD(self.parameters(), lr=0.1)\n        opt.step()\n"
        "        return x\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Backward passes, and optimizer methods on anything."""
        return Calls(targets=frozenset({"torch.Tensor.backward", "torch.autograd.backward"}),
                     methods=cls.OPTIMIZER_METHODS)

    def visit_Call(self, node: cst.Call) -> None:
        """Report backward passes and optimizer updates."""
        target = self.ctx.call_target(node)
        if target in ("torch.Tensor.backward", "torch.autograd.backward"):
            self._report(node, str(target))
            return
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value in self.OPTIMIZER_METHODS
                and _optimizer(self.ctx, func.value)):
            self._report(node, f"torch.optim.Optimizer.{func.attr.value}")

    def _report(self, node: cst.CSTNode, symbol: str) -> None:
        self.report(node, f"`{symbol.rsplit('.', 1)[-1]}()` runs a training step inside "
                    f"forward; {GRAPH} differentiates `construct` from outside.",
                    "Move it to the training step: `mindspore.value_and_grad` for the "
                    "gradients, then `optimizer(grads)`.", symbol=symbol)


def _optimizer(ctx: FileContext, receiver: cst.BaseExpression) -> bool:
    """True when ``receiver`` holds a ``torch.optim`` optimizer by local data flow."""
    if isinstance(receiver, cst.Name):
        value = ctx.value_of(receiver.value)
        if isinstance(value, cst.Call):
            target = ctx.call_target(value)
            return target is not None and target.startswith("torch.optim.") and (
                "lr_scheduler" not in target)
    return False


class TensorCheckInGraph(GraphRule):
    """Flags Python `if` statements on a tensor value whose branches only check or report:
    `if torch.isnan(x).any(): raise ...`, `if loss.sum() > 0: print(...)`. Branches that
    build values on a tensor condition are the dynamic-shape family's (MS213).

    A static graph cannot evaluate a Python condition on tensor data: raising on a runtime
    value needs `jit_syntax_level=LAX`, and `print`/`logging` inside such a branch run at
    compile time, not when the condition holds.

    Validate inputs outside `construct` (in the data pipeline or the training step), use
    `ops.print_` for run-time debugging output, or drop the check in the ported Cell.
    """

    id = "MS518"
    name = "tensor-check-in-graph"
    REPORTING = ("builtins.print", "logging.", "warnings.")
    LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                             "critical", "log"})
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if x.dim() != 4 and self.training:\n            raise ValueError('NCHW')\n"
        "        if torch.jit.is_scripting():\n            print('scripted')\n        return x\n",
        "import torch\n\ndef train(model, x):\n    loss = model(x).sum()\n"
        "    if loss > 10:\n        print('diverged')\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x, name, seen):\n"
        "        parts = name.split('.')\n        if parts[0] == 'head' or seen.values():\n"
        "            raise KeyError(name)\n        return -x\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            x = -x\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if torch.isnan(x).any():\n            raise ValueError('nan input')\n"
        "        return x\n",
        "import logging\nimport torch\n\nlog = logging.getLogger(__name__)\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if not (x.abs().max() < 1e4):\n            log.warning('large input')\n"
        "        return x\n",
    )

    def visit_If(self, node: cst.If) -> None:
        """Report an if statement on a tensor whose branches only raise or report."""
        if not _tensor_test(self.ctx, node.test) or not self._only_reports(node):
            return
        self.report(node.test, f"`if {self.ctx.text(node.test)}` checks a runtime tensor value "
                    f"in forward; {GRAPH} cannot evaluate a Python condition on tensor data.",
                    "Validate the inputs outside `construct`, use `ops.print_` for run-time "
                    "output, or drop the check in the port.", symbol="if")

    def _only_reports(self, node: cst.If) -> bool:
        blocks: list[cst.BaseSuite] = [node.body]
        if isinstance(node.orelse, cst.If):
            return False
        if isinstance(node.orelse, cst.Else):
            blocks.append(node.orelse.body)
        return all(self._reporting(stmt) for block in blocks for stmt in _statements(block))

    def _reporting(self, stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, (cst.Raise, cst.Pass)):
            return True
        if not (isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call)):
            return False
        func = stmt.value.func
        target = self.ctx.qualify(func) or ""
        if target.startswith(self.REPORTING):
            return True
        return isinstance(func, cst.Attribute) and func.attr.value in self.LOG_METHODS


def _statements(block: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The simple and compound statements of a suite, in order."""
    if isinstance(block, cst.IndentedBlock):
        for stmt in block.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                yield from stmt.body
            else:
                yield stmt
    else:
        assert isinstance(block, cst.SimpleStatementSuite)
        yield from block.body


def _tensor_test(ctx: FileContext, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tensor_test(ctx, test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _tensor_test(ctx, test.left) or _tensor_test(ctx, test.right)
    return tensor_valued(ctx, test)
