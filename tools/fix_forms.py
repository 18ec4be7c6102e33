"""Prove the MS1xx rewrites by running them: a ``Fix:`` is code only when it ran.

A rewrite (:func:`msready.analyzer.conversion.plan_call`) depends on the API, the backend and
the *pattern* of the call (:func:`msready.analyzer.apitable.call_pattern`: method or
function, the kinds of the positional arguments, the keywords and their kinds). For every
pattern the MS1xx rules meet in a set of sources (the bundled example, the snippets of the
test suite, any folder of repositories: :func:`collect`), this module writes a torch call
of that pattern on generated inputs (each non-literal argument becomes a variable holding a
sample chosen by the parameter it binds to, :func:`sample_for`), asks msready for its
rewrite, and runs both on CPU in a child process, in PyNative and GRAPH_MODE
(:func:`prove`). The result per (API, backend, pattern) is stored in
``analyzer/data/fix_proofs.json``; the rules print a rewrite as code only when its pattern
ran there and equalled torch (layers and random results: the output shape).

    python tools/fix_forms.py collect examples/tinynet tests [FOLDER ...]  # add patterns
    python tools/fix_forms.py prove      # run the new patterns and rewrites (--all: every one)
    python tools/fix_forms.py --check    # the stored rewrites are still msready's (fast)
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_probe  # (the sibling module: the child's comparison helpers)

from msready.analyzer.apitable import ApiEntry, call_pattern
from msready.analyzer.conversion import plan_call
from msready.analyzer.facts import CallSite
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.scan import analyze_bytes
from msready.rules.api_mapping import torch_calls

ROOT = Path(__file__).resolve().parent.parent
FORMS_FILE = ROOT / "analyzer" / "data" / "fix_forms.json"
PROOF_FILE = ROOT / "analyzer" / "data" / "fix_proofs.json"
BACKENDS = ("cpu", "gpu", "ascend")
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
TENSOR, INDEX, PARAM = "TENSOR", "INDEX", "PARAM"  # sample markers: float, integer, Parameter

# Samples for arguments that are not literals, by the torch parameter they bind to. Every
# size is 4 so that layers built from them accept the same inputs (channels, features and
# the last axis of the sample tensors).
PARAM_SAMPLES: dict[str, str] = {
    **{n: "4" for n in ("in_channels", "out_channels", "in_features", "out_features",
                        "num_features", "normalized_shape", "embedding_dim", "hidden_size",
                        "input_size", "num_channels", "d_model", "embed_dim", "in1_features",
                        "in2_features", "channels", "dim_feedforward", "size")},
    **{n: "2" for n in ("num_groups", "nhead", "num_heads", "k", "chunks", "split_size",
                        "split_size_or_sections", "sections", "repeats", "upscale_factor",
                        "downscale_factor", "scale_factor", "num_layers")},
    **{n: "1" for n in ("dim", "dim0", "axis", "start_dim", "stride", "padding", "dilation",
                        "groups", "diagonal", "offset", "shifts", "dims", "n")},
    "dim1": "2", "end_dim": "-1", "steps": "5", "start": "0.0", "kernel_size": "3",
    "num_embeddings": "6",
    "num_classes": "5", "output_size": "2", "p": "0.5", "eps": "1e-05", "momentum": "0.1",
    "negative_slope": "0.1", "alpha": "1.0", "beta": "1.0", "lambd": "0.5", "min": "0.5",
    "max": "3.0", "value": "0.5", "fill_value": "0.5", "exponent": "2.0", "dtype": "torch.float32",
    "bias": "True", "affine": "True", "batch_first": "True", "keepdim": "True",
    "mean": "0.0", "std": "1.0", "a": "0.0", "b": "1.0", "gain": "1.0", "val": "0.5",
    "img": TENSOR, "logits": TENSOR,
    "labels": INDEX,
    "input": TENSOR, "other": TENSOR, "x": TENSOR, "x1": TENSOR, "x2": TENSOR, "y": TENSOR,
    "target": TENSOR, "mat1": TENSOR, "mat2": TENSOR, "tensor1": TENSOR, "tensor2": TENSOR,
    "end": TENSOR, "weight": TENSOR, "mask": TENSOR, "src": TENSOR, "tensors": "[x, x]",
    "index": INDEX, "indices": INDEX, "tensor": TENSOR,
}


# Samples for arguments of a signature torch does not expose, by the argument's name.
NAME_SAMPLES: dict[str, str] = {"b": "2", "c": "3", "n": "4", "h": "4", "bs": "2",
                                "batch_size": "2", "channels": "4"}
# Samples for unpacked arguments (``torch.zeros(*shape)``), by the argument's name.
STAR_SAMPLES: dict[str, str] = {"shape": "(2, 3)", "size": "(2, 3)", "sizes": "(2, 3)",
                                "rest": "(3,)", "dims": "(1, 0)", "args": "(2, 3)"}


def sample_for(api: str, param: str) -> str | None:
    """The sample value (source text or a marker) for an argument bound to ``param``."""
    if api.startswith("torch.nn.init.") and param == "tensor":
        return PARAM
    return PARAM_SAMPLES.get(param.lstrip("*"))


def _bind(entry: ApiEntry, call: CallSite) -> list[str | None]:
    """The torch parameter each argument binds to (None when unknown)."""
    params = list(entry.torch_params)
    positional = [p for p in params[:params.index("*")] if not p.startswith("*")] \
        if "*" in params else [p for p in params if not p.startswith("*")]
    variadic = next((p for p in params if p.startswith("*") and p != "*"), None)
    if variadic is not None:
        positional = positional[:params.index(variadic)]
    out: list[str | None] = []
    index = 0
    for arg in call.args:
        if arg.keyword is not None:
            out.append(arg.keyword)
        elif index < len(positional):
            out.append(positional[index])
            index += 1
        else:
            out.append(variadic)
    return out


def synthesize(entry: ApiEntry, call: CallSite) -> dict[str, Any] | None:
    """A torch call of the same pattern on generated inputs: ``{"api", "pattern",
    "torch_call", "vars"}`` (variable -> sample), or None when an argument has no sample
    (unpacked arguments, or a parameter :data:`PARAM_SAMPLES` does not know)."""
    texts: list[str] = []
    variables: dict[str, str] = {}
    for arg, param in zip(call.args, _bind(entry, call), strict=True):
        if arg.star == "**":
            return None
        if arg.is_literal:
            value = repr(arg.literal)
        else:
            # the parameter's sample; for a signature torch does not expose, the sample
            # of a parameter named like the argument (``dim``, ``x``, ``in_channels``)
            sample = sample_for(entry.torch, param) if param else None
            if sample is None and arg.text.isidentifier():
                sample = STAR_SAMPLES.get(arg.text) if arg.star else NAME_SAMPLES.get(
                    arg.text, sample_for(entry.torch, arg.text))
            if sample is None or (arg.star and not sample.startswith(("(", "["))):
                return None
            value = f"v{len(variables)}"
            variables[value] = sample
            value = arg.star + value
        texts.append(f"{arg.keyword}={value}" if arg.keyword else value)
    method = entry.torch.startswith("torch.Tensor.")
    callee = f"x.{entry.torch.rsplit('.', 1)[1]}" if method else entry.torch
    return {"api": entry.torch, "pattern": call_pattern(call),
            "torch_call": f"{callee}({', '.join(texts)})", "vars": variables}


def _source(form: dict[str, Any]) -> str:
    """A module calling the form inside a function whose tensors are annotated."""
    tensors = [v for v, s in form["vars"].items() if s in (TENSOR, INDEX, PARAM)]
    params = ", ".join(["x: torch.Tensor"] + [f"{v}: torch.Tensor" for v in tensors]
                       + [v for v in form["vars"] if v not in tensors])
    return f"{HEADER}def f({params}):\n    return {form['torch_call']}\n"


def _model(files: dict[str, str], backend: str = "cpu") -> RepositoryModel:
    return RepositoryModel([analyze_bytes(rel, text.encode()) for rel, text in files.items()],
                           backend)


def rewrite_of(form: dict[str, Any], backend: str) -> str | None:
    """msready's rewrite of the form's torch call on ``backend`` (None: no finding)."""
    for rc, entry in torch_calls(_model({"form.py": _source(form)}, backend)):
        if entry.torch == form["api"] and call_pattern(rc.call) == form["pattern"]:
            plan = plan_call(rc.call, entry, backend, rc.file.bindings)
            return plan.rewrite if plan.issues else None
    return None


# ----- collecting the patterns the rules meet ---------------------------------------------

def snippets(path: Path) -> Iterator[tuple[str, str]]:
    """(name, source) of every Python file under ``path``, and of every string in a test
    module that is itself a torch snippet (the rules' examples and the tests' sources)."""
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield str(file), text
        if file.name.startswith("test_") or file.parent.name == "rules":
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for i, node in enumerate(ast.walk(tree)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and "\n" in node.value \
                        and any(k in node.value for k in ("torch", "nn.", "F.")):
                    yield f"{file}#{i}", node.value


def probe_sources() -> dict[str, str]:
    """The call forms ``tools/api_probe.py`` measures, as snippets on tensor parameters."""
    out = {}
    for api, forms in api_probe.CASES.items():
        for i, form in enumerate(forms):
            call, _ = api_probe.parse_form(form)
            text = api_probe.call_text(call, api, short=False)
            names = ", ".join(f"{n}: torch.Tensor" for n in api_probe._names(text))
            out[f"probe:{api}#{i}"] = f"def f({names}):\n    return {text}\n"
    return out


def collect(paths: list[Path], backend: str = "cpu") -> dict[str, dict[str, Any]]:
    """The patterns of every call the MS1xx rules rewrite in ``paths`` and in the probe's
    forms: key ``api pattern`` -> the synthesized form (the first call of each pattern)."""
    out: dict[str, dict[str, Any]] = {}
    for path in [None, *paths]:
        sources = probe_sources() if path is None else dict(snippets(path))
        for text in sources.values():
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            for rc, entry in torch_calls(_model({"snippet.py": HEADER + text}, backend)):
                key = f"{entry.torch} {call_pattern(rc.call)}"
                if key in out or not any(
                        entry.status_for(b) == "differs"
                        and plan_call(rc.call, entry, b, rc.file.bindings).issues
                        for b in BACKENDS):
                    continue
                form = synthesize(entry, rc.call)
                if form is not None:
                    out[key] = form
    return out


# ----- running the rewrites ------------------------------------------------------------

_CHILD = '''
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import torch
import torch.nn as tnn
import torch.nn.functional as F
import mindspore
from mindspore import nn, ops, mint, Tensor, Parameter
from mindspore.common.initializer import *
from mindspore.common.initializer import initializer
mindspore.set_device("CPU")
MS_NS = {k: getattr(mindspore, k) for k in dir(mindspore) if not k.startswith("_")}
MS_NS.update({k: v for k, v in globals().items() if k[:1].isupper()})
MS_NS.update(mindspore=mindspore, nn=nn, ops=ops, mint=mint, initializer=initializer)
T_NS = {"torch": torch, "nn": tnn, "F": F}
SHAPES = [(2, 3, 4), (2, 4), (2, 4, 6, 6), (4,), (2, 4, 6), (2, 4, 5, 5, 5)]
def inputs(layer):
    """Generated inputs for a layer: the channel count its attributes name."""
    c = next((getattr(layer, a) for a in ("in_channels", "in_features", "num_features",
              "embed_dim", "input_size", "num_channels", "embed_dim") if isinstance(
              getattr(layer, a, None), int) and not isinstance(getattr(layer, a), bool)), 4)
    shape = getattr(layer, "normalized_shape", None)
    tail = tuple(shape) if isinstance(shape, (tuple, list)) else ()
    return [(2, c), (2, c, 10), (2, c, 10, 10), (2, c, 6, 6, 6), (2, 3, c), (2, 3, *tail),
            "tokens"]
''' + api_probe._CHILD_BODY.split("def run(")[0] + '''

def array(shape, marker):
    data = (np.arange(int(np.prod(shape))).reshape(shape) % 7).astype(np.float32) / 2 + 0.5
    return (data % 2).astype(np.int64) if marker == "INDEX" else data

def envs(job, shape):
    t_env, m_env = dict(T_NS), dict(MS_NS)
    for name, marker in [("x", "TENSOR")] + list(job["vars"].items()):
        if marker in ("TENSOR", "INDEX", "PARAM"):
            data = array(shape, marker)
            t_env[name] = torch.tensor(data)
            m_env[name] = Parameter(Tensor(data), name=name) if marker == "PARAM" \\
                else Tensor(data)
    for name, marker in job["vars"].items():
        if marker not in ("TENSOR", "INDEX", "PARAM"):
            t_env[name] = eval(marker, t_env)
            m_env[name] = eval(marker.replace("torch.", "mindspore."), m_env)
    return t_env, m_env

def layer_input(layer):
    for shape in inputs(layer):
        data = np.array([[0, 3, 5], [1, 1, 2]], dtype=np.int64) if shape == "tokens" \\
            else array(shape, "TENSOR")
        for count in (1, 3):  # attention layers take (query, key, value)
            try:
                return data, count, layer(*[torch.tensor(data)] * count)
            except Exception:
                continue
    raise ValueError("no generated input fits the torch layer")

def one(job):
    last = None
    for shape in job.get("shapes") or SHAPES:
        try:
            t_env, m_env = envs(job, shape)
            theirs = eval(job["torch_call"], t_env)
            break
        except Exception as exc:
            last = exc
    else:
        return {"pynative": "skipped", "graph": "skipped",
                "error": "torch rejects the generated inputs: " + first_line(last)}
    cell = CELLS[job["id"]]
    if isinstance(theirs, torch.nn.Module):
        data, count, out = layer_input(theirs)
        theirs, shape_only, args = arrays(out), True, [Tensor(data)] * count
        cell = cell[1] if count == 1 else None
        def ours_py():
            return eval(job["rewrite"], m_env)(*[Tensor(data)] * count)
    else:
        again = arrays(eval(job["torch_call"], envs(job, shape)[0]))
        theirs = arrays(theirs)
        shape_only = compare(again, theirs, False) is not None  # random: shapes only
        args = [m_env[n] for n in job["tensors"]]
        cell = cell[0]
        def ours_py():
            return eval(job["rewrite"], m_env)
    mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    try:
        why = compare(arrays(ours_py()), theirs, shape_only)
    except Exception as exc:
        return {"pynative": "fail", "graph": "skipped", "error": first_line(exc)}
    if why is not None:
        return {"pynative": "differs", "graph": "skipped", "error": why}
    if cell is None:
        return {"pynative": "pass", "graph": "skipped", "error": ""}
    mindspore.set_context(mode=mindspore.GRAPH_MODE)
    try:
        why = compare(arrays(cell()(*args)), theirs, shape_only)
    except Exception as exc:
        return {"pynative": "pass", "graph": "fail", "error": "GRAPH_MODE: " + first_line(exc)}
    finally:
        mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    return {"pynative": "pass", "graph": "pass" if why is None else "differs",
            "error": "" if why is None else "GRAPH_MODE: " + why}

out = {}
for job in JOBS:
    try:
        out[job["id"]] = one(job)
    except Exception as exc:
        out[job["id"]] = {"pynative": "fail", "graph": "skipped", "error": first_line(exc)}
print("PROOF-RESULT " + json.dumps(out))
'''


def _graph_text(job: dict[str, Any]) -> str:
    """The rewrite with constant variables inlined (a GRAPH_MODE construct reads its
    tensors as arguments)."""
    tree = ast.parse(job["rewrite"], mode="eval")
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.Name) and value.id in job["vars"] \
                    and value.id not in job["tensors"]:
                text = job["vars"][value.id].replace("torch.", "mindspore.")
                setattr(node, field, ast.parse(text, mode="eval").body)
            elif isinstance(value, list):
                setattr(node, field, [ast.parse(job["vars"][v.id].replace(
                    "torch.", "mindspore."), mode="eval").body
                    if isinstance(v, ast.Name) and v.id in job["vars"]
                    and v.id not in job["tensors"] else v for v in value])
    return ast.unparse(tree)


def _cells(job: dict[str, Any], index: int) -> str:
    """Two Cells for one job: the rewrite as a construct's result, and as a layer built
    in ``__init__`` and called on the input (which one runs depends on torch's result).
    Host-side initialisers get none."""
    if job["api"].startswith("torch.nn.init."):
        return f"CELLS[{job['id']!r}] = (None, None)\n"
    text = _graph_text(job)
    args = ", ".join(["self", *job["tensors"]])
    return (f"class Fn{index}(nn.Cell):\n    def construct({args}):\n        return {text}\n"
            f"class Layer{index}(nn.Cell):\n    def __init__(self):\n"
            f"        super().__init__()\n        self.m = {text}\n"
            f"    def construct(self, a):\n        return self.m(a)\n"
            f"CELLS[{job['id']!r}] = (Fn{index}, Layer{index})\n")


def run_jobs(jobs: list[dict[str, Any]], time_limit: float = 900.0) -> dict[str, Any]:
    """Run rewrite jobs in one child process: id -> {pynative, graph, error}."""
    head, tail = _CHILD.split("\nout = {}\n")
    script = head + "\nCELLS = {}\n" + "".join(_cells(j, i) for i, j in enumerate(jobs))
    script += f"JOBS = {jobs!r}\n" + "\nout = {}\n" + tail
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "prove_fixes.py"  # GRAPH_MODE reads the Cells' source
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                                  timeout=time_limit, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {j["id"]: {"pynative": "fail", "graph": "skipped",
                              "error": f"timed out after {time_limit:.0f} s"} for j in jobs}
    marker = [ln for ln in done.stdout.splitlines() if ln.startswith("PROOF-RESULT ")]
    if not marker:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {j["id"]: {"pynative": "fail", "graph": "skipped", "error": why} for j in jobs}
    result: dict[str, Any] = json.loads(marker[0][len("PROOF-RESULT "):])
    return result


def shapes_for(api: str) -> list[tuple[int, ...]]:
    """Sample tensor shapes to try, the rank an API's name says first (``conv1d``: 3,
    ``max_pool2d``: 4, ``Conv3d``: 5), then the generic order."""
    generic = [(2, 3, 4), (2, 4), (2, 4, 6, 6), (4,), (2, 4, 6), (2, 4, 5, 5, 5)]
    name = api.rsplit(".", 1)[1].lower()
    first = {"1d": [(2, 4, 6), (2, 4, 32)], "2d": [(2, 4, 6, 6), (2, 4, 32, 32)],
             "3d": [(2, 4, 5, 5, 5)]}
    preferred = [shape for suffix, shapes in first.items() if name.endswith(suffix)
                 for shape in shapes]
    return preferred + [s for s in generic if s not in preferred]


def _expression(text: str) -> str | None:
    """The expression a rewrite evaluates (an assignment's value), None when the rewrite
    is not Python."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr | ast.Assign):
        return None
    return ast.unparse(tree.body[0].value)


def jobs_for(forms: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rewrite jobs of the forms (one per distinct rewrite text) and the proof rows
    they answer (api, pattern, backends, torch call, rewrite, job id)."""
    jobs: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for key, form in sorted(forms.items()):
        by_text: dict[str, list[str]] = {}
        for backend in BACKENDS:
            text = rewrite_of(form, backend)
            if text is not None:
                by_text.setdefault(text, []).append(backend)
        for text, backends in by_text.items():
            job_id = f"{key} -> {text}"
            rows.append({"api": form["api"], "pattern": form["pattern"], "backends": backends,
                         "torch_call": form["torch_call"], "vars": form["vars"],
                         "rewrite": text, "job": job_id})
            expression = _expression(text)
            if expression is None:
                continue  # not Python: reported as not runnable
            tensors = [v for v, s in form["vars"].items() if s in (TENSOR, INDEX, PARAM)]
            jobs[job_id] = {"id": job_id, "api": form["api"], "torch_call": form["torch_call"],
                            "rewrite": text, "vars": form["vars"], "tensors": ["x", *tensors],
                            "shapes": shapes_for(form["api"])}
            jobs[job_id]["rewrite"] = expression
    return list(jobs.values()), rows


def prove(forms: dict[str, dict[str, Any]], batch: int = 80,
          known: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run every form's rewrites (those with a ``known`` row of the same torch call and
    rewrite, measured with the installed versions, are not run again); the proof file's
    data."""
    import mindspore
    import torch

    jobs, rows = jobs_for(forms)
    results: dict[str, Any] = {}
    inputs = {j["id"]: (j["torch_call"], j["vars"]) for j in jobs}
    for row in known or []:
        job_id = f"{row['api']} {row['pattern']} -> {row['rewrite']}"
        if inputs.get(job_id) == (row["torch_call"], row.get("vars")):
            results[job_id] = {k: row[k] for k in ("pynative", "graph", "error")}
    jobs = [j for j in jobs if j["id"] not in results]
    for start in range(0, len(jobs), batch):
        results |= run_jobs(jobs[start:start + batch])
        print(f"proved {min(start + batch, len(jobs))}/{len(jobs)}", file=sys.stderr)
    for row in rows:
        row |= results.get(row.pop("job"), {"pynative": "fail", "graph": "skipped",
                                            "error": "the rewrite is not Python code"})
    return {"mindspore_version": mindspore.__version__,
            "torch_version": torch.__version__.split("+")[0],
            "generated_by": "tools/fix_forms.py prove", "proofs": rows}


def render(data: dict[str, Any], key: str) -> str:
    """A data file's text: one record per line for readable diffs."""
    head = {k: v for k, v in data.items() if k != key}
    items = data[key]
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + f',\n "{key}": ' + (
        "[\n" if isinstance(items, list) else "{\n")
    if isinstance(items, list):
        text += ",\n".join("  " + json.dumps(r, ensure_ascii=False, sort_keys=True)
                           for r in items) + "\n ]\n}\n"
    else:
        text += ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                           for k, v in sorted(items.items())) + "\n }\n}\n"
    return text


def load(path: Path, key: str) -> dict[str, Any]:
    """A data file's records (empty when absent)."""
    if not path.is_file():
        return {key: {} if key == "forms" else []}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def stale() -> list[str]:
    """Proofs whose stored rewrite is no longer the one msready prints for the pattern
    (the rewrite logic or the table changed since they ran): without execution."""
    forms = load(FORMS_FILE, "forms")["forms"]
    out = []
    for row in load(PROOF_FILE, "proofs")["proofs"]:
        form = forms.get(f"{row['api']} {row['pattern']}")
        if form is None:
            out.append(f"{row['api']} {row['pattern']}: no collected form")
            continue
        for backend in row["backends"]:
            now = rewrite_of(form, backend)
            if now != row["rewrite"]:
                out.append(f"{row['api']} {row['pattern']} [{backend}]: stored "
                           f"{row['rewrite']!r}, now {now!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    """collect / prove / --check, as the module's docstring says."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=("collect", "prove"))
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="fail when proofs are stale")
    parser.add_argument("--all", action="store_true", help="prove: run every pattern again")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        print("\n".join(bad) if bad else "up to date")
        return 1 if bad else 0
    if args.command == "collect":
        data = load(FORMS_FILE, "forms")
        data["forms"] |= collect(args.paths)
        data["generated_by"] = "tools/fix_forms.py collect"
        FORMS_FILE.write_text(render(data, "forms"), encoding="utf-8")
        print(f"{len(data['forms'])} call patterns")
        return 0
    if args.command == "prove":
        import mindspore

        stored = load(PROOF_FILE, "proofs")
        same = stored.get("mindspore_version") == mindspore.__version__ and not args.all
        data = prove(load(FORMS_FILE, "forms")["forms"], known=stored["proofs"] if same else [])
        PROOF_FILE.write_text(render(data, "proofs"), encoding="utf-8")
        ok = sum(1 for r in data["proofs"] if r["pynative"] == "pass"
                 and r["graph"] in ("pass", "skipped"))
        print(f"{ok}/{len(data['proofs'])} rewrites proven")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
