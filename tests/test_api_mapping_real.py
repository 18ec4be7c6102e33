"""MS1xx on snippets shaped like real model code (timm-style): the precision traps.

Each test pairs what must be reported with the lookalike that must stay quiet.
"""

from __future__ import annotations

import ast

import pytest

from msready.analyzer.apitable import load_table
from msready.analyzer.conversion import plan_call
from msready.analyzer.findings import Confidence, Finding
from msready.analyzer.parse import parse_text
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.scan import scan_files
from msready.analyzer.walk import walk_file
from msready.rules.api_mapping import (
    ApiArgumentsDiffer,
    ApiDefaultDiffers,
    ApiMissing,
    ApiSemanticsDiffer,
    torch_calls,
)

RULES = (ApiMissing, ApiSemanticsDiffer, ApiDefaultDiffers, ApiArgumentsDiffer)
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def findings(body: str, target: str = "cpu") -> list[Finding]:
    """Every MS1xx finding on a snippet after the header's imports."""
    fr = walk_file("model.py", parse_text(HEADER + body), [])
    repo = RepositoryModel([fr])
    repo.target = target  # type: ignore[attr-defined]
    return [f for rule in RULES for f in rule().check(repo)]


def rewrite(body: str, target: str = "cpu") -> str:
    """The rewrite msready computes for the snippet's first rewritten torch call, whether
    or not it is shown as code (:mod:`tests.test_api_fixes` covers which are)."""
    fr = walk_file("example.py", parse_text(HEADER + body), [])
    repo = RepositoryModel([fr], target)
    for rc, entry in torch_calls(repo):
        plan = plan_call(rc.call, entry, target, rc.file.bindings)
        if entry.status_for(target) == "differs" and plan.issues:
            return plan.rewrite
    raise AssertionError(f"no rewrite for {body!r}")


def symbols(body: str, target: str = "cpu") -> set[str]:
    return {f.symbol for f in findings(body, target)}


def parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


# ----- 1. variadic signatures never give positional / keyword findings -------------------

def test_to_with_a_dtype_variable_is_quiet() -> None:
    body = ("def cast(x, dt):\n    x = torch.randn(2, 3, 4)\n"
            "    return x.to(dt), x.to(torch.float16), x.to(dtype=dt)\n")
    assert not [f for f in findings(body) if f.symbol == "torch.Tensor.to"]


def test_no_rewrite_names_a_variadic_parameter() -> None:
    body = ("def f(x: torch.Tensor, shape, reps):\n"
            "    return x.view(*shape), x.permute(0, 2, 1), x.expand(2, -1, -1)\n")
    for f in findings(body, "ascend") + findings(body, "cpu"):
        assert "args=" not in f.suggestion and "Positional argument" not in f.message, f


def test_table_marks_variadic_and_keyword_only_parameters() -> None:
    table = load_table()
    to = table.lookup("torch.Tensor.to")
    assert to is not None and all(not p.isidentifier() or p != "args" for p in to.torch_params)
    add = table.lookup("torch.Tensor.add")
    assert add is not None and add.torch_params[:2] == ("other", "*")


def test_reordered_positional_argument_is_still_reported() -> None:
    # rms_norm(input, normalized_shape, weight, eps) on Ascend: eps is not 4th there
    hits = findings("y = F.rms_norm(x, (8,), None, 1e-6)\n", "ascend")
    assert [f for f in hits if f.rule == "MS104"]
    assert rewrite("y = F.rms_norm(x, (8,), None, 1e-6)\n", "ascend") == \
        "ops.rms_norm(x, (8,), epsilon=1e-06)"


# ----- 2. initialisers are objects applied with set_data ---------------------------------

@pytest.mark.parametrize(("call", "init"), [
    ("nn.init.zeros_(module.bias)", "Zero()"),
    ("nn.init.ones_(self.weight)", "One()"),
    ("nn.init.constant_(m.bias, 0.5)", "Constant(value=0.5)"),
    ("nn.init.normal_(m.weight, std=0.02)", "Normal(sigma=0.02)"),
    ("nn.init.trunc_normal_(self.pos_embed, std=.02)", "TruncatedNormal(sigma=0.02)"),
    ("nn.init.xavier_uniform_(m.weight)", "XavierUniform()"),
    ("nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')",
     "HeNormal(mode='fan_out', nonlinearity='relu')"),
    ("nn.init.uniform_(m.weight, -0.1, 0.1)", "Uniform(scale=0.1)"),
])
def test_initialiser_rewrite_uses_set_data(call: str, init: str) -> None:
    hits = findings(call + "\n")
    assert [f.rule for f in hits] == ["MS102"], hits
    param = call[call.index("(") + 1:].split(",")[0].rstrip(")")
    assert hits[0].suggestion == (f"{param}.set_data(initializer({init}, {param}.shape, "
                                  f"{param}.dtype))")
    assert "tensor=" not in hits[0].suggestion and parses(hits[0].suggestion)


def test_initialiser_default_spread_is_kept_and_explained() -> None:
    (f,) = findings("nn.init.normal_(m.weight)\n")
    assert "Normal(sigma=1.0)" in f.suggestion and "0.01" in f.message


def test_asymmetric_uniform_is_shifted() -> None:
    (f,) = findings("nn.init.uniform_(m.weight, 0.0, 2.0)\n")
    assert f.suggestion.endswith(".init_data() + (0.0 + 2.0) / 2)") and parses(f.suggestion)


def test_initialiser_set_data_rewrite_runs_in_mindspore() -> None:
    ms = pytest.importorskip("mindspore")
    import numpy as np
    from mindspore.common.initializer import Constant, initializer

    (f,) = findings("nn.init.constant_(p, 0.5)\n")
    p = ms.Parameter(ms.Tensor(np.zeros((2, 2), np.float32)), name="p")
    exec(f.suggestion, {"initializer": initializer, "Constant": Constant, "p": p})
    assert float(p.asnumpy().sum()) == 2.0


# ----- 3. same name, different meaning ---------------------------------------------------

def test_torch_transpose_becomes_swapaxes_off_ascend() -> None:
    body = "def f(x: torch.Tensor):\n    return torch.transpose(x, 1, 2)\n"
    (f,) = [f for f in findings(body) if f.rule == "MS102"]
    assert f.suggestion == "ops.swapaxes(x, 1, 2)" and "permutes" in f.message
    assert not findings(body, "ascend")


def test_tensor_transpose_depends_on_the_backend() -> None:
    body = "def f(q, k):\n    q = torch.randn(2, 3, 4)\n    return q @ q.transpose(-2, -1)\n"
    assert not findings(body, "ascend")
    (f,) = findings(body, "gpu")
    assert f.suggestion == "q.swapaxes(-2, -1)"
    # measured: on CPU the two-axis form runs in PyNative but permutes all axes in GRAPH_MODE
    (f,) = findings(body, "cpu")
    assert (f.rule, f.suggestion) == ("MS102", "q.swapaxes(-2, -1)")
    assert "Measured on CPU" in f.message and "GRAPH_MODE" in f.message


def test_no_false_no_tensor_method_claim() -> None:
    table = load_table()
    import mindspore

    for entry in table.entries():
        if not entry.torch.startswith("torch.Tensor."):
            continue
        for backend in ("ascend", "gpu", "cpu"):
            api = entry.target(backend).api
            if api and entry.becomes_function(backend):
                name = entry.torch.rsplit(".", 1)[1]
                documented = getattr(mindspore.Tensor, name, None)
                # a function target is only chosen when the Tensor method cannot serve
                assert documented is None or api.rsplit(".", 1)[1] != name \
                    or not api.startswith("mindspore.Tensor."), (entry.torch, backend)


def test_size_is_the_shape() -> None:
    body = "def f(x: torch.Tensor):\n    x = torch.randn(2, 3, 4)\n    return x.size(1), x.size()\n"
    got = sorted(f.suggestion for f in findings(body))
    assert got == ["x.shape", "x.shape[1]"]


def test_repeat_is_tile_off_ascend() -> None:
    body = "def f(x):\n    x = torch.randn(2, 3, 4)\n    return x.repeat(2, 1)\n"
    (f,) = findings(body)
    assert f.rule == "MS102" and f.suggestion == "x.tile((2, 1))"
    assert not findings(body, "ascend")


def test_std_unbiased_is_ddof() -> None:
    body = "def f(x):\n    x = torch.randn(2, 3, 4)\n    return x.std(1, unbiased=False)\n"
    (f,) = findings(body)
    assert f.rule == "MS104" and f.suggestion == "x.std(1, ddof=0)"


def test_std_default_correction_is_explicit_on_cpu() -> None:
    body = "def f(x):\n    x = torch.randn(2, 3, 4)\n    return x.var(2)\n"
    (f,) = findings(body)
    assert f.rule == "MS103" and f.suggestion == "x.var(2, ddof=1)"


@pytest.mark.parametrize("body", [
    "y = x.view(-1, 4)\n",
    "y = x.permute(0, 2, 1)\n",
    "y = x.masked_fill(mask, 0.0)\n",
    "y = x.flatten(1)\n",
    "y = x.max(dim=1)\n",
    "y = x.split(2, 1)\n",
    "y = x.chunk(3, -1)\n",
    "y = x.sort(dim=-1)\n",
])
def test_same_meaning_methods_are_quiet_on_cpu(body: str) -> None:
    assert not findings("x = torch.ones((2, 3, 4))\nmask = x > 0\n" + body)


# ----- 4. one finding per construct: idiom rules own theirs ------------------------------

@pytest.mark.parametrize("body", [
    "with torch.no_grad():\n    pass\n",
    "with torch.enable_grad():\n    pass\n",
    "dev = torch.device('cuda')\n",
    "ok = torch.cuda.is_available()\n",
    "m = torch.compile(model)\n",
    "sd = torch.load('w.pt', map_location='cpu')\n",
    "scaler = torch.cuda.amp.GradScaler()\n",
    "loader = torch.utils.data.DataLoader(ds, batch_size=8)\n",
    "torch.distributed.all_reduce(t)\n",
    "def step(loss):\n    loss.backward()\n",
    "def move(x):\n    x = torch.randn(2, 3, 4)\n    return x.cuda(), x.cpu()\n",
])
def test_idiom_owned_constructs_are_left_to_the_idiom_rules(body: str) -> None:
    assert not findings(body)


def test_idiom_rule_still_reports_them_in_a_full_scan() -> None:
    result = scan_files({"example.py": HEADER + "with torch.no_grad():\n    pass\n"},
                        target="cpu")
    rules = [f.rule for f in result.findings if f.location.line == 4]
    assert rules == ["MS606"]


# ----- 5. lookalikes on receivers of unknown type ----------------------------------------

@pytest.mark.parametrize("body", [
    "def f(features):\n    return list(features.values())\n",
    "def f(d):\n    return d.items(), d.keys()\n",
    "def f(rows, x):\n    rows.append(x)\n    return rows.copy()\n",
    "def f(name):\n    return name.split('['), name.index('a')\n",
    "def f(arr):\n    return arr.tolist()\n",
])
def test_python_container_methods_are_not_tensor_methods(body: str) -> None:
    assert not findings(body)


def test_torch_keyword_keeps_a_shared_name() -> None:
    hits = findings("def f(t):\n    return t.split(2, dim=1)\n", "gpu")
    assert [f.rule for f in hits] == ["MS104"]
    assert hits[0].confidence is Confidence.LOW


def test_known_tensor_keeps_a_shared_name() -> None:
    hits = findings("x = torch.ones(3)\nv = x.values()\n")
    assert [f.rule for f in hits] == ["MS101"]
    assert hits[0].confidence is Confidence.MEDIUM


# ----- 6. suggestions are MindSpore code with the call's arguments -----------------------

def test_dtype_arguments_become_mindspore_dtypes() -> None:
    (f,) = findings("y = torch.cumsum(x, dim=0, dtype=torch.float64)\n")
    assert f.suggestion == "ops.cumsum(x, axis=0, dtype=mindspore.float64)"


def test_dtype_through_an_alias_import() -> None:
    body = "from torch import float16 as half\ny = torch.cumsum(x, dim=0, dtype=half)\n"
    (f,) = findings(body)
    assert f.suggestion.endswith("dtype=mindspore.float16)")


def test_a_local_named_like_a_dtype_is_not_rewritten() -> None:
    (f,) = findings("cfg = object()\ny = torch.cumsum(x, dim=0, dtype=cfg.float64)\n")
    assert f.suggestion.endswith("dtype=cfg.float64)")


def test_rewrite_keeps_keywords_after_positionals() -> None:
    body = ("rnn = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bias=bias,"
            " bidirectional=True, **dd)\n")
    assert [f for f in findings(body) if f.rule == "MS104"]
    assert parses(rewrite(body))
    assert rewrite(body).startswith("nn.LSTM(input_size, hidden_size, num_layers, ")
    assert rewrite(body).endswith("**dd)")


def test_unknown_signature_keeps_positional_arguments_first() -> None:
    body = ("import torchvision.transforms as T\n"
            "t = T.Resize(img_size, interpolation=mode)\n")
    assert findings(body)
    assert parses(rewrite(body)), rewrite(body)
    assert rewrite(body).startswith("dataset.vision.Resize(img_size, ")


def test_whole_call_suggestion_for_autograd_grad() -> None:
    body = "g = torch.autograd.grad(loss, params, create_graph=True)\n"
    (f,) = findings(body)
    assert f.rule == "MS102" and rewrite(body).startswith("grads = mindspore.grad(")
    assert "`mindspore.grad`" in f.suggestion  # not run by msready: advice in words


def test_tensor_unfold_is_not_mindspore_unfold() -> None:
    # mindspore.Tensor.unfold is im2col; torch's takes sliding windows along one axis
    body = "def f(x):\n    x = torch.randn(2, 10, 3)\n    return x.unfold(1, 4, 2)\n"
    (f,) = findings(body)
    assert f.rule == "MS101" and "ops.movedim(ops.stack(" in f.suggestion
    assert "im2col" in f.suggestion


def test_pointwise_conv_has_no_padding_trap() -> None:
    assert not [f for f in findings("proj = nn.Conv2d(64, 128, 1, bias=False)\n")
                if f.rule == "MS102"]
    assert not [f for f in findings("proj = nn.Conv2d(64, 128, kernel_size=(1, 1), stride=1,"
                                    " bias=False)\n") if f.rule == "MS102"]
    (f,) = [f for f in findings("down = nn.Conv2d(64, 128, 1, stride=2, bias=False)\n")
            if f.rule == "MS102"]
    assert "pad_mode='valid'" in f.suggestion


def test_function_target_says_where_the_method_runs() -> None:
    body = "x = torch.ones(3)\ny = x.addcdiv(x, x, value=0.5)\n"
    (f,) = [f for f in findings(body) if "first argument" in f.message]
    assert "`mindspore.Tensor.addcdiv` runs on ascend only" in f.message
    assert f.suggestion == "ops.addcdiv(x, x, x, value=0.5)"


def test_placement_arguments_are_left_out_of_rewrites() -> None:
    body = "conv = nn.Conv2d(3, 8, 3, bias=False, device=dev, dtype=dt)\n"
    assert findings(body)
    assert "device=" not in rewrite(body) and parses(rewrite(body)), rewrite(body)


def test_every_rewrite_of_a_whole_call_parses() -> None:
    for body in ("g = torch.autograd.grad(loss, params, create_graph=True)\n",
                 "nn.init.uniform_(w, lo, hi)\n", "y = torch.transpose(x, 0, 1)\n"):
        assert parses(rewrite(body)), rewrite(body)
