"""MS100: what a generated starter Cell leaves to a person, flagged in the repository."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.repo import MINDSPORE_REQUIRES, TORCH_ROOTS, RepositoryModel, ResolvedCall
from msready.rules.base import RepoRule

# Packages a Cell uses as they are: MindSpore, the packages it requires, and builtins.
_PORTABLE = MINDSPORE_REQUIRES | {"mindspore", "builtins", "__future__"}


def side_library(name: str | None) -> str | None:
    """The package of an external name that a Cell cannot import, None for torch (the
    API table's business), the standard library, and MindSpore's own requirements
    (numpy, scipy, packaging, ...)."""
    top = (name or "").split(".")[0]
    if not top or top in TORCH_ROOTS or top in _PORTABLE or top in sys.stdlib_module_names:
        return None
    return top


def _static_einops(rc: ResolvedCall) -> bool:
    """An einops call with a literal pattern: the Cell translation writes it out."""
    name = rc.external or ""
    if not name.startswith("einops."):
        return False
    layer = name.rsplit(".", 1)[-1][:1].isupper()
    args = [a for a in rc.call.args if a.keyword is None]
    pattern = next((a for a in rc.call.args if a.keyword == "pattern"), None) or (
        args[0 if layer else 1] if len(args) > (0 if layer else 1) else None)
    return pattern is not None and isinstance(pattern.literal, str)


class UntranslatedDependency(RepoRule):
    """Flags calls into packages other than torch, the standard library and the packages
    MindSpore itself requires (numpy, scipy, packaging, PIL...) inside ``nn.Module``
    classes (``einops``, ``timm``, ``loguru``, ``kornia``...).

    msready's starter Cells import only MindSpore, the packages it requires and the
    standard library: a package written for torch tensors does not take MindSpore
    tensors, and a generated file never imports the scanned repository's dependencies.
    Such a call stays in the Cell under a ``# TODO(msready MS100): reason`` comment, which
    is also how every other piece of a Cell that needs a person is marked.

    An einops call whose pattern is a string literal is not flagged: the Cell writes
    it out as reshape / transpose / tile. Replace other calls with MindSpore operations,
    use the package's MindSpore port if it has one, or drop a side
    library (logging, progress bars) from the network code.
    """

    id = "MS100"
    name = "untranslated-dependency"
    category = Category.API_MAPPING
    severity = Severity.WARNING
    confidence = Confidence.MEDIUM
    VALID = (
        # an einops pattern written as a literal is translated in the Cell
        "import torch.nn as nn\nfrom einops import rearrange\n\n"
        "class Tokens(nn.Module):\n    def forward(self, x):\n"
        "        return rearrange(x, 'b c h w -> b (h w) c')\n",
        # torch, numpy and the standard library are not side libraries either
        "import math\nimport numpy as np\nimport torch.nn as nn\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        return x * math.sqrt(np.float32(2.0))\n",
        # MindSpore requires scipy: a Cell keeps it and runs it as it is
        "import numpy as np\nimport torch.nn as nn\nfrom scipy.stats import truncnorm\n\n"
        "class Init(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = truncnorm.rvs(-2, 2, size=4).astype(np.float32)\n",
        # outside a Module: a training script may use anything
        "from tqdm import tqdm\n\ndef train(loader):\n    for batch in tqdm(loader):\n"
        "        pass\n",
    )
    INVALID = (
        "import torch.nn as nn\nfrom einops import rearrange\n\n"
        "class Tokens(nn.Module):\n    def forward(self, x, pattern):\n"
        "        return rearrange(x, pattern)  # expect: MS100\n",
        "import torch.nn as nn\nimport timm\n\nclass Backbone(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.body = timm.create_model('resnet18')  # expect: MS100\n",
    )

    def check(self, repo: RepositoryModel) -> Iterable[Finding]:
        for rc in repo.calls:
            package = side_library(rc.external)
            owner = rc.call.caller.rpartition(".")[0]
            if package is None or owner not in repo.module_classes or _static_einops(rc):
                continue
            yield Finding(
                rule=self.id, rule_name=self.name, category=self.category,
                severity=self.severity, confidence=self.confidence,
                location=Location.at(rc.file.path, rc.call.span, rc.call.cell),
                symbol=str(rc.external),
                message=f"`{rc.external}` comes from `{package}`, which the starter Cell "
                        "does not import: the call is kept there under a TODO",
                suggestion=f"Write it with MindSpore operations, or use a MindSpore port of "
                           f"`{package}`; drop side libraries from the network code.")
