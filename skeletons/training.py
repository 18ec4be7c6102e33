"""Training loops of the scanned repository, read for the MindSpore training step.

A training loop is a function (or a script's module-level code) that calls
``<loss>.backward()`` and ``<optimizer>.step()``. What it trains, with which loss and
optimizer, is read from the value analysis (:mod:`msready.analyzer.valueflow`): the
receiver of ``backward`` is the loss, an expression over calls; the call of a repository
``nn.Module`` instance inside it is the model; torch loss classes and functional losses
are the loss terms; the receiver of ``step`` leads to the optimizer's construction and its
hyper-parameters (:mod:`.training_values` follows values to their constructions).
:mod:`.training_loss` turns the loss into MindSpore code, :mod:`.training_build` writes the
step and :mod:`.training_run` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import libcst.matchers as m

from msready.analyzer.facts import CallKind
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.repo import RepositoryModel, ResolvedCall
from msready.analyzer.syntax import find_all
from msready.analyzer.values import Expr
from msready.skeletons import apis
from msready.skeletons.training_values import (
    UNKNOWN_VALUE,
    Construction,
    ValueReader,
    constant,
    instance_classes,
)

_SCHEDULER = "torch.optim.lr_scheduler."
_SCALERS = ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler",
            "torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.grad_scaler.GradScaler")
_AUTOCAST = ("torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast",
             "torch.cpu.amp.autocast", "torch.cuda.amp.autocast_mode.autocast")
_CLIPS = {"torch.nn.utils.clip_grad_norm_": "norm", "torch.nn.utils.clip_grad_norm": "norm",
          "torch.nn.utils.clip_grad.clip_grad_norm_": "norm",
          "torch.nn.utils.clip_grad_value_": "value",
          "torch.nn.utils.clip_grad.clip_grad_value_": "value"}
# How MindSpore replaces a learning-rate scheduler, by torch class.
_SCHEDULE_HINTS = {
    "StepLR": "mindspore.nn.piecewise_constant_lr (a list of per-step rates)",
    "MultiStepLR": "mindspore.nn.piecewise_constant_lr (a list of per-step rates)",
    "ExponentialLR": "mindspore.nn.exponential_decay_lr or nn.ExponentialDecayLR",
    "CosineAnnealingLR": "mindspore.nn.cosine_decay_lr or nn.CosineDecayLR",
    "LambdaLR": "a list of per-step rates computed from the lambda",
}


@dataclass(slots=True)
class TrainLoop:
    """One training loop and what the MindSpore step needs from it."""

    function: str  # qualified name, or the module for module-level code
    path: str
    line: int
    loss: Expr  # the receiver of ``backward()``
    optimizer: Construction | None = None
    optimizer_name: str = ""  # the torch optimizer class, also when unconstructed
    clip: tuple[str, Any] | None = None  # ("norm", max_norm) or ("value", clip_value)
    not_translated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # torch calls MindSpore does not need
    reasons: list[str] = field(default_factory=list)  # why the step cannot be generated


class LoopReader(ValueReader):
    """Finds the repository's training loops and reads each one."""

    # ----- loops -----------------------------------------------------------------------

    def loops(self) -> list[TrainLoop]:
        """Every function with a ``backward()`` and an optimizer's ``step()``, in order."""
        found = []
        for caller, calls in self.model.calls_by_caller.items():
            backwards = [rc for rc in calls if self._is_backward(rc)]
            steps = [(rc, opt) for rc in calls for opt in [self._stepped(rc)] if opt]
            if not backwards or not steps:
                continue
            found.append(self.read(caller, calls, backwards, steps))
        return sorted(found, key=lambda loop: (loop.path, loop.line))

    def _is_backward(self, rc: ResolvedCall) -> bool:
        call = rc.call
        if call.target == "torch.Tensor.backward":
            return call.recv is not None
        return call.kind is CallKind.VALUE and call.target == "backward" and \
            call.recv is not None and bool(call.receiver)

    def _stepped(self, rc: ResolvedCall) -> tuple[Expr, str] | None:
        """(the optimizer's expression, its class) for ``opt.step()`` and
        ``scaler.step(opt)``."""
        call = rc.call
        if call.target.rsplit(".", 1)[-1] != "step" or call.recv is None or not call.receiver:
            return None
        held = instance_classes(self.values.value(call.recv))
        if any(c.startswith(_SCALERS) for c in held) and call.arg_values:
            inner = instance_classes(self.values.value(call.arg_values[0]))
            return (call.arg_values[0], _optimizer_class(inner) or "")
        name = _optimizer_class(held)
        if name is None:
            custom = [c for c in held if c in self.model.classes and any(
                b.startswith("torch.optim.") for b in self.model.external_bases(c))]
            name = custom[0] if custom else None
        return (call.recv, name) if name else None

    def read(self, caller: str, calls: list[ResolvedCall], backwards: list[ResolvedCall],
             steps: list[tuple[ResolvedCall, tuple[Expr, str]]]) -> TrainLoop:
        """The loop in ``caller``: the first optimizer step and the backward before it."""
        step_rc, (opt_expr, opt_class) = steps[0]
        before = [b for b in backwards if b.call.span.line <= step_rc.call.span.line]
        backward = (before or backwards)[-1]
        fact = self.model.functions.get(caller)
        line = fact.span.line if fact else backward.call.span.line
        recv = backward.call.recv
        assert recv is not None
        library = ""  # ``accelerator.backward(loss)``: the loss is the argument
        if backward.call.args and backward.call.args[0].keyword is None and not any(
                a.kind.value == "tensor" for a in self.values.value(recv)):
            if backward.call.arg_values:
                recv = backward.call.arg_values[0]
            else:
                library = backward.call.receiver
        loss = self._unscaled(recv)
        if isinstance(loss, tuple) and loss[0] == "a":
            loss = self._unpacked(backward, calls) or loss
        loop = TrainLoop(caller, backward.file.path, line, loss)
        if library:
            loop.reasons.append(f"the loss goes through {library}.backward(...) (a training "
                                "library such as accelerate), which msready does not read")
        loop.optimizer_name = opt_class
        if opt_class in self.model.classes:
            loop.reasons.append(f"the optimizer is the repository class "
                                f"{opt_class.rsplit('.', 1)[-1]}: port its step() to a "
                                "mindspore.nn.Optimizer first")
        else:
            loop.optimizer = self.construction(opt_expr, ("torch.optim.",)) or \
                self.construction_near(step_rc, opt_class)
            if loop.optimizer is not None and loop.optimizer.groups:
                loop.not_translated.append(
                    "the optimizer's parameter list or groups (per-group hyper-parameters, "
                    "frozen parameters): not translated, every trainable parameter of the "
                    "model gets the same ones")
        others = sorted({c for rc, (_, c) in steps[1:] if c} - {opt_class})
        if others or len({_stepped_name(rc) for rc, _ in steps}) > 1:
            loop.not_translated.append(
                "a second optimizer steps in the same loop (a GAN's other network): only "
                f"the first update ({step_rc.call.receiver}.step()) is generated")
        for rc in calls:
            self._note(loop, rc)
        self._second_order(loop, caller, calls)
        return loop

    def _unpacked(self, backward: ResolvedCall, calls: list[ResolvedCall]) -> Expr | None:
        """``logits, self.loss = model(x, y)`` (a tuple target the value analysis does not
        keep): the element of the call's result, the call found among the loop's calls
        of a repository nn.Module with as many arguments."""
        parsed = parse_text(self.sources.get((backward.file.path, None), ""))
        if not isinstance(parsed, Parsed):
            return None
        receiver = backward.call.receiver
        code = parsed.module.code_for_node
        for assign in find_all(parsed.module, m.Assign(targets=[m.AssignTarget(m.Tuple())],
                                                        value=m.Call())):
            assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
            target = assign.targets[0].target
            assert isinstance(target, cst.Tuple)
            index = next((i for i, e in enumerate(target.elements)
                          if code(e.value) == receiver), None)
            if index is None:
                continue
            count = len(assign.value.args)
            found = [rc for rc in calls if len(rc.call.args) == count and any(
                c in self.model.module_classes for c in self.called(rc))]
            if len(found) == 1:
                return ("o", "elem", (index,), ("c", found[0].file.path, found[0].call.key))
        return None

    def _unscaled(self, loss: Expr) -> Expr:
        """``scaler.scale(loss)`` -> ``loss``."""
        if isinstance(loss, tuple) and loss[0] == "o" and loss[1] == "method" and \
                loss[2][0] == "scale" and len(loss) > 4:
            return loss[4]  # type: ignore[no-any-return]
        return loss

    def _note(self, loop: TrainLoop, rc: ResolvedCall) -> None:
        """What one call of the loop means for the step."""
        call = rc.call
        external = apis.canonical(rc.external or "")
        last = call.target.rsplit(".", 1)[-1]
        held = instance_classes(self.values.value(call.recv)) if call.recv is not None and \
            call.receiver else []
        if external in _CLIPS:
            name = "max_norm" if _CLIPS[external] == "norm" else "clip_value"
            value = self._argument(rc, 1, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                loop.clip = (_CLIPS[external], float(value))
            else:
                loop.not_translated.append(f"{last}: its {name} is not a known constant")
        elif external.startswith(_AUTOCAST) or any(c.startswith(_SCALERS) for c in held) or \
                external.startswith(_SCALERS):
            text = "AMP (autocast / GradScaler): not translated; use mindspore.amp " \
                   "(auto_mixed_precision, DynamicLossScaler)"
            if text not in loop.not_translated:
                loop.not_translated.append(text)
        elif last == "step" and any(c.startswith(_SCHEDULER) for c in held):
            short = next(c for c in held if c.startswith(_SCHEDULER)).rsplit(".", 1)[-1]
            hint = _SCHEDULE_HINTS.get(short, "a list of per-step rates or a "
                                              "mindspore.nn.LearningRateSchedule")
            loop.not_translated.append(f"scheduler {short}: the step runs with the base "
                                       f"learning rate; in MindSpore pass {hint} as "
                                       "learning_rate")
        elif last == "zero_grad" and call.receiver:
            loop.dropped.append(f"{call.receiver}.zero_grad(): MindSpore gradients are "
                                "functional, nothing accumulates")
        elif external.startswith("torch.optim.swa_utils.") or (
                last in ("update", "update_parameters") and "ema" in call.receiver.lower()):
            text = f"EMA ({call.receiver or external}): not translated; keep a copy of the " \
                   "parameters and update it after optimizer(grads)"
            if text not in loop.not_translated:
                loop.not_translated.append(text)

    def _argument(self, rc: ResolvedCall, index: int, name: str) -> Any:
        """The constant value of a call's argument (by position or keyword)."""
        call = rc.call
        for i, arg in enumerate(call.args):
            if arg.keyword == name or (arg.keyword is None and not arg.star and i == index):
                if arg.is_literal:
                    return arg.literal
                if i < len(call.arg_values):
                    return constant(self.values.value(call.arg_values[i]))
        return UNKNOWN_VALUE

    def _second_order(self, loop: TrainLoop, caller: str, calls: list[ResolvedCall]) -> None:
        """``torch.autograd.grad(..., create_graph=True)`` in the loop or a function it
        calls: a gradient penalty, listed as not translated."""
        seen = {caller}
        frontier = [caller]
        for _ in range(3):
            reached = []
            for fn in frontier:
                for rc in self.model.calls_by_caller.get(fn, []) if fn != caller else calls:
                    if self.creates_graph(rc):
                        where = "" if fn == caller else f" in {self.model.short_name(fn)}"
                        loop.not_translated.append(
                            f"gradient penalty / second order (torch.autograd.grad(..., "
                            f"create_graph=True){where}): not translated")
                        return
                    for callee in self.values.callees(rc):
                        if callee not in seen:
                            seen.add(callee)
                            reached.append(callee)
            frontier = reached

    def creates_graph(self, rc: ResolvedCall) -> bool:
        target = apis.canonical(rc.external or rc.call.target)
        if target not in ("torch.autograd.grad", "torch.Tensor.backward") and not (
                rc.call.kind is CallKind.VALUE and rc.call.target == "backward"):
            return False
        return any(a.keyword == "create_graph" and a.text.strip() != "False"
                   for a in rc.call.args)


def _stepped_name(rc: ResolvedCall) -> str:
    """The optimizer's source text in ``opt.step()`` or ``scaler.step(opt)``."""
    call = rc.call
    if call.args and not call.args[0].keyword:
        return call.args[0].text
    return call.receiver


def _optimizer_class(classes: list[str]) -> str | None:
    for name in classes:
        if name.startswith("torch.optim.") and not name.startswith(
                (_SCHEDULER, "torch.optim.swa_utils.")) and name.rsplit(".", 1)[-1][:1].isupper():
            return name
    return None


def find_loops(model: RepositoryModel) -> list[TrainLoop]:
    """The repository's training loops; a loop the reader trips on is left out."""
    return LoopReader(model).loops()
