"""Running the generated training steps and reporting them like Cells: ``pass`` (one
step ran, the loss is finite and a parameter changed), ``fail`` (the error and the
generated line), ``unverified`` (what is missing), ``blocked`` (the model's Cell needs a
package msready does not translate), ``skipped`` (``--skeletons write``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msready.analyzer.result import ScanResult, SkeletonResult, TrainStepResult
from msready.skeletons import runner
from msready.skeletons.cache import CellCache
from msready.skeletons.error_text import stable_error
from msready.skeletons.inputs import specs_json
from msready.skeletons.shapes import Plan
from msready.skeletons.training_build import Step, prepare, step_text, write_step

NOT_RUN = "not run (--skeletons write)"
STEP_TIMEOUT = 120.0


def _specs(plan: Plan) -> list[list[dict[str, object] | None]]:
    return [specs_json(plan.inputs), *[specs_json(a) for a in plan.alternatives]]


def _cell_problem(step: Step, cells: dict[str, SkeletonResult]) -> tuple[str, str] | None:
    """(status, reason) when the model's Cell did not pass."""
    plan = step.plan
    cell = cells.get(plan.torch_class) if plan is not None else None
    if cell is None or cell.status == "pass":
        return None
    status = "blocked" if cell.status == "blocked" else "unverified"
    return status, f"the model's Cell did not run ({cell.status}: {cell.error})"


def build_train_steps(result: ScanResult, out_dir: Path, run: bool, plans: dict[str, Plan],
                      cells: list[SkeletonResult], store: CellCache) -> list[TrainStepResult]:
    """Write a training step for every training loop, run them (outcomes cached in
    ``store``, whose tree holds the Cells' generated files), return the results."""
    out_dir = out_dir.resolve()
    steps = prepare(result, out_dir, plans)
    if not steps:
        return []
    init = out_dir / "train_steps" / "__init__.py"
    if not init.exists():
        init.write_text("", encoding="utf-8")
    by_class = {c.torch_class: c for c in cells}
    verdicts: dict[str, tuple[str, str]] = {}
    jobs: list[dict[str, Any]] = []
    for step in steps:
        key = step.module
        if step.reasons:
            verdicts[key] = ("unverified", "; ".join(step.reasons))
        elif not run:
            verdicts[key] = ("skipped", NOT_RUN)
        elif (problem := _cell_problem(step, by_class)) is not None:
            verdicts[key] = problem
        else:
            assert step.plan is not None
            specs = _specs(step.plan)
            jobs.append({"key": key, "module": step.module, "inputs": specs[0],
                         "alternatives": specs[1:], "loss_kind": step.loss.kind})
    store = store.with_files({s.out.relative_to(out_dir).as_posix(): step_text(s)
                              for s in steps})
    outcomes, pending = store.split(jobs)
    if pending:
        try:
            outcomes.update(runner.run_jobs("msready.skeletons.train_child",
                                            {"root": str(out_dir)}, pending,
                                            timeout=STEP_TIMEOUT))
        except OSError as exc:
            outcomes.update({j["key"]: {"error": f"cannot start the child process: {exc}"}
                             for j in pending})
        store.keep(pending, outcomes)
    results = []
    for step in steps:
        res = _result(step, out_dir, verdicts.get(step.module), outcomes.get(step.module))
        results.append(res)
        write_step(step, _status_line(res))
    return results


def _result(step: Step, out_dir: Path, verdict: tuple[str, str] | None,
            outcome: dict[str, Any] | None) -> TrainStepResult:
    loop = step.loop
    common: dict[str, Any] = {
        "function": loop.function, "path": loop.path, "line": loop.line,
        "step_file": step.out.relative_to(out_dir.parent).as_posix(),
        "model": step.loss.model_class or "", "loss": ", ".join(step.loss.apis),
        "optimizer": step.optimizer, "not_translated": tuple(step.not_translated)}
    if verdict is not None:
        return TrainStepResult(status=verdict[0], error=verdict[1], **common)
    outcome = outcome or {"error": "not run"}
    status = "pass" if outcome.get("status") == "pass" else "fail"
    return TrainStepResult(status=status, error=stable_error(outcome.get("error")),
                           loss_before=outcome.get("loss_before"),
                           loss_after=outcome.get("loss_after"), **common)


def _status_line(res: TrainStepResult) -> str:
    text = res.status
    if res.loss_before is not None and res.loss_after is not None:
        text += f", loss {res.loss_before:.4g} -> {res.loss_after:.4g} after one step"
    return f"{text}: {res.error}" if res.error else text
