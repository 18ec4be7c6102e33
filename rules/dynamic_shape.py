"""Dynamic shape (MS2xx): values whose shape depends on the data, reachable from forward.

MindSpore's GRAPH_MODE compiles ``construct`` once for static shapes; an operator whose
output length depends on tensor values (``nonzero``, ``x[mask]``, ``unique``, ``x[:k]``
with a runtime ``k``) either fails to compile, recompiles on every new shape, or runs only
in PyNative. Each rule here names the construct, says why its shape depends on the data and
what the fixed-shape MindSpore form is. The family continues in
:mod:`msready.rules.dynamic_shape_index` (indices, segments, sampling, axes, sizes) and
:mod:`msready.rules.dynamic_shape_control` (control flow, input pipelines).
"""

from __future__ import annotations

import libcst as cst

from msready.analyzer.findings import Severity
from msready.analyzer.values import Truth, t_and, t_not, t_or
from msready.rules.dynamic_shape_base import ApiRule, DynamicRule, in_forward
from msready.rules.dynamic_shape_calls import argument, positional


class Nonzero(ApiRule):
    """Flags ``torch.nonzero`` / ``Tensor.nonzero`` (also ``as_tuple=True``) and ``argwhere``
    in code reachable from a forward.

    The number of indices returned equals the number of non-zero elements, known only
    when the data is; GRAPH_MODE needs static shapes, and ``mindspore.ops.nonzero`` runs in
    PyNative but makes the graph dynamic-shaped (slow recompiles, or unsupported on Ascend).

    Keep the shape fixed: select with the mask itself (``ops.select(mask, x, zeros)``,
    ``ops.masked_fill``) or take a fixed number of candidates with ``ops.topk``; if the
    indices are truly needed, declare the dynamic dimension with ``Cell.set_inputs``.
    """

    id = "MS201"
    name = "nonzero"
    APIS = frozenset({"nonzero", "argwhere"})
    VALID = (
        in_forward("        keep = x.nonzero_static(size=16)\n        return x[keep]\n"),
        # Host code: a script's preprocessing runs in Python, outside any graph.
        "import torch\n\ndef prep(x):\n    return torch.nonzero(x > 0)\n\n"
        "if __name__ == '__main__':\n    prep(torch.ones(3))\n",
        "import numpy as np\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        a = np.zeros(3)\n        a.nonzero()\n"
        "        return x\n",
        in_forward("        # torch.nonzero(x) would be dynamic\n        s = 'x.nonzero()'\n"
                   "        return x\n"),
    )
    INVALID = (
        in_forward("        idx = torch.nonzero(x > 0)\n        return idx\n"),
        in_forward("        rows, cols = (x > 0).nonzero(as_tuple=True)\n        return rows\n"),
        in_forward("        return torch.argwhere(x)\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        self.report(
            call,
            f"`{name}` returns one index per non-zero element, so its output shape depends "
            "on the tensor's values.",
            "Keep the shape static: use the mask directly (`ops.select(mask, x, 0)`, "
            "`ops.masked_fill`) or a fixed number of candidates via `ops.topk`; "
            "`mindspore.ops.nonzero` works in PyNative but makes GRAPH_MODE dynamic-shaped "
            "(declare it with `Cell.set_inputs`).",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
        )


class MaskedSelect(ApiRule):
    """Flags ``torch.masked_select`` / ``Tensor.masked_select`` reachable from a forward.

    Its 1-D output holds one element per true mask entry, so its length is data-dependent
    and a GRAPH_MODE graph cannot give it a static shape.

    Keep the full shape and zero out what the mask drops (``ops.masked_fill(x, ~mask, 0)``
    or ``ops.select``), then reduce with the mask as a weight (``(x * mask).sum() /
    mask.sum()``); ``ops.masked_select`` exists but only with a dynamic shape.
    """

    id = "MS202"
    name = "masked-select"
    APIS = frozenset({"masked_select"})
    VALID = (
        in_forward("        return x.masked_fill(x > 0, 0.0)\n"),
        "import torch\n\ndef loss_stats(x, m):\n    return torch.masked_select(x, m).mean()\n\n"
        "def report(x, m):\n    print(loss_stats(x, m))\n",
    )
    INVALID = (
        in_forward("        return torch.masked_select(x, x > 0).sum()\n"),
        in_forward("        picked = x.masked_select(y.bool())\n        return picked\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        self.report(
            call,
            "`masked_select` returns one element per true mask entry, so its length "
            "depends on the mask's values.",
            "Keep the shape: `ops.masked_fill(x, ~mask, 0)` or `ops.select(mask, x, 0)`, and "
            "weight reductions by the mask (`(x * mask).sum() / mask.sum()`).",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
        )


class Unique(ApiRule):
    """Flags ``unique`` and ``unique_consecutive`` (functions and Tensor methods) reachable
    from a forward.

    The number of distinct values is known only from the data, so the output (and the
    counts / inverse outputs) has a data-dependent length that GRAPH_MODE cannot compile
    to a static shape.

    Compute on fixed shapes instead: a one-hot / histogram over the known value range
    (``ops.one_hot`` + sum, ``ops.bincount`` with ``minlength``), or sort and mark the
    first of each run with a boolean mask; ``ops.unique`` runs in PyNative only as
    dynamic-shape.
    """

    id = "MS203"
    name = "unique"
    APIS = frozenset({"unique", "unique_consecutive"})
    VALID = (
        "import numpy as np\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\ndef labels(y):\n"
        "    return np.unique(y)\n",
        "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.unique(x)\n",
    )
    INVALID = (
        in_forward("        ids = torch.unique(y)\n        return x[:, :3], ids\n"),
        in_forward("        vals, counts = y.unique_consecutive(return_counts=True)\n"
                   "        return counts\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        self.report(
            call,
            f"`{name}` returns one entry per distinct value, so its length depends on the "
            "tensor's values.",
            "Use a fixed-size form: a histogram over the known value range "
            "(`ops.one_hot(...).sum(0)` or `ops.bincount(x, minlength=N)`), or sort and mark "
            "run starts with a boolean mask; `ops.unique` only runs with a dynamic shape.",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
        )


class BooleanMaskIndex(DynamicRule):
    """Flags indexing with a boolean mask (``x[mask]``, ``x[~mask]``, ``x[x > 0]``,
    ``x[:, m]``) and assignment through one (``x[mask] = v``), where local data flow
    shows the index is a boolean tensor.

    Reading ``x[mask]`` keeps one row per true entry, a data-dependent shape that
    GRAPH_MODE cannot compile statically. Writing ``x[mask] = v`` keeps the shape but
    lowers to a scatter over data-dependent indices.

    For writes use ``ops.masked_fill(x, mask, v)`` or ``ops.select(mask, v, x)``; for
    reads keep the full tensor and carry the mask (multiply by it, ``masked_fill`` the
    rest, reduce with ``mask.sum()`` as the count).
    """

    id = "MS204"
    name = "boolean-mask-index"
    VALID = (
        in_forward("        mask = torch.arange(x.shape[0])\n        return x[mask]\n"),
        in_forward("        return torch.where(x > 0, x, y)\n"),
        in_forward("        flags = [True, False]\n        return flags[x.dim() > 2]\n"),
        "import numpy as np\n\ndef f(a):\n    return a[a > 0]\n",
        "import torch\nimport torch.nn as nn\n\ndef pick(x, idx):\n    return x[idx]\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        return pick(x, torch.arange(x.size(0)))\n",
    )
    INVALID = (
        in_forward("        return x[x > 0]\n"),
        in_forward("        mask = torch.isnan(x)\n        return x[~mask]\n"),
        in_forward("        keep = (x > 0) & y.bool()\n        return x[:, keep]\n"),
        in_forward("        x[x < 0] = 0\n        return x\n"),
        "import torch\nimport torch.nn as nn\n\ndef pick(x, keep):\n    return x[keep]\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return pick(x, x > 0)\n",
        "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return self.pick(x, torch.isnan(x))\n\n"
        "    def pick(self, x, bad):\n        return x[bad]\n",
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        mask = self.flow.any_mask(node)
        if mask is False:
            return
        via = ""
        for element in node.slice:
            piece = element.slice
            if isinstance(piece, cst.Index) and isinstance(piece.value, cst.Name):
                held = self.ctx.values.expr(piece.value)
                if isinstance(held, tuple) and held[0] == "p":
                    via = f" (`{piece.value.value}` receives a boolean mask from its callers)"
                elif isinstance(held, tuple):
                    via = f" (`{piece.value.value}` is a boolean mask built in another function)"
        self._report(node, self._is_store(node), via,
                     when=t_and(mask, t_not(self.flow.is_python(node.value))))

    def _report(self, node: cst.Subscript, store: bool, via: str = "",
                when: Truth = True) -> None:
        if store:
            self.report(
                node,
                f"Assignment through a boolean mask{via} writes at data-dependent positions.",
                "Write `x = ops.masked_fill(x, mask, value)` or `x = ops.select(mask, value, "
                "x)`: same result with static shapes.",
                symbol="tensor[mask] = value",
                severity=Severity.WARNING,
                when=when,
            )
            return
        self.report(
            node,
            f"Indexing with a boolean mask{via} keeps one element per true entry, so the "
            "result's shape depends on the mask's values.",
            "Keep the full shape and carry the mask: `ops.masked_fill(x, ~mask, 0)` or "
            "`ops.select(mask, x, 0)`, reducing with `mask.sum()` as the count; pad to a "
            "fixed size if a compact tensor is needed.",
            symbol="tensor[mask]",
            when=when,
        )

    def _is_store(self, node: cst.Subscript) -> bool:
        parent = self.ctx.ancestors[-2] if len(self.ctx.ancestors) > 1 else None
        return (isinstance(parent, cst.AssignTarget)
                or (isinstance(parent, cst.AugAssign) and parent.target is node))


class RuntimeSlice(DynamicRule):
    """Flags slices whose bounds are read from tensor values: ``x[:k]`` with
    ``k = int(t)``, ``k = t.item()``, ``k = mask.sum()`` or ``len(keep)`` of a
    variable-length ``keep``.

    The slice length is then known only at run time; GRAPH_MODE needs it constant, and
    ``.item()`` / ``int(t)`` also force a device-to-host sync.

    Slice with shape-derived or constant bounds (``x[:, :x.shape[1]]``, a configured
    maximum) and mask out the tail (``ops.arange(n) < k`` as a mask), or pad every case to
    a bucket size.
    """

    id = "MS205"
    name = "runtime-slice"
    VALID = (
        in_forward("        return x[:, :x.size(1)]\n"),
        in_forward("        h = x.shape[2]\n        return x[:, :h]\n"),
        in_forward("        n = len(x)\n        return x[: n - 1]\n"),
    )
    INVALID = (
        in_forward("        k = int(y.sum())\n        return x[:k]\n"),
        in_forward("        return x[: y.argmax().item()]\n"),
        in_forward("        keep = torch.nonzero(y)\n        n = len(keep)\n"
                   "        return x[:n]\n"),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        runtime = t_or(*(self.flow.element_is_runtime_slice(e) for e in node.slice))
        if runtime is False:
            return
        self.report(
            node,
            "This slice's bound is read from tensor values, so the result's length depends "
            "on the data.",
            "Slice with a constant or shape-derived bound and mask the rest (`ops.arange(n) "
            "< k`), or pad to a fixed bucket size; GRAPH_MODE cannot slice by a runtime "
            "value.",
            symbol="tensor[:runtime]",
            when=t_and(runtime, t_not(self.flow.is_python(node.value))),
        )


class VariableTopk(ApiRule):
    """Flags ``topk`` / ``kthvalue`` whose ``k`` is read from tensor values (a reduction,
    ``.item()``, the length of a variable-length tensor).

    ``topk`` returns ``k`` elements, so a data-dependent ``k`` gives a data-dependent
    shape; a constant ``k`` or one derived from shapes or ``__init__`` arguments is fine.

    Take a fixed maximum ``k`` (a config value or a shape) with ``ops.topk`` and mask the
    entries beyond the runtime count (``ops.arange(k_max) < k``).
    """

    id = "MS206"
    name = "variable-topk"
    APIS = frozenset({"topk", "kthvalue"})
    VALID = (
        in_forward("        return x.topk(5)\n"),
        "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def __init__(self, k):\n        super().__init__()\n        self.k = k\n\n"
        "    def forward(self, x):\n        k = min(self.k, x.size(1))\n"
        "        return torch.topk(x, k, dim=1)\n",
    )
    INVALID = (
        in_forward("        k = int((y > 0).sum())\n        return x.topk(k)\n"),
        in_forward("        return torch.topk(x, k=y.sum().item())\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        k = argument(call, "k", 0 if is_method else 1)
        if k is None:
            return
        self.report(
            call,
            f"`{name}` is called with a `k` read from tensor values, so its output shape "
            "depends on the data.",
            "Use a fixed maximum `k` (a config value or a shape) with `ops.topk` and mask "
            "the entries past the runtime count (`ops.arange(k_max) < k`).",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
            when=self.flow.is_runtime(k),
        )


class WhereCondition(ApiRule):
    """Flags ``torch.where(condition)`` with the condition alone.

    One-argument ``where`` is ``nonzero(condition, as_tuple=True)``: it returns the
    coordinates of the true entries, a data-dependent length. The three-argument form is
    an element-wise select and is fine.

    Use the three-argument form (``ops.where(cond, x, y)`` / ``ops.select``) to keep the
    shape, or a fixed number of candidates with ``ops.topk``.
    """

    id = "MS207"
    name = "where-condition-only"
    APIS = frozenset({"where"})
    VALID = (
        in_forward("        return torch.where(x > 0, x, torch.zeros_like(x))\n"),
        "import numpy as np\n\ndef f(a):\n    return np.where(a > 0)\n",
    )
    INVALID = (
        in_forward("        rows, cols = torch.where(x > 0)\n        return rows\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        args = positional(call)
        if is_method or args is None or len(args) != 1 or len(call.args) != 1:
            return
        self.report(
            call,
            "`torch.where(condition)` returns the coordinates of the true entries, so its "
            "length depends on the condition's values.",
            "Use the three-argument form `ops.where(cond, x, y)` (or `ops.select`) to keep "
            "the shape, or take a fixed number of candidates with `ops.topk`.",
            symbol="torch.where",
        )


class RepeatInterleave(ApiRule):
    """Flags ``repeat_interleave`` whose repeats are a tensor computed from data.

    With tensor repeats the output length is ``repeats.sum()``, known only at run time;
    integer or shape-derived repeats keep a static shape.

    Repeat by a constant maximum and mask the padding, or build the index once outside
    the network (in the dataset) and pass it with a fixed, padded length.
    """

    id = "MS208"
    name = "repeat-interleave-tensor"
    APIS = frozenset({"repeat_interleave"})
    VALID = (
        in_forward("        return x.repeat_interleave(2, dim=0)\n"),
        in_forward("        return torch.repeat_interleave(x, x.size(1), dim=0)\n"),
    )
    INVALID = (
        in_forward("        counts = (y > 0).sum(dim=1)\n"
                   "        return x.repeat_interleave(counts, dim=0)\n"),
        in_forward("        return torch.repeat_interleave(x, y.long().sum(1), dim=0)\n"),
    )

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        args = positional(call)
        if args is None:
            return
        if is_method:
            repeats = argument(call, "repeats", 0)
        else:
            repeats = argument(call, "repeats", 1) if len(args) != 1 else args[0]
        if repeats is None:
            return
        self.report(
            call,
            "`repeat_interleave` with tensor repeats returns `repeats.sum()` rows, a length "
            "that depends on the data.",
            "Repeat by a constant maximum and mask the padding, or precompute the index in "
            "the dataset with a fixed padded length.",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
            when=t_or(self.flow.is_runtime(repeats), self.flow.is_bool(repeats),
                      self.flow.is_varlen(repeats)),
        )

