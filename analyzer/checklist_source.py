"""Checklist facts that only the source text shows: argparse options, training constants
and gradient accumulation.

The per-file walk records calls whose callee it can name; ``parser.add_argument(...)`` on a
local parser and ``optimizer.step()`` inside ``if i % k == 0`` are not among them. These
helpers read a file's text with :mod:`ast`, in the scan's worker processes, and the facts
are cached with the file's other facts; they never touch the disk.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

# Normalised option / variable name -> the training parameter it sets.
TRAINING_KEYS = {
    "epochs": "epochs", "epoch": "epochs", "num_epochs": "epochs", "n_epochs": "epochs",
    "max_epochs": "epochs", "total_epochs": "epochs", "max_epoch": "epochs",
    "batch_size": "batch size", "batchsize": "batch size", "bs": "batch size",
    "train_batch_size": "batch size", "per_device_train_batch_size": "batch size",
    "lr": "learning rate", "learning_rate": "learning rate", "base_lr": "learning rate",
    "weight_decay": "weight decay", "wd": "weight decay",
    "momentum": "momentum",
    "warmup_epochs": "warm-up", "warmup": "warm-up", "warmup_steps": "warm-up",
    "warmup_iters": "warm-up",
    "accumulation_steps": "gradient accumulation", "accum_steps": "gradient accumulation",
    "gradient_accumulation_steps": "gradient accumulation", "accum_iter": "gradient accumulation",
    "grad_accum_steps": "gradient accumulation", "accumulate": "gradient accumulation",
    "clip_grad": "gradient clipping", "clip_grad_norm": "gradient clipping",
    "grad_clip": "gradient clipping", "max_grad_norm": "gradient clipping",
    "ema": "EMA", "model_ema": "EMA", "ema_decay": "EMA", "model_ema_decay": "EMA",
    "amp": "AMP", "use_amp": "AMP", "fp16": "AMP", "mixed_precision": "AMP",
    "seed": "seed",
}


# Names that hold a running counter when assigned a number (``epoch = 0``), unlike
# ``--epoch`` on the command line, which sets the schedule.
COUNTERS = frozenset({"epoch", "step", "iteration"})


def _on_self(target: ast.Attribute) -> bool:
    """``self.<attr> = ...`` stores object state (``self.epoch = 0``), not a setting."""
    return isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")


@dataclass(frozen=True, slots=True)
class SourceFact:
    """One value read from the source: what it sets, its name, value text and place."""

    key: str  # the training parameter (``epochs``)
    name: str  # as written (``--epochs``, ``EPOCHS``)
    value: str
    path: str
    line: int
    cell: int | None


def normalise(name: str) -> str:
    """``--batch-size`` / ``BATCH_SIZE`` -> ``batch_size``."""
    return name.lstrip("-").replace("-", "_").lower()


def parse_source(text: str) -> ast.Module | None:
    """The syntax tree of a scanned text, None when it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceText:
    """A scanned text split into lines once, with its syntax tree's nodes, so that the
    facts below read source segments without re-splitting the text for every node."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.lines = _NEWLINE.split(text)
        self.nodes = list(ast.walk(tree))

    def segment(self, node: ast.AST, limit: int = 80) -> str:
        """The source text of a node (as ``ast.get_source_segment``), shortened to
        ``limit`` characters."""
        place = [getattr(node, name, None)
                 for name in ("lineno", "end_lineno", "col_offset", "end_col_offset")]
        line, end, col, end_col = (p if isinstance(p, int) else -1 for p in place)
        if min(line, end, col, end_col) < 0 or end > len(self.lines):
            text = ast.unparse(node)
        else:
            rows = [r.encode() for r in self.lines[line - 1:end]]
            rows[-1] = rows[-1][:end_col]
            rows[0] = rows[0][col:]
            text = "\n".join(r.decode(errors="replace") for r in rows)
        return text if len(text) <= limit else text[:limit - 3] + "..."


def _option_name(call: ast.Call) -> str | None:
    """The long option of an ``add_argument`` call (``--batch-size``), else None."""
    names = [a.value for a in call.args
             if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [n for n in names if n.startswith("--")]
    short = [n for n in names if n.startswith("-")]
    chosen = long or short
    return chosen[0] if chosen else None


def argparse_facts(src: SourceText, path: str, cell: int | None) -> Iterator[SourceFact]:
    """Training parameters from ``add_argument("--epochs", default=...)`` calls."""
    for node in src.nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        option = _option_name(node)
        if option is None:
            continue
        key = TRAINING_KEYS.get(normalise(option))
        if key is None:
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        action = next((k.value for k in node.keywords if k.arg == "action"), None)
        if default is not None:
            value = f"default {src.segment(default)}"
        elif isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
            value = f"flag ({action.value}), off unless given"
        else:
            value = "no default in the code (set on the command line)"
        yield SourceFact(key, option, value, path, node.lineno, cell)


def _constant_text(src: SourceText, value: ast.expr) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float, bool)):
        return src.segment(value)
    if (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
            and isinstance(value.operand, ast.Constant)):
        return src.segment(value)
    return None


def constant_facts(src: SourceText, path: str, cell: int | None) -> Iterator[SourceFact]:
    """Training parameters from plain assignments (``EPOCHS = 300``, ``cfg["lr"] = 0.1``,
    ``args.lr = 0.1``; not ``self.epoch = 0``, which is object state) and dict literals
    (``dict(lr=0.1)``, ``{"batch_size": 64}``) of numbers."""
    for node in src.nodes:
        pairs: list[tuple[str, ast.expr, int]] = []
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                pairs.append((target.id, node.value, node.lineno))
            elif isinstance(target, ast.Attribute) and not _on_self(target):
                pairs.append((target.attr, node.value, node.lineno))
            elif (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                  and isinstance(target.slice.value, str)):
                pairs.append((target.slice.value, node.value, node.lineno))
        elif isinstance(node, ast.Dict):
            pairs.extend((k.value, v, k.lineno)
                         for k, v in zip(node.keys, node.values, strict=True)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "dict"):
            pairs.extend((k.arg, k.value, k.value.lineno) for k in node.keywords if k.arg)
        for name, value, line in pairs:
            if normalise(name) in COUNTERS:
                continue
            key = TRAINING_KEYS.get(normalise(name))
            shown = _constant_text(src, value)
            if key is not None and shown is not None:
                yield SourceFact(key, name, shown, path, line, cell)


def _lr_key(target: ast.expr) -> ast.expr | None:
    """The container of a ``<container>["lr"]`` assignment target, else None."""
    if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
            and target.slice.value == "lr"):
        return target.value
    return None


def _mentions_param_groups(expr: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "param_groups" for n in ast.walk(expr))


def lr_update_facts(src: SourceText, path: str, cell: int | None) -> Iterator[SourceFact]:
    """A hand-written learning-rate policy: ``group["lr"] = ...`` for the groups of
    ``optimizer.param_groups`` (in a loop over them or indexed directly)."""
    groups: set[str] = set()
    for node in src.nodes:
        if (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
                and _mentions_param_groups(node.iter)):
            groups.add(node.target.id)
    for node in src.nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            container = _lr_key(target)
            if container is None:
                continue
            if ((isinstance(container, ast.Name) and container.id in groups)
                    or _mentions_param_groups(container)):
                yield SourceFact("learning-rate policy", src.segment(target),
                                 f"set by code: {src.segment(node.value)}", path,
                                 node.lineno, cell)


def _has_modulo(expr: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(expr))


def _method_calls(body: list[ast.stmt], name: str) -> list[ast.Call]:
    return [n for stmt in body for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == name]


def _receiver(call: ast.Call) -> str:
    assert isinstance(call.func, ast.Attribute)
    return ast.unparse(call.func.value)


def _steps_an_optimizer(body: list[ast.stmt], zeroed: set[str]) -> bool:
    """True when ``body`` steps something whose gradients the loop zeroes (an optimizer),
    directly (``opt.step()``) or through a loss scaler (``scaler.step(opt)``)."""
    if _method_calls(body, "zero_grad"):
        return bool(_method_calls(body, "step"))
    for call in _method_calls(body, "step"):
        first = ast.unparse(call.args[0]) if call.args else None
        if _receiver(call) in zeroed or first in zeroed:
            return True
    return False


def accumulation_facts(src: SourceText, path: str, cell: int | None) -> Iterator[SourceFact]:
    """Gradient accumulation: inside a loop that calls ``backward()``, an optimizer step
    under ``if <i> % <k> ...`` (an optimizer being what the loop calls ``zero_grad()`` on;
    ``if epoch % 10 == 0: scheduler.step()`` is not accumulation)."""
    for loop in src.nodes:
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        if not _method_calls(loop.body, "backward"):
            continue
        zeroed = {_receiver(c) for c in _method_calls(loop.body, "zero_grad")}
        for node in ast.walk(loop):
            if (isinstance(node, ast.If) and _has_modulo(node.test)
                    and _steps_an_optimizer(node.body, zeroed)):
                yield SourceFact("gradient accumulation", "step every k iterations",
                                 f"optimizer step under if {ast.unparse(node.test)}",
                                 path, node.lineno, cell)


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_words(name: str) -> set[str]:
    """The lower-case words of a CamelCase / snake_case name (``ModelEMA`` -> model, ema)."""
    return {w.lower() for w in _WORDS.findall(name)}


def text_facts(text: str, path: str, cell: int | None) -> list[SourceFact]:
    """The checklist facts of one source text (a file or a notebook cell).

    The scan runs this per file in its worker processes and caches the result with the
    file's other facts, so a warm re-scan does not parse the text again.
    """
    tree = parse_source(text)
    if tree is None:
        return []
    src = SourceText(text, tree)
    return [*argparse_facts(src, path, cell), *constant_facts(src, path, cell),
            *accumulation_facts(src, path, cell), *lr_update_facts(src, path, cell)]


def unique_facts(facts: list[SourceFact]) -> list[SourceFact]:
    """Facts without repeats, in file order."""
    unique = list(dict.fromkeys(facts))
    unique.sort(key=lambda f: (f.path, f.cell or 0, f.line))
    return unique
