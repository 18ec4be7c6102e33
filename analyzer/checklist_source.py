"""Checklist facts of one file, read from the libcst tree the scan already parsed: the
configuration values (:mod:`msready.analyzer.configvalues`), gradient accumulation and
learning rates set by hand.

The per-file walk records calls whose callee it can name; ``optimizer.step()`` inside
``if i % k == 0`` and ``group["lr"] = ...`` are not among them. :func:`text_facts` runs in
the scan's worker processes on the parsed tree (no second parse) and the facts are cached
with the file's other facts; it never touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst

from msready.analyzer.configvalues import ConfigValue, file_config_values, node_text
from msready.analyzer.parse import Parsed
from msready.analyzer.syntax import descendants

# A checklist fact is a configuration value: what it sets (``param``), its name as
# written, its value's text and its line.
SourceFact = ConfigValue


class _Tree:
    """A parsed file with the helpers the facts below need."""

    def __init__(self, parsed: Parsed, path: str) -> None:
        self.parsed = parsed
        self.path = path
        self._nodes: list[cst.CSTNode] | None = None

    @property
    def nodes(self) -> list[cst.CSTNode]:
        """Every node of the file, in source order (listed when first asked for)."""
        if self._nodes is None:
            self._nodes = list(descendants(self.parsed.module))
        return self._nodes

    def text(self, node: cst.CSTNode, limit: int = 80) -> str:
        text = " ".join(node_text(self.parsed, node).split())
        return text if len(text) <= limit else text[:limit - 3] + "..."

    def fact(self, param: str, name: str, value: str, node: cst.CSTNode) -> ConfigValue | None:
        span = self.parsed.span(node)
        if span is None:
            return None
        line, cell = span.line, None
        if self.parsed.cells is not None:
            cell, line = self.parsed.cells.locate(span.line)
        return ConfigValue(param.replace(" ", "_"), name, value, self.path, line, cell,
                           "code", None, param)


def _method_calls(nodes: Sequence[cst.CSTNode], name: str) -> list[cst.Call]:
    # Type checks, not isinstance: libcst's node classes are ABCs, whose isinstance is slow.
    return [n for top in nodes for n in descendants(top)  # type: ignore[misc]
            if type(n) is cst.Call and type(n.func) is cst.Attribute  # type: ignore[attr-defined]
            and n.func.attr.value == name]  # type: ignore[attr-defined]


def _body(node: cst.For | cst.While | cst.If) -> Sequence[cst.BaseStatement]:
    body = node.body
    return body.body if isinstance(body, cst.IndentedBlock) else []


def _has_modulo(expr: cst.BaseExpression) -> bool:
    return any(type(n) is cst.BinaryOperation and type(n.operator) is cst.Modulo  # type: ignore[attr-defined]
               for n in descendants(expr))


def _steps_an_optimizer(tree: _Tree, body: Sequence[cst.BaseStatement],
                        zeroed: set[str]) -> bool:
    """True when ``body`` steps something whose gradients the loop zeroes (an optimizer),
    directly (``opt.step()``) or through a loss scaler (``scaler.step(opt)``)."""
    if _method_calls(body, "zero_grad"):
        return bool(_method_calls(body, "step"))
    for call in _method_calls(body, "step"):
        assert isinstance(call.func, cst.Attribute)
        first = tree.text(call.args[0].value) if call.args else None
        if tree.text(call.func.value) in zeroed or first in zeroed:
            return True
    return False


def accumulation_facts(tree: _Tree) -> Iterator[ConfigValue]:
    """Gradient accumulation: inside a loop that calls ``backward()``, an optimizer step
    under ``if <i> % <k> ...`` (an optimizer being what the loop calls ``zero_grad()`` on;
    ``if epoch % 10 == 0: scheduler.step()`` is not accumulation)."""
    for loop in tree.nodes:
        if type(loop) is not cst.For and type(loop) is not cst.While:
            continue
        body = _body(loop)
        if not _method_calls(body, "backward"):
            continue
        zeroed = {tree.text(c.func.value) for c in _method_calls(body, "zero_grad")
                  if isinstance(c.func, cst.Attribute)}
        for node in descendants(loop):
            if (type(node) is cst.If and _has_modulo(node.test)
                    and _steps_an_optimizer(tree, _body(node), zeroed)):
                fact = tree.fact("gradient accumulation", "step every k iterations",
                                 f"optimizer step under if {tree.text(node.test)}", node)
                if fact is not None:
                    yield fact


def _lr_container(target: cst.BaseExpression) -> cst.BaseExpression | None:
    """The container of a ``<container>["lr"]`` assignment target, else None."""
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        index = target.slice[0].slice
        if (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)
                and index.value.evaluated_value == "lr"):
            return target.value
    return None


def _mentions_param_groups(expr: cst.CSTNode) -> bool:
    return any(type(n) is cst.Attribute and n.attr.value == "param_groups"  # type: ignore[attr-defined]
               for n in descendants(expr))


def lr_update_facts(tree: _Tree) -> Iterator[ConfigValue]:
    """A hand-written learning-rate policy: ``group["lr"] = ...`` for the groups of
    ``optimizer.param_groups`` (in a loop over them or indexed directly)."""
    groups = {loop.target.value for loop in tree.nodes  # type: ignore[attr-defined]
              if type(loop) is cst.For and type(loop.target) is cst.Name  # type: ignore[attr-defined]
              and _mentions_param_groups(loop.iter)}  # type: ignore[attr-defined]
    for node in tree.nodes:
        if type(node) is not cst.Assign:
            continue
        for target in node.targets:
            container = _lr_container(target.target)
            if container is None:
                continue
            if ((isinstance(container, cst.Name) and container.value in groups)
                    or _mentions_param_groups(container)):
                fact = tree.fact("learning-rate policy", tree.text(target.target),
                                 f"set by code: {tree.text(node.value)}", node)
                if fact is not None:
                    yield fact


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_words(name: str) -> set[str]:
    """The lower-case words of a CamelCase / snake_case name (``ModelEMA`` -> model, ema)."""
    return {w.lower() for w in _WORDS.findall(name)}


def text_facts(parsed: Parsed, path: str, module: str) -> list[ConfigValue]:
    """The checklist facts of one parsed file (a module, or a notebook's joined cells).

    The scan gets the same facts from the file's one walk (:func:`code_facts`, with the
    configuration values read during the walk) in its worker processes and caches them
    with the file's other facts, so a warm re-scan does not read the tree again.
    """
    try:
        values = file_config_values(parsed, path, module)
    except RecursionError:  # nested too deeply: the file's other facts still count
        return []
    return code_facts(parsed, path, values)


def code_facts(parsed: Parsed, path: str, values: list[ConfigValue] | None) -> list[ConfigValue]:
    """The checklist facts of a file whose configuration ``values`` are read (None when
    reading them failed, as for a file nested too deeply: no facts)."""
    if values is None:
        return []
    try:
        tree = _Tree(parsed, path)
        facts = list(values)
        # Both need a method or attribute of that name, and libcst keeps names as written.
        if "backward" in parsed.text:
            facts.extend(accumulation_facts(tree))
        if "param_groups" in parsed.text:
            facts.extend(lr_update_facts(tree))
        return facts
    except RecursionError:
        return []


def unique_facts(facts: list[ConfigValue]) -> list[ConfigValue]:
    """Facts without repeats, in file order."""
    unique = list(dict.fromkeys(facts))
    unique.sort(key=lambda f: (f.path, f.cell or 0, f.line))
    return unique
