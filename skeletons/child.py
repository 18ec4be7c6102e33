"""The child process that runs generated Cells: ``python -m msready.skeletons.child JOB``.

For each Cell of the job (one generated file's worth, in order): import, instantiate,
measure the weight map, load torch weights when a comparison was asked for, run on CPU in
PyNative mode and then in GRAPH_MODE. One JSON line per Cell goes to stdout as soon as it
is done, so a crash or a time-out loses only the Cell that caused it.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
import re
import sys
import textwrap
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from msready.skeletons.values import LIST_KEY, OBJECT_KEY, TENSOR_KEY
from msready.skeletons.weights import fit_shape, weight_map

MARK = "@@msready "
_READY = {"ready": True}  # a child's first line, once its framework is imported
_STAND_INS = ("TorchLeftInCell.", "Unavailable.")  # classes of adapters.SOURCES
_NOISE = ("----", "- C++ Call Stack", "- Python Call Stack", "Traceback", "(See file")


def announce_ready() -> None:
    """Tell the runner that this child has imported its framework: each Cell's time limit
    counts from here, not from the child's start."""
    sys.stdout.write(MARK + json.dumps(_READY) + "\n")
    sys.stdout.flush()


def is_ready(line: object) -> bool:
    """Whether a result line read from a child is its ready line."""
    return line == _READY


def first_line(exc: BaseException) -> str:
    """The first informative line of an exception, prefixed by its type."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    useful = [ln for ln in lines if ln and not ln.startswith(_NOISE)]
    if not useful:
        return type(exc).__name__
    text = useful[0].lstrip("- ")
    if text.endswith(":") and len(useful) > 1:  # "Kernel select failed:" and the reason
        text = f"{text} {useful[1]}"
    return f"{type(exc).__name__}: {text}"[:300]


def generated_line(exc: BaseException, root: str) -> str:
    """`` (at path/file.py:12)``: the last line of generated code the error passed through."""
    if not root:
        return ""
    base = Path(root).resolve()
    where = ""
    frame = exc.__traceback__
    while frame is not None:
        path = Path(frame.tb_frame.f_code.co_filename)
        # msready's stand-ins fail on purpose: the line to fix is the one that called them
        stand_in = frame.tb_frame.f_code.co_qualname.startswith(_STAND_INS)
        if path.is_absolute() and base in path.parents and not stand_in:
            where = f" (at {path.relative_to(base.parent).as_posix()}:{frame.tb_lineno})"
        frame = frame.tb_next
    return where


# Sizes tried, in order, for image / signal dimensions when the first guess does not fit
# the network (a Linear after the convolutions fixes the size: 28 for MNIST, 224, ...; a
# U-Net of seven or eight levels, each halving the image, takes 128 or 256).
SPATIAL_SIZES = {1: (32, 64, 128, 256, 28, 16), 2: (16, 28, 32, 64, 96, 128, 224, 256, 8),
                 3: (4, 8, 16, 32)}


# The Python value a forward argument that is no tensor is given, by its spec's dtype.
PYTHON_VALUES = {"index": 0, "flag": True}


def make_inputs(specs: list[dict[str, Any] | None], size: int | None = None) -> list[Any]:
    """The inputs described by a job (seeded, so the torch side builds the same ones);
    ``size`` replaces the spatial dimensions."""
    rng = np.random.default_rng(0)
    out: list[Any] = []
    for spec in specs:
        if spec is None:
            out.append(None)
            continue
        if spec["dtype"] in PYTHON_VALUES:  # an index or a flag: a Python value
            out.append(PYTHON_VALUES[spec["dtype"]])
            continue
        if spec["dtype"] == "size":  # a size: the spatial size tried, else its own
            out.append(size if size is not None else spec["high"])
            continue
        shape = tuple(spec["shape"])
        spatial = int(spec.get("spatial", 0))
        if size is not None and spatial:
            shape = (*shape[:-spatial], *([size] * spatial))
        keyed = spec.get("keyed") or []
        if keyed:  # a pyramid by name: each level half the size of the one before
            out.append({name: rng.standard_normal((*shape[:-spatial], *(
                max(1, s >> level) for s in shape[-spatial:]))).astype(np.float32)
                for level, name in enumerate(keyed)})
            continue
        arrays = [rng.integers(0, max(1, spec["high"]), shape).astype(np.int64)
                  if spec["dtype"] == "int64" else rng.standard_normal(shape).astype(np.float32)
                  for _ in range(max(1, int(spec.get("listed", 0))))]
        out.append(arrays if spec.get("listed") else arrays[0])
    return out


def as_tensors(tensor: Any, arrays: list[Any]) -> list[Any]:
    """Inputs as the framework's tensors (``tensor`` makes one from an array); a list of
    arrays (a pyramid's feature maps) becomes a list of tensors, a dictionary of them a
    dictionary of tensors."""
    return [a if a is None or isinstance(a, int) else [tensor(x) for x in a]
            if isinstance(a, list) else {k: tensor(x) for k, x in a.items()}
            if isinstance(a, dict) else tensor(a) for a in arrays]


def job_candidates(job: dict[str, Any]) -> list[list[Any]]:
    """Every input a job may run with: its guesses, then its alternatives'."""
    candidates = input_candidates(job["inputs"])
    for other in job.get("alternatives") or ():
        candidates += input_candidates(other)
    return candidates


def failure(exc: BaseException, root: str) -> str:
    """An exception's first line and the generated line it was raised at."""
    return f"{first_line(exc)}{generated_line(exc, root)}"


def input_candidates(specs: list[dict[str, Any] | None]) -> list[list[Any]]:
    """The first guess, then the other spatial sizes for image / signal inputs (those
    whose image holds at most :data:`_LARGEST_INPUT` values: 256 x 256 with three
    channels, not with 576)."""
    spatial = max((int(s.get("spatial", 0)) for s in specs if s is not None), default=0)
    first = make_inputs(specs)
    if not spatial:
        return [first]
    image = next(s for s in specs if s is not None and s.get("spatial"))
    guess, rest = image["shape"][-1], image["shape"][:-int(image["spatial"])]
    return [first, *[make_inputs(specs, size) for size in SPATIAL_SIZES.get(spatial, ())
                     if size != guess and math.prod(rest) * size ** spatial <= _LARGEST_INPUT]]


def mindspore_ones(shape: tuple[int, ...]) -> Any:
    """A MindSpore float32 tensor of ones: a tensor a constructor is handed."""
    import mindspore

    return mindspore.ops.ones(shape, mindspore.float32)


def build_value(value: Any, ones: Any = mindspore_ones) -> Any:
    """A constructor argument from its JSON form (configuration objects rebuilt, tensors
    made by ``ones``)."""
    if isinstance(value, dict) and TENSOR_KEY in value:
        return ones(tuple(value[TENSOR_KEY]))
    if isinstance(value, dict) and OBJECT_KEY in value:
        module, name = value[OBJECT_KEY]
        if module.startswith("torch.") and ones is mindspore_ones:
            # a torch layer a site hands the class, built as MindSpore's (its defaults)
            from msready.skeletons import apis

            module, _, name = (apis.lookup(f"{module}.{name}", "cpu").api or "").rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        if value.get("class"):  # the class, with the keywords a ``partial`` binds
            bound = {k: build_value(v, ones) for k, v in value["kwargs"].items()}
            return functools.partial(cls, **bound) if bound else cls
        return cls(**{k: build_value(v, ones) for k, v in value["kwargs"].items()})
    if isinstance(value, dict) and LIST_KEY in value:
        return [build_value(v, ones) for v in value[LIST_KEY]]
    if isinstance(value, list):
        return tuple(build_value(v, ones) for v in value)
    if isinstance(value, dict):  # a dictionary of the repository's constants
        return {k: build_value(v, ones) for k, v in value.items()}
    return value


def build_kwargs(raw: dict[str, Any], ones: Any = mindspore_ones) -> dict[str, Any]:
    """Every constructor argument of a job, rebuilt (tensors made by ``ones``)."""
    return {k: build_value(v, ones) for k, v in raw.items()}


def import_module(name: str, root: str) -> Any:
    """The module ``name`` from ``root``; a file named like a module already loaded
    (``types.py``, ``logging.py``) is loaded from its path under a name of its own."""
    module = importlib.import_module(name)
    where = getattr(module, "__file__", None) or ""
    if Path(where).resolve().is_relative_to(Path(root).resolve()):
        return module
    base = Path(root, *name.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    spec = importlib.util.spec_from_file_location(f"_msready_{name.replace('.', '_')}", path)
    if spec is None or spec.loader is None:
        return module
    own = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = own
    spec.loader.exec_module(own)
    return own


def attribute_path(module: Any, path: str) -> Any:
    """``Outer.Inner`` of a module: a class nested in a class, or defined in a function
    (``Test.test_trace.Model``), which is then built from its own lines (the planner
    runs it only when it reads none of the function's local names)."""
    value = module
    for name in path.split("."):
        if inspect.isfunction(value):
            value = _class_in_function(module, value, name)
        elif value is module and not hasattr(module, name):
            value = _class_in_main(module, name)
        else:
            value = getattr(value, name)
    return value


def _class_in_main(module: Any, name: str) -> Any:
    """The class ``name`` a module defines only when run as a script (under ``if
    __name__ == "__main__":``), executed on its own in the module's namespace."""
    source = inspect.getsource(module)
    path = inspect.getsourcefile(module) or "<cell>"
    for node in ast.parse(source).body:
        if not isinstance(node, ast.If):
            continue
        found = next((c for c in ast.walk(node) if isinstance(c, ast.ClassDef)
                      and c.name == name), None)
        if found is not None:
            return _defined(module, found, path)
    raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")


def _defined(module: Any, node: ast.ClassDef, path: str) -> Any:
    """The class ``node`` defines, executed on its own in a copy of the module's names."""
    space = dict(vars(module))
    exec(compile(ast.Module([node], []), path, "exec",
                 flags=__future__.annotations.compiler_flag, dont_inherit=True), space)
    return space[node.name]


def _class_in_function(module: Any, function: Any, name: str) -> Any:
    """The class ``name`` a function defines, executed on its own at module level: its
    lines keep their numbers, so GRAPH_MODE finds their source."""
    lines, first = inspect.getsourcelines(function)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    found = next((node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and node.name == name), None)
    if found is None:
        raise AttributeError(f"{function.__name__}() defines no class {name}")
    return _defined(module, found, inspect.getsourcefile(function) or "<cell>")


class _NotBuilt(Exception):
    """No variant of a Cell builds: the first error, and the widest variant's when it
    differs (past the made-up width's error, the translation's own)."""

    def __init__(self, first: BaseException, last: BaseException | None) -> None:
        super().__init__(str(first))
        self.first, self.last = first, last


def _build(cls: Any, job: dict[str, Any]) -> tuple[Any, dict[str, Any], int]:
    """The Cell built with the job's arguments, else with the first of its variants (wider
    made-up sizes) that builds; the job to run it with and the variant's number (0: none).
    When none builds, :class:`_NotBuilt` is raised."""
    try:
        return cls(**build_kwargs(job["kwargs"])), job, 0
    except Exception as first:
        last: Exception | None = None
        for number, variant in enumerate(job.get("variants") or (), start=1):
            try:
                return cls(**build_kwargs(variant["kwargs"])), {**job, **variant}, number
            except Exception as exc:  # this width does not suit it either
                last = exc
        raise _NotBuilt(first, last) from first


class _Unloaded(dict):  # type: ignore[type-arg]
    """What ``mindspore.load_checkpoint`` gives while a Cell is built for a check when its
    file is not a MindSpore checkpoint (a torch ``.pt`` file the repository ships, or one
    it downloads): no parameters, and itself for any key (``ckpt["model"]``), so that the
    Cell keeps its initial weights."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def __missing__(self, key: object) -> _Unloaded:
        return self


@contextlib.contextmanager
def _weights_left_out(ms: Any, skipped: list[str]) -> Any:
    """While a Cell is built: checkpoint files it loads that are not MindSpore ones load
    nothing (their paths go to ``skipped``), and loading nothing into a Cell is allowed.
    What is checked is that the translated network runs; the weights are converted apart
    (``msready convert``)."""
    load, into, state = ms.load_checkpoint, ms.load_param_into_net, ms.nn.Cell.load_state_dict

    def load_checkpoint(path: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return load(path, *args, **kwargs)
        except Exception:  # missing, or not MindSpore's format
            skipped.append(Path(str(path)).name)
            return _Unloaded(str(path))

    def load_param_into_net(net: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(params, _Unloaded):
            return [], []
        return into(net, params, *args, **kwargs)

    def load_state_dict(cell: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(params, _Unloaded):
            return None
        return state(cell, params, *args, **kwargs)

    ms.load_checkpoint, ms.load_param_into_net = load_checkpoint, load_param_into_net
    ms.nn.Cell.load_state_dict = load_state_dict
    try:
        yield
    finally:
        ms.load_checkpoint, ms.load_param_into_net = load, into
        ms.nn.Cell.load_state_dict = state


def first_output(value: Any) -> Any:
    """The first tensor of a Cell's output (of a tuple, list or dictionary of them)."""
    while isinstance(value, (tuple, list, dict)) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return value


def _stand_ins(root: str) -> list[Any]:
    """The side-library stand-in classes of the generated files loaded from ``root`` (a
    prefix test on each module's path: MindSpore's thousands of modules cost nothing)."""
    prefixes = tuple({os.path.join(root, ""), os.path.join(os.path.realpath(root), "")})
    found = []
    for module in list(sys.modules.values()):
        where = getattr(module, "__file__", None)
        if not isinstance(where, str) or not where.startswith(prefixes):
            continue
        stand_in = module.__dict__.get("Unavailable")
        if stand_in is not None and hasattr(stand_in, "reached"):
            found.append(stand_in)
    return found


def _said_stand_in(error: str | None, root: str) -> str | None:
    """``error``, saying so when the run called a side library's stand-in (its error
    may name only a MindSpore type: "argument[x]: External")."""
    if error is None or "Unavailable" in error or not any(
            s.reached for s in _stand_ins(root)):
        return error
    return f"{error} (after calling the Unavailable stand-in of a side library)"


def run_cell(ms: Any, job: dict[str, Any], root: str = "",
             progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Build and run one Cell in both modes; ``progress`` is given the result so far once
    PyNative has run (a run stopped in GRAPH_MODE keeps it)."""

    def said(res: dict[str, Any]) -> dict[str, Any]:
        return {**res, "error": _said_stand_in(res["error"], root)}

    return said(_run_cell(ms, job, root, (lambda res: progress(said(res)))
                          if progress is not None else None))


def _run_cell(ms: Any, job: dict[str, Any], root: str = "",
              progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {"key": job["key"], "pynative": "fail", "graph": "fail",
                           "error": None, "weights": None, "max_abs_diff": None}
    ms.set_context(mode=ms.PYNATIVE_MODE)
    skipped: list[str] = []
    try:
        module = import_module(job["module"], root)
        for stand_in in _stand_ins(root):  # what importing the files called does not count
            stand_in.reached = False
        with _weights_left_out(ms, skipped):
            cell, job, res["variant"] = _build(attribute_path(module, job["name"]), job)
        if skipped:
            res["weights_left_out"] = sorted(set(skipped))
        cell.set_train(False)
        res["weights"] = weight_map(cell)
    except _NotBuilt as exc:
        res["error"] = f"building the Cell: {failure(exc.first, root)}"
        if exc.last is not None and first_line(exc.last) != first_line(exc.first):
            res["error"] += f"; with wider made-up sizes: {failure(exc.last, root)}"
        return res
    except Exception as exc:  # the generated code's failure is the result
        res["error"] = f"building the Cell: {failure(exc, root)}"
        return res
    candidates = job_candidates(job)
    reference = None
    if job.get("compare"):
        try:
            reference, torch_inputs = _load_torch(ms, cell, res["weights"],
                                                  Path(job["compare"]))
            candidates = [torch_inputs]
        except Exception as exc:
            res["error"] = f"copying torch weights: {first_line(exc)}"
    search = bool(job.get("guessed")) and reference is None
    proof = _Proof(cell, job)
    inputs, res["input_fits"] = _fitting_inputs(ms, cell, candidates, search, proof)
    res["input_shape"] = _shape_text(inputs)
    pynative = _run_mode(ms, cell, job, inputs, reference, res, "pynative", proof)
    if pynative is not None and reference is None and not job.get("guessed"):
        # the input the repository's layers give failed: the errors are followed from
        # it, and an input found that way is reported as found by search, beside the
        # given one's error (with torch's own input, a failure is the translation's)
        given_error = pynative.removeprefix("PyNative: ")
        found = _search(ms, cell, [(candidates[0], given_error)], {_shapes(candidates[0])},
                        proof=proof)
        if found is not None:
            res["given_input"] = [res["input_shape"], given_error]
            inputs = proof.inputs_for(ms, found)
            res["input_shape"] = _shape_text(inputs)
            pynative = _run_mode(ms, cell, job, inputs, reference, res, "pynative", proof)
    if progress is not None:
        progress({**res, "partial": True, "error": res["error"] or pynative})
    graph = _run_mode(ms, cell, job, inputs, reference, res, "graph")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    errors = [e for e in (pynative, graph) if e is not None]
    if errors:
        res["error"] = "; ".join(errors) if res["error"] is None else res["error"]
    return res


def _run_mode(ms: Any, cell: Any, job: dict[str, Any], inputs: list[Any],
              reference: Any, res: dict[str, Any], field: str,
              proof: _Proof | None = None) -> str | None:
    """Run the Cell on ``inputs`` in one mode (``field``: "pynative" or "graph"), noting
    the result in ``res``; the error to report (``PyNative: ...``), None when it ran.
    A PyNative run of these same inputs that worked while they were sought (``proof``)
    is taken as this mode's run, not repeated."""
    ms.set_context(mode=ms.PYNATIVE_MODE if field == "pynative" else ms.GRAPH_MODE)
    done = proof.taken(inputs) if proof is not None and field == "pynative" else None
    watch = _Watch(cell, job) if field == "pynative" and done is None else None
    try:
        try:
            out = done.out if done is not None else first_output(cell(*inputs))
        finally:
            if watch is not None:
                watch.stop()
        # PyNative runs kernels asynchronously: reading the value surfaces their errors.
        got = np.asarray(out.asnumpy(), dtype=np.float64) if hasattr(out, "asnumpy") \
            else None
    except Exception as exc:
        res[field] = "fail"
        return f"{'PyNative' if field == 'pynative' else 'GRAPH_MODE'}: {first_line(exc)}"
    res[field] = "pass"
    if done is not None:
        res["ran"] = done.ran
    elif watch is not None:
        res["ran"] = watch.ran
    if field == "pynative" and got is not None:
        res["output_shape"] = str(tuple(got.shape))
        if reference is not None:
            if got.shape != reference.shape:
                return f"output shape {got.shape} != torch {reference.shape}"
            res["max_abs_diff"] = float(np.max(np.abs(got - reference))) if got.size else 0.0
    return None


class _Watch:
    """The repository's own Cells a run calls, each with the input of its first call
    (``{"pkg.blocks.Attention": "(2, 17, 16)"}``): a block that found no input of its
    own is proven by the parent that ran it. Forward pre-hooks, PyNative only."""

    def __init__(self, cell: Any, job: dict[str, Any]) -> None:
        self.ran: dict[str, str] = {}
        self.handles = []
        own = f"{job['module']}.{job['name']}"
        for _, sub in cell.cells_and_names():
            key = f"{type(sub).__module__}.{type(sub).__qualname__}"
            if sub is cell or key == own or key.startswith(("mindspore.", "msready.")):
                continue
            self.handles.append(sub.register_forward_pre_hook(self._seen))

    def _seen(self, sub: Any, args: Any) -> None:
        key = f"{type(sub).__module__}.{type(sub).__qualname__}"
        if key not in self.ran:
            self.ran[key] = _shape_text([a if hasattr(a, "shape") else None
                                         for a in (args or ())])

    def stop(self) -> None:
        """Remove the hooks (GRAPH_MODE compiles the Cell without them)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []


class _Proof:
    """The PyNative run that worked while a Cell's input was sought: the input it ran on,
    its first output and the repository's Cells it called. The PyNative run proper
    takes it instead of running the same input again, so that a Cell slow to run (half a
    minute of CPU for one forward of a whole image generator) is not run twice within
    its time limit."""

    def __init__(self, cell: Any, job: dict[str, Any]) -> None:
        self.cell, self.job = cell, job
        self.arrays: list[Any] | None = None
        self.tensors: list[Any] | None = None
        self.out: Any = None
        self.ran: dict[str, str] = {}

    def keep(self, arrays: list[Any], tensors: list[Any], out: Any,
             ran: dict[str, str]) -> None:
        self.arrays, self.tensors, self.out, self.ran = arrays, tensors, out, ran

    def inputs_for(self, ms: Any, arrays: list[Any]) -> list[Any]:
        """``arrays`` as tensors: the very ones of the run kept, when it ran on them."""
        if arrays is self.arrays and self.tensors is not None:
            return self.tensors
        return as_tensors(ms.Tensor, arrays)

    def taken(self, inputs: list[Any]) -> _Proof | None:
        """This run, when it ran on ``inputs``; once (a second run is a run of its own)."""
        if self.tensors is None or inputs is not self.tensors:
            return None
        self.arrays = self.tensors = None
        return self


def _fitting_inputs(ms: Any, cell: Any, candidates: list[list[Any]], search: bool = False,
                    proof: _Proof | None = None) -> tuple[list[Any], bool]:
    """The first candidate input the Cell accepts in PyNative mode (else the first), and
    whether one was accepted. With ``search`` (every candidate is a guess), when none is
    accepted, inputs are then shaped by what the errors say the Cell wants
    (:func:`asked_for`), a few times over. The run that worked is kept in ``proof``."""
    if len(candidates) == 1 and not search:
        return as_tensors(ms.Tensor, candidates[0]), True
    ms.set_context(mode=ms.PYNATIVE_MODE)
    errors: list[str] = []
    for arrays in candidates:
        error = _try_input(ms, cell, arrays, proof)
        if error is None:
            return _tensors(ms, arrays, proof), True
        errors.append(error)
    if search:
        # (a guess tried already is not run again, but its error is followed: the first
        # guess's errors first, then each other guess's)
        tried = {_shapes(c): e for c, e in zip(candidates, errors, strict=True)}
        found = _search(ms, cell, list(reversed(list(zip(candidates, errors, strict=True)))),
                        {_shapes(candidates[0])}, tried, proof)
        if found is not None:
            return _tensors(ms, found, proof), True
    return as_tensors(ms.Tensor, candidates[0]), False


def _tensors(ms: Any, arrays: list[Any], proof: _Proof | None) -> list[Any]:
    return proof.inputs_for(ms, arrays) if proof is not None else as_tensors(ms.Tensor, arrays)


def _search(ms: Any, cell: Any, stack: list[tuple[list[Any], str]], seen: set[Shapes],
            tried: dict[Shapes, str] | None = None,
            proof: _Proof | None = None) -> list[Any] | None:
    """An input the Cell runs on in PyNative mode, found by following what the errors of
    the inputs on ``stack`` ask for (:func:`asked_for`), depth first: the error of the
    input just tried is followed next (a rank, then the channels, then the size), within
    :data:`_SEARCH_RUNS` runs and :data:`_SEARCH_SECONDS`; a side between two that gave
    too few and too many features comes first (:func:`bracketed`). None when there is
    none.
    ``seen`` holds the shapes not to try again; ``tried``, the errors of inputs run
    already."""
    tried = tried or {}
    runs = 0
    bounds: Bounds = {}
    deadline = time.monotonic() + _SEARCH_SECONDS
    while stack and runs < _SEARCH_RUNS and time.monotonic() < deadline:
        arrays, error = stack.pop()
        followed = []
        for shaped in bracketed(arrays, error, bounds) + asked_for(arrays, error):
            key = _shapes(shaped)
            if key in seen or runs >= _SEARCH_RUNS or time.monotonic() >= deadline:
                continue
            seen.add(key)
            found = tried.get(key)
            if found is None:
                runs += 1
                found = _try_input(ms, cell, shaped, proof)
                if found is None:
                    return shaped
            followed.append((shaped, found))
        stack.extend(reversed(followed))
    return None


# How many inputs an input search runs at most, and for how long: a Cell slow to run
# ends its search with "no input it accepts was found" well within its time limit
# (runner.CELL_TIMEOUT), not timed out, which would read as a failed translation.
_SEARCH_RUNS = 16
_SEARCH_SECONDS = 20.0


def _try_input(ms: Any, cell: Any, arrays: list[Any], proof: _Proof | None = None
               ) -> str | None:
    """None when the Cell runs on ``arrays`` in PyNative mode (the run kept in ``proof``),
    else the error's first line."""
    inputs = as_tensors(ms.Tensor, arrays)
    # PyNative runs kernels asynchronously: an error a run before left in flight is
    # dropped first, so that it is not read as this input's (a failed input is run once:
    # a large one can take seconds)
    _flush()
    watch = _Watch(proof.cell, proof.job) if proof is not None else None
    try:
        try:
            out = first_output(cell(*inputs))
        finally:
            if watch is not None:
                watch.stop()
        if hasattr(out, "asnumpy"):
            out.asnumpy()
    except Exception as exc:  # the size does not fit
        _flush()
        return first_line(exc)
    if proof is not None and watch is not None:
        proof.keep(arrays, inputs, out, watch.ran)
    return None


# The shapes of a list of inputs (each input's ``repr`` when it is not an array).
Shapes = tuple[object, ...]


def _shapes(arrays: list[Any]) -> Shapes:
    return tuple(tuple(a.shape) if isinstance(a, np.ndarray) else repr(a) for a in arrays)


# What MindSpore's errors say an operation wanted of its input (first lines, as
# :func:`first_line` gives them). Ranks: a convolution's, a norm's, an unpacking of
# ``x.shape``, a padding mode's least rank, an axis beyond the input's rank.
_RANK = (re.compile(r"shape size must be equal to (\d+), but got (\d+)"),
         re.compile(r"in_shape must have (\d+) dims, but got (\d+)"),
         re.compile(r"dimension of input x must be equal to (\d+), but got (\d+)"),
         re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)"),
         re.compile(r"too many values to unpack \(expected (\d+)\)"))
# (with what to add to the number read for the least rank: an axis, or a rank too small)
_LEAST_RANK = ((re.compile(r"input dims .* must be greater than or equal to (\d+), but got"), 0),
               (re.compile(r"axis value must be in \[-\d+,\s*\d+\), but got (\d+)"), 1),
               (re.compile(r"too many indices for tensor of dimension\s*(\d+)"), 1))
# Channels (the second dimension): a convolution's weight, a batch or group norm's scale.
_CONV = re.compile(r"'C_in' of input 'weight' shape: (\d+), but got 'C_in' of input 'x' "
                   r"shape: (\d+), and 'group': (\d+)")
_MINT_CONV = re.compile(r"in_channels/groups is (\d+), and weight\[1\] is (\d+)")
_NORM = re.compile(r"channel dimension: \d+, bug got (?:scale\.shape\[0\]: |shape: "
                   r"\[const vector\]\{)(\d+)")
# A tuple read past its end: most often a shape, read at an axis the input lacks.
_SHAPE_INDEX = re.compile(r"IndexError: tuple index out of range")
# Widths (the last dimensions): a matrix product's, a Dense layer's, a LayerNorm's.
_LAST = (re.compile(r"'x1_col': (\d+) and 'x2_row': (\d+)"),
         re.compile(r"x_col: (\d+), w_row: (\d+)"))
_RESHAPE = re.compile(r"proposed_shape '\[const vector\]\{([\d, ]+)\}' is invalid for input "
                      r"of size (\d+)")
_LAYER_NORM = re.compile(r"gamma shape: \[const vector\]\{([\d, ]+)\}")
# A feature map that convolutions and pooling shrank below their kernel: the input image
# is too small for the network (sides twice as long are tried).
_TOO_SMALL = re.compile(r"after padding must be greater than or equal to kernel_size|"
                        r"H_out/W_out must be positive|output shape must be larger than 0|"
                        r"Output size is too small")


def asked_for(arrays: list[Any], error: str) -> list[list[Any]]:
    """Inputs changed as ``error`` says the Cell wants them: another rank, another channel
    count, another width, another number of tokens, sizes that broadcast with what the
    Cell adds to them; empty when the error says nothing about its input. The first
    tensor changes, and every other input that had its shape (a guess repeated for a
    query, key and value)."""
    first = next((a for a in arrays if isinstance(a, np.ndarray)), None)
    if first is None:
        return []
    shape = tuple(first.shape)
    wanted = [_with_rank(shape, rank) for rank in _ranks(error, len(shape))]
    if (conv := _CONV.search(error)) is not None and len(shape) > 1:
        want, got = int(conv.group(1)) * int(conv.group(3)), int(conv.group(2))
        wanted.append(_with_dim(shape, 1, want))
        if shape[1] != got and shape[1] * want % got == 0:
            # the convolution takes more than this input (``torch.cat`` of the inputs and
            # what is made of them): each input's channels in the same proportion
            wanted.append(_with_dim(shape, 1, shape[1] * want // got))
    elif (mint := _MINT_CONV.search(error)) is not None and len(shape) > 1:
        groups = max(1, shape[1] // max(1, int(mint.group(1))))
        wanted.append(_with_dim(shape, 1, int(mint.group(2)) * groups))
    elif (norm := _NORM.search(error)) is not None and len(shape) > 1:
        wanted.append(_with_dim(shape, 1, int(norm.group(1))))
    for pattern in _LAST:
        if (width := pattern.search(error)) is not None:
            got, want = int(width.group(1)), int(width.group(2))
            if len(shape) >= 3:  # a feature map flattened: as much wider as it asks
                wanted.append(_scaled_sides(shape, want / got))
            if len(shape) >= 4:
                wanted.append(_stepped_sides(shape, want > got))
            if len(shape) <= 3:
                wanted.append(_with_dim(shape, len(shape) - 1, want))
            if len(shape) == 2 and got == shape[1] and pattern is _LAST[0]:
                # the width went in, and a product of two computed tensors failed: an
                # attention over tokens (``rearrange(q, 'b n (h d) -> ...')``) wants them
                wanted.append((shape[0], 8, shape[1]))
    if (sizes := _RESHAPE.search(error)) is not None:
        wanted += _reshaped(shape, _numbers(sizes.group(1)), int(sizes.group(2)))
    wanted += _broadcast(shape, error)
    if not wanted and len(shape) in (2, 3) and _SHAPE_INDEX.search(error):
        # an axis read past the input's last one (``s__[2]`` of a (batch, width) input):
        # one more dimension, tokens of that width first
        if len(shape) == 2:
            wanted.append((shape[0], 8, shape[1]))
        wanted.append(_with_rank(shape, len(shape) + 1))
    if _TOO_SMALL.search(error) and len(shape) >= 3:  # a kernel larger than what is left
        wanted.append(_scaled_sides(shape, 4.0))
    if (norm := _LAYER_NORM.search(error)) is not None:
        tail = _numbers(norm.group(1))
        if 0 < len(tail) < len(shape):
            wanted.append((*shape[:len(shape) - len(tail)], *tail))
        elif tail:
            wanted.append((2, *tail))
    out = _replaced(arrays, first, wanted)
    at = next(i for i, a in enumerate(arrays) if a is first)
    if _SCALAR.search(error):  # a later input is read as a number: a step, an index
        out += [[0 if i == later else a for i, a in enumerate(arrays)]
                for later, a in enumerate(arrays) if later > at and isinstance(a, np.ndarray)]
    return out


def _replaced(arrays: list[Any], first: Any, shapes: list[tuple[int, ...]]
              ) -> list[list[Any]]:
    """``arrays`` with the first tensor (and every other input of its shape) made anew
    in each of ``shapes`` that is new and small enough; also with only the first
    changed, when others shared its shape."""
    shape = tuple(first.shape)
    rng = np.random.default_rng(0)
    out = []
    at = next(i for i, a in enumerate(arrays) if a is first)
    repeated = any(isinstance(a, np.ndarray) and a.shape == shape and i != at
                   for i, a in enumerate(arrays))
    for new in dict.fromkeys(w for w in shapes if w != shape and 0 < len(w) <= 6
                             and all(0 < d <= 4096 for d in w)
                             and math.prod(w) <= _LARGEST_INPUT):
        made = rng.integers(0, max(1, int(first.max()) + 1), new).astype(first.dtype) \
            if first.dtype.kind in "iu" else rng.standard_normal(new).astype(first.dtype)
        out.append([made if isinstance(a, np.ndarray) and a.shape == shape else a
                    for a in arrays])
        if repeated:  # the other inputs may be something else the guess did not know
            out.append([made if i == at else a for i, a in enumerate(arrays)])
    return out


# For each (batch and channels, width wanted): the largest side of an image whose
# flattened features fell short of the width, and the smallest whose features exceeded it.
Bounds = dict[tuple[object, ...], list[int]]


def bracketed(arrays: list[Any], error: str, bounds: Bounds) -> list[list[Any]]:
    """A feature map flattened into a layer of fixed width grows with the image's sides,
    but through convolutions and pooling by no fixed ratio (a 16-pixel image gives 64
    features, a 48-pixel one 5184, where 576 are wanted). Once one side fell short and
    another went beyond, the side halfway between is tried (24 here), so the search
    closes in on the side the layer was built for. ``bounds`` keeps what each error
    said."""
    first = next((a for a in arrays if isinstance(a, np.ndarray)), None)
    width = next((found for pattern in _LAST if (found := pattern.search(error))), None)
    if first is None or first.ndim < 4 or width is None:
        return []
    got, want = int(width.group(1)), int(width.group(2))
    side = int(first.shape[2])
    low, high = bounds.setdefault((*first.shape[:2], want), [0, 0])
    if got < want:
        low = max(low, side)
    elif got > want:
        high = min(high, side) if high else side
    bounds[(*first.shape[:2], want)] = [low, high]
    if not (low and high and high - low > 1):
        return []
    middle = (low + high) // 2
    sides = tuple(max(1, round(int(d) * middle / side)) for d in first.shape[2:])
    return _replaced(arrays, first, [(*first.shape[:2], *sides)])


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def _reshaped(shape: tuple[int, ...], proposed: tuple[int, ...], got: int
              ) -> list[tuple[int, ...]]:
    """Inputs for a reshape of ``got`` values to ``proposed`` sizes that do not hold them."""
    want = math.prod(proposed)
    if got <= 0 or any(v < 0 for v in proposed):  # a size left open (-1): nothing to read
        return []
    if 0 in proposed:
        # a size divided down to nothing (``c // (r * r)``): the channels are what the
        # other sizes leave of the product (``(2, 16, 16, 0, 8, 8)`` of a 2 x 8 x 8
        # feature map: 256 channels)
        rest = math.prod(v for v in proposed if v)
        others = math.prod(shape) // shape[1] if len(shape) >= 3 else 0
        if others and rest % others == 0 and rest // others > shape[1]:
            return [_with_dim(shape, 1, rest // others)]
        return []
    if len(shape) >= 4:  # a feature map reshaped to sizes the image gives another count for
        return [_scaled_sides(shape, want / got), _stepped_sides(shape, want > got)]
    if len(shape) == 3 and shape[1] * want % got == 0:
        # a sequence of tokens laid out as a grid (``x.view(B, 14, 14, C)``): as many
        # tokens as the grid has
        return [_with_dim(shape, 1, shape[1] * want // got)]
    return []


# Two shapes that do not broadcast: an addition's or a product's operands, a mask and
# what it masks, a tensor and the shape it is broadcast to.
_BROADCAST = (re.compile(r"\.shape = \[([\d, ]*)\] and \w+\.shape = \[([\d, ]*)\]"),
              re.compile(r"x_shape: \(([\d, ]*)\), target shape: \(([\d, ]*)\)"))


def _broadcast(shape: tuple[int, ...], error: str) -> list[tuple[int, ...]]:
    """Inputs whose sizes broadcast with what the Cell adds to them or multiplies them by
    (a position table, a relative-position bias, an attention mask), as ``error`` says.
    When the input is one of the two operands, it takes the other's sizes where they
    differ (the batch kept); when the operands were computed from it, a size of the
    input that one operand has where the other has another becomes the other's (a
    sequence of 8 tokens whose attention scores meet a bias for 1024)."""
    for pattern in _BROADCAST:
        if (found := pattern.search(error)) is not None:
            break
    else:
        return []
    first, second = _numbers(found.group(1)), _numbers(found.group(2))
    if shape in (first, second):
        other = second if shape == first else first
        if len(other) > len(shape):  # the other has more dimensions: the input has them too
            return [(shape[0], *other[1:]), (shape[0], *other)]
        new = list(shape)
        for i in range(1, min(len(other), len(shape) - 1) + 1):
            if other[-i] != 1:
                new[-i] = other[-i]
        return [tuple(new)]
    out = []
    for one, two in zip(reversed(first), reversed(second), strict=False):  # right-aligned
        if one == two or 1 in (one, two):
            continue
        for have, want in ((one, two), (two, one)):
            out += [_with_dim(shape, i, want) for i in range(1, len(shape)) if shape[i] == have]
    return list(dict.fromkeys(out))


# The most values an input the search makes may hold: one run on more (192 channels of a
# 224 x 224 image) can take longer than the whole search may.
_LARGEST_INPUT = 1 << 22


# A tensor of many values read as one number (``if step:``, ``table[step]``).
_SCALAR = re.compile(r"should have only one element|Only one element tensors|only integer "
                     r"tensors of a single element")


def _ranks(error: str, rank: int) -> list[int]:
    """The ranks ``error`` asks for, the likelier first."""
    for pattern in _RANK:
        if (found := pattern.search(error)) is not None:
            return [int(found.group(1))]
    for pattern, past in _LEAST_RANK:
        if (found := pattern.search(error)) is not None:
            least = int(found.group(1)) + past
            return [r for r in (4, least, least + 1) if r >= max(least, rank + 1)][:2]
    return []


def _with_rank(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """``shape`` as ``rank`` dimensions: the batch and the channels kept, then 16s
    (8s past four dimensions, a volume); fewer dimensions keep the first ones."""
    if rank <= len(shape):
        return shape[:max(1, rank - 1)] + shape[-1:] if rank > 1 else shape[:1]
    side = 16 if rank <= 4 else 8
    head = shape[:2] if len(shape) >= 2 else (*shape, side)
    return (*head, *([side] * (rank - len(head))))


def _scaled_sides(shape: tuple[int, ...], area: float) -> tuple[int, ...]:
    """``shape`` with its spatial sides (after the batch and channels) scaled for their
    product to grow by ``area``: a Dense layer after the convolutions wants a feature map
    ``area`` times as large (an image of 80 x 80 where 16 x 16 was tried)."""
    sides = len(shape) - 2
    scale = area ** (1 / sides)
    new = tuple(max(1, round(side * scale)) for side in shape[2:])
    return (*shape[:2], *new)


def _stepped_sides(shape: tuple[int, ...], larger: bool) -> tuple[int, ...]:
    """``shape`` with its spatial sides 4 larger or smaller: unpadded kernels take a
    constant off every side, so a feature map's size is not proportional to the image's
    (28 x 28 where 32 x 32 gave four times too much, and 16 x 16 too little)."""
    step = 4 if larger else -4
    return (*shape[:2], *(max(1, side + step) for side in shape[2:]))


def _with_dim(shape: tuple[int, ...], index: int, size: int) -> tuple[int, ...]:
    return (*shape[:index], size, *shape[index + 1:])


def _flush() -> None:
    """Wait for the kernels in flight, dropping the error one of them raises. PyNative's
    executor waits on any device (``ms.runtime.synchronize`` refuses the CPU, and only
    logs that it does)."""
    with contextlib.suppress(Exception):  # the pending error belongs to the failed run
        from mindspore.common.api import _pynative_executor

        _pynative_executor.sync()


def _shape_text(inputs: list[Any]) -> str:
    def one(a: Any) -> str:
        if isinstance(a, (list, tuple)):
            return f"[{_shape_text(list(a))}]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k}: {one(v)}" for k, v in a.items()) + "}"
        if a is None or isinstance(a, int):
            return str(a)
        return f"{tuple(a.shape)}{'' if 'float' in str(a.dtype).lower() else ' int'}"
    return ", ".join(one(a) for a in inputs)


def _load_torch(ms: Any, cell: Any, weights: dict[str, Any],
                npz: Path) -> tuple[Any, list[Any]]:
    """Copy the torch module's weights into the Cell; return the torch output and the
    input it was computed from."""
    data = np.load(npz)
    params = {p.name: p for p in cell.get_parameters()}
    for key in data.files:
        if not key.startswith("param:"):
            continue
        name = weights["params"].get(key[len("param:"):])
        if name is None or name not in params:
            continue
        value = fit_shape(data[key], tuple(params[name].shape))
        params[name].set_data(ms.Tensor(value).astype(params[name].dtype))
    inputs = [[data[f"input:{i}:{j}"] for j in range(int(data[f"input:{i}:listed"]))]
              if f"input:{i}:listed" in data.files
              else {str(k): data[f"input:{i}:{k}"] for k in data[f"input:{i}:keyed"]}
              if f"input:{i}:keyed" in data.files
              else int(data[f"input:{i}:int"]) if f"input:{i}:int" in data.files
              else data[f"input:{i}"] if f"input:{i}" in data.files else None
              for i in range(int(data["inputs"]))]
    return np.asarray(data["output"], dtype=np.float64), inputs


def _say(res: dict[str, Any]) -> None:
    """One result line to the parent."""
    sys.stdout.write(MARK + json.dumps(res) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    """Run the job file given on the command line."""
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    import mindspore as ms

    # After MindSpore is loaded, so that a repository file named like a module MindSpore
    # imports (types.py, logging.py) cannot stand in for it.
    sys.path.insert(0, job["root"])

    ms.set_device("CPU")
    announce_ready()
    for cell_job in job["cells"]:
        try:
            res = run_cell(ms, cell_job, job["root"], _say)
        except Exception as exc:  # keep the batch going
            traceback.print_exc(file=sys.stderr)
            res = {"key": cell_job["key"], "pynative": "fail", "graph": "fail",
                   "error": first_line(exc)}
        _say(res)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
