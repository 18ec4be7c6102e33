"""The shared base of the dynamic-shape rules: metadata, the file's flow and hooks that keep
it up to date, and the snippet helper their examples use."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from msready.analyzer.findings import Category, Confidence, Scope, Severity
from msready.rules.base import Calls, FileContext, FileRule
from msready.rules.dynamic_shape_calls import receiver, torch_api
from msready.rules.dynamic_shape_flow import Flow

_MODULE = """import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, y):
"""


def in_forward(body: str) -> str:
    """A snippet with ``body`` (lines indented by 8) inside ``Net.forward``."""
    return _MODULE + body


class DynamicRule(FileRule):
    """Shared metadata and helpers of the dynamic-shape rules."""

    id: ClassVar[str]
    category = Category.DYNAMIC_SHAPE
    severity = Severity.ERROR
    confidence = Confidence.HIGH
    scope = Scope.FORWARD

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.flow = Flow(self.ctx)

    def _confidence(self, call: cst.Call, is_method: bool) -> Confidence:
        """High for a qualified torch function or a method on a known tensor."""
        inner = receiver(call)
        if not is_method or (inner is not None and self.ctx.is_tensor(inner)):
            return Confidence.HIGH
        return Confidence.MEDIUM

    @staticmethod
    def _symbol(name: str, is_method: bool) -> str:
        return f"torch.Tensor.{name}" if is_method else f"torch.{name}"


class ApiRule(DynamicRule):
    """A rule triggered by calls of some torch APIs (functions or Tensor methods)."""

    APIS: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def calls(cls) -> Calls:
        """The torch APIs in ``APIS``."""
        return Calls(apis=cls.APIS)

    def visit_Call(self, node: cst.Call) -> None:
        api = torch_api(self.ctx, node)
        if api is not None and api[0] in self.APIS:
            self.check(node, api[0], api[1])

    def check(self, call: cst.Call, name: str, is_method: bool) -> None:
        """Report ``call`` of API ``name`` when it is a hazard."""
        raise NotImplementedError
