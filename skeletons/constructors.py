"""Where the constructor arguments of a generated Cell come from: the repository's
instantiation sites (with the enclosing constructor's arguments, module constants and
argparse defaults), configuration classes, and values synthesized by
:mod:`msready.skeletons.arguments`, which also holds the one :func:`resolve` that picks
among them."""


from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import libcst as cst
import libcst.matchers as m

from msready.analyzer.checklist_source import SourceFact
from msready.analyzer.configvalues import ARGS_NAMES
from msready.analyzer.facts import CallKind, FileResult
from msready.analyzer.names import dotted
from msready.analyzer.parse import Parsed, parse_text
from msready.analyzer.repo import RepositoryModel, Resolved, ResolvedCall
from msready.analyzer.result import ScanResult
from msready.analyzer.syntax import code, find_all, method_params
from msready.analyzer.values import Expr, Kind
from msready.skeletons import apis, arguments
from msready.skeletons.config_tree import ConfigTree
from msready.skeletons.inputs import ORDERS, InputSpec
from msready.skeletons.methods import MODULE_API
from msready.skeletons.recorded import Recorder
from msready.skeletons.values import (
    UNKNOWN,
    CallHook,
    CallValue,
    ConfigValue,
    DictValue,
    ListValue,
    attributes_read,
    bound_names,
    class_fields,
    constants,
    evaluate,
    evaluate_text,
    is_complete,
)

# ``super().__init__(...)``: the base class's construction.
SUPER_INIT = m.Attribute(value=m.Call(func=m.Name("super")), attr=m.Name("__init__"))


class ConstructorFinder:
    """Finds constructor arguments for the repository's Module classes."""

    def __init__(self, result: ScanResult) -> None:
        self.result = result
        self.model: RepositoryModel = result.model
        self.recorder: Recorder | None = None
        self._parsed: dict[str, Parsed | None] = {}
        self._active: set[str] = set()
        self._networks: set[str] = set()  # classes whose network argument is being found
        self._argparse: dict[str, object] | None = None
        self._assigned: dict[str, object] | None = None  # ``args.x = <literal>`` anywhere
        self._module_envs: dict[str, dict[str, object]] = {}
        # memos: calls by the class or function they reach, argument values per class,
        # usages per parameter
        self._by_callee: dict[str, dict[str, list[ResolvedCall]]] | None = None
        # every ``name = ...`` statement of a file, for the example calls that follow one
        self._assignments: dict[str, list[tuple[int, int, str, Any, int]]] = {}
        self._examples: dict[str, list[InputSpec | None] | None] = {}  # inputs per class
        self._arguments: dict[str, arguments.Resolved] = {}
        self._usages: dict[tuple[str, str, int], arguments.Usage] = {}
        self._environments: dict[tuple[str, str], dict[str, object]] = {}
        self._config_tree: ConfigTree | None = None
        self._handed_classes: dict[str, list[tuple[ResolvedCall, str, str]]] | None = None
        self._locals_of: dict[str, dict[str, list[str]]] = {}  # see _local_classes

    def recording(self, recorder: Recorder | None) -> None:
        """Keep what is read of the model in ``recorder`` from now on (None: stop). The
        tables built from every file are read through ``_whole``, whose answers are kept
        instead of each file's facts (see msready.skeletons.plan_cache). What the finder
        remembers was read before, so a recording starts on a fresh finder."""
        self.recorder = recorder
        self.model = recorder.proxy(self.result.model) if recorder else self.result.model

    # ----- sources ----------------------------------------------------------------------

    def parsed(self, path: str) -> Parsed | None:
        """The re-parsed text of a scanned file, None when not kept or not parsable."""
        text = self.result.sources.get((path, None))
        if self.recorder is not None:
            self.recorder.note(("source", (path,), ()), text)
        if path not in self._parsed:
            parsed = parse_text(text) if text is not None else None
            self._parsed[path] = parsed if isinstance(parsed, Parsed) else None
        return self._parsed[path]

    def file_of(self, qualname: str, kind: str = "class") -> FileResult | None:
        """The file defining a repository class or function."""
        table = self.model.class_module if kind == "class" else self.model.function_module
        module = table.get(qualname)
        return self.model.modules.get(module) if module else None

    def method_node(self, cls: str, method: str, own: bool = False
                    ) -> tuple[cst.FunctionDef, FileResult] | None:
        """The node of the method ``cls`` runs under that name (its own or a base's; with
        ``own``, only one ``cls`` defines itself)."""
        qualname = self._find_method(cls, method)
        if qualname is None or (own and qualname != f"{cls}.{method}"):
            return None
        return self.function_node(qualname)

    def _find_method(self, cls: str, method: str) -> str | None:
        """The method ``cls`` runs under that name; for ``forward``, what calling an
        instance runs (a ``__call__`` the class defines instead)."""
        if method == "forward":
            return self.model.forward_of(cls)
        return self.model.find_method(cls, method)

    def function_node(self, qualname: str) -> tuple[cst.FunctionDef, FileResult] | None:
        """The libcst definition of a repository method (``pkg.mod.Class.method``)."""
        file = self.file_of(qualname, "function")
        parsed = self.parsed(file.path) if file else None
        if file is None or parsed is None:
            return None
        parts = qualname[len(file.module) + 1:].split(".")
        body: Any = parsed.module.body
        node: Any = None
        for part in parts:
            node = next((s for s in body if isinstance(s, (cst.ClassDef, cst.FunctionDef))
                         and s.name.value == part), None)
            if node is None:
                return None
            body = node.body.body
        return (node, file) if isinstance(node, cst.FunctionDef) else None

    def _class_body(self, cls: str) -> Sequence[cst.BaseStatement]:
        """The statements of a repository class's body."""
        file = self.file_of(cls)
        parsed = self.parsed(file.path) if file else None
        if file is None or parsed is None:
            return []
        body: Any = parsed.module.body
        for part in cls[len(file.module) + 1:].split("."):
            node = next((s for s in body if isinstance(s, (cst.ClassDef, cst.FunctionDef))
                         and s.name.value == part), None)
            if not isinstance(node, cst.ClassDef):
                return []
            body = node.body.body
        return list(body)

    def class_constants(self, cls: str) -> dict[str, object]:
        """Constant class-level fields of ``cls`` and its repository bases, as the
        ``self.<name>`` keys an environment holds (``expansion = 4``)."""
        out: dict[str, object] = {}
        for owner in reversed(self.model.mro(cls)):
            for stmt in self._class_body(owner):
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                            and isinstance(small.targets[0].target, cst.Name):
                        value = evaluate(small.value, {})
                        if value is not UNKNOWN:
                            out[f"self.{small.targets[0].target.value}"] = value
        return out

    def _methods(self, cls: str) -> list[cst.FunctionDef]:
        """The methods a repository class defines in its own body."""
        return [s for s in self._class_body(cls) if isinstance(s, cst.FunctionDef)]

    def _run_methods(self, cls: str) -> list[cst.FunctionDef]:
        """The methods an instance of a repository class runs under each name: its own,
        then those it inherits from its repository bases."""
        found: dict[str, cst.FunctionDef] = {}
        for klass in self.model.mro(cls):
            for method in self._methods(klass):
                found.setdefault(method.name.value, method)
        return list(found.values())

    def instance_attributes(self, cls: str) -> set[str]:
        """What an instance of a repository class has: class-level names, properties and
        methods, and the ``self.<name>`` its constructors assign, over its bases."""
        out: set[str] = set()
        for klass in self.model.mro(cls):
            for stmt in self._class_body(klass):
                if isinstance(stmt, cst.FunctionDef):
                    out.add(stmt.name.value)
                    if stmt.name.value == "__init__":
                        out |= _self_assigned(stmt)
                elif isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = [t.target for t in small.targets] if isinstance(
                            small, cst.Assign) else [small.target] if isinstance(
                            small, cst.AnnAssign) else []
                        out |= {t.value for t in targets if isinstance(t, cst.Name)}
        return out

    def _call_arities(self, cls: str, param: str) -> set[int]:
        """How many positional arguments ``cls`` calls its parameter with (``param(x)``
        in the constructor, ``self.<stored>(x, t)`` in any method)."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return set()
        aliases = arguments.stored_as(param, found[0])
        callee = m.Name(param) | m.Attribute(value=m.Name("self"), attr=m.OneOf(
            *(m.Name(a) for a in aliases or {param})))
        out: set[int] = set()
        for method in self._methods(cls):
            for call in find_all(method.body, m.Call(func=callee)):
                assert isinstance(call, cst.Call)
                if not any(a.star for a in call.args):
                    out.add(sum(a.keyword is None for a in call.args))
        return out

    def _accepts(self, cls: str, arities: set[int]) -> bool:
        """True when ``cls.forward`` can be called with each number of positional arguments."""
        found = self.method_node(cls, "forward")
        if found is None:
            return False
        params = found[0].params
        positional = method_params(found[0])
        required = sum(p.default is None for p in positional)
        star = isinstance(params.star_arg, cst.Param)
        return all(required <= n and (star or n <= len(positional)) for n in arities)

    def stand_in_network(self, cls: str, param: str, names: object = None
                         ) -> tuple[ConfigValue, object] | None:
        """A network for a parameter that holds one (``GaussianDiffusion(model)``,
        ``MAML(model)``) when nothing in the repository gives it: the first Module class
        (the one its annotation names, then in the same file, the same package, anywhere)
        that has every attribute the class reads from it (what every Module has aside)
        and can itself be built, built with its own arguments.

        ``names``: the made-up names (or one name) the class reads the network's outputs
        by (``features[f] for f in in_features``). A network that takes the names of its
        outputs (``out_features``) and can be given any comes first, given them; one that
        takes a single name, given the last, comes next. With the network, the names it
        was given (None when it takes none)."""
        used = self.param_usage(cls, param)
        if used.keys or used.indexed or used.stored or not (
                used.called or arguments.holds_network(param)
                or self._typed_network(used) is not None):
            return None
        needed = {chain[0] for chain in used.fields} - MODULE_API  # not ``model.parameters``
        arities = self._call_arities(cls, param)
        module = cls.rpartition(".")[0]
        package = module.rpartition(".")[0]
        related = set(self.model.mro(cls))
        several = isinstance(names, tuple)

        def rank(candidate: str) -> tuple[int, int, int, str]:
            where, _, short = candidate.rpartition(".")
            line = self.model.classes[candidate].span.line \
                if candidate in self.model.classes else 0
            return (0 if short == used.annotation else 1,  # ``model: UViT`` first
                    0 if where == module else 1 if where.startswith(package + ".") else 2,
                    line, candidate)

        found: dict[int, tuple[ConfigValue, object]] = {}  # by how well it gives the names
        self._networks.add(cls)
        try:
            for candidate in sorted(self.model.module_classes, key=rank):
                if candidate in related or candidate in self._networks or cls in \
                        self.model.mro(candidate) or self.model.forward_of(candidate) is None:
                    continue
                if not needed <= self.instance_attributes(candidate) or not (
                        self.model.classes[candidate].attributes if candidate in
                        self.model.classes else ()) or not self._accepts(candidate, arities):
                    continue  # a network holds layers and takes what it is called with
                taken = self._names_parameter(candidate) if names is not None else None
                if taken is None and 2 in found:
                    continue  # only a network that takes names can do better
                built = self.constructor_arguments(candidate)
                if built.missing:
                    continue
                where, _, short = candidate.rpartition(".")
                kwargs = dict(built.kwargs)
                given: object = None
                if taken is not None:
                    name, takes_several = taken
                    last = names[-1] if isinstance(names, tuple) else names
                    given = names if takes_several or not several else last
                    kwargs[name] = (given,) if takes_several and isinstance(given, str) \
                        else given
                tier = 2 if taken is None else 1 if given != names else 0
                if any(self._is_network(v) for v in built.synthesized.values()):
                    tier += 3  # a wrapper of a made-up network: only when nothing else has it
                found.setdefault(tier, (ConfigValue(where, short, (), tuple(kwargs.items())),
                                        given))
                if (names is None and tier < 3) or tier == 0:
                    break
        finally:
            self._networks.discard(cls)
        return found[min(found)] if found else None

    def _typed_network(self, used: arguments.Usage) -> str | None:
        """The repository Module class a parameter's annotation (or asserted
        ``isinstance``) names, by its last name; None when it names none."""
        if used.annotation is None:
            return None
        return next((c for c in sorted(self.model.module_classes)
                     if c.rpartition(".")[2] == used.annotation), None)

    def stand_in_factory(self, cls: str, param: str, depth: int = 0) -> ConfigValue | None:
        """A repository Module class for a parameter the constructor calls to build a
        layer (``self.stem = stem_class(3, width, norm, act)``, ``conv_layer(in_chs,
        out_chs, 1, stride=stride)``) when nothing gives it: a class named for what the
        parameter is named for (``stem`` of ``stem_class``, ``conv`` of ``conv_layer``)
        whose constructor takes every such call, the classes defined in or imported into
        the constructor's file first. A parameter handed on to another class's
        constructor (``AnyStage(w_in, w_out, block_class)``, ``super().__init__(...)``) is
        a factory if it is one there. None when the constructor keeps the parameter
        (``self.net = net``: a built network) or no class fits."""
        found = self.method_node(cls, "__init__")
        if found is None or arguments.stored_as(param, found[0]) or depth > 3:
            return None
        node, file = found
        calls = [c for c in find_all(node.body, m.Call(func=m.Name(param)))
                 if isinstance(c, cst.Call)]
        words = [w for w in param.lower().split("_") if w and w not in _FACTORY_WORDS]
        if not words:
            return None
        if not calls:
            for inner, name in self._handed_on(cls, param):
                factory = self.stand_in_factory(inner, name, depth + 1)
                if factory is not None:
                    return factory
            return None
        near = {r.name for r in (self.model.resolve(t, file.module)
                                 for t in file.bindings.values()) if r is not None}
        module = cls.rpartition(".")[0]
        package = module.rpartition(".")[0]
        related = set(self.model.mro(cls))

        def rank(candidate: str) -> tuple[int, str]:
            where = candidate.rpartition(".")[0]
            return (0 if where == module or candidate in near else
                    1 if where.startswith(package + ".") else 2, candidate)

        for candidate in sorted(self.model.module_classes, key=rank):
            short = candidate.rpartition(".")[2].lower()
            if not any(w in short for w in words) or candidate in related or \
                    cls in self.model.mro(candidate) or self.model.forward_of(candidate) is None:
                continue
            built = self.method_node(candidate, "__init__")
            if built is not None and all(_takes(built[0], call) for call in calls):
                where, _, name = candidate.rpartition(".")
                return ConfigValue(where, name, (), is_class=True)
        return None

    def _handed_on(self, cls: str, param: str) -> Iterator[tuple[str, str]]:
        """The repository classes (and their parameters) ``cls``'s constructor hands its
        parameter ``param`` to, its base's constructor included."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return
        node, file = found
        for call in find_all(node.body, m.Call(args=[m.ZeroOrMore(), m.Arg(m.Name(param)),
                                                      m.ZeroOrMore()])):
            assert isinstance(call, cst.Call)
            yield from self._bound_in(self._callee(cls, call, file), call, param)

    def _is_network(self, value: object) -> bool:
        """True for a repository Module made up as an argument (a stand-in network)."""
        return isinstance(value, ConfigValue) and \
            f"{value.module}.{value.name}" in self.model.module_classes

    def _names_parameter(self, cls: str) -> tuple[str, bool] | None:
        """The constructor parameter a network takes the names of its outputs by
        (``out_features=None``, ``out_feature="last"``) when it can be given any names,
        and whether it takes several."""
        found = self.method_node(cls, "__init__")
        sig = self._signature(cls, "__init__")
        if found is None or sig is None:
            return None
        node = found[0]
        methods = [method for klass in self.model.mro(cls) for method in self._methods(klass)]
        for name, default, _ in sig[0]:
            if not arguments.names_parameter(name) or isinstance(default, (int, float)):
                continue  # ``out_features=10``: a size
            aliases = arguments.copied_as(name, node)
            if arguments.takes_any_names(node.body, name, aliases) and all(
                    arguments.takes_any_names(method.body, None, aliases)
                    for method in methods):
                return name, not isinstance(default, str) and (
                    default not in (None, UNKNOWN) or name.endswith("s"))
        return None

    def qualify(self, node: cst.BaseExpression, file: FileResult) -> str | None:
        """A name chain's fully qualified target, resolved through the repository."""
        name = dotted(node)
        return self.model.qualify(name, file.module) if name is not None else None

    # ----- constructor arguments --------------------------------------------------------

    def _signature(self, cls: str, method: str) -> tuple[list[tuple[str, object, bool]],
                                                          FileResult] | None:
        """(name, default or UNKNOWN, is required) per parameter after ``self``."""
        qualname = self._find_method(cls, method)
        found = self.function_node(qualname) if qualname else None
        if found is None:
            return None
        node, file = found
        params = method_params(node)
        out = [(p.name.value,
                evaluate(p.default, {}) if p.default is not None else UNKNOWN,
                p.default is None) for p in params]
        out += [(p.name.value, evaluate(p.default, {}) if p.default is not None else UNKNOWN,
                 p.default is None) for p in node.params.kwonly_params]
        return out, file

    def _calls_by_callee(self, kind: str) -> dict[str, list[ResolvedCall]]:
        """The calls of a name, resolved once, grouped by the repository class they build
        (``kind`` "class") or the repository function they call ("function")."""
        if self._by_callee is None:
            self._by_callee = self._whole("calls_by_callee")
        return self._by_callee[kind]

    def _whole(self, table: str) -> Any:
        """A table built from every file (``whole_<table>``), its answer kept whole when
        recording."""
        answer = getattr(self, f"whole_{table}")()
        if self.recorder is not None:
            self.recorder.note(("whole_table", (table,), ()), answer)
        return answer

    def whole_calls_by_callee(self) -> dict[str, dict[str, list[ResolvedCall]]]:
        """Every call of a name, by the kind of what it calls and its qualified name."""
        model = self.result.model
        found: dict[str, dict[str, list[ResolvedCall]]] = {"class": {}, "function": {}}
        for rc in model.calls:
            if rc.call.kind is not CallKind.NAME:
                continue
            resolved = model.resolve(rc.call.target, rc.file.module)
            if resolved is not None and resolved.kind in found:
                found[resolved.kind].setdefault(resolved.name, []).append(rc)
        return found

    def whole_argparse_files(self) -> list[str]:
        """The paths of the files that may declare command-line options, in the model's
        order (the first file to declare an option gives its default)."""
        return [f.path for f in self.result.model.modules.values()
                if "add_argument" in (self.result.sources.get((f.path, None)) or "")]

    def whole_source_facts(self) -> list[SourceFact]:
        """The configuration values every file's code sets or reads (see SourceFact)."""
        return [v for f in self.result.files for v in f.source_facts]

    def instantiations(self, cls: str) -> list[ResolvedCall]:
        """Every call that builds ``cls`` in the repository."""
        return self._calls_by_callee("class").get(cls, [])

    def _site_torch_layer(self, cls: str, param: str) -> ConfigValue | None:
        """A torch layer, built with its defaults, for a parameter the class calls when a
        place that builds the class hands it one (``FocalLoss(nn.BCEWithLogitsLoss())``,
        or ``BCEcls`` assigned ``nn.BCEWithLogitsLoss(pos_weight=...)`` where the call
        is): the kind the repository gives, which the child builds as MindSpore's layer."""
        used = self.param_usage(cls, param)
        if not used.called or used.keys or used.indexed:
            return None
        names = self._positional_names(cls)
        for rc in self.instantiations(cls):
            for i, arg in enumerate(rc.call.args):
                if arg.star:
                    break
                if (arg.keyword or (names[i] if i < len(names) else None)) != param:
                    continue
                try:
                    value = cst.parse_expression(arg.text)
                except cst.ParserSyntaxError:
                    continue
                built = value if isinstance(value, cst.Call) else \
                    self._assigned_call(rc.call.caller, value.value) \
                    if isinstance(value, cst.Name) else None
                torch_name = apis.canonical(self.qualify(built.func, rc.file) or "") \
                    if built is not None else ""
                parent, _, short = torch_name.rpartition(".")
                if parent == "torch.nn" and short[:1].isupper() and apis.lookup(
                        torch_name, "cpu").api is not None:
                    return ConfigValue(parent, short, ())
        return None

    def _assigned_call(self, function: str, name: str) -> cst.Call | None:
        """The call ``function`` assigns to the local ``name`` (``BCEcls = nn.X(...)``)."""
        found = self.function_node(function)
        if found is None:
            return None
        for assign in find_all(found[0].body, m.Assign(targets=[m.AssignTarget(m.Name(name))],
                                                        value=m.Call())):
            assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
            return assign.value
        return None

    def _sites(self, cls: str) -> Iterator[dict[str, object]]:
        """Literal arguments at every place the repository instantiates ``cls``."""
        # a positional argument binds a positional parameter only: one that a keyword-only
        # constructor gets (detectron2's ``@configurable`` ``Head(cfg, input_shape)``) goes
        # to the decorator, not to the first keyword-only parameter
        names = self._positional_names(cls)
        for rc in self.instantiations(cls):
            values: dict[str, object] = {}
            env: dict[str, object] | None = None
            unknown: list[tuple[str, Any]] = []  # (parameter, argument) with no value here
            for i, arg in enumerate(rc.call.args):
                if arg.star:
                    break
                key = arg.keyword or (names[i] if i < len(names) else None)
                if key is None:
                    continue
                if arg.is_literal:
                    values[key] = arg.literal
                    continue
                if env is None:
                    env = self._caller_environment(rc.call.caller, rc.file, rc.call.span.line)
                value = evaluate_text(arg.text, env, self.call_hook(rc.file))
                if value is UNKNOWN and i < len(rc.call.arg_values):
                    value = self._analysed(rc.call.arg_values[i])
                if value is not UNKNOWN and is_complete(value):
                    values[key] = value
                else:
                    unknown.append((key, arg))
            yield from self._through_callers(rc, values, unknown)
        yield from self._factory_sites(cls)

    def _through_callers(self, rc: ResolvedCall, values: dict[str, object],
                         unknown: list[tuple[str, Any]]) -> Iterator[dict[str, object]]:
        """A site's values, with those its own function cannot give read once per way a
        builder function is called, when they come from its parameters
        (``_convnext(block_setting, ...)`` builds ``ConvNeXt(block_setting)``, and
        ``convnext_tiny()`` calls it with a list of configurations it made). A namespace
        made there (a script's ``args``, whose fields it sets after ``parse_args``) is
        no such value: the configuration route builds it from the parser's defaults; nor
        is a repository function's result computed from another's (detectron2's
        ``build_resnet_backbone(get_config(path))`` reads files through side libraries)."""
        owner, _, method = rc.call.caller.rpartition(".")
        if not unknown or (method == "__init__" and owner in self.model.module_classes):
            yield values
            return
        found = False
        for env in self._call_environments(rc, depth=2):
            more = dict(values)
            for key, arg in unknown:
                value = evaluate_text(arg.text, env, self.call_hook(rc.file))
                if value is not UNKNOWN and is_complete(value) and not (
                        isinstance(value, ConfigValue)
                        and (value.module, value.name) == arguments.NAMESPACE) and \
                        not _call_of_call(value):
                    more[key] = value
            found = True
            yield more
        if not found:
            yield values

    # ----- classes handed to a factory -------------------------------------------------

    def _handed(self) -> dict[str, list[tuple[ResolvedCall, str, str]]]:
        """Calls that hand a repository Module class to a repository function, by class:
        (the call, the function, the parameter that receives the class)."""
        if self._handed_classes is None:
            self._handed_classes = {}
            for function, calls in self._calls_by_callee("function").items():
                for rc in calls:
                    self._hands(rc, function)
        return self._handed_classes

    def _hands(self, rc: ResolvedCall, function: str) -> None:
        """Records the repository Module classes ``rc`` passes to ``function``."""
        assert self._handed_classes is not None
        for i, arg in enumerate(rc.call.args):
            if arg.star or not arg.text.replace(".", "").isidentifier():
                continue
            param = arg.keyword or positional_name(self.function_node(function), i)
            if param is None:
                continue
            for handed in self._classes_named(arg.text, rc):
                self._handed_classes.setdefault(handed, []).append((rc, function, param))

    def _classes_named(self, text: str, rc: ResolvedCall) -> list[str]:
        """The repository Module classes a name passed at ``rc`` is: the class itself, or,
        for a local name of the calling function, each class assigned to it there
        (``model_cls = HighResolutionNet``, ``model_cls = HighResolutionNetFeatures`` in an
        ``if``)."""
        direct = self._module_class(text, rc.file)
        if direct is not None or not text.isidentifier():
            return [direct] if direct else []
        return self._local_classes(rc.call.caller, rc.file).get(text, [])

    def _module_class(self, reference: str, file: FileResult) -> str | None:
        name = self.model.qualify(reference, file.module)
        handed = self.model.resolve(name, file.module) if name else None
        return handed.name if handed is not None and handed.kind == "class" and \
            handed.name in self.model.module_classes else None

    def _local_classes(self, function: str, file: FileResult) -> dict[str, list[str]]:
        """The repository Module classes each local name of ``function`` is assigned
        (read once per function)."""
        if function not in self._locals_of:
            found = self.function_node(function) if function in self.model.functions \
                else None
            out: dict[str, list[str]] = {}
            for assign in find_all(found[0].body, m.Assign(
                    targets=[m.AssignTarget(m.Name())], value=m.Name() | m.Attribute())
                    ) if found is not None else []:
                assert isinstance(assign, cst.Assign)
                target = assign.targets[0].target
                cls = self._module_class(code(assign.value), file)
                if isinstance(target, cst.Name) and cls is not None and \
                        cls not in out.setdefault(target.value, []):
                    out[target.value].append(cls)
            self._locals_of[function] = out
        return self._locals_of[function]

    def _factory_sites(self, cls: str) -> Iterator[dict[str, object]]:
        """``build_model_with_cfg(VovNet, variant, model_cfg=model_cfgs[variant],
        **kwargs)`` whose body calls ``model_cls(cfg=model_cfg, **kwargs)``: the arguments
        that call gives ``cls``, the factory's parameters bound to what its callers pass
        (through one more function that forwards its own ``variant`` and ``**kwargs``, as
        ``_create_vovnet('vovnet39a', **kwargs)`` does)."""
        for rc, function, param in self._handed().get(cls, []):
            found = self.function_node(function)
            if found is None:
                continue
            node, file = found
            builds = [c for c in find_all(node.body, m.Call(func=m.Name(param)))
                      if isinstance(c, cst.Call)]
            if not builds:
                continue
            module_env, hook = self.module_environment(file), self.call_hook(file)
            for outer in self._call_environments(rc, depth=2):
                bound = _bind(node, rc.call.args, outer, self.call_hook(rc.file))
                if bound is None:
                    continue
                env = {**module_env, **bound}
                for build in builds:
                    values: dict[str, object] = {}
                    for arg in build.args:
                        value = evaluate(arg.value, env, hook)
                        if arg.star == "**" and isinstance(value, DictValue):
                            values.update({str(k): v for k, v in value.items
                                           if is_complete(v)})
                        elif arg.keyword is not None and not arg.star and \
                                value is not UNKNOWN and is_complete(value):
                            values[arg.keyword.value] = value
                    yield values

    def _call_environments(self, rc: ResolvedCall, depth: int) -> Iterator[dict[str, object]]:
        """The names known at a call, once per way its enclosing function is called when
        the call reads that function's parameters (``variant``, ``**kwargs``): bound to
        what each caller passes; a ``**kwargs`` nobody in the repository fills is empty."""
        base = self._caller_environment(rc.call.caller, rc.file, rc.call.span.line)
        found = self.function_node(rc.call.caller) \
            if rc.call.caller in self.model.functions else None
        if found is None:
            yield base
            return
        node = found[0]
        params = _parameter_names(node)
        if not params & {n for a in rc.call.args for n in _NAME.findall(a.text)}:
            yield base
            return
        callers = self._calls_by_callee("function").get(rc.call.caller, []) \
            if depth > 0 else []
        yielded = False
        for caller in callers[:_MAX_FACTORY_SITES]:
            for outer in self._call_environments(caller, depth - 1):
                bound = _bind(node, caller.call.args, outer, self.call_hook(caller.file))
                if bound is not None:
                    yielded = True
                    # the function's own statements before the call, with its parameters
                    # known (``if variant.startswith('s'): cfg['width'] = 6``)
                    yield self._before(rc.call.caller, rc.call.span.line, {**base, **bound},
                                       rc.file)
        if not yielded:  # its statements again, with its ``**kwargs`` empty
            star = node.params.star_kwarg
            if isinstance(star, cst.Param):
                base = self._before(rc.call.caller, rc.call.span.line,
                                    {**base, star.name.value: DictValue(())}, rc.file)
            yield base

    def _analysed(self, expr: Expr) -> object:
        """An argument's value by the repository's value analysis, when it is one Python
        constant (an argparse default read in another file, a config attribute, a value
        passed down through parameters)."""
        held = self.model.values.value(expr)
        if len(held) == 1:
            atom = next(iter(held))
            if atom.kind is Kind.CONST and isinstance(atom.const, (int, float, str, bool)):
                return atom.const
        return UNKNOWN

    def _caller_environment(self, caller: str, file: FileResult,
                            line: int = 0) -> dict[str, object]:
        """The names known where an instantiation happens: the enclosing Module class's
        constructor parameters (``Block(dim)`` inside ``Net.__init__(self, dim=64)``
        builds ``Block(64)``) as the constructor's statements before ``line`` leave them,
        else the module's and the calling function's constants."""
        owner, _, method = caller.rpartition(".")
        if method == "__init__" and owner in self.model.module_classes:
            if owner in self._active:
                return {}
            self._active.add(owner)
            try:  # a value the parent's own plan made up is no site value for the child,
                # which makes up its own from how it uses the parameter
                resolved = self.constructor_arguments(owner)
                kwargs = {k: v for k, v in resolved.kwargs.items()
                          if k not in resolved.synthesized}
                return self._before(caller, line, self.environment(owner, kwargs), file)
            finally:
                self._active.discard(owner)
        key = (caller, file.path)
        if key not in self._environments:
            self._environments[key] = self._function_environment(caller, file)
        return dict(self._environments[key])

    def _before(self, function: str, line: int, env: dict[str, object],
                file: FileResult) -> dict[str, object]:
        """``env`` after the top-level statements of ``function`` that end before ``line``
        (a parameter reassigned from a value msready cannot compute is forgotten)."""
        found = self.function_node(function)
        parsed = self.parsed(file.path)
        if found is None or parsed is None or not isinstance(found[0].body, cst.IndentedBlock):
            return env
        body: Sequence[cst.BaseStatement] = found[0].body.body
        while True:
            earlier, inside = [], None
            for stmt in body:
                span = parsed.span(stmt)
                if span is None or span.end_line >= line:
                    inside = stmt if span is not None and span.line <= line else None
                    break
                earlier.append(stmt)
            env = constants(earlier, env, self.call_hook(file), forget=True)
            # the call is inside an ``if`` / ``for`` / ``with`` / ``try``: the statements of
            # its block before it ran too (``if pool is None: pool = 'token'`` then the call)
            block = None if inside is None else next(
                (b for b in _blocks(inside) if any(
                    (sp := parsed.span(s)) is not None and sp.line <= line <= sp.end_line
                    for s in b.body)), None)
            if block is None:
                return env
            # a loop variable takes each value in turn; ``with ... as name`` binds a value
            header: list[cst.CSTNode] = [cst.AssignTarget(inside.target)] if isinstance(
                inside, cst.For) else list(inside.items) if isinstance(inside, cst.With) else []
            for name in {n for node in header for n in bound_names(node)}:
                env.pop(name, None)
            body = block.body

    def _function_environment(self, caller: str, file: FileResult) -> dict[str, object]:
        parsed = self.parsed(file.path)
        if parsed is None:
            return {}
        hook = self.call_hook(file)
        env = constants(_with_main_block(parsed.module.body), call=hook)
        found = self.function_node(caller) if caller in self.model.functions else None
        body = found[0].body.body if found is not None and isinstance(
            found[0].body, cst.IndentedBlock) else ()
        names = arguments.parse_args_names(parsed.module.body) + \
            arguments.parse_args_names(body)
        if names:  # ``args = parser.parse_args()``: the script's defaults
            space = arguments.namespace_of(self.argparse(file))
            env.update({name: space for name in names})
        return constants(body, env, hook) if body else env

    def argparse(self, file: FileResult) -> dict[str, object]:
        """The argparse defaults of a file, else of every file of the repository."""
        parsed = self.parsed(file.path)
        own = arguments.argparse_defaults(parsed.module) if parsed is not None else {}
        if own:
            return {**self._namespace_assignments(), **own}
        if self._argparse is None:
            self._argparse = {}
            for path in self._whole("argparse_files"):
                tree = self.parsed(path)
                if tree is not None:
                    for key, value in arguments.argparse_defaults(tree.module).items():
                        self._argparse.setdefault(key, value)
            if self._argparse:
                self._argparse = {**self._namespace_assignments(), **self._argparse}
        return self._argparse

    def _namespace_assignments(self) -> dict[str, object]:
        """Fields the repository's code sets on the parsed namespace with a literal
        (``args.input_type = 'binary'`` in a data loader): the first value each gets,
        from the configuration values the scan read in every file. A list stays a list
        in the Cell's run (the code may compare it with one)."""
        if self._assigned is None:
            self._assigned = {}
            for setting in self._whole("source_facts"):
                head, dot, field = setting.name.partition(".")
                if setting.kind != "attribute" or setting.owner is not None or not dot \
                        or "." in field or head not in ARGS_NAMES:
                    continue
                value = setting.literal  # the reader keeps sequences as tuples
                if isinstance(value, tuple) and setting.value.startswith("["):
                    value = ListValue(value)
                self._assigned.setdefault(field, value)
        return self._assigned

    def call_hook(self, file: FileResult) -> CallHook:
        """Evaluates ``SomeConfig(n_layer=2)`` in ``file`` to a configuration object."""
        def hook(call: cst.Call | cst.Name, env: dict[str, object]) -> object:
            if isinstance(call, cst.Name):
                return self._class_ref(call, file)
            name = self.qualify(call.func, file)
            if name == "functools.partial":
                return _partial(call, env, hook)
            resolved = self.model.resolve(name, file.module) if name else None
            if resolved is not None and resolved.kind == "function":
                return self._returned(resolved.name, call, env, hook)
            if resolved is None or resolved.kind != "class":
                return UNKNOWN
            if resolved.name in self.model.module_classes:
                return self._network(resolved.name, call, env, hook)
            fields = self.config_fields(resolved.name)
            if fields is None:
                return self._instance(resolved.name, call, env, hook)
            kwargs: dict[str, object] = {}
            order = [n for n, _ in fields]
            for i, arg in enumerate(call.args):
                key = arg.keyword.value if arg.keyword else (order[i] if i < len(order) else None)
                value = evaluate(arg.value, env, hook)
                if key is None or arg.star or value is UNKNOWN or not is_complete(value):
                    return UNKNOWN
                kwargs[key] = value
            return self._config(resolved.name, kwargs)
        return hook

    def _network(self, cls: str, call: cst.Call, env: dict[str, object],
                 hook: CallHook) -> object:
        """``Unet(dim=64, dim_mults=(1, 2))`` passed to another Module's constructor
        (``GaussianDiffusion(model, ...)``): the generated Cell built with those arguments
        in the child, when every argument is known."""
        sig = self._signature(cls, "__init__")
        kwargs = _by_name(call, [n for n, _, _ in sig[0]] if sig else [], True, env, hook)
        if kwargs is None:
            return UNKNOWN
        module, _, short = cls.rpartition(".")
        return ConfigValue(module, short, (), tuple(kwargs.items()))

    def _instance(self, cls: str, call: cst.Call, env: dict[str, object],
                  hook: CallHook) -> object:
        """``CNBlockConfig(96, 192, 3)``, a plain repository class with a constructor of
        its own: built the same way in the child, when every argument is known; the
        attributes its constructor sets from its parameters (``self.out_channels =
        out_channels``) are its fields, for the code that reads them."""
        found = self.method_node(cls, "__init__")
        sig = self._signature(cls, "__init__")
        if found is None or sig is None or found[0].params.star_kwarg is not None:
            return UNKNOWN
        kwargs = _by_name(call, [n for n, _, _ in sig[0]], True, env, hook)
        if kwargs is None:
            return UNKNOWN
        given = {**{n: d for n, d, _ in sig[0] if d is not UNKNOWN}, **kwargs}
        fields = {}
        for assign in find_all(found[0].body, m.Assign(targets=[m.AssignTarget(
                m.Attribute(value=m.Name("self")))], value=m.Name())):
            assert isinstance(assign, cst.Assign)
            attr = cst.ensure_type(assign.targets[0].target, cst.Attribute).attr.value
            param = cst.ensure_type(assign.value, cst.Name).value
            if param in given:
                fields[attr] = given[param]
        module, _, short = cls.rpartition(".")
        return ConfigValue(module, short, tuple(fields.items()), tuple(kwargs.items()))

    def _returned(self, function: str, call: cst.Call, env: dict[str, object],
                  hook: CallHook) -> object:
        """``decode_arch_def(arch_def, depth_multiplier)``: what a module-level function
        of the repository returns, called in the child (its translation, in the Cell
        files) with the call's arguments by name, when every argument is known."""
        module, _, short = function.rpartition(".")
        found = self.function_node(function) if module in self.model.modules else None
        if found is None:  # a method, or a function nested in another
            return UNKNOWN
        params = found[0].params
        if params.posonly_params or isinstance(params.star_arg, cst.Param):
            return UNKNOWN  # arguments only a position can give
        kwargs = _by_name(call, [p.name.value for p in params.params],
                          isinstance(params.star_kwarg, cst.Param), env, hook)
        if kwargs is None:
            return UNKNOWN
        return CallValue(module, short, (), tuple(kwargs.items()))

    def _class_ref(self, node: cst.Name, file: FileResult) -> object:
        """A repository class named as a value (``ResNet(BasicBlock, [2, 2])``)."""
        name = self.qualify(node, file)
        resolved = self.model.resolve(name, file.module) if name else None
        if resolved is None or resolved.kind != "class":
            return UNKNOWN
        module, _, short = resolved.name.rpartition(".")
        fields = tuple(self.config_fields(resolved.name) or ())
        return ConfigValue(module, short, fields, is_class=True)

    def config_fields(self, cls: str) -> list[tuple[str, object]] | None:
        """The fields of a configuration class (class-level defaults), None for others."""
        file = self.file_of(cls)
        parsed = self.parsed(file.path) if file else None
        if file is None or parsed is None:
            return None
        node = next((s for s in parsed.module.body if isinstance(s, cst.ClassDef)
                     and f"{file.module}.{s.name.value}" == cls), None)
        fields = class_fields(node) if node is not None else []
        return fields or None

    def _config(self, cls: str, kwargs: dict[str, object]) -> ConfigValue:
        fields = dict(self.config_fields(cls) or [])
        fields.update(kwargs)
        module, _, name = cls.rpartition(".")
        return ConfigValue(module, name, tuple(fields.items()), tuple(kwargs.items()))

    def config_for(self, cls: str, param: str) -> ConfigValue | None:
        """A configuration object for a constructor parameter read as ``param.<field>``:
        the repository class whose field defaults cover every field read. A field read
        whose default is None and whose name says it is a size (``ShapeSpec``'s
        ``channels=None``, read as ``input_shape.channels``) is given one: the record's
        keyword arguments are then the values msready made up."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return None
        needed = attributes_read(found[0].body, param)
        if not needed:
            return None
        for candidate in sorted(self.model.classes):
            if candidate in self.model.module_classes:
                continue
            fields = dict(self.config_fields(candidate) or [])
            if needed <= set(fields) and all(fields[n] is not UNKNOWN for n in needed):
                sizes = {n: arguments.by_name(n) for n in sorted(needed) if fields[n] is None}
                return self._config(candidate, {n: v for n, v in sizes.items()
                                                if arguments.is_size(v)})
        return None

    def constructor(self, cls: str) -> tuple[dict[str, object], str | None]:
        """Keyword arguments to build ``cls`` with, or the reason none could be found."""
        resolved = self.constructor_arguments(cls)
        if resolved.missing:
            return resolved.kwargs, (f"constructor argument {', '.join(resolved.missing)}: "
                                     "no value at its instantiation sites, no default, and "
                                     "no value can be synthesized (it is called or a string)")
        return resolved.kwargs, None

    def constructor_arguments(self, cls: str) -> arguments.Resolved:
        """Constructor arguments of ``cls`` with the names that were synthesized."""
        if cls not in self._arguments:
            self._arguments[cls] = self._constructor_arguments(cls)
        return self._arguments[cls]

    def _constructor_arguments(self, cls: str) -> arguments.Resolved:
        sig = self._signature(cls, "__init__")
        if sig is None:
            return self._inherited(cls)
        params = sig[0]
        if not any(required for _, _, required in params) and self.passes_through(cls) \
                and self.torch_base(cls) is not None:
            # ``__init__(self, *args, stats_mode="", **kwargs)`` hands the torch layer's
            # arguments on: they are the layer's
            return self._inherited(cls)
        # ``__init__(self, model, *args, **kwargs)`` handing the rest to a repository
        # base: the base's parameters are the class's too, used as the base uses them
        owner = dict.fromkeys((name for name, _, _ in params), cls)
        for base, extra in self._forwarded(cls, params):
            params = [*params, *extra]
            owner.update((name, base) for name, _, _ in extra)
        configs = {name: self.config_for(owner[name], name) for name, _, required in params
                   if required}
        resolved = arguments.resolve(params, list(self._sites(cls)), configs,
                                     lambda name: self.param_usage(owner[name], name))
        for name, config in configs.items():
            if config is not None and config.kwargs and resolved.kwargs.get(name) is config:
                resolved.synthesized[name] = config  # sizes made up for its None fields
        for name in [*resolved.missing, *(n for n, v in resolved.synthesized.items()
                                          if v == arguments.KEEP_SHAPE)]:
            block = self.annotated_class(owner[name], name)
            if block is not None:  # ``block: Union[BasicBlock, Bottleneck]``
                resolved.kwargs[name] = resolved.synthesized[name] = block
                if name in resolved.missing:
                    resolved.missing.remove(name)
        for name in [n for n, v in resolved.synthesized.items() if v == arguments.KEEP_SHAPE]:
            if self._holds_layer(owner[name], name):
                resolved.kwargs[name] = resolved.synthesized[name] = arguments.KEEP_SHAPE_LAYER
        for name in list(resolved.missing):
            factory = self.stand_in_factory(owner[name], name)
            if factory is not None:  # ``stem_class(3, width, ...)``: a repository class
                resolved.kwargs[name] = resolved.synthesized[name] = factory
                resolved.missing.remove(name)
        for name, value in list(resolved.synthesized.items()):
            if isinstance(value, ConfigValue) and not self._is_network(value) and \
                    self._typed_network(self.param_usage(owner[name], name)) is not None:
                # ``vit: ViT`` made up as a namespace of the fields read: a ViT is better
                network = self.stand_in_network(owner[name], name)
                if network is not None:
                    resolved.kwargs[name] = resolved.synthesized[name] = network[0]
        for name in list(resolved.missing):
            keyed = self._output_names(owner[name], name, {
                n: v for n, v in resolved.synthesized.items() if owner[n] == owner[name]})
            names = resolved.kwargs[keyed] if keyed is not None else None
            network = self.stand_in_network(owner[name], name, names)
            if network is not None:  # ``GaussianDiffusion(model)``: a repository network
                resolved.kwargs[name] = resolved.synthesized[name] = network[0]
                resolved.missing.remove(name)
                used = self.param_usage(owner[name], keyed) if keyed is not None else None
                if keyed is not None and network[1] not in (None, names) and used is not None \
                        and used.length <= 1 and not used.unpacked:
                    # a network that gives one name: the class reads that one
                    resolved.kwargs[keyed] = resolved.synthesized[keyed] = (network[1],)
        for name in list(resolved.missing):
            layer = self._site_torch_layer(owner[name], name)
            if layer is not None:  # ``FocalLoss(BCEcls)``: the torch layer the site hands
                resolved.kwargs[name] = resolved.synthesized[name] = layer
                resolved.missing.remove(name)
        for name, value in self._keywords_read(cls).items():
            if name not in resolved.kwargs and name not in owner:  # not a parameter
                resolved.kwargs[name] = resolved.synthesized[name] = value
        self._meet_requirements(cls, params, resolved)
        for name, value in resolved.synthesized.items():  # ``cfg.MODEL.X`` as set in code
            resolved.synthesized[name] = self.config_tree.fill(value)
            resolved.kwargs[name] = self.config_tree.fill(resolved.kwargs.get(name, value))
            if name in ARGS_NAMES:  # ``opt.netD``: what the repository's parsers declare
                resolved.synthesized[name] = self._declared(cls, resolved.synthesized[name])
                resolved.kwargs[name] = self._declared(cls, resolved.kwargs[name])
        order = {name: i for i, (name, _, _) in enumerate(params)}
        resolved.synthesized = dict(sorted(resolved.synthesized.items(),
                                           key=lambda kv: order.get(kv[0], len(order))))
        return resolved

    def _declared(self, cls: str, value: object) -> object:
        """A made-up options namespace (``opt``, ``args``) with the fields it has no value
        for (None, not a made-up number) set to the defaults the repository's argument
        parsers declare for them: ``opt.netD`` is ``'basic'``, as
        ``parser.add_argument('--netD', default='basic')`` says, wherever that parser is."""
        file = self.file_of(cls)
        if not isinstance(value, ConfigValue) or (value.module, value.name) != \
                arguments.NAMESPACE or file is None:
            return value
        declared = self.argparse(file)

        def given(items: tuple[tuple[str, object], ...]) -> tuple[tuple[str, object], ...]:
            return tuple((k, declared[k] if v is None and declared.get(k) is not None else v)
                         for k, v in items)

        return replace(value, fields=given(value.fields), kwargs=given(value.kwargs))

    @property
    def config_tree(self) -> ConfigTree:
        """The configuration trees the repository's code writes field by field."""
        if self._config_tree is None:
            self._config_tree = ConfigTree(self._whole("source_facts"))
        return self._config_tree

    def _holds_layer(self, cls: str, name: str) -> bool:
        """True when ``cls``'s constructor stores its parameter ``name`` without calling
        it (``self.module = module``): a layer, not a factory of layers."""
        found = self.method_node(cls, "__init__", own=True)
        return found is not None and bool(arguments.stored_as(name, found[0])) and \
            not arguments.usage(name, found[0]).called

    def _keywords_read(self, cls: str) -> dict[str, object]:
        """Keyword arguments a constructor reads from its ``**kwargs`` by name and without
        a default (``conv_kwargs = dict(norm_layer=block_kwargs.get('norm_layer'))``),
        made up by their names when the name says what they are (a layer factory: a
        layer that keeps its input's shape; a size)."""
        found = self.method_node(cls, "__init__", own=True)
        star = found[0].params.star_kwarg if found else None
        if found is None or star is None:
            return {}
        kw = m.Name(star.name.value)
        keys = [call.args[0].value for call in find_all(found[0].body, m.Call(
            func=m.Attribute(value=kw, attr=m.Name("get")), args=[m.Arg(m.SimpleString())]))
            if isinstance(call, cst.Call)]
        keys += [sub.slice[0].slice.value for sub in find_all(found[0].body, m.Subscript(
            value=kw, slice=[m.SubscriptElement(m.Index(m.SimpleString()))]))
            if isinstance(sub, cst.Subscript) and isinstance(sub.slice[0].slice, cst.Index)]
        out: dict[str, object] = {}
        for key in keys:
            name = key.evaluated_value if isinstance(key, cst.SimpleString) else None
            if not isinstance(name, str) or not name.isidentifier() or name in out:
                continue
            value = arguments.synthesize(name, self.param_usage(cls, name))
            if value is arguments.KEEP_SHAPE or (type(value) is int and
                                                 arguments.by_name(name) is not UNKNOWN):
                out[name] = value
        return out

    def _output_names(self, cls: str, network: str,
                      synthesized: dict[str, object]) -> str | None:
        """The parameter of ``cls``, made up as names, that it reads what its ``network``
        parameter returns by (``features = self.bottom_up(x)``, ``features[f] for f in
        self.in_features``; ``bottom_up.output_shape()[f]``)."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return None
        node = found[0]
        held = arguments.stored_as(network, node)
        methods = [method for klass in self.model.mro(cls) for method in self._methods(klass)]
        for name, value in synthesized.items():
            if not arguments.made_up_names(value):
                continue
            aliases = arguments.stored_as(name, node)
            if arguments.keys_outputs(node.body, network, held, name, aliases) or any(
                    arguments.keys_outputs(method.body, None, held, None, aliases)
                    for method in methods):
                return name
        return None

    def _meet_requirements(self, cls: str, params: list[tuple[str, object, bool]],
                           resolved: arguments.Resolved) -> None:
        """Synthesized numbers, and None defaults the constructor insists on, changed so
        that its ``assert`` statements and ``if ...: raise`` guards pass (WideResNet's
        ``assert (depth - 4) % 6 == 0`` takes depth=4, not 1)."""
        required = self._requirements(cls)
        if not required:
            return
        env = {name: resolved.kwargs.get(name, default) for name, default, _ in params}
        adjustable = {name: value for name, value in env.items()
                      if name in resolved.synthesized or (
                          value is None and name not in resolved.kwargs)}

        def propose(name: str) -> object:
            return arguments.synthesize(name, self.param_usage(cls, name))

        for name, value in arguments.meet(required, env, adjustable, propose).items():
            resolved.kwargs[name] = resolved.synthesized[name] = value

    def _requirements(self, cls: str) -> list[arguments.Requirement]:
        """What ``cls``'s constructor requires of its arguments: its own assertions and
        guards, and those of the repository Modules it always builds, over the names it
        hands them (``ViT`` gives ``depth`` and ``max_tokens_per_depth`` to a
        ``Transformer`` that asserts ``len(max_tokens_per_depth) == depth``)."""
        found = self.method_node(cls, "__init__", own=True)
        if found is None:
            return []
        node, file = found
        required = [self._written_out(r, file) for r in arguments.requirements(node)]
        for call in arguments.always_run_calls(node):
            built = self._callee(cls, call, file)
            if built is None or built.kind != "class" or built.name == cls or \
                    built.name not in self.model.module_classes:
                continue
            inner = self.method_node(built.name, "__init__", own=True)
            if inner is None:
                continue
            names = self._positional_names(built.name)
            bound: dict[str, cst.BaseExpression] = {}
            for i, arg in enumerate(call.args):
                if arg.star:
                    break
                key = arg.keyword.value if arg.keyword else (
                    names[i] if i < len(names) else None)
                if key is not None:
                    bound[key] = arg.value
            # ``super().__init__(causal=False, **kwargs)``: what the call does not give is
            # the caller's own argument, by the same name (the plan gives it to the caller)
            handed = any(a.star == "**" for a in call.args)
            for param in method_params(inner[0]) + list(inner[0].params.kwonly_params):
                if param.name.value not in bound and handed:
                    bound[param.name.value] = cst.Name(param.name.value)
                elif param.name.value not in bound and param.default is not None:
                    bound[param.name.value] = param.default  # (a literal, or no value)
            required += [r for r in (arguments.handed_down(self._written_out(q, inner[1]),
                                                           bound)
                                     for q in arguments.requirements(inner[0]))
                         if r is not None]
        return required

    def _written_out(self, requirement: arguments.Requirement, file: FileResult
                     ) -> arguments.Requirement:
        """``assert exists(depth)``: a call to a repository function whose body is one
        ``return`` of an expression of its parameters (``def exists(val): return val is not
        None``) written out over the call's arguments, so the test reads ``depth is not
        None`` and a None default it insists on gets a value."""
        swaps: dict[cst.CSTNode, cst.BaseExpression] = {}
        for part in (requirement.test, requirement.guard):
            for call in find_all(part, m.Call(func=m.Name())) if part is not None else []:
                assert isinstance(call, cst.Call)
                returned = self._one_line_result(call, file)
                if returned is not None:
                    swaps[call] = returned
        if not swaps:
            return requirement

        class Swap(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                return swaps.get(original, updated)

        test = requirement.test.visit(Swap())
        guard = requirement.guard.visit(Swap()) if requirement.guard is not None else None
        assert isinstance(test, cst.BaseExpression)
        assert guard is None or isinstance(guard, cst.BaseExpression)
        return arguments.Requirement(test, requirement.holds, arguments.names_of(test), guard)

    def _one_line_result(self, call: cst.Call, file: FileResult
                         ) -> cst.BaseExpression | None:
        """What a call to a one-line repository function returns, over the call's
        arguments; None for any other call."""
        target = self.qualify(call.func, file)
        resolved = self.model.resolve(target, file.module) if target else None
        found = self.function_node(resolved.name) if resolved is not None and \
            resolved.kind == "function" else None
        if found is None:
            return None
        params = found[0].params
        if params.posonly_params or params.kwonly_params or not isinstance(
                params.star_arg, cst.MaybeSentinel) or params.star_kwarg is not None or \
                len(params.params) != len(call.args) or any(a.keyword or a.star
                                                              for a in call.args):
            return None
        body = found[0].body.body if isinstance(found[0].body, cst.IndentedBlock) else ()
        body = [s for s in body if not m.matches(s, m.SimpleStatementLine(
            body=[m.Expr(m.SimpleString() | m.ConcatenatedString())]))]  # a docstring
        if len(body) != 1 or not m.matches(body[0], m.SimpleStatementLine(
                body=[m.Return(value=m.MatchIfTrue(lambda v: v is not None))])):
            return None
        value = cst.ensure_type(cst.ensure_type(body[0], cst.SimpleStatementLine).body[0],
                                cst.Return).value
        assert value is not None
        bound = {p.name.value: a.value for p, a in zip(params.params, call.args, strict=True)}
        written = arguments.handed_down(
            arguments.Requirement(value, True, arguments.names_of(value)), bound)
        return written.test if written is not None else None

    def _forwarded(self, cls: str, params: list[tuple[str, object, bool]],
                   seen: set[str] | None = None
                   ) -> Iterator[tuple[str, list[tuple[str, object, bool]]]]:
        """The repository classes whose constructors ``cls.__init__`` hands its
        ``**kwargs`` to (once each), with their parameters ``cls`` neither declares nor
        gives itself: ``super().__init__(model, *args, **kwargs)`` leaves the base's
        ``image_size`` to the caller, and ``self.body = Body(dim=dim, **kwargs)`` the
        body's ``depth``. Classes that hand theirs on in turn follow. A required
        parameter of theirs is required of ``cls``."""
        found = self.method_node(cls, "__init__")
        kwargs = found[0].params.star_kwarg if found else None
        if found is None or kwargs is None:
            return
        (node, file), star = found, kwargs.name.value
        seen = seen if seen is not None else {cls}
        for call in find_all(node.body, m.Call()):
            assert isinstance(call, cst.Call)
            if not any(a.star == "**" and m.matches(a.value, m.Name(star)) for a in call.args):
                continue
            if m.matches(call.func, SUPER_INIT):
                target = next((b for b in self.model.mro(cls)[1:]
                               if self.model.find_method(b, "__init__") == f"{b}.__init__"),
                              None)
            else:
                target = self.qualify(call.func, file)
                if target not in self.model.classes or \
                        self.model.find_method(target, "__init__") is None:
                    continue
            sig = self._signature(target, "__init__") if target else None
            if target is None or sig is None or target in seen:
                continue
            seen.add(target)
            given = sum(1 for a in call.args if a.keyword is None and not a.star)
            named = {n for n, _, _ in params} | {a.keyword.value for a in call.args if a.keyword}
            extra = [p for i, p in enumerate(sig[0]) if i >= given and p[0] not in named]
            params = [*params, *extra]
            yield target, extra
            yield from self._forwarded(target, params, seen)  # and on, through theirs

    def annotated_class(self, cls: str, param: str) -> ConfigValue | None:
        """The repository network class a constructor parameter's annotation names
        (``block: Union[BasicBlock, Bottleneck]``, ``Type[Block]``) when the constructor
        uses the parameter as a class: it never keeps it as a built network, and reads
        only the class's own attributes (``block.expansion``)."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return None
        node, file = found
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        annotation = next((p.annotation for p in params if p.name.value == param), None)
        usage = self.param_usage(cls, param)
        if annotation is None or usage.stored or arguments.stored_as(param, node):
            return None  # ``self.body = body`` keeps a built network, not a class
        classes = []
        for part in find_all(annotation, m.Name() | m.Attribute()):
            assert isinstance(part, (cst.Name, cst.Attribute))
            target = self.qualify(part, file)
            resolved = self.model.resolve(target, file.module) if target else None
            if resolved is not None and resolved.kind == "class" \
                    and resolved.name in self.model.module_classes:
                classes.append(resolved.name)
        # a class, not a network: ``Type[...]``, one of several classes, or used as a class
        text = cst.Module([]).code_for_node(annotation.annotation)
        if not (usage.called or usage.fields or len(classes) > 1
                or re.search(r"\b(Type|type|Callable)\[", text)):
            return None
        for qualname in classes:
            own = {name for name, _ in self.config_fields(qualname) or []}
            if all(f[0] in own for f in usage.fields):
                module, _, name = qualname.rpartition(".")
                return ConfigValue(module, name, (), is_class=True)
        return None

    def torch_base(self, cls: str) -> str | None:
        """The torch layer a repository class inherits its constructor from."""
        for owner in self.model.mro(cls):
            for base in self.model.bases(owner):
                name = apis.canonical(base.name) if base.kind == "external" else ""
                if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] in ORDERS:
                    return name
        return None

    def passes_through(self, cls: str) -> bool:
        """True when a torch layer subclass takes the layer's arguments as they are: no
        constructor of its own, or one that hands on ``*args`` / ``**kwargs``."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return True
        params = found[0].params
        return isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None

    def _inherited(self, cls: str) -> arguments.Resolved:
        """Arguments of a class that keeps a torch layer's constructor (``class
        LayerNorm(nn.LayerNorm)`` overriding forward only): the layer's sizes, synthesized."""
        base = self.torch_base(cls)
        if base is None:
            return arguments.Resolved()
        names = ORDERS[base.rsplit(".", 1)[-1]]
        values = {n: arguments.by_name(n) for n in names}
        values = {n: arguments.WIDTH if v is arguments.UNKNOWN else v
                  for n, v in values.items()}
        return arguments.Resolved(dict(values), dict(values))

    def param_usage(self, cls: str, name: str, depth: int = 0) -> arguments.Usage:
        """How the constructor of ``cls`` uses its parameter ``name``, with how the
        repository classes and helpers it passes ``name`` to use it (``Block(config)``
        reading ``config.n_head``)."""
        key = (cls, name, depth)
        if key not in self._usages:
            self._usages[key] = self._param_usage(cls, name, depth)
        return self._usages[key]

    def _positional_names(self, cls: str) -> list[str]:
        """The parameters of ``cls``'s constructor a positional argument can bind, after
        ``self`` (keyword-only ones never are)."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return []
        params = found[0].params
        return [p.name.value for p in [*params.posonly_params, *params.params][1:]]

    def _param_usage(self, cls: str, name: str, depth: int) -> arguments.Usage:
        found = self.method_node(cls, "__init__")
        if found is None:
            return arguments.Usage()
        node, file = found
        got = arguments.usage(name, node)
        aliases = arguments.stored_as(name, node)
        if aliases and name not in bound_names(node.body):
            # ``self.opt = opt``: what the methods read from ``self.opt``, the
            # constructor's own later lines included, and those the class inherits
            # (a subclass that only adds a forward runs its base's constructor)
            for method in self._run_methods(cls):
                got = arguments.merge(got, arguments.attribute_usage(aliases, method))
        if depth >= 4:
            return got
        handing = m.Call(args=[m.ZeroOrMore(), m.Arg(m.Name(name)), m.ZeroOrMore()])
        if name in bound_names(node.body):
            # rebound (``sizes = _broadcast_params(sizes, n)``): only the call computing
            # the new value is handed the parameter; what later calls get is not it
            first = next(iter(find_all(node.body, m.Assign(targets=[
                m.ZeroOrMore(), m.AssignTarget(m.Name(name)), m.ZeroOrMore()]))), None)
            calls = find_all(first.value, handing) if isinstance(first, cst.Assign) else []
        else:
            calls = find_all(node.body, handing)
        for call in calls:
            assert isinstance(call, cst.Call)
            if m.matches(call.func, m.Attribute(value=m.Name("self"))):
                # ``self._init_head(cfg, input_shape)``: the class's own method reads it
                got = arguments.merge(got, self._method_usage(cls, call, name))
                continue
            resolved = self._callee(cls, call, file)
            if resolved is not None and resolved.kind == "function":
                # ``_get_feature_info(model, out_indices)`` reading ``model.feature_info``
                got = arguments.merge(got, self._function_usage(resolved.name, call, name))
                continue
            for inner, param in self._bound_in(resolved, call, name):
                got = arguments.merge(got, self.param_usage(inner, param, depth + 1))
        return got

    def _callee(self, cls: str, call: cst.Call, file: FileResult) -> Resolved | None:
        """What a call in ``cls``'s constructor calls: for ``super().__init__(...)``, the
        first repository Module class ``cls`` derives from (its constructor reads the
        arguments too)."""
        if m.matches(call.func, m.Attribute(value=m.Call(func=m.Name("super")),
                                            attr=m.Name("__init__"))):
            bases = [b for b in self.model.mro(cls)[1:] if b in self.model.module_classes]
            return Resolved("class", bases[0]) if bases else None
        target = self.qualify(call.func, file)
        return self.model.resolve(target, file.module) if target else None

    def _bound_in(self, resolved: Resolved | None, call: cst.Call, name: str
                  ) -> Iterator[tuple[str, str]]:
        """(class, parameter) for each parameter of the repository Module class
        ``resolved`` that ``call``, which builds it, binds the name ``name`` to."""
        if resolved is None or resolved.kind != "class" or \
                resolved.name not in self.model.module_classes:
            return
        names = self._positional_names(resolved.name)
        for i, arg in enumerate(call.args):
            if m.matches(arg.value, m.Name(name)) and not arg.star:
                inner = arg.keyword.value if arg.keyword else (
                    names[i] if i < len(names) else None)
                if inner is not None:
                    yield resolved.name, inner

    def _method_usage(self, cls: str, call: cst.Call, name: str) -> arguments.Usage:
        """How the method of ``cls`` that ``call`` (``self.<method>(...)``) runs uses the
        parameter ``name`` is passed to, as its constructor would."""
        assert isinstance(call.func, cst.Attribute)
        got = arguments.Usage()
        for used in _handed(self.method_node(cls, call.func.attr.value), call, name, 1):
            got = arguments.merge(got, used)
        return got

    def _function_usage(self, function: str, call: cst.Call, name: str) -> arguments.Usage:
        """The attributes a repository helper reads from the parameter ``call`` passes
        ``name`` to. Only those: a generic helper (``default(val, d)`` calling ``d`` when it
        is callable) says nothing of what the argument is, nor does a method every Module
        has (``freeze(module)`` reading ``module.parameters()``)."""
        got = arguments.Usage()
        for used in _handed(self.function_node(function), call, name, 0):
            read = tuple(chain for chain in used.fields
                         if chain[0] not in MODULE_API)  # not ``module.parameters()``
            # A helper that indexes what it is given and never asks what kind it is
            # (``_broadcast_params(sizes)`` reading ``sizes[0]``) needs a sequence.
            sequence = used.indexed and not used.type_tested
            got = arguments.merge(got, arguments.Usage(
                fields=read, indexed=sequence, length=used.length if sequence else 0,
                unpacked=used.unpacked if sequence else 0))
        return got

    def environment(self, cls: str, kwargs: dict[str, object]) -> dict[str, object]:
        """The constructor's parameters bound to ``kwargs`` and defaults, over the
        module's constants (``opt = parser.parse_args()`` as the script's defaults)."""
        sig = self._signature(cls, "__init__")
        file = self.file_of(cls)
        env = self.module_environment(file) if file is not None else {}
        for name, default, _ in sig[0] if sig else []:
            env[name] = kwargs.get(name, default)
        return env

    def module_environment(self, file: FileResult) -> dict[str, object]:
        """A file's module-level constants, argparse namespaces included."""
        if file.path not in self._module_envs:
            parsed = self.parsed(file.path)
            env: dict[str, object] = {}
            if parsed is not None:
                names = arguments.parse_args_names(parsed.module.body)
                if names:
                    space = arguments.namespace_of(self.argparse(file))
                    env = {name: space for name in names}
                env = constants(parsed.module.body, env, self.call_hook(file))
            self._module_envs[file.path] = env
        return dict(self._module_envs[file.path])


def _with_main_block(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """A module's statements with those of its ``if __name__ == "__main__":`` block in
    place: a script's example (``model = Unet(dim=64)``) is where it builds its networks."""
    out: list[cst.BaseStatement] = []
    for stmt in body:
        if isinstance(stmt, cst.If) and m.matches(stmt.test, m.Comparison(
                left=m.Name("__name__"), comparisons=[m.ComparisonTarget(
                    operator=m.Equal(), comparator=m.SimpleString())])) \
                and isinstance(stmt.body, cst.IndentedBlock):
            out.extend(stmt.body.body)
        else:
            out.append(stmt)
    return out


def _blocks(stmt: cst.CSTNode) -> list[cst.IndentedBlock]:
    """The blocks of a compound statement: an ``if``'s body and its ``elif`` / ``else``
    ones, a ``try``'s body, handlers, ``else`` and ``finally``, a loop's or ``with``'s body."""
    out: list[cst.IndentedBlock] = []
    for child in stmt.children:
        if isinstance(child, cst.IndentedBlock):
            out.append(child)
        elif isinstance(child, (cst.If, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                                cst.Finally)):
            out.extend(_blocks(child))
    return out



def _self_assigned(function: cst.FunctionDef) -> set[str]:
    """The names ``self.<name> = ...`` assigns in ``function``."""
    targets = [t.target for t in find_all(function.body, m.AssignTarget()) if isinstance(
        t, cst.AssignTarget)] + [a.target for a in find_all(function.body, m.AnnAssign())
                                 if isinstance(a, cst.AnnAssign)]
    return {t.attr.value for t in targets if isinstance(t, cst.Attribute)
            and m.matches(t.value, m.Name("self"))}


def _by_name(call: cst.Call, order: list[str], open_keywords: bool,
             env: dict[str, object], hook: CallHook) -> dict[str, object] | None:
    """A call's arguments by parameter name (a position binds the parameter of ``order``
    at it), None when one cannot be computed or named, or when a keyword is not one of
    ``order`` and the callee takes no ``**kwargs`` (``open_keywords``)."""
    kwargs: dict[str, object] = {}
    for i, arg in enumerate(call.args):
        key = arg.keyword.value if arg.keyword else (order[i] if i < len(order) else None)
        value = evaluate(arg.value, env, hook)
        if key is None or arg.star or value is UNKNOWN or not is_complete(value) or (
                key not in order and not open_keywords):
            return None
        kwargs[key] = value
    return kwargs


def _partial(call: cst.Call, env: dict[str, object], hook: CallHook) -> object:
    """``partial(ConvNormAct, padding=0, norm_layer=norm)``: the repository class with
    the keywords it binds; incomplete when a keyword (or an argument bound by position)
    cannot be computed, which still says what class the constructor builds."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return UNKNOWN
    held = evaluate(call.args[0].value, env, hook)
    if not isinstance(held, ConfigValue) or not held.is_class or held.kwargs:
        return UNKNOWN
    bound: dict[str, object] = {}
    complete = True
    for arg in call.args[1:]:
        value = evaluate(arg.value, env, hook) if arg.keyword is not None else UNKNOWN
        if arg.keyword is None or arg.star or value is UNKNOWN:
            complete = False
        else:
            bound[arg.keyword.value] = value
    return replace(held, kwargs=tuple(bound.items()), complete=complete)


# How many callers of a factory's wrapper are followed (timm registers one function per
# model variant; the first few give the class its arguments).
_MAX_FACTORY_SITES = 8
_NAME = re.compile(r"[A-Za-z_]\w*")


def _parameter_names(node: cst.FunctionDef) -> set[str]:
    params = node.params
    names = {p.name.value for p in [*params.posonly_params, *params.params,
                                    *params.kwonly_params]}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _handed(found: tuple[cst.FunctionDef, FileResult] | None, call: cst.Call, name: str,
            skipped: int) -> Iterator[arguments.Usage]:
    """How the function ``found`` uses each parameter ``call`` binds the name ``name`` to
    (``skipped``: the leading parameters the call does not pass, ``self`` of a method); a
    parameter the function assigns again says nothing."""
    for i, arg in enumerate(call.args):
        if found is None or arg.star or not m.matches(arg.value, m.Name(name)):
            continue
        inner = arg.keyword.value if arg.keyword else positional_name(found, i + skipped)
        if inner is not None and inner not in bound_names(found[0].body):
            yield arguments.usage(inner, found[0])


# The words of a factory parameter's name that say it is a factory, not what it builds.
_FACTORY_WORDS = frozenset({"class", "cls", "layer", "type", "fn", "func", "builder",
                            "factory", "module", "maker", "make", "create", "build"})


def _takes(init: cst.FunctionDef, call: cst.Call) -> bool:
    """True when a constructor ``init`` can be called as ``call`` is (its positional
    arguments and keywords; what ``*args`` or ``**kwargs`` unpack is not counted)."""
    params = init.params
    positional = [*params.posonly_params, *params.params][1:]
    given = sum(a.keyword is None and not a.star for a in call.args)
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    names = {p.name.value for p in [*positional, *params.kwonly_params]}
    many = isinstance(params.star_arg, cst.Param)
    if given > len(positional) and not many:
        return False
    if not any(a.star == "*" for a in call.args) and any(
            p.default is None and p.name.value not in keywords for p in positional[given:]):
        return False
    if any(p.default is None and p.name.value not in keywords for p in params.kwonly_params):
        return False
    return keywords <= names or params.star_kwarg is not None


def positional_name(found: tuple[cst.FunctionDef, FileResult] | None, index: int
                    ) -> str | None:
    """The name of the parameter a function binds its ``index``-th positional argument to."""
    if found is None:
        return None
    params = [*found[0].params.posonly_params, *found[0].params.params]
    return params[index].name.value if index < len(params) else None


def _give(bound: dict[str, object], extra: dict[str, object], names: set[str], key: str,
          value: object) -> None:
    """Binds ``key`` to ``value``: a parameter (one of ``names``) in ``bound``, unbound
    (not its default) when msready cannot compute the value; any other key in ``extra``
    (the ``**kwargs`` dictionary), where an unknown value stays as an item that is there."""
    if key not in names:
        extra[key] = value
    elif value is not UNKNOWN:
        bound[key] = value
    else:
        bound.pop(key, None)


def _call_of_call(value: object, inside: bool = False) -> bool:
    """True when ``value`` holds a repository function's result computed from another
    function's result (``build_backbone(cfg=get_config(path))``)."""
    if isinstance(value, CallValue) and inside:
        return True
    if isinstance(value, ConfigValue):
        nested = inside or isinstance(value, CallValue)
        return any(_call_of_call(v, nested) for _, v in (*value.kwargs, *value.fields))
    if isinstance(value, tuple):
        return any(_call_of_call(v, inside) for v in value)
    if isinstance(value, DictValue):
        return any(_call_of_call(v, inside) for _, v in value.items)
    return False


def _bind(node: cst.FunctionDef, args: Sequence[Any], env: dict[str, object],
          hook: CallHook) -> dict[str, object] | None:
    """A function's parameters bound to a call's arguments (evaluated in ``env``): those
    the call gives a value msready can compute, defaults for the others, and the
    ``**kwargs`` parameter as the dictionary of the remaining keywords; None when an
    unpacked argument cannot be computed."""
    params = node.params
    positional = [*params.posonly_params, *params.params]
    names = {p.name.value for p in [*positional, *params.kwonly_params]}
    bound: dict[str, object] = {}
    for p in [*positional, *params.kwonly_params]:
        if p.default is not None:
            value = evaluate(p.default, {})
            if value is not UNKNOWN:
                bound[p.name.value] = value
    extra: dict[str, object] = {}
    for i, arg in enumerate(args):
        value = evaluate_text(arg.text, env, hook)
        if arg.star == "**":
            if not isinstance(value, DictValue):
                return None
            for key, item in value.items:
                if isinstance(key, str):
                    _give(bound, extra, names, key, item)
        elif arg.star:
            return None
        elif arg.keyword is not None:
            _give(bound, extra, names, arg.keyword, value)
        elif i < len(positional):
            _give(bound, extra, names, positional[i].name.value, value)
    if isinstance(params.star_kwarg, cst.Param):
        bound[params.star_kwarg.name.value] = DictValue(tuple(extra.items()))
    return bound
