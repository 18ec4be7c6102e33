"""``out/skeletons/train_steps/``: one MindSpore training step per training loop, built
on the model's generated Cell, run for one step on synthetic data in a child process
(:mod:`msready.skeletons.train_child`) and reported like a Cell."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import libcst as cst

from msready import __version__
from msready.analyzer.result import ScanResult
from msready.skeletons import apis
from msready.skeletons.inputs import ORDERS, input_alternatives, layer_input
from msready.skeletons.layers import CallIn, translate_call
from msready.skeletons.shapes import Plan
from msready.skeletons.training import LoopReader, TrainLoop
from msready.skeletons.training_loss import LossCode, LossWriter, literal
from msready.skeletons.training_values import UNKNOWN_VALUE, Construction
from msready.skeletons.values import ConfigValue, DictValue

FOLDER = "train_steps"
LAYER = "<torch layer>"  # the module of a Plan that builds a torch layer, not a Cell
# torch optimizer -> (MindSpore optimizer, torch keyword -> MindSpore keyword(s), the torch
# defaults MindSpore does not share). Each mapping is run by tests/test_skeletons_training.
OPTIMIZERS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "torch.optim.SGD": ("mindspore.nn.SGD", {"lr": "learning_rate"}, {"lr": 1e-3}),
    "torch.optim.Adam": ("mindspore.nn.Adam", {"lr": "learning_rate", "betas": (
        "beta1", "beta2"), "amsgrad": "use_amsgrad"}, {"lr": 1e-3}),
    "torch.optim.AdamW": ("mindspore.nn.AdamWeightDecay", {"lr": "learning_rate", "betas": (
        "beta1", "beta2")}, {"lr": 1e-3, "eps": 1e-8, "weight_decay": 1e-2}),
    "torch.optim.RMSprop": ("mindspore.nn.RMSProp", {"lr": "learning_rate", "alpha": "decay",
                                                     "eps": "epsilon"},
                            {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8}),
    "torch.optim.Adagrad": ("mindspore.nn.Adagrad", {"lr": "learning_rate",
                                                     "initial_accumulator_value": "accum"},
                            {"lr": 1e-2, "initial_accumulator_value": 0.0}),
    "torch.optim.Adadelta": ("mindspore.nn.Adadelta", {"lr": "learning_rate", "eps": "epsilon"},
                             {"lr": 1.0, "eps": 1e-6}),
    "torch.optim.Adamax": ("mindspore.nn.AdaMax", {"lr": "learning_rate", "betas": (
        "beta1", "beta2")}, {"lr": 2e-3, "eps": 1e-8}),
}
MS_KEYWORDS = {
    "mindspore.nn.SGD": {"learning_rate", "momentum", "dampening", "weight_decay", "nesterov"},
    "mindspore.nn.Adam": {"learning_rate", "beta1", "beta2", "eps", "weight_decay",
                          "use_amsgrad"},
    "mindspore.nn.AdamWeightDecay": {"learning_rate", "beta1", "beta2", "eps", "weight_decay"},
    "mindspore.nn.RMSProp": {"learning_rate", "decay", "momentum", "epsilon", "centered",
                             "weight_decay"},
    "mindspore.nn.Adagrad": {"accum", "learning_rate", "weight_decay"},
    "mindspore.nn.Adadelta": {"learning_rate", "rho", "epsilon", "weight_decay"},
    "mindspore.nn.AdaMax": {"learning_rate", "beta1", "beta2", "eps", "weight_decay"},
}
# Positional parameters after ``params`` (torch's order), for the optimizers above.
_ORDER = {"torch.optim.SGD": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
          "torch.optim.Adam": ("lr", "betas", "eps", "weight_decay", "amsgrad"),
          "torch.optim.AdamW": ("lr", "betas", "eps", "weight_decay", "amsgrad"),
          "torch.optim.RMSprop": ("lr", "alpha", "eps", "weight_decay", "momentum", "centered")}


@dataclass(slots=True)
class Step:
    """One generated training step before and after its run."""

    loop: TrainLoop
    loss: LossCode
    out: Path
    module: str
    plan: Plan | None = None
    optimizer: str = ""
    reasons: list[str] = field(default_factory=list)
    not_translated: list[str] = field(default_factory=list)
    render_args: dict[str, Any] = field(default_factory=dict)


def optimizer_code(torch_name: str, args: list[Any], kwargs: dict[str, Any],
                   ) -> tuple[str | None, list[str]]:
    """``nn.SGD(model.trainable_params(), learning_rate=0.1, ...)`` for a torch optimizer
    with the values read (:data:`UNKNOWN_VALUE` for unknown ones), and what was not
    translated; None when msready does not map the optimizer."""
    name = apis.canonical(torch_name)
    if name not in OPTIMIZERS:
        return None, []
    api, renames, defaults = OPTIMIZERS[name]
    given = dict(zip(_ORDER.get(name, ("lr",)), args[1:], strict=False))
    given.update(kwargs)
    given.pop("params", None)
    notes: list[str] = []
    values: dict[str, Any] = {}
    for key, value in given.items():
        if value is UNKNOWN_VALUE:
            fallback = defaults.get(key)
            notes.append(f"optimizer {key}: its value is not known statically; "
                         + (f"the torch default {fallback} is used" if fallback is not None
                            else "MindSpore's default is used"))
            if fallback is None:
                continue
            value = fallback
        values[key] = value
    for key, value in defaults.items():
        values.setdefault(key, value)
    out: list[str] = []
    for key, value in values.items():
        target = renames.get(key, key)
        if isinstance(target, tuple) and isinstance(value, tuple) and len(value) == len(target):
            out += [f"{t}={literal(_number(v))}" for t, v in zip(target, value, strict=True)]
        elif isinstance(target, str) and target in MS_KEYWORDS[api]:
            out.append(f"{target}={literal(_number(value))}")
        else:
            notes.append(f"optimizer {key}={literal(value)}: "
                         f"{apis.short_name(api)} has no such argument")
    return f"{apis.short_name(api)}(model.trainable_params(), {', '.join(out)})", notes


def _number(value: Any) -> Any:
    """MindSpore's optimizers want floats where torch takes ``momentum=0``."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def value_code(value: object, imports: list[tuple[str, str]]) -> str:
    """A constructor argument as source (configuration objects built from their Cell
    file's class), adding the imports it needs."""
    if isinstance(value, ConfigValue):
        if (value.module, value.name) not in imports:
            imports.append((value.module, value.name))
        inner = ", ".join(f"{k}={value_code(v, imports)}" for k, v in value.kwargs)
        if value.is_class and value.kwargs:  # the keywords a ``partial`` binds
            if ("functools", "partial") not in imports:
                imports.append(("functools", "partial"))
            return f"partial({value.name}, {inner})"
        if value.is_class:
            return value.name
        return f"{value.name}({inner})"
    if isinstance(value, DictValue):
        return "{" + ", ".join(f"{k!r}: {value_code(v, imports)}" for k, v in value.items) + "}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(value_code(v, imports) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return literal(value)


def cell_code(plan: Plan, imports: list[tuple[str, str]]) -> str:
    """``Net(dim=64)``: the Cell built with its plan's constructor arguments."""
    if (plan.module, plan.name) not in imports:
        imports.append((plan.module, plan.name))
    args = ", ".join(f"{k}={value_code(v, imports)}" for k, v in plan.kwargs.items())
    return f"{plan.name}({args})"


def step_name(loop: TrainLoop, module: str) -> str:
    """The generated module's name: the torch file's path and the function."""
    stem = re.sub(r"\W", "_", loop.path.removesuffix(".py").replace("/", "__"))
    inner = loop.function[len(module) + 1:] if loop.function.startswith(module + ".") \
        else "module"
    return stem + "__" + re.sub(r"\W", "_", inner.replace("<module>", "module"))


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("msready.skeletons", "templates"),
                             autoescape=False, keep_trailing_newline=True)
    return env.get_template("train_step.py.j2")


def prepare(result: ScanResult, out_dir: Path, plans: dict[str, Plan]) -> list[Step]:
    """Read every training loop and decide its step's code."""
    reader = LoopReader(result.model, result.sources)
    steps: list[Step] = []
    for loop in reader.loops():
        try:
            steps.append(_prepare_one(result, out_dir, plans, reader, loop))
        except Exception as exc:  # a loop msready trips on loses only its own step
            result.warnings.append(f"training step of {loop.function}: msready could not "
                                   f"generate it ({type(exc).__name__}: {exc})")
    return steps


def _prepare_one(result: ScanResult, out_dir: Path, plans: dict[str, Plan],
                 reader: LoopReader, loop: TrainLoop) -> Step:
    module_classes = result.model.module_classes
    imports: list[tuple[str, str]] = []

    def build(cls: str, imports: list[tuple[str, str]] = imports) -> tuple[
            str, str, str] | None:
        plan = plans.get(cls)
        if plan is None or plan.reason is not None:
            return None
        return cell_code(plan, imports), plan.module, plan.name

    writer = LossWriter(reader, result.target, module_classes, build)
    writer.trained = loop.optimizer.owner if loop.optimizer is not None else []
    loss = writer.write(loop.loss)
    file = result.model.files.get(loop.path)
    name = step_name(loop, file.module if file else "")
    step = Step(loop, loss, out_dir / FOLDER / f"{name}.py", f"{FOLDER}.{name}")
    step.reasons = [*loop.reasons, *loss.reasons]
    step.not_translated = [*loop.not_translated, *loss.not_translated]
    step.plan = plans.get(loss.model_class) if loss.model_class else None
    if loss.model_class and loss.model_class.startswith("torch.") and loss.model_layer:
        step.plan = layer_plan(loss.model_layer, result.target, step.reasons)
    if step.plan is not None and step.plan.reason is not None:
        step.reasons.append(f"the model's Cell ({step.plan.name}) cannot be built: "
                            f"{step.plan.reason}")
    model = "None  # TODO(msready MS100): the model's Cell"
    if step.plan is not None and step.plan.reason is None:
        model = step.plan.name if step.plan.module == LAYER else cell_code(step.plan, imports)
    if loop.optimizer is not None:
        code, notes = optimizer_code(loop.optimizer.torch, loop.optimizer.args,
                                     loop.optimizer.kwargs)
    else:
        code, notes = optimizer_code(loop.optimizer_name, [], {})
        if code is not None:
            notes.insert(0, "the optimizer's construction was not found: torch's "
                            "default hyper-parameters are used")
    step.not_translated += notes
    if code is None:
        step.reasons.append(f"optimizer {loop.optimizer_name or '(unknown)'} is not "
                            "mapped to a MindSpore optimizer")
        code = "None  # TODO(msready MS100): the optimizer"
    step.optimizer = code.replace("model.trainable_params(), ", "").replace(
        "model.trainable_params()", "")
    _write(result, step, model, code, imports, "not run yet")
    return step


def layer_plan(layer: Construction, target: str, reasons: list[str]) -> Plan | None:
    """How to build and feed a torch layer trained as the model (``nn.Linear(8, 1)``):
    its MindSpore form from the mapping engine, its input from its sizes."""
    if any(v is UNKNOWN_VALUE for v in [*layer.args, *layer.kwargs.values()]):
        reasons.append(f"the model {layer.torch}: an argument of its construction is not "
                       "known statically")
        return None
    args: list[tuple[str | None, cst.BaseExpression]] = [
        (None, cst.parse_expression(literal(v))) for v in layer.args]
    args += [(k, cst.parse_expression(literal(v))) for k, v in layer.kwargs.items()]
    rewrite = translate_call(CallIn(layer.torch, args, target))
    if rewrite.func is None:
        reasons.append(f"the model {layer.torch} has no MindSpore form for this target")
        return None
    code = cst.Module([]).code_for_node
    text = ", ".join(f"{k}={code(v)}" if k else code(v) for k, v in rewrite.args)
    order = ORDERS.get(layer.torch.rsplit(".", 1)[-1]) or apis.torch_order(layer.torch) or ()
    values: dict[str, object] = dict(zip(order, layer.args, strict=False))
    values.update(layer.kwargs)
    spec = layer_input(layer.torch, values)
    plan = Plan(layer.torch, f"{rewrite.func}({text})", LAYER, "", 0)
    plan.inputs = [spec] if spec is not None else input_alternatives(None, 1)[0]
    plan.alternatives = input_alternatives(spec, 1)
    return plan


def _params(plan: Plan | None) -> list[str]:
    count = max(1, len(plan.inputs)) if plan is not None else 1
    return ["data"] if count == 1 else [f"data{i}" for i in range(count)]


def _write(result: ScanResult, step: Step, model: str, optimizer: str,
           imports: list[tuple[str, str]], status: str) -> None:
    loop, loss = step.loop, step.loss
    data = _params(step.plan)
    positional = [*data, *loss.model_positional[len(data):]]
    clip = None
    if loop.clip is not None:
        kind, value = loop.clip
        clip = (f"ops.clip_by_global_norm(grads, {value!r})" if kind == "norm" else
                f"ops.clip_by_value(grads, {-value!r}, {value!r})")
    imports = [*imports, *[t.cell for t in loss.terms if t.cell and t.cell not in imports]]
    step.render_args = dict(
        version=__version__, source_path=loop.path, line=loop.line,
        function=loop.function, target=result.target, imports=imports, dropped=loop.dropped,
        todos=step.not_translated + step.reasons, unverified=bool(step.reasons),
        model=model, terms=loss.terms,
        optimizer=optimizer, loss_kind=loss.kind, params=", ".join([*data, "label"]),
        model_args=", ".join([*positional, *loss.model_extra]),
        loss=loss.expression if loss.model_class and step.plan is not None else "",
        clip=clip)
    write_step(step, status)


def step_text(step: Step, status: str = "") -> str:
    """A step's generated file, with ``status`` as its first line."""
    return _template().render(status_line=status, **step.render_args)


def write_step(step: Step, status: str) -> None:
    """(Re)write a step's file with its status line at the top."""
    step.out.parent.mkdir(parents=True, exist_ok=True)
    step.out.write_text(step_text(step, status), encoding="utf-8")
