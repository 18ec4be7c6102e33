"""Configuration values read from the parsed tree: argparse defaults, experiment and config
classes, dataclasses, module constants and the YAML / JSON files the code loads, each with
its line; and the repository index that answers "what value does config key X have"."""

from __future__ import annotations

from msready.analyzer.checklist import config_index
from msready.analyzer.configvalues import ConfigIndex, ConfigValue, yaml_values
from msready.analyzer.result import ChecklistItem, ScanResult
from msready.analyzer.scan import scan_files

EXPERIMENT = '''\
import argparse
from dataclasses import dataclass, field

EPOCHS = 90


class BaseExp:
    def __init__(self):
        self.seed = None
        self.max_epoch = 100


class Exp(BaseExp):
    def __init__(self):
        super().__init__()
        self.max_epoch = 300
        self.basic_lr_per_img = 0.01 / 64.0
        self.mosaic_scale = (0.1, 2)
        self.scheduler = "yoloxwarmcos"


class Sampler:
    def __init__(self):
        self.seed = 1234
        self.epoch = 0


@dataclass
class TrainConfig:
    lr: float = 0.1
    latent_dim: int = field(default=128)


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--latent-dim", type=int, default=100)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--config", default="configs/train.yaml")
    return parser.parse_args()
'''

YAML = '''\
TRAIN:
  BASE_LR: 0.02  # per 16 images
  IMS_PER_BATCH: 16
  STEPS: [60000, 80000]
MODEL:
  name: resnet
'''


def _scan() -> ScanResult:
    return scan_files({"exp.py": EXPERIMENT, "configs/train.yaml": YAML})


def _index() -> ConfigIndex:
    return config_index(_scan())


def _where(value: ConfigValue | None) -> tuple[str, str, int] | None:
    return None if value is None else (value.value, value.path, value.line)


def test_values_of_every_kind_with_their_line() -> None:
    index = _index()
    found = {(v.kind, v.name, v.value, v.line) for key in (
        "epochs", "max_epoch", "basic_lr_per_img", "mosaic_scale", "lr", "latent_dim", "amp",
        "base_lr", "ims_per_batch") for v in index.get(key)}
    assert {
        ("constant", "EPOCHS", "90", 4),
        ("attribute", "self.max_epoch", "300", 16),
        ("attribute", "self.basic_lr_per_img", "0.01 / 64.0", 17),
        ("attribute", "self.mosaic_scale", "(0.1, 2)", 18),
        ("field", "lr", "0.1", 30),
        ("field", "latent_dim", "128", 31),
        ("argparse", "--lr", "2e-4", 36),
        ("argparse", "--latent-dim", "100", 37),
        ("argparse", "--amp", "False (flag, store_true)", 38),
        ("yaml", "TRAIN.BASE_LR", "0.02", 2),
        ("yaml", "TRAIN.IMS_PER_BATCH", "16", 3),
    } <= found
    [arith] = index.get("basic_lr_per_img")
    assert arith.literal == 0.01 / 64.0


def test_resolve_names_the_value_an_expression_reads() -> None:
    index = _index()
    assert _where(index.resolve("args.lr")) == ("2e-4", "exp.py", 36)
    assert _where(index.resolve("opt.latent_dim")) == ("100", "exp.py", 37)
    assert _where(index.resolve("self.max_epoch", owner="exp.Exp")) == ("300", "exp.py", 16)
    # Through the base class when the class itself does not set it.
    assert _where(index.resolve("self.seed", owner="exp.Exp")) == ("None", "exp.py", 9)
    assert _where(index.resolve("cfg.TRAIN.BASE_LR")) == ("0.02", "configs/train.yaml", 2)
    assert index.resolve("args.no_such_option") is None


def test_training_parameters_only_from_configuration_classes() -> None:
    index = _index()
    epochs = [(v.name, v.line) for v in index.by_param("epochs")]
    assert epochs == [("EPOCHS", 4), ("self.max_epoch", 10), ("self.max_epoch", 16)]
    # A sampler's seed and epoch counter are object state, not settings; still resolvable.
    assert [v.owner for v in index.by_param("seed")] == ["exp.BaseExp"]
    assert _where(index.resolve("self.seed", owner="exp.Sampler")) == ("1234", "exp.py", 24)
    assert index.get("epoch") == []


def test_yaml_keys_are_dotted_by_nesting() -> None:
    values = [(v.name, v.value, v.line, v.param) for v in yaml_values(YAML, "c.yaml")]
    assert values == [("TRAIN.BASE_LR", "0.02", 2, "learning rate"),
                      ("TRAIN.IMS_PER_BATCH", "16", 3, "batch size"),
                      ("TRAIN.STEPS", "[60000, 80000]", 4, "learning-rate policy"),
                      ("MODEL.name", "resnet", 6, "")]


DETECTOR_EXP = '''\
import torch
from models import Detector


class Exp:
    def __init__(self):
        self.max_epoch = 300
        self.warmup_epochs = 5
        self.warmup_lr = 0
        self.basic_lr_per_img = 0.01 / 64.0
        self.scheduler = "yoloxwarmcos"
        self.min_lr_ratio = 0.05
        self.no_aug_epochs = 15
        self.mosaic_prob = 1.0
        self.mixup_prob = 1.0
        self.hsv_prob = 1.0
        self.flip_prob = 0.5
        self.ema = True
        self.weight_decay = 5e-4
        self.momentum = 0.9

    def get_optimizer(self, model, batch_size):
        lr = self.basic_lr_per_img * batch_size
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=self.momentum,
                               nesterov=True)
'''

DETECTOR_TRAIN = '''\
import argparse


def make_parser():
    parser = argparse.ArgumentParser("train")
    parser.add_argument("-b", "--batch-size", type=int, default=64)
    parser.add_argument("--fp16", dest="fp16", default=False, action="store_true")
    return parser
'''

# The migration guide's trick record for such a detector: (section, item, value text, file,
# line) of each fact the checklist must hold.
DETECTOR_FACTS = [
    ("Optimizer", "optimizer SGD", "momentum=self.momentum", "exp.py", 24),
    ("Optimizer", "SGD momentum", "0.9", "exp.py", 20),
    ("Optimizer", "SGD nesterov", "True", "exp.py", 24),
    ("Optimizer", "weight decay", "5e-4", "exp.py", 19),
    ("Training parameters", "epochs", "300", "exp.py", 7),
    ("Training parameters", "batch size", "64", "train.py", 6),
    ("Training parameters", "learning rate", "0.01 / 64.0", "exp.py", 10),
    ("Learning-rate policy", "warm-up", "warmup_epochs = 5", "exp.py", 8),
    ("Learning-rate policy", "warm-up", "warmup_lr = 0", "exp.py", 9),
    ("Learning-rate policy", "learning-rate policy", '"yoloxwarmcos"', "exp.py", 11),
    ("Learning-rate policy", "learning-rate policy", "0.05", "exp.py", 12),
    ("Data pipeline and augmentation", "augmentation", "no_aug_epochs = 15", "exp.py", 13),
    ("Data pipeline and augmentation", "augmentation", "mosaic_prob = 1.0", "exp.py", 14),
    ("Data pipeline and augmentation", "augmentation", "mixup_prob = 1.0", "exp.py", 15),
    ("Data pipeline and augmentation", "augmentation", "hsv_prob = 1.0", "exp.py", 16),
    ("Data pipeline and augmentation", "augmentation", "flip_prob = 0.5", "exp.py", 17),
    ("Training process", "EMA", "ema = True", "exp.py", 18),
    ("Training process", "AMP", "--fp16", "train.py", 7),
]


def _holds(items: list[ChecklistItem], fact: tuple[str, str, str, str, int]) -> bool:
    section, item, text, path, line = fact
    return any(c.section == section and c.item == item and text in c.value
               and (c.path, c.line) == (path, line) for c in items)


def test_a_detector_experiment_class_fills_the_trick_record() -> None:
    result = scan_files({"exp.py": DETECTOR_EXP, "train.py": DETECTOR_TRAIN})
    missing = [fact for fact in DETECTOR_FACTS if not _holds(result.checklist, fact)]
    assert missing == []


def test_checklist_facts_come_from_the_parsed_tree_without_a_second_parse() -> None:
    import ast
    import inspect

    from msready.analyzer import checklist_source, configvalues

    for module in (checklist_source, configvalues):
        tree = ast.parse(inspect.getsource(module))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "ast" not in imported, module.__name__
    assert list(inspect.signature(checklist_source.text_facts).parameters) == [
        "parsed", "path", "module"]
