"""The loss of a training loop as MindSpore code.

The value analysis gives the receiver of ``backward()`` as an expression over calls and
operations; this module writes it over three names of the generated ``forward_fn``:
``outputs`` (what the model returns), ``label`` (the loop's target tensors) and
``loss_fn<i>`` (loss objects built once, beside the model). Torch calls go through the
project's API table (:func:`msready.skeletons.apis.lookup`); what has no translation is a
reason the step is not generated (the loop is reported ``unverified``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msready.analyzer.apitable import load_table
from msready.analyzer.valueflow import bind_argument
from msready.analyzer.values import Expr
from msready.skeletons import apis
from msready.skeletons.training import LoopReader
from msready.skeletons.training_values import (
    SAME_OBJECT,
    UNKNOWN_VALUE,
    Construction,
    constant,
    instance_classes,
)

LOSS_KINDS = {
    "class": ("CrossEntropyLoss", "NLLLoss", "cross_entropy", "nll_loss"),
    "binary": ("BCELoss", "BCEWithLogitsLoss", "binary_cross_entropy",
               "binary_cross_entropy_with_logits"),
    "regression": ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "mse_loss", "l1_loss",
                   "smooth_l1_loss", "huber_loss"),
}
_BINARY_SYMBOLS = {"+", "-", "*", "/", "//", "**", "%", "@"}


@dataclass(frozen=True, slots=True)
class _Code:
    text: str
    live: bool = False  # computed from the model's output
    leaves: tuple[Any, ...] = ()  # the data tensors written ``label``, by expression
    failed: bool = False  # holds something msready could not translate


def _label(expr: Any) -> _Code:
    return _Code("label", False, (expr,))


def _join(parts: list[_Code]) -> tuple[Any, ...]:
    return tuple(leaf for p in parts for leaf in p.leaves)


@dataclass(slots=True)
class LossTerm:
    """A loss object the step builds once: ``loss_fn0 = nn.CrossEntropyLoss()``."""

    name: str
    code: str
    torch: str
    cell: tuple[str, str] | None = None  # (module, class) of a repository loss's Cell


@dataclass(slots=True)
class LossCode:
    """The loss over ``outputs`` and ``label``, and what it needs."""

    expression: str = ""
    model_class: str | None = None
    model_positional: list[str] = field(default_factory=list)  # the model's arguments
    model_extra: list[str] = field(default_factory=list)  # its keyword arguments
    terms: list[LossTerm] = field(default_factory=list)
    model_layer: Construction | None = None  # a torch layer trained as the model
    kind: str = ""  # class | binary | regression | "" (unknown)
    apis: list[str] = field(default_factory=list)  # torch loss APIs used, for the report
    reasons: list[str] = field(default_factory=list)
    not_translated: list[str] = field(default_factory=list)


def loss_kind(name: str) -> str:
    """``class`` / ``binary`` / ``regression`` for a torch loss name, else ""."""
    short = name.rsplit(".", 1)[-1]
    return next((kind for kind, names in LOSS_KINDS.items() if short in names), "")


def literal(value: Any) -> str:
    """Python source for a constant (floats keep a decimal point)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


class LossWriter:
    """Writes one loop's loss; see the module docstring."""

    def __init__(self, reader: LoopReader, target: str, module_classes: frozenset[str],
                 cell_code: Any) -> None:
        self.reader = reader
        self.values = reader.values
        self.target = target
        self.module_classes = module_classes
        # ``cell_code(cls)``: (constructor code, module, class name) of a generated Cell,
        # None when the class has no plan to build it.
        self.cell_code = cell_code
        self.out = LossCode()
        self.model_key: Any = None
        self.trained: list[str] = []  # the classes whose parameters the optimizer updates
        self.unknown: list[str] = []  # objects called in the loss whose value is unknown
        self.bound: list[tuple[str, dict[str, _Code]]] = []  # inlined functions' parameters
        self.inlined: list[str] = []
        self.arg_depth = 0  # inside a call's arguments

    def write(self, loss: Expr) -> LossCode:
        """The loss code, or reasons why there is none."""
        code = self.render(loss, 0)
        if self.out.model_class is None and self.unknown:
            self.out.reasons.append(
                f"the model could not be traced: {', '.join(dict.fromkeys(self.unknown))} "
                "holds no nn.Module msready can follow (it is built outside the repository "
                "or looked up by name)")
        elif self.out.model_class is None and not self.out.reasons:
            self.out.reasons.append("no call of a repository nn.Module was found in the "
                                    "loss: the model could not be traced")
        elif not code.live and not self.out.reasons:
            self.out.reasons.append("the loss does not depend on the model's output as "
                                    "msready reads it")
        if len(set(code.leaves)) > 1:
            self.out.reasons.append("the loss reads more than one data tensor besides the "
                                    "model's input: only one label is synthesized")
        if self.inlined and not self.out.reasons:
            self.out.not_translated.append(
                f"the repository loss function {', '.join(dict.fromkeys(self.inlined))} is "
                "written inline in forward_fn")
        self.out.expression = code.text if not code.failed else ""
        return self.out

    def _reason(self, text: str) -> _Code:
        if text not in self.out.reasons:
            self.out.reasons.append(text)
        return _Code("None", failed=True)

    def render(self, expr: Expr, depth: int) -> _Code:
        """``expr`` as MindSpore code. What only prepares data (it becomes the label or a
        constant) needs no translation: the reasons found inside it are dropped."""
        known = len(self.out.reasons)
        code = self._render(expr, depth)
        if not code.live and not code.failed and (code.text == "label" or not code.leaves):
            del self.out.reasons[known:]
        return code

    def _leaf(self, expr: Expr) -> _Code:
        """A value that does not come from the model: a constant, a data tensor (the
        label), or a number computed from the data, which is not translated."""
        if isinstance(expr, tuple) and expr[0] == "p" and self.bound and \
                self.bound[-1][0] == expr[1] and expr[2] in self.bound[-1][1]:
            return self.bound[-1][1][expr[2]]
        held = self.values.value(expr)
        value = constant(held)
        if value is not UNKNOWN_VALUE:
            return _Code(literal(value))
        kinds = {a.kind.value for a in held}
        if kinds and kinds <= {"shape", "data", "python", "const"}:
            name = f" ({expr[-1]})" if isinstance(expr, tuple) and expr[0] in ("p", "a") \
                else ""
            return self._reason(f"the loss uses a number computed from the data{name}: "
                                "not translated")
        return _label(expr)

    def _render(self, expr: Expr, depth: int) -> _Code:
        if depth > 40:
            return self._reason("the loss expression is too deep to read")
        if not isinstance(expr, tuple):
            return self._leaf(expr)
        head = expr[0]
        if head == "l":
            fact = self.values.local_tables.get((expr[1], expr[2]))
            if fact is None or expr[3] >= len(fact.locals):
                return _label(expr)
            return self.render(fact.locals[expr[3]], depth + 1)
        if head == "c":
            return self._call(expr, depth)
        if head == "a":  # ``self.loss``: what the class assigns to it
            assigned = [v for cls in self.reader.model.mro(expr[1])
                        for fact in [self.reader.model.classes.get(cls)] if fact
                        for attr, v in fact.attr_values if attr == expr[2]]
            if len(assigned) == 1:
                return self.render(assigned[0], depth + 1)
        if head == "o":
            return self._operation(expr, depth)
        return self._leaf(expr)  # parameters, attributes, globals: a constant or the data

    def _operation(self, expr: tuple[Any, ...], depth: int) -> _Code:
        op, plain, operands = expr[1], expr[2], list(expr[3:])
        if op == "torch":
            return self._torch(plain[0], plain[1], operands, depth)
        parts = [self.render(o, depth + 1) for o in operands]
        live = any(p.live for p in parts)
        leaves = _join(parts)
        failed = any(p.failed for p in parts)
        if op == "bin" and plain[0] in _BINARY_SYMBOLS and (live or all(
                not p.leaves or p.text == "label" for p in parts)):
            return _Code(f"({parts[0].text} {plain[0]} {parts[1].text})", live, leaves,
                         failed)
        if op == "un" and plain[0] in ("-", "+"):
            return _Code(f"{plain[0]}{parts[0].text}", live, leaves, failed)
        if op == "method" and plain[0] in SAME_OBJECT:
            return parts[0]
        if op == "method" and (live or (parts[0].text.startswith("label") and not any(
                p.leaves for p in parts[1:]))):  # ``y.view(-1)``, ``logits.view(-1, V)``
            return self._method(plain[0], plain[1], parts, live, leaves)
        if failed:
            return _Code("None", live, leaves, True)
        if not live:  # the data and what the loop does with it: the label
            value = constant(self.values.value(expr))
            return _Code(literal(value)) if value is not UNKNOWN_VALUE else _label(expr)
        if op == "join" and len(parts) == 1:
            return parts[0]
        if op == "elem" and isinstance(plain[0], int):
            return _Code(f"{parts[0].text}[{plain[0]}]", True, leaves)
        if op == "sub" and not plain[0] and not parts[1].live and not parts[1].leaves:
            return _Code(f"{parts[0].text}[{parts[1].text}]", True, leaves)
        if op == "attr":
            return _Code(f"{parts[0].text}.{plain[0]}", True, leaves)
        return self._reason(f"an operation on the model's output ({op}) is not translated")

    def _method(self, name: str, keywords: tuple[str, ...], parts: list[_Code], live: bool,
                leaves: tuple[Any, ...]) -> _Code:
        """A Tensor method through the API table (``gather`` -> ``gather_elements``)."""
        torch_name = f"torch.Tensor.{name}"
        entry = load_table().lookup(torch_name)
        mapping = apis.lookup(torch_name, self.target)
        if mapping.api is None or entry is None or (
                entry.status != "consistent" and not mapping.renames):
            return self._reason(f"the Tensor method {name} differs in MindSpore: "
                                "not translated")
        names = tuple(mapping.renames.get(k, k) for k in keywords)
        args = _arguments(parts[1:], names)
        if mapping.api.startswith("mindspore.Tensor."):
            method = mapping.api.rsplit(".", 1)[-1]
            return _Code(f"{parts[0].text}.{method}({args})", live, leaves,
                         any(p.failed for p in parts))
        joined = ", ".join(t for t in (parts[0].text, args) if t)
        return _Code(f"{apis.short_name(mapping.api)}({joined})", live, leaves,
                     any(p.failed for p in parts))

    def _arguments_of(self, operands: list[Expr], depth: int) -> list[_Code]:
        """A call's arguments: a repository function called there prepares data."""
        self.arg_depth += 1
        try:
            return [self.render(o, depth + 1) for o in operands]
        finally:
            self.arg_depth -= 1

    def _torch(self, target: str, keywords: tuple[str, ...], operands: list[Expr],
               depth: int) -> _Code:
        parts = self._arguments_of(operands, depth)
        live = any(p.live for p in parts)
        name = apis.canonical(target)
        if not live:  # the data, or noise made from it
            return _label(("o", "torch", (target, keywords), *operands))
        mapping = apis.lookup(name, self.target)
        if mapping.api is None:
            return self._reason(f"{name} has no MindSpore mapping for this target")
        kind = loss_kind(name)
        if kind:
            self._loss_api(name, kind)
        cut = len(parts) - len(keywords)
        renamed = []
        for key in keywords:
            if key in mapping.dropped:
                self.out.not_translated.append(f"{name.rsplit('.', 1)[-1]}({key}=...): "
                                               "MindSpore has no such argument")
                renamed.append("")
            else:
                renamed.append(mapping.renames.get(key, key))
        kept = [*parts[:cut], *[p for p, k in zip(parts[cut:], renamed, strict=True) if k]]
        names = tuple(k for k in renamed if k)
        return _Code(f"{apis.short_name(mapping.api)}({_arguments(kept, names)})", True,
                     _join(kept), any(p.failed for p in kept))

    def _loss_api(self, name: str, kind: str) -> None:
        if name not in self.out.apis:
            self.out.apis.append(name)
        if not self.out.kind:
            self.out.kind = kind

    def _call(self, expr: tuple[Any, ...], depth: int) -> _Code:
        rc = self.values.calls.get((expr[1], expr[2]))
        if rc is None:
            return self._leaf(expr)
        known = len(self.out.reasons)
        parts = self._arguments_of(list(rc.call.arg_values), depth)
        names = tuple(a.keyword for a in rc.call.args if a.keyword)
        if len(names) > len(parts):
            return self._reason("a call with unpacked arguments in the loss is not read")
        live = any(p.live for p in parts)
        classes = self.reader.called(rc)
        repo = [c for c in classes if c in self.module_classes]
        if repo:
            code = self._module_call(expr, rc, repo, parts, names, live)
            if code.text == "outputs":  # the data fed to the model needs no translation
                del self.out.reasons[known:]
            return code
        losses = [c for c in classes if c.startswith("torch.nn.") and c.endswith("Loss")]
        if losses:
            return self._term(losses[0], rc, parts, names, cell=False)
        layers = [c for c in classes if c.startswith("torch.nn.") and c[9:10].isupper()]
        if layers and not live and self.out.model_class is None:
            self.out.model_layer = self.reader.construction(rc.call.recv, (layers[0],)) \
                if rc.call.recv is not None else None
            self.out.model_layer = self.out.model_layer or \
                self.reader.construction_near(rc, layers[0])
            del self.out.reasons[known:]
            return self._model_call(expr, layers[0], parts, names)
        callees = self.values.callees(rc)
        owners = [f.rsplit(".", 1)[0] for f in callees if f.endswith(".forward")
                  and f.rsplit(".", 1)[0] in self.module_classes]
        if owners and not classes:  # ``self.D(x)``, the attribute's class known by name
            code = self._module_call(expr, rc, owners, parts, names, live)
            if code.text == "outputs":
                del self.out.reasons[known:]
            return code
        if callees and (live or not self.arg_depth or self._takes_network(rc)):
            short = self.reader.model.short_name(callees[0])
            known = len(self.out.reasons)
            inlined = self._inline(rc, callees, depth) if live else None
            if inlined is not None and len(self.out.reasons) == known:
                self.out.apis.append(f"{callees[0]} (inlined)")
                return inlined
            why = "; ".join(self.out.reasons[known:])
            del self.out.reasons[known:]
            return self._reason(f"loss computed by repository function {short}, "
                                "not translated" + (f" ({why})" if why else ""))
        if callees:
            return _label(expr)  # a function preparing the data (``load_data()``)
        if classes:
            return self._reason(f"the loss calls {classes[0]}, which is not translated")
        called = _called_name(rc)
        if called and not live:
            self.unknown.append(called)
        return _label(expr) if not live else self._reason(
            f"the call {rc.call.receiver or rc.call.target}(...) in the loss is not read")

    def _inline(self, rc: Any, callees: tuple[str, ...], depth: int) -> _Code | None:
        """A plain repository function computing the loss from the model's output,
        written inline: what it returns, its parameters bound to the call's arguments."""
        fact = self.reader.model.functions.get(callees[0]) if len(callees) == 1 else None
        if fact is None or fact.class_qualname is not None or fact.returns is None or \
                len(self.bound) >= 3 or fact.qualname in self.inlined or any(
                    self.reader.creates_graph(c)
                    for c in self.reader.model.calls_by_caller.get(fact.qualname, [])):
            return None
        bound: dict[str, _Code] = {}
        for name in fact.params:
            arg = bind_argument(fact, rc.call, name, 0)
            if arg is None:
                arg = dict(fact.defaults).get(name)
            if arg is not None:
                bound[name] = self._arguments_of([arg], depth)[0]
        self.inlined.append(fact.qualname)
        self.bound.append((fact.qualname, bound))
        try:
            return self.render(fact.returns, depth + 1)
        finally:
            self.bound.pop()

    def _module_call(self, expr: tuple[Any, ...], rc: Any, repo: list[str],
                     parts: list[_Code], names: tuple[str, ...], live: bool) -> _Code:
        """A call of a repository nn.Module: the model (the one the optimizer updates,
        on the data), a loss Cell (on the model's output), or another network."""
        trained = [c for c in repo if c in self.trained]
        if trained and not live:
            return self._model_call(expr, trained[0], parts, names)
        if not live and not self.trained:
            return self._model_call(expr, repo[0], parts, names)
        if live and not trained:
            return self._term(repo[0], rc, parts, names, cell=True)
        short = repo[0].rsplit(".", 1)[-1]
        if trained:
            return self._reason(f"the loss calls {short} on another network's output: "
                                "not translated")
        return self._reason(f"the loss calls another network ({short}) besides the one "
                            "the optimizer updates: not translated")

    def _takes_network(self, rc: Any) -> bool:
        """Whether a call passes an instance of a repository nn.Module."""
        return any(c in self.module_classes for e in rc.call.arg_values
                   for c in instance_classes(self.values.value(e)))

    def _model_call(self, expr: tuple[Any, ...], cls: str, parts: list[_Code],
                    names: tuple[str, ...]) -> _Code:
        key = (expr[1], expr[2])
        if self.out.model_class is None:
            self.out.model_class = cls
            self.model_key = key
            self.out.model_extra = [_arguments([p], (k,)) for p, k in zip(
                parts[len(parts) - len(names):], names, strict=True)]
            self.out.model_positional = [p.text for p in parts[:len(parts) - len(names)]]
        elif key != self.model_key:
            short = cls.rsplit(".", 1)[-1]
            return self._reason(f"the loss calls a network ({short}) a second time, on "
                                "other inputs: not translated")
        return _Code("outputs", True)

    def _term(self, cls: str, rc: Any, parts: list[_Code], names: tuple[str, ...],
              cell: bool) -> _Code:
        index = next((i for i, t in enumerate(self.out.terms) if t.torch == cls), None)
        if index is None:
            index = len(self.out.terms)
            code = self._cell_term(cls) if cell else self._class_term(cls, rc)
            if code is None:
                return _Code("None", True)
            self.out.terms.append(LossTerm(f"loss_fn{index}", code[0], cls, code[1]))
        return _Code(f"loss_fn{index}({_arguments(parts, names)})", True, _join(parts),
                     any(p.failed for p in parts))

    def _cell_term(self, cls: str) -> tuple[str, tuple[str, str] | None] | None:
        built = self.cell_code(cls)
        short = cls.rsplit(".", 1)[-1]
        if built is None:
            self._reason(f"loss computed by repository class {short}, whose Cell cannot "
                         "be built")
            return None
        code, module, name = built
        if not self.out.kind:
            self.out.kind = loss_kind(short)
        self.out.apis.append(cls)
        return code, (module, name)

    def _class_term(self, cls: str, rc: Any) -> tuple[str, None] | None:
        mapping = apis.lookup(cls, self.target)
        if mapping.api is None:
            self._reason(f"{cls} has no MindSpore mapping for this target")
            return None
        self._loss_api(cls, loss_kind(cls))
        built = None
        if rc.call.recv is not None and rc.call.kind.value == "value":
            built = self.reader.construction(rc.call.recv, (cls,))
        if built is None:
            built = self.reader.construction_near(rc, cls)
        args = []
        for key, value in (built.kwargs if built else {}).items():
            if key in mapping.dropped or value is UNKNOWN_VALUE:
                self.out.not_translated.append(f"{cls.rsplit('.', 1)[-1]}({key}=...): "
                                               + ("not read" if value is UNKNOWN_VALUE else
                                                  "MindSpore has no such argument"))
                continue
            args.append(f"{mapping.renames.get(key, key)}={literal(value)}")
        return f"{apis.short_name(mapping.api)}({', '.join(args)})", None


def _called_name(rc: Any) -> str:
    """How the source names the object a call calls: ``self.model``, ``net``."""
    call = rc.call
    if call.kind.value in ("self-attr", "self-method"):
        return f"self.{call.target}"
    recv = call.recv
    if call.kind.value != "value" or call.receiver or not isinstance(recv, tuple):
        return ""
    if recv[0] == "a":
        return f"self.{recv[2]}"
    if recv[0] in ("p", "g"):
        return str(recv[-1]).rsplit(".", 1)[-1]
    return ""


def _arguments(parts: list[_Code], keywords: tuple[str, ...]) -> str:
    cut = len(parts) - len(keywords)
    texts = [p.text for p in parts[:cut]]
    texts += [f"{k}={p.text}" for k, p in zip(keywords, parts[cut:], strict=True)]
    return ", ".join(texts)


