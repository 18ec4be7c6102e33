"""Sparsity (MS3xx): sparse tensors, sparse products, sparse embeddings and optimizers.

MindSpore has two sparse formats, ``mindspore.COOTensor`` and ``mindspore.CSRTensor``
(both 2-D only), and their operators run on GPU and CPU, several on GPU only
(``to_dense``, ``COOTensor.coalesce``), none on Ascend. Each rule says which MindSpore
form covers the construct or that it must go dense, with what that costs in memory.
A tensor counts as sparse when local data flow shows it built by a sparse constructor
(``torch.sparse_coo_tensor``, ``.to_sparse()``), also when it is passed as an argument to
a function of the same file.
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from msready.analyzer.findings import CALLERS, Category, Confidence, Scope, Severity
from msready.analyzer.syntax import is_name
from msready.analyzer.values import Expr, Truth, t_and, t_not, t_or
from msready.rules.base import Calls, FileContext, FileRule
from msready.rules.dynamic_shape_calls import argument, receiver, torch_api
from msready.rules.sparse_flow import (
    CONSTRUCTORS,
    CONVERTERS,
    DENSE_GOES,
    FORMATS,
    MATMUL_APIS,
    SPARSE_ONLY_METHODS,
    SPARSE_SUGGESTION,
    SparseFlow,
)

_IMPORTS = "import torch\n\n"


class SparseRule(FileRule):
    """Shared metadata of the sparse rules."""

    id: ClassVar[str]
    category = Category.SPARSE
    severity = Severity.WARNING
    confidence = Confidence.HIGH
    scope = Scope.ANYWHERE

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.flow = SparseFlow(ctx)

    def sparse_operand(self, operand: cst.BaseExpression) -> Truth:
        """The operand is sparse, and not merely a parameter that callers pass a sparse
        tensor (that is MS307's verdict, so one place gets one)."""
        if _is_parameter(self.ctx.values.expr(operand)):
            return False
        return self.flow.is_sparse(operand)


def _is_parameter(expr: Expr) -> bool:
    return isinstance(expr, tuple) and expr[0] == "p"


class SparseTensor(SparseRule):
    """Flags sparse tensor construction: ``torch.sparse_coo_tensor``,
    ``torch.sparse_csr_tensor`` (also CSC/BSR/BSC), the legacy ``torch.sparse.FloatTensor``
    and ``.to_sparse()`` / ``.to_sparse_csr()``.

    MindSpore's ``COOTensor`` takes indices as ``(nnz, 2)`` where torch uses ``(ndim, nnz)``,
    and both ``COOTensor`` and ``CSRTensor`` are 2-D only, with their operators on GPU and
    CPU; CSC and block formats have no MindSpore counterpart.

    Build ``mindspore.COOTensor(indices.T, values, shape)`` or ``mindspore.CSRTensor(indptr,
    indices, values, shape)`` on GPU/CPU; on Ascend, or for other formats, go dense — memory
    grows from nnz to rows x cols elements, so shrink the batch and keep the effective batch
    size with gradient accumulation.
    """

    id = "MS301"
    name = "sparse-tensor"
    VALID = (
        _IMPORTS + "def f(i, v):\n    return torch.zeros(3, 3).index_put_((i[0], i[1]), v)\n",
        "import scipy.sparse as sp\n\ndef f(a):\n    return sp.coo_matrix(a).tocsr()\n",
        _IMPORTS + "# torch.sparse_coo_tensor(i, v) is avoided here\nNOTE = 'to_sparse()'\n",
    )
    INVALID = (
        _IMPORTS + "def adj(i, v, n):\n    return torch.sparse_coo_tensor(i, v, (n, n))\n",
        _IMPORTS + "def f(x):\n    return x.to_sparse_csr()\n",
        _IMPORTS + "def f(i, v):\n    return torch.sparse.FloatTensor(i, v)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Sparse constructors, and the converter methods (``x.to_sparse()``)."""
        return Calls(targets=frozenset(CONSTRUCTORS), methods=frozenset(CONVERTERS))

    def visit_Call(self, node: cst.Call) -> None:
        found = self.flow.constructor(node)
        if found is None:
            return
        symbol, fmt = found
        target, platforms = FORMATS.get(fmt, (None, ""))
        if target is None:
            fix = (f"MindSpore has no {fmt.upper()} format: convert to CSR "
                   f"(`mindspore.CSRTensor`) or {DENSE_GOES}")
        else:
            fix = f"Use `{target}` ({platforms}); {SPARSE_SUGGESTION}"
        self.report(node, f"`{symbol}` builds a sparse {fmt.upper()} tensor.", fix,
                    symbol=symbol)


class SparseMatmul(SparseRule):
    """Flags sparse-dense products: ``torch.sparse.mm``, ``torch.spmm``,
    ``torch.sparse.addmm``, ``torch.smm`` / ``hspmm`` / ``sspaddmm``, and ``mm`` /
    ``matmul`` / ``bmm`` / ``@`` with an operand known to be sparse.

    MindSpore multiplies a ``CSRTensor`` by a dense matrix with ``CSRTensor.mm`` / ``mv``
    and a COO matrix with ``ops.SparseTensorDenseMatmul``, on GPU and CPU only; there is
    no sparse product on Ascend and none for batched sparse tensors.

    On GPU/CPU convert the operand to ``CSRTensor`` and call ``csr.mm(dense)``; on Ascend
    densify the matrix (``ops.matmul``) — memory grows from nnz to rows x cols, so shrink
    the batch and keep its effective size with gradient accumulation.
    """

    id = "MS302"
    name = "sparse-matmul"
    severity = Severity.ERROR
    VALID = (
        _IMPORTS + "def f(a, b):\n    return torch.mm(a, b) + a @ b\n",
        _IMPORTS + "def f(a):\n    d = a.to_sparse().to_dense()\n    return d @ d\n",
    )
    INVALID = (
        _IMPORTS + "def f(adj, x):\n    return torch.sparse.mm(adj, x)\n",
        _IMPORTS + "def f(i, v, x):\n    a = torch.sparse_coo_tensor(i, v)\n"
        "    return torch.mm(a, x)\n",
        _IMPORTS + "def f(x, w):\n    s = w.to_sparse()\n    return s @ x\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Sparse products, and the torch products on possibly sparse operands."""
        return Calls(targets=MATMUL_APIS,
                     apis=frozenset({"mm", "matmul", "bmm", "mv", "addmm", "spmm"}))

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node) or ""
        if target in MATMUL_APIS:
            self._report(node, target)
            return
        api = torch_api(self.ctx, node)
        if api is None or api[0] not in ("mm", "matmul", "bmm", "mv", "addmm", "spmm"):
            return
        operands = [a.value for a in node.args]
        inner = receiver(node) if api[1] else None
        if inner is not None:
            operands.append(inner)
        self._report(node, target, t_or(*(self.sparse_operand(o) for o in operands)))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.MatrixMultiply:
            self._report(node, "@ (sparse operand)", t_or(
                self.sparse_operand(node.left), self.sparse_operand(node.right)))

    def _report(self, node: cst.CSTNode, symbol: str, when: Truth = True) -> None:
        self.report(
            node,
            "A sparse-dense matrix product: MindSpore has it only for CSRTensor/COO on GPU "
            "and CPU.",
            "On GPU/CPU use `mindspore.CSRTensor(...).mm(dense)` (or "
            f"`ops.SparseTensorDenseMatmul` for COO); on Ascend {DENSE_GOES}",
            symbol=symbol,
            when=when,
        )


class SparseInternals(SparseRule):
    """Flags reading a sparse tensor's parts: ``._indices()``, ``._values()``,
    ``.indices()``, ``.values()``, ``._nnz()``, ``.coalesce()``, ``.crow_indices()``,
    ``.col_indices()``, ``.to_dense()`` on a tensor known to be sparse (the sparse-only
    methods also on any tensor).

    ``COOTensor.indices`` is ``(nnz, 2)``, the transpose of torch's ``(ndim, nnz)``; the
    parts are properties, not methods; ``coalesce`` and ``to_dense`` run on GPU only, and
    MindSpore does not coalesce duplicate indices on construction.

    Read ``coo.indices`` / ``coo.values`` / ``csr.indptr`` as properties (transpose COO
    indices), deduplicate indices before building the tensor, and on CPU/Ascend keep a
    dense copy instead of calling ``to_dense``.
    """

    id = "MS303"
    name = "sparse-internals"
    VALID = (
        _IMPORTS + "def f(d):\n    return list(d.values()), d.indices()\n",
        "import numpy as np\n\ndef f():\n    a = np.zeros(3)\n    return a._values()\n",
    )
    INVALID = (
        _IMPORTS + "def f(a):\n    s = a.to_sparse().coalesce()\n"
        "    return s.indices(), s.values()\n",
        _IMPORTS + "def f(adj):\n    return adj._indices()\n",
    )
    METHODS: ClassVar[frozenset[str]] = SPARSE_ONLY_METHODS | {"indices", "values", "to_dense"}

    @classmethod
    def calls(cls) -> Calls:
        """Methods named in ``METHODS``, on any receiver."""
        return Calls(methods=cls.METHODS)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.METHODS:
            return
        inner = func.value
        method = func.attr.value
        if self.ctx.qualify(func) is not None or not self.ctx.imports_torch:
            return
        sparse = self.flow.is_sparse(inner)
        message, fix = _INTERNALS.get(method, _INTERNALS["indices"])
        self.report(node, message.format(method=method), fix,
                    symbol=f"torch.Tensor.{method}", confidence=Confidence.HIGH, when=sparse)
        if method in SPARSE_ONLY_METHODS and not self.flow.is_foreign(inner):
            self.report(node, message.format(method=method), fix,
                        symbol=f"torch.Tensor.{method}", confidence=Confidence.MEDIUM,
                        when=t_not(sparse))


_PARTS_FIX = ("Read the properties `mindspore.COOTensor.indices` (shape (nnz, 2), the "
              "transpose of torch's (2, nnz)) / `.values`, or `mindspore.CSRTensor.indptr` / "
              "`.indices` / `.values`.")
_INTERNALS: dict[str, tuple[str, str]] = {
    **{name: ("`.{method}()` reads a part of a sparse tensor; MindSpore exposes the parts as "
              "properties, with COO indices transposed.", _PARTS_FIX)
       for name in ("indices", "values", "_indices", "_values", "crow_indices", "col_indices",
                    "ccol_indices", "row_indices")},
    **{name: ("`.{method}()` merges or checks duplicate sparse indices; MindSpore does not "
              "coalesce on construction and `COOTensor.coalesce` runs on GPU only.",
              "Deduplicate the indices before building `mindspore.COOTensor` (in the data "
              "pipeline, e.g. scipy's `coo_matrix.sum_duplicates()`), or call `coalesce()` on "
              "GPU.")
       for name in ("coalesce", "is_coalesced")},
    "to_dense": ("`.to_dense()` densifies a sparse tensor; MindSpore's `to_dense` runs on GPU "
                 "only.",
                 "On CPU/Ascend keep the dense tensor you built the sparse one from (or build "
                 "it with `ops.scatter_nd(indices, values, shape)`); memory grows to rows x cols."),
    **{name: ("`.{method}()` reads sparse metadata that MindSpore's sparse tensors do not have.",
              "Use `mindspore.COOTensor.values.shape[0]` for the number of stored elements and "
              "`.shape` for the dense shape (always 2-D).")
       for name in ("_nnz", "sparse_dim", "dense_dim")},
}


class SparseEmbedding(SparseRule):
    """Flags ``nn.Embedding(..., sparse=True)``, ``nn.EmbeddingBag(..., sparse=True)``,
    ``Embedding.from_pretrained(..., sparse=True)`` and ``F.embedding(..., sparse=True)``.

    MindSpore's ``nn.Embedding`` has no sparse gradient: the whole table gets a dense
    gradient each step, which for a large vocabulary costs vocabulary x dim memory.

    Use ``mindspore.nn.Embedding`` and budget for the dense gradient (a smaller batch plus
    gradient accumulation), or ``mindspore.nn.EmbeddingLookup(vocab, dim, sparse=True)``
    (Ascend/GPU/CPU) for row-sparse updates of very large tables.
    """

    id = "MS304"
    name = "sparse-embedding"
    APIS: ClassVar[frozenset[str]] = frozenset({
        "torch.nn.Embedding", "torch.nn.EmbeddingBag", "torch.nn.Embedding.from_pretrained",
        "torch.nn.EmbeddingBag.from_pretrained", "torch.nn.functional.embedding",
        "torch.nn.functional.embedding_bag", "torch.nn.modules.sparse.Embedding"})
    VALID = (
        "import torch.nn as nn\n\nemb = nn.Embedding(1000, 64, sparse=False)\n",
        "import torch.nn.functional as F\n\ndef f(i, w):\n    return F.embedding(i, w)\n",
    )
    INVALID = (
        "import torch.nn as nn\n\nemb = nn.Embedding(1000, 64, sparse=True)\n",
        "from torch.nn import functional as F\n\ndef f(i, w):\n"
        "    return F.embedding(i, w, sparse=True)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """The embedding constructors of ``APIS``."""
        return Calls(targets=cls.APIS)

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node)
        if target not in self.APIS:
            return
        sparse = argument(node, "sparse", 99)
        if sparse is None or not is_name(sparse, "True"):
            return
        self.report(
            node,
            "An embedding with `sparse=True` produces row-sparse gradients; MindSpore's "
            "`nn.Embedding` has none.",
            "Use `mindspore.nn.Embedding` with its dense gradient (vocabulary x dim memory "
            "per step: shrink the batch and use gradient accumulation), or "
            "`mindspore.nn.EmbeddingLookup(vocab, dim, sparse=True)` for huge tables.",
            symbol=target or "torch.nn.Embedding",
        )


class SparseOptimizer(SparseRule):
    """Flags ``torch.optim.SparseAdam``.

    SparseAdam updates only the rows a sparse gradient touches; MindSpore's sparse Adam
    variants (``nn.LazyAdam``) are deprecated, and dense gradients reach the optimizer.

    Use ``mindspore.nn.Adam`` (dense moments for the whole table) or, with
    ``nn.EmbeddingLookup(sparse=True)``, ``mindspore.nn.Adam(..., use_lazy=True)``; budget
    the optimizer state memory for every parameter.
    """

    id = "MS305"
    name = "sparse-optimizer"
    VALID = (
        "import torch\n\ndef make(p):\n    return torch.optim.Adam(p, lr=1e-3)\n",
    )
    INVALID = (
        "import torch\n\ndef make(p):\n    return torch.optim.SparseAdam(p, lr=1e-3)\n",
        "from torch.optim import SparseAdam\n\nopt = SparseAdam([], lr=0.1)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """SparseAdam."""
        return Calls(targets=frozenset({"torch.optim.SparseAdam",
                                        "torch.optim.sparse_adam.SparseAdam"}))

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node)
        if target not in ("torch.optim.SparseAdam", "torch.optim.sparse_adam.SparseAdam"):
            return
        self.report(
            node,
            "`SparseAdam` updates only the rows of a sparse gradient; MindSpore has no "
            "maintained sparse Adam.",
            "Use `mindspore.nn.Adam` (with `use_lazy=True` for `EmbeddingLookup(sparse=True)` "
            "gradients) and budget dense optimizer state for every parameter.",
            symbol=target,
        )


_OP_SUGGESTION = (
    "Element-wise add/sub/mul/div of two sparse tensors exist as `COOTensor.add`, "
    "`CSRTensor.add`, `ops.coo_*` / `ops.csr_*` (GPU/CPU); anything else needs the dense "
    "tensor: " + DENSE_GOES)
# Questions about a tensor that any layout answers.
_METADATA = frozenset({"size", "dim", "numel", "nelement", "ndimension", "stride", "type",
                       "element_size", "get_device", "data_ptr", "layout", "dtype",
                       "device", "sparse_dim", "dense_dim", "_nnz"})
_HANDLED = (SparseInternals.METHODS | frozenset({"mm", "matmul", "bmm", "mv", "addmm",
                                                 "spmm"}) | frozenset(CONVERTERS) | _METADATA)


class SparseOp(SparseRule):
    """Flags other work on sparse tensors: ``torch.sparse.sum`` / ``softmax`` /
    ``log_softmax`` and friends, arithmetic (``adj + eye``, ``adj * 0.5``) and torch
    functions or Tensor methods applied to a tensor known to be sparse.

    MindSpore's ``COOTensor`` / ``CSRTensor`` support a short list of operators
    (element-wise arithmetic, ``ops.coo_*`` / ``ops.csr_*`` unary functions,
    ``csr_softmax``, ``CSRTensor.sum``), on GPU and CPU only.

    Map supported operators to their ``ops.csr_*`` / ``ops.coo_*`` forms on GPU/CPU;
    compute everything else on the dense tensor, budgeting rows x cols memory (smaller
    batch, gradient accumulation).
    """

    id = "MS306"
    name = "sparse-op"
    VALID = (
        _IMPORTS + "def f(a, b):\n    return torch.softmax(a + b, dim=-1)\n",
        _IMPORTS + "def f(i, v):\n    s = torch.sparse_coo_tensor(i, v)\n    return s.indices()\n",
        _IMPORTS + "def f(s):\n    s = s.to_sparse()\n"
        "    return s.size(0), s.numel(), s.is_sparse\n",
    )
    INVALID = (
        _IMPORTS + "def f(s):\n    return torch.sparse.sum(s, dim=1)\n",
        _IMPORTS + "def f(i, v, n):\n    a = torch.sparse_coo_tensor(i, v, (n, n))\n"
        "    return a + torch.eye(n).to_sparse()\n",
        _IMPORTS + "def f(x):\n    s = x.to_sparse()\n    return torch.relu(s)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """``torch.sparse.*`` and every torch API."""
        return Calls(prefixes=("torch.sparse.",), any_api=True)

    def visit_Call(self, node: cst.Call) -> None:
        target = self.ctx.call_target(node) or ""
        if target.startswith("torch.sparse.") and target not in MATMUL_APIS and (
                self.flow.constructor(node) is None):
            self._report(node, target)
            return
        api = torch_api(self.ctx, node)
        if (api is None or api[0] in _HANDLED or api[0].startswith("is_")
                or self.flow.constructor(node) is not None):
            return
        inner = receiver(node) if api[1] else None
        operands = [a.value for a in node.args] + ([inner] if inner is not None else [])
        # A layout-keeping method leaves the tensor sparse: nothing is computed.
        self._report(node, target, t_and(t_not(self.flow.is_sparse(node)), t_or(
            *(self.sparse_operand(o) for o in operands))))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.MatrixMultiply:
            return
        self._report(node, "sparse arithmetic", t_or(
            self.sparse_operand(node.left), self.sparse_operand(node.right)))

    def _report(self, node: cst.CSTNode, symbol: str, when: Truth = True) -> None:
        what = "Arithmetic" if symbol == "sparse arithmetic" else f"`{symbol}`"
        self.report(node, f"{what} on a sparse tensor: MindSpore's sparse tensors support only "
                    "a few operators, on GPU/CPU.", _OP_SUGGESTION, symbol=symbol, when=when)


class SparseArgument(SparseRule):
    """Flags dense-only work on a parameter that receives a sparse tensor from a call in
    the same file: ``propagate(adj, x)`` with a sparse ``adj``, where ``propagate`` does
    ``torch.mm(adj, x)`` or ``adj @ x``; also through ``self.method(...)`` and
    ``self.layer(...)`` into the layer's ``forward``.

    The operation looks dense where it is written, but the tensor it gets is sparse, so
    the MindSpore port needs the same COO/CSR decision as at the constructor.

    Pass a ``mindspore.CSRTensor`` and use ``csr.mm(dense)`` on GPU/CPU, or densify the
    argument before the call on Ascend (rows x cols memory: smaller batch, gradient
    accumulation).
    """

    id = "MS307"
    name = "sparse-argument"
    VALID = (
        _IMPORTS + "def prop(adj, x):\n    return torch.mm(adj, x)\n\n"
        "def run(x):\n    return prop(torch.eye(3), x)\n",
    )
    INVALID = (
        _IMPORTS + "def prop(adj, x):\n    return torch.mm(adj, x)\n\n"
        "def run(i, v, x):\n    adj = torch.sparse_coo_tensor(i, v)\n    return prop(adj, x)\n",
        "import torch\nimport torch.nn as nn\n\nclass Layer(nn.Module):\n"
        "    def forward(self, x, adj):\n        return adj @ x\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.layer = Layer()\n\n"
        "    def forward(self, x, a):\n        s = a.to_sparse()\n"
        "        return self.layer(x, s)\n",
    )

    @classmethod
    def calls(cls) -> Calls:
        """Every torch API."""
        return Calls(any_api=True)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.function is None:
            return
        target = self.ctx.call_target(node) or ""
        api = torch_api(self.ctx, node)
        if target in MATMUL_APIS or api is None or api[0] in _METADATA or api[0].startswith(
                "is_"):
            return
        inner = receiver(node) if api[1] else None
        for operand in [a.value for a in node.args] + ([inner] if inner is not None else []):
            self._use(operand, node, target)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.ctx.function is not None:
            for side in (node.left, node.right):
                self._use(side, node, "@" if type(node.operator) is cst.MatrixMultiply
                          else "arithmetic")

    def _use(self, operand: cst.BaseExpression, node: cst.CSTNode, op: str) -> None:
        """A parameter used by a dense operation: reported when the value analysis finds
        that callers pass it a sparse tensor."""
        if not isinstance(operand, cst.Name) or not _is_parameter(
                self.ctx.values.expr(operand)):
            return
        self.report(
            node,
            f"`{operand.value}` receives a sparse tensor from {CALLERS}, so this "
            f"`{op.rsplit('.', 1)[-1]}` runs on a sparse operand.",
            "Pass a `mindspore.CSRTensor` and use `csr.mm(dense)` (GPU/CPU), or densify "
            f"before the call: {DENSE_GOES}",
            symbol=op,
            when=self.flow.is_sparse(operand),
        )
