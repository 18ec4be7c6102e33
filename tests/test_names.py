"""Name resolution: only imported (or defined) names resolve, under every import style."""

from __future__ import annotations

import pytest

from msready.analyzer.facts import CallKind
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.walk import walk_file


def calls(src: str, path: str = "pkg/mod.py") -> list[tuple[str, str]]:
    parsed = parse_text(src)
    assert isinstance(parsed, Parsed)
    return [(c.kind.value, c.target) for c in walk_file(path, parsed, []).calls]


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("import torch.nn as nn\nnn.Linear(2, 3)\n", "torch.nn.Linear"),
        ("from torch import nn\nnn.Conv2d(1, 1, 3)\n", "torch.nn.Conv2d"),
        ("from torch.nn import functional as F\nF.relu(x)\n", "torch.nn.functional.relu"),
        ("import torch.nn.functional as F\nF.gelu(x)\n", "torch.nn.functional.gelu"),
        ("import torch.autograd as ag\nag.grad(y, x)\n", "torch.autograd.grad"),
        ("from torch.autograd import grad as torch_grad\ntorch_grad(y, x)\n",
         "torch.autograd.grad"),
        ("try:\n    import torch\nexcept ImportError:\n    torch = None\ntorch.zeros(3)\n",
         "torch.zeros"),
        ("def f():\n    import torch.nn as nn\n    return nn.ReLU()\n", "torch.nn.ReLU"),
        ("def f():\n    return torch.ones(2)\nimport torch\n", "torch.ones"),
        ("import torch\nnn_init = torch.nn.init\nnn_init.zeros_(w)\n", "torch.nn.init.zeros_"),
    ],
)
def test_import_styles_resolve(src: str, expected: str) -> None:
    assert ("name", expected) in calls(src)


def test_relative_imports_resolve_to_repository_modules() -> None:
    src = "from .helpers import assign\nfrom ..core import base\nassign(x)\nbase.run()\n"
    found = calls(src, "pkg/sub/mod.py")
    assert ("name", "pkg.sub.helpers.assign") in found
    assert ("name", "pkg.core.base.run") in found


def test_method_on_expression_is_not_a_dotted_function() -> None:
    found = calls("import torch\ny = torch.zeros(3).view(2, 2)\n")
    assert ("name", "torch.zeros") in found
    assert ("tensor-method", "torch.Tensor.view") in found
    assert all(t != "torch.zeros.view" for _, t in found)


def test_tensor_methods_on_plain_names_are_a_lower_confidence_bucket() -> None:
    parsed = parse_text("import torch\ndef f(x):\n    return x.view(2, 2)\n")
    assert isinstance(parsed, Parsed)
    call = walk_file("m.py", parsed, []).calls[0]
    assert (call.kind, call.target, call.confidence) == (
        CallKind.TENSOR_METHOD, "torch.Tensor.view", "low")


def test_tensor_method_on_a_torch_result_is_medium_confidence() -> None:
    parsed = parse_text("import torch\ndef f():\n    t = torch.ones(4)\n    return t.view(2, 2)\n")
    assert isinstance(parsed, Parsed)
    methods = [c for c in walk_file("m.py", parsed, []).calls if c.kind is CallKind.TENSOR_METHOD]
    assert [(c.target, c.confidence) for c in methods] == [("torch.Tensor.view", "medium")]


@pytest.mark.parametrize(
    "src",
    [
        "x = torch.zeros(3)\n",  # torch never imported: nothing resolves
        "import numpy as np\na = np.zeros(3)\na.reshape(3, 1)\n",  # numpy array method
        "import torch\nline = 'a,b'\nline.split(',')\n",  # a str method
        "import torch\ndef f(nn):\n    return nn.Linear(2, 2)\n",  # parameter shadows
        "x.view(2)\n",  # no torch import: no tensor-method guess
    ],
)
def test_lookalikes_do_not_resolve_to_torch(src: str) -> None:
    assert not [t for _, t in calls(src) if t.startswith("torch")]


def test_unimported_names_do_not_resolve() -> None:
    assert calls("foo.bar(1)\n") == []


def test_builtins_resolve_to_builtins() -> None:
    assert ("name", "builtins.print") in calls("print(1)\n")


def test_a_node_is_qualified_once_until_a_binding_changes() -> None:
    import libcst as cst

    from msready.analyzer.names import LOCAL, Resolver

    resolver = Resolver("pkg.mod", False)
    resolver.bind("nn", "torch.nn")
    node = cst.parse_expression("nn.Linear")
    assert resolver.qualify(node) == "torch.nn.Linear"
    resolver.scopes[0].bindings["nn"] = "elsewhere"  # behind its back: the answer is kept
    assert resolver.qualify(node) == "torch.nn.Linear"
    resolver.bind("nn", LOCAL)  # a rebinding is seen
    assert resolver.qualify(node) is None
    resolver.push("function", "pkg.mod.f")
    resolver.bind("nn", "mindspore.nn")
    assert resolver.qualify(node) == "mindspore.nn.Linear"
    resolver.pop()  # leaving the scope is seen too
    assert resolver.qualify(node) is None
    assert resolver.qualify(cst.parse_expression("nn.Linear")) is None  # another node


def test_a_name_rebound_inside_a_function_resolves_by_where_it_is_used() -> None:
    src = ("import torch\n\ndef f(x):\n    y = torch.relu(x)\n    torch = None\n"
           "    return torch.relu(y)\n\ntorch.relu(1)\n")
    assert calls(src) == [("name", "torch.relu"), ("name", "torch.relu")]
