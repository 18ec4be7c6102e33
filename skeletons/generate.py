"""``out/skeletons/``: one MindSpore file per repository file that defines ``nn.Module``
classes (and per repository file those import), mirroring the repository's paths, each
Cell executed in PyNative and GRAPH_MODE and marked pass / fail / skipped."""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from msready import __version__
from msready.analyzer.facts import FileResult
from msready.analyzer.findings import Category, Finding
from msready.analyzer.parse import Parsed
from msready.analyzer.result import ScanResult, SkeletonResult
from msready.analyzer.scan import default_cache_dir
from msready.analyzer.syntax import forget_searches, tensor_methods
from msready.skeletons import adapters, module_level, ms_facts, runner
from msready.skeletons.adapters import repository_roots
from msready.skeletons.arguments import SYNTHESIZED_MODULE, SYNTHESIZED_SOURCE, describe
from msready.skeletons.cache import CellCache
from msready.skeletons.error_text import stable_error
from msready.skeletons.generation_cache import (
    GeneratedSet,
    GenerationCache,
    stamps,
    written_since,
)
from msready.skeletons.inputs import specs_json
from msready.skeletons.model_reads import ModelReads, repository_tops
from msready.skeletons.plan_cache import PlanCache
from msready.skeletons.recorded import Recorder
from msready.skeletons.shapes import Plan, Planner
from msready.skeletons.training_run import build_train_steps
from msready.skeletons.translate import import_safe, translate_file
from msready.skeletons.translation_cache import TranslationCache
from msready.skeletons.values import ConfigValue, to_json

# Hazards the translator cannot see from one call: they become TODO comments in the Cell.
_TODO_CATEGORIES = frozenset({Category.DYNAMIC_SHAPE, Category.SPARSE, Category.SECOND_ORDER,
                              Category.GRAPH_SYNTAX})
NOT_RUN = "not run (--skeletons write)"
NOTEBOOK = "defined in a notebook: move the class to a .py file to get a starter Cell"
# How MindSpore says an operator has no kernel on the device it runs on.
_KERNEL_MISSING = ("unregistered", "Kernel select failed", "not supported on CPU")


@dataclass(slots=True)
class Generated:
    """One written file: its torch source, where it went and the Cells it holds."""

    file: FileResult
    out: Path
    body: str
    plans: list[Plan] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)  # class name -> status line
    weights: dict[str, Any] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # side libraries bound to the stand-in


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("msready.skeletons", "templates"),
                             autoescape=False, keep_trailing_newline=True)
    return env.get_template("cell_file.py.j2")


def render(result: ScanResult, gen: Generated) -> str:
    """The generated file's text, with the run status of its Cells at the top."""
    lines = [f"{name}: {text}" for name, text in gen.status.items()]
    return _template().render(status_lines=lines, version=__version__,
                              source_path=gen.file.path, target=result.target,
                              body=gen.body.strip("\n"))


def _stub(classes: list[str], reason: str) -> str:
    """Cells that only say why the translation failed; they always parse. A file with no
    Cell (helpers other files import) says it too, at its top."""
    text = " ".join(reason.split())[:200]
    parts = [f"class {name}(nn.Cell):\n    # TODO(msready MS100): the translation did not "
             f"produce valid Python ({text})\n    def construct(self, *inputs):\n"
             f"        raise NotImplementedError({name!r})\n" for name in classes]
    return "\n\n".join(parts) or (f"# TODO(msready MS100): the translation of this file did "
                                   f"not produce valid Python ({text})\n")


def _files_to_write(result: ScanResult, extra: list[str]) -> list[FileResult]:
    """Files defining Module classes, the modules of the configuration objects the Cells
    are built with (``extra``), and the repository files they import."""
    model = result.model
    wanted: list[str] = []
    for cls in sorted(model.module_classes):
        module = model.class_module.get(cls)
        if module and module not in wanted:
            wanted.append(module)
    wanted += [m for m in dict.fromkeys(extra) if m in model.modules and m not in wanted]
    i = 0
    while i < len(wanted):
        file = model.modules[wanted[i]]
        for target in file.bindings.values():
            parts = target.split(".")
            for cut in range(len(parts), 0, -1):  # the module a name is imported from
                prefix = ".".join(parts[:cut])
                if prefix in model.modules and prefix not in wanted:
                    wanted.append(prefix)
                    break
            resolved = model.resolve(target, file.module)
            if resolved is None or resolved.kind == "external":
                continue
            module = (resolved.name if resolved.kind == "module" else
                      model.class_module.get(resolved.name) or
                      model.function_module.get(resolved.name))
            if module and module in model.modules and module not in wanted:
                wanted.append(module)
        i += 1
    return [model.modules[w] for w in wanted
            if model.modules[w].path.endswith(".py")]


def _translate(result: ScanResult, planner: Planner, file: FileResult,
               findings: list[Finding], translations: TranslationCache,
               ) -> tuple[str, list[str]]:
    """The body of one generated file and the side libraries it replaced by stand-ins."""
    cells = [c.name for c in file.classes if c.qualname in result.model.module_classes]
    text = result.sources.get((file.path, None))
    if text is None:
        return _stub(cells, "the source text was not kept by the scan"), []

    def translate(reads: ModelReads) -> tuple[str, list[str]]:
        parsed = planner.parsed(file.path)  # parsed only when not kept
        if not isinstance(parsed, Parsed):
            return _stub(cells, "the source text was not kept by the scan"), []
        translation = translate_file(parsed, file, reads, result.target, findings)
        with warnings.catch_warnings():  # the repository's own `x is 1` is not ours to print
            warnings.simplefilter("ignore")
            compile(translation.code, file.path, "exec")  # also what ast.parse lets through
        return translation.code, translation.dropped

    try:
        return translations.translate(text, file, findings, translate)
    except Exception as exc:  # a failed translation still yields a file
        return _stub(cells, f"{type(exc).__name__}: {exc}"), []


def build_skeletons(result: ScanResult, out_dir: Path, run: bool,
                    compare_torch: bool, cache: bool = True,
                    cache_dir: Path | None = None) -> list[SkeletonResult]:
    """Write a MindSpore Cell for every ``nn.Module`` class, run them, return the results.
    A re-scan of unchanged code writes back what the last generation wrote
    (:mod:`msready.skeletons.generation_cache`)."""
    out_dir = out_dir.resolve()  # the child processes run elsewhere and import from here
    generations = GenerationCache(result, run, compare_torch, cache_dir, enabled=cache)
    kept = generations.get()
    if kept is not None:
        return kept.restore(out_dir, result)
    before, warned = stamps(out_dir), len(result.warnings)
    ms_facts.remember_in((cache_dir or default_cache_dir()) if cache else None)
    try:
        with repository_roots(name.split(".")[0] for name in result.model.modules):
            results = _generate(result, out_dir, run, compare_torch, cache_dir, cache)
    finally:
        forget_searches()
        ms_facts.save()
    generations.put(GeneratedSet(written_since(out_dir, before), results, result.train_steps,
                                 result.warnings[warned:]))
    return results


def _generate(result: ScanResult, out_dir: Path, run: bool, compare_torch: bool,
              cache_dir: Path | None, cache: bool) -> list[SkeletonResult]:
    by_path: dict[str, list[Finding]] = {}
    for finding in result.findings:
        if finding.category in _TODO_CATEGORIES:
            by_path.setdefault(finding.location.path, []).append(finding)
    planner = Planner(result)

    def plan_all(recorder: Recorder | None) -> dict[str, Plan]:
        planner.recording(recorder)
        try:
            return {cls: _plan(planner, cls) for cls in sorted(result.model.module_classes)}
        finally:
            planner.recording(None)

    plans = PlanCache(result, cache_dir, enabled=cache).plans(plan_all)
    extra = [module for plan in plans.values() for module in _config_modules(plan.kwargs)]
    tops = repository_tops(result.model)
    purity = module_level.RepositoryPurity(
        result.model, planner.parsed, lambda name: import_safe(name, result.target, tops))
    translations = TranslationCache(result.model, purity, result.target, cache_dir,
                                    enabled=cache)
    generated: list[Generated] = []
    for file in _files_to_write(result, extra):
        body, dropped = _translate(result, planner, file, by_path.get(file.path, []),
                                   translations)
        gen = Generated(file, out_dir / file.path, body, dropped=dropped)
        gen.plans = [plans[c.qualname] for c in file.classes if c.qualname in plans]
        generated.append(gen)
    packages = _write_packages(out_dir, generated, [
        f.path for f in result.model.modules.values() if f.path.endswith("__init__.py")])
    # What the runs can import, by path under out_dir: it keys the cached outcomes.
    tree = {gen.out.relative_to(out_dir).as_posix(): gen.body for gen in generated}
    tree.update((Path(path).as_posix(), "") for path in packages)
    if SYNTHESIZED_MODULE in extra:  # a made-up layer, also inside a made-up network
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{SYNTHESIZED_MODULE}.py").write_text(SYNTHESIZED_SOURCE, encoding="utf-8")
        tree[f"{SYNTHESIZED_MODULE}.py"] = SYNTHESIZED_SOURCE
    placed = {p.torch_class for gen in generated for p in gen.plans}
    elsewhere = [SkeletonResult(p.torch_class, p.path, p.line, "", "skipped", "skipped",
                                NOTEBOOK if p.path.endswith(".ipynb") else "source text not kept")
                 for cls, p in plans.items() if cls not in placed]
    store = CellCache(tree, cache_dir, enabled=cache)
    outcomes: dict[str, dict[str, Any]] = {}
    if run:
        outcomes = _run(result, out_dir, generated, compare_torch, store)
        _borrow_from_parents(plans, outcomes)
    results = list(elsewhere)
    for gen in generated:
        for plan in gen.plans:
            res = _result(gen, plan, out_dir, run, outcomes.get(plan.torch_class),
                          result.target)
            results.append(res)
            gen.status[plan.name] = _status_line(res)
            weights = (outcomes.get(plan.torch_class) or {}).get("weights")
            if weights:
                gen.weights[plan.name] = weights
        gen.out.parent.mkdir(parents=True, exist_ok=True)
        gen.out.write_text(render(result, gen), encoding="utf-8")
        if gen.weights:
            weights_file = gen.out.with_name(gen.out.name + ".weights.json")
            weights_file.write_text(json.dumps(gen.weights, indent=2) + "\n", encoding="utf-8")
    result.train_steps = build_train_steps(result, out_dir, run, plans, results, store)
    return results


def _borrow_from_parents(plans: dict[str, Plan], outcomes: dict[str, dict[str, Any]]) -> None:
    """A Cell that could not run on its own but was called by a parent Cell that passed
    takes the parent's result, with the input the parent gave it: the same generated
    class ran, with the arguments the repository gives it. "Could not run on its own":
    no constructor arguments, no input it accepts, or a failure with values msready made
    up (synthesized arguments or a guessed input) or refused by the code's own assertion
    (an optional argument the parent passes, left at its default), which is kept as a
    note."""
    for cls, plan in plans.items():
        own = outcomes.get(cls)
        failed = own is not None and own.get("pynative") != "pass"
        # synthesized arguments, or an input that is a guess (every input after the
        # first is one: the same tensor again), or one the code asserts against
        made_up = bool(plan.synthesized) or plan.guessed or len(plan.inputs) > 1 or (
            failed and own is not None and _pynative_part(own.get("error")).startswith(
                "PyNative: AssertionError"))
        # stopped by the time or memory limit in GRAPH_MODE only: a parent that ran it
        # in both modes proves GRAPH_MODE too
        stopped = own is not None and not failed and own.get("graph") != "pass" and \
            _too_big(own)
        if not ((plan.reason is not None and own is None) or ((failed or stopped)
                                                              and made_up)):
            continue
        parents = sorted((o.get("graph") != "pass", p) for p, o in outcomes.items()
                         if o.get("pynative") == "pass" and cls in (o.get("ran") or {}))
        if not parents or (stopped and outcomes[parents[0][1]].get("graph") != "pass"):
            continue
        name = parents[0][1]
        parent = outcomes[name]
        note = None
        if (failed or stopped) and own is not None and own.get("input_fits") is not False:
            values = describe(plan.synthesized)
            how = f", with values msready made up ({values})" if values else ""
            note = f"alone{how}: {own.get('error')}"
        outcomes[cls] = {"pynative": "pass", "graph": parent.get("graph"),
                         "error": note or parent.get("error"), "inside": name,
                         "input_shape": parent["ran"][cls]}
        plan.reason = None


def _plan(planner: Planner, cls: str) -> Plan:
    """The run plan of one class; a planner bug skips that Cell, never the scan."""
    try:
        return planner.plan(cls)
    except Exception as exc:  # an unexpected shape of code loses only this Cell's run
        fact = planner.model.classes[cls]
        file = planner.file_of(cls)
        return Plan(cls, fact.name, file.module if file else "", file.path if file else "",
                    fact.span.line, reason=f"msready could not plan this Cell ({exc!r:.120})")


def _config_modules(value: object) -> list[str]:
    """The modules of the configuration objects inside constructor arguments."""
    if isinstance(value, ConfigValue):
        return [value.module, *_config_modules(dict(value.kwargs))]
    if isinstance(value, dict):
        return [m for v in value.values() for m in _config_modules(v)]
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _config_modules(v)]
    return []


def _write_packages(out_dir: Path, generated: list[Generated], packages: list[str]
                    ) -> list[str]:
    """``__init__.py`` in every folder between the output root and a generated file, and
    in the folders of the repository's other packages under the same top-level package
    (``packages``, paths of their ``__init__.py``): a package of compiled extensions only
    (``torchaudio/lib``) still exists, so ``importlib.util.find_spec("pkg.lib._ext")``
    answers None (not there) instead of failing the import of the whole package. Returns
    the paths of those other packages' files."""
    written = {g.out for g in generated}
    tops = {g.out.relative_to(out_dir).parts[0] for g in generated}
    others = [path for path in packages if len(Path(path).parts) > 1
              and Path(path).parts[0] in tops and out_dir / path not in written]
    for path in others:
        init = out_dir / path
        if not init.exists():
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text("", encoding="utf-8")
    for gen in generated:
        folder = gen.out.parent
        while folder != out_dir and out_dir in folder.parents:
            init = folder / "__init__.py"
            if init not in written and not init.exists():
                folder.mkdir(parents=True, exist_ok=True)
                init.write_text("", encoding="utf-8")
            folder = folder.parent
    return others


def _missing_package(error: str | None, out_dir: Path) -> str | None:
    """The package a Cell needs and the child could not import, None otherwise."""
    if not error or "No module named" not in error:
        return None
    name = error.split("No module named", 1)[1].strip(" '\"").split("'")[0].split(".")[0]
    if not name or (out_dir / name).exists() or (out_dir / f"{name}.py").exists():
        return None
    return name


_NO_FILE = re.compile(r"^building the Cell: FileNotFoundError: \[Errno 2\] No such file or "
                      r"directory: '([^']+)'")


def _missing_file(error: str | None) -> str | None:
    """The data file a Cell's constructor could not open, None otherwise: the check needs
    the repository's data, the translation is not known to be wrong (torch's constructor
    fails the same way from another folder)."""
    found = _NO_FILE.match(error or "")
    return found.group(1) if found else None


def _result(gen: Generated, plan: Plan, out_dir: Path, run: bool,
            outcome: dict[str, Any] | None, target: str) -> SkeletonResult:
    cell_file = gen.out.relative_to(out_dir.parent).as_posix()
    # a Cell that ran inside its parent ran with the parent's values, none made up; one
    # built with wider made-up sizes says which
    variant = int((outcome or {}).get("variant") or 0)
    made_up = plan.variants[variant - 1].synthesized if 0 < variant <= len(plan.variants) \
        else plan.synthesized
    if (outcome or {}).get("smaller") and plan.smaller is not None:
        made_up = plan.smaller.synthesized
    synthesized = "" if (outcome or {}).get("inside") else describe(made_up)
    left_out = (outcome or {}).get("weights_left_out")
    if left_out:  # checkpoint files that are not MindSpore's: built with initial weights
        synthesized = ", ".join(filter(None, (
            synthesized, "initial weights, not those of " + ", ".join(left_out) +
            " (not a MindSpore checkpoint: msready convert makes one)")))

    def skipped(status: str, error: str | None, shape: str = "") -> SkeletonResult:
        return SkeletonResult(plan.torch_class, plan.path, plan.line, cell_file, "skipped",
                              "skipped", error, status=status, synthesized=synthesized,
                              input_shape=shape)

    if not run:
        return skipped("skipped", NOT_RUN)
    if plan.reason is not None or outcome is None:
        return skipped("unverified", plan.reason or "not run")
    diff = outcome.get("max_abs_diff")
    error = stable_error(outcome.get("error"))
    shape = str(outcome.get("input_shape") or "")
    package = _missing_package(error, out_dir)
    if package is not None:
        return skipped("blocked", f"needs the package `{package}`, which msready does not "
                                  f"translate: {error}")
    ecosystem = _ecosystem_api(error)
    if ecosystem is not None:  # torchvision's ResNet: a package of its own, not torch
        return skipped("blocked", f"needs `{ecosystem}` from the torch ecosystem, whose "
                                  "MindSpore counterparts (MindCV, MindAudio, MindNLP) msready "
                                  f"does not provide: {error}")
    wanted = _missing_file(error)
    if wanted is not None:  # ``open("yolov5s.yaml")`` while building: the code needs its data
        return skipped("unverified", f"the constructor opens `{wanted}`, which is not where "
                                     "the code looks for it when the Cell is checked (a "
                                     f"path relative to the current folder?): {error}", shape)
    if error and adapters.STAND_IN in error:  # it ran into a side library's stand-in
        which = ", ".join(f"`{d}`" for d in gen.dropped) or "a side library"
        return skipped("blocked", f"runs code from {which}, which msready does not "
                                  f"translate (a stand-in was reached): {error}")
    if outcome.get("pynative") != "pass" and outcome.get("input_fits") is False \
            and plan.guessed and not _translation_error(error):
        return skipped("unverified", "no input it accepts was found (no layer or forward "
                                     f"code gives its shape; tried {len(plan.alternatives) + 1}"
                                     f" guesses): {error}", shape)
    if error and target != "cpu" and any(k in error for k in _KERNEL_MISSING):
        error += (f" (the Cell uses {target} APIs and ran on this machine's CPU; "
                  "scan with --target cpu to check a CPU version)")
    pynative = str(outcome.get("pynative", "fail"))
    given_input, given_error = outcome.get("given_input") or ("", "")
    return SkeletonResult(plan.torch_class, plan.path, plan.line, cell_file, pynative,
                          str(outcome.get("graph", "fail")), error,
                          float(diff) if diff is not None else None,
                          status="pass" if pynative == "pass" else "fail",
                          synthesized=synthesized, input_shape=shape,
                          output_shape=str(outcome.get("output_shape") or ""),
                          ran_inside=str(outcome.get("inside") or ""),
                          given_input=str(given_input), given_error=str(given_error))


_TENSOR_ATTRIBUTE = re.compile(r"AttributeError: '(?:Tensor|Parameter)' object has no "
                               r"attribute '(\w+)'")


def _pynative_part(error: str | None) -> str:
    """The PyNative part of a Cell's error (before ``; GRAPH_MODE: ...``)."""
    return (error or "").split("; GRAPH_MODE: ", 1)[0]


# torch's companion packages: their networks and operators are packages of their own.
_ECOSYSTEM_LEFT = re.compile(r"NotImplementedError: ((?:torchvision|torchaudio|torchtext)"
                             r"\.[\w.]+) " + re.escape(adapters.LEFT_IN_CELL))


def _ecosystem_api(error: str | None) -> str | None:
    """The torchvision / torchaudio / torchtext API a Cell reached and has no MindSpore
    form for (``torchvision.models.resnet18``), None otherwise."""
    found = _ECOSYSTEM_LEFT.search(_pynative_part(error))
    return found.group(1) if found else None


def _translation_error(error: str | None) -> bool:
    """True when a Cell's PyNative error is the translation's whatever the input: a torch
    API left in the Cell, or a torch tensor method MindSpore's tensors lack."""
    pynative = _pynative_part(error)
    if adapters.LEFT_IN_CELL in pynative:
        return True
    found = _TENSOR_ATTRIBUTE.search(pynative)
    return found is not None and found.group(1) in tensor_methods()


def _status_line(res: SkeletonResult) -> str:
    made_up = f" (synthesized: {res.synthesized})" if res.synthesized else ""
    if res.pynative == "skipped":
        return f"{res.status or 'skipped'}{made_up}: {res.error}"
    text = f"PyNative {res.pynative}, GRAPH_MODE {res.graph}"
    if res.input_shape:
        text += f", input {res.input_shape}"
    if res.output_shape:
        text += f" -> {res.output_shape}"
    text += made_up
    if res.given_input:
        text += (f" (input found by search: its layers give {res.given_input}, which fails "
                 f"with {res.given_error})")
    if res.ran_inside:
        text += f" (run inside {res.ran_inside.rsplit('.', 1)[-1]})"
    if res.max_abs_diff is not None:
        text += f", max |torch - mindspore| = {res.max_abs_diff:.3g}"
    return f"{text}: {res.error}" if res.error else text


def _job(plan: Plan, compare: Path | None) -> dict[str, Any]:
    nested = plan.torch_class.removeprefix(f"{plan.module}.")  # ``Outer.Inner``
    return {"key": plan.torch_class, "module": plan.module, "name": nested,
            "kwargs": {k: to_json(v) for k, v in plan.kwargs.items()},
            "compare": str(compare) if compare else None,
            "inputs": specs_json(plan.inputs),
            # every input is a guess: the child may follow what the errors ask for
            "guessed": plan.guessed and not compare,
            "alternatives": [] if compare else [specs_json(a) for a in plan.alternatives],
            "variants": [] if compare else [
                {"kwargs": {k: to_json(v) for k, v in variant.kwargs.items()},
                 "inputs": specs_json(variant.inputs),
                 "alternatives": [specs_json(a) for a in variant.alternatives]}
                for variant in plan.variants]}


def _workers() -> int:
    """Generated files run in parallel, one child each, on half the cores (at most 4):
    MindSpore already uses several threads per process."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def _run(result: ScanResult, out_dir: Path, generated: list[Generated],
         compare_torch: bool, store: CellCache) -> dict[str, dict[str, Any]]:
    """Run every runnable Cell. Without a torch comparison, the Cells of all files are
    shared among a few workers, each importing MindSpore once; outcomes are cached."""
    outcomes: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="msready-cmp-") as tmp:
        torch_root = Path(tmp) / "src"
        if compare_torch:
            _write_sources(result, torch_root)
        for gen in generated:
            # One status line per Cell now, the same number as the final file has, so
            # the lines errors name are the lines the user reads.
            gen.status = {plan.name: "running" for plan in gen.plans}
            gen.out.parent.mkdir(parents=True, exist_ok=True)
            gen.out.write_text(render(result, gen), encoding="utf-8")
        todo = [(i, gen) for i, gen in enumerate(generated)
                if any(p.reason is None for p in gen.plans)]
        if compare_torch:
            def one(item: tuple[int, Generated]) -> dict[str, dict[str, Any]]:
                index, gen = item
                return _run_file(gen, out_dir, torch_root, Path(tmp) / f"cmp{index}")

            with ThreadPoolExecutor(max_workers=_workers()) as pool:
                for got in pool.map(one, todo):
                    outcomes.update(got)
            return outcomes
        jobs = [_job(p, None) for _, gen in todo for p in gen.plans if p.reason is None]

        def batch(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
            try:
                return runner.run_jobs("msready.skeletons.child", {"root": str(out_dir)},
                                       cells, runner.CELL_TIMEOUT, runner.CELL_MEMORY)
            except OSError as exc:
                return _failed_start(cells, exc)

        def run_all(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
            """Outcomes of ``cells``: cached ones, the others run by a few workers."""
            got, pending = store.split(cells)
            shares = [pending[i::_workers()] for i in range(_workers())]
            with ThreadPoolExecutor(max_workers=_workers()) as pool:
                for share in pool.map(batch, [s for s in shares if s]):
                    got.update(share)
            store.keep(pending, got)
            return got

        outcomes.update(run_all(jobs))
        plans = {p.torch_class: p for _, gen in todo for p in gen.plans}
        smaller = [_smaller_job(plans[key]) for key, outcome in outcomes.items()
                   if _too_big(outcome) and plans[key].smaller is not None]
        # a second round: the Cells too big at the repository's sizes
        for key, outcome in run_all(smaller).items():
            outcomes[key] = _ran_smaller(outcomes[key], outcome)
    return outcomes


def _too_big(outcome: dict[str, Any]) -> bool:
    """A run stopped by the time or memory limit (the size, not the translation)."""
    error = str(outcome.get("error") or "")
    return error.startswith(("timed out after", "stopped: it held more than"))


def _smaller_job(plan: Plan) -> dict[str, Any]:
    """The job of ``plan``'s smaller variant (under the Cell's own key)."""
    assert plan.smaller is not None
    small = plan.smaller
    return {**_job(plan, None), "kwargs": {k: to_json(v) for k, v in small.kwargs.items()},
            "inputs": specs_json(small.inputs),
            "alternatives": [specs_json(a) for a in small.alternatives], "variants": [],
            "smaller": True}


def _ran_smaller(first: dict[str, Any], small: dict[str, Any]) -> dict[str, Any]:
    """The outcome of the smaller run, saying why it was needed; the first outcome when
    the smaller one ran out of time or memory too, or when the first was stopped only in
    GRAPH_MODE and the smaller one does not run in PyNative."""
    if _too_big(small) or (first.get("pynative") == "pass" and small.get("pynative") != "pass"):
        return first
    limit = str(first["error"]).removeprefix("stopped: it ").split(",")[0]
    why = f"at the repository's sizes it {limit}; it ran with smaller made-up sizes"
    error = small.get("error")
    return {**small, "smaller": True, "error": f"{error} ({why})" if error else why}


def _failed_start(jobs: list[dict[str, Any]], exc: OSError) -> dict[str, dict[str, Any]]:
    return {j["key"]: {"pynative": "fail", "graph": "fail",
                       "error": f"cannot start the child process: {exc}"} for j in jobs}


def _run_file(gen: Generated, out_dir: Path, torch_root: Path,
              compare_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Run the Cells of one generated file (after the torch modules, when comparing)."""
    runnable = [p for p in gen.plans if p.reason is None]
    compares: dict[str, Path] = {}
    torch_errors: dict[str, dict[str, Any]] = {}
    if compare_dir is not None:
        compare_dir.mkdir(parents=True, exist_ok=True)
        compares = {p.torch_class: compare_dir / f"{i}.npz" for i, p in enumerate(runnable)}
        jobs = [_job(p, compares[p.torch_class]) for p in runnable]
        try:
            torch_errors = runner.run_jobs("msready.skeletons.torch_child",
                                           {"torch_root": str(torch_root)}, jobs)
        except OSError as exc:
            torch_errors = _failed_start(jobs, exc)
    jobs = [_job(p, compares.get(p.torch_class)
                 if not (torch_errors.get(p.torch_class) or {}).get("error") else None)
            for p in runnable]
    try:
        got = runner.run_jobs("msready.skeletons.child", {"root": str(out_dir)}, jobs)
    except OSError as exc:
        got = _failed_start(jobs, exc)
    outcomes = {}
    for plan in runnable:
        outcome = got.get(plan.torch_class, {})
        torch_error = (torch_errors.get(plan.torch_class) or {}).get("error")
        if torch_error and not outcome.get("error"):
            outcome["error"] = torch_error
        outcomes[plan.torch_class] = outcome
    return outcomes


def _write_sources(result: ScanResult, root: Path) -> None:
    """The scanned files, rewritten into ``root`` so the torch child can import them."""
    for (path, cell), text in result.sources.items():
        if cell is not None or not path.endswith(".py"):
            continue
        dest = root / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
