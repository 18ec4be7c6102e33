"""Local data flow for the sparse rules: which expressions hold a sparse torch tensor.

A value is sparse when it is built by a sparse constructor (``torch.sparse_coo_tensor``,
``torch.sparse.FloatTensor``, ``.to_sparse()``, ...) or derived from a sparse value by a
method that keeps the layout (``.coalesce()``, ``.t()``, ``.to(device)``), following local
names through ``ctx.value_of``. Names listed in ``assumed`` (parameters that receive a
sparse argument) count as sparse too.
"""

from __future__ import annotations

from collections.abc import Set

import libcst as cst

from msready.rules.base import FileContext
from msready.rules.dynamic_shape_calls import receiver

MAX_DEPTH = 12
# torch constructor -> sparse format.
CONSTRUCTORS = {
    "torch.sparse_coo_tensor": "coo",
    "torch.sparse_csr_tensor": "csr",
    "torch.sparse_csc_tensor": "csc",
    "torch.sparse_bsr_tensor": "bsr",
    "torch.sparse_bsc_tensor": "bsc",
    "torch.sparse_compressed_tensor": "csr",
    **{f"torch.sparse.{kind}Tensor": "coo" for kind in (
        "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Char",
        "Bool")},
}
CONVERTERS = {
    "to_sparse": "coo",
    "to_sparse_coo": "coo",
    "to_sparse_csr": "csr",
    "to_sparse_csc": "csc",
    "to_sparse_bsr": "bsr",
    "to_sparse_bsc": "bsc",
}
LAYOUTS = {"torch.sparse_coo": "coo", "torch.sparse_csr": "csr", "torch.sparse_csc": "csc",
           "torch.sparse_bsr": "bsr", "torch.sparse_bsc": "bsc"}
# Methods that return a tensor of the same sparse layout.
KEEP_METHODS = frozenset({"coalesce", "t", "transpose", "cuda", "cpu", "to", "detach",
                          "float", "double", "half", "clone", "requires_grad_", "type"})
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
        # (function, name) of locals known sparse after their latest assignment, so that
        # ``adj = adj.coalesce()`` still knows the ``adj`` it started from.
        self.sparse_names: set[tuple[str | None, str]] = set()
        # Functions of this file that return a sparse tensor.
        self.returns_sparse: set[str] = set()

    def note_assign(self, names: list[str], value: cst.BaseExpression) -> None:
        """Record whether the local ``names`` now hold a sparse tensor."""
        sparse = self.is_sparse(value)
        for name in names:
            key = (self.ctx.function, name)
            if sparse:
                self.sparse_names.add(key)
            else:
                self.sparse_names.discard(key)

    def note_return(self, value: cst.BaseExpression) -> None:
        """Record that the current function returns a sparse tensor, if ``value`` is one."""
        if self.ctx.function is not None and self.is_sparse(value):
            self.returns_sparse.add(self.ctx.function)

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

    def is_sparse(self, expr: cst.BaseExpression, assumed: Set[str] = frozenset(),
                  seen: frozenset[str] = frozenset(), depth: int = 0) -> bool:
        """True when local flow shows ``expr`` holds a sparse tensor."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            if self.constructor(expr) is not None:
                return True
            target = self.ctx.call_target(expr) or ""
            if target in ("torch.sparse.softmax", "torch.sparse.log_softmax"):
                return True
            if target in self.returns_sparse:
                return True
            func = expr.func
            inner = receiver(expr)
            return (isinstance(func, cst.Attribute) and func.attr.value in KEEP_METHODS
                    and inner is not None and self.ctx.qualify(func) is None
                    and self.is_sparse(inner, assumed, seen, depth + 1))
        if not isinstance(expr, cst.Name):
            return False
        if expr.value in seen:
            return (self.ctx.function, expr.value) in self.sparse_names
        value = self.ctx.value_of(expr.value)
        if value is None or value is expr:
            return expr.value in assumed and value is None
        return self.is_sparse(value, assumed, seen | {expr.value}, depth + 1)

    def is_foreign(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """True when ``expr`` is known to hold something other than a torch tensor: a
        Python literal or the result of another library's call (numpy, scipy, ...)."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, (cst.SimpleString, cst.List, cst.Dict, cst.Tuple, cst.Set,
                             cst.Integer, cst.Float, cst.ListComp, cst.DictComp)):
            return True
        if isinstance(expr, cst.Call):
            target = self.ctx.qualify(expr.func)
            if target is not None:
                return target.split(".")[0] not in ("torch", self.ctx.module.split(".")[0])
            return isinstance(expr.func, cst.Attribute) and self.is_foreign(
                expr.func.value, depth + 1)
        if isinstance(expr, cst.Name):
            value = self.ctx.value_of(expr.value)
            return value is not None and value is not expr and self.is_foreign(value, depth + 1)
        return False
