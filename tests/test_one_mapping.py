"""One mapping engine: a torch call gets the same MindSpore call in the ``Fix:`` text of its
MS1xx finding and in the generated Cell.

Both come from :func:`msready.analyzer.conversion.plan_call`. The rules give it the call
site the analyzer extracted from the file; the Cell translator gives it its libcst
arguments as code text and parses the rewrite back. Each example below is one torch call
and the one MindSpore call both sides must write; a second table lists the calls where the
Cell must run what the Fix only says in words (``Options(cell=True)``), and a third what
neither side may write.
"""

from __future__ import annotations

import libcst as cst
import pytest

from msready.analyzer.repo import RepositoryModel
from msready.analyzer.scan import analyze_bytes
from msready.rules.api_mapping import planned_calls
from msready.skeletons.layers import CallIn, Rewrite, call_args, engine_method, translate_call

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def fix_text(call: str) -> str:
    """The rewrite the MS1xx rules plan for ``call`` (the code of its ``Fix:``)."""
    source = HEADER + f"def f(x, w, c, m, t, a, p, dim, drop):\n    return {call}\n"
    repo = RepositoryModel([analyze_bytes("m.py", source.encode())], "cpu")
    plans = [plan for _, _, plan in planned_calls(repo)]
    assert len(plans) == 1, (call, plans)
    return plans[0].rewrite


def cell_rewrite(call: str) -> Rewrite:
    """The Cell translator's rewrite of ``call`` (a ``torch.``-qualified call)."""
    node = cst.parse_expression(call)
    assert isinstance(node, cst.Call)
    name = cst.Module([]).code_for_node(node.func)
    args = [(a.keyword.value if a.keyword else None, a.value) for a in node.args]
    return translate_call(CallIn(name, args, "cpu"))


def cell_text(call: str) -> str:
    """The MindSpore call a Cell writes for ``call``."""
    rewrite = cell_rewrite(call)
    assert rewrite.func is not None, rewrite.todos
    args = cst.Call(cst.Name("f"), call_args(rewrite.args))
    return f"{rewrite.func}({cst.Module([]).code_for_node(args)[2:-1]})"


SAME = [
    # BatchNorm: MindSpore's momentum weighs the running value, 1 - torch's
    ("torch.nn.BatchNorm2d(64, momentum=0.01)", "nn.BatchNorm2d(64, momentum=0.99)"),
    ("torch.nn.BatchNorm2d(c, momentum=m)", "nn.BatchNorm2d(c, momentum=1 - (m))"),
    ("torch.nn.BatchNorm2d(64, 1e-3, 0.01)", "nn.BatchNorm2d(64, 0.001, momentum=0.99)"),
    ("torch.nn.BatchNorm1d(c, track_running_stats=False)",
     "nn.BatchNorm1d(c, use_batch_statistics=True)"),
    ("torch.nn.BatchNorm1d(c, track_running_stats=t)",
     "nn.BatchNorm1d(c, use_batch_statistics=not (t))"),
    # Dropout: MindSpore's first positional parameter is keep_prob, so p goes by name
    ("torch.nn.Dropout(0.1)", "nn.Dropout(p=0.1)"),
    ("torch.nn.Dropout(drop, inplace=True)", "nn.Dropout(p=drop)"),
    # LayerNorm: a tuple shape, epsilon written out (MindSpore's default is 1e-7)
    ("torch.nn.LayerNorm(512)", "nn.LayerNorm((512,), epsilon=1e-05)"),
    ("torch.nn.LayerNorm(512, eps=1e-6)", "nn.LayerNorm((512,), epsilon=1e-06)"),
    # GELU: torch is exact unless told; MindSpore's approximate is a bool defaulting to tanh
    ("torch.nn.GELU()", "nn.GELU(approximate=False)"),
    ("torch.nn.GELU(approximate='tanh')", "nn.GELU(approximate=True)"),
    ("torch.nn.GELU(approximate=a)", "nn.GELU(approximate=(a) == 'tanh')"),
    # Conv: padding needs pad_mode='pad'; torch pads 0 by default ('valid'); bias by default
    ("torch.nn.Conv2d(3, 64, 3)", "nn.Conv2d(3, 64, 3, pad_mode='valid', has_bias=True)"),
    ("torch.nn.Conv2d(3, 64, 3, 1, 1)",
     "nn.Conv2d(3, 64, 3, 1, padding=1, pad_mode='pad', has_bias=True)"),
    ("torch.nn.Conv2d(3, 64, (3, 5), padding=(1, 2))",
     "nn.Conv2d(3, 64, (3, 5), padding=(1, 1, 2, 2), pad_mode='pad', has_bias=True)"),
    ("torch.nn.Conv2d(c, 8, 3, padding='same', groups=c, bias=False)",
     "nn.Conv2d(c, 8, 3, group=c, has_bias=False, pad_mode='same')"),
    ("torch.nn.Conv2d(3, 64, 1)", "nn.Conv2d(3, 64, 1, has_bias=True)"),  # 1x1: same = valid
    ("torch.nn.ConvTranspose2d(c, 8, 4, 2, 1)",
     "nn.Conv2dTranspose(c, 8, 4, 2, padding=1, pad_mode='pad', has_bias=True)"),
    # Pooling: stride defaults to the kernel; padding and ceil_mode need pad_mode='pad'
    ("torch.nn.MaxPool2d(2)", "nn.MaxPool2d(2, stride=2)"),
    ("torch.nn.MaxPool2d(3, 2, 1)", "nn.MaxPool2d(3, 2, padding=1, pad_mode='pad')"),
    ("torch.nn.AvgPool2d(2, ceil_mode=True)",
     "nn.AvgPool2d(2, ceil_mode=True, pad_mode='pad', stride=2)"),
    # the 1-D and 3-D poolings refuse a padding as well unless pad_mode='pad'; with it they
    # take torch's one amount per axis
    ("torch.nn.MaxPool3d(3, 2, 1)", "nn.MaxPool3d(3, 2, padding=1, pad_mode='pad')"),
    ("torch.nn.MaxPool3d(3, 2, (0, p, p))",
     "nn.MaxPool3d(3, 2, padding=(0, p, p), pad_mode='pad')"),
    ("torch.nn.MaxPool1d(3, 2, 1)", "nn.MaxPool1d(3, 2, padding=1, pad_mode='pad')"),
    ("torch.nn.AvgPool3d(3, 2, (0, 1, 1))",
     "nn.AvgPool3d(3, 2, padding=(0, 1, 1), pad_mode='pad')"),
    ("torch.nn.AvgPool1d(3, 2, 1)", "nn.AvgPool1d(3, 2, padding=1, pad_mode='pad')"),
    ("torch.nn.MaxPool3d(2)", "nn.MaxPool3d(2, stride=2)"),
    # renames from the API table, the same list on both sides
    ("torch.nn.Linear(10, 20, bias=False)", "nn.Dense(10, 20, has_bias=False)"),
    ("torch.nn.LSTM(10, 20, 2, bias=False)", "nn.LSTM(10, 20, 2, has_bias=False)"),
    # var / std: torch is unbiased by default (ddof=1); MindSpore's ddof defaults to 0
    ("torch.var(x, 1, unbiased=False)", "ops.var(x, 1, ddof=0)"),
    ("torch.var(x, dim=1, keepdim=True)", "ops.var(x, axis=1, keepdims=True, ddof=1)"),
    ("torch.std(x, 0, True)", "ops.std(x, 0, ddof=1)"),  # the legacy (dim, unbiased) form
    ("torch.std(x)", "ops.std(x, ddof=1)"),
    # creation: MindSpore takes one shape tuple, and gives integers for a float fill value
    ("torch.full((2, 3), 1.5)", "ops.full((2, 3), 1.5, dtype=mindspore.float32)"),
]


@pytest.mark.parametrize(("torch_call", "mindspore_call"), SAME)
def test_the_fix_and_the_cell_write_the_same_call(torch_call: str, mindspore_call: str) -> None:
    assert fix_text(torch_call) == mindspore_call
    assert cell_text(torch_call) == mindspore_call


@pytest.mark.parametrize(("torch_call", "mindspore_call"), [
    ("x.var(1, unbiased=False)", "x.var(1, ddof=0)"),
    ("x.std(dim=(2, 3), keepdim=True)", "x.std(axis=(2, 3), keepdims=True, ddof=1)"),
])
def test_tensor_methods_too(torch_call: str, mindspore_call: str) -> None:
    assert fix_text(torch_call) == mindspore_call
    node = cst.parse_expression(torch_call)
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    args = [(a.keyword.value if a.keyword else None, a.value) for a in node.args]
    cell = engine_method(node.func.attr.value, node.func.value, args, "cpu")
    assert cell is not None and cst.Module([]).code_for_node(cell) == mindspore_call


# Initialisers: the same initializer object on both sides; the Fix is written after
# ``from mindspore.common.initializer import *``, the Cell qualifies the names, and a tensor
# held in a plain name is written in place by the Cell's torch_assign_.
INITS = [
    ("torch.nn.init.normal_(m.weight, std=0.02)", "Normal(sigma=0.02)"),
    ("torch.nn.init.normal_(m.weight)", "Normal(sigma=1.0)"),  # torch's std=1, not 0.01
    ("torch.nn.init.trunc_normal_(m.weight, std=0.02)", "TruncatedNormal(sigma=0.02)"),
    ("torch.nn.init.kaiming_normal_(m.weight, a=0.2, mode='fan_out')",
     "HeNormal(negative_slope=0.2, mode='fan_out')"),
    ("torch.nn.init.xavier_uniform_(m.weight.data)", "XavierUniform()"),
    ("torch.nn.init.constant_(m.bias, 0)", "Constant(value=0)"),
    ("torch.nn.init.zeros_(m.bias)", "Zero()"),
    ("torch.nn.init.uniform_(m.bias, -0.1, 0.1)", "Uniform(scale=0.1)"),
]


@pytest.mark.parametrize(("torch_call", "init"), INITS)
def test_initialisers_are_the_same_object(torch_call: str, init: str) -> None:
    tensor = "m.bias" if "bias" in torch_call else "m.weight"  # ``.data`` fills the tensor
    fix = f"{tensor}.set_data(initializer({init}, {tensor}.shape, {tensor}.dtype))"
    assert fix_text(torch_call) == fix
    qualified = "mindspore.common.initializer."
    assert cell_text(torch_call) == (
        f"{tensor}.set_data({qualified}initializer({qualified}{init}, {tensor}.shape, "
        f"{tensor}.dtype))")


# What only the running program knows: the Fix says it in words (printed as advice, not
# code), the Cell passes it through its adapters so that it runs.
CELL_ONLY = [
    ("torch.nn.LayerNorm(dim)", "nn.LayerNorm(dim, epsilon=1e-05)",
     "nn.LayerNorm(tuple(dim) if isinstance(dim, (list, tuple)) else (dim,), epsilon=1e-05)"),
    ("torch.nn.Conv2d(c, 8, 3, padding=p)",
     "nn.Conv2d(c, 8, 3, padding=p, pad_mode='pad', has_bias=True)",
     "nn.Conv2d(c, 8, 3, padding=torch_padding(p), pad_mode='pad', has_bias=True)"),
    ("torch.nn.init.normal_(w, std=0.02)",
     "w.set_data(initializer(Normal(sigma=0.02), w.shape, w.dtype))",
     "torch_assign_(w, mindspore.common.initializer.initializer("
     "mindspore.common.initializer.Normal(sigma=0.02), w.shape, w.dtype).init_data())"),
    ("torch.nn.init.uniform_(w, 0, 1)",
     "w.set_data(initializer(Uniform(scale=(1 - 0) / 2), w.shape, w.dtype).init_data() "
     "+ (0 + 1) / 2)",
     "torch_uniform_(w, a=0, b=1)"),
]


@pytest.mark.parametrize(("torch_call", "fix", "cell"), CELL_ONLY)
def test_the_cell_runs_what_the_fix_says_in_words(torch_call: str, fix: str, cell: str) -> None:
    assert fix_text(torch_call) == fix
    assert cell_text(torch_call) == cell


def test_what_the_engine_cannot_carry_over_is_a_todo_in_the_cell() -> None:
    rewrite = cell_rewrite("torch.nn.BatchNorm2d(c, momentum=None)")
    assert cell_text("torch.nn.BatchNorm2d(c, momentum=None)") == "nn.BatchNorm2d(c)"
    assert fix_text("torch.nn.BatchNorm2d(c, momentum=None)") == "nn.BatchNorm2d(c)"
    assert rewrite.todos == [("MS100", "torch.nn.BatchNorm2d: momentum=None (cumulative "
                              "average) has no MindSpore counterpart.")]
    rewrite = cell_rewrite("torch.nn.Conv1d(4, 4, 3, padding=2, padding_mode='reflect')")
    assert [t for _, t in rewrite.todos] == [
        "torch.nn.Conv1d: MindSpore has no `padding_mode`; drop it or re-implement its effect."]


# ----- must not -------------------------------------------------------------------------

@pytest.mark.parametrize("torch_call", [
    "torch.nn.Dropout(0.1)",  # nn.Dropout(0.1) would keep 10 %
    "torch.nn.Dropout(drop)",
])
def test_dropout_is_never_passed_by_position(torch_call: str) -> None:
    for text in (fix_text(torch_call), cell_text(torch_call)):
        assert "(p=" in text, text


@pytest.mark.parametrize("torch_call", [
    "torch.nn.BatchNorm2d(c, momentum=m)", "torch.nn.BatchNorm2d(c, momentum=0.1 if t else m)",
])
def test_momentum_is_never_copied_unchanged(torch_call: str) -> None:
    for text in (fix_text(torch_call), cell_text(torch_call)):
        assert "momentum=1 - (" in text, text  # the whole expression, in parentheses


def test_a_variable_gelu_mode_is_not_guessed() -> None:
    assert "approximate=True" not in cell_text("torch.nn.GELU(approximate=a)")


def test_a_variable_track_running_stats_is_not_guessed() -> None:
    assert "use_batch_statistics=True" not in cell_text(
        "torch.nn.BatchNorm1d(c, track_running_stats=t)")


def test_the_legacy_unbiased_flag_is_not_passed_twice() -> None:
    for text in (fix_text("torch.var(x, 1, False)"), cell_text("torch.var(x, 1, False)")):
        assert text == "ops.var(x, 1, ddof=0)"
    # (the MS1xx rules leave ``x.var(1, False)`` alone: two positional arguments are not
    # torch's documented method signature, so the receiver may be no tensor)
    cell = engine_method("var", cst.Name("x"), [(None, cst.Integer("1")),
                                               (None, cst.Name("False"))], "cpu")
    assert cell is not None and cst.Module([]).code_for_node(cell) == "x.var(1, ddof=0)"
