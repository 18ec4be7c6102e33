"""The MS1xx rules on small real snippets: what they report, and the exact rewrite."""

from __future__ import annotations

import pytest

from msready.analyzer.findings import Confidence, Finding, Severity
from msready.analyzer.parse import parse_text
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.walk import walk_file
from msready.rules.api_mapping import (
    ApiArgumentsDiffer,
    ApiDefaultDiffers,
    ApiMissing,
    ApiSemanticsDiffer,
)

RULES = (ApiMissing, ApiSemanticsDiffer, ApiDefaultDiffers, ApiArgumentsDiffer)
HEADER = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
          "import torchvision\n")


def findings(body: str, target: str = "cpu") -> list[Finding]:
    """Every MS1xx finding on a snippet (the header's imports come first)."""
    fr = walk_file("example.py", parse_text(HEADER + body), [])
    repo = RepositoryModel([fr])
    repo.target = target  # type: ignore[attr-defined]
    return [f for rule in RULES for f in rule().check(repo)]


def only(body: str, rule: str, target: str = "cpu") -> Finding:
    hits = [f for f in findings(body, target) if f.rule == rule]
    assert len(hits) == 1, hits
    return hits[0]


def test_conv_padding_without_pad_mode_is_rewritten() -> None:
    f = only("conv = nn.Conv2d(16, 32, 3, padding=1)\n", "MS102")
    assert f.severity is Severity.ERROR
    assert f.suggestion == "nn.Conv2d(16, 32, 3, padding=1, pad_mode='pad', has_bias=True)"
    assert (f.location.line, f.location.column) == (5, 8)
    assert f.symbol == "torch.nn.Conv2d"


def test_conv_without_padding_needs_valid() -> None:
    f = only("conv = nn.Conv2d(3, 8, 3, bias=False)\n", "MS102")
    assert "pad_mode='valid'" in f.suggestion
    assert not [x for x in findings("conv = nn.Conv2d(3, 8, 3, bias=False)\n")
                if x.rule == "MS103"]


def test_conv_with_pad_mode_already_is_not_a_padding_issue() -> None:
    hits = findings("conv = nn.Conv2d(3, 8, 3, pad_mode='pad', padding=1, bias=True)\n")
    assert not [f for f in hits if f.rule == "MS102"]


def test_conv_tuple_padding_doubles_per_axis() -> None:
    f = only("conv = nn.Conv2d(3, 8, 3, padding=(1, 2), bias=True)\n", "MS102")
    assert f.suggestion == "nn.Conv2d(3, 8, 3, padding=(1, 1, 2, 2), has_bias=True, pad_mode='pad')"


def test_conv_string_padding_is_pad_mode() -> None:
    f = only("conv = nn.Conv2d(3, 8, 3, padding='same', bias=True)\n", "MS102")
    assert f.suggestion == "nn.Conv2d(3, 8, 3, has_bias=True, pad_mode='same')"


def test_conv_default_bias_differs() -> None:
    f = only("conv = nn.Conv2d(3, 8, 3, padding=1)\n", "MS103")
    assert "has_bias" in f.message and "has_bias=True" in f.suggestion


def test_batchnorm_momentum_is_inverted() -> None:
    f = only("bn = nn.BatchNorm2d(16, momentum=0.01)\n", "MS102")
    assert f.suggestion == "nn.BatchNorm2d(16, momentum=0.99)"
    assert "0.99" in f.message


def test_batchnorm_default_momentum_is_quiet() -> None:
    assert findings("bn = nn.BatchNorm2d(16)\n") == []


def test_batchnorm_track_running_stats_false() -> None:
    f = only("bn = nn.BatchNorm1d(8, track_running_stats=False)\n", "MS102")
    assert f.suggestion == "nn.BatchNorm1d(8, use_batch_statistics=True)"


def test_batchnorm_variable_momentum() -> None:
    f = only("m = 0.05\nbn = nn.BatchNorm2d(16, momentum=m)\n", "MS102")
    assert "momentum=1 - (m)" in f.suggestion


def test_linear_bias_false_is_renamed() -> None:
    f = only("fc = nn.Linear(4, 8, bias=False)\n", "MS104")
    assert f.suggestion == "nn.Dense(4, 8, has_bias=False)"


def test_linear_plain_is_quiet_on_cpu() -> None:
    assert findings("fc = nn.Linear(4, 8)\n") == []


def test_linear_keywords_are_renamed() -> None:
    f = only("fc = nn.Linear(in_features=4, out_features=8)\n", "MS104")
    assert f.suggestion == "nn.Dense(in_channels=4, out_channels=8)"


def test_dropout_positional_p() -> None:
    f = only("drop = nn.Dropout(0.2)\n", "MS102")
    assert f.suggestion == "nn.Dropout(p=0.2)"
    assert not [x for x in findings("drop = nn.Dropout(0.2)\n") if x.rule == "MS104"]
    assert findings("drop = nn.Dropout(p=0.2)\n") == []


def test_layernorm_int_shape() -> None:
    f = only("ln = nn.LayerNorm(8)\n", "MS102")
    assert f.suggestion == "nn.LayerNorm((8,), epsilon=1e-05)"


def test_maxpool_stride_default() -> None:
    f = only("pool = nn.MaxPool2d(2)\n", "MS103")
    assert f.suggestion == "nn.MaxPool2d(2, stride=2)"


def test_missing_padding_mode_argument() -> None:
    f = only("conv = nn.Conv2d(4, 8, 3, padding_mode='reflect', padding=1, bias=True)\n",
             "MS104")
    assert "padding_mode" in f.message and "padding_mode" not in f.suggestion


def test_default_padding_mode_is_dropped_silently() -> None:
    hits = findings("conv = nn.Conv2d(4, 8, 3, padding_mode='zeros', padding=1, bias=True)\n")
    (f,) = [f for f in hits if f.rule == "MS104"]
    assert "padding_mode" not in f.message and "has_bias" in f.message


def test_missing_api_reports_workaround() -> None:
    f = only("dt = torch.get_default_dtype()\n", "MS101")
    assert f.suggestion.startswith("equivalent: ") and "mindspore.float32" in f.suggestion
    assert f.severity is Severity.INFO


def test_a_missing_api_the_cells_compose_points_to_their_code() -> None:
    # nothing runs torch.einsum on CPU, but the starter Cells write it from primitives
    f = only("y = torch.einsum('ij->ji', torch.ones(2, 3))\n", "MS101")
    assert f.suggestion.startswith(
        "composition: msready's starter Cells replace it with `torch_einsum`, written into "
        "the generated file from mindspore.ops primitives")
    assert f.severity is Severity.WARNING


def test_a_query_the_cells_answer_has_an_equivalent() -> None:
    # eager code on one device gets False: no custom operator is needed
    f = only("on = torch.is_autocast_enabled()\n", "MS101")
    assert f.suggestion == ("equivalent: Replace the call by `False`, the answer eager code "
                            "gets (msready's starter Cells do so).")
    assert f.severity is Severity.INFO


def test_the_tables_own_composition_follows_the_cells_code() -> None:
    f = only("y = F.scaled_dot_product_attention(q, k, v)\n", "MS101")
    assert f.suggestion.startswith(
        "composition: msready's starter Cells replace it with `torch_attention`")
    assert " Or: attn = mindspore.ops.softmax(" in f.suggestion


def test_missing_layer_without_counterpart() -> None:
    f = only("norm = nn.RMSNorm(16)\n", "MS101")
    assert "composition" in f.suggestion


@pytest.mark.parametrize("body", [
    "y = torch.relu(torch.ones(3))\n",
    "y = F.relu(torch.ones(3))\n",
    "y = torch.cat([torch.ones(2), torch.ones(2)])\n",
    "act = nn.ReLU()\n",
    "loss = nn.MSELoss()\n",
])
def test_consistent_apis_stay_quiet(body: str) -> None:
    assert findings(body) == []


def test_tensor_method_keeps_its_lower_confidence() -> None:
    hits = findings("def f(x: torch.Tensor):\n    return x.relu()\n")
    assert hits, "x.relu() maps to a function in MindSpore"
    assert all(f.confidence in (Confidence.MEDIUM, Confidence.LOW) for f in hits)
    assert hits[0].suggestion == "ops.relu(x)"


def test_whole_api_difference_is_explained() -> None:
    f = only("ds = torchvision.datasets.CIFAR10(root)\n", "MS102")
    assert "mindspore.dataset.Cifar10Dataset" in f.message
    # torchvision is not installed here, so the rewrite was never run: advice in words
    assert f.suggestion.startswith("Unverified") and "`dataset.Cifar10Dataset`" in f.suggestion


def test_tensor_view_is_consistent() -> None:
    assert findings("def f(x: torch.Tensor):\n    return x.view(-1, 4)\n") == []


def test_backend_changes_the_answer() -> None:
    # mint.nn.Conv2d on Ascend is torch-like: no pad_mode trap there
    assert findings("conv = nn.Conv2d(16, 32, 3, padding=1)\n", target="ascend") == []
    assert findings("conv = nn.Conv2d(16, 32, 3, padding=1)\n", target="gpu")


def test_ascend_is_the_default_backend() -> None:
    fr = walk_file("example.py", parse_text(HEADER + "bn = nn.BatchNorm2d(8, momentum=0.2)\n"),
                   [])
    repo = RepositoryModel([fr])
    if hasattr(repo, "target"):
        delattr(repo, "target")
    assert [f for f in ApiSemanticsDiffer().check(repo)] == []


def test_fft_missing_on_gpu_only() -> None:
    body = "y = torch.fft.fft(torch.ones(4))\n"
    assert [f.rule for f in findings(body, "gpu")] == ["MS101"]
    assert not [f for f in findings(body, "cpu") if f.rule == "MS101"]


# ----- call forms measured on CPU (analyzer/data/api_probe.json) --------------------------

@pytest.mark.parametrize(("body", "rewrite"), [
    ("def f(b, c):\n    return torch.zeros(b, c)\n", "ops.zeros((b, c))"),
    ("z = torch.ones(2, 3, dtype=torch.float16)\n", "ops.ones((2, 3), dtype=mindspore.float16)"),
    ("def f(shape):\n    return torch.zeros(*shape)\n", "ops.zeros(tuple(shape))"),
    ("def f(b, rest):\n    return torch.ones(b, *rest)\n", "ops.ones((b, *rest))"),
])
def test_separate_sizes_become_one_shape_tuple(body: str, rewrite: str) -> None:
    f = only(body, "MS102")
    assert f.suggestion == rewrite
    assert f.severity is Severity.ERROR and "one tuple" in f.message
    assert "measured on CPU with MindSpore" in f.message


@pytest.mark.parametrize("body", [
    "z = torch.zeros((2, 3))\n",
    "def f(n):\n    return torch.ones(n)\n",
    "def f(x: torch.Tensor):\n    return torch.zeros(x.shape)\n",
    "import numpy as np\nz = np.zeros((2, 3))\n",
])
def test_one_shape_argument_is_quiet(body: str) -> None:
    assert [f for f in findings(body) if f.rule == "MS102"] == []


@pytest.mark.parametrize(("body", "rewrite"), [
    ("def f(x):\n    return torch.log_softmax(x, dim=1)\n", "ops.log_softmax(x, axis=1)"),
    ("def f(x):\n    return F.log_softmax(x, dim=-1)\n", "ops.log_softmax(x, axis=-1)"),
    ("def f(x):\n    return torch.softmax(x, dim=-1)\n", "ops.softmax(x, axis=-1)"),
    ("def f(a, b):\n    return torch.cat([a, b], dim=1)\n", "ops.cat([a, b], axis=1)"),
    ("def f(x: torch.Tensor):\n    return x.split(2, dim=1)\n", "x.split(2, axis=1)"),
])
def test_measured_dim_keyword_becomes_axis(body: str, rewrite: str) -> None:
    f = only(body, "MS104")
    assert f.suggestion == rewrite
    assert "`dim=` is `axis=`" in f.message


def test_positional_dim_measured_to_work_is_quiet() -> None:
    assert findings("def f(x):\n    return torch.log_softmax(x, 1)\n") == []


def test_tensor_transpose_becomes_swapaxes_on_cpu_only() -> None:
    body = "def f(x: torch.Tensor):\n    return x.transpose(1, 2)\n"
    f = only(body, "MS102")
    assert f.suggestion == "x.swapaxes(1, 2)" and "GRAPH_MODE" in f.message
    assert findings(body, target="ascend") == []


def test_float_fill_value_gets_torch_float_dtype() -> None:
    f = only("m = torch.full((2, 3), 0.5)\n", "MS102")
    assert f.suggestion == "ops.full((2, 3), 0.5, dtype=mindspore.float32)"
    assert "integers" in f.message


@pytest.mark.parametrize("body", [
    "m = torch.full((2, 3), 0.5, dtype=torch.float32)\n",
    "m = torch.full((2, 3), 7)\n",
])
def test_full_with_a_dtype_or_an_integer_value_is_quiet(body: str) -> None:
    assert [f for f in findings(body) if f.rule == "MS102"] == []


def test_multihead_attention_result_count_is_explained() -> None:
    f = only("attn = nn.MultiheadAttention(8, 2, batch_first=True)\n", "MS102")
    assert "need_weights=False" in f.message and "returns 1 value(s)" in f.message


@pytest.mark.parametrize(("body", "measured"), [
    # nearest interpolation rejects scale_factor; ops.max without an axis returns a pair
    ("def f(img):\n    return F.interpolate(img, scale_factor=2.0)\n", "fails in PyNative"),
    ("def f(x):\n    return torch.max(x)\n", "returns 2 value(s) where torch returns 1"),
])
def test_call_of_a_measured_failing_form_is_reported(body: str, measured: str) -> None:
    f = only(body, "MS102")
    assert measured in f.message and f.message.startswith("Measured on CPU with MindSpore")


@pytest.mark.parametrize("body", [
    "def f(x):\n    return torch.flatten(x, start_dim=1)\n",
    "def f(x):\n    return torch.max(x, 1)\n",
])
def test_other_forms_of_a_measured_api_are_not_reported(body: str) -> None:
    assert [f for f in findings(body) if f.rule == "MS102"] == []


@pytest.mark.parametrize(("body", "rewrite"), [
    ("def f(x):\n    return torch.flatten(x)\n", "ops.flatten(x, start_dim=0)"),
    ("def f(x):\n    return torch.flatten(x, 1)\n", "ops.flatten(x, start_dim=1)"),
    ("def f(img):\n    return F.avg_pool2d(img, 2)\n", "ops.avg_pool2d(img, 2, stride=2)"),
])
def test_measured_failures_the_signatures_explain_are_reported_once(body: str,
                                                                   rewrite: str) -> None:
    hits = findings(body)
    assert hits and all(f.suggestion == rewrite for f in hits)
    assert not [f for f in hits if f.message.startswith("Measured")]


@pytest.mark.parametrize(("body", "measured"), [
    # in GRAPH_MODE on CPU Tensor.argmax() reduces the last axis only; max(1) drops indices
    ("def f(x: torch.Tensor):\n    return x.argmax()\n", "shape (2, 3), torch gives ()"),
    ("def f(x: torch.Tensor):\n    return x.max(1)\n", "returns 1 value(s) where torch"),
])
def test_tensor_method_forms_measured_in_graph_mode(body: str, measured: str) -> None:
    f = only(body, "MS102")
    assert measured in f.message and "GRAPH_MODE" in f.message
    assert findings(body.replace("x.argmax()", "x.argmax(dim=1)").replace(
        "x.max(1)", "x.max(dim=1)")) == []
