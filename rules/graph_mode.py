"""Graph-mode (static graph) hazards: Python that a ``nn.Module.forward`` runs but that
MindSpore's GRAPH_MODE / ``mindspore.jit`` compiler cannot turn into a graph.

Every rule here is scoped to ``forward``: the scan keeps a finding only when a forward
(or an ``autograd.Function``) reaches the code through the call graph, and records that
path. The same construct in ``__init__``, a data loader or a training script is quiet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from msready.analyzer.facts import CallKind
from msready.analyzer.findings import (
    Category,
    Confidence,
    Finding,
    Location,
    Scope,
    Severity,
)
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.analyzer.syntax import is_name, self_attr
from msready.rules.base import Calls, RepoRule
from msready.rules.graph_mode_flow import (
    GRAPH,
    GraphRule,
    enclosing_function,
    in_init,
    root,
)

THREAD_MODULES = ("threading", "multiprocessing", "concurrent", "_thread", "subprocess",
                  "torch.multiprocessing", "queue")
# Modules whose calls other rules of this family own, or that are fine in a graph.
# (torch_scatter's segment ops are the dynamic-shape family's.)
QUIET_ROOTS = frozenset({"torch", "torchvision", "builtins", "math", "typing", "mindspore",
                         "logging", "warnings", "typing_extensions", "abc", "torch_scatter"})
OUTPUT_ROOTS = frozenset({"logging", "warnings"})
# Pure-Python helpers: harmless on constants at compile time, so only worth a note.
PURE_STDLIB = frozenset({"functools", "itertools", "operator", "collections", "copy",
                         "dataclasses", "enum", "numbers", "string", "re", "inspect"})


class _GraphRepoRule(RepoRule):
    category = Category.GRAPH_SYNTAX
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.FORWARD

    def finding(self, repo: RepositoryModel, rc: ResolvedCall, symbol: str, message: str,
                suggestion: str, severity: Severity | None = None) -> Finding:
        """A finding at a call site, with the call path from the forward that reaches it."""
        path = repo.forward_paths.get(rc.call.caller, ())
        return Finding(
            rule=self.id, rule_name=self.name, category=self.category,
            severity=severity or self.severity, confidence=self.confidence,
            location=Location.at(rc.file.path, rc.call.span, rc.call.cell),
            symbol=symbol, message=message, suggestion=suggestion,
            trace=tuple(repo.short_name(p) for p in path),
            function=rc.call.caller, scope=self.scope,
        )


def _forward_calls(repo: RepositoryModel) -> Iterator[ResolvedCall]:
    """Calls made by functions that a forward reaches."""
    paths = repo.forward_paths
    for rc in repo.calls:
        if rc.call.caller in paths:
            yield rc


def _is_thread_api(name: str) -> bool:
    return any(name == mod or name.startswith(mod + ".") for mod in THREAD_MODULES)


class LibraryCallInGraph(_GraphRepoRule):
    """Flags calls from forward-reachable code into libraries other than torch: numpy,
    scipy, PIL, cv2, einops, the standard library's random or copy, and so on.

    A static graph holds only MindSpore operators. Other libraries run once, at compile
    time, on constants (JIT Fallback), or fail on tensor inputs; their results are baked
    into the graph and never see the real batch.

    Rewrite the computation with `mindspore.ops` / `mindspore.mint` operators on tensors,
    or move it out of `construct` into data preparation or `__init__`.
    """

    id = "MS501"
    name = "library-call-in-graph"
    VALID = (
        "import numpy as np\nimport torch\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.table = torch.tensor(np.arange(10))\n\n"
        "    def forward(self, x):\n        return x + self.table\n\n"
        "def prepare(batch):\n    return np.stack(batch)\n",
        "import math\nimport torch\n\nclass Attn(torch.nn.Module):\n"
        "    def forward(self, q, k):\n"
        "        return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])\n",
        {"pkg/__init__.py": "", "pkg/util.py": "def scale(x):\n    return x * 2\n",
         "pkg/net.py": "import torch\nfrom pkg.util import scale\n\n"
                       "class Net(torch.nn.Module):\n    def forward(self, x):\n"
                       "        return scale(x)\n"},
        {"net/model.py": "import torch\nfrom utils.boxes import iou\n\n"
                         "class Net(torch.nn.Module):\n    def forward(self, x):\n"
                         "        return iou(x, x)\n",
         "tools/utils/boxes.py": "def iou(a, b):\n    return a\n"},
        "import timm\nimport torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.backbone = timm.create_model('resnet18')\n\n"
        "    def forward(self, x):\n        return self.backbone(x)\n",
    )
    INVALID = (
        "import numpy as np\nimport torch\n\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        w = np.ones(3)\n        return x * torch.tensor(w)\n",
        {"net.py": "import torch\nfrom helpers import match\n\nclass Head(torch.nn.Module):\n"
                   "    def forward(self, x):\n        return match(x)\n",
         "helpers.py": "from scipy.optimize import linear_sum_assignment\n\ndef match(c):\n"
                       "    return linear_sum_assignment(c)\n"},
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """Calls into non-torch libraries from forward-reachable functions."""
        local_roots = {part for module in repo.modules for part in module.split(".")}
        for rc in _forward_calls(repo):
            name = rc.external
            # Only calls of imported names: a `self.<attr>(...)` holding another library's
            # object (a timm or transformers model) is a torch module, not a Python library.
            if (name is None or rc.call.kind is not CallKind.NAME
                    or root(name) in QUIET_ROOTS or _is_thread_api(name)):
                continue
            library = root(name)
            if library in local_roots:
                continue  # a repository package the scan did not include
            stdlib = library in PURE_STDLIB
            yield self.finding(
                repo, rc, name,
                f"`{name}` ({'Python helper module' if stdlib else library}) runs inside "
                f"forward; {GRAPH} compiles only MindSpore operators, so this call runs once "
                "at compile time on constants or fails on tensors.",
                "Rewrite it with `mindspore.ops`/`mindspore.mint` operators on tensors, or "
                "compute it outside `construct` (in `__init__` or the data pipeline).",
                severity=Severity.INFO if stdlib else None,
            )


class CustomClassInGraph(_GraphRepoRule):
    """Flags instances of the repository's own plain classes (not `nn.Module`, not
    `autograd.Function`) created in code a forward reaches.

    Static graph syntax only builds objects of MindSpore types, Cells and classes
    decorated with `@mindspore.jit_class`; constructing any other Python object inside
    `construct` fails to compile.

    Decorate the class with `@mindspore.jit_class` (attributes must be tensors or
    constants), build the object once in `__init__`, or make it an `nn.Cell`.
    """

    id = "MS502"
    name = "custom-class-in-graph"
    VALID = (
        "import torch\n\nclass Boxes:\n    def __init__(self, t):\n        self.t = t\n\n"
        "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.coder = Boxes(1)\n\n    def forward(self, x):\n        return x\n",
        "import torch\n\nclass Block(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return Block()(x)\n",
        "import torch\n\nclass ShapeError(ValueError):\n    pass\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        if x.dim() != 4:\n            raise ShapeError('4-d input')\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Boxes:\n    def __init__(self, t):\n        self.t = t\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        b = Boxes(x)\n"
        "        return b.t\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """Constructor calls of plain repository classes from forward-reachable code."""
        for rc in _forward_calls(repo):
            if rc.call.kind is not CallKind.NAME:
                continue
            resolved = repo.resolve(rc.call.target, rc.file.module)
            if resolved is None or resolved.kind != "class":
                continue
            cls = resolved.name
            if (cls in repo.module_classes or cls in repo.function_classes
                    or _is_exception(repo, cls)):
                continue
            short = cls.rsplit(".", 1)[-1]
            yield self.finding(
                repo, rc, cls,
                f"`{short}(...)` creates an instance of a plain Python class inside forward; "
                f"{GRAPH} can only construct Cells and `@jit_class` classes.",
                f"Decorate `{short}` with `@mindspore.jit_class`, create it once in "
                "`__init__`, or turn it into an `nn.Cell`.",
            )


def _is_exception(repo: RepositoryModel, cls: str) -> bool:
    for ancestor in repo.mro(cls):
        for base in repo.bases(ancestor):
            if base.kind == "external" and root(base.name) == "builtins" and (
                    base.name.endswith(("Error", "Exception", "Warning"))):
                return True
    return False


class ThreadInGraph(_GraphRepoRule):
    """Flags threads, processes, pools and queues (`threading`, `multiprocessing`,
    `concurrent.futures`, `subprocess`) used by code a forward reaches.

    A static graph is one compiled dataflow program; it has no notion of Python threads or
    processes, and the compiler rejects these objects.

    Keep concurrency outside the network: parallel data loading belongs to
    `mindspore.dataset` (`num_parallel_workers`), model parallelism to
    `mindspore.set_auto_parallel_context`.
    """

    id = "MS503"
    name = "thread-in-graph"
    severity = Severity.ERROR
    VALID = (
        "import threading\nimport torch\n\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x\n\n"
        "def serve(net):\n    threading.Thread(target=net).start()\n",
    )
    INVALID = (
        "from concurrent.futures import ThreadPoolExecutor\nimport torch\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, xs):\n"
        "        with ThreadPoolExecutor() as pool:\n"
        "            return list(pool.map(torch.relu, xs))\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        """Thread and process APIs called from forward-reachable code."""
        for rc in _forward_calls(repo):
            if rc.external is None or not _is_thread_api(rc.external):
                continue
            yield self.finding(
                repo, rc, rc.external,
                f"`{rc.external}` uses threads, processes or their locks and queues inside "
                f"forward; {GRAPH} cannot compile Python concurrency.",
                "Move the concurrency out of the network: use `mindspore.dataset` workers for "
                "input loading, or MindSpore's parallel context for model parallelism.",
            )


class PrintInGraph(GraphRule):
    """Flags `print`, `logging` and `warnings` calls in code a forward reaches.

    Graph compilation runs Python output functions once, at compile time, so they show
    nothing about the real batch; printing tensors there is not supported as Python I/O.

    Use `mindspore.ops.print_` (a graph operator) for debugging, or log outside the
    network from its outputs.
    """

    id = "MS505"
    name = "print-in-graph"
    severity = Severity.INFO
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        print('building')\n\n"
        "    def forward(self, x):\n        return x\n\n"
        "def main():\n    print('epoch done')\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        print(x.shape)\n        return x\n",
        "import logging\nimport torch\n\nclass Net(torch.nn.Module):\n"
        "    def forward(self, x):\n        logging.info('forward')\n        return x\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """``print`` and the logging / warnings libraries."""
        return Calls(targets=frozenset({"builtins.print"}), roots=OUTPUT_ROOTS)

    def visit_Call(self, node: cst.Call) -> None:
        """Report Python output calls."""
        target = self.ctx.qualify(node.func)
        if target is None or not (target == "builtins.print" or root(target) in OUTPUT_ROOTS):
            return
        self.report(node, f"`{target.removeprefix('builtins.')}` in forward runs only while "
                    f"{GRAPH} compiles, not per batch.",
                    "Use `mindspore.ops.print_(...)` inside `construct`, or log the "
                    "network's outputs outside it.", symbol=target)


class TryExceptInGraph(GraphRule):
    """Flags `try` / `except` / `finally` blocks in code a forward reaches.

    MindSpore's static graph syntax has no exception handling: `raise` of a builtin
    exception is supported, catching is not.

    Check the condition explicitly before the operation (shapes and dtypes are known at
    compile time), or move the fallible code out of `construct`.
    """

    id = "MS506"
    name = "try-except-in-graph"
    VALID = (
        "import torch\n\nclass Data(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
        "        try:\n            return torch.load(f'{i}.pt')\n"
        "        except OSError:\n            return torch.zeros(3)\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        try:\n            return x.view(-1, 4)\n        except RuntimeError:\n"
        "            return x\n",
    )

    def visit_Try(self, node: cst.Try) -> None:
        """Report a try statement."""
        self._report(node)

    def visit_TryStar(self, node: cst.TryStar) -> None:
        """Report a try/except* statement."""
        self._report(node)

    def _report(self, node: cst.CSTNode) -> None:
        self.report(node, f"`try`/`except` in forward: {GRAPH} has no exception handling.",
                    "Test the condition explicitly (shapes and dtypes are compile-time "
                    "constants) or move this code out of `construct`.", symbol="try")


class GeneratorInGraph(GraphRule):
    """Flags `yield` and `yield from` in code a forward reaches (a generator function).

    Static graphs need every value materialised at compile time; a generator's lazy,
    resumable frame has no graph representation.

    Return a tuple or list instead of yielding, or unroll the loop with a fixed count.
    """

    id = "MS507"
    name = "generator-in-graph"
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, xs):\n"
        "        return torch.stack(tuple(x * 2 for x in xs))\n\n"
        "def batches(data):\n    for d in data:\n        yield d\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.cat(list(self.parts(x)))\n\n"
        "    def parts(self, x):\n        for chunk in x.chunk(2):\n            yield chunk\n",
    )

    def visit_Yield(self, node: cst.Yield) -> None:
        """Report a yield expression."""
        self.report(node, f"A generator (`yield`) runs in forward; {GRAPH} cannot compile "
                    "lazy generators.", "Build and return a tuple or list instead of yielding.",
                    symbol="yield")


class DelInGraph(GraphRule):
    """Flags `del` statements in code a forward reaches.

    Static graph syntax does not support `del`: graph values are immutable SSA nodes, and
    freeing memory is the compiler's job.

    Drop the statement; rebind the name if the intent is to release a large tensor.
    """

    id = "MS508"
    name = "del-in-graph"
    severity = Severity.INFO
    VALID = (
        "import torch\n\ndef train(model, x):\n    out = model(x)\n    del out\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        y = x * 2\n        del x\n        return y\n",
    )

    def visit_Del(self, node: cst.Del) -> None:
        """Report a del statement."""
        self.report(node, f"`del` in forward: {GRAPH} does not support deleting names.",
                    "Remove the `del`; the graph compiler manages tensor lifetimes.",
                    symbol="del")


class GlobalStateInGraph(GraphRule):
    """Flags `global` and `nonlocal` declarations in code a forward reaches.

    A compiled graph reads globals once, as constants; rebinding module or closure state
    from `construct` is not supported and would not be seen by later runs.

    Keep state on the Cell as a `mindspore.Parameter` and update it with `ops.assign`,
    or pass it in and out explicitly.
    """

    id = "MS509"
    name = "global-state-in-graph"
    VALID = (
        "import torch\n\nSTEP = 0\n\ndef tick():\n    global STEP\n    STEP += 1\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nCALLS = 0\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        global CALLS\n        CALLS += 1\n        return x\n",
    )

    def visit_Global(self, node: cst.Global) -> None:
        """Report a global declaration."""
        self._report(node, "global")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        """Report a nonlocal declaration."""
        self._report(node, "nonlocal")

    def _report(self, node: cst.CSTNode, keyword: str) -> None:
        self.report(node, f"`{keyword}` state is rebound in forward; {GRAPH} treats outer "
                    "variables as compile-time constants.",
                    "Hold the state in a `mindspore.Parameter` on the Cell and update it "
                    "with `ops.assign`.", symbol=keyword)


class StarArgsInGraph(GraphRule):
    """Flags forwarding of a function's own `*args` / `**kwargs` to another call in code a
    forward reaches (`self.block(x, *args, **kwargs)`).

    The static graph compiler resolves argument packing at compile time: the number of
    positional arguments and every keyword name must be constants, and a dict of keyword
    tensors is a Python object the graph cannot carry.

    Spell the arguments out (`self.block(x, mask)`), or pass a tuple of tensors with a
    fixed length.
    """

    id = "MS510"
    name = "star-args-in-graph"
    severity = Severity.INFO
    confidence = Confidence.MEDIUM
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x, mask):\n"
        "        shape = (2, -1)\n        return x.view(*shape) * mask\n\n"
        "def build(*args, **kwargs):\n    return Net(*args, **kwargs)\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = torch.nn.Linear(2, 2)\n\n"
        "    def forward(self, x, **kwargs):\n        return self.fc(x, **kwargs)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Calls with an unpacked argument."""
        return Calls(starred=True)

    def visit_Call(self, node: cst.Call) -> None:
        """Report `*args` / `**kwargs` of the enclosing function passed on."""
        fn = enclosing_function(self.ctx)
        if fn is None:
            return
        packed = _star_params(fn.params)
        for arg in node.args:
            name = packed.get(arg.star)
            if name and is_name(arg.value, name):
                self.report(arg, f"`{arg.star}{name}` is forwarded in forward; {GRAPH} needs "
                            "a constant argument structure at compile time.",
                            "Pass the arguments explicitly, or a fixed-length tuple of tensors.",
                            symbol=f"{arg.star}{name}")


def _star_params(params: cst.Parameters) -> dict[str, str]:
    """The names of a signature's ``*args`` and ``**kwargs`` by their star."""
    packed = {}
    if isinstance(params.star_arg, cst.Param):
        packed["*"] = params.star_arg.name.value
    if params.star_kwarg is not None:
        packed["**"] = params.star_kwarg.name.value
    return packed


class SelfAttributeWrite(GraphRule):
    """Flags assignments to `self.<attr>` (and `setattr(self, ...)`) in code a forward
    reaches, outside `__init__`.

    A Cell's attributes are compile-time constants of the graph; `construct` cannot
    rebind them, so caches, counters and saved activations written there fail to compile
    or silently keep their first value.

    Keep mutable state in a `mindspore.Parameter(..., requires_grad=False)` created in
    `__init__` and update it with `ops.assign`; or return the value from `construct`.
    """

    id = "MS511"
    name = "self-attribute-write"
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale = 2.0\n\n"
        "    def forward(self, x):\n        return x * self.scale\n",
        "import torch\n\nclass Trainer:\n    def step(self, x):\n        self.last = x\n\n"
        "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        self.features = x.detach()\n        return x\n",
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        self.calls += 1\n        return x\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        """Report `self.x = ...`."""
        for target in node.targets:
            self._check(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """Report `self.x += ...`."""
        self._check(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        """Report `self.x: T = ...`."""
        if node.value is not None:
            self._check(node.target)

    @classmethod
    def calls(cls) -> Calls:
        """``setattr``."""
        return Calls(targets=frozenset({"builtins.setattr"}))

    def visit_Call(self, node: cst.Call) -> None:
        """Report `setattr(self, ...)`."""
        if (self.ctx.qualify(node.func) == "builtins.setattr" and node.args
                and is_name(node.args[0].value, "self") and not in_init(self.ctx)):
            self._report(node, "setattr(self, ...)")

    def _check(self, target: cst.BaseExpression) -> None:
        if type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._check(element.value)
            return
        if self_attr(target) is not None and not in_init(self.ctx):
            self._report(target, self.ctx.text(target))

    def _report(self, node: cst.CSTNode, what: str) -> None:
        self.report(node, f"`{what}` rebinds a module attribute in forward; in {GRAPH} Cell "
                    "attributes are constants.",
                    "Make it a `mindspore.Parameter(requires_grad=False)` created in `__init__` "
                    "and update it with `ops.assign`, or return the value.", symbol=what)


class LambdaInGraph(GraphRule):
    """Flags `lambda` expressions in code a forward reaches.

    The static graph compiler inlines a lambda only as a pure expression; lambdas stored
    on objects, passed as callbacks to Python helpers (`sorted(key=...)`, `map`) or
    closing over changing variables do not compile.

    Replace the lambda with a method of the Cell or a direct `mindspore.ops` expression.
    """

    id = "MS512"
    name = "lambda-in-graph"
    severity = Severity.INFO
    confidence = Confidence.MEDIUM
    VALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.act = lambda t: t * 2\n\n"
        "    def forward(self, x):\n        return x\n",
    )
    INVALID = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, xs):\n"
        "        return sorted(xs, key=lambda t: t.shape[0])\n",
    )

    def visit_Lambda(self, node: cst.Lambda) -> None:
        """Report a lambda."""
        self.report(node, f"`lambda` in forward: {GRAPH} compiles lambdas only as inlined "
                    "pure expressions, not as callbacks or stored functions.",
                    "Replace it with a method of the Cell or an inline `mindspore.ops` "
                    "expression.", symbol="lambda")
