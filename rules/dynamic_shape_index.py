"""Dynamic shape (MS2xx), continued: data-dependent indices, segment counts, sampling and
axes in code reachable from a forward.

These rules ask the value analysis (through :class:`~msready.rules.dynamic_shape_flow.Flow`):
an index produced by ``nonzero`` or a runtime slice, a segment count read from an index
tensor, a sample count or a ``dim`` read with ``.item()``.
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from msready.analyzer.findings import Severity
from msready.analyzer.values import VARLEN_TARGETS, Truth, t_and, t_not, t_or
from msready.rules.base import Calls
from msready.rules.dynamic_shape_base import ApiRule, DynamicRule, in_forward
from msready.rules.dynamic_shape_calls import argument, receiver, torch_api


class VariableLengthIndex(DynamicRule):
    """Flags ``index_select`` / ``gather`` / ``take`` / ``x[idx]`` whose index has a
    data-dependent length: produced by ``nonzero``, one-argument ``where``, boolean-mask
    indexing or a slice with runtime bounds (``order[:n]``).

    The gathered tensor inherits the index's data-dependent length, so the dynamic shape
    spreads through everything computed from it.

    Gather with a fixed-length index (``ops.topk`` for the best ``k``, a padded index plus
    a validity mask) and keep the mask alongside the result.
    """

    id = "MS209"
    name = "variable-length-index"
    APIS: ClassVar[frozenset[str]] = frozenset({"index_select", "gather", "take",
                                                "take_along_dim"})
    VALID = (
        in_forward("        _, idx = x.topk(4)\n        return torch.gather(x, 1, idx)\n"),
        in_forward("        idx = torch.arange(x.size(0))\n"
                   "        return x.index_select(0, idx)\n"),
    )
    INVALID = (
        in_forward("        keep = torch.nonzero(y > 0).squeeze(1)\n"
                   "        return x.index_select(0, keep)\n"),
        in_forward("        order = y.argsort(descending=True)\n        n = int(y.sum())\n"
                   "        top = order[:n]\n        return x[top]\n"),
    )

    @classmethod
    def calls(cls) -> Calls:
        """The torch APIs in ``APIS``."""
        return Calls(apis=cls.APIS)

    def visit_Call(self, node: cst.Call) -> None:
        api = torch_api(self.ctx, node)
        if api is None or api[0] not in self.APIS:
            return
        if api[0] in ("take", "take_along_dim"):
            keyword = "index" if api[0] == "take" else "indices"
            index = argument(node, keyword, 0 if api[1] else 1)
        else:
            index = argument(node, "index", 1 if api[1] else 2)
        if index is not None:
            self._report(node, self._symbol(*api), self.flow.is_varlen(index))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        pieces = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if not pieces:
            return
        varlen = t_or(*(t_and(t_not(self.flow.is_bool(p)), self.flow.is_varlen(p))
                        for p in pieces))
        self._report(node, "tensor[index]", t_and(varlen, t_not(self.flow.is_python(node.value))))

    def _report(self, node: cst.CSTNode, symbol: str, when: Truth) -> None:
        self.report(
            node,
            "The index comes from a data-dependent selection (nonzero, a mask or a runtime "
            "slice), so the gathered tensor's length depends on the data.",
            "Gather with a fixed-length index (`ops.topk` for the best k, or a padded index "
            "plus a validity mask) and carry the mask with the result.",
            symbol=symbol,
            when=when,
        )


class SegmentReduce(DynamicRule):
    """Flags unsorted segment reductions whose output size comes from the data:
    ``torch_scatter`` functions without ``dim_size``, ``torch.segment_reduce``,
    ``bincount`` without ``minlength``, and ``scatter_add`` / ``index_add`` into a tensor
    sized from index values (``torch.zeros(int(idx.max()) + 1)``).

    The number of segments is read from the index tensor, so the output shape changes
    with the data; GRAPH_MODE needs the segment count fixed.

    Pass the number of segments explicitly: ``ops.unsorted_segment_sum(x, ids,
    num_segments)`` (also ``_max`` / ``_min`` / ``_prod``) with a count from shapes or the
    config, ``ops.bincount(x, minlength=N)``, ``dim_size=N`` for ``torch_scatter``.
    """

    id = "MS210"
    name = "segment-reduce"
    SCATTER_APIS: ClassVar[frozenset[str]] = frozenset({
        "scatter_add", "scatter_add_", "index_add", "index_add_", "scatter_reduce",
        "scatter_reduce_", "index_reduce", "index_reduce_"})
    CREATORS: ClassVar[frozenset[str]] = frozenset({"zeros", "ones", "empty", "full",
                                                    "new_zeros", "new_ones", "new_empty",
                                                    "new_full"})
    VALID = (
        "import torch.nn as nn\nfrom torch_scatter import scatter\n\nclass Net(nn.Module):\n"
        "    def forward(self, x, index):\n"
        "        return scatter(x, index, dim=0, dim_size=x.size(0), reduce='sum')\n",
        in_forward("        out = torch.zeros(x.size(0), x.size(1))\n"
                   "        return out.index_add(0, y.long(), x)\n"),
        in_forward("        return torch.bincount(y.long(), minlength=10)\n"),
    )
    INVALID = (
        "import torch.nn as nn\nfrom torch_scatter import scatter_mean\n\n"
        "class Net(nn.Module):\n    def forward(self, x, batch):\n"
        "        return scatter_mean(x, batch, dim=0)\n",
        in_forward("        n = int(y.max()) + 1\n        out = torch.zeros(n, x.size(1))\n"
                   "        return out.index_add_(0, y, x)\n"),
        in_forward("        return torch.segment_reduce(x, 'sum', lengths=y)\n"),
        in_forward("        return y.bincount()\n"),
    )

    @classmethod
    def calls(cls) -> Calls:
        """torch_scatter, and the torch segment, bincount and scatter APIs."""
        return Calls(roots=frozenset({"torch_scatter"}),
                     apis=cls.SCATTER_APIS | {"segment_reduce", "bincount"})

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node) or ""
        if target.split(".")[0] == "torch_scatter":
            if not any(a.keyword is not None and a.keyword.value in ("dim_size", "out")
                       for a in node.args):
                self._report(node, target, "the largest index value")
            return
        api = torch_api(self.ctx, node)
        if api is None:
            return
        name, is_method = api
        if name == "segment_reduce":
            self._report(node, "torch.segment_reduce", "the `lengths` / `offsets` values")
        elif name == "bincount" and argument(node, "minlength", 1 if is_method else 2) is None:
            self._report(node, self._symbol(name, is_method), "the largest input value")
        elif name in self.SCATTER_APIS:
            into = receiver(node) if is_method else argument(node, "input", 0)
            if into is not None:
                self._report(node, self._symbol(name, is_method),
                             "values read from the index tensor", self.flow.is_varlen(into))

    def _report(self, node: cst.CSTNode, symbol: str, source: str, when: Truth = True) -> None:
        self.report(
            node,
            f"This segment reduction takes its number of segments from {source}, so its "
            "output shape depends on the data.",
            "Give the segment count explicitly: `ops.unsorted_segment_sum(x, ids, "
            "num_segments)` (or `_max`/`_min`/`_prod`) with a shape or config value, "
            "`ops.bincount(x, minlength=N)`, or `dim_size=N` for torch_scatter.",
            symbol=symbol,
            when=when,
        )


class RandomSampling(DynamicRule):
    """Flags sampling inside the network: ``torch.multinomial``, ``torch.randperm`` with a
    size read from data, and numpy / stdlib sampling (``np.random.choice``,
    ``np.random.permutation``, ``random.sample``).

    The sampled indices (and, with a data-dependent count, their number) change with every
    call; numpy and ``random`` calls cannot be compiled into a MindSpore graph at all.

    Sample with MindSpore ops and a fixed count (``ops.multinomial(p, num_samples)``,
    ``ops.randperm(n)`` with ``n`` from a shape, ``ops.shuffle``), or move the sampling into
    the dataset pipeline and feed the indices as an input.
    """

    id = "MS211"
    name = "random-sampling"
    severity = Severity.WARNING
    FOREIGN: ClassVar[frozenset[str]] = frozenset({
        "numpy.random.choice", "numpy.random.permutation", "numpy.random.shuffle",
        "random.sample", "random.choices", "random.shuffle"})
    VALID = (
        in_forward("        perm = torch.randperm(x.size(0))\n        return x[perm]\n"),
        "import numpy as np\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\ndef split(n):\n"
        "    return np.random.choice(n, 10)\n",
    )
    INVALID = (
        in_forward("        idx = torch.multinomial(x.softmax(-1), 8)\n        return idx\n"),
        "import numpy as np\nimport torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        idx = np.random.choice(x.shape[0], 4)\n"
        "        return x[idx]\n",
        in_forward("        n = int((y > 0).sum())\n        return x[torch.randperm(n)]\n"),
    )

    @classmethod
    def calls(cls) -> Calls:
        """numpy / stdlib sampling, torch's multinomial and randperm."""
        return Calls(targets=cls.FOREIGN, apis=frozenset({"multinomial", "randperm"}))

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node) or ""
        if target in self.FOREIGN:
            self._report(node, target, Severity.ERROR)
            return
        api = torch_api(self.ctx, node)
        if api is None:
            return
        if api[0] == "multinomial":
            count = argument(node, "num_samples", 0 if api[1] else 1)
            runtime = count is not None and self.flow.is_runtime(count)
            self._report(node, self._symbol(*api), Severity.ERROR, runtime)
            self._report(node, self._symbol(*api), Severity.WARNING, t_not(runtime))
        elif api[0] == "randperm" and not api[1]:
            size = argument(node, "n", 0)
            if size is not None:
                self._report(node, "torch.randperm", Severity.ERROR, self.flow.is_runtime(size))

    def _report(self, node: cst.CSTNode, symbol: str, severity: Severity,
                when: Truth = True) -> None:
        self.report(
            node,
            f"`{symbol}` samples indices inside the network; the selection (and a count "
            "read from data) changes from call to call.",
            "Sample with MindSpore ops and a fixed count (`ops.multinomial(p, num_samples)`, "
            "`ops.randperm(n)` with `n` from a shape), or sample in the dataset pipeline and "
            "feed the indices as an input; numpy/random calls cannot run in GRAPH_MODE.",
            symbol=symbol,
            severity=severity,
            when=when,
        )


class VariableAxis(ApiRule):
    """Flags reductions and transposes over an axis read from tensor values:
    ``x.sum(dim=int(t))``, ``x.transpose(0, d)`` with ``d = t.argmax().item()``.

    The axis decides the output's shape, so an axis known only at run time makes the
    shape data-dependent; GRAPH_MODE needs every axis to be a compile-time constant.

    Use a constant axis (compute all candidates and select with ``ops.select`` or a
    one-hot weight), or decide the axis outside the network and build one Cell per case.
    """

    id = "MS212"
    name = "variable-axis"
    APIS = frozenset({
        "sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "argmax",
        "argmin", "norm", "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod",
        "transpose", "permute", "flip", "roll", "squeeze", "unsqueeze", "movedim",
        "swapaxes", "swapdims", "select", "narrow", "cat", "stack", "split", "chunk",
        "any", "all", "median", "flatten", "unbind"})
    DIM_KEYWORDS: ClassVar[frozenset[str]] = frozenset({
        "dim", "axis", "dims", "dim0", "dim1", "start_dim", "end_dim", "source",
        "destination"})
    VALID = (
        in_forward("        return x.sum(dim=-1).transpose(0, 1)\n"),
        in_forward("        d = x.dim() - 1\n        return torch.max(x, y).sum(d)\n"),
    )
    INVALID = (
        in_forward("        d = int(y.argmax())\n        return x.sum(dim=d)\n"),
        in_forward("        return x.transpose(0, y.argmax().item())\n"),
    )

    # Positional places of the axis arguments in the method form (None: every one);
    # the function form (``torch.sum(x, d)``) has the input first. Default: (0,).
    DIM_POSITIONS: ClassVar[dict[str, tuple[int, ...] | None]] = {
        "transpose": (0, 1), "swapaxes": (0, 1), "swapdims": (0, 1), "movedim": (0, 1),
        "flatten": (0, 1), "permute": None, "flip": None, "roll": (1,), "norm": (1,),
        "split": (1,), "chunk": (1,)}

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        positions = self.DIM_POSITIONS.get(name, (0,))
        index = 0 if is_method else -1
        varies: list[Truth] = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is not None and keyword not in self.DIM_KEYWORDS:
                continue
            if keyword is None:
                place, index = index, index + 1
                if place < 0 or (positions is not None and place not in positions):
                    continue
            varies.append(self.flow.is_runtime(arg.value) if keyword is not None
                          else self.flow.is_runtime_scalar(arg.value))
        self.report(
            call,
            f"`{name}` works over an axis read from tensor values, so the output "
            "shape depends on the data.",
            "Use a constant axis (compute each candidate and pick with `ops.select` "
            "or a one-hot weight), or decide the axis outside the network.",
            symbol=self._symbol(name, is_method),
            confidence=self._confidence(call, is_method),
            when=t_or(*varies),
        )


class RuntimeSize(DynamicRule):
    """Flags shapes given by values read from tensor data: creation (``torch.zeros(n)``,
    ``torch.arange(n)``), reshaping (``x.view(n, -1)``, ``x.expand(n, d)``), splitting
    (``x.split(counts.tolist())``), narrowing, padding and resizing
    (``F.interpolate(size=(h, w))``) with ``n = int(t)``, ``t.item()``, ``mask.sum()``.

    The output shape is then known only at run time; GRAPH_MODE needs every size to be a
    constant or a shape of an input.

    Take sizes from shapes or constants (a configured maximum) and mask or pad the
    rest; resize to a fixed size (``ops.interpolate(size=(M, M))``, ``ops.roi_align``) and
    crop outside the network; split into equal parts with a validity mask.
    """

    id = "MS214"
    name = "runtime-size"
    # API -> (positional indexes holding sizes, None meaning all; size keywords).
    SIZES: ClassVar[dict[str, tuple[tuple[int, ...] | None, tuple[str, ...]]]] = {
        "torch.zeros": (None, ("size",)), "torch.ones": (None, ("size",)),
        "torch.empty": (None, ("size",)), "torch.rand": (None, ("size",)),
        "torch.randn": (None, ("size",)), "torch.full": ((0,), ("size",)),
        "torch.arange": (None, ("end", "start")), "torch.eye": (None, ("n", "m")),
        "torch.linspace": ((2,), ("steps",)), "torch.narrow": ((3,), ("length",)),
        "torch.split": ((1,), ("split_size_or_sections",)),
        "torch.Tensor.new_zeros": (None, ("size",)), "torch.Tensor.new_ones": (None, ("size",)),
        "torch.Tensor.new_empty": (None, ("size",)), "torch.Tensor.new_full": ((0,), ("size",)),
        "torch.Tensor.view": (None, ("size",)), "torch.Tensor.reshape": (None, ("shape",)),
        "torch.Tensor.expand": (None, ("size",)), "torch.Tensor.repeat": (None, ()),
        "torch.Tensor.tile": (None, ("dims",)), "torch.Tensor.narrow": ((2,), ("length",)),
        "torch.Tensor.split": ((0,), ("split_size",)),
        "torch.nn.functional.interpolate": ((1, 2), ("size", "scale_factor")),
        "torch.nn.functional.upsample": ((1, 2), ("size", "scale_factor")),
        "torch.nn.functional.pad": ((1,), ("pad",)),
        "torch.nn.functional.adaptive_avg_pool1d": ((1,), ("output_size",)),
        "torch.nn.functional.adaptive_avg_pool2d": ((1,), ("output_size",)),
        "torch.nn.functional.adaptive_max_pool2d": ((1,), ("output_size",)),
    }
    VALID = (
        in_forward("        n, c = x.shape[:2]\n"
                   "        return x.view(n, c, -1), torch.zeros(n, 4)\n"),
        in_forward("        return torch.nn.functional.interpolate(x, size=(32, 32))\n"),
        in_forward("        return x.split(x.size(0) // 2)\n"),
    )
    INVALID = (
        in_forward("        n = int((y > 0).sum())\n        return torch.zeros(n, 4)\n"),
        in_forward("        h = int(y[0].item())\n"
                   "        return torch.nn.functional.interpolate(x, size=(h, h))\n"),
        in_forward("        counts = (y > 0).sum(1)\n        return x.split(counts.tolist())\n"),
    )

    @classmethod
    def calls(cls) -> Calls:
        """The sized constructors of ``SIZES``."""
        return Calls(targets=frozenset(cls.SIZES))

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node)
        spec = self.SIZES.get(target or "")
        if spec is None:
            return
        positions, keywords = spec
        index = 0
        sizes: list[Truth] = []
        for arg in node.args:
            if arg.star:
                return
            if arg.keyword is not None:
                sized = arg.keyword.value in keywords
            else:
                sized = positions is None or index in positions
                index += 1
            if sized:
                sizes.append(self._runtime(arg.value))
        self.report(
            node,
            f"`{target}` gets a size read from tensor values, so its output shape "
            "depends on the data.",
            "Take sizes from shapes or constants (a configured maximum) and mask or "
            "pad the rest; resize to a fixed size and crop outside the network; split "
            "into equal parts with a validity mask.",
            symbol=target or "size",
            when=t_or(*sizes),
        )

    def _runtime(self, value: cst.BaseExpression) -> Truth:
        if isinstance(value, (cst.Tuple, cst.List)):
            return t_or(*(self._runtime(e.value) for e in value.elements))
        return self.flow.is_runtime(value)


class NonMaxSuppression(DynamicRule):
    """Flags ``torchvision.ops.nms`` / ``batched_nms`` / ``remove_small_boxes`` in code a
    forward reaches.

    They return the indices of the boxes kept, as many as survive the overlap or size
    test, so the output length depends on the boxes' values.

    Use ``mindspore.ops.NMSWithMask`` (Ascend/GPU/CPU), which keeps a fixed number of
    boxes and returns a validity mask; on Ascend sort the boxes by score first, since it
    ignores the scores there. Keep the mask next to the boxes instead of indexing with it.
    """

    id = "MS215"
    name = "non-max-suppression"
    VALID = (
        "import torch.nn as nn\nfrom torchvision.ops import nms\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\n"
        "def postprocess(boxes, scores):\n    return nms(boxes, scores, 0.5)\n\n"
        "if __name__ == '__main__':\n    postprocess(None, None)\n",
        in_forward("        # torchvision.ops.nms(boxes, scores, 0.5) runs after export\n"
                   "        return x\n"),
    )
    INVALID = (
        "import torch.nn as nn\nimport torchvision\n\nclass Net(nn.Module):\n"
        "    def forward(self, boxes, scores):\n"
        "        keep = torchvision.ops.nms(boxes, scores, 0.5)\n        return boxes[keep]\n",
        "import torch.nn as nn\nfrom torchvision.ops import boxes as box_ops\n\n"
        "class Net(nn.Module):\n    def forward(self, b, s, idx):\n"
        "        return box_ops.batched_nms(b, s, idx, 0.7)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """The box selections of ``VARLEN_TARGETS``."""
        return Calls(targets=VARLEN_TARGETS)

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node)
        if target not in VARLEN_TARGETS:
            return
        self.report(
            node,
            f"`{target.rsplit('.', 1)[-1]}` returns the indices of the boxes it keeps, so its "
            "length depends on the boxes' values.",
            "Use `mindspore.ops.NMSWithMask` (a fixed number of boxes plus a validity mask; on "
            "Ascend sort by score first) and carry the mask instead of indexing with it.",
            symbol=target,
        )
