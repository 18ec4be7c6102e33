"""The call forms measured by ``tools/api_probe.py`` and how the table uses them.

``analyzer/data/api_probe.json`` holds, per probed torch API, how each call form fares when
the same call of its MindSpore cpu target runs on CPU (PyNative and GRAPH_MODE) and the
rewrite that matched torch. A sample of probes is run again here against the installed
MindSpore and must agree with the stored data; the rest checks the merge into the table.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from msready.analyzer.apitable import load_table

ROOT = Path(__file__).resolve().parent.parent
# one API per kind of measured difference: sizes as a tuple, dim= as axis=, a Tensor method
# that fails in GRAPH_MODE only (transpose, split), a float fill giving integers, a layer
# returning fewer values, and one that matches torch as written
SAMPLE = ("torch.zeros", "torch.log_softmax", "torch.Tensor.transpose", "torch.Tensor.split",
          "torch.full", "torch.nn.MultiheadAttention", "torch.nn.functional.relu")


@lru_cache(maxsize=1)
def probe() -> ModuleType:
    """tools/api_probe.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location("api_probe", ROOT / "tools" / "api_probe.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("api_probe", module)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=1)
def stored() -> dict[str, Any]:
    data: dict[str, Any] = probe().load_probe()
    return data


def _outcome(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(f["torch_call"], f.get("mindspore_call"), f["pynative"], f["graph"],
             (f.get("fix") or {}).get("call")) for f in record["forms"]]


@lru_cache(maxsize=1)
def rerun() -> dict[str, dict[str, Any]]:
    """The sample probed again (two children at a time)."""
    apis = stored()["apis"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda name: probe().probe_api(name, apis[name]["target"],
                                                          time_limit=50), SAMPLE)
        return dict(zip(SAMPLE, results, strict=True))


@pytest.mark.parametrize("api", SAMPLE)
def test_stored_measurements_agree_with_the_installed_mindspore(api: str) -> None:
    again = rerun()[api]
    assert "error" not in again, again
    assert _outcome(again) == _outcome(stored()["apis"][api])


def test_the_probe_file_was_measured_with_the_installed_mindspore() -> None:
    import mindspore

    assert stored()["mindspore_version"] == mindspore.__version__
    assert load_table().mindspore_version == mindspore.__version__


def test_every_probed_api_has_its_forms_recorded() -> None:
    apis = stored()["apis"]
    fallbacks = stored().get("cpu_fallbacks", {})
    unprobed = [a for a in probe().CASES if a not in apis]
    table = load_table()
    for api in unprobed:  # APIs without a documented cpu target: their other target on CPU
        entry = table.lookup(api)
        assert api in fallbacks, api
        assert entry is None or entry.target("cpu").api == probe().cpu_fallback(api), api
    assert len(apis) >= 55
    assert not [a for a, r in apis.items() if r.get("error")]
    for api, record in apis.items():
        assert len(record["forms"]) == len(probe().CASES[api]), api


def test_measured_facts_the_table_must_know() -> None:
    apis = stored()["apis"]
    zeros = apis["torch.zeros"]["forms"]
    assert (zeros[0]["pynative"], zeros[0]["fix"]["call"]) == ("fail", "ops.zeros((2, 3))")
    assert zeros[1]["pynative"] == zeros[1]["graph"] == "pass"
    log_softmax = {f["torch_call"]: f for f in apis["torch.log_softmax"]["forms"]}
    assert log_softmax["torch.log_softmax(x, dim=1)"]["fix"]["renames"] == {"dim": "axis"}
    assert log_softmax["torch.log_softmax(x, 1)"]["pynative"] == "pass"
    transpose = apis["torch.Tensor.transpose"]["forms"][0]
    assert (transpose["pynative"], transpose["graph"]) == ("pass", "fail")
    assert transpose["fix"]["api"] == "mindspore.Tensor.swapaxes"


def test_packed_sizes_only_for_two_or_more_leading_integers() -> None:
    call = ast.parse("F(2, 3, dtype=d)", mode="eval").body
    assert isinstance(call, ast.Call)
    packed = probe().packed_sizes(call)
    assert packed is not None and ast.unparse(packed) == "F((2, 3), dtype=d)"
    one = ast.parse("F(2)", mode="eval").body
    assert isinstance(one, ast.Call) and probe().packed_sizes(one) is None
    tupled = ast.parse("F((2, 3))", mode="eval").body
    assert isinstance(tupled, ast.Call) and probe().packed_sizes(tupled) is None


def test_variants_try_the_form_first_then_renames_then_other_targets() -> None:
    tried = probe().variants("x.F(2, dim=2)", "mindspore.Tensor.split", ("mindspore.ops.split",))
    assert [(k, text) for k, _api, text, _r in tried] == [
        ("same", "x.split(2, dim=2)"), ("renamed", "x.split(2, axis=2)"),
        ("dtype", "x.split(2, dim=2, dtype=mindspore.float32)"),
        ("target", "ops.split(x, 2, dim=2)"), ("target", "ops.split(x, 2, axis=2)")]


def test_a_layer_form_builds_the_layer_then_calls_it() -> None:
    call, shape_only = probe().parse_form("~F(8, 2)(q, q, q)")
    assert shape_only and probe().is_layer_form(call)
    assert probe().call_text(call, "mindspore.nn.MultiheadAttention") == \
        "nn.MultiheadAttention(8, 2)(q, q, q)"
    method, _ = probe().parse_form("x.F(1, 2)")
    assert probe().call_text(method, "mindspore.ops.swapaxes") == "ops.swapaxes(x, 1, 2)"


def test_merge_turns_a_measured_form_into_a_difference_with_its_note() -> None:
    record = {"target": "mindspore.ops.zeros", "forms": [{
        "torch_call": "torch.zeros(2, 3)", "mindspore_call": "ops.zeros(2, 3)",
        "pynative": "fail", "graph": "skipped", "error": "TypeError: dtype",
        "fix": {"kind": "size-tuple", "api": "mindspore.ops.zeros",
                "call": "ops.zeros((2, 3))", "renames": {}}}]}
    targets = {"ascend": "mindspore.mint.zeros", "gpu": "mindspore.ops.zeros",
               "cpu": "mindspore.ops.zeros"}
    merged = probe().merge({}, record, targets, "MindSpore 9.9")
    (param,) = merged["params"]
    assert (param["kind"], param["torch"], param["backends"]) == ("semantics", "size",
                                                                  ["gpu", "cpu"])
    assert merged["notes"].startswith("Measured on CPU with MindSpore 9.9: for "
                                      "`torch.zeros(2, 3)`")


def test_merge_of_a_graph_mode_failure_swaps_the_cpu_target_only() -> None:
    record = {"target": "mindspore.Tensor.transpose", "forms": [{
        "torch_call": "x.transpose(1, 2)", "mindspore_call": "x.transpose(1, 2)",
        "pynative": "pass", "graph": "fail", "error": "ValueError: axes",
        "fix": {"kind": "target", "api": "mindspore.Tensor.swapaxes",
                "call": "x.swapaxes(1, 2)", "renames": {}}}]}
    targets = dict.fromkeys(("ascend", "gpu", "cpu"), "mindspore.Tensor.transpose")
    merged = probe().merge({"targets": {"gpu": "mindspore.Tensor.swapaxes"}}, record, targets,
                           "MindSpore 9.9")
    assert merged["targets"] == {"gpu": "mindspore.Tensor.swapaxes",
                                 "cpu": "mindspore.Tensor.swapaxes"}
    assert merged["usage_backends"] == ["cpu"]


def test_a_form_without_fix_flags_the_keyword_it_rejects() -> None:
    record = {"target": "mindspore.ops.one_hot", "forms": [{
        "torch_call": "F.one_hot(labels, num_classes=3)",
        "mindspore_call": "ops.one_hot(labels, num_classes=3)", "pynative": "fail",
        "graph": "skipped",
        "error": "TypeError: one_hot() got an unexpected keyword argument 'num_classes'"}]}
    targets = dict.fromkeys(("ascend", "gpu", "cpu"), "mindspore.ops.one_hot")
    merged = probe().merge({}, record, targets, "MindSpore 9.9")
    assert [(p["kind"], p["torch"]) for p in merged["params"]] == [("semantics", "num_classes")]
    assert "usage_backends" not in merged


def test_table_entries_carry_the_measurements() -> None:
    table = load_table()
    zeros = table.lookup("torch.zeros")
    assert zeros is not None and zeros.status_for("cpu") == "differs"
    assert [(p.kind, p.torch) for p in zeros.params_for("cpu")] == [("semantics", "size")]
    assert f"MindSpore {table.mindspore_version}" in zeros.notes
    log_softmax = table.lookup("torch.log_softmax")
    assert log_softmax is not None
    assert [(p.kind, p.torch, p.mindspore) for p in log_softmax.params_for("cpu")] == [
        ("renamed", "dim", "axis")]
    transpose = table.lookup("torch.Tensor.transpose")
    assert transpose is not None
    assert transpose.target("cpu").api == "mindspore.Tensor.swapaxes"
    assert transpose.target("ascend").api == "mindspore.Tensor.transpose"
    relu = table.lookup("torch.nn.functional.relu")
    assert relu is not None and relu.status_for("cpu") == "consistent"


def test_a_form_without_fix_or_keyword_is_kept_with_its_shape() -> None:
    record = {"target": "mindspore.ops.flatten", "forms": [{
        "torch_call": "torch.flatten(x)", "mindspore_call": "ops.flatten(x)",
        "pynative": "differs", "graph": "skipped", "error": "shape (2, 12), torch gives (24,)"}]}
    targets = dict.fromkeys(("ascend", "gpu", "cpu"), "mindspore.ops.flatten")
    merged = probe().merge({}, record, targets, "MindSpore 9.9")
    (form,) = merged["measured_forms"]
    assert (form["positional"], form["keywords"]) == (1, [])
    assert "usage_backends" not in merged and merged.get("params") == []
    flatten = load_table().lookup("torch.flatten")
    assert flatten is not None and flatten.status_for("cpu") == "differs"
    assert [(f.positional, f.keywords) for f in flatten.forms_for("cpu")] == [(1, ()), (2, ())]


def test_call_shape_leaves_the_receiver_and_layers_out() -> None:
    assert probe().call_shape("x.split(2, dim=2)") == (1, ["dim"])
    assert probe().call_shape("torch.nn.MultiheadAttention(8, 2)(q, q, q)") is None


def test_a_target_documented_without_cpu_is_measured_on_cpu() -> None:
    # ops.conv2d documents Ascend and GPU only, yet runs on CPU and equals torch there
    assert probe().cpu_fallback("torch.nn.functional.conv2d") == "mindspore.ops.conv2d"
    conv = load_table().lookup("torch.nn.functional.conv2d")
    assert conv is not None and conv.target("cpu").api == "mindspore.ops.conv2d"
    assert "CPU" in conv.target("cpu").platforms
    # a form that fails is kept as a measured difference, not as a missing platform
    assert [(f.positional, f.keywords) for f in conv.forms_for("cpu")] == [(2, ("padding",))]
