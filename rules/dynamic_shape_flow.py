"""What the dynamic-shape rules ask of the value analysis.

The values themselves come from :mod:`msready.analyzer.localvalues` (inside the file) and
:mod:`msready.analyzer.valueflow` (across functions and files); this module only names the
questions the family asks, as :data:`~msready.analyzer.values.Truth` s that a rule passes
to ``report(..., when=...)``:

- a *boolean mask*: a comparison of tensors, ``~``, ``&``, ``|``, ``.bool()``,
  ``torch.isnan``, a creation call with ``dtype=torch.bool``, a list of masks joined by
  ``torch.cat``, a mask returned by a helper or passed in by every caller;
- a *variable-length* tensor: the result of ``nonzero`` / ``masked_select`` / ``unique`` /
  one-argument ``where``, of boolean-mask indexing, or of a slice with runtime bounds;
- a *runtime value*: a number read from tensor data (``.item()``, ``int(t)``, a reduction
  such as ``mask.sum()``, the length of a variable-length tensor);
- a *shape value*: ``x.size(1)``, ``x.shape[2]``, ``len(x)``, constants and their sums.

What cannot be followed (a parameter nothing passes a value to) counts as none of these: a
rule reports only what the analysis shows.
"""

from __future__ import annotations

import libcst as cst

from msready.analyzer.values import Truth, t_or
from msready.rules.base import FileContext


class Flow:
    """The dynamic-shape questions about expressions of the file being walked."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    def _ask(self, predicate: str, expr: cst.BaseExpression) -> Truth:
        return self.ctx.values.truth(predicate, expr)

    def is_python(self, expr: cst.BaseExpression) -> Truth:
        """A plain Python value (constant, string, container)."""
        return self._ask("python", expr)

    def is_shape(self, expr: cst.BaseExpression) -> Truth:
        """A number known when the graph is compiled (shapes and constants)."""
        return self._ask("shape", expr)

    def is_bool(self, expr: cst.BaseExpression) -> Truth:
        """A boolean mask tensor."""
        return self._ask("bool_mask", expr)

    def is_varlen(self, expr: cst.BaseExpression) -> Truth:
        """A tensor whose length depends on the data."""
        return self._ask("varlen", expr)

    def is_runtime_scalar(self, expr: cst.BaseExpression) -> Truth:
        """A Python number read from tensor data."""
        return self._ask("data_scalar", expr)

    def is_runtime(self, expr: cst.BaseExpression) -> Truth:
        """A number read from tensor data, or a reduction of a tensor."""
        return self._ask("data", expr)

    def is_tensor_test(self, expr: cst.BaseExpression) -> Truth:
        """A condition whose truth is read from tensor values at run time."""
        return self._ask("tensor_test", expr)

    def element_is_mask(self, element: cst.SubscriptElement) -> Truth:
        """A subscript element that is a boolean mask."""
        piece = element.slice
        return isinstance(piece, cst.Index) and self.is_bool(piece.value)

    def element_is_runtime_slice(self, element: cst.SubscriptElement) -> Truth:
        """A ``a:b`` slice with a bound read from tensor data."""
        piece = element.slice
        if not isinstance(piece, cst.Slice):
            return False
        return t_or(*(self.is_runtime(b) for b in (piece.lower, piece.upper) if b is not None))

    def any_mask(self, node: cst.Subscript) -> Truth:
        """Some element of a subscript is a boolean mask."""
        return t_or(*(self.element_is_mask(e) for e in node.slice))
