"""The migration checklist the MindSpore migration guide asks for, filled from the code.

Sections: network structure, data pipeline and augmentation, learning-rate policy,
optimizer, training parameters, training process (EMA, AMP, gradient clipping,
accumulation, distributed), then the migration work list per category, ordered leaves first.
Every item carries the source location it was read from; what the code does not show is
listed as "not found", never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import networkx as nx

from msready.analyzer.checklist_source import SourceFact, name_words, unique_facts
from msready.analyzer.facts import Arg, CallKind
from msready.analyzer.findings import Category, Finding
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
TRAINING_ORDER = ("epochs", "batch size", "learning rate", "weight decay", "momentum", "warm-up",
                  "seed")

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
    if arg.is_literal and isinstance(arg.literal, tuple) and not arg.text.startswith("("):
        return f"({arg.text})"  # the recorded text of a parenthesised tuple lacks them
    return arg.text


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
    found = [rc for rc in model.calls
             if rc.external is not None and rc.call.kind is CallKind.NAME and accept(rc.external)]
    return sorted(found, key=lambda rc: (rc.file.path, rc.call.cell or 0, rc.call.span.line))


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


def containment(model: RepositoryModel) -> nx.DiGraph:
    """Module class -> the repository Module classes its attributes hold (edge ``attr``)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(model.module_classes)
    for cls in model.module_classes:
        for attr in sorted({a for c in model.mro(cls) for a, _ in model.classes[c].attributes}):
            for held in model.attribute_classes(cls, attr):
                if held.kind == "class" and held.name in model.module_classes and held.name != cls:
                    graph.add_edge(cls, held.name, attr=attr)
    return graph


def leaves_first(graph: nx.DiGraph) -> list[str]:
    """Classes that use no other repository Module first, then those built from them."""
    condensed = nx.condensation(graph)
    order: list[str] = []
    for component in reversed(list(nx.lexicographical_topological_sort(
            condensed, key=lambda n: min(condensed.nodes[n]["members"])))):
        order.extend(sorted(condensed.nodes[component]["members"]))
    return order


def structure_items(model: RepositoryModel) -> list[ChecklistItem]:
    """Top-level networks, the parts each Module class holds, and backbone/neck/head roles."""
    zoo = [_item(STRUCTURE, f"torchvision model {_short(rc.external or '')}",
                 _args_text(rc.call.args), _call_where(rc))
           for rc in torch_calls(model, _is_zoo_model)]
    if not model.module_classes:
        return [*zoo, _missing(STRUCTURE, "nn.Module classes")]
    graph = containment(model)
    items = []
    tops = sorted(c for c in graph if graph.in_degree(c) == 0 and graph.out_degree(c) > 0)
    for top in tops:
        items.append(_item(STRUCTURE, f"top-level network {model.classes[top].name}",
                           _parts_text(model, graph, top), _class_where(model, top)))
    if not tops:
        items.append(_missing(STRUCTURE, "top-level network (a Module built from others)"))
    for cls in leaves_first(graph):
        name = model.classes[cls].name
        value = _parts_text(model, graph, cls) if graph.out_degree(cls) else (
            "leaf: uses no other Module class of the repository")
        items.append(_item(STRUCTURE, f"Module {name}", value, _class_where(model, cls)))
    roles = []
    for owner, held, attr in sorted(graph.edges(data="attr")):
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
        _short(name) not in ("get_model", "get_weight", "list_models", "get_model_weights"))


def _parts_text(model: RepositoryModel, graph: nx.DiGraph, cls: str) -> str:
    parts = [f"self.{attr}: {model.classes[held].name}"
             for _, held, attr in sorted(graph.out_edges(cls, data="attr"), key=lambda e: e[2])]
    return "holds " + ", ".join(parts)


# ----- data, optimizer, learning rate ---------------------------------------------------


def _is_dataset(model: RepositoryModel, cls: str) -> bool:
    return any(b.kind == "external" and b.name in DATASET_BASES
               for c in model.mro(cls) for b in model.bases(c))


def data_items(model: RepositoryModel) -> list[ChecklistItem]:
    """Custom Dataset classes, DataLoader calls and their arguments, torchvision transforms."""
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
    items += [_item(DATA, f"transform {_short(rc.external or '')}", _args_text(rc.call.args),
                    _call_where(rc)) for rc in transforms]
    if not transforms:
        items.append(_missing(DATA, "torchvision transforms (augmentation)"))
    return items


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


def optimizer_items(model: RepositoryModel) -> list[ChecklistItem]:
    """Each torch.optim optimizer constructed, with lr, momentum, nesterov, weight decay..."""
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
                items.append(_item(OPTIMIZER, f"{name} {param}", given[param], where))
    items += [_item(OPTIMIZER, f"optimizer class {_short(name)}", REFERENCED, where)
              for name, where in torch_references(model, _is_optimizer)]
    items += [_item(OPTIMIZER, f"custom optimizer {model.classes[c].name}",
                    "a torch.optim.Optimizer subclass: port its step() to a mindspore.nn."
                    "Optimizer construct()", _class_where(model, c))
              for c in subclasses_of(model, _is_optimizer_base)]
    return items or [_missing(OPTIMIZER, "torch.optim optimizer")]


def _is_scheduler(name: str) -> bool:
    return name.startswith("torch.optim.lr_scheduler.") and _short(name)[:1].isupper()


def lr_items(model: RepositoryModel, facts: list[SourceFact]) -> list[ChecklistItem]:
    """Learning-rate schedulers and their parameters, and learning rates set by hand."""
    calls = torch_calls(model, _is_scheduler)
    items = [_item(LR_POLICY, f"scheduler {_short(rc.external or '')}",
                   _args_text(rc.call.args, True), _call_where(rc)) for rc in calls]
    items += [_item(LR_POLICY, f"scheduler class {_short(name)}", REFERENCED, where)
              for name, where in torch_references(model, _is_scheduler)]
    items += [_item(LR_POLICY, f"custom scheduler {model.classes[c].name}",
                    "a torch learning-rate scheduler subclass: compute its rates as a list or "
                    "a mindspore.nn.LearningRateSchedule", _class_where(model, c))
              for c in subclasses_of(model, lambda n: n.startswith("torch.optim.lr_scheduler."))]
    items += [_item(LR_POLICY, "learning rate set by hand", f"{f.name} {f.value}",
                    _Where(f.path, f.line, f.cell))
              for f in facts if f.key == "learning-rate policy"]
    return items or [_missing(LR_POLICY, "torch.optim.lr_scheduler scheduler")]


# ----- training parameters and process ---------------------------------------------------


def _fact_item(section: str, fact: SourceFact) -> ChecklistItem:
    return _item(section, fact.key, f"{fact.name}: {fact.value}",
                 _Where(fact.path, fact.line, fact.cell))


def _is_seed(name: str) -> bool:
    return name in SEED_CALLS


def training_items(model: RepositoryModel, facts: list[SourceFact]) -> list[ChecklistItem]:
    """Epochs, batch size, learning rate... from argparse defaults, constants and loaders."""
    items = []
    for key in TRAINING_ORDER:
        found = [_fact_item(TRAINING, f) for f in facts if f.key == key]
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


def process_items(model: RepositoryModel, facts: list[SourceFact]) -> list[ChecklistItem]:
    """EMA, AMP, gradient clipping, accumulation and distributed training, where shown."""
    items = []
    for point, accept in PROCESS_APIS.items():
        found = [_item(PROCESS, point, _short(rc.external or "") + f"({_args_text(rc.call.args)})",
                       _call_where(rc)) for rc in torch_calls(model, accept)]
        found += [_fact_item(PROCESS, f) for f in facts if f.key == point]
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


def _owner(model: RepositoryModel, finding: Finding) -> str | None:
    if finding.function is None:
        return None
    return model.owner_class(finding.function)


def _line(finding: Finding) -> str:
    loc = finding.location
    return f"line {loc.line}" if loc.cell is None else f"cell {loc.cell} line {loc.line}"


def work_items(result: ScanResult) -> list[ChecklistItem]:
    """Per category: the findings grouped by class, Module classes leaves first, then the
    rest of the code file by file."""
    model = result.model
    rank = {cls: i for i, cls in enumerate(leaves_first(containment(model)))}
    items = []
    for category in Category:
        by_owner: dict[str, list[Finding]] = defaultdict(list)
        for finding in result.findings:
            if finding.category is category:
                owner = _owner(model, finding)
                key = owner if owner in model.classes else f"file:{finding.location.path}"
                by_owner[key].append(finding)
        section = f"{WORK}: {category.value}"
        for key in sorted(by_owner, key=lambda k: (k not in rank, rank.get(k, 0), k)):
            group = by_owner[key]
            value = f"{len(group)} finding{'s' * (len(group) != 1)}: " + "; ".join(
                f"{f.rule} {f.rule_name} {_line(f)}" for f in group[:8])
            if len(group) > 8:
                value += f"; ... {len(group) - 8} more"
            if key.startswith("file:"):
                first = group[0].location
                items.append(_item(section, key[5:], value, _Where(first.path, first.line,
                                                                   first.cell)))
            else:
                kind = "Module" if key in model.module_classes else "class"
                items.append(_item(section, f"{kind} {model.classes[key].name}", value,
                                   _class_where(model, key)))
    return items


def _guarded(section: str, build: Callable[[], list[ChecklistItem]]) -> list[ChecklistItem]:
    """A section's items; a failure loses only that section, reported as an item."""
    try:
        return build()
    except Exception as exc:  # one odd repository must not stop the scan
        return [ChecklistItem("msready could not fill this section",
                              f"{type(exc).__name__}: {exc}", None, None, section)]


def build_checklist(result: ScanResult) -> list[ChecklistItem]:
    """The whole checklist, section by section."""
    model = result.model
    source: list[SourceFact] = []
    unread: list[ChecklistItem] = []
    try:
        source = unique_facts([fact for file in result.files for fact in file.source_facts])
    except Exception as exc:  # argparse options and constants are then missing, and said so
        unread = [ChecklistItem("msready could not read options and constants from the source",
                                f"{type(exc).__name__}: {exc}", None, None, TRAINING)]
    return [
        *_guarded(STRUCTURE, lambda: structure_items(model)),
        *_guarded(DATA, lambda: data_items(model)),
        *_guarded(LR_POLICY, lambda: lr_items(model, source)),
        *_guarded(OPTIMIZER, lambda: optimizer_items(model)),
        *unread,
        *_guarded(TRAINING, lambda: training_items(model, source)),
        *_guarded(PROCESS, lambda: process_items(model, source)),
        *_guarded(WORK, lambda: work_items(result)),
    ]
