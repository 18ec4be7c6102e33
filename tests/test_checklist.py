"""The migration checklist, filled from small real repositories: every item has its source
line, what the code does not show is "not found", and lookalikes stay out."""

from __future__ import annotations

from dataclasses import replace

from msready.analyzer.checklist import NOT_FOUND, build_checklist
from msready.analyzer.repo import RepositoryModel
from msready.analyzer.result import ChecklistItem, ScanResult
from msready.analyzer.scan import scan_files


def _scan(files: dict[str, str] | str) -> ScanResult:
    return scan_files(files if isinstance(files, dict) else {"train.py": files}, target="cpu")


def _items(result: ScanResult, section: str, item: str | None = None) -> list[ChecklistItem]:
    return [c for c in result.checklist
            if c.section == section and (item is None or c.item == item)]


Row = tuple[str, str | None, int | None]


def _values(result: ScanResult, section: str, item: str) -> list[Row]:
    return [(c.value, c.path, c.line) for c in _items(result, section, item)]


NETWORK = '''\
import torch.nn as nn


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)


class Stage(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Conv() for _ in range(3)])


class Neck(nn.Module):
    def __init__(self):
        super().__init__()
        self.fuse = Conv()


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Stage()
        self.neck = Neck()
        self.cls_head = nn.Linear(3, 2)
'''


def test_structure_is_the_tree_of_the_top_level_network() -> None:
    result = _scan({"net.py": NETWORK})
    structure = "Network structure"
    tops = [c for c in _items(result, structure) if c.item.startswith("top-level")]
    assert [(c.item, c.path, c.line) for c in tops] == [
        ("top-level network Detector", "net.py", 22)]
    assert tops[0].value == "holds backbone: Stage [blocks: Conv]; neck: Neck [fuse: Conv]"
    # One item for the leaves, not one item per Module class.
    assert not [c for c in _items(result, structure) if c.item.startswith("Module ")]
    assert _values(result, structure, "leaf Modules (1)") == [
        ("hold no other Module of the repository: Conv", "net.py", 4)]
    assert _values(result, structure, "backbone") == [("Stage (self.backbone of Detector)",
                                                       "net.py", 10)]
    assert _values(result, structure, "neck") == [("Neck (self.neck of Detector)", "net.py", 16)]
    # cls_head holds a torch layer, not a repository Module: the head is not shown.
    assert _values(result, structure, "head") == [(NOT_FOUND, None, None)]


DETECTOR = {
    "models/parts.py": '''\
import torch.nn as nn


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Conv()
        self.stage = Conv()


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = Conv()
''',
    "models/detector.py": '''\
import torch.nn as nn
from models.parts import Backbone, Head


class Detector(nn.Module):
    def __init__(self, backbone=None, head=None):
        super().__init__()
        if backbone is None:
            backbone = Backbone()
        if head is None:
            head = Head()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        return self.head(self.backbone(x))
''',
}


def test_parts_passed_in_by_the_caller_are_held() -> None:
    # No defaults in __init__: only the call site says what the detector holds.
    result = _scan({
        "models/parts.py": DETECTOR["models/parts.py"],
        "models/detector.py": '''\
import torch.nn as nn


class Detector(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head
''',
        "build.py": '''\
from models.detector import Detector
from models.parts import Backbone, Head


def build():
    backbone = Backbone()
    return Detector(backbone, Head())
''',
    })
    tops = [(c.item, c.value) for c in _items(result, "Network structure")
            if c.item.startswith("top-level")]
    assert tops == [("top-level network Detector",
                     "holds backbone: Backbone [stage, stem: Conv]; head: Head [cls: Conv]")]


def test_a_detector_built_from_its_arguments_is_the_top_level_network() -> None:
    # The parts arrive as constructor arguments; __init__ builds the defaults. The
    # detector holds the most, so it is the top-level network, not a leaf.
    result = _scan(DETECTOR)
    structure = "Network structure"
    tops = [(c.item, c.value, c.path, c.line) for c in _items(result, structure)
            if c.item.startswith(("top-level", "other network"))]
    assert tops == [("top-level network Detector",
                     "holds backbone: Backbone [stage, stem: Conv]; head: Head [cls: Conv]",
                     "models/detector.py", 5)]
    assert _values(result, structure, "leaf Modules (1)")[0][0] == (
        "hold no other Module of the repository: Conv")
    assert _values(result, structure, "head") == [("Head (self.head of Detector)",
                                                   "models/parts.py", 17)]


def test_no_module_class_is_not_found() -> None:
    result = _scan("import torch\nx = torch.zeros(3)\n")
    assert _values(result, "Network structure", "nn.Module classes") == [(NOT_FOUND, None, None)]


TRAIN = '''\
import argparse

import torch
from torch import optim
from torch.optim.lr_scheduler import MultiStepLR
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2 as T


class Base(Dataset):
    def __len__(self):
        return 4


class Images(Base):
    def __getitem__(self, i):
        return torch.zeros(3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--batch-size", "-b", default=64, type=int)
    parser.add_argument("--epochs-per-eval", type=int, default=5)
    parser.add_argument("lr", type=float)
    parser.add_argument("--wd", type=float, default=5e-4)
    args = parser.parse_args()
    aug = T.Compose([T.RandomResizedCrop(224, scale=(0.08, 1.0)), T.ToTensor()])
    loader = DataLoader(Images(), batch_size=args.batch_size, shuffle=True, num_workers=8)
    model = torch.nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=args.wd)
    sched = MultiStepLR(opt, milestones=[100, 200], gamma=0.1)
    torch.manual_seed(0)
'''


def test_data_pipeline() -> None:
    result = _scan(TRAIN)
    data = "Data pipeline and augmentation"
    assert [c.item for c in _items(result, data) if c.item.startswith("Dataset")] == [
        "Dataset Base", "Dataset Images"]
    assert _values(result, data, "DataLoader") == [
        ("Images(), batch_size=args.batch_size, shuffle=True, num_workers=8", "train.py", 29)]
    transforms = [(c.item, c.value, c.line) for c in _items(result, data)
                  if c.item.startswith("transform")]
    assert ("transform RandomResizedCrop", "224, scale=(0.08, 1.0)", 28) in transforms
    assert ("transform ToTensor", "no arguments", 28) in transforms


def test_optimizer_and_its_parameters() -> None:
    result = _scan(TRAIN)
    opt = "Optimizer"
    assert _values(result, opt, "optimizer Adam") == [
        ("lr=1e-3, betas=(0.9, 0.99), weight_decay=args.wd", "train.py", 31)]
    assert _values(result, opt, "Adam lr") == [("1e-3", "train.py", 31)]
    assert _values(result, opt, "Adam betas") == [("(0.9, 0.99)", "train.py", 31)]
    assert _values(result, opt, "Adam momentum") == []


def test_learning_rate_policy() -> None:
    result = _scan(TRAIN)
    assert _values(result, "Learning-rate policy", "scheduler MultiStepLR") == [
        ("milestones=[100, 200], gamma=0.1", "train.py", 32)]


def test_training_parameters_from_argparse_and_loader() -> None:
    result = _scan(TRAIN)
    training = "Training parameters"
    assert _values(result, training, "epochs") == [("--epochs: default 300", "train.py", 22)]
    assert _values(result, training, "batch size") == [
        ("--batch-size: default 64", "train.py", 23),
        ("DataLoader batch_size=args.batch_size", "train.py", 29)]
    assert _values(result, "Optimizer", "weight decay") == [("--wd: default 5e-4", "train.py", 26)]
    # A positional "lr" argument is no option with a default; --epochs-per-eval is no epochs.
    assert _values(result, training, "learning rate") == [(NOT_FOUND, None, None)]
    assert _values(result, training, "seed") == [("torch.manual_seed(0)", "train.py", 33)]


def test_training_parameters_from_constants_and_config_dicts() -> None:
    result = _scan({
        "config.py": "EPOCHS = 90\nCFG = {'batch_size': 32, 'name': 'x'}\nopts = dict(lr=0.05)\n",
        "model.py": "import torch\nx = torch.zeros(1)\n",
    })
    training = "Training parameters"
    assert _values(result, training, "epochs") == [("EPOCHS = 90", "config.py", 1)]
    assert _values(result, training, "batch size") == [("batch_size = 32", "config.py", 2)]
    assert _values(result, training, "learning rate") == [("lr = 0.05", "config.py", 3)]


def test_lookalike_optimizer_of_the_repository_is_not_torch() -> None:
    result = _scan({
        "optim.py": "class SGD:\n    def __init__(self, lr):\n        self.rate = lr\n",
        "train.py": "import torch\nimport optim\n\nopt = optim.SGD(lr=0.1)\n",
    })
    assert _values(result, "Optimizer", "torch.optim optimizer") == [(NOT_FOUND, None, None)]


PROCESS = '''\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.swa_utils import AveragedModel


class Schema:
    pass


class EMAIL:
    pass


def train(model, loader, opt, sched, scaler):
    model = DDP(model)
    ema = AveragedModel(model)
    for epoch in range(10):
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = model(x).sum() / 4
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if (i + 1) % 4 == 0:
                scaler.step(opt)
                opt.zero_grad()
        if epoch % 10 == 0:
            sched.step()
'''


def test_training_process_points() -> None:
    result = _scan(PROCESS)
    process = "Training process"
    assert _values(result, process, "EMA") == [("AveragedModel(model)", "train.py", 16)]
    assert _values(result, process, "AMP") == [('autocast("cuda")', "train.py", 19)]
    assert _values(result, process, "gradient clipping") == [
        ("clip_grad_norm_(model.parameters(), 1.0)", "train.py", 22)]
    assert _values(result, process, "gradient accumulation") == [
        ("step every k iterations: optimizer step under if (i + 1) % 4 == 0", "train.py", 23)]
    assert _values(result, process, "distributed") == [("DistributedDataParallel(model)",
                                                        "train.py", 15)]


def test_scheduler_step_every_k_epochs_is_not_accumulation() -> None:
    result = _scan('''\
def train(model, loader, opt, sched):
    for epoch in range(100):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        if epoch % 30 == 0:
            sched.step()
''')
    assert _values(result, "Training process", "gradient accumulation") == [
        (NOT_FOUND, None, None)]


def test_ema_class_by_name_and_lookalike_names() -> None:
    result = _scan("import torch\n\n\nclass ModelEmaV2:\n    pass\n\n\nclass Schema:\n    pass\n")
    assert _values(result, "Training process", "EMA") == [
        ("class ModelEmaV2 (named for EMA)", "train.py", 4)]


def test_nothing_shown_is_not_found_everywhere() -> None:
    result = _scan("import torch\n\nx = torch.zeros(3)\n")
    for item in result.checklist:
        assert (item.path is None) == (item.value == NOT_FOUND), item
    sections = {c.section for c in result.checklist}
    assert {"Network structure", "Data pipeline and augmentation", "Learning-rate policy",
            "Optimizer", "Training parameters", "Training process"} <= sections
    assert not any(s.startswith("Migration work") for s in sections)


WORK = {
    "net.py": '''\
import torch
import torch.nn as nn


class Leaf(nn.Module):
    def forward(self, x):
        return x[x > 0]


class Root(nn.Module):
    def __init__(self):
        super().__init__()
        self.leaf = Leaf()

    def forward(self, x):
        return torch.nonzero(self.leaf(x))
''',
}


def test_work_list_has_one_item_per_cause_with_its_count() -> None:
    from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
    from msready.analyzer.priorities import prioritise

    result = _scan(WORK)

    def finding(line: int, function: str | None) -> Finding:
        return Finding("MS201", "nonzero", Category.DYNAMIC_SHAPE, Severity.ERROR,
                       Confidence.HIGH, Location("net.py", line, 9, line, 20), "torch.nonzero",
                       "`nonzero` has a data-dependent shape.", "s", function=function)

    result.findings = [finding(7, "net.Leaf.forward"), finding(15, "net.Root.forward"),
                       finding(1, None)]
    prioritise(result)
    work = [(c.item, c.value, c.path, c.line) for c in build_checklist(result)
            if c.section == "Migration work: dynamic-shape"]
    assert work == [("MS201 nonzero: torch.nonzero",
                     "3 places, 2 in the graph. `nonzero` has a data-dependent shape.",
                     "net.py", 7)]


def test_notebook_items_carry_their_cell() -> None:
    import json
    notebook = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import torch\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["model = torch.nn.Linear(2, 2)\n",
                    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    result = _scan({"nb.ipynb": json.dumps(notebook)})
    [item] = _items(result, "Optimizer", "optimizer SGD")
    [use] = [a for a in result.apis if a.symbol == "torch.optim.SGD"]
    assert (item.path, item.line) == ("nb.ipynb", 2)
    assert item.cell is not None and item.cell == use.locations[0].cell


def test_a_failing_section_is_reported_not_raised() -> None:
    from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
    from msready.analyzer.priorities import prioritise

    result = _scan(TRAIN)
    result.findings = [Finding("MS601", "device", Category.IDIOM, Severity.INFO, Confidence.HIGH,
                               Location("train.py", 33, 5, 33, 20), "torch.manual_seed", "m", "s")]
    prioritise(result)
    files = result.files
    model = RepositoryModel(files)
    model.calls.append(None)  # type: ignore[arg-type]  # a model msready cannot read
    checklist = build_checklist(replace(result, facts=lambda: (files, model)))
    failed = [c for c in checklist if c.item == "msready could not fill this section"]
    assert {c.section for c in failed} == {
        "Network structure", "Data pipeline and augmentation", "Learning-rate policy",
        "Optimizer", "Training parameters", "Training process"}
    assert all(c.path is None and c.value.startswith("AttributeError") for c in failed)
    # The work list does not read the calls and is still there.
    assert [(c.item, c.line) for c in checklist if c.section == "Migration work: idiom"] == [
        ("MS601 device: torch.manual_seed", 33)]


def test_hand_written_learning_rate_policy() -> None:
    result = _scan('''\
def adjust_learning_rate(optimizer, epoch, base):
    lr = base * (0.1 ** (epoch // 30))
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.param_groups[0]["lr"] = lr * 2
    settings = {}
    settings["lr"] = lr
''')
    assert _values(result, "Learning-rate policy", "learning rate set by hand") == [
        ('group["lr"] set by code: lr', "train.py", 4),
        ('optimizer.param_groups[0]["lr"] set by code: lr * 2', "train.py", 5)]


def test_ema_functions_and_methods_by_name() -> None:
    result = _scan('''\
import torch


class Trainer:
    def update_ema(self):
        pass


class ModelEMA:
    def update(self):
        pass

    def ema_step(self):
        pass


def schema_check():
    pass
''')
    assert [v for v, _, _ in _values(result, "Training process", "EMA")] == [
        "class ModelEMA (named for EMA)", "function Trainer.update_ema (named for EMA)"]


def test_positional_learning_rate_and_torchvision_models() -> None:
    result = _scan('''\
import torch
import torchvision.models as models

model = models.resnet50(pretrained=True)
weights = models.get_model_weights("resnet50")
optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
''')
    assert _values(result, "Optimizer", "SGD lr") == [("0.1", "train.py", 6)]
    assert _values(result, "Network structure", "torchvision model resnet50") == [
        ("pretrained=True", "train.py", 4)]
    assert not _values(result, "Network structure", "torchvision model get_model_weights")
    assert _values(result, "Network structure", "nn.Module classes") == [(NOT_FOUND, None, None)]


def test_optimizers_and_schedulers_in_registries_and_subclasses() -> None:
    result = _scan('''\
import torch
from torch import optim
from torch.optim.lr_scheduler import LRScheduler

OPTIMIZERS = {"sgd": optim.SGD, "adamw": torch.optim.AdamW}
SCHEDULERS = [torch.optim.lr_scheduler.StepLR]


class Lamb(optim.Optimizer):
    def step(self, closure=None):
        return None


class Warmup(LRScheduler):
    def get_lr(self):
        return [0.1]
''')
    optimizer = [(c.item, c.line) for c in _items(result, "Optimizer")]
    assert optimizer == [("optimizer class SGD", 5), ("optimizer class AdamW", 5),
                         ("custom optimizer Lamb", 9)]
    policy = [(c.item, c.line) for c in _items(result, "Learning-rate policy")]
    assert policy == [("scheduler class StepLR", 6), ("custom scheduler Warmup", 14),
                      ("warm-up", None)]


def test_object_state_and_counters_are_not_training_parameters() -> None:
    result = _scan('''\
class Sampler:
    def __init__(self):
        self.epoch = 0
        self.seed = 1234


def main(args):
    epoch = 0
    args.epochs = 90
''')
    assert _values(result, "Training parameters", "epochs") == [("args.epochs = 90", "train.py",
                                                                 9)]
    assert _values(result, "Training parameters", "seed") == [(NOT_FOUND, None, None)]


WRAPPERS = """\
import torch
from torch import nn

class Beta(nn.Module):
    def forward(self, x):
        return x

class Alpha(nn.Module):
    def forward(self, x):
        return x

class Wrap(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)

first = Wrap(Beta())
second = Wrap(Alpha())
"""


def test_classes_one_attribute_holds_are_listed_by_name() -> None:
    # The value analysis finds them in no fixed order; the checklist is the same every run.
    items = scan_files({"m.py": WRAPPERS}).checklist
    network = next(i for i in items if i.item == "top-level network Wrap")
    assert network.value == "holds module: Alpha; module: Beta"
