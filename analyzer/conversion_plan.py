"""The data of the one mapping engine (:mod:`msready.analyzer.conversion`): the call being
converted, the plan its handlers fill in, what comes out, and the text helpers they share.

The engine works on a neutral form of the arguments, :class:`msready.analyzer.facts.Arg`
(keyword, source text, literal value where known), so the MS1xx rules (which keep call
sites as facts) and the Cell translator (which holds libcst nodes and passes their code)
ask it the same question and get the same answer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Protocol

from msready.analyzer.apitable import ApiEntry, load_table
from msready.analyzer.facts import Arg, CallKind
from msready.analyzer.findings import Severity

RECEIVER = "x"  # stands for a method's receiver whose text the call site does not keep
INITIALIZERS = "mindspore.common.initializer."
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

# Adapters a Cell defines (skeletons/adapters.py, skeletons/compositions.py) for values
# known only when the Cell runs; the Fix text never uses them.
RUNTIME_PADDING = "torch_padding"  # torch's (ph, pw) -> MindSpore's (top, bottom, left, right)
RUNTIME_ASSIGN = "torch_assign_"  # writes a value into a tensor or Parameter in place
RUNTIME_UNIFORM = "torch_uniform_"  # U(a, b) for any a, b (MindSpore's Uniform is symmetric)


class Call(Protocol):
    """What the engine reads of a call: its arguments, whether it is a tensor method, and
    the source text of the method's receiver (``""`` when not kept).
    :class:`msready.analyzer.facts.CallSite` is one; :class:`TorchCall` is the plain one."""

    @property
    def args(self) -> tuple[Arg, ...]: ...

    @property
    def kind(self) -> CallKind: ...

    @property
    def receiver(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TorchCall:
    """A call given by its arguments alone (the Cell translator's calls)."""

    args: tuple[Arg, ...]
    kind: CallKind = CallKind.NAME
    receiver: str = ""


@dataclass(frozen=True, slots=True)
class Options:
    """Who the conversion is for. The two readers need the same MindSpore call with one
    documented difference each way:

    - ``cell=False`` (the ``Fix:`` text of a finding): code a person pastes after
      ``from mindspore import nn, ops`` and ``from mindspore.common.initializer import *``;
      what only the running program knows (is ``dim`` an int or a tuple?) is said in the
      issue, and the call is printed as code only when ``fix_proofs.json`` shows it ran.
    - ``cell=True`` (a generated Cell, which must run): a value known only at run time goes
      through the Cell's adapters (:data:`RUNTIME_PADDING`, a tuple-or-int test for
      LayerNorm's shape, :data:`RUNTIME_ASSIGN`, :data:`RUNTIME_UNIFORM`), initialisers are
      written fully qualified, and what cannot be carried over is listed in
      :attr:`CallPlan.todos` for a ``# TODO(msready MS100)`` comment.
    """

    cell: bool = False


FIX = Options()
CELL = Options(cell=True)


@dataclass(frozen=True, slots=True)
class Issue:
    """One difference a call exercises: ``semantics``, ``default`` or ``arguments``.
    ``todo`` is set when the rewrite cannot carry it over (a lost argument, a mode MindSpore
    does not have): a Cell marks it with a TODO."""

    kind: str
    message: str
    severity: Severity
    todo: bool = False


@dataclass(slots=True)
class Plan:
    """The call being rewritten: arguments by torch name, what to add, what to drop."""

    entry: ApiEntry
    backend: str
    call: Call
    options: Options = FIX
    bindings: dict[str, str] = field(default_factory=dict)  # the file's import bindings
    bound: dict[str, Arg] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    rest: list[Arg] = field(default_factory=list)  # unbound and unpacked arguments
    values: dict[str, str] = field(default_factory=dict)  # torch name -> new value text
    names: dict[str, str] = field(default_factory=dict)  # torch name -> MindSpore name
    keyword: set[str] = field(default_factory=set)  # torch names to pass by keyword
    drop: set[str] = field(default_factory=set)
    extra: dict[str, str] = field(default_factory=dict)  # MindSpore keyword -> value text
    issues: list[Issue] = field(default_factory=list)
    handled: set[str] = field(default_factory=set)  # already explained by a semantics issue

    def add(self, kind: str, message: str, severity: Severity, todo: bool = False) -> None:
        self.issues.append(Issue(kind, message, severity, todo))

    @property
    def receiver(self) -> str:
        """The source text of a method call's receiver (``x`` when not kept), in
        parentheses unless it is a name, attribute, call or subscript: ``(attn @ v)``
        stays one operand of the rewritten method call."""
        text = self.call.receiver or RECEIVER
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return f"({text})"
        atomic = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List,
                  ast.Tuple, ast.Dict, ast.Set)
        return text if isinstance(node, atomic) else f"({text})"

    @property
    def api(self) -> str:
        return self.entry.target(self.backend).api or ""

    def value(self, name: str) -> str:
        """The MindSpore text of a bound argument's value."""
        arg = self.bound[name]
        return self.values.get(name, ms_text(arg, self.bindings))


@dataclass(frozen=True, slots=True)
class CallPlan:
    """The differences a call exercises and the complete MindSpore code to write;
    ``todos`` are the reasons of the issues the code cannot carry over."""

    issues: tuple[Issue, ...]
    rewrite: str
    todos: tuple[str, ...] = ()


def arg_text(arg: Arg) -> str:
    """Source text of an argument value (literals re-printed, tuples keep parentheses)."""
    return repr(arg.literal) if arg.is_literal else arg.text


def neutral_arg(keyword: str | None, text: str, star: str = "") -> Arg:
    """An argument from its keyword and source text, with its literal value when the text
    is a Python literal (what the Cell translator passes for its libcst arguments)."""
    try:
        literal = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Arg(keyword, text, star=star)
    return Arg(keyword, text, literal, True, star)


def ms_text(arg: Arg, bindings: dict[str, str]) -> str:
    """An argument's text with a torch dtype name (``torch.long`` through the file's
    imports) replaced by its MindSpore dtype."""
    text = arg_text(arg)
    if not _DOTTED.fullmatch(text):
        return text
    head, dot, tail = text.partition(".")
    qualified = bindings.get(head, "") + dot + tail  # only names the file imports
    entry = load_table().lookup(qualified) if qualified.startswith("torch.") else None
    if entry is not None and entry.kind == "dtype":
        return entry.target("cpu").api or text
    return text


def same_literal(arg: Arg, default: str | None) -> bool:
    """True when the argument is a literal equal to the (textual) default."""
    if default is None or not arg.is_literal:
        return False
    try:
        return bool(ast.literal_eval(default) == arg.literal)
    except (ValueError, SyntaxError):
        return False


def short(api: str) -> str:
    """A MindSpore name as written after ``import mindspore`` idioms (``ops.relu``,
    ``nn.Dense``, ``Tensor.view``); a top-level function keeps its module
    (``mindspore.tensor``, ``mindspore.grad``): a bare ``tensor`` would name nothing."""
    rest = api.removeprefix("mindspore.")
    if rest == api or "." in rest or rest in ("Tensor", "Parameter"):
        return rest
    return api


def positional_params(params: tuple[str, ...]) -> tuple[str, ...]:
    """The leading parameters that can be passed by position (up to a ``*`` marker)."""
    out: list[str] = []
    for name in params:
        if name.startswith("*"):
            break
        out.append(name)
    return tuple(out)


def rank(severity: Severity) -> int:
    """Order of severities, for picking the highest."""
    return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[severity]
