"""Calls as the dynamic-shape and sparse rules see them: the torch API name, the receiver
and the arguments."""

from __future__ import annotations

import libcst as cst

from msready.rules.base import FileContext


def torch_api(ctx: FileContext, call: cst.Call) -> tuple[str, bool] | None:
    """``(name, is_method)`` for a call of a torch function (``torch.nonzero``) or a
    torch.Tensor method (``x.nonzero()``); None for anything else."""
    target = ctx.call_target(call)
    if target is None:
        return None
    if target.startswith("torch.Tensor."):
        return target[len("torch.Tensor."):], True
    parts = target.split(".")
    if len(parts) == 2 and parts[0] == "torch":
        return parts[1], False
    return None


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    """The object a method is called on (``x`` in ``x.view(-1)``)."""
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def positional(call: cst.Call) -> list[cst.BaseExpression] | None:
    """The positional arguments, or None when one is unpacked with ``*``."""
    out: list[cst.BaseExpression] = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            out.append(arg.value)
    return out


def argument(call: cst.Call, keyword: str, index: int) -> cst.BaseExpression | None:
    """The argument given by ``keyword`` or at positional ``index``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    args = positional(call)
    if args is not None and index < len(args):
        return args[index]
    return None
