"""What the sparse rules ask of the value analysis: which expressions hold a sparse tensor.

A value is sparse when the value analysis says it was built by a sparse constructor
(``torch.sparse_coo_tensor``, ``torch.sparse.FloatTensor``, ``.to_sparse()``, ...) or
derived from a sparse value by a method that keeps the layout (``.coalesce()``, ``.t()``,
``.to(device)``): across assignments, returns and parameters alike
(:mod:`msready.analyzer.values`).
"""

from __future__ import annotations

import libcst as cst

from msready.analyzer.values import (
    SPARSE_CONSTRUCTORS,
    SPARSE_CONVERTERS,
    SPARSE_LAYOUTS,
    Truth,
    is_foreign,
)
from msready.rules.base import FileContext

# The constructors that build sparse tensors, with their format (the softmax functions of
# torch.sparse return sparse tensors but build nothing).
CONSTRUCTORS = {k: v for k, v in SPARSE_CONSTRUCTORS.items()
                if k not in ("torch.sparse.softmax", "torch.sparse.log_softmax")}
CONVERTERS = SPARSE_CONVERTERS
LAYOUTS = SPARSE_LAYOUTS
# Methods that exist only on sparse tensors.
SPARSE_ONLY_METHODS = frozenset({"_indices", "_values", "_nnz", "coalesce", "is_coalesced",
                                 "crow_indices", "col_indices", "ccol_indices",
                                 "row_indices", "sparse_dim", "dense_dim"})
MATMUL_APIS = frozenset({"torch.sparse.mm", "torch.spmm", "torch.sparse.addmm", "torch.smm",
                         "torch.hspmm", "torch.sspaddmm", "torch.dsmm",
                         "torch.sparse.sampled_addmm"})
# MindSpore's counterpart of each torch sparse format and where its operators run.
FORMATS: dict[str, tuple[str | None, str]] = {
    "coo": ("mindspore.COOTensor", "2-D only, operators on GPU/CPU, `to_dense` and "
            "`coalesce` on GPU only; indices are (nnz, 2), the transpose of torch's"),
    "csr": ("mindspore.CSRTensor", "2-D only, `mm`/`mv`/`sum`/`add` on GPU/CPU, `to_dense` on "
            "GPU only"),
    "csc": (None, ""),
    "bsr": (None, ""),
    "bsc": (None, ""),
}
DENSE_GOES = ("go dense (`ops.matmul` on the dense matrix): memory grows from nnz to "
              "rows x cols elements, so shrink the batch and keep the effective batch size with "
              "gradient accumulation.")
SPARSE_SUGGESTION = ("MindSpore's sparse operators run on GPU/CPU only, so on Ascend "
                     + DENSE_GOES)


class SparseFlow:
    """Answers "is this expression a sparse tensor?" for one file being walked."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def constructor(self, call: cst.Call) -> tuple[str, str] | None:
        """``(symbol, format)`` when ``call`` builds a sparse tensor."""
        target = self.ctx.call_target(call)
        if target in CONSTRUCTORS:
            return target, CONSTRUCTORS[target]
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in CONVERTERS:
            return None
        if self.ctx.qualify(func) is not None or not self.ctx.imports_torch:
            return None
        if self.is_foreign(func.value):
            return None
        method = func.attr.value
        fmt = CONVERTERS[method]
        for arg in call.args:
            layout = self.ctx.qualify(arg.value)
            if layout in LAYOUTS:
                fmt = LAYOUTS[layout]
        return f"torch.Tensor.{method}", fmt

    def is_sparse(self, expr: cst.BaseExpression) -> Truth:
        """The value analysis says ``expr`` may hold a sparse tensor."""
        return self.ctx.values.truth("sparse", expr)

    def is_foreign(self, expr: cst.BaseExpression) -> bool:
        """True when the file shows ``expr`` holds something other than a torch tensor: a
        Python value or another library's object (numpy, scipy, ...)."""
        return is_foreign(self.ctx.values.local(expr))
