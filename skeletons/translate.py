"""Rewriting one repository file into its MindSpore starter: ``nn.Module`` classes become
``nn.Cell`` classes (``forward`` -> ``construct``), torch calls and tensor methods go
through the API table, ``register_buffer`` becomes a frozen ``Parameter``, torch imports
go, and what cannot be translated is kept with a ``# TODO(msready <rule>): reason``."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Container, Sequence
from typing import TypeVar

import libcst as cst
import libcst.matchers as m

from msready.analyzer.apitable import legacy_tensor_types, load_table
from msready.analyzer.facts import CallKind, FileResult
from msready.analyzer.findings import Finding
from msready.analyzer.localvalues import is_torch_metadata
from msready.analyzer.names import dotted
from msready.analyzer.parse import Parsed
from msready.analyzer.repo import MINDSPORE_REQUIRES, MODULE_BASES, RepositoryModel
from msready.analyzer.syntax import code, descendants, find_all, method_params
from msready.skeletons import (
    adapters,
    apis,
    arguments,
    compositions,
    einops,
    empty_slices,
    held_layers,
    module_level,
    ms_facts,
    third_party,
    values,
)
from msready.skeletons.constructors import SUPER_INIT
from msready.skeletons.layers import (
    CALL_FIXES,
    ENGINE_METHODS,
    FACTORIES,
    NAMED_TUPLE_FIELDS,
    NAMED_TUPLES,
    WRAPPER_TODO,
    WRAPPERS,
    CallIn,
    call_args,
    engine_method,
    expr,
    packed_sizes,
    translate_call,
    translated_keywords,
)
from msready.skeletons.methods import (
    DEVICE_NAMES,
    FILL_VALUES,
    METHOD_FIXES,
    MODULE_METHODS,
    cell_method,
    compiled_children,
    named_module_method,
    rename_keywords,
    storage,
    tensor_only_method,
    written,
)
from msready.skeletons.model_reads import ModelReads
from msready.skeletons.statements import (
    HEADER_NAMES,
    FileTranslation,
    Todo,
    buffer,
    import_fallback,
    is_torch,
    keep_top,
    placeholder,
    script_classes,
    settings,
    todo_line,
    unbound_bases,
    with_head,
)
from msready.skeletons.weights import CELL_RENAMES

_BUILTINS = frozenset(dir(builtins))
# Packages a Cell may import besides the standard library: MindSpore and what it requires.
_KEPT = MINDSPORE_REQUIRES | {"mindspore", "__future__"}
PARAMETER_LIST = "torch.nn.ParameterList"
PARAMETRIZE = compositions.COMPOSED["torch.nn.utils.parametrize.register_parametrization"]
# Tensor reductions whose ops function is the same operation (``ops.max`` is not: it
# also returns indices): written as the function when keywords are passed.
_FUNCTIONAL = frozenset({"amax", "amin", "sum", "prod", "all", "any", "logsumexp", "mean",
                         "cumsum"})
NodeT = TypeVar("NodeT", bound=cst.CSTNode)


def _torch_version(root: str = "torch") -> cst.SimpleString:
    """``torch.__version__`` in a Cell: the torch the API table was read from, whose
    behaviour the translation follows, so a version test takes the branch it maps;
    ``torchvision.__version__``: the torchvision released with that torch (torch 2.N
    came with torchvision 0.N+15)."""
    version = load_table().torch_version or "2.0.0"
    if root == "torchvision":
        _, minor, patch = [*version.split("+")[0].split("."), "0", "0"][:3]
        version = f"0.{15 + int(minor)}.{patch}"
    return cst.SimpleString(repr(version))


# torch.nn.Module's own dictionaries and the Cell's that hold the same things.
_CELL_INTERNALS = {"_modules": "_cells", "_parameters": "_params"}


def _counted(call: cst.Call) -> cst.BaseExpression | None:
    """``all([f(d) for d in ds])`` -> ``(len([0 for d in ds if not (f(d))]) == 0)`` and
    ``any(...)`` -> ``(len([0 for d in ds if f(d)]) > 0)``: GRAPH_MODE runs ``all`` and
    ``any`` over a comprehension in Python, where the module's own functions are not
    found (NameError), but compiles a comprehension that is counted."""
    if not m.matches(call, m.Call(func=m.Name("all") | m.Name("any"), args=[m.Arg(
            m.ListComp() | m.GeneratorExp(), keyword=None, star="")])):
        return None
    assert isinstance(call.func, cst.Name)
    comp = call.args[0].value
    assert isinstance(comp, (cst.ListComp, cst.GeneratorExp))
    every = call.func.value == "all"
    test: cst.BaseExpression = comp.elt.with_changes(lpar=[cst.LeftParen()],
                                                     rpar=[cst.RightParen()])
    if every:
        test = cst.UnaryOperation(cst.Not(), test)

    def innermost(loop: cst.CompFor) -> cst.CompFor:
        if loop.inner_for_in is not None:
            return loop.with_changes(inner_for_in=innermost(loop.inner_for_in))
        return loop.with_changes(ifs=[*loop.ifs, cst.CompIf(test)])
    kept = cst.ListComp(cst.Integer("0"), innermost(comp.for_in))
    return cst.Comparison(
        cst.Call(cst.Name("len"), [cst.Arg(kept)]),
        [cst.ComparisonTarget(cst.Equal() if every else cst.GreaterThan(),
                              cst.Integer("0"))],
        lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _unparenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` without the parentheses around it, as an argument (a tuple keeps them)."""
    if isinstance(node, (cst.Tuple, cst.GeneratorExp)) or not node.lpar:
        return node
    return node.with_changes(lpar=[], rpar=[])


def _held_by_self(node: cst.BaseExpression) -> bool:
    """``self.conv``, ``self.transforms[i]``: something the instance holds."""
    held = False
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        held = True
        node = node.value
    return held and m.matches(node, m.Name("self"))


def _integer_valued(node: cst.BaseExpression) -> bool:
    """An expression that is a size rather than data: an integer, ``len(x)``, ``x.size(0)``,
    ``shape[1]`` or arithmetic on them (``a[:, None] * a[None, :]`` multiplies arrays)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.BinaryOperation):
        return (_integer_valued(node.left) and _integer_valued(node.right)) or (
            (_integer_valued(node.left) and isinstance(node.right, (cst.Name, cst.Attribute)))
            or (_integer_valued(node.right) and isinstance(node.left, (cst.Name, cst.Attribute))))
    if isinstance(node, cst.Subscript):  # ``shape[1]``: one constant index
        return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and \
            isinstance(node.slice[0].slice.value, (cst.Integer, cst.UnaryOperation))
    if isinstance(node, cst.Call):
        return m.matches(node.func, m.Name("len") | m.Name("int") | m.Attribute(
            attr=m.Name("size") | m.Name("numel") | m.Name("dim")))
    return False
SmallResult = (cst.BaseSmallStatement | cst.RemovalSentinel
               | cst.FlattenSentinel[cst.BaseSmallStatement])


def _plain_value(node: cst.BaseExpression) -> bool:
    """A name, a constant, or a tuple or list of them: safe to write a second time."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_plain_value(e.value) for e in node.elements
                   if isinstance(e, cst.Element))
    if isinstance(node, cst.UnaryOperation):
        return _plain_value(node.expression)
    return isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString))


def _attribute_renames(torch_layer: str, backend: str) -> dict[str, str]:
    """How a subclass of ``torch_layer`` reads its base's attributes on the MindSpore
    layer: parameters by MindSpore's names (``weight`` -> ``gamma``), settings by the
    constructor keyword they come from (``groups`` -> ``group``, ``in_features`` ->
    ``in_channels``); a torch parameter (a Conv's ``bias``) is never a setting. A
    torch-like target (``mindspore.mint.nn.GroupNorm``) keeps torch's parameter names."""
    mapping = apis.lookup(torch_layer, backend)
    api = mapping.api or ""
    params = {t: ms for ms, t in CELL_RENAMES.get(api.rsplit(".", 1)[-1], {}).items()} \
        if api.startswith("mindspore.nn.") else {}
    settings = {t: ms for t, ms in mapping.renames.items() if t not in ("weight", "bias")}
    return {**settings, **params}


class CellTransformer(cst.CSTTransformer):
    """Rewrites a parsed repository file into MindSpore code."""

    def __init__(self, parsed: Parsed, file: FileResult, model: ModelReads,
                 backend: str, findings: list[Finding]) -> None:
        super().__init__()
        self.parsed = parsed
        self.file = file
        self.model = model
        self.backend = backend
        self.tensor_calls = {
            (c.span.line, c.span.column, c.span.end_line, c.span.end_column)
            for c in file.calls if c.kind is CallKind.TENSOR_METHOD}
        self.findings = sorted(findings, key=lambda f: (f.location.line, f.location.column))
        self._used: set[int] = set()
        self._slice_names: set[str] | None = None  # names bound to slice objects
        self._hoisted = 0  # values written alone on a line before their statement (see _Hoist)
        # ``from torch._dynamo import is_compiling`` inside a function: name -> torch name
        self._function_imports: dict[str, str] | None = None
        self._todos: list[list[Todo]] = [[]]
        self._classes: list[bool] = []  # is each enclosing class an nn.Module
        self._class_names: list[str] = []
        self._replace: dict[cst.CSTNode, cst.BaseExpression] = {}
        self._call_funcs: set[cst.CSTNode] = set()
        self._names_not_values: set[cst.CSTNode] = set()
        self._untranslated: set[cst.CSTNode] = set()  # torch names kept as they are
        self._type_tests: set[cst.CSTNode] = set()  # classes in isinstance() and bases
        self._compared: set[cst.CSTNode] = set()  # classes in isinstance() only
        self._layer_bases: list[str | None] = []  # per enclosing class: its torch layer base
        # per enclosing class: the adapter it subclasses instead of its torch layer base,
        # when its ``super().__init__(*args, **kwargs)`` passes torch's arguments on
        self._adapter_bases: list[str | None] = []
        # per enclosing class: torch settings of its layer base that it reads itself
        self._base_settings: list[frozenset[str]] = []
        # ``self.<name> = nn.ModuleDict(dict(<key>=nn.Embedding(...)))``: the torch layers
        self._held_items: dict[tuple[str, str], str] = {}
        # per enclosing class: what its ``self.<name>`` hold, layer by layer in containers
        self._held: list[dict[str, held_layers.Held]] = []
        self._functions: list[str] = []  # names of the enclosing functions
        # per enclosing function, the local names that only ever hold a device
        # (``dv = device if device is not None else tensor.device``)
        self._devices: list[set[str]] = []
        # per enclosing function, the local names it assigns (not its parameters)
        self._made: list[set[str]] = []
        self._local_defs: list[set[str]] = []  # functions each one defines in its body
        self._scope: list[str] = []  # enclosing classes and functions, outermost first
        self._statement_values: set[cst.CSTNode] = set()  # expressions used as statements
        # ``if isinstance(m, nn.Embedding):`` bodies: name -> the torch layers it may hold
        # there (``isinstance(m, (nn.BatchNorm2d, nn.GroupNorm))``: either)
        self._narrowed: list[dict[str, tuple[str, ...]]] = []
        # torch names assigned to a local that the function then calls with keywords
        # (``dist_fn = torch.max`` ... ``dist_fn(mat, dim=1)``): node -> those keywords
        self._called_with: dict[cst.CSTNode, set[str]] = {}
        self._inputs: set[str] = set()  # the parameters of the forward being translated
        self._targets: set[cst.Attribute] = set()  # ``x.attr = ...``: stays an attribute
        self._tuples: list[set[str]] = []  # per function: locals holding a named tuple
        # per function: locals only ever bound to a newly built Module (``stage =
        # AnyStage(...)``), whose Module methods (``stage.children()``) are the Cell's
        self._module_locals: list[set[str]] = []
        self.cells: list[str] = []
        self.all_todos: list[Todo] = []
        self.dropped: dict[str, None] = {}  # side libraries whose imports were dropped
        self.einops_functions: list[str] = []  # einops patterns as functions of the file
        self._math_read = False  # a name imported from math is read as ``math.<name>``
        # module-level names bound to standard-library values (``Shape = namedtuple(...)``)
        self._kept_names: set[str] = set()
        self._caught_names: set[str] | None = None  # see _caught
        self._dropped_names: set[str] = set()  # module-level names the Cell file drops
        # this module's names other repository files import
        self._imported = model.imported_from(file.module)
        self._repo_tops = model.tops
        # star imports, and the names the file binds itself, which no star import hides
        self._stars = any(k.startswith("*") for k in file.bindings)
        self._local_names = module_level.bound_names(parsed.module) if self._stars else set()
        self._purity = module_level.Purity(parsed.module, self.qualify, {
            c.name for c in file.classes if model.is_module_class(c.qualname)},
            lambda name: import_safe(name, backend, self._repo_tops), model.safe)

    # ----- names ----------------------------------------------------------------------

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The fully qualified name of a name chain, through the repository's imports."""
        name = dotted(node)
        if name is None:
            return None
        if self._stars and name.partition(".")[0] in self._local_names \
                and name.partition(".")[0] not in self.file.bindings:
            return None  # a name the file binds itself, which no star import hides
        qualified = self.model.qualify(name, self.file.module)
        if qualified is None and self._function_imports is None:
            self._function_imports = _function_torch_imports(self.parsed.module)
        head, dot, rest = name.partition(".")
        inner = self._function_imports.get(head) if qualified is None and \
            self._function_imports else None
        return inner + dot + rest if inner is not None else qualified

    def _note(self, rule: str, reason: str) -> None:
        self._todos[-1].append((rule, reason))

    # ----- statements and TODO comments -----------------------------------------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._todos.append([])
        return super().on_visit(node)

    def _finding_todos(self, node: cst.CSTNode, whole: bool) -> list[Todo]:
        span = self.parsed.span(node)
        if span is None:
            return []
        last = span.end_line if whole else span.line
        out = []
        for i, f in enumerate(self.findings):
            if i not in self._used and span.line <= f.location.line <= last:
                self._used.add(i)
                out.append((f.rule, f.message))
        return out

    def _attach(self, original: cst.CSTNode, updated: NodeT, whole: bool) -> NodeT:
        todos = self._todos.pop() + self._finding_todos(original, whole)
        if not todos:
            return updated
        unique = list(dict.fromkeys(todos))
        self.all_todos.extend(unique)
        lines = [todo_line(r, t) for r, t in unique]
        leading = getattr(updated, "leading_lines", None)
        if leading is None:
            return updated
        changed: NodeT = updated.with_changes(leading_lines=[*leading, *lines])
        return changed

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine
                                  ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        attached = self._attach(original_node, updated_node, whole=True)
        kept = self._base_settings_kept(original_node)
        if kept:
            return cst.FlattenSentinel([attached, *kept])
        if self._classes and self._classes[-1] and self._functions \
                and self._functions[-1] == "__init__":
            # ``Lambda(lambda x: x.mean(...))`` in a constructor: GRAPH_MODE finds a lambda
            # by its source line and parses only one written alone on its line
            hoist: _Hoist = _LambdaHoist(self._hoisted)
        elif self._run_by_forward():
            split = _device_apart(attached)
            if split is not None:
                return cst.FlattenSentinel(split)
            # ``torch.cat((x, h.pop()))``: in GRAPH_MODE a list's pop inside an expression
            # gives the list and the value; alone on its line it gives the value
            hoist = _PopHoist(self._hoisted)
        else:
            return attached
        stmt = attached.visit(hoist)
        if not hoist.hoisted or not isinstance(stmt, cst.SimpleStatementLine):
            return attached
        self._hoisted += len(hoist.hoisted)
        lines = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))],
                                                     value)])
                 for name, value in hoist.hoisted]
        lines[0] = lines[0].with_changes(leading_lines=stmt.leading_lines)
        return cst.FlattenSentinel([*lines, stmt.with_changes(leading_lines=())])

    def on_leave(self, original_node: NodeT, updated_node: NodeT
                 ) -> NodeT | cst.RemovalSentinel | cst.FlattenSentinel[NodeT]:
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, cst.BaseCompoundStatement) and isinstance(
                result, cst.CSTNode):
            return self._attach(original_node, result, whole=False)
        return result

    # ----- imports and module level ---------------------------------------------------

    def _is_side(self, top: str) -> bool:
        """A package that is neither torch, the standard library, numpy / MindSpore, einops
        nor the repository itself."""
        return side_package(top, self._repo_tops)

    def _side_library(self, module: str | None) -> bool:
        """True for an absolute import of a package that is neither torch, the standard
        library, numpy / MindSpore nor the repository itself: the Cell drops it."""
        top = (module or "").split(".")[0]
        if top == "einops":  # its patterns are translated where they are used
            return True
        if self._is_side(top):
            self.dropped.setdefault(top, None)
            return True
        return False

    def _stand_in(self, names: list[cst.BaseExpression]) -> SmallResult:
        """``NAME = Unavailable`` for the names a side library's import bound (einops is
        translated where it is used instead)."""
        bound = [n for n in names if isinstance(n, cst.Name)]
        if not bound or any(n.value == "einops" for n in bound) or \
                self._side_library_of(bound[0].value) == "einops":
            return cst.RemoveFromParent()
        caught = self._caught()
        if not any(n.value in caught for n in bound):
            return cst.Assign([cst.AssignTarget(cst.Name(n.value)) for n in bound],
                              cst.Name(adapters.STAND_IN))
        return _paired_assign([(n.value, adapters.STAND_IN_ERROR if n.value in caught
                                else adapters.STAND_IN) for n in bound])

    def _caught(self) -> set[str]:
        """Names the file catches in ``except`` clauses (``except (HTTPError, X):``)."""
        if self._caught_names is None:
            self._caught_names = {
                n.value for h in find_all(self.parsed.module, m.ExceptHandler())
                if isinstance(h, cst.ExceptHandler) and h.type is not None
                for n in find_all(h.type, m.Name()) if isinstance(n, cst.Name)}
        return self._caught_names

    def _provided(self, module: str, names: Sequence[cst.ImportAlias]) -> SmallResult:
        """``from timm.layers import DropPath, Mlp`` -> ``DropPath = TimmDropPath`` and
        ``Mlp = TimmMlp``: third-party layers msready writes for MindSpore
        (:mod:`third_party`); the library's other names are the stand-in."""
        pairs: list[tuple[str, str]] = []
        for alias in names:
            local = alias.asname.name if alias.asname else alias.name
            source = third_party.provided(module, dotted(alias.name))
            if source is None and self._side_library(module):
                source = adapters.STAND_IN_ERROR if isinstance(local, cst.Name) and \
                    local.value in self._caught() else adapters.STAND_IN
            if isinstance(local, cst.Name) and source is not None:
                pairs.append((local.value, source))
        return _paired_assign(pairs)

    def _side_library_of(self, name: str) -> str:
        return self.file.bindings.get(name, "").split(".")[0]

    def _absolute(self, node: cst.ImportFrom) -> str:
        """The module a ``from`` import names, relative dots resolved."""
        module = dotted(node.module) if node.module is not None else ""
        if not node.relative:
            return module or ""
        package = self.file.module if self.file.path.endswith("__init__.py") \
            else self.file.module.rpartition(".")[0]
        for _ in range(len(node.relative) - 1):
            package = package.rpartition(".")[0]
        return ".".join(p for p in (package, module) if p)

    def _missing_names(self, node: cst.ImportFrom) -> list[cst.ImportAlias]:
        """Names imported from a repository module the scanned tree does not hold
        (``from timm.data import X`` when only ``timm/models`` was given, ``from timm import
        __version__`` with no ``timm/__init__.py``, ``from . import transforms`` when the
        package is there but its ``transforms`` is not): they get the stand-in. Names the
        module defines or imports, and submodules that are there, are kept."""
        name = self._absolute(node)
        if not name or name.split(".")[0] not in self._repo_tops or \
                isinstance(node.names, cst.ImportStar):
            return []
        there = self.model.is_module(name)

        def present(module: str) -> bool:
            if self.model.has_module(module):
                return True
            leaf = module.rsplit(".", 1)[1]
            bound = self.model.qualify(leaf, name) if there else None
            # a name the module there defines or imports; ``from . import transforms`` in
            # the package itself binds the absent submodule, which does not count
            return there and (self.model.module_global(name, leaf) or (
                bound is not None and (bound != module or self.model.is_class(module)
                                       or self.model.is_function(module))))

        return [a for a in node.names if isinstance(a.name, cst.Name)
                and not present(f"{name}.{a.name.value}")]

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> SmallResult:
        side = [a for a in updated_node.names if self._side_library(dotted(a.name))]
        keep = [a for a in updated_node.names
                if not is_torch((dotted(a.name) or "").split(".")[0]) and a not in side]
        source = third_party.provided_module(dotted(side[0].name)) if len(side) == 1 else None
        if not keep and source is not None and isinstance(
                local := side[0].asname.name if side[0].asname else side[0].name, cst.Name):
            # ``import pkg_resources as pkg`` -> ``pkg = PkgResources``, written for MindSpore
            self.dropped.pop(dotted(side[0].name) or "", None)
            return cst.Assign([cst.AssignTarget(cst.Name(local.value))], cst.Name(source))
        if not keep:
            return self._stand_in([a.asname.name if a.asname else a.name for a in side])
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=keep)

    def leave_ImportFrom(self, original_node: cst.ImportFrom,
                         updated_node: cst.ImportFrom) -> SmallResult:
        module = dotted(updated_node.module) if updated_node.module is not None else None
        if not updated_node.relative and (is_torch(module) or module == "__future__"):
            return cst.RemoveFromParent()  # the header has the __future__ import
        if not updated_node.relative and not isinstance(updated_node.names, cst.ImportStar) \
                and module and self._is_side(module.split(".")[0]) and any(
                    third_party.provided(module, dotted(a.name)) for a in updated_node.names):
            # a side library's layer msready writes for MindSpore (the repository's own
            # ``timm.layers``, when timm is what is scanned, is translated as it is)
            return self._provided(module, updated_node.names)
        if not updated_node.relative and self._side_library(module):
            return self._stand_in([] if isinstance(updated_node.names, cst.ImportStar) else [
                a.asname.name if a.asname else a.name for a in updated_node.names])
        missing = self._missing_names(updated_node)
        if missing:  # not in the scanned tree
            self.dropped.setdefault(self._absolute(updated_node), None)
            assert not isinstance(updated_node.names, cst.ImportStar)
            kept = [a for a in updated_node.names if a not in missing]
            stand_in = self._stand_in([a.asname.name if a.asname else a.name
                                       for a in missing])
            if not kept:
                return stand_in
            if not isinstance(stand_in, cst.BaseSmallStatement):
                return updated_node.with_changes(names=kept)
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return cst.FlattenSentinel([updated_node.with_changes(names=kept), stand_in])
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        keep = []
        for alias in updated_node.names:
            local = alias.asname.name if alias.asname is not None else alias.name
            target = self.qualify(local) if isinstance(local, cst.Name) else None
            if not is_torch(target):
                keep.append(alias)
        if not keep:
            return cst.RemoveFromParent()
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=keep)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        names = arguments.parse_args_names(original_node.body)
        body: list[cst.BaseStatement] = []
        for stmt in updated_node.body:
            new: cst.BaseStatement | None = stmt
            fallback = self._import_failed(stmt)
            if fallback:  # the names it binds exist, as after a failed load
                body += fallback
                continue
            if arguments.parse_args_names([stmt]):
                new = settings(names, self.parsed.module, stmt)
            elif not keep_top(stmt) or (isinstance(stmt, cst.SimpleStatementLine)
                                        and self._reads_dropped(stmt)):
                body += script_classes(stmt, frozenset(self._dropped_names))
                kept = self._standard_constant(stmt)
                new = kept or placeholder(stmt, self._imported)
                if kept is None:  # later values built from these are dropped too
                    self._dropped_names |= {n.value for n in find_all(stmt, m.AssignTarget(
                        m.Name())) if isinstance(n, cst.Name)} | {
                        t.target.value for t in find_all(stmt, m.AssignTarget())
                        if isinstance(t, cst.AssignTarget) and isinstance(t.target, cst.Name)}
            elif isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(s, (cst.Assign, cst.AnnAssign)) for s in stmt.body):
                # a literal (``encoders = {}``): later code may fill it, ``encoders.update``
                self._kept_names |= module_level.bound_names(stmt)
            if new is not None:
                body.append(new)
        left = self._einops_left(body)
        if left is not None:  # an einops call the Cell could not write out
            body.insert(0, left)
        head: list[cst.BaseStatement] = adapters.used(updated_node.with_changes(body=body))
        if left is not None:  # after the stand-in's class, which ``head`` holds
            body.remove(left)
            head.append(left)
        if any(find_all(updated_node, m.Name("EinopsLayer"))):
            head += list(cst.parse_module(einops.LAYER_SOURCE.lstrip("\n")).body)
        for source in self.einops_functions:
            head += list(cst.parse_module(source).body)
        if names:
            head.insert(0, cst.parse_statement("import types\n"))
        if self._math_read and self.model.qualify("math", self.file.module) is None:
            head.insert(0, cst.parse_statement("import math\n"))
        reason = None
        if self.dropped:
            reason = (f"side libraries dropped ({', '.join(self.dropped)}): a Cell needs only "
                      f"MindSpore; their names are bound to the {adapters.STAND_IN} stand-in "
                      "so the file imports, and what calls them at run time needs a person")
            self.all_todos.append(("MS100", reason))
        body = [*unbound_bases(with_head(body, head, reason)), *self._star_exports()]
        return updated_node.with_changes(body=body)

    def _einops_left(self, body: list[cst.BaseStatement]) -> cst.BaseStatement | None:
        """``rearrange = Unavailable`` for the einops names the translated file still
        uses (a pattern built when the code runs, ``rearrange(x, p, **dims)``): the
        import is gone, and the stand-in makes the Cell say it needs einops where a
        NameError would say the translation is wrong."""
        einops_names = {name for name, target in self.file.bindings.items()
                        if target.split(".")[0] == "einops" and name.isidentifier()}
        if not einops_names:
            return None
        used = sorted({n.value for stmt in body for n in find_all(stmt, m.Name())
                       if isinstance(n, cst.Name) and n.value in einops_names})
        if not used:
            return None
        return cst.parse_statement(f"{' = '.join(used)} = {adapters.STAND_IN}\n")

    def _star_exports(self) -> list[cst.BaseStatement]:
        """``__all__`` for a file other files star-import and that has none: what the torch
        file exported, so the header's ``nn`` does not replace a name the importer bound
        (``from . import nn`` then ``from .utils import *``)."""
        if "__all__" in self.file.globals or not self.model.star_imported(self.file.module):
            return []
        own = set(self.file.bindings) | set(self.file.globals)
        hidden = sorted((set(HEADER_NAMES) | set(adapters.SOURCES)) - own)
        return [cst.parse_statement(
            f"__all__ = [_name for _name in list(globals()) if not _name.startswith('_') "
            f"and _name not in {hidden!r}]\n")]

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try
                  ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        """A module-level ``try: <torch import> except ImportError: <fallback>`` keeps
        the fallback (on_leave attaches the TODOs of a kept statement)."""
        fallback = import_fallback(updated_node) if not self._classes and not self._tuples \
            and self._imports_dropped(original_node) else None
        if not fallback or any(self._foreign(n.value) for stmt in fallback
                               for n in find_all(stmt, m.Name()) if isinstance(n, cst.Name)):
            return updated_node  # dropped with the file's other script code
        self._todos.pop()
        return cst.FlattenSentinel(fallback)

    def _foreign(self, name: str) -> bool:
        """True for a name the file imports from torch or a side library."""
        top = self.file.bindings.get(name, "").split(".")[0]
        return bool(top) and (is_torch(top) or (
            top not in sys.stdlib_module_names and top not in _KEPT
            and top not in self._repo_tops))

    def _imports_dropped(self, stmt: cst.BaseStatement) -> bool:
        """True for a ``try`` whose body imports torch or a side library."""
        if not isinstance(stmt, cst.Try):
            return False
        for node in find_all(stmt.body, m.Import() | m.ImportFrom()):
            if isinstance(node, cst.ImportFrom) and node.module is not None and \
                    not node.relative:
                top = (dotted(node.module) or "").split(".")[0]
            elif isinstance(node, cst.Import):
                top = (dotted(node.names[0].name) or "").split(".")[0]
            else:
                continue
            if is_torch(top) or (top not in sys.stdlib_module_names and top not in _KEPT
                                 and top not in self._repo_tops):
                return True
        return False

    def _reads_dropped(self, stmt: cst.BaseStatement) -> bool:
        """A statement using a name the file dropped (``_C.VERSION = 2`` after ``_C = CN()``
        went) or torch bound by a star import: it goes too."""
        return any(n.value in self._dropped_names or is_torch(n.value)
                   for n in find_all(stmt, m.Name()) if isinstance(n, cst.Name))

    def _standard_constant(self, stmt: cst.BaseStatement) -> cst.BaseStatement | None:
        """A module-level statement safe to run when the Cell file is imported (see
        ``module_level``), with torch names that have no MindSpore form inside a literal
        registry set to None; None when the statement is not kept."""
        if not module_level.simple(stmt):
            return None
        if self._keeps_torch(stmt):
            stmt = self._registry_holes(stmt)
        if self._keeps_torch(stmt) or self._reads_dropped(stmt):
            return None
        at_import = module_level.run_at_import(stmt)
        bound = module_level.bound_names(at_import)
        if not self._purity.calls(at_import, self._kept_names | bound, build=self._purity.needed(
                bound) or any(name in self._imported for name in bound)):
            return None
        self._kept_names |= bound
        return stmt

    def _import_failed(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """A module-level ``try`` that probes for something optional by calling it
        (``_load_library("gpu_decoder")``: a torch extension, which a Cell file does not
        have) written as its handler for a failed import or load, when that handler only
        binds values safe to run: ``HAS_DECODER = False`` still exists for the files that
        import it, and says the extension is absent. Empty for any other statement."""
        fallback = import_fallback(stmt)
        if not fallback or not isinstance(stmt, cst.Try) or not find_all(stmt.body, m.Call()):
            return []
        out: list[cst.BaseStatement] = []
        for part in fallback:
            if m.matches(part, m.SimpleStatementLine(body=[m.Pass() | m.Expr()])):
                continue  # ``pass``, a warning or a log line: nothing bound
            kept = self._standard_constant(part)
            if kept is None or not module_level.bound_names(kept):
                return []
            out.append(kept.with_changes(leading_lines=()))
        if not out:
            return []
        tried = code(stmt.body).strip().splitlines()[0][:80]
        out[0] = out[0].with_changes(leading_lines=[*stmt.leading_lines, todo_line(
            "MS100", f"`try: {tried}` cannot run in a Cell file: what its `except` binds "
                     "when that fails is kept")])
        return out

    def _registry_holes(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        """``dict(relu=nn.ReLU, glu=torch.nn.GLU)``: an entry with no MindSpore form becomes
        None with a TODO, so the rest of the registry still exists."""
        holes: list[str] = []

        def hole(original: cst.BaseExpression, node: cst.BaseExpression
                 ) -> cst.BaseExpression:
            if original in self._untranslated:
                holes.append(code(original))
                return cst.Name("None")
            return node

        class Holes(cst.CSTTransformer):
            def leave_Element(self, original: cst.Element, updated: cst.Element
                              ) -> cst.Element:
                return updated.with_changes(value=hole(original.value, updated.value))

            def leave_DictElement(self, original: cst.DictElement, updated: cst.DictElement
                                  ) -> cst.DictElement:
                return updated.with_changes(value=hole(original.value, updated.value))

            def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
                return updated.with_changes(value=hole(original.value, updated.value)) \
                    if updated.keyword is not None else updated

        new = stmt.visit(Holes())
        if not holes or not isinstance(new, (cst.SimpleStatementLine,
                                             cst.BaseCompoundStatement)):
            return stmt
        reason = f"{', '.join(dict.fromkeys(holes))} (torch only) set to None in this registry"
        self.all_todos.append(("MS100", reason))
        return new.with_changes(leading_lines=[*new.leading_lines, todo_line("MS100", reason)])

    # ----- classes and methods --------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._type_tests |= {n for b in node.bases for n in find_all(b, m.Attribute()
                                                                      | m.Name())
                             if isinstance(n, (cst.Attribute, cst.Name))}
        qualname = ".".join([self.file.module, *self._scope, node.name.value])
        self._scope.append(node.name.value)
        self._classes.append(self.model.is_module_class(qualname))
        self._class_names.append(qualname)
        self._layer_bases.append(self._layer_base(node))
        self._adapter_bases.append(self._adapter_base(node, self._layer_bases[-1]))
        self._base_settings.append(self._settings_read(node, self._layer_bases[-1]))
        self._held_items = {}
        self._held.append(held_layers.read_class(node, self.qualify))
        self._names_not_values.add(node.name)
        return True

    @staticmethod
    def _adapter_base(node: cst.ClassDef, layer: str | None) -> str | None:
        """The adapter with torch's signature a layer subclass derives from instead of
        its layer, when it passes its own ``*args`` / ``**kwargs`` to the base: they
        cannot be translated where they are written."""
        adapter = adapters.VALUE_ADAPTED.get(layer or "")
        if adapter is None:
            return None
        starred = m.Call(func=SUPER_INIT,
                         args=[m.ZeroOrMore(), m.Arg(star=m.MatchIfTrue(bool)), m.ZeroOrMore()])
        return adapter if find_all(node.body, starred) else None

    def _settings_read(self, node: cst.ClassDef, layer: str | None) -> frozenset[str]:
        """The settings of the torch layer a class subclasses that its own forward reads
        and MindSpore's layer does not keep (``self.dilation``, ``self.ceil_mode`` of a
        ``MaxPool2d``; a Conv2d keeps its stride): none when the class sets them itself
        (but for a value made from the base's own), when MindSpore's name differs
        (``groups`` is read as ``group``), or when the layer's own forward runs
        (``super().forward``), whose attributes must stay MindSpore's."""
        order = apis.torch_order(layer) if layer else None
        if not order or find_all(node.body, m.Call(func=m.Attribute(
                value=m.Call(func=m.Name("super")), attr=m.Name("forward")))) or not any(
                isinstance(f, cst.FunctionDef) and f.name.value == "forward"
                for f in node.body.body):
            return frozenset()
        assert layer is not None
        renamed = _attribute_renames(layer, self.backend)
        api = apis.lookup(layer, self.backend).api
        # kept in MindSpore's form, unless that form is not torch's
        kept = (ms_facts.kept_attributes(api) if api else frozenset()) - set(
            adapters.OWN_FORM.get(layer, ()))
        read = {a.attr.value for a in find_all(node.body, m.Attribute(value=m.Name("self")))
                if isinstance(a, cst.Attribute)}
        # set by the class, unless from the base's own value (``self.stride = [self.stride]
        # * 2 if isinstance(self.stride, int) else self.stride``)
        written = {t.attr.value for assign in find_all(node.body, m.Assign())
                   if isinstance(assign, cst.Assign) for target in assign.targets
                   for t in [target.target] if m.matches(t, m.Attribute(value=m.Name("self")))
                   and isinstance(t, cst.Attribute) and not find_all(assign.value, m.Attribute(
                       value=m.Name("self"), attr=m.Name(t.attr.value)))}
        return frozenset(name for name in order if name in read and name not in written
                         and name not in renamed and name not in kept
                         and name not in ("weight", "bias"))

    def _base_settings_kept(self, original: cst.SimpleStatementLine
                            ) -> list[cst.SimpleStatementLine]:
        """``self.dilation = dilation`` after ``super().__init__(k, s, 0, dilation)`` in
        a layer subclass that reads the setting (:meth:`_settings_read`): the value the
        torch call gave, when it is a name or a constant, or torch's default when the call
        does not give it (timm's ``MaxPool2dSame`` passes its ``ceil_mode`` fifth, where
        torch's ``MaxPool2d`` takes ``return_indices``, and reads ``self.ceil_mode``:
        False)."""
        settings = self._base_settings[-1] if self._base_settings else frozenset()
        if not settings or not self._functions or self._functions[-1] != "__init__" or \
                len(original.body) != 1 or not m.matches(original.body[0],
                                                         m.Expr(m.Call(func=SUPER_INIT))):
            return []
        statement = original.body[0]
        assert isinstance(statement, cst.Expr) and self._layer_bases[-1] is not None
        call = statement.value
        assert isinstance(call, cst.Call)
        order = apis.torch_order(self._layer_bases[-1]) or ()
        given: dict[str, cst.BaseExpression] = {}
        passed: set[str | None] = set()
        for index, arg in enumerate(call.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else (
                order[index] if index < len(order) else None)
            passed.add(name)
            if name in settings and _plain_value(arg.value):
                given[name] = arg.value
        else:  # every argument seen: a setting the call does not pass has torch's default
            for name in sorted(settings - passed):
                default = apis.torch_default(self._layer_bases[-1], name, self.backend)
                if default is not None:
                    given[name] = cst.parse_expression(default)
        return [cst.SimpleStatementLine([cst.Assign(
            [cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(name)))], value)])
            for name, value in given.items()]

    def _layer_base(self, node: cst.ClassDef) -> str | None:
        """The torch layer a class subclasses (``class StdConv2d(nn.Conv2d)``), when its
        MindSpore counterpart is a class that takes its own constructor arguments."""
        for base in node.bases:
            name = self.qualify(base.value)
            if name is not None and not is_torch(name) and self.model.is_class(name) \
                    and self.model.find_method(name, "__init__") is not None:
                return None  # ``super().__init__`` runs this earlier base's constructor
            if not is_torch(name) or name in MODULE_BASES:
                continue
            assert name is not None
            torch_name = apis.canonical(name)
            api = apis.lookup(torch_name, self.backend).api
            if torch_name not in adapters.ADAPTED and api and api.startswith("mindspore.nn."):
                return torch_name
        return None

    def leave_ClassDef(self, original_node: cst.ClassDef,
                       updated_node: cst.ClassDef) -> cst.ClassDef:
        self._class_names.pop()
        self._scope.pop()
        self._layer_bases.pop()
        self._base_settings.pop()
        self._held.pop()
        adapter = self._adapter_bases.pop()
        if self._classes.pop():
            self.cells.append(updated_node.name.value)
        bases = list(updated_node.bases)
        if adapter is not None:
            bases = [b.with_changes(value=cst.Name(adapter)) if adapters.VALUE_ADAPTED.get(
                apis.canonical(self.qualify(o.value) or "")) == adapter else b
                for b, o in zip(bases, original_node.bases, strict=True)]
        bases = self._bases_without_torch(bases, original_node.bases)
        # a class attribute left as a torch name would stop the file from importing too
        body = [self._class_level(stmt) if isinstance(stmt, cst.SimpleStatementLine) else stmt
                for stmt in updated_node.body.body]
        return updated_node.with_changes(bases=bases,
                                         body=updated_node.body.with_changes(body=body))

    def _bases_without_torch(self, bases: Sequence[cst.Arg],
                             originals: Sequence[cst.Arg]) -> list[cst.Arg]:
        """A base left as a torch name would stop the whole file from importing. One from
        torch's companion packages becomes a stand-in that says which base a class lacks
        when it is built; another goes, or becomes ``object`` when no base is left
        (``object`` before another base gives the class no consistent order)."""
        out: list[cst.Arg] = []
        dropped = None
        for base, original in zip(bases, originals, strict=True):
            if not self._keeps_torch(base):
                out.append(base)
                continue
            name = apis.canonical(self.qualify(original.value) or "")
            if base.keyword is None and name.split(".")[0] in adapters.ECOSYSTEM_ROOTS:
                out.append(base.with_changes(
                    value=expr(f'{adapters.TORCH_LEFT_BASE}("{name}")')))
            else:
                dropped = base
        if dropped is not None and not any(b.keyword is None for b in out):
            out.insert(0, dropped.with_changes(value=expr("object"), keyword=None,
                                               equal=cst.MaybeSentinel.DEFAULT))
        if out:  # no comma after the last base left
            out[-1] = out[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return out

    def _class_level(self, stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        small = []
        for part in stmt.body:
            if isinstance(part, (cst.Assign, cst.AnnAssign)) and part.value is not None \
                    and self._keeps_torch(part.value):
                part = part.with_changes(value=expr("None"))
            small.append(part)
        return stmt.with_changes(body=small)

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if self._run_by_forward():
            # GRAPH_MODE cannot write into a Cell's dict: a cache forward fills is dropped
            updated_node = cst.ensure_type(updated_node.visit(_MemoDrop(updated_node)),
                                           cst.FunctionDef)
            updated_node = cst.ensure_type(updated_node.visit(_FlagTests(updated_node)),
                                           cst.FunctionDef)
            updated_node = cst.ensure_type(updated_node.visit(_IdleBranchDrop()),
                                           cst.FunctionDef)
            updated_node = _bound_before(updated_node)
        self._tuples.pop()
        self._functions.pop()
        self._devices.pop()
        self._made.pop()
        self._local_defs.pop()
        self._scope.pop()
        self._narrowed.pop()
        self._module_locals.pop()
        if self._classes and self._classes[-1] and self._is_forward(updated_node.name.value):
            static = [d for d in updated_node.decorators
                      if m.matches(d.decorator, m.Name("staticmethod"))]
            if static:  # GRAPH_MODE compiles only a construct that takes ``self``
                params = updated_node.params
                first = "posonly_params" if params.posonly_params else "params"
                updated_node = updated_node.with_changes(
                    decorators=[d for d in updated_node.decorators if d not in static],
                    params=params.with_changes(**{first: [cst.Param(cst.Name("self")),
                                                          *getattr(params, first)]}))
            return updated_node.with_changes(name=cst.Name("construct"))
        if self._classes and self._classes[-1] and updated_node.name.value == "__init__" and \
                apis.inherits(self.model, self._class_names[-1], "torch.nn.Sequential") and \
                find_all(original_node.body, m.Assign(targets=[m.AssignTarget(m.Attribute(
                    value=m.Name("self")))], value=m.Call())):
            # ``self.conv1 = ConvNormAct(...)`` in a Sequential subclass: torch runs every
            # Module it holds, in the order it was set; a SequentialCell runs its cell_list
            return _then(updated_node, "self.cell_list = list(self._cells.values())")
        if self._classes and self._classes[-1] and updated_node.name.value == "__getattr__":
            return _lookup_misses_are_attribute_errors(updated_node)
        return updated_node

    # ----- gradient contexts and decorators -------------------------------------------

    def _context(self, node: cst.BaseExpression) -> str | None:
        """The torch name of ``torch.no_grad()`` and other gradient / precision contexts
        that MindSpore has no counterpart for (the table's target is None)."""
        func = node.func if isinstance(node, cst.Call) else node
        name = self.qualify(func)
        if not is_torch(name):
            return None
        assert name is not None
        return name if apis.lookup(apis.canonical(name), self.backend).api is None else None

    def leave_With(self, original_node: cst.With, updated_node: cst.With
                   ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        names = [self._context(item.item) or self._quiet_context(item) for item in
                 original_node.items]
        if not names or None in names or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node  # on_leave attaches the TODOs of a kept statement
        body = list(updated_node.body.body)
        self._todos.pop()
        todos = [("MS100", f"{n}: " + (_QUIET_CONTEXTS.get(n) or apis.lookup(
            apis.canonical(n), self.backend).note or "no MindSpore context; the block runs "
                                                     "as is"))
                 for n in names if n]
        self.all_todos.extend(todos)
        first = body[0]
        lines = [*updated_node.leading_lines, *(todo_line(r, t) for r, t in todos)]
        if isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            body[0] = first.with_changes(leading_lines=[*lines, *first.leading_lines])
        return cst.FlattenSentinel(body)

    def _quiet_context(self, item: cst.WithItem) -> str | None:
        """The name of a Python context that changes nothing a Cell computes
        (``warnings.catch_warnings()``), in code GRAPH_MODE compiles, which takes no context
        manager; None otherwise, or when ``as`` binds its value."""
        if item.asname is not None or not isinstance(item.item, cst.Call) \
                or not self._run_by_forward():
            return None
        name = self.qualify(item.item.func)
        return name if name in _QUIET_CONTEXTS else None

    def _keeps_torch(self, node: cst.CSTNode) -> bool:
        """True when a translated expression still holds a torch name (no equivalent)."""
        return any(n in self._untranslated for n in find_all(node, m.Attribute() | m.Name()))

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        """A default evaluated when the file is imported cannot keep a torch name."""
        if updated_node.default is not None and self._keeps_torch(updated_node.default):
            self._note("MS100", f"default of `{updated_node.name.value}` was "
                                f"`{code(updated_node.default)[:80]}` (torch only); now None")
            return updated_node.with_changes(default=expr("None"))
        return updated_node

    def leave_Decorator(self, original_node: cst.Decorator,
                        updated_node: cst.Decorator) -> cst.Decorator | cst.RemovalSentinel:
        decorator = original_node.decorator
        script = apis.canonical(self.qualify(
            decorator.func if isinstance(decorator, cst.Call) else decorator) or "")
        if script in compositions.SCRIPT_DECORATORS:
            self._todos[-1][:] = [t for t in self._todos[-1] if not t[1].startswith(script)]
            self._note("MS100", f"@{script} removed: a TorchScript marker; the Cell runs "
                                "eagerly in PyNative and MindSpore compiles construct itself")
            return cst.RemoveFromParent()
        if script == "functools.wraps" and isinstance(updated_node.decorator, cst.Call):
            # around a Cell, GRAPH_MODE would follow __wrapped__ and ask for its code; around
            # a function, what wraps copies (the signature inspect reads) is kept
            return updated_node.with_changes(decorator=updated_node.decorator.with_changes(
                func=cst.Name(adapters.WRAPS)))
        name = self._context(original_node.decorator)
        if name is None:
            if self._keeps_torch(updated_node):  # it would fail when the file is imported
                self._note("MS100", f"decorator `{code(original_node.decorator)[:80]}` "
                                    "removed: it uses torch APIs MindSpore does not have")
                return cst.RemoveFromParent()
            return updated_node
        self._todos[-1][:] = [t for t in self._todos[-1] if not t[1].startswith(f"{name}:")]
        self._note("MS100", f"@{name} removed: MindSpore has no counterpart")
        return cst.RemoveFromParent()

    # ----- expressions ----------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> bool:
        self._call_funcs.add(node.func)
        if m.matches(node.func, m.Name("isinstance") | m.Name("issubclass")) and \
                len(node.args) == 2:  # classes compared, not built: no adapter
            self._compared |= {n for n in find_all(node.args[1], m.Attribute() | m.Name())
                               if isinstance(n, (cst.Attribute, cst.Name))}
            self._type_tests |= self._compared
        if m.matches(node.func, m.Name("hasattr")) and len(node.args) == 2 and \
                "hasattr" not in self.file.bindings:
            answer = self._feature_test(node.args[0].value, node.args[1].value)
            if answer is not None:
                self._replace[node] = answer
                return False
        return True

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        """``"silu" in dir(torch.nn.functional)``: a feature test, see ``_feature_test``."""
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, cst.In) \
                and m.matches(node.comparisons[0].comparator, m.Call(func=m.Name("dir"))):
            call = node.comparisons[0].comparator
            assert isinstance(call, cst.Call)
            answer = self._feature_test(call.args[0].value, node.left) if call.args else None
            if answer is not None:
                self._replace[node] = answer
                return False
        return True

    def _feature_test(self, owner: cst.BaseExpression, attr: cst.BaseExpression
                      ) -> cst.Name | None:
        """``hasattr(F, "silu")`` on a torch namespace asks whether the translated code has
        the feature: True when the API table gives ``F.silu`` a MindSpore form, False when
        it does not (the code then takes its fallback branch, which the Cell can run)."""
        name = self.qualify(owner)
        if not is_torch(name):
            return None
        if not isinstance(attr, cst.SimpleString) or not isinstance(
                attr.evaluated_value, str):
            return cst.Name("True")  # a feature named at run time: a modern torch has it
        mapping = apis.lookup(apis.canonical(f"{name}.{attr.evaluated_value}"), self.backend)
        return cst.Name("True" if mapping.api is not None else "False")

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison
                         ) -> cst.BaseExpression:
        return self._replace.get(original_node, updated_node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self._names_not_values.add(node.attr)
        return self._reference(node)

    def visit_Name(self, node: cst.Name) -> bool:
        if node not in self._names_not_values:
            self._reference(node)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node.keyword is not None:
            self._names_not_values.add(node.keyword)
        return True

    def visit_Param(self, node: cst.Param) -> bool:
        self._names_not_values.add(node.name)
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._names_not_values.add(node.name)
        self._tuples.append(set())
        self._functions.append(node.name.value)
        self._devices.append(self._device_names(node))
        self._called_with.update(_held_then_called(node))
        params = {p.name.value for p in find_all(node.params, m.Param())
                  if isinstance(p, cst.Param)}
        self._made.append({t.target.value for t in find_all(node.body, m.AssignTarget(
            target=m.Name())) if isinstance(t, cst.AssignTarget) and
            isinstance(t.target, cst.Name)} - params)
        self._local_defs.append({d.name.value for d in find_all(node.body, m.FunctionDef())
                                 if isinstance(d, cst.FunctionDef)})
        self._scope.append(node.name.value)
        calls = self._local_calls(node)
        self._narrowed.append(self._local_layers(calls))
        self._module_locals.append(self._local_modules(calls))
        if self._classes and self._classes[-1] and self._is_forward(node.name.value):
            self._inputs = {p.name.value for p in method_params(node)}
        return True

    def _local_calls(self, function: cst.FunctionDef) -> dict[str, list[str | None]]:
        """Each local name a function assigns, with the qualified callee of every
        assignment to it (None for a value that is no call of a name)."""
        calls: dict[str, list[str | None]] = {}
        for assign in find_all(function.body, m.Assign(targets=[m.AssignTarget(m.Name())])):
            assert isinstance(assign, cst.Assign)
            target = assign.targets[0].target
            assert isinstance(target, cst.Name)
            calls.setdefault(target.value, []).append(
                self.qualify(assign.value.func) if isinstance(assign.value, cst.Call) else None)
        return calls

    @staticmethod
    def _local_layers(calls: dict[str, list[str | None]]) -> dict[str, tuple[str, ...]]:
        """Local names bound once, to a torch layer (``bn = nn.BatchNorm2d(c)``): their
        parameters go by the MindSpore names (``bn.weight`` -> ``bn.gamma``)."""
        return {name: (apis.canonical(callees[0]),) for name, callees in calls.items()
                if len(callees) == 1 and callees[0] is not None and is_torch(callees[0])}

    def _local_modules(self, calls: dict[str, list[str | None]]) -> set[str]:
        """Local names every assignment binds to a new Module: a torch layer or a
        repository Module class built there (``stage = AnyStage(...)``)."""
        return {name for name, callees in calls.items()
                if all(callee is not None and self._builds_module(callee)
                       for callee in callees)}

    def _builds_module(self, callee: str) -> bool:
        """True for a torch.nn class or a repository Module class."""
        if is_torch(callee):
            return apis.canonical(callee).startswith("torch.nn.") and \
                callee.rsplit(".", 1)[-1][:1].isupper()
        resolved = self.model.resolve(callee, self.file.module)
        return resolved is not None and resolved.kind == "class" and \
            self.model.is_module_class(resolved.name)

    def _named_tuple(self, node: cst.BaseExpression) -> bool:
        """True for a call returning torch's ``(values, indices)`` named tuple."""
        if not isinstance(node, cst.Call):
            return False
        name = self.qualify(node.func)
        if name is not None:
            return apis.canonical(name) in NAMED_TUPLES
        span = self.parsed.span(node)
        key = (span.line, span.column, span.end_line, span.end_column) if span else None
        return key in self.tensor_calls and isinstance(node.func, cst.Attribute) and \
            f"torch.{node.func.attr.value}" in NAMED_TUPLES

    def visit_Assign(self, node: cst.Assign) -> bool:
        if self._tuples and len(node.targets) == 1 and isinstance(
                node.targets[0].target, cst.Name) and self._named_tuple(node.value):
            self._tuples[-1].add(node.targets[0].target.value)
        target = node.targets[0].target
        if isinstance(target, cst.Attribute) and m.matches(target.value, m.Name("self")) and \
                isinstance(node.value, cst.Call) and node.value.args and apis.canonical(
                    self.qualify(node.value.func) or "") == "torch.nn.ModuleDict":
            self._held_items.update({(target.attr.value, key): layer for key, layer in
                                     self._dict_layers(node.value.args[0].value).items()})
        return True

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign
                     ) -> cst.Assign:
        """``mask[:, h, w, :] = cnt`` with a slice known only at run time writes through
        ``torch_setitem``, which skips an empty selection as torch does."""
        if self._slice_names is None:
            self._slice_names = empty_slices.slice_names(self.parsed.module)
        return empty_slices.guarded(updated_node, self._slice_names) or updated_node

    def _dict_layers(self, node: cst.BaseExpression) -> dict[str, str]:
        """The torch layers of ``dict(wte=nn.Embedding(...))`` or ``{"wte": ...}``, by key."""
        items: list[tuple[str, cst.BaseExpression]] = []
        if isinstance(node, cst.Call) and m.matches(node.func, m.Name("dict")):
            items = [(a.keyword.value, a.value) for a in node.args if a.keyword]
        elif isinstance(node, cst.Dict):
            items = [(e.key.evaluated_value, e.value) for e in node.elements
                     if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                     and isinstance(e.key.evaluated_value, str)]
        out: dict[str, str] = {}
        for key, value in items:
            name = self.qualify(value.func) if isinstance(value, cst.Call) else None
            if name is not None and is_torch(name):
                out[key] = apis.canonical(name)
        return out

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        """``ConvTranspose2d = torch.nn.ConvTranspose2d`` binds a name: the target stays."""
        if isinstance(node.target, cst.Attribute):
            self._targets.add(node.target)
        if not isinstance(node.target, (cst.Attribute, cst.Subscript)):
            self._names_not_values |= {n for n in find_all(node.target, m.Name())
                                       if isinstance(n, cst.Name)}
        return True

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _reference(self, node: cst.Attribute | cst.Name) -> bool:
        """A torch name used as a value (``torch.float32``, ``act=nn.ReLU``)."""
        name = self.qualify(node)
        if isinstance(node, cst.Name) and name is not None and name.startswith("math.") \
                and self.model.qualify("math", self.file.module) in (None, "math"):
            # ``from math import sqrt``: GRAPH_MODE knows ``math.sqrt`` and folds it over
            # sizes, but gives ``sqrt(n)`` no type, and a weight scaled by it no shape
            self._replace[node] = expr(name)
            self._math_read = True
            return False
        if node in self._call_funcs:
            return not is_torch(name)
        if not is_torch(name):
            return True
        assert name is not None
        root, _, rest = name.partition(".")
        if rest == "__version__":  # ``torch.__version__``, ``torchvision.__version__``
            self._replace[node] = _torch_version(root)
            return False
        if is_torch_metadata(name):  # ``torch.version.cuda``: about torch, kept as it is
            self._replace[node] = kept = expr(name)
            self._untranslated.add(kept)
            return False
        if name in MODULE_BASES:
            self._replace[node] = expr("nn.Cell")
            return False
        if apis.canonical(name) in adapters.ADAPTED and node not in self._compared:
            # called later with torch's arguments, or a base whose __init__ gets them; a
            # type test keeps MindSpore's class, which the adapter subclasses
            self._replace[node] = expr(adapters.ADAPTED[apis.canonical(name)])
            return False
        value_adapter = adapters.VALUE_ADAPTED.get(apis.canonical(name))
        if value_adapter is not None and node not in self._type_tests:
            self._replace[node] = expr(value_adapter)
            return False
        legacy = legacy_tensor_types().get(apis.canonical(name))
        if legacy is not None and name != "torch.Tensor" and node not in self._type_tests:
            # ``self.FloatTensor = torch.FloatTensor``, called later with sizes or data
            self._replace[node] = expr(f"{adapters.LEGACY_TENSOR}(mindspore.{legacy})")
            return False
        mapping = apis.lookup(apis.canonical(name), self.backend)
        constant = compositions.CONSTANTS.get(apis.canonical(name))
        if mapping.api is None and constant is not None:  # ``torch.pi``
            self._replace[node] = expr(constant)
            return False
        composed = compositions.COMPOSED.get(apis.canonical(name))
        if mapping.api is None and composed is not None and node not in self._compared:
            self._replace[node] = expr(composed)  # ``pad = nn.ReplicationPad2d`` on CPU
            return False
        stand_in = compositions.STAND_INS.get(apis.canonical(name))
        if mapping.api is None and stand_in is not None:  # ``torch.no_grad`` as a value
            self._replace[node] = expr(stand_in)
            return False
        accepted = apis.ms_keywords(mapping.api) if mapping.api and mapping.api.startswith(
            ("mindspore.nn.", "mindspore.mint.nn.")) and node not in self._type_tests else None
        if mapping.api is not None and accepted is not None and ms_facts.kind(
                mapping.api) == "class":  # a layer built later, torch's keywords
            entry = load_table().lookup(apis.canonical(name))
            self._replace[node] = adapters.layer_call(
                expr(apis.short_name(mapping.api)), mapping.renames, accepted,
                mapping.dropped, entry.torch_params if entry is not None else ())
        elif mapping.api is not None:
            # called later with torch's keywords the target renames: mint's function
            twin = _torch_signature_twin(apis.canonical(name), mapping) \
                if self._called_with.get(node, set()) & set(mapping.renames) else None
            self._replace[node] = expr(apis.short_name(twin or mapping.api))
        else:
            kept = expr(name)
            self._replace[node] = kept
            self._untranslated.add(kept)
            self._note("MS100", f"{name} has no MindSpore equivalent in the API table")
        return False

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.BaseExpression:
        replaced = self._replace.get(original_node)
        if replaced is not None:
            return replaced
        if original_node.attr.value == "requires_grad" and self._in_forward() and isinstance(
                original_node.value, cst.Name) and original_node.value.value in self._inputs \
                and original_node not in self._targets:
            # ``if x.requires_grad:`` on forward's input: MindSpore differentiates functions
            # (value_and_grad), so a tensor carries no such mark; the Cell takes the path
            # of a tensor that needs no gradient
            return cst.Name("False")
        if original_node.attr.value == "is_cuda" and original_node not in self._targets \
                and original_node not in self._call_funcs and \
                not m.matches(original_node.value, m.Name("self")):
            # ``if x.is_cuda:``: a Cell's tensors are where the context puts them, and the
            # Cell is checked on the CPU; the code takes the path of a tensor not on CUDA
            return cst.Name("False")
        if original_node.attr.value in ("real", "imag") and original_node not in \
                self._targets and original_node not in self._call_funcs and \
                not m.matches(original_node.value, m.Name("self")):
            # a property in torch, a method of MindSpore's Tensor
            return cst.Call(cst.Name(f"torch_{original_node.attr.value}"),
                            [cst.Arg(updated_node.value)])
        internal = _CELL_INTERNALS.get(original_node.attr.value)
        if internal is not None:  # ``module._modules``: the Cell's own dictionaries
            return updated_node.with_changes(attr=cst.Name(internal))
        if original_node.attr.value == "forward" and (m.matches(
                original_node.value, m.Call(func=m.Name("super")))
                or _held_by_self(original_node.value)
                or (m.matches(original_node.value, m.Name("self"))
                    and bool(self._classes) and self._classes[-1])):
            # ``self.conv.forward(x)``, ``signature(self.module.forward)``: a held Cell's;
            # ``self.forward = self.forward_split`` in a Module's constructor: its own
            return updated_node.with_changes(attr=cst.Name("construct"))
        field = NAMED_TUPLE_FIELDS.get(original_node.attr.value)
        if field is not None and (self._named_tuple(original_node.value) or (
                self._tuples and isinstance(original_node.value, cst.Name)
                and original_node.value.value in self._tuples[-1])):
            return cst.Subscript(updated_node.value,
                                 [cst.SubscriptElement(cst.Index(cst.Integer(str(field))))])
        return self._parameter_name(original_node, updated_node)

    def visit_If_body(self, node: cst.If) -> None:
        narrowed: dict[str, tuple[str, ...]] = {}
        if m.matches(node.test, m.Call(func=m.Name("isinstance"), args=[m.Arg(m.Name()),
                                                                         m.Arg()])):
            assert isinstance(node.test, cst.Call)
            name = node.test.args[0].value
            classes = node.test.args[1].value
            listed = [e.value for e in classes.elements] \
                if isinstance(classes, cst.Tuple) else [classes]
            torch_names = [self.qualify(c) for c in listed]
            if isinstance(name, cst.Name) and listed and all(is_torch(t) for t in torch_names):
                narrowed[name.value] = tuple(apis.canonical(t or "") for t in torch_names)
        self._narrowed.append(narrowed)

    def leave_If_body(self, node: cst.If) -> None:
        self._narrowed.pop()

    def _narrowed_layers(self, name: str) -> tuple[str, ...]:
        return next((n[name] for n in reversed(self._narrowed) if name in n), ())

    def _parameter_name(self, original: cst.Attribute,
                        updated: cst.Attribute) -> cst.BaseExpression:
        """``self.emb.weight`` -> ``self.emb.embedding_table``: the parameter names of a
        held layer, as its MindSpore Cell spells them (``weight_map``'s renames); in a
        subclass of a torch layer, ``self.groups`` -> ``self.group`` as well."""
        if isinstance(original.value, cst.Name) and original.value.value != "self":
            # inside ``isinstance(m, X)``: renamed when every class it names renames it
            # alike (``weight`` is ``gamma`` of a BatchNorm, a LayerNorm and a GroupNorm)
            renamed = {_attribute_renames(layer, self.backend).get(original.attr.value)
                       for layer in self._narrowed_layers(original.value.value)}
            new = renamed.pop() if len(renamed) == 1 else None
            return updated.with_changes(attr=cst.Name(new)) if new else updated
        if not self._class_names:
            return updated
        if m.matches(original, m.Attribute(value=m.Name("self"))):
            base = self._layer_bases[-1]
            new = _attribute_renames(base, self.backend).get(original.attr.value) \
                if base else None
            return updated.with_changes(attr=cst.Name(new)) if new else updated
        inner = original.value
        if m.matches(inner, m.Attribute(value=m.Attribute(value=m.Name("self")))):
            # ``self.transformer.wpe.weight``: a layer held in a ModuleDict
            assert isinstance(inner, cst.Attribute) and isinstance(inner.value, cst.Attribute)
            layer = self._held_items.get((inner.value.attr.value, inner.attr.value))
            new = _attribute_renames(layer, self.backend).get(original.attr.value) \
                if layer else None
            return updated.with_changes(attr=cst.Name(new)) if new else updated
        indexed = held_layers.constant_index(original.value)
        if indexed is not None:  # ``self.W[1].weight``: a layer of a Sequential / ModuleList
            return self._indexed_parameter(indexed, original, updated)
        if not m.matches(original, m.Attribute(value=m.Attribute(value=m.Name("self")))):
            return self._chained_parameter(original, updated)
        owner = original.value
        assert isinstance(owner, cst.Attribute)
        cls = self._class_names[-1]
        held = self.model.held(cls, owner.attr.value)
        assigned = self._held[-1].get(owner.attr.value) if self._held else None
        # the classes a container assigned to the name holds are not the name's own
        # (``self.W = nn.Sequential(conv, nn.GroupNorm(...))`` or ``self.W = conv``)
        inside = assigned.contained() - assigned.direct if assigned is not None and \
            not assigned.other else set()
        for target in held:  # ``self.conv.weight``, ``self.conv.groups`` of a held layer
            if target.kind != "external" or not is_torch(target.name) or apis.canonical(
                    target.name) in inside:
                continue
            renames = _attribute_renames(apis.canonical(target.name), self.backend)
            if original.attr.value in renames:
                return updated.with_changes(attr=cst.Name(renames[original.attr.value]))
        return updated

    def _chained_parameter(self, original: cst.Attribute,
                           updated: cst.Attribute) -> cst.BaseExpression:
        """``self.visual.attnpool.c_proj.in_features`` -> ``...c_proj.in_channels``: an
        attribute of a torch layer held by a repository Module the class holds, followed
        attribute by attribute through the classes each one may hold; renamed when every
        torch layer at the end renames it alike."""
        names: list[str] = []
        inner: cst.BaseExpression = original.value
        while isinstance(inner, cst.Attribute):
            names.append(inner.attr.value)
            inner = inner.value
        if not m.matches(inner, m.Name("self")) or len(names) < 2:
            return updated
        owners = {self._class_names[-1]}
        layers: set[str] = set()
        for depth, name in enumerate(reversed(names)):
            found = [t for owner in owners for t in self.model.held(owner, name)]
            last = depth == len(names) - 1
            owners = {t.name for t in found if t.kind == "class"}
            layers = {apis.canonical(t.name) for t in found
                      if last and t.kind == "external" and is_torch(t.name)}
            if not found or (not last and not owners):
                return updated
        renamed = {_attribute_renames(layer, self.backend).get(original.attr.value)
                   for layer in layers}
        new = renamed.pop() if len(renamed) == 1 and not owners else None
        return updated.with_changes(attr=cst.Name(new)) if new else updated

    def _indexed_parameter(self, indexed: tuple[str, int], original: cst.Attribute,
                           updated: cst.Attribute) -> cst.BaseExpression:
        """``self.W[1].weight`` -> ``self.W[1].gamma`` when every layer the constructor
        may put at that position names the attribute so (a GroupNorm); a convolution's
        ``weight``, a Dense's ``bias`` or a position not known stay as they are."""
        name, index = indexed
        assigned = self._held[-1].get(name) if self._held else None
        layers = assigned.at(index) if assigned is not None else frozenset()
        renames = {_attribute_renames(layer, self.backend).get(original.attr.value)
                   for layer in layers}
        new = renames.pop() if len(renames) == 1 else None
        return updated.with_changes(attr=cst.Name(new)) if new else updated

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript
                        ) -> cst.BaseExpression:
        """``torch.jit.Final[bool]`` -> ``bool``: a TorchScript marker around a type;
        ``self.__dict__['_modules']`` -> ``self.__dict__['_cells']``."""
        inner = updated_node.slice[0].slice if len(updated_node.slice) == 1 else None
        if isinstance(inner, cst.Index) and isinstance(inner.value, cst.SimpleString) and \
                m.matches(updated_node.value, m.Attribute(attr=m.Name("__dict__"))):
            key = inner.value.evaluated_value
            if isinstance(key, str) and key in _CELL_INTERNALS:
                return updated_node.with_changes(slice=[cst.SubscriptElement(cst.Index(
                    cst.SimpleString(repr(_CELL_INTERNALS[key]))))])
        if isinstance(inner, cst.Index) and apis.canonical(
                self.qualify(original_node.value) or "") in compositions.SCRIPT_TYPES:
            return inner.value
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._replace.get(original_node, updated_node)

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> SmallResult:
        call = updated_node.value
        if self._base_reinit(call):
            # MindSpore's layer initializes its parameters when built, as torch's
            # reset_parameters does, and has no such method
            self._note("MS100", f"{code(call)} removed: the MindSpore layer initializes its "
                                "parameters when it is built and has no reset_parameters")
            return cst.Pass()
        if m.matches(call, m.Call(func=m.Name("torch_assign_"), args=[m.Arg(m.Name()), m.Arg()])) \
                and self._rebinds(cst.ensure_type(call, cst.Call).args[0].value):
            # ``x.mul_(s)`` as a statement in forward: ``x = x * s`` (compiles in GRAPH_MODE;
            # elsewhere, such as an init helper given a Parameter, the update stays in place)
            assert isinstance(call, cst.Call) and isinstance(call.args[0].value, cst.Name)
            return cst.Assign([cst.AssignTarget(call.args[0].value)], call.args[1].value)
        if self._in_forward() and m.matches(call, m.Call(
                func=m.OneOf(*map(m.Name, FILL_VALUES)), args=[m.Arg(m.Name()), m.ZeroOrMore()])):
            # ``noise.normal_()`` as a statement in forward: ``noise = torch_normal(noise)``
            assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
            assert isinstance(call.args[0].value, cst.Name)
            return cst.Assign([cst.AssignTarget(call.args[0].value)], call.with_changes(
                func=cst.Name(FILL_VALUES[call.func.value])))
        if self._storage_only(call):
            # ``self.lstm.flatten_parameters()``: torch packs an RNN's weights into one
            # buffer for cuDNN; a MindSpore RNN has no such step (nor the method)
            return cst.Pass()
        private = self._torch_private(call)
        if private == "torch._assert" and isinstance(call, cst.Call) and call.args:
            # torch's traceable assert: Python's does the same in eager code, and GRAPH_MODE
            # folds it over sizes
            test, *message = [_one_line(a.value) for a in call.args[:2]]
            return cst.Assert(test, message[0] if message else None)
        if private is not None:
            # called for what it does to torch itself (``torch._C._log_api_usage_once``:
            # usage telemetry): nothing a Cell has (the name's TODO says to drop it)
            return cst.Pass()
        grown = self._parameter_list_growth(call)
        if grown is not None:
            return grown
        if m.matches(call, m.Call(func=m.Name(PARAMETRIZE), args=[
                m.Arg(m.Name() | m.Attribute(value=m.Name("self")), keyword=None, star=""),
                m.ZeroOrMore()])):
            # torch changes the layer in place; the wrapped layer takes its name
            assert isinstance(call, cst.Call)
            target = call.args[0].value
            assert isinstance(target, (cst.Name, cst.Attribute))
            return cst.Assign([cst.AssignTarget(target)], call)
        if not m.matches(call, m.Call(func=m.Attribute(value=m.Name("self"),
                                                       attr=m.Name("register_buffer")))):
            return updated_node
        assert isinstance(call, cst.Call)
        return buffer(call) or updated_node

    def _storage_only(self, call: cst.BaseExpression) -> bool:
        """A call of a torch layer's method that only arranges torch's storage
        (``STORAGE_ONLY``) on a layer the class holds, when its MindSpore Cell has no such
        method."""
        if not m.matches(call, m.Call(func=m.Attribute(value=m.Attribute(value=m.Name("self")),
                                                       attr=m.OneOf(*map(m.Name, STORAGE_ONLY))),
                                      args=[])) or not self._class_names:
            return False
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        owner = cst.ensure_type(call.func.value, cst.Attribute).attr.value
        cls = self._class_names[-1]
        held = self.model.held(cls, owner)
        layers = [apis.canonical(t.name) for t in held if t.kind == "external"]
        if not layers or len(layers) != len(held) or not all(map(is_torch, layers)):
            return False
        method = call.func.attr.value
        return all((api := apis.lookup(layer, self.backend).api) is not None
                   and not ms_facts.exists(f"{api}.{method}") for layer in layers)

    def _rebinds(self, target: cst.BaseExpression) -> bool:
        """Whether an in-place update of ``target`` is written as a new value for the
        name: in forward, and in a function forward calls when the function made the
        tensor itself (``matches = a == b`` then ``matches.fill_diagonal_(0)``), so no
        caller holds it (GRAPH_MODE writes into Parameters only)."""
        if self._in_forward():
            return True
        return isinstance(target, cst.Name) and bool(self._made) and \
            target.value in self._made[-1] and self._run_by_forward()

    def _torch_private(self, call: cst.BaseExpression) -> str | None:
        """The name of a private torch API (``torch._C._log_api_usage_once``) a statement
        calls and the Cell keeps as torch's, since it has no MindSpore form; else None."""
        if not isinstance(call, cst.Call) or call.func not in self._untranslated:
            return None
        name = dotted(call.func)
        if name is None or not any(part.startswith("_") for part in name.split(".")[1:]):
            return None
        return name

    def _parameter_list_growth(self, call: cst.BaseExpression) -> cst.Assign | None:
        """``self.ls.append(p)`` / ``self.ls.extend(ps)`` on a ParameterList: MindSpore's
        form (a ParameterTuple) cannot grow, so the name gets a new one holding the old
        Parameters and the new ones; assigning it registers them with the Cell."""
        if not self._class_names or not m.matches(call, m.Call(
                func=m.Attribute(value=m.Attribute(value=m.Name("self")),
                                 attr=m.Name("append") | m.Name("extend")),
                args=[m.Arg(keyword=None, star="")])):
            return None
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
        owner = call.func.value
        assert isinstance(owner, cst.Attribute)
        cls = self._class_names[-1]
        held = self.model.held(cls, owner.attr.value)
        if not held or any(h.kind != "external" or apis.canonical(h.name) != PARAMETER_LIST
                           for h in held):
            return None
        tuple_class = apis.lookup(PARAMETER_LIST, self.backend).api
        if tuple_class is None:
            return None
        added = call.args[0].value
        items = [cst.StarredElement(owner),
                 cst.Element(added) if call.func.attr.value == "append"
                 else cst.StarredElement(added)]
        return cst.Assign([cst.AssignTarget(owner)], cst.Call(
            expr(tuple_class), [cst.Arg(cst.Tuple(items))]))

    def _base_reinit(self, call: cst.BaseExpression) -> bool:
        """``super().reset_parameters()`` in a subclass of a torch layer whose MindSpore
        class has no such method."""
        base = self._layer_bases[-1] if self._layer_bases else None
        if base is None or not m.matches(call, m.Call(func=m.Attribute(
                value=m.Call(func=m.Name("super")), attr=m.Name("reset_parameters")))):
            return False
        api = apis.lookup(base, self.backend).api
        return api is not None and not ms_facts.exists(f"{api}.reset_parameters")

    def _in_forward(self) -> bool:
        return bool(self._classes and self._classes[-1] and self._functions
                    and self._is_forward(self._functions[-1]))

    def _is_forward(self, method: str) -> bool:
        """True for the method of the enclosing Module class that calling it runs, which
        becomes the Cell's ``construct``: ``forward``, or a ``__call__`` defined instead
        (MindSpore's own ``Cell.__call__`` must run: it calls ``construct``)."""
        return method == "forward" or (method == "__call__" and self.model.find_method(
            self._class_names[-1], "forward") is None)

    def _run_by_forward(self) -> bool:
        """In a forward, or in a function the repository's call graph reaches from one
        (``hard_swish(x)`` called by ``HardSwish.forward``): code GRAPH_MODE compiles."""
        if self._in_forward():
            return True
        qualname = ".".join([self.file.module, *self._scope])
        return bool(self._functions) and self.model.reached_from_forward(qualname)

    def visit_Expr(self, node: cst.Expr) -> bool:
        self._statement_values.add(node.value)
        return True

    def leave_ComparisonTarget(self, original_node: cst.ComparisonTarget,
                               updated_node: cst.ComparisonTarget) -> cst.ComparisonTarget:
        """``x.ndim in {3, 2}`` in code forward runs: the set written as a tuple (GRAPH_MODE
        has no sets; membership is the same)."""
        if isinstance(updated_node.operator, (cst.In, cst.NotIn)) and isinstance(
                updated_node.comparator, cst.Set) and self._run_by_forward():
            items = updated_node.comparator
            elements = [*items.elements]
            if len(elements) == 1 and isinstance(elements[0], cst.Element):
                elements[0] = elements[0].with_changes(comma=cst.Comma())
            return updated_node.with_changes(comparator=cst.Tuple(
                elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return updated_node

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        """``a ^ b`` in code forward runs: ``torch_xor(a, b)``, which compares two bools
        (``self.cross_attend ^ exists(context)``: GRAPH_MODE's xor takes integers only)
        and leaves integers and tensors to the operator."""
        if not isinstance(updated_node.operator, cst.BitXor) or not self._run_by_forward():
            return updated_node
        call = cst.Call(cst.Name(adapters.XOR), [
            cst.Arg(_unparenthesized(updated_node.left)),
            cst.Arg(_unparenthesized(updated_node.right))])
        return call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        new = self._call(original_node, updated_node)
        if self._run_by_forward() and original_node not in self._statement_values and \
                m.matches(new, m.Call(func=m.Name("torch_assign_"), args=[m.Arg(), m.Arg()])):
            # ``return x.mul_(s)`` in code forward runs: the value, in parentheses
            # (GRAPH_MODE cannot write into a tensor that is not a Parameter); in forward
            # itself a statement is an assignment
            assert isinstance(new, cst.Call)
            value = new.args[1].value
            return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if isinstance(value, cst.BinaryOperation) and not value.lpar else value
        if self._run_by_forward() and original_node not in self._statement_values and \
                isinstance(new, cst.Call) and isinstance(new.func, cst.Name) and \
                new.func.value in FILL_VALUES:
            # ``x.new_empty(shape).normal_()``: the values it would write
            return new.with_changes(func=cst.Name(FILL_VALUES[new.func.value]))
        if self._run_by_forward() and new is updated_node:
            counted = _counted(updated_node)
            if counted is not None:
                return counted
        if updated_node.lpar and new is not updated_node and not getattr(new, "lpar", True):
            # ``assert(torch.cuda.is_available())``: the parentheses belong to the call
            new = new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        return new

    def _call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if original_node in self._replace:
            return self._replace[original_node]
        mapped = self._map_lambda(updated_node)
        if mapped is not None:
            return mapped
        absent = self._absent_torch_attribute(original_node, updated_node)
        if absent is not None:
            return absent
        name = self.qualify(original_node.func)
        if name is not None and name.startswith("einops."):
            return self._einops(name, updated_node)
        if is_torch(name):
            assert name is not None
            if name.endswith(".__init__") and name[:-len(".__init__")] in MODULE_BASES:
                # ``nn.Module.__init__(self)``: the base a translated Module has
                return updated_node.with_changes(func=expr("nn.Cell.__init__"))
            root, _, rest = name.partition(".")
            if rest.startswith("__version__.") and isinstance(
                    updated_node.func, cst.Attribute):  # ``torch.__version__.split(".")``
                return updated_node.with_changes(
                    func=updated_node.func.with_changes(value=_torch_version(root)))
            if is_torch_metadata(name):
                kept = expr(name)
                self._untranslated.add(kept)
                return updated_node.with_changes(func=kept)
            return self._torch_call(name, updated_node)
        fixed = (self._base_constructor(original_node, updated_node) or
                 self._function_apply(original_node, updated_node) or
                 self._partial(original_node, updated_node) or
                 self._layer_call(updated_node) or
                 (compiled_children(updated_node) if self._run_by_forward() else None) or
                 self._requires_grad(updated_node) or
                 self._cell_method(updated_node) or named_module_method(updated_node) or
                 tensor_only_method(updated_node))
        if fixed is not None:
            return fixed
        span = self.parsed.span(original_node)
        key = (span.line, span.column, span.end_line, span.end_column) if span else None
        if key in self.tensor_calls and isinstance(updated_node.func, cst.Attribute):
            return self._tensor_method(updated_node, updated_node.func)
        return updated_node

    def _absent_torch_attribute(self, original: cst.Call, updated: cst.Call
                                ) -> cst.BaseExpression | None:
        """``getattr(torch.cpu, '_is_avx2_supported', lambda: False)``: a torch name the
        Cell has no form of (none in the API table, and no answer, constant, composition
        or stand-in of its own) is absent here, so ``getattr`` gives its default."""
        args = original.args
        if not m.matches(original.func, m.Name("getattr")) or "getattr" in \
                self.file.bindings or len(args) != 3 or any(a.keyword or a.star for a in args):
            return None
        attr = args[1].value.evaluated_value if isinstance(args[1].value, cst.SimpleString) \
            else None
        base = self.qualify(args[0].value)
        if not isinstance(attr, str) or not attr.isidentifier() or not is_torch(base):
            return None
        name = apis.canonical(f"{base}.{attr}")
        if apis.lookup(name, self.backend).api is not None or any(
                name in table for table in (compositions.ANSWERS, compositions.CONSTANTS,
                                            compositions.COMPOSED, compositions.STAND_INS,
                                            adapters.ADAPTED, adapters.VALUE_ADAPTED)):
            return None
        self._note("MS100", f"{base}.{attr} has no MindSpore form, so here getattr gives "
                            "its default")
        default = updated.args[2].value
        if isinstance(default, (cst.Name, cst.Attribute, cst.Call, cst.Subscript,
                                cst.BaseString, cst.BaseNumber)) or default.lpar:
            return default
        return default.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def _map_lambda(self, call: cst.Call) -> cst.BaseExpression | None:
        """``map(lambda t: f(t, h=self.heads), qkv)`` in code forward runs -> ``[f(t,
        h=self.heads) for t in qkv]``: GRAPH_MODE's map takes no closure over free
        variables (a lambda, or a function defined in the enclosing one), nor a
        ``functools.partial``."""
        if not self._run_by_forward() or not m.matches(call, m.Call(
                func=m.Name("map"), args=[m.Arg(keyword=None, star=""),
                                          m.Arg(keyword=None, star="")])):
            return None
        function = call.args[0].value
        if isinstance(function, cst.Call) and function.args and not any(
                a.star for a in function.args) and function.args[0].keyword is None \
                and self.qualify(function.func) == "functools.partial":
            # ``map(partial(torch.cat, dim=-1), pairs)`` -> ``[ops.cat(item_, axis=-1) for
            # item_ in pairs]``: the arguments bound ahead, then the item
            bound = list(function.args[1:])
            ahead = [a for a in bound if a.keyword is None]
            item = cst.Name("item_")
            args = [*ahead, cst.Arg(item), *[a for a in bound if a.keyword is not None]]
            args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) if i == len(args) - 1
                    else a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(
                        " "))) for i, a in enumerate(args)]
            return cst.ListComp(cst.Call(function.args[0].value, args),
                                cst.CompFor(item, call.args[1].value))
        if isinstance(function, cst.Name) and any(function.value in d
                                                  for d in self._local_defs):
            # ``map(split_heads, qkv)``, ``def split_heads(t)`` a closure of this function
            item = cst.Name("item_")
            return cst.ListComp(cst.Call(function, [cst.Arg(item)]),
                                cst.CompFor(item, call.args[1].value))
        if not isinstance(function, cst.Lambda):
            return None
        params = function.params
        if len(params.params) != 1 or params.star_arg != cst.MaybeSentinel.DEFAULT \
                or params.kwonly_params or params.star_kwarg or params.posonly_params:
            return None
        target = cst.Name(params.params[0].name.value)
        return cst.ListComp(function.body, cst.CompFor(target, call.args[1].value))

    def _function_apply(self, original: cst.Call, call: cst.Call) -> cst.Call | None:
        """``SwishFn.apply(x)`` of a repository torch.autograd.Function ->
        ``SwishFn.forward(TorchFunctionContext(), x)``: its forward, which MindSpore
        differentiates itself (also in GRAPH_MODE, where a classmethod's ``cls`` is not)."""
        if not m.matches(original.func, m.Attribute(attr=m.Name("apply"))):
            return None
        assert isinstance(original.func, cst.Attribute) and isinstance(call.func, cst.Attribute)
        name = self.qualify(original.func.value)
        resolved = self.model.resolve(name, self.file.module) if name else None
        if resolved is None or not self.model.is_function_class(resolved.name):
            return None
        context = cst.Arg(cst.Call(cst.Name("TorchFunctionContext"), []))
        self._note("MS100", f"{resolved.name.rsplit('.', 1)[-1]}.backward is not used: "
                            "MindSpore differentiates forward (a Cell's bprop keeps a "
                            "hand-written gradient)")
        return call.with_changes(func=call.func.with_changes(attr=cst.Name("forward")),
                                 args=[context, *call.args])

    def _partial(self, original: cst.Call, call: cst.Call) -> cst.Call | None:
        """``partial(torch.cat, dim=-1)`` -> ``partial(ops.cat, axis=-1)``: the keywords
        bound ahead are the torch function's, spelled as its MindSpore target spells them
        (a layer class gets an adapter that takes torch's keywords instead)."""
        if self.qualify(original.func) != "functools.partial" or not original.args:
            return None
        name = self.qualify(original.args[0].value)
        if not is_torch(name):
            return None
        assert name is not None
        mapping = apis.lookup(apis.canonical(name), self.backend)
        if mapping.api is None or ms_facts.kind(mapping.api) == "class":
            return None
        # the target itself, not the function of torch's signature a value gets
        args = [call.args[0].with_changes(value=expr(apis.short_name(mapping.api)))]
        for arg in call.args[1:]:
            key = arg.keyword.value if arg.keyword is not None else None
            if key is not None and key in mapping.dropped:
                continue
            if key is not None and key in mapping.renames:
                arg = arg.with_changes(keyword=cst.Name(mapping.renames[key]))
            args.append(arg)
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return call.with_changes(args=args)

    def _base_constructor(self, original: cst.Call, call: cst.Call) -> cst.Call | None:
        """``super().__init__(c, c, 3, 1, 0, dilation, groups, bias, device=d)`` in a subclass
        of a torch layer: its MindSpore base takes MindSpore's signature, so the arguments
        are translated as a call of that torch layer would be (one mapping for both)."""
        base = self._layer_bases[-1] if self._layer_bases else None
        if self._adapter_bases and self._adapter_bases[-1]:
            return None  # the adapter base takes torch's arguments as they are
        if base is None or not m.matches(original.func, SUPER_INIT):
            return None
        new = self._torch_call(base, call)
        return new.with_changes(func=call.func) if isinstance(new, cst.Call) else None

    def _einops(self, name: str, call: cst.Call) -> cst.BaseExpression:
        """An einops call or layer: a function written into the file, else a TODO."""
        if name in ("einops.pack", "einops.unpack"):  # patterns read when they run
            return call.with_changes(func=cst.Name(name.replace(".", "_")))
        fn = f"einops_{len(self.einops_functions)}"
        try:
            new, source = einops.translate(name, call, fn)
        except einops.PatternError as exc:
            self._note("MS100", f"{name}: {exc}; write it with ops.reshape / "
                                "ops.transpose / ops.tile")
            self.dropped.setdefault("einops", None)
            return call
        if source:
            self.einops_functions.append(source)
        return new

    def _requires_grad(self, call: cst.Call) -> cst.BaseExpression | None:
        """``self.proj.requires_grad_(False)``, ``nn.Linear(4, 2).requires_grad_(False)``:
        freezing a module, which a Cell cannot do by a method of its own; the adapter also
        takes a tensor. In code a forward runs, ``x.detach().requires_grad_()`` is the
        tensor itself: MindSpore differentiates a function by its inputs, not by a flag."""
        func = call.func
        if not m.matches(func, m.Attribute(attr=m.Name("requires_grad_"))):
            return None
        assert isinstance(func, cst.Attribute)
        if self._run_by_forward():
            return func.value
        return cst.Call(cst.Name(adapters.REQUIRES_GRAD), [cst.Arg(func.value), *call.args])

    def _cell_method(self, call: cst.Call) -> cst.BaseExpression | None:
        """``self.modules()`` and other torch.nn.Module methods the class does not define;
        ``add_module`` on a held or local Module."""
        func = call.func
        if m.matches(func, m.Attribute(value=m.Name() | m.Attribute(), attr=m.Name(
                "add_module"))) and not m.matches(func, m.Attribute(value=m.Name("self"))) \
                and len(call.args) == 2:
            # ``self.query.add_module('proj', conv)``, ``stem.add_module('conv1', conv)``:
            # held by name (``self.query.proj``), and run in order by a SequentialCell
            assert isinstance(func, cst.Attribute)
            args = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                                   comma=cst.MaybeSentinel.DEFAULT) for a in call.args]
            return cst.Call(cst.Name(adapters.ADD_MODULE), [cst.Arg(func.value), *args])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.attr.value in MODULE_METHODS and self._module_locals and \
                func.value.value in self._module_locals[-1]:
            # ``stage.children()`` on a Module the function built
            return cell_method(func.value, func.attr.value, list(call.args))
        if m.matches(func, m.Attribute(value=m.Name() | m.Subscript(), attr=m.Name(
                "parameters") | m.Name("named_parameters"))) and not m.matches(
                    func, m.Attribute(value=m.Name("self"))):
            # ``layers[0].parameters()``, ``next(pnet.parameters())`` in a function handed
            # the network: only a Module has parameters
            assert isinstance(func, cst.Attribute)
            return cell_method(func.value, func.attr.value, list(call.args))
        if not self._class_names or not self._classes[-1]:
            return None
        if m.matches(func, m.Attribute(value=m.Attribute(value=m.Name("self")))):
            # ``self.transformer.parameters()``: a Module method of a held Cell
            assert isinstance(func, cst.Attribute)
            return cell_method(func.value, func.attr.value, list(call.args)) \
                if func.attr.value in MODULE_METHODS else None
        if not m.matches(func, m.Attribute(value=m.Name("self"))):
            return None
        assert isinstance(func, cst.Attribute)
        if self.model.find_method(self._class_names[-1], func.attr.value) is not None:
            return None
        if func.attr.value in ("add_module", "register_module") and len(call.args) == 2 \
                and any(apis.inherits(self.model, self._class_names[-1], container)
                        for container in ("torch.nn.Sequential", "torch.nn.ModuleDict")):
            # a Sequential subclass adding to itself: the layer runs in order too; a
            # ModuleDict subclass: the layer is one of its items (``self.values()``)
            return cst.Call(cst.Name(adapters.ADD_MODULE), [cst.Arg(cst.Name("self")),
                                                             *call.args])
        return cell_method(func.value, func.attr.value, list(call.args))

    def _layer_call(self, call: cst.Call) -> cst.Call | None:
        """``self.attn(q, k, v, need_weights=False)`` on a torch layer whose call differs."""
        func = call.func
        if not self._class_names or not m.matches(func, m.Attribute(value=m.Name("self"))):
            return None
        assert isinstance(func, cst.Attribute)
        held = self.model.held(self._class_names[-1], func.attr.value)
        for target in held:
            fix = CALL_FIXES.get(apis.canonical(target.name))
            if target.kind != "external" or fix is None:
                continue
            args, todos = fix([(a.keyword.value if a.keyword else None, a.value)
                               for a in call.args])
            for rule, reason in todos:
                self._note(rule, reason)
            return call.with_changes(args=call_args(args))
        return None

    def _torch_call(self, name: str, call: cst.Call) -> cst.BaseExpression:
        canonical = apis.canonical(name)
        call = _long_form(canonical, call)
        single = compositions.ONE_ARGUMENT.get(canonical)
        if single is not None and len(call.args) == 1 and call.args[0].keyword is None \
                and not call.args[0].star:  # ``torch.where(mask)``, ``torch.max(x)``
            return call.with_changes(func=expr(single))
        position = compositions.SCRIPT_VALUES.get(canonical)
        if position is not None and len(call.args) > position:  # ``jit.annotate(T, v)``: v
            return call.args[position].value
        builtin = compositions.SCRIPT_BUILTINS.get(canonical)
        if builtin is not None:  # ``torch.jit.isinstance(x, str)``: ``isinstance(x, str)``
            return call.with_changes(func=cst.Name(builtin))
        if self._leaves_out(compositions.NARROWER.get(canonical, ()), call) or \
                self.backend in compositions.NARROWER_ON.get(canonical, ()):
            return call.with_changes(func=cst.Name(compositions.COMPOSED[canonical]))
        if canonical in compositions.DISPATCHED and _may_pass_a_tensor_second(call):
            return call.with_changes(func=cst.Name(compositions.DISPATCHED[canonical]))
        if apis.lookup(canonical, self.backend).api is None:
            answer = compositions.ANSWERS.get(canonical)
            if answer is not None:  # ``torch.jit.is_scripting()``: eager code's answer
                self._note("MS100", f"{name}() is {answer} in eager code: the branch it "
                                    "guards keeps the eager path")
                return expr(answer)
            constant = compositions.CONSTANTS.get(canonical)
            if constant is not None:  # ``torch.Size([2, 3])`` -> ``tuple([2, 3])``
                return call.with_changes(func=expr(constant))
            composed = compositions.COMPOSED.get(canonical)
            if composed is not None:
                self._note("MS100", f"{name}: no MindSpore form on {self.backend}; "
                                    f"{composed} (in this file) composes it from MindSpore "
                                    "primitives")
                return call.with_changes(func=cst.Name(composed))
            stand_in = compositions.STAND_INS.get(canonical)
            if stand_in is not None:  # ``torch.device("cpu")``: a record of its name
                return call.with_changes(func=cst.Name(stand_in))
        sized = self._sized_tensor(canonical, call)
        if sized is not None:
            return sized
        if canonical.endswith("_") and not canonical.endswith("__") and apis.lookup(
                canonical, self.backend).api is None and apis.lookup(
                    canonical[:-1], self.backend).api is not None and call.args:
            # ``F.relu_(x)``: torch's in-place form, as the value it returns
            self._note("MS100", f"{name} updates its input in place in torch; here its "
                                "result is used and the input is left as it was")
            return self._mapped_call(canonical[:-1], call)
        wrapper = WRAPPERS.get(canonical)
        if wrapper is not None and call.args and not call.args[0].star:
            rest = [a for a in call.args[1:]
                    if not (a.keyword is not None and a.keyword.value in wrapper)]
            if rest:
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            self._note("MS100", WRAPPER_TODO)
            return cst.Call(call.args[0].value, rest)
        try:
            return self._mapped_call(name, call)
        except cst.CSTValidationError as exc:  # the rewrite is not valid Python: keep it
            kept = expr(name)
            self._untranslated.add(kept)
            self._note("MS100", f"{name}: the table's rewrite of this call is invalid "
                                f"({exc}); translate it by hand")
            return call.with_changes(func=kept)

    @staticmethod
    def _leaves_out(needed: tuple[str, ...], call: cst.Call) -> bool:
        """True when ``call`` does not pass each of ``needed`` (torch's parameters in order),
        or passes it None."""
        given: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                return False  # unknown: keep MindSpore's form
            key = arg.keyword.value if arg.keyword else (needed[i] if i < len(needed) else "")
            given[key] = arg.value
        return any(name not in given or m.matches(given[name], m.Name("None"))
                   for name in needed)

    @staticmethod
    def _sized_tensor(canonical: str, call: cst.Call) -> cst.BaseExpression | None:
        """``torch.Tensor(c_out, c_in, *kernel)``: torch's legacy constructors given sizes
        make a tensor of that shape (MindSpore's Tensor takes data): zeros of it. Given
        data (``torch.LongTensor(array)``), they make their own dtype whatever the data's."""
        dtype = legacy_tensor_types().get(canonical)
        if dtype is None or any(a.keyword is not None for a in call.args):
            return None
        sizes = [a for a in call.args if a.star != "**"]
        sized = len(sizes) > 1 or any(a.star == "*" for a in sizes) or (
            len(sizes) == 1 and _integer_valued(sizes[0].value))
        if not sized:
            if len(call.args) != 1 or call.args[0].star:
                return None
            given = call.args[0].value
            if isinstance(given, (cst.Name, cst.Attribute)):
                # ``torch.FloatTensor(out_features)``: a size if it is an int, data if not;
                # which is known when it runs
                return cst.Call(expr(f"{adapters.LEGACY_TENSOR}(mindspore.{dtype})"),
                                [cst.Arg(given)])
            return cst.Call(expr("mindspore.Tensor"), [
                cst.Arg(given), cst.Arg(expr(f"mindspore.{dtype}"))])
        shape = cst.Tuple([cst.StarredElement(a.value) if a.star == "*" else cst.Element(a.value)
                           for a in sizes])
        return cst.Call(expr("ops.zeros"), [cst.Arg(shape), cst.Arg(expr(f"mindspore.{dtype}"))])

    def _mapped_call(self, name: str, call: cst.Call) -> cst.BaseExpression:
        canonical = apis.canonical(name)
        if canonical in FACTORIES:
            call = packed_sizes(call)
        args = [(a.keyword.value if a.keyword else None, a.value) for a in call.args
                if not a.star]
        star = any(a.star == "*" for a in call.args)
        adapter = adapters.VALUE_ADAPTED.get(canonical) or adapters.ADAPTED.get(canonical)
        if adapter is not None and any(a.star for a in call.args):
            # ``nn.Conv2d(c_in, c_out, k, **kwargs)``: which torch arguments come is known
            # only at run time; the adapter takes torch's signature and converts them then
            return call.with_changes(func=cst.Name(adapter))
        rewrite = translate_call(CallIn(name, args, self.backend, star))
        for rule, reason in rewrite.todos:
            self._note(rule, reason)
        if rewrite.func is None:
            kept = expr(name)
            self._untranslated.add(kept)
            return call.with_changes(func=kept)
        if star:  # positions unknown: they stay as written, keywords are translated
            return call.with_changes(func=expr(rewrite.func),
                                     args=self._keywords_of_spread_call(canonical, call))
        out = call_args(rewrite.args)
        spread = [a for a in call.args if a.star == "**"]
        if spread:  # ``**dd``: torch keywords at run time, renamed and filtered by an adapter
            mapping = apis.lookup(apis.canonical(name), self.backend)
            # the MindSpore API called; an adapter class of the file (no dot) takes anything
            callee = (mapping.api or "") if "." in rewrite.func else rewrite.func
            written = mapping.dropped | {k for k, _ in rewrite.args if k}
            out += [cst.Arg(adapters.keywords_call(a.value, mapping.renames,
                                                   apis.ms_keywords(callee), written),
                            star="**") for a in spread]
        return cst.Call(func=expr(rewrite.func), args=out)

    def _keywords_of_spread_call(self, canonical: str, call: cst.Call) -> list[cst.Arg]:
        """The arguments of ``torch.linspace(*domain, n, device=device)``: those given by
        position as written, the keywords as any call's (placement and what MindSpore does
        not take dropped, the others renamed)."""
        keywords, _ = translated_keywords(canonical, [
            (a.keyword.value, a.value) for a in call.args if a.keyword is not None],
            apis.lookup(canonical, self.backend))
        kept = {id(value): key for key, value in keywords if key is not None}
        out = [a if a.keyword is None else a.with_changes(keyword=cst.Name(kept[id(a.value)]))
               for a in call.args if a.keyword is None or id(a.value) in kept]
        if out:  # no comma left where a dropped keyword followed
            out[-1] = out[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return out

    def _device_names(self, node: cst.FunctionDef) -> set[str]:
        """The names the function assigns only devices to: a tensor's ``.device``, a
        ``torch.device(...)``, a name that says it is a device, a device string, or a
        choice between such (``a if c else b``, where one side may be None)."""
        held: dict[str, list[cst.BaseExpression]] = {}
        for assign in find_all(node.body, m.Assign()):
            assert isinstance(assign, cst.Assign)
            for target in assign.targets:
                for bound in find_all(target.target, m.Name()):
                    assert isinstance(bound, cst.Name)
                    held.setdefault(bound.value, []).append(  # (unpacked: not known)
                        assign.value if target.target is bound else cst.Integer("0"))
        devices: set[str] = set()

        def device(value: cst.BaseExpression) -> bool:
            if isinstance(value, cst.IfExp):
                sides = [s for s in (value.body, value.orelse)
                         if not m.matches(s, m.Name("None"))]
                return bool(sides) and all(device(s) for s in sides)
            if isinstance(value, cst.Name):
                return value.value in devices or DEVICE_NAMES.fullmatch(value.value) is not None
            if isinstance(value, cst.SimpleString):
                return str(value.evaluated_value).split(":")[0] in ("cpu", "cuda", "mps")
            if isinstance(value, cst.Call):
                return self.qualify(value.func) == "torch.device"
            return m.matches(value, m.Attribute(attr=m.Name("device")))

        grown = True
        while grown:
            grown = False
            for name, assigned in held.items():
                if name not in devices and all(device(v) for v in assigned):
                    devices.add(name)
                    grown = True
        return devices

    def _tensor_method(self, call: cst.Call, func: cst.Attribute) -> cst.BaseExpression:
        method = func.attr.value
        if method == "to" and self._devices and len(call.args) == 1 and m.matches(
                call.args[0], m.Arg(value=m.Name(), keyword=None, star="")) and \
                cst.ensure_type(call.args[0].value, cst.Name).value in self._devices[-1]:
            return func.value  # ``x.to(dv)``, dv a device: a Cell's tensors have one
        if method in ENGINE_METHODS and not any(a.star for a in call.args):
            converted = engine_method(method, func.value, [
                (a.keyword.value if a.keyword else None, a.value) for a in call.args],
                self.backend)
            if converted is not None:
                return converted
        fix = METHOD_FIXES.get(method)
        if fix is not None and not any(a.star for a in call.args):
            fixed = fix(func.value, [(a.keyword.value if a.keyword else None, a.value)
                                     for a in call.args])
            if fixed is not None:
                return fixed
        mapping = apis.lookup(f"torch.Tensor.{method}", self.backend)
        if mapping.api is None and (inplace := self._inplace_method(call, func)) is not None:
            return inplace
        if mapping.api is None:
            self._note("MS100", f"Tensor.{method} has no MindSpore equivalent in the API table")
            return call
        new = mapping.api.rsplit(".", 1)[1]
        call = call.with_changes(args=rename_keywords(call.args, mapping))
        functional = self._functional_form(new, call)
        if mapping.api.startswith("mindspore.Tensor.") and functional is not None:
            return cst.Call(expr(f"ops.{new}"), [cst.Arg(func.value), *call.args])
        if mapping.api.startswith("mindspore.Tensor.") and new != method:
            return call.with_changes(func=func.with_changes(attr=cst.Name(new)))
        if not mapping.api.startswith("mindspore.Tensor.") and not ms_facts.exists(
                f"mindspore.Tensor.{method}"):
            rest = [cst.Arg(func.value), *call.args]
            return cst.Call(expr(apis.short_name(mapping.api)), rest)
        return call

    def _inplace_method(self, call: cst.Call, func: cst.Attribute) -> cst.BaseExpression | None:
        """``mask.triu_(1)`` -> ``torch_assign_(mask, mask.triu(1))``: a torch in-place
        method MindSpore lacks, as its out-of-place twin (translated as any method) written
        back; on a local name the statement becomes a plain assignment."""
        method = func.attr.value
        if not method.endswith("_") or method.endswith("__") or any(a.star for a in call.args):
            return None
        twin = method[:-1]
        if apis.lookup(f"torch.Tensor.{twin}", self.backend).api is None:
            return None
        receiver = storage(func.value)
        twin_func = func.with_changes(value=written(receiver), attr=cst.Name(twin))
        value = self._tensor_method(call.with_changes(func=twin_func), twin_func)
        return cst.Call(cst.Name("torch_assign_"), [cst.Arg(receiver), cst.Arg(value)])

    @staticmethod
    def _functional_form(method: str, call: cst.Call) -> str | None:
        """``ops.amax`` for ``x.amax(dims, keepdims=True)``: GRAPH_MODE compiles Tensor
        methods through signatures that take some arguments by position only, while the
        ops function takes them by name in both modes. Only for a call with keywords the
        ops function accepts."""
        keywords = {a.keyword.value for a in call.args if a.keyword is not None}
        if method not in _FUNCTIONAL or not keywords or any(a.star for a in call.args):
            return None
        accepted = apis.ms_keywords(f"mindspore.ops.{method}")
        if accepted is None or not keywords <= accepted:
            return None
        return f"mindspore.ops.{method}"


def _paired_assign(pairs: list[tuple[str, str]]) -> cst.Assign:
    """``a = x`` for one pair, ``a, b = x, y`` for more."""
    if len(pairs) == 1:
        return cst.Assign([cst.AssignTarget(cst.Name(pairs[0][0]))], cst.Name(pairs[0][1]))
    return cst.Assign(
        [cst.AssignTarget(cst.Tuple([cst.Element(cst.Name(n)) for n, _ in pairs],
                                    lpar=[], rpar=[]))],
        cst.Tuple([cst.Element(cst.Name(v)) for _, v in pairs], lpar=[], rpar=[]))


def _may_pass_a_tensor_second(call: cst.Call) -> bool:
    """``torch.max(a, b)`` or ``torch.max(a, other=b)``: the second argument is not an
    integer written in the code (``torch.max(x, 1)``, ``torch.max(x, -1)``) nor given as
    ``dim``, so it may be a tensor."""
    if any(a.star for a in call.args):
        return False
    if any(a.keyword is not None and a.keyword.value == "other" for a in call.args):
        return True
    positional = [a.value for a in call.args if a.keyword is None]
    if len(positional) != 2 or any(a.keyword is not None and a.keyword.value in (
            "dim", "keepdim") for a in call.args):
        return False
    second = positional[1]
    if isinstance(second, cst.UnaryOperation):
        second = second.expression
    return not isinstance(second, cst.Integer)


def side_package(top: str, repository_tops: Container[str]) -> bool:
    """A top-level package that is neither torch, the standard library, numpy /
    MindSpore, einops nor the repository itself (whose top-level packages are given): a
    side library, which Cell files replace by a stand-in."""
    return bool(top) and not is_torch(top) and top not in sys.stdlib_module_names \
        and top not in _KEPT and top not in repository_tops and top != "einops"


def _long_form(canonical: str, call: cst.Call) -> cst.Call:
    """A call of torch's shorter positional form (``torch.randint(10, (2,))``) with the
    argument it leaves out written in (``torch.randint(0, 10, (2,))``), as MindSpore's
    function takes it; any other call as it is."""
    form = compositions.SHORT_FORMS.get(canonical)
    if form is None or any(a.star for a in call.args):
        return call
    params, left_out, value = form
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    positional = len(call.args) - len(keywords)
    if left_out in keywords or positional + len(keywords & set(params)) != len(params) - 1:
        return call  # the long form, or a call this does not read
    at = params.index(left_out)
    args = list(call.args)
    if positional > at:  # ``randint(10, (2,))``: the rest move one place on
        args.insert(at, cst.Arg(expr(value), comma=cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))))
    else:  # ``randint_like(x, high=3)``
        args[-1] = args[-1].with_changes(comma=cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(cst.Arg(expr(value), keyword=cst.Name(left_out)))
    return call.with_changes(args=args)


def _one_line(node: cst.BaseExpression) -> cst.BaseExpression:
    """An argument moved out of a call's parentheses (``torch._assert(c, "a"\n "b")``
    as an ``assert``), in parentheses of its own when it spans lines."""
    if "\n" not in code(node) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def has_form(name: str, backend: str) -> bool:
    """True when a Cell file writes the torch name in a form that works: a MindSpore API,
    an adapter, a composition or the constant answer of a query about torch. False for
    what stays a torch name (``torch.onnx.register_custom_op_symbolic``), which raises
    when called."""
    canonical = apis.canonical(name)
    if name in MODULE_BASES or canonical in adapters.ADAPTED \
            or canonical in adapters.VALUE_ADAPTED or canonical in legacy_tensor_types():
        return True
    if apis.lookup(canonical, backend).api is not None:
        return True
    return any(canonical in known for known in (
        compositions.ANSWERS, compositions.CONSTANTS, compositions.COMPOSED,
        compositions.STAND_INS, compositions.SCRIPT_VALUES, compositions.SCRIPT_DECORATORS,
        compositions.SCRIPT_TYPES, compositions.SCRIPT_BUILTINS, compositions.ONE_ARGUMENT))


def import_safe(name: str, backend: str, repository_tops: Container[str]) -> bool:
    """True when calling a name from outside the repository is safe when a Cell file is
    imported: a side library's stand-in, or a torch name written in a working form."""
    if is_torch(name):
        return has_form(name, backend)
    return side_package(name.split(".")[0], repository_tops)


def translate_file(parsed: Parsed, file: FileResult, model: RepositoryModel | ModelReads,
                   backend: str, findings: list[Finding],
                   repository: module_level.RepositoryJudge | None = None) -> FileTranslation:
    """The MindSpore starter code of one repository file; ``repository`` judges whether
    the functions and classes of other files are safe to call at import (see
    :class:`module_level.RepositoryPurity`). What the translation asks of other files
    goes through ``model``'s :class:`ModelReads` (made here when given the model)."""
    reads = model if isinstance(model, ModelReads) else ModelReads(model, repository)
    transformer = CellTransformer(parsed, file, reads, backend, findings)
    module = parsed.module.visit(transformer)
    if find_all(parsed.module, m.FormattedString()):
        module = module.visit(_FormattedQuotes())
    return FileTranslation(module.code, transformer.cells, transformer.all_todos,
                           list(transformer.dropped))


class _FormattedQuotes(cst.CSTTransformer):
    """A string the translation put inside an f-string's braces (``torch.__version__`` ->
    ``'2.13.0'``) takes the other kind of quote when it has the f-string's: Python before
    3.12 ends the f-string there."""

    def __init__(self) -> None:
        super().__init__()
        self.quotes: list[str] = []

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        self.quotes.append(node.start.lstrip("rRfFbBuU"))
        return True

    def leave_FormattedString(self, original: cst.FormattedString,
                              updated: cst.FormattedString) -> cst.FormattedString:
        self.quotes.pop()
        return updated

    def leave_SimpleString(self, original: cst.SimpleString,
                           updated: cst.SimpleString) -> cst.SimpleString:
        if not self.quotes or len(self.quotes[-1]) != 1 or updated.quote != self.quotes[-1]:
            return updated
        other = "'" if updated.quote == '"' else '"'
        prefix = updated.prefix
        inner = updated.value[len(prefix) + 1:-1]
        if other in inner or "\\" in inner:
            return updated
        return updated.with_changes(value=f"{prefix}{other}{inner}{other}")


def _then(function: cst.FunctionDef, line: str) -> cst.FunctionDef:
    """``function`` with the statement ``line`` added at the end of its body."""
    body = cst.ensure_type(function.body, cst.IndentedBlock)
    return function.with_changes(body=body.with_changes(
        body=[*body.body, cst.parse_statement(line)]))


def _lookup_misses_are_attribute_errors(method: cst.FunctionDef) -> cst.FunctionDef:
    """A Cell's ``__getattr__`` that looks a name up in a dictionary raises AttributeError
    for a missing key. MindSpore's Cell asks for attributes with ``hasattr`` (``bprop``)
    while ``Cell.__init__`` runs, before the subclass has set what its ``__getattr__``
    reads (``self.__dict__['_cells']['module']``); torch's Module never asks, so a
    KeyError there went unnoticed. ``hasattr`` passes on AttributeError only."""
    params = method.params.params
    if len(params) < 2 or not isinstance(method.body, cst.IndentedBlock) or not any(
            isinstance(node, cst.Subscript) for node in descendants(method.body)):
        return method
    handler = cst.parse_statement(
        "try:\n    pass\n"
        "except KeyError as error:  # MindSpore's Cell asks for attributes while it is built\n"
        f"    raise AttributeError({params[1].name.value}) from error\n")
    assert isinstance(handler, cst.Try)
    return method.with_changes(body=cst.IndentedBlock(
        [handler.with_changes(body=method.body)]))


def _function_torch_imports(module: cst.Module) -> dict[str, str]:
    """Names bound by torch imports written inside functions (module-level ones are in the
    file's bindings): the import goes with the other torch imports, its uses are
    translated like those of a module-level import."""
    out: dict[str, str] = {}
    for function in find_all(module, m.FunctionDef()):
        for plain in find_all(function, m.Import()):  # ``import torch``, ``import torch.nn as nn``
            assert isinstance(plain, cst.Import)
            for alias in plain.names:
                name = dotted(alias.name)
                if not is_torch(name):
                    continue
                assert name is not None
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    out.setdefault(alias.asname.name.value, name)
                elif alias.asname is None:
                    root = name.partition(".")[0]
                    out.setdefault(root, root)
        for node in find_all(function, m.ImportFrom()):
            assert isinstance(node, cst.ImportFrom)
            source = dotted(node.module) if node.module is not None and not node.relative \
                else None
            if not is_torch(source) or isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(local, cst.Name):
                    out.setdefault(local.value, f"{source}.{dotted(alias.name)}")
    return out


class _Hoist(cst.CSTTransformer):
    """Parts of a statement taken out to lines of their own, before it: outside
    comprehensions, lambdas and conditional parts (which may not run, or read variables of
    their own), each replaced by a new name; :attr:`hoisted` holds each name and its value."""

    prefix = "value"
    _NESTED: tuple[type[cst.CSTNode], ...] = (
        cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
        cst.BooleanOperation)

    def __init__(self, start: int) -> None:
        self.start = start
        self.hoisted: list[tuple[str, cst.BaseExpression]] = []
        self._inner = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self._NESTED):
            self._inner += 1
        return super().on_visit(node)

    def on_leave(self, original_node: NodeT, updated_node: NodeT
                 ) -> NodeT | cst.RemovalSentinel | cst.FlattenSentinel[NodeT]:
        result = super().on_leave(original_node, updated_node)
        if isinstance(original_node, self._NESTED):
            self._inner -= 1
        return result

    def _take(self, value: cst.BaseExpression) -> cst.Name:
        name = f"{self.prefix}_{self.start + len(self.hoisted) + 1}"
        self.hoisted.append((name, value))
        return cst.Name(name)


class _LambdaHoist(_Hoist):
    """Lambdas passed as arguments, named ``lambda_<n>``."""

    prefix = "lambda"
    _NESTED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if self._inner or not isinstance(updated_node.value, cst.Lambda):
            return updated_node
        return updated_node.with_changes(value=self._take(updated_node.value))


def _device_apart(line: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine] | None:
    """``device, dtype = x.device, x.dtype`` as one assignment per name: GRAPH_MODE
    compiles a tuple holding a tensor's device and a dtype into a broken dtype. Only
    where the names and values pair one to one and no value reads a name assigned. A
    value unpacked in place (``_, n, device, dtype = *x.shape, x.device, x.dtype``) keeps
    the names left between the pairs at either end: ``_, n = x.shape``."""
    if len(line.body) != 1 or not m.matches(line.body[0], m.Assign(
            targets=[m.AssignTarget(m.Tuple())], value=m.Tuple())):
        return None
    assign = line.body[0]
    assert isinstance(assign, cst.Assign)
    targets, values = assign.targets[0].target, assign.value
    assert isinstance(targets, cst.Tuple) and isinstance(values, cst.Tuple)
    if not all(isinstance(e.value, cst.Name) for e in targets.elements):
        return None
    names, items = list(targets.elements), list(values.elements)
    assigned = {e.value.value for e in names if isinstance(e.value, cst.Name)}
    attributes = [a for e in items for a in find_all(e.value, m.Attribute())]
    attribute_names = {id(a.attr) for a in attributes if isinstance(a, cst.Attribute)}
    read = {n.value for e in items for n in find_all(e.value, m.Name())
            if isinstance(n, cst.Name) and id(n) not in attribute_names}
    if not any(m.matches(a, m.Attribute(attr=m.Name("device"))) for a in attributes) or \
            read & assigned:
        return None
    head: list[tuple[cst.BaseElement, cst.BaseElement]] = []
    tail: list[tuple[cst.BaseElement, cst.BaseElement]] = []
    while names and items and isinstance(names[0], cst.Element) and \
            isinstance(items[0], cst.Element):
        head.append((names.pop(0), items.pop(0)))
    while names and items and isinstance(names[-1], cst.Element) and \
            isinstance(items[-1], cst.Element):
        tail.insert(0, (names.pop(), items.pop()))
    middle: cst.SimpleStatementLine | None = None
    if names or items:  # what one value unpacked in place gives the names between
        if len(items) != 1 or not isinstance(items[0], cst.StarredElement) or not names:
            return None
        elements = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in names]
        if len(elements) == 1 and isinstance(elements[0], cst.Element):
            elements[0] = elements[0].with_changes(comma=cst.Comma())
        middle = cst.SimpleStatementLine([cst.Assign(
            [cst.AssignTarget(cst.Tuple(elements, lpar=[], rpar=[]))], items[0].value)])
    def one(name: cst.BaseElement, value: cst.BaseElement) -> cst.SimpleStatementLine:
        assert isinstance(name.value, cst.Name)
        return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(name.value)],
                                                   value.value)])

    lines = [one(n, v) for n, v in head] + ([middle] if middle is not None else [])
    lines += [one(n, v) for n, v in tail]
    lines[0] = lines[0].with_changes(leading_lines=line.leading_lines)
    return lines


class _PopHoist(_Hoist):
    """``name.pop(...)`` inside a larger expression, named ``popped_<n>``."""

    prefix = "popped"
    _top: cst.BaseExpression | None = None  # the statement's whole value

    def visit_Assign(self, node: cst.Assign) -> bool:
        self._top = node.value  # ``y = h.pop()`` is already alone
        return True

    def visit_Expr(self, node: cst.Expr) -> bool:
        self._top = node.value
        return True

    def visit_Return(self, node: cst.Return) -> bool:
        self._top = node.value
        return True

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call
                   ) -> cst.BaseExpression:
        if self._inner or original_node is self._top or not m.matches(
                updated_node.func, m.Attribute(value=m.Name(), attr=m.Name("pop"))):
            return updated_node
        return self._take(updated_node)


# Python contexts that change only what is printed or nothing at all: in code GRAPH_MODE
# compiles, their block runs without them.
_QUIET_CONTEXTS = {
    "warnings.catch_warnings": "GRAPH_MODE compiles no Python context manager; this one "
                               "only changes which warnings are shown, so the block runs "
                               "without it",
    "contextlib.nullcontext": "a context that does nothing: the block runs without it",
}


def _branches(stmt: cst.If) -> list[cst.CSTNode] | None:
    """The blocks of an ``if`` / ``elif`` chain; None when it has no ``else``."""
    blocks: list[cst.CSTNode] = [stmt.body]
    rest = stmt.orelse
    while isinstance(rest, cst.If):
        blocks.append(rest.body)
        rest = rest.orelse
    return [*blocks, rest.body] if rest is not None else None


def _reads(nodes: list[cst.BaseStatement]) -> set[str]:
    """The names the statements use (not an attribute's or a keyword's name)."""
    names = [n for s in nodes for n in find_all(s, m.Name()) if isinstance(n, cst.Name)]
    skip = {id(a.attr) for s in nodes for a in find_all(s, m.Attribute())
            if isinstance(a, cst.Attribute)}
    skip |= {id(a.keyword) for s in nodes for a in find_all(s, m.Arg())
             if isinstance(a, cst.Arg) and a.keyword is not None}
    return {n.value for n in names if id(n) not in skip}


def _bound_before(function: cst.FunctionDef) -> cst.FunctionDef:
    """``name = None`` before a statement of the function's own block that binds
    ``name`` on some paths only (a ``for`` loop's body, an ``if`` without ``else`` or one
    of whose branches does not bind it) when a later statement reads it and nothing
    before binds it. GRAPH_MODE refuses a name bound in one branch or in a loop body and
    read after; where the code read it unbound Python would have raised, so every run
    that worked gives the same result. Only at the block's top (a statement inside a
    loop may read what the previous iteration bound)."""
    if not isinstance(function.body, cst.IndentedBlock):
        return function
    params = function.params
    bound = {p.name.value for p in (*params.posonly_params, *params.params,
                                    *params.kwonly_params)}
    bound |= {p.name.value for p in (params.star_arg, params.star_kwarg)
              if isinstance(p, cst.Param)}
    declared = {n.name.value for s in find_all(function.body, m.Global() | m.Nonlocal())
                if isinstance(s, (cst.Global, cst.Nonlocal)) for n in s.names}
    statements = list(function.body.body)
    out: list[cst.BaseStatement] = []
    for i, stmt in enumerate(statements):
        inside = values.bound_names(stmt)
        partly: set[str] = set()
        if isinstance(stmt, cst.For):
            partly = inside
        elif isinstance(stmt, cst.If):
            blocks = _branches(stmt)
            everywhere = set.intersection(*(values.bound_names(b) for b in blocks)) if (
                blocks) else set()
            partly = inside - everywhere
        missing = sorted((partly - bound - declared) & _reads(statements[i + 1:]))
        out += [cst.parse_statement(f"{name} = None\n") for name in missing]
        out.append(stmt)
        bound |= inside
    if len(out) == len(statements):
        return function
    return function.with_changes(body=function.body.with_changes(body=out))


class _FlagTests(cst.CSTTransformer):
    """``has_cls = self.use_cls_token`` then ``if has_cls:``: the test reads the attribute
    itself. GRAPH_MODE takes only the branch a Cell's attribute selects, but compiles both
    for a local name, and refuses a name bound in one branch only (``tokens, ps =
    pack(...)`` under ``if has_cls:``, read under the next one). Only a name bound once,
    to a plain ``self`` attribute, and a test that is the name alone or ``not`` it."""

    def __init__(self, function: cst.FunctionDef) -> None:
        bound: dict[str, int] = {}
        for node in find_all(function.body, m.AssignTarget() | m.AugAssign() | m.AnnAssign()
                             | m.For() | m.CompFor() | m.AsName() | m.NamedExpr()):
            if isinstance(node, cst.AsName):
                target: cst.CSTNode = node.name
            elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For,
                                   cst.CompFor, cst.NamedExpr)):
                target = node.target
            else:
                continue
            for bound_name in find_all(target, m.Name()):
                if isinstance(bound_name, cst.Name):
                    bound[bound_name.value] = bound.get(bound_name.value, 0) + 1
        params = {p.name.value for p in (*function.params.params,
                                         *function.params.kwonly_params,
                                         *function.params.posonly_params)}
        self.flags: dict[str, cst.Attribute] = {}
        for assign in find_all(function.body, m.Assign(targets=[m.AssignTarget(m.Name())],
                                                       value=m.Attribute(m.Name("self")))):
            assert isinstance(assign, cst.Assign)
            name = cst.ensure_type(assign.targets[0].target, cst.Name).value
            if bound.get(name) == 1 and name not in params:
                self.flags[name] = cst.ensure_type(assign.value, cst.Attribute)

    def _test(self, test: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(test, cst.Name) and test.value in self.flags:
            return self.flags[test.value]
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and \
                isinstance(test.expression, cst.Name) and test.expression.value in self.flags:
            return test.with_changes(expression=self.flags[test.expression.value])
        return test

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        return updated_node.with_changes(test=self._test(updated_node.test))


def _held_then_called(function: cst.FunctionDef) -> dict[cst.CSTNode, set[str]]:
    """The names and attributes assigned (as the value, or a branch of it) to a local
    that ``function`` also calls, each with the keywords of those calls:
    ``dist_fn = torch.max if big else torch.min`` then ``dist_fn(mat, dim=1)``."""
    keywords: dict[str, set[str]] = {}
    for call in find_all(function.body, m.Call(func=m.Name())):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
        keywords.setdefault(call.func.value, set()).update(
            a.keyword.value for a in call.args if a.keyword is not None)
    held: dict[cst.CSTNode, set[str]] = {}
    for assign in find_all(function.body, m.Assign(targets=[m.AssignTarget(m.Name())])):
        assert isinstance(assign, cst.Assign)
        target = cst.ensure_type(assign.targets[0].target, cst.Name).value
        if not keywords.get(target):
            continue
        values = [assign.value]
        while values and isinstance(values[-1], cst.IfExp):
            branch = values.pop()
            assert isinstance(branch, cst.IfExp)
            values += [branch.body, branch.orelse]
        for value in values:
            if isinstance(value, (cst.Name, cst.Attribute)):
                held[value] = keywords[target]
    return held


def _torch_signature_twin(name: str, mapping: apis.Mapping) -> str | None:
    """For a torch function held as a value (``dist_fn = torch.max``, called later as
    ``dist_fn(mat, dim=1)``) whose MindSpore target names its parameters otherwise
    (``ops.max`` takes ``axis``): the function of ``mindspore.mint`` of the same name when
    it takes every torch name the target renames (mint follows torch's signatures; an
    overloaded one, ``mint.max(*args, **kwargs)``, takes torch's names by design), so
    the later call's keywords still fit; None when there is none or no rename."""
    if not (mapping.renames or mapping.dropped) or not name.startswith("torch.") or \
            mapping.api is None or ms_facts.kind(mapping.api) == "class":
        return None
    twin = "mindspore.mint." + name.removeprefix("torch.")
    params = ms_facts.params(twin) if ms_facts.kind(twin) == "other" else None
    if params is None:
        return None
    if any(kind == "VAR_KEYWORD" for _, kind, _ in params):
        return twin
    names = {param for param, _, _ in params}
    return twin if set(mapping.renames) <= names else None


# torch layer methods that only arrange torch's own storage of the weights: a call of one
# as a statement does nothing a MindSpore Cell needs
STORAGE_ONLY = ("flatten_parameters",)


class _IdleBranchDrop(cst.CSTTransformer):
    """An ``if`` whose body the translation left doing nothing (``if x.device != dv: x =
    x``, once the move between devices is gone) goes, with its test: the test would still
    be compiled, and GRAPH_MODE cannot read a Parameter's ``device``. Only a test without
    calls goes (reads and comparisons); the comments of the branch (its TODO lines) move
    to the statement after it. A local the test alone read, assigned without a call
    (``dv = device if device is not None else tensor.device``), goes too: GRAPH_MODE
    would still type ``tensor.device`` on a None ``tensor``."""

    def __init__(self) -> None:
        self.freed: set[str] = set()  # the names the tests that went read

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return _dropping(updated_node, self._idle)

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        reads = [n.value for n in find_all(updated_node.body, m.Name())
                 if isinstance(n, cst.Name)]
        unread = {name for name in self.freed
                  if reads.count(name) == _assigned_count(updated_node.body, name)}
        if not unread:
            return updated_node
        return cst.ensure_type(updated_node.visit(_UnreadDrop(unread)), cst.FunctionDef)

    def _idle(self, stmt: cst.BaseStatement) -> bool:
        if not isinstance(stmt, cst.If) or stmt.orelse is not None or \
                find_all(stmt.test, m.Call() | m.NamedExpr() | m.Await()):
            return False
        for inner in stmt.body.body:
            if not isinstance(inner, cst.SimpleStatementLine):
                return False
            for small in inner.body:
                if isinstance(small, cst.Pass):
                    continue
                if not m.matches(small, m.Assign(targets=[m.AssignTarget(m.Name())],
                                                 value=m.Name())):
                    return False
                assert isinstance(small, cst.Assign)
                target = cst.ensure_type(small.targets[0].target, cst.Name)
                if target.value != cst.ensure_type(small.value, cst.Name).value:
                    return False
        self.freed |= {n.value for n in find_all(stmt.test, m.Name()) if isinstance(n, cst.Name)}
        return True


def _leading(stmt: cst.CSTNode) -> Sequence[cst.EmptyLine]:
    """The comment and blank lines above a statement."""
    lines: Sequence[cst.EmptyLine] = getattr(stmt, "leading_lines", ())
    return lines


def _dropping(block: cst.IndentedBlock, dropped: Callable[[cst.BaseStatement], bool]
              ) -> cst.IndentedBlock:
    """``block`` without the statements ``dropped`` picks; their comments (TODO lines) move
    to the next statement, or to the end of the block (``pass`` if nothing is left)."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for stmt in block.body:
        if dropped(stmt):
            inner = stmt.body.body if isinstance(stmt, cst.If) else ()
            carried += [*_leading(stmt), *(line for s in inner for line in _leading(s))]
            continue
        if carried:
            stmt = stmt.with_changes(leading_lines=[*carried, *_leading(stmt)])
            carried = []
        body.append(stmt)
    if not body:
        body.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=carried))
    elif carried:
        return block.with_changes(body=body, footer=[*carried, *block.footer])
    return block.with_changes(body=body)


def _assigned_count(body: cst.CSTNode, name: str) -> int:
    """How many plain assignments ``name = <value without calls>`` the body holds (each
    the only target of its statement); -1 when the name is bound any other way, so it is
    never counted as unread."""
    count = 0
    for assign in find_all(body, m.Assign()):
        assert isinstance(assign, cst.Assign)
        named = [t for t in assign.targets if m.matches(t.target, m.Name(name))]
        if not named:
            if any(m.matches(n, m.Name(name)) for t in assign.targets
                   for n in find_all(t.target, m.Name())):
                return -1  # unpacked into, or one of several targets
            continue
        if len(assign.targets) != 1 or find_all(assign.value, m.Call() | m.NamedExpr()):
            return -1
        count += 1
    bound_otherwise = find_all(body, m.AugAssign(target=m.Name(name)) |
                               m.AnnAssign(target=m.Name(name)) |
                               m.For(target=m.Name(name)) | m.NamedExpr(target=m.Name(name)))
    return -1 if bound_otherwise or count == 0 else count


class _UnreadDrop(cst.CSTTransformer):
    """Statements ``name = value`` of the given names (which nothing reads) dropped; their
    comments move to the next statement."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return _dropping(updated_node, lambda stmt: m.matches(stmt, m.SimpleStatementLine([
            m.Assign(targets=[m.AssignTarget(m.OneOf(*map(m.Name, self.names)))])])))


class _MemoDrop(cst.CSTTransformer):
    """A cache that forward fills, ``if k not in self.cache: self.cache[k] = value``, then
    reads, ``self.cache[k]``: the value is computed into a local name, ``cached_<n>``, and
    the later reads of the same block read that name. Eager code computes it once per key;
    a Cell computes it each call, with the same result."""

    def __init__(self, function: cst.FunctionDef) -> None:
        self.count = 0
        # every target the function writes (``self.avg[k] = ...``, ``+=``): an entry
        # written anywhere but in its filling ``if`` is state, such as a moving average
        self.writes = [code(t.target) for t in find_all(function.body, m.AssignTarget()
                                                           | m.AugAssign())
                       if isinstance(t, (cst.AssignTarget, cst.AugAssign))]

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        names: dict[str, cst.Name] = {}  # the code of ``self.cache[k]`` -> its local name
        for stmt in updated_node.body:
            if names:
                visited = stmt.visit(_ReadsOf(names))
                assert isinstance(visited, cst.BaseStatement)
                stmt = visited
            memo = self._memo(stmt)
            if memo is None:
                body.append(stmt)
                continue
            read, value = memo
            if self.writes.count(read) > 1:  # written again: state, not a cache
                body.append(stmt)
                continue
            assert isinstance(stmt, cst.If)
            self.count += 1
            names[read] = name = cst.Name(f"cached_{self.count}")
            body.append(cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(name)], value)], leading_lines=stmt.leading_lines))
        return updated_node.with_changes(body=body)

    @staticmethod
    def _memo(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
        """(the code of ``self.cache[k]``, the value) for a cache-filling ``if``."""
        if not isinstance(stmt, cst.If) or stmt.orelse is not None or not m.matches(
                stmt.test, m.Comparison(comparisons=[m.ComparisonTarget(m.NotIn())])):
            return None
        test = stmt.test
        assert isinstance(test, cst.Comparison)
        cache = test.comparisons[0].comparator
        inner = stmt.body.body
        if not m.matches(cache, m.Attribute(value=m.Name("self"))) or len(inner) != 1 \
                or not m.matches(inner[0], m.SimpleStatementLine([m.Assign([m.AssignTarget(
                    m.Subscript())])])):
            return None
        assign = cst.ensure_type(cst.ensure_type(inner[0], cst.SimpleStatementLine).body[0],
                                 cst.Assign)
        target = cst.ensure_type(assign.targets[0].target, cst.Subscript)
        read = code(cst.Subscript(cache, [cst.SubscriptElement(cst.Index(test.left))]))
        if code(target.with_changes(value=cache)) != read:
            return None
        return read, assign.value

class _ReadsOf(cst.CSTTransformer):
    """Reads of cache entries (by their code) replaced by local names."""

    def __init__(self, names: dict[str, cst.Name]) -> None:
        self.names = names

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript
                        ) -> cst.BaseExpression:
        return self.names.get(code(updated_node), updated_node)
