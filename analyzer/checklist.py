"""The migration checklist the MindSpore migration guide asks for, filled from the code.

Sections: network structure, data pipeline and augmentation, learning-rate policy,
optimizer, training parameters, training process (EMA, AMP, gradient clipping,
accumulation, distributed), then the migration work list per category, ordered leaves first.
Every item carries the source location it was read from; what the code does not show is
listed as "not found", never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from msready.analyzer.checklist_source import SourceFact, name_words
from msready.analyzer.checklist_structure import (
    MAX_OTHER_NETWORKS,
    containment,
    leaves,
    top_networks,
    tree_text,
)
from msready.analyzer.configvalues import ConfigIndex, ConfigValue, scan_index
from msready.analyzer.facts import Arg, CallKind
from msready.analyzer.findings import Category
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.analyzer.result import ChecklistItem, ScanResult

NOT_FOUND = "not found"
REFERENCED = ("referenced as a value (a registry or factory builds it); its arguments are "
              "set where it is called")
STRUCTURE = "Network structure"
DATA = "Data pipeline and augmentation"
LR_POLICY = "Learning-rate policy"
OPTIMIZER = "Optimizer"
TRAINING = "Training parameters"
PROCESS = "Training process"
WORK = "Migration work"

ROLE_WORDS = ("backbone", "neck", "head", "encoder", "decoder", "stem", "classifier")
OPTIMIZER_PARAMS = ("lr", "momentum", "nesterov", "weight_decay", "betas", "eps", "dampening")
OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
DATASET_BASES = ("torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
                 "torch.utils.data.dataset.Dataset", "torch.utils.data.dataset.IterableDataset")
DATALOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
SEED_CALLS = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
                        "torch.random.manual_seed", "numpy.random.seed", "random.seed",
                        "mindspore.set_seed"})
TRAINING_ORDER = ("epochs", "batch size", "learning rate", "seed")
MAX_CAUSES = 25
_NAME_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

# Training-process points: name -> predicate on a fully qualified external name.
PROCESS_APIS: dict[str, Callable[[str], bool]] = {
    "EMA": lambda n: n.startswith("torch.optim.swa_utils."),
    "AMP": lambda n: (n.startswith(("torch.cuda.amp.", "torch.amp.", "torch.cpu.amp."))
                      or n == "torch.autocast"),
    "gradient clipping": lambda n: n.startswith("torch.nn.utils.clip_grad"),
    "gradient accumulation": lambda n: False,
    "distributed": lambda n: (n.startswith(("torch.distributed.", "torch.nn.parallel.",
                                            "torch.multiprocessing."))
                              or n in ("torch.nn.DataParallel",
                                       "torch.utils.data.distributed.DistributedSampler",
                                       "torch.utils.data.DistributedSampler")),
}


@dataclass(frozen=True, slots=True)
class _Where:
    path: str
    line: int
    cell: int | None


def _item(section: str, item: str, value: str, where: _Where | None) -> ChecklistItem:
    if where is None:
        return ChecklistItem(item, value, None, None, section)
    return ChecklistItem(item, value, where.path, where.line, section, where.cell)


def _missing(section: str, item: str) -> ChecklistItem:
    return ChecklistItem(item, NOT_FOUND, None, None, section)


def _call_where(rc: ResolvedCall) -> _Where:
    return _Where(rc.file.path, rc.call.span.line, rc.call.cell)


def arg_text(arg: Arg) -> str:
    """An argument's source text (a literal tuple keeps its parentheses)."""
    text = " ".join(arg.text.split())  # one line, whatever the source's layout
    if arg.is_literal and isinstance(arg.literal, tuple) and not text.startswith("("):
        return f"({text})"  # the recorded text of a parenthesised tuple lacks them
    return text


def _args_text(args: Iterable[Arg], skip_first: bool = False) -> str:
    shown = []
    for i, arg in enumerate(args):
        if skip_first and i == 0 and arg.keyword is None:
            continue
        head = f"{arg.keyword}=" if arg.keyword else arg.star
        shown.append(head + arg_text(arg))
    return ", ".join(shown) or "no arguments"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def torch_references(model: RepositoryModel, accept: Callable[[str], bool]
                     ) -> list[tuple[str, _Where]]:
    """External names ``accept`` takes that the code uses as values, not calls
    (``OptimInfo(opt_class=optim.SGD)``), with their places, in source order."""
    class_lines = {(_class_where(model, c).path, _class_where(model, c).line)
                   for c in model.classes}
    found = []
    for file in model.modules.values():
        for ref in file.references:
            if (file.path, ref.span.line) in class_lines:
                continue  # a base class (``class Lamb(Optimizer)``), not a use
            resolved = model.resolve(ref.target, file.module)
            if resolved is not None and resolved.kind == "external" and accept(resolved.name):
                found.append((resolved.name, _Where(file.path, ref.span.line, ref.cell)))
    return sorted(found, key=lambda item: (item[1].path, item[1].cell or 0, item[1].line))


def torch_calls(model: RepositoryModel, accept: Callable[[str], bool]) -> list[ResolvedCall]:
    """Calls of external APIs ``accept`` takes, in source order."""
    return [rc for rc in _external_calls(model) if accept(rc.external or "")]


def _external_calls(model: RepositoryModel) -> list[ResolvedCall]:
    """Every call of an external name, in source order (found once per repository)."""
    return model.provide("checklist.external_calls", lambda: sorted(
        (rc for rc in model.calls if rc.external is not None and rc.call.kind is CallKind.NAME),
        key=lambda rc: (rc.file.path, rc.call.cell or 0, rc.call.span.line)))


# ----- network structure ------------------------------------------------------------


def _class_where(model: RepositoryModel, cls: str) -> _Where:
    fact = model.classes[cls]
    module = model.class_module[cls]
    return _Where(model.modules[module].path, fact.span.line, fact.cell)


def _in_ema_class(model: RepositoryModel, fn: str) -> bool:
    owner = model.owner_class(fn)
    fact = model.classes.get(owner) if owner else None
    return fact is not None and "ema" in name_words(fact.name)


def _function_where(model: RepositoryModel, fn: str) -> _Where:
    fact = model.functions[fn]
    return _Where(model.modules[model.function_module[fn]].path, fact.span.line, fact.cell)


def structure_items(model: RepositoryModel,
                    found: list[ChecklistItem] | None = None) -> list[ChecklistItem]:
    """The top-level networks as trees of their main parts, the backbone / neck / head
    they hold, and how many leaf Modules there are; not one item per class. Found once
    per model: ``found``, the items a copy of this process found for this model (the
    scan has them found there while it places findings here), is kept as they."""
    return model.provide("checklist.structure", lambda: found if found is not None
                         else _structure_items(model))


def _structure_items(model: RepositoryModel) -> list[ChecklistItem]:
    zoo = [_item(STRUCTURE, f"torchvision model {_short(rc.external or '')}",
                 _args_text(rc.call.args), _call_where(rc))
           for rc in torch_calls(model, _is_zoo_model)]
    if not model.module_classes:
        return [*zoo, _missing(STRUCTURE, "nn.Module classes")]
    graph = containment(model)
    items = []
    tops = top_networks(graph)
    for i, top in enumerate(tops[:1 + MAX_OTHER_NETWORKS]):
        label = "top-level network" if i == 0 else "other network"
        items.append(_item(STRUCTURE, f"{label} {model.classes[top].name}",
                           "holds " + tree_text(model, graph, top), _class_where(model, top)))
    if len(tops) > 1 + MAX_OTHER_NETWORKS:
        items.append(_item(STRUCTURE, "more networks",
                           f"{len(tops) - 1 - MAX_OTHER_NETWORKS} more Modules that nobody "
                           "holds hold others (see report.html)", None))
    if not tops:
        items.append(_missing(STRUCTURE, "top-level network (a Module built from others)"))
    leaf = leaves(graph)
    if leaf:
        names = ", ".join(model.classes[c].name for c in leaf[:12])
        more = f", ... {len(leaf) - 12} more" if len(leaf) > 12 else ""
        items.append(_item(STRUCTURE, f"leaf Modules ({len(leaf)})",
                           f"hold no other Module of the repository: {names}{more}",
                           _class_where(model, leaf[0])))
    main = set(tops[:1 + MAX_OTHER_NETWORKS])
    main |= {held for top in list(main) for held in graph.successors(top)}
    roles = []
    for owner, held, attr in sorted(graph.edges(data="attr")):
        if owner not in main:
            continue
        words = name_words(attr)
        for role in ROLE_WORDS:
            if role in words:
                roles.append(_item(STRUCTURE, role, f"{model.classes[held].name} "
                                   f"(self.{attr} of {model.classes[owner].name})",
                                   _class_where(model, held)))
    for role in ("backbone", "neck", "head"):
        if not any(r.item == role for r in roles):
            roles.append(_missing(STRUCTURE, role))
    return zoo + items + roles


def _is_zoo_model(name: str) -> bool:
    """A torchvision model constructor (``torchvision.models.resnet50``,
    ``torchvision.models.detection.fasterrcnn_resnet50_fpn``)."""
    return name.startswith("torchvision.models.") and _short(name)[:1].islower() and (
        _short(name) not in ("get_model", "get_weight", "list_models", "get_model_weights",
                             "keys", "values", "items", "get")) and "__" not in name and (
        ".feature_extraction." not in name and "._utils." not in name)


# ----- data, optimizer, learning rate ---------------------------------------------------


def _is_dataset(model: RepositoryModel, cls: str) -> bool:
    return any(b.kind == "external" and b.name in DATASET_BASES
               for c in model.mro(cls) for b in model.bases(c))


def data_items(model: RepositoryModel, index: ConfigIndex) -> list[ChecklistItem]:
    """Custom Dataset classes, DataLoader calls and their arguments, torchvision transforms,
    and the augmentation settings (probabilities, the epochs trained without it)."""
    items = []
    datasets = sorted(c for c in model.classes if _is_dataset(model, c))
    for cls in datasets:
        methods = ", ".join(m for m in model.classes[cls].methods if m.startswith("__")) or "-"
        items.append(_item(DATA, f"Dataset {model.classes[cls].name}",
                           f"custom dataset (methods {methods}); port to a GeneratorDataset source",
                           _class_where(model, cls)))
    if not datasets:
        items.append(_missing(DATA, "custom Dataset class"))
    loaders = torch_calls(model, lambda n: n in DATALOADERS)
    items += [_item(DATA, "DataLoader", _args_text(rc.call.args), _call_where(rc))
              for rc in loaders]
    if not loaders:
        items.append(_missing(DATA, "DataLoader"))
    transforms = torch_calls(model, lambda n: n.startswith("torchvision.transforms."))
    by_name: dict[str, list[ResolvedCall]] = {}
    for rc in transforms:  # one item per transform, with its count of calls
        by_name.setdefault(_short(rc.external or ""), []).append(rc)
    for name, calls in by_name.items():
        value = _args_text(calls[0].call.args)
        if len(calls) > 1:
            value += f" (here; {len(calls)} calls in all)"
        items.append(_item(DATA, f"transform {name}", value, _call_where(calls[0])))
    settings = [_fact_item(DATA, v) for v in index.by_param("augmentation")]
    if not transforms and not settings:
        items.append(_missing(DATA, "torchvision transforms (augmentation)"))
    return items + settings


def subclasses_of(model: RepositoryModel, accept: Callable[[str], bool]) -> list[str]:
    """Repository classes with an external base ``accept`` takes, directly or through
    repository bases."""
    return sorted(c for c in model.classes if any(
        b.kind == "external" and accept(b.name) for k in model.mro(c) for b in model.bases(k)))


def _is_optimizer_base(name: str) -> bool:
    return name in OPTIMIZER_BASES


def _is_optimizer(name: str) -> bool:
    if name in OPTIMIZER_BASES:
        return False
    parts = name.split(".")
    return (len(parts) == 3 and parts[:2] == ["torch", "optim"] and parts[2][:1].isupper()) or (
        len(parts) == 4 and parts[:2] == ["torch", "optim"] and parts[2] not in (
            "lr_scheduler", "swa_utils") and parts[3][:1].isupper())


def _resolved(index: ConfigIndex, model: RepositoryModel, rc: ResolvedCall,
              text: str) -> tuple[str, _Where]:
    """An argument's text, and where its value is set when the argument names a setting
    (``momentum=self.momentum`` -> ``0.9``, set at ``exp.py:36``)."""
    where = _call_where(rc)
    if not _NAME_RE.match(text):
        return text, where
    owner = model.owner_class(rc.call.caller)
    value = index.resolve(text, owner)
    if value is None or value.kind == "file":
        return text, where
    used = f"{where.path}:{where.line}"
    return (f"{value.value} ({text}, set here; used at {used})",
            _Where(value.path, value.line, value.cell))


def optimizer_items(model: RepositoryModel, index: ConfigIndex) -> list[ChecklistItem]:
    """Each torch.optim optimizer constructed, with lr, momentum, nesterov, weight decay...
    (read through the configuration when an argument names a setting), and optimizers
    named by the configuration (``--opt sgd``)."""
    items = []
    for rc in torch_calls(model, _is_optimizer):
        name = _short(rc.external or "")
        where = _call_where(rc)
        items.append(_item(OPTIMIZER, f"optimizer {name}", _args_text(rc.call.args, True), where))
        given = {a.keyword: arg_text(a) for a in rc.call.args if a.keyword}
        positional = [a for a in rc.call.args if a.keyword is None and not a.star]
        if "lr" not in given and len(positional) > 1:
            given["lr"] = arg_text(positional[1])  # every torch.optim optimizer: (params, lr)
        for param in OPTIMIZER_PARAMS:
            if param in given:
                text, at = _resolved(index, model, rc, given[param])
                items.append(_item(OPTIMIZER, f"{name} {param}", text, at))
    items += [_item(OPTIMIZER, f"optimizer class {_short(name)}", REFERENCED, where)
              for name, where in torch_references(model, _is_optimizer)]
    items += [_item(OPTIMIZER, f"custom optimizer {model.classes[c].name}",
                    "a torch.optim.Optimizer subclass: port its step() to a mindspore.nn."
                    "Optimizer construct()", _class_where(model, c))
              for c in subclasses_of(model, _is_optimizer_base)]
    items += [_fact_item(OPTIMIZER, v) for v in index.by_param("optimizer")]
    for param in ("momentum", "weight decay"):
        items += [_fact_item(OPTIMIZER, v) for v in index.by_param(param)]
    return items or [_missing(OPTIMIZER, "torch.optim optimizer")]


def _is_scheduler(name: str) -> bool:
    return name.startswith("torch.optim.lr_scheduler.") and _short(name)[:1].isupper()


def lr_items(model: RepositoryModel, index: ConfigIndex) -> list[ChecklistItem]:
    """Learning-rate schedulers and their parameters, the policy and warm-up the
    configuration names, and learning rates set by hand."""
    calls = torch_calls(model, _is_scheduler)
    items = [_item(LR_POLICY, f"scheduler {_short(rc.external or '')}",
                   _args_text(rc.call.args, True), _call_where(rc)) for rc in calls]
    items += [_item(LR_POLICY, f"scheduler class {_short(name)}", REFERENCED, where)
              for name, where in torch_references(model, _is_scheduler)]
    items += [_item(LR_POLICY, f"custom scheduler {model.classes[c].name}",
                    "a torch learning-rate scheduler subclass: compute its rates as a list or "
                    "a mindspore.nn.LearningRateSchedule", _class_where(model, c))
              for c in subclasses_of(model, lambda n: n.startswith("torch.optim.lr_scheduler."))]
    settings = [v for v in index.by_param("learning-rate policy") if v.kind != "code"]
    items += [_fact_item(LR_POLICY, v) for v in settings]
    items += [_item(LR_POLICY, "learning rate set by hand", f"{f.name} {f.value}",
                    _Where(f.path, f.line, f.cell))
              for f in index.by_param("learning-rate policy") if f.kind == "code"]
    if not items:
        items.append(_missing(LR_POLICY, "torch.optim.lr_scheduler scheduler"))
    warmup = [_fact_item(LR_POLICY, v) for v in index.by_param("warm-up")]
    return items + (warmup or [_missing(LR_POLICY, "warm-up")])


# ----- training parameters and process ---------------------------------------------------


def fact_text(value: ConfigValue) -> str:
    """How a configuration value reads in the checklist (``--epochs: default 300``,
    ``Exp.max_epoch = 300``, ``train.lr: 0.1`` in a YAML file)."""
    if value.kind == "argparse":
        shown = value.value if value.value.startswith(("no default", "True (", "False (")) \
            else f"default {value.value}"
        return f"{value.name}: {shown}"
    if value.kind in ("attribute", "field") and value.owner:
        return f"{_short(value.owner)}.{value.name.removeprefix('self.')} = {value.value}"
    if value.kind in ("yaml", "json", "code"):
        return f"{value.name}: {value.value}"
    return f"{value.name} = {value.value}"


def _fact_item(section: str, fact: SourceFact) -> ChecklistItem:
    return _item(section, fact.param, fact_text(fact), _Where(fact.path, fact.line, fact.cell))


def _is_seed(name: str) -> bool:
    return name in SEED_CALLS


def training_items(model: RepositoryModel, index: ConfigIndex) -> list[ChecklistItem]:
    """Epochs, batch size, learning rate... from argparse defaults, experiment and config
    classes, dataclasses, constants, config files and loaders."""
    items = []
    for key in TRAINING_ORDER:
        found = [_fact_item(TRAINING, f) for f in index.by_param(key)]
        if key == "seed":
            found += [_item(TRAINING, key, f"{rc.external}({_args_text(rc.call.args)})",
                            _call_where(rc)) for rc in torch_calls(model, _is_seed)]
        if key == "batch size":
            found += [_item(TRAINING, key, f"DataLoader batch_size={arg_text(a)}",
                            _call_where(rc))
                      for rc in torch_calls(model, lambda n: n in DATALOADERS)
                      for a in rc.call.args if a.keyword == "batch_size"]
        items += found or [_missing(TRAINING, key)]
    return items


def process_items(model: RepositoryModel, index: ConfigIndex) -> list[ChecklistItem]:
    """EMA, AMP, gradient clipping, accumulation and distributed training, where shown."""
    items = []
    for point, accept in PROCESS_APIS.items():
        found = [_item(PROCESS, point, _short(rc.external or "") + f"({_args_text(rc.call.args)})",
                       _call_where(rc)) for rc in torch_calls(model, accept)]
        found += [_fact_item(PROCESS, f) for f in index.by_param(point)]
        if point == "EMA":
            found += [_item(PROCESS, point, f"class {model.classes[c].name} (named for EMA)",
                            _class_where(model, c))
                      for c in sorted(model.classes) if "ema" in name_words(model.classes[c].name)]
            found += [_item(PROCESS, point, f"function {model.short_name(fn)} (named for EMA)",
                            _function_where(model, fn))
                      for fn in sorted(model.functions)
                      if "ema" in name_words(model.functions[fn].name)
                      and not _in_ema_class(model, fn)]
        items += found or [_missing(PROCESS, point)]
    return items


# ----- migration work list ------------------------------------------------------------------


def work_items(result: ScanResult) -> list[ChecklistItem]:
    """Repeated work grouped by cause (one item per rule and API or construct, with its
    count of places), per category, most urgent first; the full finding list stays in the
    HTML and JSON reports."""
    items = []
    for category in Category:
        causes = [c for c in result.causes if c.category is category]
        section = f"{WORK}: {category.value}"
        for cause in causes[:MAX_CAUSES]:
            first = cause.findings[0].location
            places = f"{cause.count} place{'s' * (cause.count != 1)}"
            if cause.graph_count:
                places += f", {cause.graph_count} in the graph"
            items.append(_item(section, f"{cause.rule} {cause.rule_name}: {cause.symbol}",
                               f"{places}. {cause.message}",
                               _Where(first.path, first.line, first.cell)))
        if len(causes) > MAX_CAUSES:
            rest = causes[MAX_CAUSES:]
            items.append(_item(section, f"{len(rest)} more causes",
                               f"{sum(c.count for c in rest)} places; see report.html", None))
    return items


def _guarded(section: str, build: Callable[[], list[ChecklistItem]]) -> list[ChecklistItem]:
    """A section's items; a failure loses only that section, reported as an item."""
    try:
        return build()
    except Exception as exc:  # one odd repository must not stop the scan
        return [ChecklistItem("msready could not fill this section",
                              f"{type(exc).__name__}: {exc}", None, None, section)]


def config_index(result: ScanResult) -> ConfigIndex:
    """Every configuration value of the scan (the files' and the config files they load)."""
    return scan_index(result)


def build_checklist(result: ScanResult) -> list[ChecklistItem]:
    """The whole checklist, section by section."""
    model = result.model
    index = ConfigIndex([])
    unread: list[ChecklistItem] = []
    try:
        index = config_index(result)
    except Exception as exc:  # argparse options and constants are then missing, and said so
        unread = [ChecklistItem("msready could not read options and constants from the source",
                                f"{type(exc).__name__}: {exc}", None, None, TRAINING)]
    return [
        *_guarded(STRUCTURE, lambda: structure_items(model)),
        *_guarded(DATA, lambda: data_items(model, index)),
        *_guarded(LR_POLICY, lambda: lr_items(model, index)),
        *_guarded(OPTIMIZER, lambda: optimizer_items(model, index)),
        *unread,
        *_guarded(TRAINING, lambda: training_items(model, index)),
        *_guarded(PROCESS, lambda: process_items(model, index)),
        *_guarded(WORK, lambda: work_items(result)),
    ]
