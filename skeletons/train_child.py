"""The child process that runs generated training steps:
``python -m msready.skeletons.train_child JOB``.

For each step of the job: import the generated file (it builds the model's Cell, the
loss and the optimizer), find an input the model accepts (the Cell's input spec and its
alternatives), synthesize labels from the loss kind, compute the loss, run one
``train_step`` and compute the loss again. One JSON line per step goes to stdout as soon
as it is done. Pass: the step ran, the loss is finite and at least one parameter changed.
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from msready.skeletons.child import (
    MARK,
    announce_ready,
    as_tensors,
    failure,
    first_line,
    import_module,
    job_candidates,
)


def label_candidates(kind: str, shape: tuple[int, ...]) -> list[Any]:
    """Labels for a model output of ``shape``: class indices in ``[0, C)`` with C the
    last dimension (then the second, for ``(N, C, H, W)`` outputs) for cross entropy,
    0/1 floats for binary cross entropy, floats of the output's shape for regression."""
    rng = np.random.default_rng(1)
    out: list[Any] = []
    if kind in ("class", ""):
        if len(shape) >= 1 and shape[-1] > 0:
            picked = rng.integers(0, shape[-1], shape[:-1])
            out += [picked.astype(np.int32), picked.astype(np.int64)]
        if len(shape) > 2 and shape[1] > 0:
            out.append(rng.integers(0, shape[1], (shape[0], *shape[2:])).astype(np.int32))
    if kind == "binary":
        out.append(rng.integers(0, 2, shape).astype(np.float32))
    if kind in ("regression", ""):
        out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def _first(value: Any) -> Any:
    while isinstance(value, (tuple, list)) and value:
        value = value[0]
    return value


def _loss(value: Any) -> float:
    return float(np.asarray(value.asnumpy(), dtype=np.float64).reshape(-1)[0])


def run_step(ms: Any, job: dict[str, Any], root: str) -> dict[str, Any]:
    """Build, then run one training step; see the module docstring."""
    res: dict[str, Any] = {"key": job["key"], "status": "fail", "error": None,
                           "loss_before": None, "loss_after": None}
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        step = import_module(job["module"], root)
        step.model.set_train(True)
    except Exception as exc:  # the generated code's failure is the result
        res["error"] = f"building the step: {failure(exc, root)}"
        return res
    candidates = job_candidates(job)
    inputs, error = None, ""
    shape: tuple[int, ...] = ()
    for arrays in candidates:
        tensors = as_tensors(ms.Tensor, arrays)
        try:
            out = _first(step.model(*tensors))
            shape, inputs = tuple(int(d) for d in out.shape), tensors
            break
        except Exception as exc:  # this input does not fit: try the next one
            error = error or failure(exc, root)
    if inputs is None:
        res["error"] = f"the model did not run on any input tried: {error}"
        return res
    label, before = None, None
    for array in label_candidates(str(job.get("loss_kind") or ""), shape):
        try:
            before = _loss(step.forward_fn(*inputs, ms.Tensor(array))[0])
            label = ms.Tensor(array)
            break
        except Exception as exc:  # these labels do not fit the loss: try the next ones
            error = failure(exc, root)
    if label is None or before is None:
        res["error"] = f"computing the loss: {error or 'no label fits'}"
        return res
    res["loss_before"] = before
    params = list(step.optimizer.parameters)
    old = [p.asnumpy().copy() for p in params]
    try:
        _loss(step.train_step(*inputs, label))
        after = _loss(step.forward_fn(*inputs, label)[0])
    except Exception as exc:
        res["error"] = f"the training step: {failure(exc, root)}"
        return res
    res["loss_after"] = after
    changed = sum(not np.array_equal(o, p.asnumpy()) for o, p in zip(old, params, strict=True))
    if not (math.isfinite(before) and math.isfinite(after)):
        res["error"] = f"the loss is not finite ({before} -> {after})"
    elif not changed:
        res["error"] = "no parameter changed after the step"
    else:
        res["status"] = "pass"
        res["changed"] = changed
    return res


def main(argv: list[str]) -> int:
    """Run the job file given on the command line."""
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    import mindspore as ms

    sys.path.insert(0, job["root"])  # after MindSpore is loaded, as in the Cell child
    ms.set_device("CPU")
    announce_ready()
    for step_job in job["cells"]:
        try:
            res = run_step(ms, step_job, job["root"])
        except Exception as exc:  # keep the batch going
            traceback.print_exc(file=sys.stderr)
            res = {"key": step_job["key"], "status": "fail", "error": first_line(exc)}
        sys.stdout.write(MARK + json.dumps(res) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
