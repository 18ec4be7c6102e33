"""The repository model: Module subclasses through repository bases, and the call graph
with "reachable from a forward" and "the path from a forward" across files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from msready.analyzer.scan import ScanOptions, scan, scan_files

MakeRepo = Callable[[dict[str, str]], Path]

HELPERS = '''
import torch

def match(scores):
    return torch.nonzero(scores)

def assign(scores):
    return match(scores)

def unused(scores):
    return torch.unique(scores)
'''

MODEL = '''
import torch.nn as nn
from .helpers import assign
from .base import Base


class Block(nn.Module):
    def forward(self, x):
        return self.helper(x)

    def helper(self, x):
        return x


class Head(Base):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.last = Block()

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        x = super().forward(x)
        return assign(self.last(x))
'''

BASE = '''
from torch import nn

class Base(nn.Module):
    def forward(self, x):
        return self.prepare(x)

    def prepare(self, x):
        return x

class NotAModule:
    def forward(self, x):
        return x
'''


def model_of(make_repo: MakeRepo, files: dict[str, str]):  # type: ignore[no-untyped-def]
    return scan(str(make_repo(files)), options=ScanOptions(jobs=1, cache=False)).model


def test_module_classes_include_indirect_subclasses(make_repo: MakeRepo) -> None:
    model = model_of(make_repo, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                 "pkg/model.py": MODEL, "pkg/base.py": BASE})
    assert model.module_classes == {"pkg.model.Block", "pkg.model.Head", "pkg.base.Base"}


def test_path_from_forward_crosses_files(make_repo: MakeRepo) -> None:
    model = model_of(make_repo, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                 "pkg/model.py": MODEL, "pkg/base.py": BASE})
    path = model.path_from_forward("pkg.helpers.match")
    assert path is not None
    assert [model.short_name(p) for p in path] == ["Head.forward", "assign", "match"]
    assert model.path_from_forward("pkg.helpers.unused") is None


def test_self_method_super_and_submodule_calls(make_repo: MakeRepo) -> None:
    model = model_of(make_repo, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                 "pkg/model.py": MODEL, "pkg/base.py": BASE})
    graph = model.graph
    assert graph.has_edge("pkg.model.Block.forward", "pkg.model.Block.helper")
    assert graph.has_edge("pkg.model.Head.forward", "pkg.model.Block.forward")  # container + attr
    assert graph.has_edge("pkg.model.Head.forward", "pkg.base.Base.forward")  # super()
    assert graph.has_edge("pkg.base.Base.forward", "pkg.base.Base.prepare")
    assert "pkg.base.NotAModule.forward" not in model.forward_paths


def test_reexported_torch_alias_resolves_through_package_init(make_repo: MakeRepo) -> None:
    root = make_repo({
        "pkg/__init__.py": "from torch.nn import functional as F\n",
        "pkg/use.py": "from pkg import F\n\ndef act(x):\n    return F.relu(x)\n",
        "pkg/rel.py": "from . import F\n\ndef act(x):\n    return F.gelu(x)\n",
    })
    result = scan(str(root), options=ScanOptions(jobs=1, cache=False))
    symbols = {a.symbol: a for a in result.apis}
    assert symbols["torch.nn.functional.relu"].locations[0].path == "pkg/use.py"
    assert symbols["torch.nn.functional.gelu"].locations[0].path == "pkg/rel.py"


def test_a_function_a_package_reexports_under_its_modules_name_is_the_function(
        make_repo: MakeRepo) -> None:
    # after ``from .make import make`` in the package, ``pkg.layers.make`` is the function,
    # not the submodule of the same name: the path from forward goes through it
    root = make_repo({
        "pkg/__init__.py": "",
        "pkg/layers/__init__.py": "from .make import make\n",
        "pkg/layers/make.py": "import torch\n\ndef make(x):\n    return torch.nonzero(x)\n",
        "pkg/net.py": "import torch.nn as nn\nfrom pkg.layers import make\n\n"
                      "class Net(nn.Module):\n    def forward(self, x):\n"
                      "        return make(x)\n",
    })
    model = scan(str(root), options=ScanOptions(jobs=1, cache=False)).model
    assert model.resolve("pkg.layers.make") is not None
    assert model.resolve("pkg.layers.make").kind == "function"  # type: ignore[union-attr]
    assert model.resolve("pkg.layers.make.make").kind == "function"  # type: ignore[union-attr]
    assert model.path_from_forward("pkg.layers.make.make") == ("pkg.net.Net.forward",
                                                               "pkg.layers.make.make")


def test_script_style_imports_resolve_inside_a_subfolder(make_repo: MakeRepo) -> None:
    root = make_repo({
        "project/models/net.py": "import torch.nn as nn\nfrom utils.ops import f\n\n"
                                 "class Net(nn.Module):\n    def forward(self, x):\n"
                                 "        return f(x)\n",
        "project/utils/ops.py": "import torch\n\ndef f(x):\n    return torch.nonzero(x)\n",
    })
    model = scan(str(root), options=ScanOptions(jobs=1, cache=False)).model
    assert model.path_from_forward("project.utils.ops.f") == ("project.models.net.Net.forward",
                                                              "project.utils.ops.f")


def test_autograd_function_is_a_root_through_apply(make_repo: MakeRepo) -> None:
    root = make_repo({"m.py": '''
import torch

def clamp_helper(g):
    return g.clamp(-1, 1)

class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return clamp_helper(g)
'''})
    model = scan(str(root), options=ScanOptions(jobs=1, cache=False)).model
    assert model.function_classes == {"m.Clip"}
    assert model.path_from_forward("m.clamp_helper") == ("m.Clip.backward", "m.clamp_helper")


def test_calling_an_instance_reaches_its_forward(make_repo: MakeRepo) -> None:
    root = make_repo({"m.py": '''
import torch.nn as nn

class Critic(nn.Module):
    def forward(self, x):
        return x

class Scorer:
    def __call__(self, x):
        return x

def train(x):
    critic = Critic()
    scorer = Scorer()
    return scorer(critic(x))
'''})
    model = scan(str(root), options=ScanOptions(jobs=1, cache=False)).model
    assert model.graph.has_edge("m.train", "m.Critic.forward")
    assert model.graph.has_edge("m.train", "m.Scorer.__call__")


def test_an_analysis_the_rules_share_is_computed_once() -> None:
    model = scan_files({"m.py": "import torch\nx = torch.zeros(3)\n"}).model
    runs: list[int] = []

    def count_calls() -> int:
        runs.append(1)
        return len(model.calls)

    assert model.provide("calls", count_calls) == model.provide("calls", count_calls) == 1
    assert len(runs) == 1
