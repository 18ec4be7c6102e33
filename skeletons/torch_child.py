"""The opt-in child process that runs the original torch modules:
``python -m msready.skeletons.torch_child JOB``.

It imports the user's code (the scanned sources, rewritten into a temporary folder), so it
runs only for ``--compare-torch``. For each module it saves the ``state_dict`` and the
output on the job's seeded input to an ``.npz`` that the MindSpore child compares against.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from msready.skeletons.child import (
    MARK,
    announce_ready,
    as_tensors,
    attribute_path,
    build_kwargs,
    first_line,
    first_output,
    import_module,
    input_candidates,
)


def _run_fitting(torch: Any, net: Any, candidates: list[list[Any]]) -> tuple[Any, list[Any]]:
    """The output on the first candidate input the module accepts, and that input."""
    error: Exception | None = None
    for arrays in candidates:
        inputs = as_tensors(torch.from_numpy, arrays)
        try:
            with torch.no_grad():
                return first_output(net(*inputs)), arrays
        except Exception as exc:  # the size does not fit: try the next one
            error = error or exc
    assert error is not None
    raise error


def run_module(torch: Any, job: dict[str, Any], root: str = "") -> dict[str, Any]:
    """Build one torch module, run it and save what the comparison needs."""
    res: dict[str, Any] = {"key": job["key"], "error": None}
    try:
        torch.manual_seed(0)
        module = import_module(job["module"], root)
        net = attribute_path(module, job["name"])(**build_kwargs(job["kwargs"], torch.ones))
        net.eval()
        out, arrays_in = _run_fitting(torch, net, input_candidates(job["inputs"]))
        arrays = {f"param:{k}": v.detach().cpu().numpy() for k, v in net.state_dict().items()}
        arrays["output"] = out.detach().cpu().numpy()
        arrays["inputs"] = np.asarray(len(arrays_in))
        for i, a in enumerate(arrays_in):
            if isinstance(a, list):  # a list of feature maps: each, and how many
                arrays[f"input:{i}:listed"] = np.asarray(len(a))
                arrays.update({f"input:{i}:{j}": x for j, x in enumerate(a)})
            elif isinstance(a, dict):  # feature maps by name: each, and the names
                arrays[f"input:{i}:keyed"] = np.asarray(list(a))
                arrays.update({f"input:{i}:{k}": x for k, x in a.items()})
            elif isinstance(a, int):  # an index
                arrays[f"input:{i}:int"] = np.asarray(a)
            elif a is not None:
                arrays[f"input:{i}"] = a
        np.savez(job["compare"], **arrays)
    except Exception as exc:  # the user's code failing is the result
        res["error"] = f"running the torch module: {first_line(exc)}"
    return res


def main(argv: list[str]) -> int:
    """Run the job file given on the command line."""
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    import torch

    sys.path.insert(0, job["torch_root"])  # after torch, which a repository file cannot shadow
    announce_ready()

    for cell_job in job["cells"]:
        res = run_module(torch, cell_job, job["torch_root"])
        sys.stdout.write(MARK + json.dumps(res) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
