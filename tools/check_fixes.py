"""Run every ``Fix:`` that msready prints as code for the MS1xx findings of some folders.

    python tools/check_fixes.py FOLDER [FOLDER ...]

A FOLDER is a repository, or a folder of repositories (one per subfolder) when it holds no
Python file itself. For every torch call the MS1xx rules rewrite, the suggestion they print
is taken exactly as printed (:func:`msready.rules.api_mapping.shown_fix`); one that is code
(a Python expression or assignment) is run on MindSpore's CPU in a child process, in
PyNative, with its non-literal arguments bound to generated inputs (the samples
``tools/fix_forms.py`` proves the call patterns with; a layer is also called on a
generated input). Prints per repository and in total ``fixes run / fixes printed as code``
and the suggestions given in words, then each fix that failed with its error. Exit 1 when
a printed fix failed.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fix_forms  # (the sibling module: samples and the child's helpers)

from msready.analyzer.apitable import ApiEntry, call_pattern
from msready.analyzer.conversion import plan_call
from msready.analyzer.facts import CallKind, CallSite
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.scan import analyze_bytes
from msready.rules.api_mapping import shown_fix, torch_calls


@dataclass
class Fix:
    """One printed suggestion: where, what, and (for code) how it ran."""

    where: str
    api: str
    text: str
    code: bool
    job: dict[str, Any] | None = None
    status: str = ""
    error: str = ""


def is_code(text: str) -> bool:
    """True for a suggestion that is Python code: an expression or one assignment."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr | ast.Assign)


def _norm(text: str) -> str:
    try:
        return ast.unparse(ast.parse(f"({text})", mode="eval"))
    except SyntaxError:
        return text


class _Bind(ast.NodeTransformer):
    """Replaces the call's argument expressions (and its receiver) by sample variables."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant):
            name = self.mapping.get(ast.unparse(node))
            if name is not None:
                return ast.Name(name, ast.Load())
        return super().generic_visit(node)


@lru_cache(maxsize=1)
def _stored_forms() -> dict[str, dict[str, Any]]:
    forms: dict[str, dict[str, Any]] = fix_forms.load(fix_forms.FORMS_FILE, "forms")["forms"]
    return forms


def instantiate(text: str, call: CallSite, entry: ApiEntry) -> dict[str, Any] | None:
    """A job running the printed fix with generated inputs, None when an argument has no
    sample (the fix is then reported as not runnable here)."""
    # the inputs the pattern was proven with, else new ones for this call
    form = _stored_forms().get(f"{entry.torch} {call_pattern(call)}") \
        or fix_forms.synthesize(entry, call)
    if form is None:
        return None
    mapping: dict[str, str] = {}
    index = 0
    for arg in call.args:
        if not arg.is_literal:
            mapping[_norm(arg.text)] = f"v{index}"
            # an initialiser fills ``w`` for ``w.data`` (the engine writes ``w.set_data``)
            stripped = _norm(arg.text)
            while stripped.endswith(".data"):
                stripped = stripped.removesuffix(".data")
                mapping.setdefault(stripped, f"v{index}")
            index += 1
    if call.receiver and call.kind is CallKind.TENSOR_METHOD:
        mapping[_norm(call.receiver)] = "x"
    tree = ast.parse(text)
    statement = tree.body[0]
    value = statement.value if isinstance(statement, ast.Expr | ast.Assign) else None
    if value is None:
        return None
    bound = _Bind(mapping).visit(value)
    code = ast.unparse(bound)
    tensors = [v for v, s in form["vars"].items() if s in (fix_forms.TENSOR, fix_forms.INDEX,
                                                            fix_forms.PARAM)]
    return {"id": code, "api": entry.torch, "torch_call": form["torch_call"], "rewrite": code,
            "vars": form["vars"], "tensors": ["x", *tensors],
            "shapes": fix_forms.shapes_for(entry.torch)}


def repositories(folder: Path) -> list[Path]:
    """The folder itself when it holds Python files, else its subfolders."""
    if any(folder.glob("*.py")) or any(folder.glob("*.ipynb")) or not folder.is_dir():
        return [folder]
    return sorted(p for p in folder.iterdir() if p.is_dir())


def printed_fixes(repo: Path, backend: str = "cpu", ungated: bool = False) -> list[Fix]:
    """Every suggestion the MS1xx rewrite rules print for the repository's calls (with
    ``ungated``, every rewrite as code, as msready printed them before fixes were proven)."""
    files = [p for p in sorted(repo.rglob("*")) if p.suffix in (".py", ".ipynb") and p.is_file()]
    results = []
    for path in files:
        try:
            results.append(analyze_bytes(path.relative_to(repo).as_posix(), path.read_bytes()))
        except OSError:
            continue
    model = RepositoryModel(results, backend)
    out = []
    for rc, entry in torch_calls(model):
        if entry.status_for(backend) != "differs":
            continue
        plan = plan_call(rc.call, entry, backend, rc.file.bindings)
        if not plan.issues:
            continue
        text = plan.rewrite if ungated else shown_fix(rc, entry, backend, plan.rewrite)
        fix = Fix(f"{repo.name}/{rc.file.path}:{rc.call.span.line}", entry.torch, text,
                  is_code(text))
        if fix.code:
            fix.job = instantiate(text, rc.call, entry)
        out.append(fix)
    return out


_RUN = '''
def run_only(job):
    """Pass when the fix runs on one of the generated inputs (the source does not say the
    tensors' ranks); else the first error."""
    first = None
    for shape in job.get("shapes") or SHAPES:
        outcome = run_on(job, shape)
        if outcome["status"] == "pass":
            return outcome
        first = first or outcome
    return first

def run_on(job, shape):
    try:
        t_env, m_env = envs(job, shape)
    except Exception as exc:
        return {"status": "fail", "error": "generated inputs: " + first_line(exc)}
    mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    try:
        result = eval(job["rewrite"], m_env)
    except Exception as exc:
        return {"status": "fail", "error": first_line(exc)}
    if isinstance(result, nn.Cell):
        last = None
        for shape in inputs(result):
            data = np.array([[0, 3, 5], [1, 1, 2]], dtype=np.int64) if shape == "tokens" \\
                else array(shape, "TENSOR")
            for count in (1, 3):
                try:
                    arrays(result(*[Tensor(data)] * count))
                    return {"status": "pass", "error": ""}
                except Exception as exc:
                    last = exc
        return {"status": "fail", "error": "the layer runs on no generated input: " +
                first_line(last)}
    try:
        arrays(result)
    except TypeError:
        pass  # not a tensor result (a shape, a Parameter update): it ran
    except Exception as exc:
        return {"status": "fail", "error": first_line(exc)}
    return {"status": "pass", "error": ""}

out = {}
for job in JOBS:
    try:
        out[job["id"]] = run_only(job)
    except Exception as exc:
        out[job["id"]] = {"status": "fail", "error": first_line(exc)}
print("RUN-RESULT " + json.dumps(out))
'''


def run(jobs: list[dict[str, Any]], time_limit: float = 900.0) -> dict[str, Any]:
    """Run fix jobs in one child process (PyNative): id -> {status, error}."""
    head = fix_forms._CHILD.split("\ndef one(job):")[0]
    script = head + f"\nJOBS = {jobs!r}\n" + _RUN
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run_fixes.py"
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                                  timeout=time_limit, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {j["id"]: {"status": "fail", "error": "timed out"} for j in jobs}
    marker = [ln for ln in done.stdout.splitlines() if ln.startswith("RUN-RESULT ")]
    if not marker:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {j["id"]: {"status": "fail", "error": why} for j in jobs}
    result: dict[str, Any] = json.loads(marker[0][len("RUN-RESULT "):])
    return result


def check(fixes: list[Fix], batch: int = 150) -> None:
    """Run every code fix (distinct instantiated code once) and record its status."""
    jobs = {f.job["id"]: f.job for f in fixes if f.code and f.job is not None}
    items = list(jobs.values())
    results: dict[str, Any] = {}
    for start in range(0, len(items), batch):
        results |= run(items[start:start + batch])
    for fix in fixes:
        if not fix.code:
            continue
        if fix.job is None:
            fix.status, fix.error = "fail", "no generated input fits its arguments"
            continue
        fix.status = results[fix.job["id"]]["status"]
        fix.error = results[fix.job["id"]]["error"]


def main(argv: list[str] | None = None) -> int:
    """Scan, run and count, as the module's docstring says."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--target", default="cpu", choices=("cpu", "gpu", "ascend"))
    parser.add_argument("--ungated", action="store_true",
                        help="print every rewrite as code, proven or not (for comparison)")
    args = parser.parse_args(argv)
    every: list[Fix] = []
    for folder in args.folders:
        for repo in repositories(folder):
            fixes = printed_fixes(repo, args.target, args.ungated)
            check(fixes)
            code = [f for f in fixes if f.code]
            ran = sum(1 for f in code if f.status == "pass")
            print(f"{repo.name:44} fixes run {ran}/{len(code)} printed as code; "
                  f"{len(fixes) - len(code)} given in words")
            every += fixes
    code = [f for f in every if f.code]
    ran = sum(1 for f in code if f.status == "pass")
    print(f"\ntotal: fixes run / fixes printed as code = {ran}/{len(code)}; "
          f"{len(every) - len(code)} suggestions in words")
    for fix in code:
        if fix.status != "pass":
            print(f"  FAIL {fix.where} {fix.text}\n       {fix.error}")
    return 1 if ran < len(code) else 0


if __name__ == "__main__":
    raise SystemExit(main())
