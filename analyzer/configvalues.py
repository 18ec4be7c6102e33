"""Configuration values: what the code sets its hyper-parameters to, and where.

Two levels, as everywhere in the analyzer:

**Per file** (:func:`file_config_values`, run in the scan's workers on the libcst tree the
scan already parsed; the result is cached with the file's other facts). One
:class:`ConfigValue` per setting whose value is written in the code:

- ``parser.add_argument("--lr", type=float, default=0.1)``: kind ``argparse``, key ``lr``
  (a ``store_true`` flag has the value ``False``; an option without a default the value
  ``None`` with the text "no default");
- ``self.max_epoch = 300`` in a class's ``__init__`` (experiment and config classes):
  kind ``attribute``, owner the class;
- class-body fields (``lr: float = 0.1`` in a dataclass, ``EPOCHS = 300`` in a class):
  kind ``field``, owner the class;
- ``EPOCHS = 300`` at module level (kind ``constant``) or in a function (``variable``);
  ``cfg.lr = 0.1`` / ``args.lr = 0.1`` (kind ``attribute``, no owner);
- ``{"lr": 0.1}``, ``dict(lr=0.1)`` and ``cfg["lr"] = 0.1``: kind ``dict``;
- a YAML or JSON file the code names by a literal path (``yaml.safe_load(open(
  "configs/train.yaml"))``, ``default="cfg.json"``): kind ``file``, the value is the
  path; :func:`read_config_files` reads such files at the repository level (kinds
  ``yaml`` / ``json``, one value per ``key: scalar`` line, the key dotted by nesting).

Only literal values are kept (numbers, strings, booleans, None, tuples and lists of
them), with their source text, their Python value and their line.

**Per repository** (:class:`ConfigIndex`): every file's values joined, to answer "what
value does config key X have":

- ``index.get("max_epoch")`` -> every setting of that key (normalised: ``--max-epoch``,
  ``MAX_EPOCH`` and ``max_epoch`` are one key), argparse defaults and class attributes
  first;
- ``index.resolve("args.lr")``, ``index.resolve("opt.latent_dim")``,
  ``index.resolve("cfg.TRAIN.BASE_LR")``, ``index.resolve("self.max_epoch",
  owner="pkg.exps.Exp")`` -> the one :class:`ConfigValue` the expression most likely
  reads (an attribute of ``owner`` or its bases first, then argparse options, then
  fields, constants and file values), or None;
- :func:`scan_index` builds the index of a finished scan;
- ``index.by_param("epochs")`` -> the settings of a migration-guide training parameter
  (:data:`TRAINING_KEYS` maps names to parameters).

The checklist reads :meth:`ConfigIndex.by_param`; the Cell generator gives a made-up
configuration object the values of the settings written field by field
(``_C.MODEL.HEAD.NUM_CONVS = 4``, see ``skeletons/config_tree.py``).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from msready.analyzer.findings import compact_reduce
from msready.analyzer.parse import Parsed
from msready.analyzer.positions import LEAVES
from msready.analyzer.syntax import children, literal_of

if TYPE_CHECKING:
    from msready.analyzer.result import ScanResult

# The training parameter of the migration guide's checklist -> the names that set it.
_PARAM_NAMES: dict[str, tuple[str, ...]] = {
    "epochs": ("epochs", "epoch", "num_epochs", "n_epochs", "max_epochs", "total_epochs",
        "max_epoch", "train_epochs", "max_iter", "max_iters", "total_steps", "max_steps",
        "train_num_steps"),
    "batch size": ("batch_size", "batchsize", "bs", "train_batch_size",
        "per_device_train_batch_size", "ims_per_batch", "batch_size_per_gpu"),
    "learning rate": ("lr", "learning_rate", "base_lr", "basic_lr_per_img", "train_lr", "blr"),
    "weight decay": ("weight_decay", "wd"),
    "momentum": ("momentum", "nesterov"),
    "optimizer": ("opt", "optimizer", "optim"),
    "learning-rate policy": ("sched", "scheduler", "lr_scheduler", "lr_policy", "min_lr",
        "min_lr_ratio", "lr_decay", "decay_rate", "gamma", "steps", "lr_steps", "milestones"),
    "warm-up": ("warmup_epochs", "warmup", "warmup_steps", "warmup_iters", "warmup_lr",
        "warmup_factor", "warmup_method", "warm_epoch"),
    "gradient accumulation": ("accumulation_steps", "accum_steps", "gradient_accumulation_steps",
        "accum_iter", "grad_accum_steps", "accumulate", "gradient_accumulate_every"),
    "gradient clipping": ("clip_grad", "clip_grad_norm", "grad_clip", "max_grad_norm",
        "clip_value", "clip_max_norm"),
    "EMA": ("ema", "model_ema", "ema_decay", "model_ema_decay", "use_ema", "ema_update_every"),
    "AMP": ("amp", "use_amp", "fp16", "mixed_precision", "half"),
    "seed": ("seed",),
    "augmentation": ("no_aug_epochs", "close_mosaic", "mosaic", "mixup", "cutmix", "degrees",
        "translate", "shear", "mosaic_scale", "mixup_scale", "hflip", "vflip", "color_jitter",
        "aa", "auto_augment", "reprob", "smoothing", "label_smoothing", "jitter", "scale_range",
        "multiscale_range", "random_size"),
}
# Normalised name -> the training parameter it sets.
TRAINING_KEYS = {name: param for param, names in _PARAM_NAMES.items() for name in names}
# ``*_prob`` (``mixup_prob``, ``flip_prob``) are augmentation probabilities.
AUGMENTATION_SUFFIXES = ("_prob", "_probability")
# Names that hold a running counter when assigned a number (``epoch = 0``), not a setting.
COUNTERS = frozenset({"epoch", "step", "iteration", "iter", "steps"})
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
MAX_CONFIG_FILE_BYTES = 256 * 1024
MAX_VALUE_TEXT = 80
MIN_CLASS_SETTINGS = 3
CONFIG_WORDS = frozenset({"exp", "experiment", "config", "cfg", "conf", "args", "opts",
                          "options", "hparams", "hyperparameters", "params", "settings", "recipe"})
ARGS_NAMES = frozenset({"args", "opt", "opts", "arguments", "flags", "FLAGS", "hparams",
                         "hp", "params", "parsed", "config_args"})


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One setting written in the code (or in a config file it loads).

    ``name`` is as written (``--batch-size``, ``self.max_epoch``, ``train.lr``), ``key``
    the normalised last part (``batch_size``), ``param`` the training parameter it sets
    (``batch size``; empty for other names), ``value`` the value's source text and
    ``literal`` its Python value. ``owner`` is the class of an attribute or field.
    """

    __reduce__ = compact_reduce

    key: str
    name: str
    value: str
    path: str
    line: int
    cell: int | None
    kind: str = "constant"
    owner: str | None = None
    param: str = ""
    literal: object = None


def normalise(name: str) -> str:
    """``--batch-size`` / ``BATCH_SIZE`` / ``cfg.SOLVER.BASE_LR`` -> ``batch_size`` /
    ``base_lr`` (the last part, lower case, ``_`` for ``-``)."""
    return name.lstrip("-").rsplit(".", 1)[-1].replace("-", "_").lower()


def training_param(key: str) -> str:
    """The training parameter a normalised name sets, or ``""``."""
    if key in TRAINING_KEYS:
        return TRAINING_KEYS[key]
    if key.endswith(AUGMENTATION_SUFFIXES) or key.startswith(("aug_", "use_mixup",
                                                              "use_mosaic")):
        return "augmentation"
    return ""


# ----- per file -------------------------------------------------------------------------


def node_text(parsed: Parsed, node: cst.CSTNode, ancestors: Sequence[cst.CSTNode] = ()) -> str:
    """A node's source text, sliced from the file by its span ("" when unknown);
    ``ancestors`` (see :meth:`Parsed.span`) make it cheaper."""
    if type(node) in LEAVES:  # a token: its value is its text
        return node.value  # type: ignore[attr-defined,no-any-return]
    span = parsed.span(node, ancestors)
    if span is None:
        return ""
    starts = parsed.line_starts
    start = starts[span.line - 1] + span.column - 1
    end = starts[span.end_line - 1] + span.end_column - 1
    return parsed.text[start:end]


# The nodes :meth:`ConfigReader.enter` reads or keeps scope for; the others it skips.
READ_NODES = frozenset({cst.ClassDef, cst.FunctionDef, cst.Assign, cst.AnnAssign, cst.Call,
                        cst.Dict})
_SCOPES = (cst.ClassDef, cst.FunctionDef)


class ConfigReader:
    """Reads a file's configuration values as a walk in source order enters and leaves
    its nodes, keeping the class / function it is in. The file's one walk
    (:class:`msready.analyzer.walk.FileWalker`) keeps the nodes it meets and feeds them
    in once it is done; :func:`file_config_values` walks the tree for it."""

    def __init__(self, parsed: Parsed, path: str, module: str,
                 ancestors: list[cst.CSTNode] | None = None) -> None:
        self.parsed = parsed
        self.path = path
        self.module = module
        self.out: list[ConfigValue] = []
        # The module down to the node walked (the driving walk's own list, when given).
        self.ancestors: list[cst.CSTNode] = [] if ancestors is None else ancestors
        self._scopes: list[tuple[str | None, str | None]] = [(None, None)]

    def values(self) -> list[ConfigValue]:
        """The values read (see :func:`file_config_values`)."""
        out = self.out
        settings = Counter(v.owner for v in out if v.kind == "attribute" and v.param)
        return [replace(v, param="") if v.kind == "attribute" and v.owner and v.param
                and not _config_class(v.owner, settings[v.owner]) else v for v in out]

    def text(self, node: cst.CSTNode) -> str:
        return node_text(self.parsed, node, self.ancestors)

    def place(self, node: cst.CSTNode) -> tuple[int, int | None] | None:
        span = self.parsed.span(node, self.ancestors)
        if span is None:
            return None
        if self.parsed.cells is not None:
            cell, line = self.parsed.cells.locate(span.line)
            return line, cell
        return span.line, None

    def add(self, name: str, value: cst.BaseExpression | None, node: cst.CSTNode, kind: str,
            owner: str | None = None, shown: str | None = None, literal: object = None) -> None:
        key = normalise(name)
        if not key or not key.replace("_", "").isalnum():
            return
        if value is not None:
            text = self.text(value)
            literal, ok = literal_of(value, text)
            if not ok:
                literal = _arithmetic(value)
                if literal is None:
                    return
            if isinstance(literal, tuple) and not text.startswith("("):
                text = f"({text})"
            if key in COUNTERS and kind != "argparse" and isinstance(literal, int):
                return
            shown = text
        literal = _hashable(literal)
        where = self.place(node)
        if where is None or shown is None:
            return
        shown = " ".join(shown.split())
        if len(shown) > MAX_VALUE_TEXT:
            shown = shown[:MAX_VALUE_TEXT - 3] + "..."
        self.out.append(ConfigValue(key, name, shown, self.path, where[0], where[1], kind,
                                    owner, training_param(key), literal))
        if isinstance(literal, str) and literal.endswith(CONFIG_SUFFIXES):
            self.out.append(ConfigValue("config_file", name, literal, self.path, where[0],
                                        where[1], "file", owner, literal=literal))

    # -- the walk --

    def enter(self, node: cst.CSTNode) -> None:
        """Read a node as the walk enters it (the ancestors end with it)."""
        kind = type(node)
        if kind not in READ_NODES:
            return
        cls, fn = self._scopes[-1]
        if kind is cst.ClassDef:
            assert isinstance(node, cst.ClassDef)
            inner = f"{cls or self.module}.{node.name.value}"
            self.ancestors.append(node.body)
            for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                self.class_field(stmt, inner)
            self.ancestors.pop()
            self._scopes.append((inner, None))
        elif kind is cst.FunctionDef:
            self._scopes.append((cls, node.name.value))  # type: ignore[attr-defined]
        elif kind is cst.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                self.assignment(target.target, node.value, node, cls, fn)  # type: ignore[attr-defined]
        elif kind is cst.AnnAssign:
            assert isinstance(node, cst.AnnAssign)
            if node.value is not None and (fn is not None or cls is None):
                self.assignment(node.target, node.value, node, cls, fn)
        elif kind is cst.Call:
            self.call(node)  # type: ignore[arg-type]
        else:
            for element in node.elements:  # type: ignore[attr-defined]
                if isinstance(element, cst.DictElement) and isinstance(element.key,
                                                                       cst.SimpleString):
                    self.add(_string(element.key), element.value, element.key, "dict")

    def leave(self, node: cst.CSTNode) -> None:
        """Leave a node the walk entered."""
        if isinstance(node, _SCOPES):
            self._scopes.pop()

    def class_field(self, stmt: cst.BaseStatement, cls: str) -> None:
        """``lr: float = 0.1`` / ``EPOCHS = 300`` in a class body."""
        if not isinstance(stmt, cst.SimpleStatementLine):
            return
        self.ancestors.append(stmt)
        self._class_field(stmt, cls)
        self.ancestors.pop()

    def _class_field(self, stmt: cst.SimpleStatementLine, cls: str) -> None:
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                if small.value is not None:
                    value = _field_default(small.value)
                    if value is not None:
                        self.add(small.target.value, value, small, "field", cls)
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(
                    small.targets[0].target, cst.Name):
                self.add(small.targets[0].target.value, small.value, small, "field", cls)

    def assignment(self, target: cst.BaseExpression, value: cst.BaseExpression,
                   node: cst.CSTNode, cls: str | None, fn: str | None) -> None:
        if isinstance(target, cst.Name):
            if fn is None and cls is not None:
                return  # a class-body field, read by class_field
            if fn is None or training_param(normalise(target.value)):
                # A local variable counts only when its name is a training parameter.
                self.add(target.value, value, node, "constant" if fn is None else "variable")
        elif isinstance(target, cst.Attribute):
            receiver = target.value
            if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
                if fn == "__init__" or (fn is not None and fn.startswith(("set_", "init"))):
                    self.add(f"self.{target.attr.value}", value, node, "attribute", cls)
            else:
                self.add(self.text(target), value, node, "attribute")
        elif isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                self.add(_string(index.value), value, node, "dict")

    def call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else (
            func.value if isinstance(func, cst.Name) else "")
        if name == "add_argument":
            self.argparse_option(node)
        elif name == "dict":
            for arg in node.args:
                if arg.keyword is not None and not arg.star:
                    self.add(arg.keyword.value, arg.value, arg.keyword, "dict")
        elif name in ("open", "load", "safe_load", "full_load", "fromfile", "from_file",
                      "merge_from_file", "load_config", "read_config", "parse_config"):
            for arg in node.args[:1]:
                if isinstance(arg.value, cst.SimpleString):
                    path = arg.value.evaluated_value
                    if isinstance(path, str) and path.endswith(CONFIG_SUFFIXES):
                        self.add("config_file", None, node, "file", shown=path, literal=path)

    def argparse_option(self, node: cst.Call) -> None:
        names = [a.value.evaluated_value for a in node.args
                 if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        options = [n for n in names if isinstance(n, str)]
        chosen = [n for n in options if n.startswith("--")] or [
            n for n in options if n.startswith("-")]
        if not chosen:
            return
        option = chosen[0]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        default = keywords.get("default")
        action = keywords.get("action")
        if default is not None:
            self.add(option, default, node, "argparse")
            return
        if isinstance(action, cst.SimpleString) and action.evaluated_value in (
                "store_true", "store_false"):
            flag = action.evaluated_value == "store_false"
            self.add(option, None, node, "argparse",
                     shown=f"{flag} (flag, {action.evaluated_value})", literal=flag)
        else:
            self.add(option, None, node, "argparse", shown="no default (set on the command line)")


_OPERATORS: dict[type, Callable[[float, float], float]] = {
    cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b, cst.Divide: lambda a, b: a / b,
    cst.Power: lambda a, b: a ** b if abs(b) < 64 else float("nan"),
}


def _arithmetic(node: cst.BaseExpression) -> float | None:
    """The value of arithmetic on number literals (``0.01 / 64``, ``2 ** 10``), else None."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _arithmetic(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in _OPERATORS:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if left is None or right is None:
            return None
        try:
            return _OPERATORS[type(node.operator)](left, right)
        except (ZeroDivisionError, OverflowError):
            return None
    return None


def _string(node: cst.SimpleString) -> str:
    value = node.evaluated_value
    return value if isinstance(value, str) else ""


def _hashable(value: object) -> object:
    """A literal as a hashable value (lists become tuples; other containers None)."""
    if isinstance(value, (list, tuple)):
        items = tuple(_hashable(v) for v in value)
        return None if any(i is None and v is not None for i, v in zip(items, value,
                                                                         strict=True)) else items
    return value if isinstance(value, (int, float, str, bool, bytes, complex)) else None


def _field_default(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The default of a dataclass field: the value, or ``field(default=...)``'s."""
    if isinstance(value, cst.Call):
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                return arg.value
        return None
    return value


def _config_class(owner: str, settings: int) -> bool:
    """A class whose attributes are settings: named for it (``Exp``, ``TrainConfig``) or
    setting at least :data:`MIN_CLASS_SETTINGS` training parameters."""
    words = set(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", owner.rsplit(".", 1)[-1]))
    return settings >= MIN_CLASS_SETTINGS or bool({w.lower() for w in words} & CONFIG_WORDS)


def file_config_values(parsed: Parsed, path: str, module: str) -> list[ConfigValue]:
    """Every configuration value one parsed file sets (see the module docstring).

    ``self.<attr>`` values keep their training parameter only in configuration classes
    (:func:`_config_class`): ``self.seed = 1234`` in a sampler is object state.
    """
    reader = ConfigReader(parsed, path, module)
    ancestors = reader.ancestors
    stack: list[tuple[cst.CSTNode, bool]] = [(parsed.module, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            reader.leave(node)
            ancestors.pop()
            continue
        ancestors.append(node)
        reader.enter(node)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children(node)))
    return reader.values()


# ----- config files the code loads ------------------------------------------------------

_YAML_LINE = re.compile(r"^(?P<indent>\s*)(?:-\s+)?(?P<key>[A-Za-z_][\w.-]*)\s*:\s*"
                        r"(?P<value>[^#]*?)\s*(?:#.*)?$")
_JSON_PAIR = re.compile(r'"(?P<key>[A-Za-z_][\w.-]*)"\s*:\s*(?P<value>-?[\d.eE+-]+|true|false|'
                        r'null|"[^"\n]*")')


def yaml_values(text: str, path: str) -> Iterator[ConfigValue]:
    """One value per ``key: scalar`` line of a YAML file, the key dotted by indentation
    (``train:\\n  lr: 0.1`` -> ``train.lr``)."""
    stack: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _YAML_LINE.match(line)
        if match is None:
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, value = match["key"], match["value"]
        if not value:
            stack.append((indent, key))
            continue
        dotted = ".".join([*(k for _, k in stack), key])
        norm = normalise(key)
        yield ConfigValue(norm, dotted, value[:MAX_VALUE_TEXT], path, number, None, "yaml",
                          None, training_param(norm), _scalar(value))


def json_values(text: str, path: str) -> Iterator[ConfigValue]:
    """One value per ``"key": scalar`` pair of a JSON file."""
    for number, line in enumerate(text.splitlines(), 1):
        for match in _JSON_PAIR.finditer(line):
            norm = normalise(match["key"])
            value = match["value"]
            try:
                literal = json.loads(value)
            except ValueError:
                literal = None
            yield ConfigValue(norm, match["key"], value, path, number, None, "json", None,
                              training_param(norm), literal)


def _scalar(text: str) -> object:
    text = text.strip().strip("'\"")
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_config_files(root: Path, values: Iterable[ConfigValue]) -> list[ConfigValue]:
    """The values of the YAML / JSON files the code names (kind ``file``), read from the
    repository ``root`` (relative to it or to the naming file's folder; never outside)."""
    out: list[ConfigValue] = []
    done: set[Path] = set()
    real_root = root.resolve()
    for value in values:
        if value.kind != "file" or not isinstance(value.literal, str):
            continue
        for base in (real_root, (real_root / value.path).parent):
            candidate = (base / value.literal).resolve()
            if candidate in done or real_root not in candidate.parents:
                continue
            if not candidate.is_file() or candidate.stat().st_size > MAX_CONFIG_FILE_BYTES:
                continue
            done.add(candidate)
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            rel = candidate.relative_to(real_root).as_posix()
            reader = json_values if rel.endswith(".json") else yaml_values
            out.extend(reader(text, rel))
            break
    return out


# ----- per repository -------------------------------------------------------------------

# Which settings a name most likely reads, best first.
_KIND_RANK = {"argparse": 0, "attribute": 1, "field": 2, "yaml": 3, "json": 3, "constant": 4,
              "dict": 5, "variable": 6, "file": 7}


class ConfigIndex:
    """Every configuration value of a repository, queryable by key (module docstring)."""

    def __init__(self, values: Iterable[ConfigValue],
                 bases: Callable[[str], Sequence[str]] | None = None) -> None:
        self._by_key: dict[str, list[ConfigValue]] = defaultdict(list)
        for value in dict.fromkeys(values):
            self._by_key[value.key].append(value)
        for found in self._by_key.values():
            found.sort(key=lambda v: (_KIND_RANK.get(v.kind, 9), v.path, v.cell or 0, v.line))
        self._bases = bases or (lambda cls: [cls])

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_key.values())

    def get(self, key: str) -> list[ConfigValue]:
        """Every setting of a key (any spelling), most likely first."""
        return list(self._by_key.get(normalise(key), ()))

    def by_param(self, param: str) -> list[ConfigValue]:
        """Every setting of a training parameter (``epochs``), in file order."""
        found = [v for values in self._by_key.values() for v in values if v.param == param]
        return sorted(found, key=lambda v: (v.path, v.cell or 0, v.line))

    def resolve(self, expr: str, owner: str | None = None) -> ConfigValue | None:
        """The value an expression such as ``args.lr``, ``self.max_epoch`` or
        ``cfg.TRAIN.BASE_LR`` most likely reads; ``owner`` is the class of ``self``."""
        parts = expr.split(".")
        found = self.get(parts[-1])
        if not found:
            return None
        head = parts[0] if len(parts) > 1 else ""
        if head in ("self", "cls") and owner is not None:
            classes = self._bases(owner)
            mine = [v for v in found if v.owner in classes and v.kind in ("attribute", "field")]
            if mine:
                return min(mine, key=lambda v: classes.index(v.owner or ""))
        if head in ARGS_NAMES:
            options = [v for v in found if v.kind == "argparse"]
            if options:
                return options[0]
        dotted = ".".join(parts[1:]).lower()
        in_files = [v for v in found if v.kind in ("yaml", "json") and dotted
                    and v.name.lower().endswith(dotted)]
        return in_files[0] if in_files else found[0]


def scan_index(result: ScanResult) -> ConfigIndex:
    """The index of a whole scan: every file's values and the config files they load,
    with the repository's class bases for ``self.<attr>`` lookups."""
    values = [v for file in result.files for v in file.source_facts]
    return ConfigIndex([*values, *result.config_files], result.model.mro)
