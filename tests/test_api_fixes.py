"""A ``Fix:`` is code only when it ran: the MS1xx rewrites against MindSpore.

``analyzer/data/fix_proofs.json`` records, per torch API, backend and call pattern, what
running msready's rewrite on generated inputs gave (``tools/fix_forms.py``). The rules print
a rewrite as code only for a pattern that ran and equalled torch; the others are advice in
words that say what was tried. Here every fix printed as code for the bundled example and
for the torch snippets of the test suite runs again in a child process.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from msready.analyzer.scan import ScanOptions, scan, scan_files

ROOT = Path(__file__).resolve().parent.parent
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _tool(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=1)
def checker() -> ModuleType:
    """tools/check_fixes.py, loaded as a module."""
    return _tool("check_fixes")


def _snippet_folder(tmp: Path) -> Path:
    """The torch snippets of the test suite and of the rules' examples, one file each."""
    forms = checker().fix_forms
    for i, (_name, text) in enumerate(
            [s for folder in (ROOT / "tests", ROOT / "rules") for s in forms.snippets(folder)
             if "#" in s[0]]):
        (tmp / f"snippet_{i}.py").write_text(HEADER + text, encoding="utf-8")
    return tmp


def fixes(rule: str) -> set[str]:
    """The suggestions of one rule for a scan of the bundled example."""
    result = scan(str(ROOT / "examples" / "tinynet"),
                  options=ScanOptions(jobs=1, cache=False, target="cpu"))
    return {f.suggestion for f in result.findings if f.rule == rule}


def test_every_fix_printed_as_code_runs_on_mindspore(tmp_path: Path) -> None:
    printed = checker().printed_fixes(ROOT / "examples" / "tinynet")
    printed += checker().printed_fixes(_snippet_folder(tmp_path))
    code = [f for f in printed if f.code]
    assert len(code) >= 30  # the snippets exercise many rewrites
    checker().check(code)
    assert [(f.where, f.text, f.error) for f in code if f.status != "pass"] == []


def test_the_checker_reads_the_fixes_the_scan_prints() -> None:
    shown = fixes("MS102") | fixes("MS103") | fixes("MS104")
    assert shown and shown <= {f.text for f in checker().printed_fixes(
        ROOT / "examples" / "tinynet")}


def _suggestion(body: str) -> str:
    found = [f for f in scan_files({"m.py": HEADER + body}).findings
             if f.rule in ("MS102", "MS103", "MS104")]
    assert found, body
    return found[0].suggestion


def test_layer_norm_with_an_int_variable_is_advice_in_words() -> None:
    text = _suggestion("def block(dim):\n    return nn.LayerNorm(dim)\n")
    assert not checker().is_code(text)
    assert "nn.LayerNorm" in text and "ran" in text and "fails" in text


def test_gelu_approximate_becomes_a_bool() -> None:
    assert _suggestion("act = nn.GELU(approximate='none')\n") == "nn.GELU(approximate=False)"
    assert _suggestion("act = nn.GELU()\n") == "nn.GELU(approximate=False)"


def test_functional_average_pooling_pads_both_sides_of_each_axis() -> None:
    # ops.avg_pool2d takes an int or (top, bottom, left, right); torch's (ph, pw) pads
    # each axis on both sides
    text = _suggestion("def pool(x: torch.Tensor):\n"
                       "    return F.avg_pool2d(x, (3, 5), 2, padding=(1, 2))\n")
    assert text == "ops.avg_pool2d(x, (3, 5), 2, padding=(1, 1, 2, 2))"
    # a name may hold one amount per axis: said; an amount computed from a number is one
    # (``k // 2``) and MindSpore takes it as it is
    held = scan_files({"m.py": HEADER + "def pool(x: torch.Tensor, pad):\n"
                       "    return F.avg_pool2d(x, 3, 2, padding=pad)\n"}).findings
    assert [f.location.line for f in held if "both sides of each axis" in f.message] == [5]
    computed = scan_files({"m.py": HEADER + "def pool(x: torch.Tensor, k: int):\n"
                           "    return F.avg_pool2d(x, k, 1, padding=k // 2)\n"}).findings
    assert [f for f in computed if "both sides of each axis" in f.message] == []


def test_sizes_written_as_lists_are_tuples() -> None:
    # torch takes any sequence of sizes; MindSpore's layers an int or a tuple
    assert _suggestion("conv = nn.Conv2d(4, 8, kernel_size=[3, 1], padding=[1, 0])\n") == \
        "nn.Conv2d(4, 8, kernel_size=(3, 1), padding=(1, 1, 0, 0), pad_mode='pad', " \
        "has_bias=True)"
    assert _suggestion("pool = nn.MaxPool2d([2, 1])\n") == \
        "nn.MaxPool2d((2, 1), stride=(2, 1))"


def test_a_form_that_fails_in_graph_mode_is_not_code() -> None:
    text = _suggestion("def peak(x: torch.Tensor):\n    return x.max(1)[1]\n")
    assert not checker().is_code(text) and "GRAPH_MODE" in text


def test_words_are_not_taken_for_code() -> None:
    is_code = checker().is_code
    assert is_code("nn.Dense(4, 8, has_bias=False)")
    assert is_code("grads = ops.clip_by_global_norm(grads, 1.0)")
    assert not is_code("equivalent: math.pi")
    assert not is_code("Not given as code: msready ran `nn.LayerNorm(v0)` ...")


def test_stored_proofs_are_the_rewrites_msready_prints_now() -> None:
    assert _tool("fix_forms").stale() == []


def test_a_stored_proof_runs_again_with_the_same_outcome() -> None:
    forms = _tool("fix_forms")
    rows = forms.load(forms.PROOF_FILE, "proofs")["proofs"]
    sample = [r for r in rows if r["api"] in ("torch.nn.Conv2d", "torch.nn.LayerNorm",
                                               "torch.Tensor.max")][:6]
    assert sample
    jobs = [{"id": str(i), "api": r["api"], "torch_call": r["torch_call"],
             "rewrite": r["rewrite"], "vars": r["vars"], "shapes": forms.shapes_for(r["api"]),
             "tensors": ["x", *[v for v, s in r["vars"].items()
                                if s in (forms.TENSOR, forms.INDEX, forms.PARAM)]]}
            for i, r in enumerate(sample)]
    again = forms.run_jobs(jobs, time_limit=300)
    assert [(r["pynative"], r["graph"]) for r in sample] == [
        (again[str(i)]["pynative"], again[str(i)]["graph"]) for i in range(len(sample))]


def test_the_table_data_is_regenerated_unchanged() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_api_table.py"),
                           "--check"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
