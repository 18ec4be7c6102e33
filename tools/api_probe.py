"""Measure, by execution on CPU, how the most used torch calls translate to their MindSpore
targets.

Each probed torch API has a few call forms real code uses (positional sizes ``f(2, 3)``, a
size tuple ``f((2, 3))``, ``dim=`` by keyword, a positional dim, defaults). For every form
the torch call and the same call of the table's cpu target run on the same sample tensors;
the results are compared (shapes, and values within a tolerance). A target that can run
inside an ``nn.Cell`` is also run in GRAPH_MODE. A form that fails or differs is retried
with rewrites (torch keyword names as MindSpore names them, sizes packed in one tuple, an
explicit float32 dtype, another MindSpore API named in :data:`ALTERNATIVES`); the first
rewrite that matches torch in both modes is recorded as the fix.

Each API runs in a child process with a time limit. ``tools/build_api_table.py --probe``
rewrites ``analyzer/data/api_probe.json`` with :func:`probe_all`; without ``--probe`` it reuses
that file and merges it into the table.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBE_FILE = ROOT / "analyzer" / "data" / "api_probe.json"
TIME_LIMIT = 120.0  # seconds per API (one child process)

# torch API -> call forms; ``F`` stands for the API (``x.F(...)`` for a Tensor method). A
# form starting with ``~`` compares shapes only (random or uninitialised results). Sample
# names are those of :data:`SAMPLES`.
CASES: dict[str, tuple[str, ...]] = {
    "torch.zeros": ("F(2, 3)", "F((2, 3))"),
    "torch.ones": ("F(2, 3)", "F((2, 3))"),
    "torch.empty": ("~F(2, 3)", "~F((2, 3))"),
    "torch.full": ("F((2, 3), 1.5)", "F([2, 3], 1.5)"),
    "torch.rand": ("~F(2, 3)", "~F((2, 3))"),
    "torch.randn": ("~F(2, 3)", "~F((2, 3))"),
    "torch.arange": ("F(5)", "F(1, 7, 2)"),
    "torch.linspace": ("F(0, 1, 5)",),
    "torch.eye": ("F(3)", "F(2, 3)"),
    "torch.cat": ("F([x, y], dim=1)", "F([x, y], 1)", "F([x, y])"),
    "torch.stack": ("F([x, y], dim=1)", "F([x, y], 1)", "F([x, y])"),
    "torch.split": ("F(x, 2, dim=2)", "F(x, 2)"),
    "torch.Tensor.split": ("x.F(2, dim=2)", "x.F(2, 2)"),
    "torch.chunk": ("F(x, 2, dim=2)", "F(x, 2, 2)"),
    "torch.flatten": ("F(x)", "F(x, 1)", "F(x, start_dim=1)"),
    "torch.reshape": ("F(x, (6, 4))", "F(x, [6, 4])"),
    "torch.Tensor.reshape": ("x.F(6, 4)", "x.F((6, 4))"),
    "torch.squeeze": ("F(x1)", "F(x1, 1)", "F(x1, dim=1)"),
    "torch.unsqueeze": ("F(x, 1)", "F(x, dim=1)"),
    "torch.permute": ("F(x, (2, 0, 1))",),
    "torch.Tensor.permute": ("x.F(2, 0, 1)", "x.F((2, 0, 1))"),
    "torch.transpose": ("F(x, 1, 2)", "F(x, dim0=1, dim1=2)"),
    "torch.Tensor.transpose": ("x.F(1, 2)",),
    "torch.sum": ("F(x)", "F(x, 1)", "F(x, dim=1)", "F(x, dim=1, keepdim=True)"),
    "torch.mean": ("F(x)", "F(x, 1)", "F(x, dim=1)", "F(x, dim=1, keepdim=True)"),
    "torch.max": ("F(x)", "F(x, 1)", "F(x, dim=1)"),
    "torch.min": ("F(x)", "F(x, 1)", "F(x, dim=1)"),
    "torch.argmax": ("F(x)", "F(x, 1)", "F(x, dim=1)"),
    "torch.argmin": ("F(x)", "F(x, 1)", "F(x, dim=1)"),
    "torch.softmax": ("F(x, 1)", "F(x, dim=1)"),
    "torch.log_softmax": ("F(x, 1)", "F(x, dim=1)"),
    "torch.topk": ("F(x, 2)", "F(x, 2, dim=1)"),
    "torch.sort": ("F(x)", "F(x, dim=1)", "F(x, descending=True)"),
    "torch.gather": ("F(x, 2, idx)", "F(x, dim=2, index=idx)"),
    "torch.index_select": ("F(x, 1, i1)", "F(x, dim=1, index=i1)"),
    "torch.where": ("F(mask, x, y)",),
    "torch.clamp": ("F(x, 1.0, 3.0)", "F(x, min=1.0, max=3.0)", "F(x, min=1.0)"),
    "torch.einsum": ("F('bij,bjk->bik', x, bx)",),
    "torch.matmul": ("F(x, bx)", "F(a, b)"),
    "torch.bmm": ("F(x, bx)",),
    "torch.norm": ("F(x)", "F(x, dim=1)", "F(x, p=1, dim=1)"),
    "torch.cumsum": ("F(x, 1)", "F(x, dim=1)"),
    "torch.masked_fill": ("F(x, mask, 0.5)",),
    "torch.Tensor.masked_fill": ("x.F(mask, 0.5)",),
    "torch.Tensor.view": ("x.F(6, 4)", "x.F(-1, 4)", "x.F((6, 4))"),
    "torch.Tensor.sum": ("x.F()", "x.F(1)", "x.F(dim=1)", "x.F(dim=1, keepdim=True)"),
    "torch.Tensor.mean": ("x.F()", "x.F(1)", "x.F(dim=1)", "x.F(dim=1, keepdim=True)"),
    "torch.Tensor.max": ("x.F()", "x.F(1)", "x.F(dim=1)"),
    "torch.Tensor.argmax": ("x.F()", "x.F(1)", "x.F(dim=1)"),
    "torch.Tensor.softmax": ("x.F(1)", "x.F(dim=1)"),
    "torch.Tensor.flatten": ("x.F()", "x.F(1)", "x.F(start_dim=1)"),
    "torch.Tensor.squeeze": ("x1.F()", "x1.F(1)", "x1.F(dim=1)"),
    "torch.Tensor.unsqueeze": ("x.F(1)", "x.F(dim=1)"),
    "torch.Tensor.chunk": ("x.F(2, 2)", "x.F(2, dim=2)"),
    "torch.Tensor.cumsum": ("x.F(1)", "x.F(dim=1)"),
    "torch.Tensor.expand": ("x1.F(2, 3, 4)", "x1.F((2, 3, 4))"),
    "torch.nn.functional.relu": ("F(x)",),
    "torch.nn.functional.gelu": ("F(x)",),
    "torch.nn.functional.silu": ("F(x)",),
    "torch.nn.functional.softmax": ("F(x, 1)", "F(x, dim=1)"),
    "torch.nn.functional.log_softmax": ("F(x, 1)", "F(x, dim=1)"),
    "torch.nn.functional.cross_entropy": ("F(logits, labels)", "F(logits, labels, "
                                          "reduction='sum')"),
    "torch.nn.functional.mse_loss": ("F(x, y)", "F(x, y, reduction='sum')"),
    "torch.nn.functional.l1_loss": ("F(x, y)", "F(x, y, reduction='sum')"),
    "torch.nn.functional.normalize": ("F(x)", "F(x, dim=2)", "F(x, p=1.0, dim=2)"),
    "torch.nn.functional.pad": ("F(x, (1, 2))", "F(x, (1, 2), value=0.5)"),
    "torch.nn.functional.interpolate": ("F(img, scale_factor=2.0)", "F(img, size=(7, 7))"),
    "torch.nn.functional.dropout": ("F(x, 0.5, training=False)", "~F(x, p=0.5)"),
    "torch.nn.functional.one_hot": ("F(labels, 3)", "F(labels, num_classes=3)"),
    "torch.nn.functional.embedding": ("F(tok, emb)",),
    "torch.nn.functional.linear": ("F(a, lw)", "F(a, lw, lb)"),
    "torch.nn.functional.conv2d": ("F(img, w)", "F(img, w, padding=1)", "F(img, w, stride=2)"),
    "torch.nn.functional.max_pool2d": ("F(img, 2)", "F(img, kernel_size=3, stride=1)"),
    "torch.nn.functional.avg_pool2d": ("F(img, 2)", "F(img, kernel_size=3, stride=1)"),
    "torch.nn.functional.layer_norm": ("F(x, (4,))",),
    "torch.nn.functional.batch_norm": ("F(img, rm, rv)", "F(img, rm, rv, wt, bs)"),
    "torch.nn.MultiheadAttention": ("~F(8, 2, batch_first=True)(q, q, q)",
                                    "~F(8, 2, batch_first=True)(q, q, q, need_weights=False)"),
}

# Other MindSpore APIs tried (after renaming keywords) when the target fails or differs.
ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "torch.Tensor.split": ("mindspore.ops.split",),
    "torch.Tensor.transpose": ("mindspore.Tensor.swapaxes", "mindspore.ops.swapaxes"),
    "torch.transpose": ("mindspore.ops.swapaxes",),
}

# Sample inputs: name -> (numpy expression, dtype). Evaluated in the child with numpy as np.
SAMPLES: dict[str, str] = {
    "x": "(np.arange(24).reshape(2, 3, 4) % 7).astype(np.float32)",
    "y": "(np.arange(24).reshape(2, 3, 4) % 5 + 1).astype(np.float32)",
    "x1": "np.arange(8).reshape(2, 1, 4).astype(np.float32)",
    "a": "(np.arange(12).reshape(3, 4) % 5).astype(np.float32)",
    "b": "(np.arange(20).reshape(4, 5) % 3).astype(np.float32)",
    "bx": "(np.arange(40).reshape(2, 4, 5) % 4).astype(np.float32)",
    "idx": "(np.arange(24).reshape(2, 3, 4) % 3).astype(np.int64)",
    "i1": "np.array([2, 0], dtype=np.int64)",
    "mask": "np.arange(24).reshape(2, 3, 4) % 2 == 0",
    "logits": "(np.arange(12).reshape(4, 3) % 5 / 2).astype(np.float32)",
    "labels": "np.array([0, 2, 1, 2], dtype=np.int64)",
    "img": "(np.arange(50).reshape(1, 2, 5, 5) % 6).astype(np.float32)",
    "w": "(np.arange(54).reshape(3, 2, 3, 3) % 4 / 4).astype(np.float32)",
    "emb": "np.arange(20).reshape(5, 4).astype(np.float32)",
    "tok": "np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int64)",
    "lw": "(np.arange(20).reshape(5, 4) % 3).astype(np.float32)",
    "lb": "np.arange(5).astype(np.float32)",
    "rm": "np.array([0.5, 1.0], dtype=np.float32)",
    "rv": "np.array([2.0, 0.5], dtype=np.float32)",
    "wt": "np.array([1.5, 0.5], dtype=np.float32)",
    "bs": "np.array([0.1, -0.2], dtype=np.float32)",
    "q": "(np.arange(48).reshape(2, 3, 8) % 5 / 5).astype(np.float32)",
}


# ----- rendering one form for either framework -----------------------------------------

def parse_form(form: str) -> tuple[ast.Call, bool]:
    """The call of a form (``F`` as callee) and whether only shapes are compared."""
    shape_only = form.startswith("~")
    node = ast.parse(form.lstrip("~"), mode="eval").body
    assert isinstance(node, ast.Call)
    return node, shape_only


def is_method_form(call: ast.Call) -> bool:
    """True for ``x.F(...)``: a Tensor method call."""
    return isinstance(call.func, ast.Attribute)


def call_text(call: ast.Call, api: str, short: bool = True) -> str:
    """Source text of the form as a call of ``api`` (a Tensor method is written on the
    receiver; a function taking a method form's receiver first)."""
    name = api.removeprefix("mindspore.") if short else api
    if api.startswith(("torch.Tensor.", "mindspore.Tensor.")):
        method = api.rsplit(".", 1)[1]
        if is_method_form(call):
            assert isinstance(call.func, ast.Attribute)
            func: ast.expr = ast.Attribute(call.func.value, method, ast.Load())
            new = ast.Call(func, list(call.args), list(call.keywords))
        else:
            new = ast.Call(ast.Attribute(call.args[0], method, ast.Load()), list(call.args[1:]),
                           list(call.keywords))
    elif is_method_form(call):
        assert isinstance(call.func, ast.Attribute)
        new = ast.Call(ast.Name(name, ast.Load()), [call.func.value, *call.args],
                       list(call.keywords))
    else:  # F(...) or a layer built and called: F(...)(...)
        new = _Callee(name).visit(ast.parse(ast.unparse(call), mode="eval")).body
    return ast.unparse(new)


class _Callee(ast.NodeTransformer):
    """Replaces the placeholder ``F`` by an API name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def visit_Name(self, node: ast.Name) -> ast.expr:
        """``F`` -> the API name."""
        return ast.Name(self.name, ast.Load()) if node.id == "F" else node


def is_layer_form(call: ast.Call) -> bool:
    """True for ``F(...)(...)``: a layer built and called (run in PyNative only: a Cell
    is not built inside a GRAPH_MODE construct)."""
    return isinstance(call.func, ast.Call)


def renamed(call: ast.Call, renames: dict[str, str]) -> ast.Call:
    """The call with keywords renamed."""
    kws = [ast.keyword(renames.get(k.arg, k.arg) if k.arg else None, k.value)
           for k in call.keywords]
    return ast.Call(call.func, list(call.args), kws)


def packed_sizes(call: ast.Call) -> ast.Call | None:
    """The call with its leading positional integer sizes packed in one tuple (None when it
    has fewer than two)."""
    count = 0
    for arg in call.args:
        if isinstance(arg, ast.Constant) and type(arg.value) is int:
            count += 1
        else:
            break
    if count < 2:
        return None
    size = ast.Tuple(list(call.args[:count]), ast.Load())
    return ast.Call(call.func, [size, *call.args[count:]], list(call.keywords))


def synonyms() -> dict[str, list[str]]:
    """torch parameter name -> MindSpore names (overrides.toml's ``param_synonyms``)."""
    with (ROOT / "analyzer" / "data" / "overrides.toml").open("rb") as fh:
        data: dict[str, list[str]] = tomllib.load(fh).get("param_synonyms", {})
    return data


def variants(form: str, target: str, alternatives: tuple[str, ...]
             ) -> list[tuple[str, str, str, dict[str, str]]]:
    """(kind, api, MindSpore call text, renames) to try, the form as written first."""
    call, _ = parse_form(form)
    syn = synonyms()
    renames = {k.arg: syn[k.arg][0] for k in call.keywords if k.arg in syn}
    out = [("same", target, call_text(call, target), {})]
    if renames:
        out.append(("renamed", target, call_text(renamed(call, renames), target), renames))
    packed = packed_sizes(call)
    if packed is not None:
        out.append(("size-tuple", target, call_text(packed, target), {}))
    if not any(k.arg == "dtype" for k in call.keywords):  # the samples are float32
        typed = ast.Call(call.func, list(call.args), [*call.keywords, ast.keyword(
            "dtype", ast.parse("mindspore.float32", mode="eval").body)])
        out.append(("dtype", target, call_text(typed, target), {}))
    for alt in alternatives:
        out.append(("target", alt, call_text(call, alt), {}))
        if renames:
            out.append(("target", alt, call_text(renamed(call, renames), alt), renames))
    return out


# ----- the child process ------------------------------------------------------------------

_CHILD_HEAD = '''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import torch
import mindspore
from mindspore import nn, ops, mint, Tensor
mindspore.set_device("CPU")
SAMPLES = {samples}
NP = {{k: eval(v) for k, v in SAMPLES.items()}}
TS = {{k: torch.tensor(v) for k, v in NP.items()}}
MS = {{k: Tensor(v) for k, v in NP.items()}}
'''

_CHILD_BODY = '''
def arrays(value):
    items = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for item in items:
        if item is None:
            out.append(None)
        elif hasattr(item, "asnumpy"):
            out.append(np.asarray(item.asnumpy(), dtype=np.float64))
        elif hasattr(item, "numpy"):
            out.append(np.asarray(item.detach().numpy(), dtype=np.float64))
        elif isinstance(item, (int, float, bool)):
            out.append(np.asarray(item, dtype=np.float64))
        else:
            raise TypeError(f"result of type {type(item).__name__}")
    return out

def compare(ours, theirs, shape_only):
    if len(ours) != len(theirs):
        return f"returns {len(ours)} value(s) where torch returns {len(theirs)}"
    for a, b in zip(ours, theirs):
        if a is None or b is None:
            if (a is None) != (b is None):
                return "returns None where torch does not" if a is None else \
                    "returns a tensor where torch returns None"
            continue
        if a.shape != b.shape:
            return f"shape {a.shape}, torch gives {b.shape}"
        if not shape_only and not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
            return "values differ from torch"
    return None

def first_line(exc):
    text = [ln.strip() for ln in str(exc).splitlines() if any(c.isalpha() for c in ln)]
    text = [ln for ln in text if not ln.startswith("- ")] or text
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]

def run(mode, text, api, names):
    mindspore.set_context(mode=mode)
    if mode == mindspore.PYNATIVE_MODE:
        return eval(text, {**MS, **GLOBALS})
    return CELLS[text](*[MS[n] for n in names])

def status(mode, text, api, names, theirs, shape_only):
    try:
        ours = arrays(run(mode, text, api, names))
    except Exception as exc:
        return "fail", first_line(exc)
    why = compare(ours, theirs, shape_only)
    return ("pass", "") if why is None else ("differs", why)
'''


def _child_source(api: str, forms: list[dict[str, Any]]) -> str:
    """A script that probes one API's forms and prints the results as JSON."""
    lines = [_CHILD_HEAD.format(samples=repr(SAMPLES)), _CHILD_BODY,
             "GLOBALS = {'ops': ops, 'mint': mint, 'nn': nn, 'Tensor': Tensor, "
             "'mindspore': mindspore}"]
    cells: list[str] = []
    for fi, form in enumerate(forms):
        for vi, variant in enumerate(form["variants"]):
            args = ", ".join(variant["names"])
            cells.append(f"class Cell_{fi}_{vi}(nn.Cell):\n"
                         f"    def construct(self, {args}):\n"
                         f"        return {variant['call']}\n")
    lines += cells
    lines.append("CELLS = {" + ", ".join(
        f"{v['call']!r}: Cell_{fi}_{vi}()" for fi, form in enumerate(forms)
        for vi, v in enumerate(form["variants"])) + "}")
    lines.append(f"FORMS = {forms!r}")
    lines.append('''
results = []
for form in FORMS:
    try:
        theirs = arrays(eval(form["torch_call"], {**TS, "torch": torch, "F": torch.nn.functional}))
    except Exception as exc:
        results.append({"torch_error": first_line(exc)})
        continue
    rows = []
    for v in form["variants"]:
        py = status(mindspore.PYNATIVE_MODE, v["call"], v["api"], v["names"], theirs,
                    form["shape_only"])
        graph = status(mindspore.GRAPH_MODE, v["call"], v["api"], v["names"], theirs,
                       form["shape_only"]) if py[0] == "pass" and form["graph"] \
            else ("skipped", "")
        rows.append([py[0], py[1], graph[0], graph[1]])
    results.append({"rows": rows})
print("PROBE-RESULT " + json.dumps(results))
''')
    return "\n".join(lines)


def _names(text: str) -> list[str]:
    """The sample names a call text uses, in SAMPLES order."""
    used = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
    return [n for n in SAMPLES if n in used]


def _plan(api: str, target: str, forms: tuple[str, ...]) -> list[dict[str, Any]]:
    """The forms of one API with the MindSpore calls to try for each."""
    out = []
    for form in forms:
        call, shape_only = parse_form(form)
        tried = []
        for kind, alt, text, renames in variants(form, target, ALTERNATIVES.get(api, ())):
            tried.append({"kind": kind, "api": alt, "call": text, "renames": renames,
                          "names": _names(text)})
        out.append({"form": form, "torch_call": call_text(call, api, short=False),
                    "shape_only": shape_only, "graph": not is_layer_form(call),
                    "variants": tried})
    return out


def probe_api(api: str, target: str, forms: tuple[str, ...] | None = None,
              time_limit: float = TIME_LIMIT) -> dict[str, Any]:
    """Probe one torch API against its MindSpore cpu ``target`` in a child process."""
    plan = _plan(api, target, forms or CASES[api])
    results = _run(api, plan, time_limit)
    if isinstance(results, str):
        return {"target": target, "error": results, "forms": []}
    return {"target": target, "forms": [_summarise(p, r) for p, r in
                                        zip(plan, results, strict=True)]}


def compare_calls(pairs: list[tuple[str, str]], time_limit: float = TIME_LIMIT
                  ) -> list[tuple[str, str, str]]:
    """Run each (torch call, MindSpore call) pair on the samples in one child process:
    (PyNative status, GRAPH_MODE status, error) per pair; statuses as in the probe file."""
    plan = [{"form": t, "torch_call": t, "shape_only": False, "graph": True,
             "variants": [{"kind": "same", "api": "", "call": m, "renames": {},
                           "names": _names(m)}]} for t, m in pairs]
    results = _run("calls", plan, time_limit)
    if isinstance(results, str):
        return [("fail", "fail", results)] * len(pairs)
    out = []
    for result in results:
        if "torch_error" in result:
            out.append(("skipped", "skipped", result["torch_error"]))
            continue
        row = result["rows"][0]
        out.append((row[0], row[2], row[1] or row[3]))
    return out


def _run(api: str, plan: list[dict[str, Any]], time_limit: float
         ) -> list[dict[str, Any]] | str:
    """The child's results for a plan, or the reason it gave none."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "probe_case.py"  # GRAPH_MODE reads the Cells' source
        script.write_text(_child_source(api, plan), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, str(script)], capture_output=True,
                                  text=True, timeout=time_limit, cwd=tmp)
        except subprocess.TimeoutExpired:
            return f"timed out after {time_limit:.0f} s"
    marker = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE-RESULT ")]
    if not marker:
        return (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
    results: list[dict[str, Any]] = json.loads(marker[0][13:])
    return results


def _summarise(form: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """One form's record: how the call as written fares in each mode, and the fix."""
    out: dict[str, Any] = {"torch_call": _short_torch(form["torch_call"])}
    if "torch_error" in result:
        return {**out, "pynative": "skipped", "graph": "skipped",
                "error": "torch: " + result["torch_error"]}
    rows = result["rows"]
    same = rows[0]
    out |= {"mindspore_call": form["variants"][0]["call"], "pynative": same[0],
            "graph": same[2], "error": same[1] or same[3]}
    if same[0] == "pass" and same[2] == "pass":
        return out
    graph_ok = any(r[2] == "pass" for r in rows)
    for variant, row in zip(form["variants"][1:], rows[1:], strict=True):
        if row[0] == "pass" and (row[2] == "pass" or not graph_ok):
            out["fix"] = {"kind": variant["kind"], "api": variant["api"],
                          "call": variant["call"], "renames": variant["renames"],
                          "graph": row[2]}
            break
    return out


def _short_torch(text: str) -> str:
    return text.replace("torch.nn.functional.", "F.")


def probe_all(targets: dict[str, str | None], jobs: int = 2) -> dict[str, Any]:
    """Probe every API of :data:`CASES` against its cpu target (APIs without one are left
    out), ``jobs`` children at a time."""
    import mindspore
    import torch

    todo = [(api, targets[api]) for api in CASES if targets.get(api)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = dict(zip([a for a, _ in todo],
                        pool.map(lambda item: probe_api(item[0], str(item[1])), todo),
                        strict=True))
    return {"mindspore_version": mindspore.__version__,
            "torch_version": torch.__version__.split("+")[0],
            "generated_by": "tools/api_probe.py (run by tools/build_api_table.py --probe)",
            "apis": dict(sorted(done.items()))}


def probe_fallbacks(targets: dict[str, dict[str, str | None]], jobs: int = 2
                    ) -> dict[str, Any]:
    """For every API of :data:`CASES` whose documented platforms leave no cpu target, run
    its GPU (else Ascend) target on CPU with the same forms: the documentation's platform
    list is only a fallback for what this machine cannot run."""
    todo = [(api, t.get("gpu") or t.get("ascend")) for api, t in targets.items()
            if api in CASES and not t.get("cpu") and (t.get("gpu") or t.get("ascend"))]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(zip([a for a, _ in todo],
                        pool.map(lambda item: probe_api(item[0], str(item[1])), todo),
                        strict=True))


def cpu_fallback(api: str, data: dict[str, Any] | None = None) -> str | None:
    """The target measured to run on CPU and equal torch (in some probed form; the others
    become measured differences) although its documentation does not list CPU
    (``cpu_fallbacks`` of the probe file), or None."""
    record = (data or _stored()).get("cpu_fallbacks", {}).get(api)
    if not record or not record.get("forms"):
        return None
    ok = any(f.get("pynative") == "pass" and f.get("graph") in ("pass", "skipped")
             for f in record["forms"])
    return str(record["target"]) if ok else None


@lru_cache(maxsize=1)
def _stored() -> dict[str, Any]:
    return load_probe()


def load_probe(path: Path = PROBE_FILE) -> dict[str, Any]:
    """The stored probe results (empty when never measured)."""
    if not path.is_file():
        return {"apis": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def render_probe(data: dict[str, Any]) -> str:
    """The probe file's text: one API per line for readable diffs."""
    head = {k: v for k, v in data.items() if k != "apis"}
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "apis": {\n'
    text += ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                       for k, v in data["apis"].items())
    return text + "\n }\n}\n"


# ----- merging the measurements into the table --------------------------------------------

def call_shape(torch_call: str) -> tuple[int, list[str]] | None:
    """How many positional arguments and which keywords a recorded torch call passes (a
    Tensor method's receiver not counted); None for a layer built and called."""
    call = ast.parse(torch_call, mode="eval").body
    assert isinstance(call, ast.Call)
    if is_layer_form(call):
        return None
    return len(call.args), sorted(k.arg for k in call.keywords if k.arg)


def merge(override: dict[str, Any], record: dict[str, Any], targets: dict[str, str | None],
          version: str) -> dict[str, Any]:
    """An entry's override with what the probe measured: a form that fails or differs
    becomes a parameter difference (sizes as one tuple: semantics of ``size``; a keyword
    MindSpore names otherwise: renamed), a cpu target swap (another API matched torch), or
    a usage note; every one says it was measured, with the MindSpore version."""
    probed = record.get("target")
    same = [b for b in targets if targets[b] == probed]
    out = dict(override)
    params = list(out.get("params", []))
    notes: list[str] = []
    for form in record.get("forms", []):
        if form.get("pynative", "pass") == "pass" and form.get("graph", "pass") in (
                "pass", "skipped"):
            continue
        if form["pynative"] == "skipped":
            continue
        mode = "PyNative" if form["pynative"] != "pass" else "GRAPH_MODE"
        how = "fails" if (form["pynative"] if mode == "PyNative" else form["graph"]) == "fail" \
            else "differs from torch"
        said = f"`{form['mindspore_call']}` {how} in {mode} ({form['error']})"
        fix = form.get("fix")
        where = f"Measured on CPU with {version}"
        # a signature error holds for the same Python function everywhere; a kernel or
        # Tensor-overload failure only for what was measured, the cpu target
        scope = same if mode == "PyNative" and not str(probed).startswith(
            "mindspore.Tensor.") else ["cpu"]
        if fix is None:
            notes.append(f"{where}: for `{form['torch_call']}`, {said}.")
            unknown = re.search(r"unexpected keyword argument '(\w+)'", form["error"])
            if unknown:  # only calls passing that keyword are concerned
                params.append({"kind": "semantics", "torch": unknown.group(1),
                               "note": notes[-1], "backends": scope})
            elif (shape := call_shape(form["torch_call"])) is not None:
                positional, keywords = shape  # calls of the same shape are reported
                out.setdefault("measured_forms", []).append(
                    {"positional": positional, "keywords": keywords, "note": notes[-1],
                     "backends": scope})
            else:  # a layer whose call differs: its construction is reported
                out["usage_backends"] = sorted({*out.get("usage_backends", []), *scope})
            continue
        note = f"{where}: for `{form['torch_call']}`, {said}; `{fix['call']}` matches torch."
        notes.append(note)
        if fix["kind"] == "size-tuple":
            params.append({"kind": "semantics", "torch": "size", "note": note,
                           "backends": scope, "replaces": False})
        elif fix["kind"] == "renamed":
            params += [{"kind": "renamed", "torch": k, "mindspore": v, "note": note,
                        "backends": scope} for k, v in fix["renames"].items()]
            for backend in scope:  # the overload taking these keywords is the one that runs
                keywords = out.setdefault("measured_keywords", {}).setdefault(backend, [])
                keywords += [v for v in fix["renames"].values() if v not in keywords]
        elif fix["kind"] == "dtype":
            params.append({"kind": "semantics", "torch": "dtype", "note": note,
                           "backends": scope})
        elif fix["kind"] == "target":
            out["targets"] = {**out.get("targets", {}), "cpu": fix["api"]}
            out["usage_backends"] = sorted({*out.get("usage_backends", []), "cpu"})
    unique = list(dict.fromkeys(notes))
    if unique:
        out["notes"] = " ".join([out.get("notes", ""), *unique]).strip()
    unique_params = {json.dumps(p, sort_keys=True): p for p in params}
    out["params"] = list(unique_params.values())
    return out


if __name__ == "__main__":
    name, cpu_target = sys.argv[1], sys.argv[2]
    print(json.dumps(probe_api(name, cpu_target), indent=1))
