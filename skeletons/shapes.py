"""How to run a generated Cell: constructor arguments (:mod:`.constructors`) and an input.

The input is inferred from the first layer the
constructor builds (``in_channels`` of a Conv, ``in_features`` of a Linear, integer
indices below ``num_embeddings`` for an Embedding, ...), following repository submodules
and containers with their arguments evaluated.
"""

from __future__ import annotations

import re
import symtable
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import libcst as cst
import libcst.matchers as m

from msready.analyzer.facts import FileResult
from msready.analyzer.syntax import find_all, method_params
from msready.skeletons import apis, arguments, einops, example_calls
from msready.skeletons.constructors import SUPER_INIT, ConstructorFinder, positional_name
from msready.skeletons.inputs import (
    FLAG,
    INDEX,
    ORDERS,
    SPATIAL,
    InputSpec,
    input_alternatives,
    layer_input,
    size_int,
)
from msready.skeletons.values import (
    UNKNOWN,
    ConfigValue,
    constants,
    evaluate,
    self_constants,
)

_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})
# A constructor parameter giving the height and width of the images (or feature maps) the
# class is built for: ``img_size=224`` of a ViT, ``resolution=14`` of a window attention,
# ``feat_size`` of a block. Position tables and window partitions are sized by it, so the
# input must be that size (``input_size`` is an RNN's width, not here).
_IMAGE_SIZE = re.compile(r"(img|image|input_img|input_image)_?(size|res|resolution)|"
                         r"(input_)?resolution|feat(ure)?_size", re.IGNORECASE)

# A video's frame count, among the constructor's parameters.
_FRAMES = re.compile(r"(num_|n_)?frames|num_frame|frame_count", re.IGNORECASE)
# An optional forward argument holding class labels (``def forward(self, x, labels=None)``).
_LABELS = re.compile(r"(class_)?labels?|targets?|y", re.IGNORECASE)
# A forward argument named for an audio signal: a short-time transform of it (a
# spectrogram's ``n_fft`` of 400) needs more samples than a guess of a few features has.
_SIGNAL = re.compile(r"(wave(form)?|wav|audio|signal|speech)s?", re.IGNORECASE)
SIGNAL_LENGTH = 1600  # a tenth of a second at 16 kHz


@dataclass(slots=True)
class Plan:
    """What it takes to run one generated Cell, or why it cannot run."""

    torch_class: str
    name: str
    module: str
    path: str
    line: int
    kwargs: dict[str, object] = field(default_factory=dict)
    inputs: list[InputSpec | None] = field(default_factory=list)
    reason: str | None = None  # set when the Cell cannot be run
    synthesized: dict[str, object] = field(default_factory=dict)  # arguments made up
    alternatives: list[list[InputSpec | None]] = field(default_factory=list)  # inputs to try
    guessed: bool = False  # no layer or forward code gave the input: every input is a guess
    # the same Cell with wider made-up sizes, tried when it cannot be built with the first
    variants: list[Variant] = field(default_factory=list)
    # the same Cell with small made-up sizes and guessed inputs, run when it runs out of
    # time or memory at the sizes the repository gives
    smaller: Variant | None = None


@dataclass
class Variant:
    """Other constructor arguments to try, with the inputs they take."""

    kwargs: dict[str, object]
    synthesized: dict[str, object]
    inputs: list[InputSpec | None]
    alternatives: list[list[InputSpec | None]]


class Planner(ConstructorFinder):
    """Finds constructor arguments and inputs for the repository's Module classes."""

    # ----- inputs -----------------------------------------------------------------------

    def _constructor(self, cls: str) -> tuple[cst.FunctionDef, FileResult,
                                              Sequence[cst.BaseStatement]] | None:
        """``cls.__init__`` (its own or inherited), its file and its statements (none for
        a one-line body)."""
        found = self.method_node(cls, "__init__")
        if found is None:
            return None
        body = found[0].body
        return found[0], found[1], body.body if isinstance(body, cst.IndentedBlock) else ()

    def first_layer(self, cls: str, env: dict[str, object],
                    depth: int = 0) -> InputSpec | None:
        """The input the first layer built by ``cls.__init__`` accepts."""
        found = self._constructor(cls) if depth < 8 else None
        if found is None:
            return None
        node, file, body = found
        # ``block = block or ConvNormAct``: a local class; local sizes stay unknown, as the
        # first layer built is not always the first one forward runs (a norm built before
        # its convolution)
        env = self_constants(body, self._local_environment(body, file, env),
                             self.call_hook(file))
        base = self.torch_base(cls)
        for call in find_all(node.body, m.Call()):
            assert isinstance(call, cst.Call)
            if base is not None and m.matches(call.func, SUPER_INIT):
                spec = self._torch_layer_input(base, call, env)  # builds the torch base
            else:
                spec = self._layer_input(call, file, env, depth)
            if spec is not None:
                return spec
        return None


    def _local_environment(self, body: Sequence[cst.BaseStatement], file: FileResult,
                           env: dict[str, object]) -> dict[str, object]:
        """``env`` (the constructor's parameters) with the classes its body binds to local
        names and the parameters it updates (``embed_dim *= num_heads``)."""
        local = constants(body, env, self.call_hook(file), forget=True)
        out = {**env, **{k: v for k, v in local.items()
                         if isinstance(v, ConfigValue) and v.is_class}}
        for name in [name for name in out if _updated(body, name)]:
            if name in local:
                out[name] = local[name]
            else:
                del out[name]
        return out

    def _layer_input(self, call: cst.Call, file: FileResult, env: dict[str, object],
                     depth: int) -> InputSpec | None:
        name = self.qualify(call.func, file)
        held = env.get(call.func.value) if isinstance(call.func, cst.Name) else None
        if isinstance(held, ConfigValue) and held.is_class:  # ``conv_block(192, 96)``
            name = f"{held.module}.{held.name}"
        if name is None:
            return None
        resolved = self.model.resolve(name, file.module)
        if resolved is not None and resolved.kind == "function":
            return self._returned_layer(resolved.name, call, env, depth)
        if resolved is not None and resolved.kind == "class" and \
                resolved.name in self.model.module_classes:
            sub_sig = self._signature(resolved.name, "__init__")
            names = [n for n, _, _ in sub_sig[0]] if sub_sig else []
            # a ``partial`` held in a local name brings the keywords it binds
            sub_kwargs: dict[str, object] = dict(held.kwargs) if isinstance(
                held, ConfigValue) else {}
            for i, arg in enumerate(call.args):
                key = arg.keyword.value if arg.keyword else (names[i] if i < len(names) else None)
                value = evaluate(arg.value, env)
                if key is not None and value is not UNKNOWN and not arg.star:
                    sub_kwargs[key] = value
            spec = self.input_of(resolved.name, self.environment(resolved.name, sub_kwargs),
                                 depth + 1)
            base = self.torch_base(resolved.name)
            if spec is None and base is not None and self.passes_through(resolved.name):
                # ``Conv2d(c_in, c_out, 3)`` of a wrapper that hands its arguments to
                # torch's Conv2d: they are the torch layer's
                spec = self._torch_layer_input(base, call, env)
            return spec
        torch_name = apis.canonical(name)
        if torch_name in _CONTAINERS:
            return None  # the layers inside are calls of their own, found next
        if name.startswith("einops.") and name.rsplit(".", 1)[-1] in ("Rearrange", "Reduce"):
            return _einops_layer_input(call, env)
        return self._torch_layer_input(torch_name, call, env)

    def _torch_layer_input(self, torch_name: str, call: cst.Call,
                           env: dict[str, object]) -> InputSpec | None:
        """The input of the torch layer ``call`` builds with its evaluated arguments."""
        order = ORDERS.get(torch_name.rsplit(".", 1)[-1]) or apis.torch_order(torch_name) or ()
        values: dict[str, object] = {}
        for i, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword else (order[i] if i < len(order) else None)
            if key is not None:
                values[key] = evaluate(arg.value, env)
        return layer_input(torch_name, values)

    def input_of(self, cls: str, env: dict[str, object], depth: int = 0) -> InputSpec | None:
        """The input ``cls`` takes: from what its forward first does with its input, else
        from the first layer its constructor builds."""
        if depth > 8:
            return None
        asserted = self._asserted_shape(cls, env) or self._counted_axes(cls, env)
        if asserted is not None:
            return asserted
        spec = self.forward_input(cls, env, depth) or self.first_layer(cls, env, depth)
        return self._forward_rank(cls, spec) if spec is not None else None

    def _asserted_shape(self, cls: str, env: dict[str, object]) -> InputSpec | None:
        """The input shape ``forward`` asserts, batch aside: ``assert x.shape[1:] ==
        (self.channels, self.image_size, self.image_size)``, with the constructor's values."""
        found = self._forward_input(cls)
        if found is None:
            return None
        node, file, name = found
        shape_of = m.Attribute(value=m.Name(name), attr=m.Name("shape"))
        after_batch = m.Subscript(value=shape_of, slice=[m.SubscriptElement(m.Slice(
            lower=m.Integer("1"), upper=None, step=None))])
        for test in find_all(node.body, m.Assert(test=m.Comparison(
                left=after_batch | m.Call(func=m.Name("tuple"), args=[m.Arg(after_batch)]),
                comparisons=[m.ComparisonTarget(m.Equal(), m.Tuple())]))):
            assert isinstance(test, cst.Assert) and isinstance(test.test, cst.Comparison)
            env = self._with_self(cls, env)
            sizes = evaluate(test.test.comparisons[0].comparator, env, self.call_hook(file))
            if isinstance(sizes, tuple) and sizes and all(
                    type(d) is int and d > 0 for d in sizes):
                return InputSpec((2, *sizes))  # fixed: no other spatial size is tried
        return None

    def _counted_axes(self, cls: str, env: dict[str, object]) -> InputSpec | None:
        """A channels-last input whose middle axes ``forward`` gathers and counts: ``b,
        *axis, _ = x.shape`` (or ``*x.shape, x.device``) and ``assert len(axis) ==
        self.input_axis``, with the constructor's values: ``(2, 16, 16, 3)`` for two axes
        and the class's image channels (three when it names none)."""
        found = self._forward_input(cls)
        if found is None:
            return None
        node, file, name = found
        shape_of = m.Attribute(value=m.Name(name), attr=m.Name("shape"))
        for assign in find_all(node.body, m.Assign(targets=[m.AssignTarget(m.Tuple())])):
            assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target,
                                                                 cst.Tuple)
            targets = assign.targets[0].target.elements
            value = assign.value
            if m.matches(value, shape_of):
                covered = len(targets)
            elif isinstance(value, cst.Tuple) and value.elements and m.matches(
                    value.elements[0], m.StarredElement(shape_of)):
                covered = len(targets) - (len(value.elements) - 1)
            else:
                continue
            shaped = targets[:covered]
            stars = [i for i, e in enumerate(shaped) if isinstance(e, cst.StarredElement)]
            if len(stars) != 1 or stars[0] != 1 or len(shaped) != 3:
                continue  # only ``batch, *axes, channels``
            star = shaped[1].value
            if not isinstance(star, cst.Name):
                continue
            counted = m.Assert(test=m.Comparison(
                left=m.Call(func=m.Name("len"), args=[m.Arg(m.Name(star.value))]),
                comparisons=[m.ComparisonTarget(m.Equal())]))
            for test in find_all(node.body, counted):
                assert isinstance(test, cst.Assert) and isinstance(test.test, cst.Comparison)
                axes = evaluate(test.test.comparisons[0].comparator, self._with_self(cls, env),
                                self.call_hook(file))
                if type(axes) is int and 0 < axes <= 3:
                    channels = next((v for k, v in env.items() if type(v) is int and v > 0
                                     and arguments.image_channels(k)), 3)
                    return InputSpec((2, *(16,) * axes, channels))
        return None

    def _with_self(self, cls: str, env: dict[str, object]) -> dict[str, object]:
        """``env`` with the ``self.<name>`` values the constructor of ``cls`` sets."""
        built = self._constructor(cls)
        return self_constants(built[2], env, self.call_hook(built[1])) if built else env

    def _asserted_length(self, cls: str, kwargs: dict[str, object], name: str) -> int | None:
        """How many items ``forward`` asserts its list argument ``name`` has: ``assert
        len(features) == self._num_features``, with the constructor's values."""
        found = self.method_node(cls, "forward")
        if found is None:
            return None
        node, file = found
        for test in find_all(node.body, m.Assert(test=m.Comparison(
                left=m.Call(func=m.Name("len"), args=[m.Arg(m.Name(name))]),
                comparisons=[m.ComparisonTarget(m.Equal())]))):
            assert isinstance(test, cst.Assert) and isinstance(test.test, cst.Comparison)
            env = self._with_self(cls, self.environment(cls, kwargs))
            length = evaluate(test.test.comparisons[0].comparator, env, self.call_hook(file))
            if type(length) is int and 0 < length <= 8:
                return length
        return None

    def _forward_input(self, cls: str) -> tuple[cst.FunctionDef, FileResult, str] | None:
        """``cls``'s forward (its own or inherited), its file, and the name of its first
        input parameter; None without a forward or an input."""
        found = self.method_node(cls, "forward")
        if found is None:
            return None
        node, file = found
        params = method_params(node)
        return (node, file, params[0].name.value) if params else None

    def forward_input(self, cls: str, env: dict[str, object], depth: int) -> InputSpec | None:
        """The input of the first call in ``forward`` that takes the input directly: a
        submodule (``self.conv(x)``) gives its layer's input, a torch function named
        ``*2d`` gives the rank (channels from the first layer)."""
        found = self._forward_input(cls)
        if found is None:
            return None
        node, file, name = found
        for call in find_all(node.body, m.Call(args=[m.ZeroOrMore(), m.Arg(m.Name(name)),
                                                      m.ZeroOrMore()])):
            assert isinstance(call, cst.Call)
            if m.matches(call.func, m.Attribute(value=m.Name("self"))):
                assert isinstance(call.func, cst.Attribute)
                built = self._attribute_call(cls, call.func.attr.value)
                if built is None:  # ``self.vit(img)``: the network it was handed takes it
                    return self._handed_network_input(cls, call.func.attr.value, env, depth)
                init_call, init_file = built
                constructor = self._constructor(cls)
                if constructor is not None:
                    env = self._local_environment(constructor[2], constructor[1], env)
                return _unpermuted(self._first_in(init_call, init_file, env, depth),
                                   _input_permutation(node, name))
            target = self.qualify(call.func, file) or ""
            rank = target[-2:] if target.startswith("torch.") else ""
            if target == "torch.nn.functional.linear":
                features = self._own_weight(cls, env, 2)
                return InputSpec((2, features)) if features else None
            if rank in SPATIAL:
                base = self.first_layer(cls, env, depth)
                if base is None and target in _WEIGHTED:
                    # ``F.conv1d(x, self.weight)`` over the Module's own weight
                    channels = self._own_weight(cls, env, len(SPATIAL[rank]) + 2)
                    base = InputSpec((2, channels)) if channels else None
                if base is None or base.dtype != "float32":
                    return None
                return InputSpec((*base.shape[:2], *SPATIAL[rank]), spatial=len(SPATIAL[rank]))
            if target in _RANK_KEEPING:
                continue  # ``F.pad(x, ...)`` first: the layer after it says the shape
            return None
        return None

    def _own_weight(self, cls: str, env: dict[str, object], rank: int) -> int | None:
        """The input width of a weight ``cls.__init__`` creates with ``rank`` dimensions,
        ``nn.Parameter(torch.randn(dim_out, dim_in, kernel))``: its second size (what
        ``F.conv1d`` and ``F.linear`` apply it to), directly or through a local name."""
        found = self._constructor(cls)
        if found is None:
            return None
        node, file, body = found
        hook = self.call_hook(file)
        local = constants(body, env, hook)
        made: dict[str, cst.Call] = {}  # ``weight = torch.randn(...)``
        for assign in find_all(node.body, m.Assign(targets=[m.AssignTarget(m.Name())],
                                                    value=m.Call())):
            assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
            name = assign.targets[0].target
            assert isinstance(name, cst.Name)
            made.setdefault(name.value, assign.value)
        for wrap in find_all(node.body, m.Call(args=[m.Arg(keyword=None)])):
            assert isinstance(wrap, cst.Call)
            if apis.canonical(self.qualify(wrap.func, file) or "") not in _PARAMETER:
                continue
            value = wrap.args[0].value
            tensor = made.get(value.value) if isinstance(value, cst.Name) else value
            if not isinstance(tensor, cst.Call) or \
                    self.qualify(tensor.func, file) not in _FILLED:
                continue
            sizes = [a.value for a in tensor.args if a.keyword is None and not a.star]
            if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
                sizes = [e.value for e in sizes[0].elements]
            if len(sizes) == rank:
                width = evaluate(sizes[1], local, hook)
                if type(width) is int and width > 0:
                    return width
        return None

    def _handed_network_input(self, cls: str, attr: str, env: dict[str, object],
                              depth: int) -> InputSpec | None:
        """The input of the repository network ``cls`` keeps as it was handed
        (``self.vit = vit``, the network a site gives or the stand-in made up for it):
        the first input planned for that network with its own arguments."""
        for owner in self.model.mro(cls):
            found = self.function_node(f"{owner}.__init__")
            if found is None:
                continue
            for assign in find_all(found[0].body, m.Assign(targets=[m.AssignTarget(
                    m.Attribute(value=m.Name("self"), attr=m.Name(attr)))], value=m.Name())):
                assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Name)
                network = env.get(assign.value.value)
                if not isinstance(network, ConfigValue) or network.is_class or \
                        network.fields or not self._is_network(network):
                    return None
                first = self._inputs(f"{network.module}.{network.name}",
                                     dict(network.kwargs), True)[0] if depth < 8 else []
                return first[0] if first else None
        return None

    def _attribute_call(self, cls: str, attr: str) -> tuple[cst.Call, FileResult] | None:
        """The call assigned to ``self.<attr>`` in the constructor of ``cls`` or a base."""
        for owner in self.model.mro(cls):
            found = self.function_node(f"{owner}.__init__")
            if found is None:
                continue
            node, file = found
            for assign in find_all(node.body, m.Assign(targets=[m.AssignTarget(
                    m.Attribute(value=m.Name("self"), attr=m.Name(attr)))], value=m.Call())):
                assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
                return assign.value, file
        return None

    def _first_in(self, call: cst.Call, file: FileResult, env: dict[str, object],
                  depth: int) -> InputSpec | None:
        for inner in find_all(call, m.Call()):
            assert isinstance(inner, cst.Call)
            spec = self._layer_input(inner, file, env, depth)
            if spec is not None:
                return spec
        return None

    def _returned_layer(self, function: str, call: cst.Call, env: dict[str, object],
                        depth: int) -> InputSpec | None:
        """The layer a repository helper returns (``conv3x3(cin, cout)``), its arguments
        bound to the call's values."""
        found = self.function_node(function) if depth < 8 else None
        if found is None:
            return None
        node, file = found
        params = [p.name.value for p in [*node.params.posonly_params, *node.params.params]]
        inner: dict[str, object] = {p.name.value: evaluate(p.default, {})
                                    for p in node.params.params if p.default is not None}
        for i, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword else (params[i] if i < len(params) else None)
            if key is not None and not arg.star:
                inner[key] = evaluate(arg.value, env)
        for built in _returned_calls(node):
            spec = self._layer_input(built, file, inner, depth + 1)
            if spec is not None:
                return spec
        return None

    def _sequential(self, cls: str) -> bool:
        """True for a subclass of nn.Sequential: it runs what it holds, in order."""
        return apis.inherits(self.model, cls, "torch.nn.Sequential")

    def _function_names_read(self, function: str, name: str) -> set[str] | None:
        """The local names of ``function`` that its class ``name`` reads (none: the class
        can be built on its own); None when that cannot be told."""
        found = self.function_node(function)
        if found is None:
            return None
        try:
            table = symtable.symtable(cst.Module([]).code_for_node(found[0]), "<f>", "exec")
        except SyntaxError:
            return None
        scope = next((t for t in table.get_children() if t.get_name() == found[0].name.value),
                     None)
        inner = next((t for t in scope.get_children() if t.get_name() == name
                      and t.get_type() == "class"), None) if scope else None
        if inner is None:
            return None
        free: set[str] = set()
        pending = [inner]
        while pending:
            current = pending.pop()
            free |= {s.get_name() for s in current.get_symbols() if s.is_free()}
            pending.extend(current.get_children())
        return free - {name, "__class__"}  # ``__class__``: what ``super()`` reads

    def plan(self, cls: str) -> Plan:
        """Everything needed to run the Cell generated for ``cls``."""
        fact = self.model.classes[cls]
        file = self.file_of(cls)
        module = file.module if file else cls.rsplit(".", 1)[0]
        path = file.path if file else ""
        plan = Plan(cls, fact.name, module, path, fact.span.line)
        owner = cls.rsplit(".", 1)[0]
        if owner in self.model.functions:
            local = self._function_names_read(owner, fact.name)
            if local is None or local:
                reads = f" and reads its local names ({', '.join(sorted(local))})" \
                    if local else ""
                plan.reason = (f"defined inside the function {owner.rsplit('.', 1)[-1]}()"
                               f"{reads}: only that function can build it; its translation "
                               "is in the Cell file")
                return plan
        if self.model.forward_of(cls) is None and self.torch_base(cls) is None \
                and not self._sequential(cls):
            plan.reason = "no forward method: nothing to run"
            return plan
        if self._abstract_forward(cls):
            plan.reason = "its forward is abstract (a base class its subclasses implement)"
            return plan
        resolved = self.constructor_arguments(cls)
        plan.kwargs = dict(resolved.kwargs)
        plan.synthesized = dict(resolved.synthesized)
        if resolved.missing:
            plan.reason = (f"constructor argument {', '.join(resolved.missing)}: no value at "
                           "its instantiation sites, no default, and none can be synthesized "
                           "(it is called, or read as a string or by key)")
            return plan
        residual = self._residual_width(cls, plan.kwargs, plan.synthesized)
        if residual is not None:  # ``x += shortcut``: as many channels in as out
            name, width = residual
            plan.kwargs[name] = plan.synthesized[name] = width
        plan.inputs, plan.alternatives, plan.guessed = self._inputs(cls, plan.kwargs,
                                                                    bool(plan.synthesized))
        # wider made-up sizes, for a width something must divide (eight times as wide:
        # a quarter of it in 32 groups); then an image's three channels widened too
        # (``GroupNorm(32, in_channels)``)
        tried = [plan.synthesized]
        for images, factor in ((False, 2), (False, 4), (False, 8), (True, 2), (True, 4)):
            synthesized = {k: arguments.scaled(k, v, factor, images)
                           for k, v in plan.synthesized.items()}
            if synthesized in tried:
                continue
            tried.append(synthesized)
            kwargs = {**plan.kwargs, **synthesized}
            inputs, alternatives, _ = self._inputs(cls, kwargs, True)
            plan.variants.append(Variant(kwargs, synthesized, inputs, alternatives))
        # longer made-up sequences, for a constructor that indexes past their four items
        longer = {k: arguments.lengthened(k, v) for k, v in plan.synthesized.items()}
        if longer not in tried:
            kwargs = {**plan.kwargs, **longer}
            inputs, alternatives, _ = self._inputs(cls, kwargs, True)
            plan.variants.append(Variant(kwargs, longer, inputs, alternatives))
        plan.smaller = self._smaller(cls, plan)
        return plan

    def _residual_width(self, cls: str, kwargs: dict[str, object],
                        synthesized: dict[str, object]) -> tuple[str, int] | None:
        """For a block whose forward adds its input to what its layers make of it
        (``shortcut = x; ...; x += shortcut``), the made-up input width changed to the
        width its last layer gives: ``inplanes`` becomes ``planes * self.expansion``.
        None when the widths already agree, or the input width is not made up."""
        found = self._forward_input(cls)
        built = self._constructor(cls)
        if found is None or built is None or not _adds_its_input(*found[::2]):
            return None
        node, file, body = built
        layers = [(call, widths) for call in find_all(node.body, m.Call())
                  if isinstance(call, cst.Call)
                  for widths in [self._width_parameters(call, file)] if widths]
        if not layers:
            return None
        first, first_names = layers[0]
        param = _argument(first, first_names, 0)
        if not isinstance(param, cst.Name) or param.value not in synthesized:
            return None
        hook = self.call_hook(file)
        env = constants(body, {**self.environment(cls, kwargs), **self.class_constants(cls)},
                        hook)
        env = self_constants(body, env, hook)
        last, last_names = layers[-1]
        out = _argument(last, last_names, 1)
        width = evaluate(out, env, self.call_hook(file)) if out is not None else UNKNOWN
        if type(width) is int and 0 < width != kwargs.get(param.value):
            return param.value, width
        return None

    def _width_parameters(self, call: cst.Call, file: FileResult) -> tuple[str, str] | None:
        """The names of the input and output widths of the layer ``call`` builds: a torch
        Conv or Linear's, or those of a repository layer whose first two parameters are
        named for them (``ConvNormAct(in_chs, out_chs)``, ``ConvBN(in_planes,
        out_planes)``)."""
        name = self.qualify(call.func, file)
        widths = _WIDTH_ARGS.get(apis.canonical(name or ""))
        if widths is not None or name is None:
            return widths
        resolved = self.model.resolve(name, file.module)
        if resolved is None or resolved.name not in self.model.module_classes:
            return None
        params = self._positional_names(resolved.name)[:2]
        if len(params) == 2 and _IN_WIDTH.fullmatch(params[0]) and \
                _OUT_WIDTH.fullmatch(params[1]):
            return params[0], params[1]
        return None

    def _smaller(self, cls: str, plan: Plan) -> Variant | None:
        """``cls`` with the large sizes the repository gives made small (``dim=9216`` ->
        16) and its inputs found from those, not from an example call; None when that
        changes nothing."""
        params = (self._signature(cls, "__init__") or ([], None))[0]
        values = {**{name: default for name, default, _ in params}, **plan.kwargs}
        given = [name for name in values if name not in plan.synthesized]
        small = arguments.shrunk(values, given, lambda name: self.param_usage(cls, name))
        resolved = arguments.Resolved({**plan.kwargs, **small}, {**plan.synthesized, **small})
        if small:
            self._meet_requirements(cls, params, resolved)
        inputs, alternatives, _ = self._inputs(cls, resolved.kwargs, True, examples=False)
        if not small and inputs == plan.inputs:
            return None
        return Variant(resolved.kwargs, resolved.synthesized, inputs, alternatives)

    def _inputs(self, cls: str, kwargs: dict[str, object], synthesized: bool,
                examples: bool = True
                ) -> tuple[list[InputSpec | None], list[list[InputSpec | None]], bool]:
        """The first input to try for ``cls`` built with ``kwargs``, the others, and
        whether every one is a guess; a forward argument that takes a list of tensors
        gets a list of two. The repository's own example call comes first (unless
        ``examples`` is False)."""
        forward = self._signature(cls, "forward")
        required = [n for n, _, req in forward[0] if req] if forward else ["x"]
        if forward and not required and not self._takes_star_args(cls):
            return [], [], False  # ``def forward(self)``: a table or a bias, run as it is
        first, alternatives, guessed = self._as_lists(
            cls, kwargs, required, *self._tensor_inputs(cls, kwargs, synthesized, required))
        first, alternatives = self._as_dictionaries(cls, kwargs, required, first,
                                                    alternatives)
        if forward and len(first) == len(required):
            second = self._optional_input(cls, kwargs, forward[0], len(required), first)
            if second is not None:  # ``context`` a layer takes at its own width
                first = [*first, second]
                alternatives = [[*a, _widthed(a[0], second)] if len(a) == len(required)
                                else a for a in alternatives]
        size = self._image_size(cls, kwargs)
        if size is not None:
            first = _sized(first, size)
            alternatives = [_sized(a, size) for a in alternatives]
        frames = self._frames(cls, kwargs)
        if frames is not None:  # a video: its frames, and its frames' sides if known
            first = _framed(first, frames, size)
            alternatives = [_framed(a, frames, size) for a in alternatives]
        batch = self._asserted_batch(cls)
        if batch is not None:
            first = _batched(first, batch)
            alternatives = [_batched(a, batch) for a in alternatives]
        if forward:
            alternatives += _with_labels(forward[0], len(required), [first, *alternatives])
            alternatives += _as_signal(required, [first, *alternatives])
        example = self._example_inputs(cls, forward[0]) if forward and examples else None
        if example is not None:  # the repository's own call comes first
            return example, [first, *alternatives], False
        return first, alternatives, guessed

    def _optional_input(self, cls: str, kwargs: dict[str, object],
                        params: Sequence[tuple[str, object, bool]], given: int,
                        first: list[InputSpec | None]) -> InputSpec | None:
        """The tensor for the optional forward argument after the required ones (``def
        forward(self, x, context=None)``) when a layer takes it at another width than the
        first input has (``self.to_kv(context)``, a Linear built for ``context_dim``,
        where ``context = default(context, x)`` would hand it ``x``): the first input's
        shape with that width. None when nothing says or the widths agree."""
        spec = first[0] if first else None
        if given >= len(params) or params[given][1] is not None or spec is None or \
                spec.dtype != "float32":
            return None
        found = self.method_node(cls, "forward")
        constructor = self._constructor(cls)
        if found is None or constructor is None:
            return None
        name = params[given][0]
        env = self._local_environment(constructor[2], constructor[1],
                                      self.environment(cls, kwargs))
        for call in find_all(found[0].body, m.Call(func=m.Attribute(value=m.Name("self")),
                                                    args=[m.Arg(m.Name(name))])):
            assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            built = self._attribute_call(cls, call.func.attr.value)
            taken = self._first_in(built[0], built[1], env, 1) if built is not None else None
            if taken is None or len(taken.shape) != 2 or taken.dtype != "float32":
                return None
            width = taken.shape[-1]
            return None if width == spec.shape[-1] else _widthed(spec, taken)
        return None

    def _asserted_batch(self, cls: str) -> int | None:
        """The batch size ``forward`` asserts: ``assert x.size()[0] == 1`` (a metric that
        handles one image pair at a time)."""
        found = self._forward_input(cls)
        if found is None:
            return None
        node, _, name = found
        first = m.Subscript(value=_shape_of(name), slice=[
            m.SubscriptElement(m.Index(m.Integer("0")))]) | m.Call(
            func=m.Attribute(value=m.Name(name), attr=m.Name("size")),
            args=[m.Arg(m.Integer("0"))])
        for test in find_all(node.body, m.Assert(test=m.Comparison(
                left=first, comparisons=[m.ComparisonTarget(m.Equal(), m.Integer())]))):
            assert isinstance(test, cst.Assert) and isinstance(test.test, cst.Comparison)
            size = int(cst.ensure_type(test.test.comparisons[0].comparator, cst.Integer).value)
            return size if size > 0 else None
        return None

    def _image_size(self, cls: str, kwargs: dict[str, object]) -> tuple[int, int] | None:
        """The (height, width) the class is built for, from its first image-size parameter
        (:data:`_IMAGE_SIZE`) with a value: ``img_size=224`` -> (224, 224). Not above 512
        a side (``img_size=1024`` of a detection backbone that resizes its position table):
        a CPU run of that proves nothing more and may not end in time."""
        sig = self._signature(cls, "__init__")
        for name, default, _ in sig[0] if sig else []:
            if not _IMAGE_SIZE.fullmatch(name):
                continue
            value = kwargs.get(name, default)
            sides = (value, value) if type(value) is int else value
            if isinstance(sides, tuple) and len(sides) == 2 and all(
                    type(v) is int and 0 < v <= 512 for v in sides):
                return sides[0], sides[1]
        return None

    def _frames(self, cls: str, kwargs: dict[str, object]) -> int | None:
        """How many frames a video the class is built for has, from its frame count
        parameter (:data:`_FRAMES`) with a value: ``frames=8`` (its time positions are
        made for them). Not above 64."""
        sig = self._signature(cls, "__init__")
        for name, default, _ in sig[0] if sig else []:
            if _FRAMES.fullmatch(name):
                value = kwargs.get(name, default)
                return value if type(value) is int and 0 < value <= 64 else None
        return None

    def _abstract_forward(self, cls: str) -> bool:
        """``@abstractmethod def forward(self): ...``, or one that only raises
        NotImplementedError: the class is a base, and running it proves nothing."""
        found = self.method_node(cls, "forward")
        if found is None:
            return False
        node = found[0]
        if any(m.matches(d.decorator, m.Name("abstractmethod") | m.Attribute(
                attr=m.Name("abstractmethod"))) for d in node.decorators):
            return True
        body = [s for s in node.body.body if not m.matches(s, m.SimpleStatementLine(
            [m.Expr(m.SimpleString() | m.ConcatenatedString())]))]
        return len(body) == 1 and m.matches(body[0], m.SimpleStatementLine([m.Raise(
            exc=m.Name("NotImplementedError") | m.Call(func=m.Name("NotImplementedError")))]))

    def _takes_star_args(self, cls: str) -> bool:
        """``forward(self, *args)``: it takes inputs its signature does not name."""
        found = self.method_node(cls, "forward")
        return found is not None and isinstance(found[0].params.star_arg, cst.Param)

    def _as_lists(self, cls: str, kwargs: dict[str, object], required: list[str],
                  first: list[InputSpec | None], alternatives: list[list[InputSpec | None]],
                  guessed: bool
                  ) -> tuple[list[InputSpec | None], list[list[InputSpec | None]], bool]:
        """The inputs with a list of tensors for an argument that takes a list (as many
        as ``forward`` asserts, else two), the Python int 0 for one that indexes and True
        for one only tested for truth."""
        listed, indexes, flags = self._listed(cls), self._indexes(cls), self._flags(cls)
        sizes = self._forward_params(cls, lambda node, param: param.default is None and (
            param.annotation is not None and m.matches(param.annotation.annotation,
                                                       m.Name("int")))) - indexes
        if not listed and not indexes and not flags and not sizes:
            return first, alternatives, guessed
        lengths = {n: self._asserted_length(cls, kwargs, n) or 2 for n in listed}

        def as_lists(inputs: list[InputSpec | None]) -> list[InputSpec | None]:
            if len(inputs) != len(required):
                return inputs
            return [INDEX if n in indexes else FLAG if n in flags
                    else size_int(inputs[0]) if n in sizes and i > 0
                    else replace(s, listed=lengths[n]) if s is not None and n in listed
                    else s for i, (n, s) in enumerate(zip(required, inputs, strict=True))]
        return as_lists(first), [as_lists(a) for a in alternatives], guessed

    def _as_dictionaries(self, cls: str, kwargs: dict[str, object], required: list[str],
                         first: list[InputSpec | None],
                         alternatives: list[list[InputSpec | None]]
                         ) -> tuple[list[InputSpec | None], list[list[InputSpec | None]]]:
        """The inputs with a dictionary of feature maps for an argument that forward
        reads by name (``features[f] for f in self.in_features``), by the names among the
        constructor arguments (the keys of a dictionary of records, else a list of names):
        4-D maps as wide as the records say (else the width), halving in size from one
        name to the next. Without names among the arguments, the inputs stay."""
        keyed = self._keyed(cls)
        names: tuple[str, ...] = ()
        width = arguments.WIDTH
        for value in kwargs.values():
            if isinstance(value, ConfigValue) and (value.module, value.name) == \
                    arguments.MAPPING and value.kwargs:
                names = tuple(k for k, _ in value.kwargs)
                record = value.kwargs[0][1]
                channels = record.get("channels") if isinstance(record, ConfigValue) \
                    else record
                width = channels if type(channels) is int and channels > 0 else width
                break
            if not names and isinstance(value, tuple) and value and all(
                    isinstance(v, str) and v.isidentifier() for v in value):
                names = tuple(str(v) for v in value)
        if not keyed or not names:
            return first, alternatives
        spec = InputSpec((2, width, 32, 32), spatial=2, keyed=names)

        def as_dictionaries(inputs: list[InputSpec | None]) -> list[InputSpec | None]:
            if len(inputs) != len(required):
                return inputs
            return [spec if n in keyed else s for n, s in zip(required, inputs, strict=True)]
        others: list[list[InputSpec | None]] = []
        for one in map(as_dictionaries, alternatives):
            if one not in others and one != as_dictionaries(first):
                others.append(one)
        return as_dictionaries(first), others

    def _keyed(self, cls: str) -> set[str]:
        """``forward``'s parameters it reads by name (``features[f] for f in
        self.in_features``), itself or in the methods it hands them to."""
        def keyed(node: cst.FunctionDef, param: cst.Param) -> bool:
            return self._read_by_name(cls, node, param.name.value, 0)
        return self._forward_params(cls, keyed)

    def _read_by_name(self, cls: str, node: cst.FunctionDef, name: str, depth: int) -> bool:
        if arguments.walked_as_mapping(node.body, name, set())[0]:
            return True
        if depth >= 2:
            return False
        for call in find_all(node.body, m.Call(func=m.Attribute(value=m.Name("self")), args=[
                m.ZeroOrMore(), m.Arg(m.Name(name), keyword=None), m.ZeroOrMore()])):
            assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            position = next(i for i, a in enumerate(call.args)
                            if m.matches(a.value, m.Name(name)))
            method = self.model.find_method(cls, call.func.attr.value)
            found = self.function_node(method) if method else None
            if found is None:
                continue
            params = method_params(found[0])
            if position < len(params) and self._read_by_name(
                    cls, found[0], params[position].name.value, depth + 1):
                return True
        return False

    def _example_inputs(self, cls: str, params: list[tuple[str, object, bool]]
                        ) -> list[InputSpec | None] | None:
        """The inputs of the first call the repository makes of an instance it builds,
        ``net = Net(...)`` then ``net(torch.randn(8, 3, 32, 32), labels=...)``, when every
        argument is a tensor with a written shape."""
        if cls not in self._examples:
            self._examples[cls] = self._first_example(cls, params)
        return self._examples[cls]

    def _first_example(self, cls: str, params: list[tuple[str, object, bool]]
                       ) -> list[InputSpec | None] | None:
        for rc in self.instantiations(cls):
            parsed = self.parsed(rc.file.path)
            if parsed is None:
                continue
            if rc.file.path not in self._assignments:
                self._assignments[rc.file.path] = example_calls.assignment_blocks(parsed)
            found = example_calls.example_call(self._assignments[rc.file.path],
                                               rc.call.span.line)
            if found is None:
                continue
            env = self._caller_environment(rc.call.caller, rc.file, rc.call.span.line)
            specs = example_calls.call_inputs(*found, env, params)
            if specs is not None:
                return specs
        return None

    def _forward_params(self, cls: str,
                        test: Callable[[cst.FunctionDef, cst.Param], bool]) -> set[str]:
        """The names of ``cls``'s forward parameters after ``self`` that pass ``test``."""
        found = self.method_node(cls, "forward")
        if found is None:
            return set()
        node = found[0]
        return {p.name.value for p in method_params(node) if test(node, p)}

    def _indexes(self, cls: str, depth: int = 0) -> set[str]:
        """``forward``'s parameters that index (``self.running_mean[step]``) and are never
        used as a tensor, directly or handed to a held layer that indexes with them
        (``self.norm(x, step)``): a Python int, 0."""
        def indexes(node: cst.FunctionDef, param: cst.Param) -> bool:
            name = m.Name(param.name.value)
            if find_all(node.body, m.Attribute(value=name)) or (
                    param.annotation is not None and not m.matches(
                        param.annotation.annotation, m.Name("int"))):
                return False  # ``step.shape``, ``step: Tensor``: a tensor
            if find_all(node.body, m.Subscript(slice=[m.SubscriptElement(m.Index(name))])) \
                    and (_INDEX_NAMES.fullmatch(param.name.value) or find_all(
                        node.body, m.Comparison(left=name))):
                return True  # not ``self.table[ids]``: token indices
            for call in find_all(node.body, m.Call(
                    func=m.Attribute(value=m.Name("self")),
                    args=[m.ZeroOrMore(), m.Arg(name, keyword=None), m.ZeroOrMore()])):
                assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                position = next(i for i, a in enumerate(call.args) if m.matches(a.value, name))
                if self._indexes_at(cls, call.func.attr.value, position, depth):
                    return True
            return False
        return self._forward_params(cls, indexes) if depth < 4 else set()

    def _flags(self, cls: str) -> set[str]:
        """``forward``'s parameters that are only ever tested for truth, in forward or in
        the class's own method it hands them to (``loss(pred, target_is_real)`` with
        ``if target_is_real:``), or annotated ``bool``: a Python True, not a tensor."""
        def tested_only(node: cst.FunctionDef, name: str, depth: int) -> bool:
            ref = m.Name(name)
            truth = find_all(node.body, m.If(test=ref) | m.IfExp(test=ref) | m.UnaryOperation(
                operator=m.Not(), expression=ref) | m.BooleanOperation(left=ref)
                | m.BooleanOperation(right=ref))
            uses = find_all(node.body, ref)
            if len(truth) == len(uses) and truth:
                return True
            handed = [c for c in find_all(node.body, m.Call(
                func=m.Attribute(value=m.Name("self")),
                args=[m.ZeroOrMore(), m.Arg(ref, keyword=None), m.ZeroOrMore()]))
                if isinstance(c, cst.Call)]
            if depth > 1 or len(handed) + len(truth) != len(uses) or not handed:
                return False
            for call in handed:
                assert isinstance(call.func, cst.Attribute)
                inner = self.method_node(cls, call.func.attr.value)
                position = next(i for i, a in enumerate(call.args) if m.matches(a.value, ref))
                param = positional_name(inner, position + 1)  # after ``self``
                if inner is None or param is None or not tested_only(inner[0], param,
                                                                      depth + 1):
                    return False
            return True

        def flag(node: cst.FunctionDef, param: cst.Param) -> bool:
            if param.default is not None:
                return False
            if param.annotation is not None:
                return m.matches(param.annotation.annotation, m.Name("bool"))
            return tested_only(node, param.name.value, 0)
        return self._forward_params(cls, flag)

    def _indexes_at(self, cls: str, attr: str, position: int, depth: int) -> bool:
        """True when the repository layer held as ``self.<attr>`` indexes with its forward's
        argument at ``position``."""
        built = self._attribute_call(cls, attr)
        name = self.qualify(built[0].func, built[1]) if built else None
        resolved = self.model.resolve(name, built[1].module) if built and name else None
        if resolved is None or resolved.name not in self.model.module_classes:
            return False
        sig = self._signature(resolved.name, "forward")
        if sig is None or position >= len(sig[0]):
            return False
        return sig[0][position][0] in self._indexes(resolved.name, depth + 1)

    def _listed(self, cls: str) -> set[str]:
        """``forward``'s parameters that take a list of tensors: annotated so
        (``features: List[Tensor]``), or, without an annotation, iterated (``for x in
        features``) or joined whole (``torch.cat(x, self.d)``) and never used as a tensor
        (``features.shape``)."""
        def listed(node: cst.FunctionDef, param: cst.Param) -> bool:
            name = m.Name(param.name.value)
            if param.annotation is not None:
                text = cst.Module([]).code_for_node(param.annotation.annotation)
                return _LIST_OF_TENSORS.match(text) is not None
            walked = m.Call(func=m.Name("zip") | m.Name("enumerate"),
                            args=[m.ZeroOrMore(), m.Arg(name), m.ZeroOrMore()])
            iterated = find_all(node.body, m.For(iter=name | walked) | m.CompFor(
                iter=name | walked))
            joined = m.Call(func=m.Attribute(attr=m.Name("cat") | m.Name("stack") | m.Name(
                "concat") | m.Name("concatenate")), args=[m.Arg(name), m.ZeroOrMore()])
            # ``if isinstance(x, list): x = torch.cat(x, 1)``: a tensor will do
            tested = m.Call(func=m.Name("isinstance"), args=[m.Arg(name), m.ZeroOrMore()])
            if not iterated and not find_all(node.body, tested):
                iterated = find_all(node.body, joined)
            as_tensor = find_all(node.body, m.Attribute(value=name, attr=m.Name("shape") | m.Name(
                "size") | m.Name("dim") | m.Name("view") | m.Name("reshape") | m.Name("dtype")))
            return bool(iterated) and not as_tensor
        return self._forward_params(cls, listed)

    def _tensor_inputs(self, cls: str, kwargs: dict[str, object], synthesized: bool,
                       required: list[str]
                       ) -> tuple[list[InputSpec | None], list[list[InputSpec | None]], bool]:
        spec = self.input_of(cls, self.environment(cls, kwargs))
        base = self.torch_base(cls) if spec is None and synthesized else None
        if base is not None:
            spec = layer_input(base, kwargs)
        alternatives = [timed(a, required) for a in input_alternatives(spec, len(required))]
        if spec is None:
            # no layer says it: the class's own width and the rank its forward or its
            # name gives come first (``EvoNorm2d(num_features=32)`` -> (2, 32, 16, 16))
            guided = [timed([g, *[g] * (len(required) - 1)], required)
                      for g in self._guided_guesses(cls, kwargs)]
            alternatives = [*guided, *[a for a in alternatives if a not in guided]]
            return alternatives[0], alternatives[1:], True
        # Further inputs: the same tensor (attention's query/key/value), or None beside
        # token indices (an RNN's initial state).
        extra: InputSpec | None = spec if spec.dtype == "float32" else None
        return timed([spec, *[extra] * (len(required) - 1)], required), alternatives, False

    def _guided_guesses(self, cls: str, kwargs: dict[str, object]) -> list[InputSpec]:
        """Inputs shaped by the class's first width parameter (``num_features``,
        ``dim``...) in the rank its forward asserts (``x.dim() == 4``) or its name says
        (``...2d``), else in the usual ranks; none without a width."""
        sig = self._signature(cls, "__init__")
        width = next((v for n, _, _ in (sig[0] if sig else []) if _WIDTH_NAMES.fullmatch(n)
                      for v in [kwargs.get(n)] if type(v) is int and 0 < v <= 1024), None)
        if width is None:
            return []
        candidates = {4: InputSpec((2, width, 16, 16), spatial=2),
                      3: InputSpec((2, 8, width)), 2: InputSpec((2, width))}
        rank = self._asserted_rank(cls)
        named = _RANK_IN_NAME.search(cls.rsplit(".", 1)[-1])
        if rank is None and named is not None:
            rank = int(named.group(1)) + 2
            if rank == 3:
                candidates[3] = InputSpec((2, width, 32), spatial=1)
        if rank in candidates:
            return [candidates[rank]]
        return [candidates[4], candidates[3], candidates[2]] if rank is None else []

    def _asserted_rank(self, cls: str) -> int | None:
        """The rank ``forward`` checks its input for: ``x.dim() == 4``, ``x.ndim == 3``,
        ``len(x.shape) == 4``."""
        found = self._forward_input(cls)
        if found is None:
            return None
        node, _, name = found
        x = m.Name(name)
        rank_of = m.Call(func=m.Attribute(value=x, attr=m.Name("dim") | m.Name("ndimension")),
                         args=[]) | m.Attribute(value=x, attr=m.Name("ndim")) | m.Call(
            func=m.Name("len"), args=[m.Arg(m.Attribute(value=x, attr=m.Name("shape")))])
        for test in find_all(node.body, m.Comparison(
                left=rank_of, comparisons=[m.ComparisonTarget(m.Equal(), m.Integer())])):
            assert isinstance(test, cst.Comparison)
            target = test.comparisons[0].comparator
            assert isinstance(target, cst.Integer)
            return int(target.value)
        return None

    def _forward_rank(self, cls: str, spec: InputSpec) -> InputSpec:
        """The input spec with the rank forward unpacks (``B, T, C = x.size()``, or ``b, n,
        _, h = *x.shape, self.heads``, the shape's sizes and more after them): batch
        first, features last, 8 for each dimension in between."""
        found = self._forward_input(cls) if spec.dtype == "float32" else None
        if found is None:
            return spec
        node, _, name = found
        starred = m.Tuple([m.StarredElement(_shape_of(name)), m.AtLeastN(
            m.Element(), n=1)])
        for assign in find_all(node.body, m.Assign(targets=[m.AssignTarget(m.Tuple())],
                                                    value=_shape_of(name) | starred)):
            assert isinstance(assign, cst.Assign)
            target = assign.targets[0].target
            assert isinstance(target, cst.Tuple)
            if any(isinstance(e, cst.StarredElement) for e in target.elements):
                continue  # ``*_, h, w = x.shape``: any rank of at least the names after
            more = len(assign.value.elements) - 1 if isinstance(assign.value, cst.Tuple) \
                else 0
            rank = len(target.elements) - more
            if rank != len(spec.shape) and rank >= 2:
                middle = (8,) * (rank - 2)
                return InputSpec((spec.shape[0], *middle, spec.shape[-1]))
        read = self._rearranged_rank(cls, node, name)
        # (not for an image layer's input: where its channels sit among the axes the
        # pattern names, ``b f c h w`` or ``b (h w) d``, the rank does not say)
        if read is not None and read != len(spec.shape) and read >= 2 and not spec.spatial:
            return InputSpec((spec.shape[0], *(8,) * (read - 2), spec.shape[-1]))
        return spec

    def _rearranged_rank(self, cls: str, forward: cst.FunctionDef, name: str) -> int | None:
        """The rank an einops pattern reads the input with, in ``forward``: applied to the
        input itself or to what a layer that keeps the rank made of it (``q =
        self.to_q(x)``, a Linear), also through ``map(lambda t: rearrange(t, ...), (q, k,
        v))``: ``'b n (h d) -> (b h) n d'`` reads three axes. None when no pattern says."""
        file = self.file_of(cls)
        if file is None:
            return None
        kept = {name}
        for assign in find_all(forward.body, m.Assign(targets=[m.AssignTarget(m.Name())],
                                                       value=m.Call(func=m.Attribute(
                                                           value=m.Name("self")), args=[
                                                           m.Arg(m.Name(name))]))):
            assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
            assert isinstance(assign.value.func, cst.Attribute)
            built = self._attribute_call(cls, assign.value.func.attr.value)
            layer = apis.canonical(self.qualify(built[0].func, built[1]) or "") \
                if built is not None else ""
            target = assign.targets[0].target
            if layer in _LAST_AXIS and isinstance(target, cst.Name):
                kept.add(target.value)
        for call in find_all(forward.body, m.Call(args=[m.Arg(), m.Arg(m.SimpleString()),
                                                         m.ZeroOrMore()])):
            assert isinstance(call, cst.Call)
            if self.qualify(call.func, file) not in _EINOPS_READS:
                continue
            tensor = call.args[0].value
            applied = isinstance(tensor, cst.Name) and tensor.value in kept
            mapped = next((mc for mc in find_all(forward.body, m.Call(
                func=m.Name("map"), args=[m.Arg(m.Lambda()), m.Arg(m.Tuple() | m.List())]))
                if isinstance(mc, cst.Call) and call in find_all(mc.args[0].value, m.Call())),
                None)
            if mapped is not None and isinstance(tensor, cst.Name):
                lam = mapped.args[0].value
                items = mapped.args[1].value
                assert isinstance(lam, cst.Lambda)
                assert isinstance(items, (cst.Tuple, cst.List))
                applied = [p.name.value for p in lam.params.params] == [tensor.value] and any(
                    m.matches(e.value, m.Name()) and isinstance(e.value, cst.Name)
                    and e.value.value in kept for e in items.elements)
            pattern = call.args[1].value
            if not applied or not isinstance(pattern, cst.SimpleString):
                continue
            try:
                left = einops.Pattern.parse(str(pattern.evaluated_value)).left
            except einops.PatternError:
                continue
            if any(einops.ELLIPSIS in g for g in left):
                continue
            return len(left)
        return None


# Names of an argument that picks one of several (a step, a layer, a task).
_INDEX_NAMES = re.compile(r"step|idx|index|i|k|layer_?(id|idx)?|level|stage|task(_id)?|"
                          r"branch|head_?(id|idx)|epoch|it(er(ation)?)?|global_step",
                          re.IGNORECASE)
# An annotation for a list of tensors: ``List[Tensor]``, ``Sequence[torch.Tensor]``.
_LIST_OF_TENSORS = re.compile(r"(typing\.)?(List|list|Sequence|Tuple|tuple|Iterable)\[\s*"
                              r"(torch\.)?Tensor\b")
# torch functions that apply a weight to their input, and functions that keep its rank.
_WEIGHTED = frozenset(f"torch.nn.functional.conv{n}d" for n in (1, 2, 3))
_RANK_KEEPING = frozenset(f"torch.nn.functional.{f}" for f in (
    "pad", "dropout", "relu", "gelu", "silu", "leaky_relu", "elu", "normalize", "tanh",
    "sigmoid", "mish", "hardswish"))
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# torch layers that act on the last axis and keep the others, and the einops functions
# whose pattern says how many axes the tensor they read has.
_LAST_AXIS = frozenset(f"torch.nn.{n}" for n in ("Linear", "LayerNorm", "Dropout", "Identity",
                                                 "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid"))
_EINOPS_READS = frozenset(f"einops.{f}" for f in ("rearrange", "repeat", "reduce"))
_FILLED = frozenset(f"torch.{f}" for f in ("randn", "rand", "empty", "zeros", "ones", "Tensor"))

# Constructor parameters that give a Module's width (its input channels or features).
_WIDTH_NAMES = re.compile(r"num_features|num_channels|channels|in_chs|in_channels|chs|dim|"
                          r"in_dim|dim_in|input_dim|in_features|in_planes|inplanes|"
                          r"embed_dim|d_model|hidden_size|n_embd|width|c_in|ch_in|in_ch|nc",
                          re.IGNORECASE)
# ``EvoNorm2dB0``, ``BnActConv2d``, ``MedianPool2d``: the rank a class's name says.
_RANK_IN_NAME = re.compile(r"([123])[dD](?![a-z])")


# torch layers whose first two arguments are the widths in and out.
_WIDTH_ARGS = {f"torch.nn.{layer}": names for layer, names in (
    *((f"Conv{n}d", ("in_channels", "out_channels")) for n in (1, 2, 3)),
    ("Linear", ("in_features", "out_features")))}


# The first two parameters of a repository layer that takes an input and an output width.
_IN_WIDTH = re.compile(r"(in|inp|input)_?(chs|channels|planes|features|dim|ch|c)|inplanes|"
                       r"dim_in|c_?in|nin", re.IGNORECASE)
_OUT_WIDTH = re.compile(r"(out|oup|output)_?(chs|channels|planes|features|dim|ch|c)|"
                        r"outplanes|planes|dim_out|c_?out|nout", re.IGNORECASE)


def _argument(call: cst.Call, names: tuple[str, str], position: int
              ) -> cst.BaseExpression | None:
    """The expression a layer call gives for its width argument at ``position`` (0: in,
    1: out), by position or by its keyword in ``names``."""
    keyword = names[position]
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword.value == keyword) if arg.keyword else i == position:
            return arg.value
    return None


def _adds_its_input(forward: cst.FunctionDef, name: str) -> bool:
    """True when ``forward`` adds its input ``name``, or a name bound to it (``shortcut =
    x``), to something: ``x + self.f(x)``, ``out += shortcut``."""
    aliases = {name}
    body = forward.body.body if isinstance(forward.body, cst.IndentedBlock) else ()
    for stmt in body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and m.matches(small.value, m.Name(name)):
                aliases |= {t.target.value for t in small.targets
                            if isinstance(t.target, cst.Name)}
    alias = m.OneOf(*(m.Name(a) for a in aliases))
    return bool(find_all(forward.body, m.BinaryOperation(operator=m.Add(), left=alias)
                         | m.BinaryOperation(operator=m.Add(), right=alias)
                         | m.AugAssign(operator=m.AddAssign(), value=alias)))


def _input_permutation(forward: cst.FunctionDef, name: str) -> tuple[int, ...] | None:
    """The order the first statements of ``forward`` put its input's dimensions in
    (``x = x.permute(0, 3, 1, 2)``: a channels-last input made channels-first), None
    when they do not permute it."""
    order: tuple[int, ...] | None = None
    body = forward.body.body if isinstance(forward.body, cst.IndentedBlock) else ()
    for stmt in body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not isinstance(small, cst.Assign) or not m.matches(
                small.targets[0].target, m.Name(name)):
            break
        value = small.value
        if m.matches(value, m.Call(func=m.Attribute(attr=m.Name("contiguous")), args=[])):
            assert isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            value = value.func.value
        if not m.matches(value, m.Call(func=m.Attribute(value=m.Name(name),
                                                         attr=m.Name("permute")))):
            break
        assert isinstance(value, cst.Call)
        given = [evaluate(a.value, {}) for a in value.args]
        listed = given[0] if len(given) == 1 and isinstance(given[0], tuple) else given
        dims = [d for d in listed if type(d) is int]
        if sorted(dims) != list(range(len(listed))) or (order and len(order) != len(dims)):
            return None
        order = tuple(order[d] for d in dims) if order else tuple(dims)
    return order


def _shape_of(name: str) -> m.OneOf[m.BaseExpression]:
    """``x.shape`` or ``x.size()`` of the tensor named ``name``."""
    x = m.Name(name)
    return m.Call(func=m.Attribute(value=x, attr=m.Name("size")), args=[]) | \
        m.Attribute(value=x, attr=m.Name("shape"))


def _with_labels(params: Sequence[tuple[str, object, bool]], given: int,
                 candidates: list[list[InputSpec | None]]) -> list[list[InputSpec | None]]:
    """The candidates again with class labels for the arguments whose names say they hold
    them: a required one after the first (``def forward(self, embeddings, labels)``: a
    miner that checks ``labels.ndim == 1``), and the optional one after the required ones
    (``def forward(self, embeddings, labels=None)``: a metric-learning loss needs them
    though its signature lets them be left out). One label of two classes per row of the
    first input."""
    named = [i for i in range(1, given) if _LABELS.fullmatch(params[i][0])]
    optional = given < len(params) and params[given][1] is None and \
        not params[given][2] and _LABELS.fullmatch(params[given][0]) is not None
    labelled: list[list[InputSpec | None]] = []
    for c in candidates:
        first = c[0] if c else None
        if first is None or first.dtype != "float32" or not first.shape or first.listed \
                or first.keyed or len(c) != given:
            continue
        labels = InputSpec((first.shape[0],), "int64", high=2)
        if named and any(c[i] != labels for i in named):
            relabelled = [labels if i in named else spec for i, spec in enumerate(c)]
            if relabelled not in labelled and relabelled not in candidates:
                labelled.append(relabelled)
        if optional:
            with_optional = [labels if i in named else spec for i, spec in enumerate(c)]
            labelled.append([*with_optional, labels])
    return labelled


def _as_signal(required: Sequence[str], candidates: list[list[InputSpec | None]]
               ) -> list[list[InputSpec | None]]:
    """The candidates again with a longer last axis for the first input when its name
    says it is a sound (``def forward(self, waveform)``): ``SIGNAL_LENGTH`` samples, for
    the short-time transforms a few samples are too short for."""
    if not required or not _SIGNAL.fullmatch(required[0]):
        return []
    longer: list[list[InputSpec | None]] = []
    for candidate in candidates:
        spec = candidate[0] if candidate else None
        if spec is None or spec.dtype != "float32" or not 2 <= len(spec.shape) <= 3 or \
                spec.listed or spec.keyed or spec.shape[-1] >= SIGNAL_LENGTH:
            continue
        signal = [replace(spec, shape=(*spec.shape[:-1], SIGNAL_LENGTH)), *candidate[1:]]
        if signal not in longer:
            longer.append(signal)
    return longer


def _widthed(spec: InputSpec | None, width: InputSpec) -> InputSpec:
    """``spec``'s shape with the last size of ``width`` (a second input that a layer of
    another width takes); ``width`` itself when there is no ``spec``."""
    if spec is None or spec.dtype != "float32":
        return width
    return InputSpec((*spec.shape[:-1], width.shape[-1]))


def _batched(inputs: list[InputSpec | None], batch: int) -> list[InputSpec | None]:
    """``inputs`` with ``batch`` samples each (tensors, not the numbers an index takes)."""
    return [replace(s, shape=(batch, *s.shape[1:])) if s is not None and s.shape and
            s.dtype in ("float32", "int64") else s for s in inputs]


def _sized(inputs: list[InputSpec | None], size: tuple[int, int]) -> list[InputSpec | None]:
    """``inputs`` with the height and width of each image-shaped tensor set to ``size``."""
    return [replace(s, shape=(*s.shape[:-2], *size)) if s is not None and s.spatial == 2
            else s for s in inputs]


def _framed(inputs: list[InputSpec | None], frames: int, size: tuple[int, int] | None
            ) -> list[InputSpec | None]:
    """``inputs`` with the frames (the first of three sides) of each video-shaped tensor
    set to ``frames``, and its height and width to ``size`` when given and the video
    stays small (eight frames of 256 x 256)."""
    if size is not None and frames * size[0] * size[1] > 8 * 256 * 256:
        size = None
    return [replace(s, shape=(*s.shape[:-3], frames, *(size or s.shape[-2:])))
            if s is not None and s.spatial == 3 else s for s in inputs]


def _unpermuted(spec: InputSpec | None, order: tuple[int, ...] | None) -> InputSpec | None:
    """The input that ``order`` turns into ``spec``: its sizes put back where they came
    from, all fixed (the trailing sizes are no longer the image's)."""
    if spec is None or order is None or len(order) != len(spec.shape) or spec.listed:
        return spec
    shape = [0] * len(order)
    for i, d in enumerate(order):
        shape[d] = spec.shape[i]
    return replace(spec, shape=tuple(shape), spatial=0)


def _einops_layer_input(call: cst.Call, env: dict[str, object]) -> InputSpec | None:
    """``Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=4, p2=4)`` first in a
    network (a ViT's patch embedding): the image its pattern cuts, ``(2, 3, 32, 32)``."""
    if not call.args or call.args[0].keyword is not None:
        return None
    pattern = evaluate(call.args[0].value, env)
    if not isinstance(pattern, str):
        return None
    sizes = {a.keyword.value: evaluate(a.value, env) for a in call.args[1:]
             if a.keyword is not None}
    found = einops.input_shape(pattern, sizes)
    return InputSpec(found[0], spatial=found[1]) if found is not None else None


def _updated(body: Sequence[cst.BaseStatement], name: str) -> bool:
    """True when a top-level statement of ``body`` updates ``name`` in place
    (``name *= 2``, ``name += 1``)."""
    return any(isinstance(small, cst.AugAssign) and m.matches(small.target, m.Name(name))
               for stmt in body if isinstance(stmt, cst.SimpleStatementLine)
               for small in stmt.body)


def _returned_calls(function: cst.FunctionDef) -> list[cst.Call]:
    """The calls whose result ``function`` returns, in source order: ``return Conv(...)``,
    and ``m = Conv(...)`` ... ``return m`` for a name it returns."""
    calls: list[cst.Call] = []
    for ret in find_all(function.body, m.Return()):
        assert isinstance(ret, cst.Return)
        if isinstance(ret.value, cst.Call):
            calls.append(ret.value)
        elif isinstance(ret.value, cst.Name):
            target = m.AssignTarget(m.Name(ret.value.value))
            for assign in find_all(function.body, m.Assign(targets=[target], value=m.Call())):
                assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
                calls.append(assign.value)
    return calls


# forward parameters that hold a time: first, an ODE function's scalar ``t`` (``forward(t,
# x)``); after the data, one number per sample (a diffusion timestep).
_TIME = re.compile(r"t|tt|time|times|timesteps?|ts|sigmas?|noise_levels?|log_snr",
                   re.IGNORECASE)


def timed(inputs: list[InputSpec | None], names: list[str]) -> list[InputSpec | None]:
    """``inputs`` for the forward parameters ``names``, a time where a name says so."""
    if len(names) < 2 or len(inputs) != len(names):
        return inputs
    if _TIME.fullmatch(names[0]):  # ``forward(t, x)``: the data moves one place on
        return [InputSpec(()), *inputs[:-1]]
    return [inputs[0], *(InputSpec((2,)) if _TIME.fullmatch(n) else spec
                         for n, spec in zip(names[1:], inputs[1:], strict=True))]
