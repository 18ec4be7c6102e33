"""The data flow behind the MAML rule (MS403): within one function, gradients from
``torch.autograd.grad`` walked weight by weight, turned into updated weights
(``w - lr * g``) and fed to a functional forward or returned for one."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from msready.analyzer.findings import Severity
from msready.analyzer.syntax import descendants
from msready.rules.base import FileContext, FileRule

_GRAD = "torch.autograd.grad"
_FUNCTIONAL_CALLS = frozenset({"torch.func.functional_call",
                               "torch.nn.utils.stateless.functional_call",
                               "functorch.functional_call"})
_SUBTRACTS = frozenset({"torch.sub", "torch.subtract", "torch.Tensor.sub",
                        "torch.Tensor.subtract"})
_GRAD_TRANSFORMS = frozenset({"torch.func.grad", "torch.func.grad_and_value",
                              "functorch.grad", "functorch.grad_and_value"})
_TRANSFORM_ORDER = ("second-order (torch.func gradients stay differentiable): the outer "
                    "backward differentiates through the inner gradient unless it is detached")
_ITERATORS = frozenset({"builtins.zip", "builtins.map", "builtins.enumerate"})
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.GeneratorExp)


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if type(n) is cst.Name}


@dataclass(slots=True)
class _GradUse:
    node: cst.Call
    names: set[str]
    create_graph: cst.Arg | None
    in_loop: bool
    transform: bool = False  # torch.func.grad: its result stays differentiable


@dataclass(slots=True)
class _FunctionFlow:
    grads: list[_GradUse] = field(default_factory=list)
    aliases: list[tuple[set[str], set[str]]] = field(default_factory=list)  # used -> bound
    updates: list[tuple[set[str], set[str]]] = field(default_factory=list)  # used -> bound
    calls: list[tuple[cst.Call, set[str]]] = field(default_factory=list)
    returns: list[tuple[cst.Return, set[str]]] = field(default_factory=list)
    iterated: set[str] = field(default_factory=set)  # names walked element by element
    # Read only for a function that takes a gradient (few do): the assignments that may
    # update weights and the calls that may consume them, noted as met and turned into
    # ``updates`` and ``calls`` by :func:`_read`.
    assigns: list[cst.Assign] = field(default_factory=list)
    call_nodes: list[tuple[cst.Call, bool]] = field(default_factory=list)  # (call, skip 1st)


class MamlFlow(FileRule):
    """Tracks the gradients, weight updates and their consumers of each function and
    reports a gradient whose updated weights reach a functional forward. The rule's
    metadata lives on the subclass in :mod:`msready.rules.second_order`."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._flows: list[_FunctionFlow] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """Start the data flow of a function."""
        self._flows.append(_FunctionFlow())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        """Match gradients, weight updates and functional forwards of the function."""
        flow = self._flows.pop()
        if flow.grads:
            _read(flow)
        for grad in flow.grads:
            self._check(flow, grad)

    def visit_Call(self, node: cst.Call) -> None:
        """Record gradients, subtracting calls and calls taking derived weights."""
        if not self._flows:
            return
        flow = self._flows[-1]
        target = self.ctx.call_target(node)
        if target == _GRAD or target in _GRAD_TRANSFORMS:
            bound = self._assigned_names()
            if bound:
                flow.grads.append(_GradUse(node, bound, _create_graph_arg(node),
                                           self._in_loop(), target != _GRAD))
            return
        if target in _ITERATORS:
            flow.iterated |= _names(node)
            return
        if target in _SUBTRACTS:
            bound = self._assigned_names()
            if bound:
                flow.updates.append((_names(node), bound))
            return
        if target is not None and target not in _FUNCTIONAL_CALLS and (
                target.split(".")[0] in ("torch", "builtins", "numpy")):
            return
        if node.args:
            flow.call_nodes.append((node, target not in _FUNCTIONAL_CALLS))

    def visit_Assign(self, node: cst.Assign) -> None:
        """Note an assignment that may update weights (read by :func:`_read`)."""
        if self._flows:  # module level: no function flow to record it in
            self._flows[-1].assigns.append(node)

    def visit_Return(self, node: cst.Return) -> None:
        """Record what a function returns: an inner-step helper returns the new weights."""
        if self._flows and node.value is not None:
            values = (node.value.elements if isinstance(node.value, cst.Tuple)
                      else [cst.Element(node.value)])
            names = {e.value.value for e in values if isinstance(e.value, cst.Name)}
            self._flows[-1].returns.append((node, names))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """``grads[name]`` walks the gradients by key (``grads[0]`` picks one tensor)."""
        if (self._flows and isinstance(node.value, cst.Name)
                and not all(isinstance(e.slice, cst.Index)
                            and isinstance(e.slice.value, cst.Integer) for e in node.slice)):
            self._flows[-1].iterated.add(node.value.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        """A comprehension walks its iterable element by element."""
        if self._flows:
            self._flows[-1].iterated |= _names(node.iter)

    def visit_For(self, node: cst.For) -> None:
        """Loop variables over the gradients alias them (``for g, w in zip(grads, ws)``)."""
        if self._flows:
            self._flows[-1].aliases.append((_names(node.iter), _target_names(node.target)))
            self._flows[-1].iterated |= _names(node.iter)

    def _assigned_names(self) -> set[str]:
        for ancestor in reversed(self.ctx.ancestors):
            if isinstance(ancestor, cst.Assign):
                return set().union(*(_target_names(t.target) for t in ancestor.targets))
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return set()
        return set()

    def _in_loop(self) -> bool:
        for ancestor in reversed(self.ctx.ancestors):
            if isinstance(ancestor, cst.FunctionDef):
                return False
            if isinstance(ancestor, _LOOPS):
                return True
        return False

    def _check(self, flow: _FunctionFlow, grad: _GradUse) -> None:
        if not grad.names & flow.iterated:
            return  # one gradient tensor (``grad(...)[0]``): an input update, not weights
        tainted = set(grad.names)
        changed = True
        while changed:
            changed = False
            for used, bound in flow.aliases:
                if used & tainted and not bound <= tainted:
                    tainted |= bound
                    changed = True
        fast: set[str] = set()
        changed = True
        while changed:
            changed = False
            for used, bound in flow.updates:
                new = bound - tainted - fast
                if used & (tainted | fast) and new:
                    fast |= new
                    changed = True
        consumers = [call for call, used in flow.calls if used & fast]
        after = [call for call in consumers if _starts_after(self, call, grad.node)]
        consumer = (after or consumers)[0] if consumers else None
        returned = next((ret for ret, used in flow.returns if used & fast), None)
        if consumer is not None:
            use = f"that feed a later call of `{self.ctx.text(consumer.func)}`"
        elif returned is not None:
            use = "that the function returns for a functional forward"
        else:
            return
        fast_names = ", ".join(sorted(fast))
        order = (_TRANSFORM_ORDER if grad.transform else self._order(grad.create_graph))
        loop = "inner loop" if grad.in_loop else "inner step"
        self.report(
            grad.node,
            f"MAML-style {loop}: this gradient updates weights `{fast_names}` {use}; "
            f"it is {order}.",
            ("Write the inner step with `mindspore.grad` over a function of the weights and "
             "run the network functionally on the updated weights; "
             + ("keep the first-order form with `ops.stop_gradient` on the inner gradients."
                if order.startswith("first") else
                "the outer `mindspore.value_and_grad` then differentiates through it, so every "
                "op of the model needs second-order support (see MS401/MS402).")),
            symbol=_GRAD,
            severity=Severity.INFO if order.startswith("first") else Severity.WARNING,
        )

    def _order(self, arg: cst.Arg | None) -> str:
        if arg is None:
            return ("first-order (no create_graph): the outer update does not differentiate "
                    "through the inner gradient")
        text = self.ctx.text(arg.value)
        try:
            flag = "yes" if ast.literal_eval(text) else "no"
        except (ValueError, SyntaxError, TypeError):
            flag = "maybe"
        if flag == "no":
            return (f"first-order (create_graph={text}): the outer update does not "
                    "differentiate through the inner gradient")
        if flag == "maybe":
            return (f"second-order whenever `{text}` is true (create_graph={text}), "
                    "first-order otherwise")
        return ("second-order (create_graph=True): the outer backward differentiates through "
                "the inner gradient")


def _read(flow: _FunctionFlow) -> None:
    """Turn a function's noted assignments and calls into its weight updates and
    consumers: ``fast = [w - lr * g ...]`` is an update (a subtraction of two named values;
    ``gnorm - 1`` is a penalty term, not an update), and a call consumes the names its
    arguments use (all but the first, unless it is a functional forward)."""
    for node in flow.assigns:
        steps = any(isinstance(op, cst.BinaryOperation) and isinstance(op.operator, cst.Subtract)
                    and _names(op.left) and _names(op.right) for op in descendants(node.value))
        if steps:
            bound = set().union(*(_target_names(t.target) for t in node.targets))
            flow.updates.append((_names(node.value), bound))
    for call, skip_first in flow.call_nodes:
        used: set[str] = set()
        for i, arg in enumerate(call.args):
            if i == 0 and arg.keyword is None and skip_first:
                continue
            used |= _names(arg.value)
        if used:
            flow.calls.append((call, used))
    flow.assigns.clear()
    flow.call_nodes.clear()


def _create_graph_arg(call: cst.Call) -> cst.Arg | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "create_graph":
            return arg
    return positional[4] if len(positional) > 4 else None


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_names(e.value) for e in target.elements))
    if isinstance(target, cst.Subscript):
        return _target_names(target.value)
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _starts_after(rule: FileRule, node: cst.CSTNode, anchor: cst.CSTNode) -> bool:
    first, second = rule.ctx.span(node), rule.ctx.span(anchor)
    if first is None or second is None:
        return False
    return (first.line, first.column) > (second.end_line, second.end_column)
