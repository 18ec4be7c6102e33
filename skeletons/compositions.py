"""torch APIs that MindSpore has no form of on the target (``torch.einsum`` on CPU) or
that ask about torch itself (``torch.jit.is_scripting()``), made to run in a Cell.

The API table says "compose it from mindspore.ops primitives"; a starter Cell does that
itself. A query about torch's own machinery becomes the answer eager code gets
(:data:`ANSWERS`); a missing operator becomes a small function of MindSpore primitives,
written into the generated file, that takes torch's arguments (:data:`COMPOSED`). Each is
checked against torch in the tests."""

from __future__ import annotations

# torch calls whose answer in eager code on one device is a constant: the branch they
# guard keeps the eager path (the table's advice: "replace the call by False").
ANSWERS = {
    "torch.jit.is_scripting": "False",
    "torch.jit.is_tracing": "False",
    "torch.onnx.is_in_onnx_export": "False",
    "torch.compiler.is_compiling": "False",
    "torch._dynamo.is_compiling": "False",
    "torch.is_autocast_enabled": "False",
    "torch.cuda.is_available": "False",
    "torch.xpu.is_available": "False",
    "torch.backends.mps.is_available": "False",
}

# torch's numeric constants, as Python literals (the table's advice is ``math.pi``; a
# literal needs no import in the generated file).
CONSTANTS = {"torch.pi": "3.141592653589793", "torch.e": "2.718281828459045",
             "torch.inf": "float('inf')", "torch.nan": "float('nan')",
             # a shape: MindSpore's are tuples (``torch.Size([2, 3])``,
             # ``isinstance(s, torch.Size)``)
             "torch.Size": "tuple"}

# TorchScript markers: eager code ignores them, and so does a Cell (MindSpore compiles
# construct itself). Decorators are dropped; a typing marker leaves the value or type.
SCRIPT_DECORATORS = frozenset({"torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
                               "torch.jit.script", "torch.jit.script_method",
                               "torch.jit.interface", "torch.jit._overload_method"})
SCRIPT_VALUES = {"torch.jit.annotate": 1, "torch.jit.Attribute": 0,  # -> the argument kept
                 # and ``Variable(t)``, a tensor since torch 0.4 (MindSpore differentiates
                 # functions, so requires_grad has nothing to mark)
                 "torch.autograd.Variable": 0, "torch.autograd.variable.Variable": 0}
SCRIPT_TYPES = frozenset({"torch.jit.Final"})  # ``Final[bool]`` -> ``bool``
# TorchScript's spelling of a Python builtin, which eager code runs as the builtin
# (``torch.jit.isinstance(normalized, str)``; a subscripted type such as ``List[int]``
# needs a person, as Python's isinstance refuses it).
SCRIPT_BUILTINS = {"torch.jit.isinstance": "isinstance"}

# torch API -> the function written into the generated file in its place.
COMPOSED = {
    "torch.einsum": "torch_einsum",
    "torch.functional.einsum": "torch_einsum",
    "torch.nn.functional.normalize": "torch_normalize",
    "torch.nn.functional.layer_norm": "torch_layer_norm",
    "torch.nn.functional.batch_norm": "torch_batch_norm",
    "torch.nn.functional.scaled_dot_product_attention": "torch_attention",
    "torch.nn.functional.multi_head_attention_forward": "torch_multi_head_attention_forward",
    "torch.roll": "torch_roll",
    "torch.nn.utils.rnn.pad_sequence": "torch_pad_sequence",
    "torch.finfo": "torch_finfo",
    "torch.iinfo": "torch_iinfo",
    "torch.unflatten": "torch_unflatten",
    "torch.Tensor.unflatten": "torch_unflatten",
    "torch.clamp_min": "torch_clamp_min",
    "torch.Tensor.clamp_min": "torch_clamp_min",
    "torch.clamp_max": "torch_clamp_max",
    "torch.Tensor.clamp_max": "torch_clamp_max",
    "torch.nn.RMSNorm": "TorchRMSNorm",
    "torch.nn.functional.rms_norm": "torch_rms_norm",
    "torch.unique": "torch_unique",
    "torch.nn.functional.fold": "torch_fold",
    "torch.stft": "torch_stft",
    "torch.nn.init.calculate_gain": "torch_calculate_gain",
    "torch.cdist": "torch_cdist",
    "torch.functional.cdist": "torch_cdist",
    "torch.nn.functional.pairwise_distance": "torch_pairwise_distance",
    "torch.pairwise_distance": "torch_pairwise_distance",
    # eager-mode quantization's float modules: what a network does before it is converted
    **{f"torch.{where}.FloatFunctional": "TorchFloatFunctional" for where in (
        "nn.quantized", "ao.nn.quantized", "nn.quantized.modules.functional_modules",
        "ao.nn.quantized.modules.functional_modules")},
    **{f"torch.{where}.{stub}": "TorchQuantStub" for stub in ("QuantStub", "DeQuantStub")
       for where in ("quantization", "ao.quantization", "ao.quantization.stubs",
                     "quantization.stubs")},
    # torch's nested-container helpers (torchvision's transforms flatten their inputs)
    "torch.utils._pytree.tree_flatten": "torch_tree_flatten",
    "torch.utils._pytree.tree_unflatten": "torch_tree_unflatten",
    "torch.utils._pytree.tree_leaves": "torch_tree_leaves",
    "torch.utils._pytree.tree_map": "torch_tree_map",
    "torch.utils._pytree.TreeSpec": "TorchTreeSpec",
    "torch.functional.stft": "torch_stft",
    "torch.nn.functional.conv_transpose2d": "torch_conv_transpose2d",
    **{f"torch.nn.ReplicationPad{d}d": "TorchReplicationPad" for d in (1, 2, 3)},
    **{f"torch.nn.InstanceNorm{d}d": "TorchInstanceNorm" for d in (1, 2, 3)},
    "torch.nn.Unfold": "TorchUnfold",
    "torch.nn.Softplus": "TorchSoftplus",
    "torch.nn.modules.utils._ntuple": "torch_ntuple",
    "torch.nn.utils.weight_norm": "TorchWeightNorm",
    "torch.nn.utils.weight_norm.weight_norm": "TorchWeightNorm",
    # the same reparametrization in its newer spelling (the norm is ``weight.original0``
    # there, ``weight_g`` here: the same value under another parameter name)
    "torch.nn.utils.parametrizations.weight_norm": "TorchWeightNorm",
    "torch.nn.utils.parametrize.register_parametrization": "torch_register_parametrization",
    # MindSpore's initializer module has a private function of the same name, which takes
    # a shape; torch's takes the weight itself
    "torch.nn.init._calculate_fan_in_and_fan_out": "torch_fan_in_and_fan_out",
    **{f"torch.nn.modules.utils._{name}": f"torch_{name}"
       for name in ("single", "pair", "triple", "quadruple")},
}

# torch objects that only say where or how torch computes, held as values: a device
# (``self.device = torch.device("cpu")``, read as ``self.device.type``) and the gradient
# switches (``return torch.inference_mode if new else torch.no_grad``, a decorator
# factory). MindSpore places tensors by context and records gradients only inside what
# mindspore.value_and_grad differentiates, so these stand-ins keep the code running and
# change nothing. They are not compositions: MS101's advice stays the table's, and a
# ``with torch.no_grad():`` block written directly is dropped instead.
STAND_INS = {"torch.device": "TorchDevice",
             **dict.fromkeys(("torch.no_grad", "torch.inference_mode", "torch.enable_grad",
                              "torch.set_grad_enabled", "torch.autograd.no_grad",
                              "torch.autograd.grad_mode.no_grad", "torch.autograd.enable_grad",
                              "torch.autograd.grad_mode.enable_grad"), "TorchGradContext")}

# torch APIs whose MindSpore form needs arguments torch lets be left out or None
# (``ops.batch_norm`` needs running statistics, weight and bias): torch's parameters in
# order. A call that leaves one out, or passes None, uses the composition even though the
# table names a MindSpore form.
NARROWER = {"torch.nn.functional.batch_norm": ("input", "running_mean", "running_var",
                                               "weight", "bias")}

# torch APIs whose MindSpore form the table names but fails on these backends when called
# with torch's arguments: the composition stands in there (``ops.fold``'s CPU kernel takes
# the output size only as a tensor, never as torch's tuple of ints).
NARROWER_ON = {"torch.nn.functional.fold": frozenset({"cpu"}),
               # ``ops.unique`` returns (values, indices), the values not always sorted:
               # ``len(torch.unique(x))`` would be 2 (timm's RegNet asserts its stages)
               "torch.unique": frozenset({"cpu", "gpu"}),
               # on every backend: ``ops.cdist`` takes the norm's order only as a float
               # (``p=2`` fails); ``ops.stft`` names its padding modes in capitals and
               # refuses torch's "reflect" (the default torchaudio's spectrograms pass)
               **{name: frozenset({"cpu", "gpu", "ascend"}) for name in (
                   "torch.cdist", "torch.functional.cdist", "torch.stft",
                   "torch.functional.stft")}}

# torch functions with several forms, one of which MindSpore's function named in the table
# does not have: ``torch.max(a, b)`` is the elementwise maximum (``ops.maximum``), where
# ``ops.max``'s second parameter is an axis. A call whose second argument may be a tensor
# (neither an integer written in the code nor a ``dim`` keyword) takes the composition,
# which chooses the form by what it is given when it runs.
DISPATCHED = {"torch.max": "torch_max", "torch.min": "torch_min"}

# torch functions with a shorter form that leaves out a leading argument, which
# MindSpore's function always takes: name -> (the long form's parameters, the one left
# out, its value). ``torch.randint(10, (2,))`` is ``randint(low=0, high=10, size=(2,))``.
SHORT_FORMS = {"torch.randint": (("low", "high", "size"), "low", "0"),
               "torch.randint_like": (("input", "low", "high"), "low", "0")}

# torch functions whose form with one argument is another function: ``torch.where(mask)``
# is ``torch.nonzero(mask, as_tuple=True)``, the indices of the true entries, one tensor
# per axis (MindSpore's where always takes three arguments, and its nonzero has no
# as_tuple kernel on CPU); ``torch.max(x)`` is the largest value, where ``ops.max(x)``
# gives the value and its index (mint's takes torch's forms).
ONE_ARGUMENT = {"torch.where": "torch_nonzero_tuple", "torch.max": "mint.max",
                "torch.min": "mint.min"}

# The floating point types torch.finfo describes: name, bits, mantissa bits, largest
# exponent, decimal digits; and the integer types of torch.iinfo: name, bits, signed.
_FLOATS = (("float16", 16, 10, 15, 3), ("bfloat16", 16, 7, 127, 2),
           ("float64", 64, 52, 1023, 15), ("float32", 32, 23, 127, 6))
_INTEGERS = (("uint8", 8, False), ("int8", 8, True), ("int16", 16, True),
             ("int32", 32, True), ("int64", 64, True), ("uint16", 16, False),
             ("uint32", 32, False), ("uint64", 64, False))


def _float_info(name: str, bits: int, mantissa: int, exponent: int, digits: int) -> str:
    """The arguments of ``TorchFloatInfo`` for one floating point type."""
    largest = (2.0 - 2.0 ** -mantissa) * 2.0 ** exponent
    return (f"{bits}, {2.0 ** -mantissa!r}, {largest!r}, {2.0 ** (1 - exponent)!r}, "
            f"{10.0 ** -digits!r}, {name!r}")


def _integer_info(name: str, bits: int, signed: bool) -> str:
    """The arguments of ``TorchIntInfo`` for one integer type."""
    # written as powers: GRAPH_MODE reads a literal past int64 (uint64's max) as an error
    # even in a branch not taken
    low, high = (f"-2 ** {bits - 1}", f"2 ** {bits - 1} - 1") if signed else \
        ("0", f"2 ** {bits} - 1")
    return f"{bits}, {low}, {high}, {name!r}"


def _branch(name: str, info: str) -> str:
    """One ``if`` of torch_finfo / torch_iinfo: the info of the dtype called ``name``."""
    return f"    if type == mindspore.{name}:\n        return {info}\n"


_FINFO_BRANCHES = "".join(_branch(name, f"TorchFloatInfo({_float_info(name, *rest)})")
                          for name, *rest in _FLOATS[:-1])
_IINFO_BRANCHES = "".join(_branch(name, f"TorchIntInfo({_integer_info(name, bits, signed)})")
                          for name, bits, signed in _INTEGERS)

SOURCES = {
    **{f"torch_{name}": f'''
def torch_{name}(input, dim=None, keepdim=False, *, other=None):
    """torch.{name} in its three forms: the {name}imum element (no ``dim``), (values,
    indices) along ``dim``, and the elementwise {name}imum with a tensor ``other``, which
    torch also takes as the second argument."""
    if other is None and isinstance(dim, Tensor):
        other = dim
    if other is not None:
        return ops.{name}imum(input, other)
    if dim is None:
        return input.{name}()
    return ops.{name}(input, dim, keepdim)
''' for name in ("max", "min")},
    "TorchGradContext": '''
class TorchGradContext:
    """torch.no_grad / inference_mode / enable_grad / set_grad_enabled used as a value:
    MindSpore records gradients only inside what mindspore.value_and_grad differentiates,
    so as a context manager or a decorator (with or without parentheses) this changes
    nothing."""

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # ``@torch.no_grad`` on a function: the function itself
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, function):
        return function
''',
    "TorchDevice": '''
class TorchDevice:
    """torch.device as the name it holds: MindSpore places every tensor on the device
    chosen once with mindspore.set_device, so a device object here only answers what code
    reads of it (``type``, ``index``, ``str(device)``, ``device == "cpu"``)."""

    def __init__(self, type="cpu", index=None):
        if isinstance(type, TorchDevice):
            type, index = type.type, type.index
        elif isinstance(type, int):
            type, index = "cuda", type
        name, _, number = str(type).partition(":")
        self.type = name
        self.index = int(number) if number else index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type={self.type!r})" if self.index is None else \
            f"device(type={self.type!r}, index={self.index})"

    def __eq__(self, other):
        return str(self) == str(other)

    def __hash__(self):
        return hash(str(self))
''',
    "TorchWeightNorm": '''
class TorchWeightNorm(nn.Cell):
    """torch.nn.utils.weight_norm(module, name, dim): the module's weight is
    weight_g * weight_v / ||weight_v||, the norm taken over every axis but ``dim`` (over all
    of them for dim=None), recomputed on each call from the two parameters, which are what
    trains. A Dense or a Conv2d runs through its functional form with that weight; the
    module's own weight is kept, frozen, and unused."""

    def __init__(self, module, name="weight", dim=0):
        super().__init__()
        self.module = module
        if isinstance(module, nn.Conv1d) and dim is not None and dim % 3 == 2:
            dim = 3  # MindSpore holds a Conv1d's (out, in, k) weight as (out, in, 1, k)
        self.dim = dim
        weight = getattr(module, name)
        self.weight_g = Parameter(self.norm_except_dim(weight))
        self.weight_v = Parameter(weight.copy())
        weight.requires_grad = False

    def norm_except_dim(self, v):
        if self.dim is None:
            return ops.sqrt((v * v).sum())
        axes = tuple(i for i in range(v.ndim) if i != self.dim % v.ndim)
        return ops.sqrt((v * v).sum(axis=axes, keepdims=True))

    def construct(self, x):
        weight = self.weight_v * (self.weight_g / self.norm_except_dim(self.weight_v))
        return torch_layer_with(self.module, x, weight, self.module.bias)
''',
    "torch_layer_with": '''
def torch_layer_with(module, x, weight, bias):
    """A Dense, a Conv1d or a Conv2d run on ``x`` through its functional form with the weight and
    bias given (computed from the layer's own parameters) in place of its own."""
    if isinstance(module, nn.Dense):
        out = ops.dense(x, weight, bias)
        return module.activation(out) if module.activation_flag else out
    if isinstance(module, nn.Conv2d):
        return ops.conv2d(x, weight, bias, module.stride, module.pad_mode, module.padding,
                          module.dilation, module.group)
    if isinstance(module, nn.Conv1d):  # a Conv2d over (batch, channels, 1, length)
        out = module.squeeze(module.conv2d(module.expand_dims(x, 2), weight))
        return out if bias is None else out + bias.reshape(1, -1, 1)
    raise NotImplementedError("msready recomputes the weight of a Dense, a Conv1d or a "
                              "Conv2d only")
''',
    "torch_register_parametrization": '''
class TorchParametrized(nn.Cell):
    """A layer after torch.nn.utils.parametrize.register_parametrization(layer, name, p):
    its ``name`` (weight or bias) reads as p(original) each time, the original, the
    layer's own parameter, being what trains. Another parametrization of the same tensor
    runs after the first, as torch chains them."""

    def __init__(self, module, tensor_name, parametrization):
        super().__init__()
        if isinstance(module, TorchParametrized):
            if module.tensor_name != tensor_name:
                raise NotImplementedError("msready parametrizes one tensor of a layer")
            parametrization = nn.SequentialCell([module.parametrization, parametrization])
            module = module.module
        if tensor_name not in ("weight", "bias"):
            raise NotImplementedError("msready parametrizes a layer's weight or bias")
        self.module = module
        self.tensor_name = tensor_name
        self.parametrization = parametrization

    @property
    def weight(self):
        if self.tensor_name == "weight":
            return self.parametrization(self.module.weight)
        return self.module.weight

    @property
    def bias(self):
        if self.tensor_name == "bias":
            return self.parametrization(self.module.bias)
        return self.module.bias

    def construct(self, x):
        return torch_layer_with(self.module, x, self.weight, self.bias)


def torch_register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """torch.nn.utils.parametrize.register_parametrization: the layer wrapped so that its
    tensor is computed by ``parametrization`` (the Cell assigns the result to the name that
    held the layer)."""
    return TorchParametrized(module, tensor_name, parametrization)
''',
    "torch_fan_in_and_fan_out": '''
def torch_fan_in_and_fan_out(tensor):
    """torch.nn.init._calculate_fan_in_and_fan_out: a weight's input and output feature
    maps, each times its receptive field, as Python ints."""
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer "
                         "than 2 dimensions")
    receptive = 1
    for size in shape[2:]:
        receptive *= size
    return shape[1] * receptive, shape[0] * receptive
''',
    "torch_ntuple": '''
def torch_ntuple(n):
    """torch.nn.modules.utils._ntuple: a function making ``(x,) * n`` of a single value and
    a tuple of a sequence."""
    def parse(x):
        return tuple(x) if isinstance(x, (list, tuple)) else (x,) * n
    return parse
''',
    **{f"torch_{name}": f"""
def torch_{name}(x):
    \"\"\"torch.nn.modules.utils._{name}: see torch_ntuple.\"\"\"
    return torch_ntuple({n})(x)
""" for n, name in enumerate(("single", "pair", "triple", "quadruple"), start=1)},
    "torch_assign_": '''
def torch_assign_(tensor, value):
    """``tensor`` takes ``value`` in place, as torch's in-place methods do: a Parameter
    through set_data, a Tensor through assign_value (no in-place kernel is needed)."""
    value = value if isinstance(value, Tensor) else Tensor(value)
    value = ops.broadcast_to(value.astype(tensor.dtype), tensor.shape)
    if isinstance(tensor, Parameter):
        tensor.set_data(value)
    else:
        tensor.assign_value(value)
    return tensor
''',
    "torch_uniform_": '''
def torch_uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Tensor.uniform_: ``tensor`` filled in place from U(a, b)."""
    return torch_assign_(tensor, torch_uniform(tensor, a, b))
''',
    "torch_uniform": '''
def torch_uniform(tensor, a=0.0, b=1.0, generator=None):
    """What Tensor.uniform_ writes: a tensor of ``tensor``'s shape and type from U(a, b)."""
    return (ops.rand(tensor.shape) * (b - a) + a).astype(tensor.dtype)
''',
    "torch_normal_": '''
def torch_normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Tensor.normal_: ``tensor`` filled in place from N(mean, std^2)."""
    return torch_assign_(tensor, torch_normal(tensor, mean, std))
''',
    "torch_normal": '''
def torch_normal(tensor, mean=0.0, std=1.0, generator=None):
    """What Tensor.normal_ writes: a tensor of ``tensor``'s shape and type from
    N(mean, std^2)."""
    return (ops.randn(tensor.shape) * std + mean).astype(tensor.dtype)
''',
    "torch_einsum": '''
def torch_einsum(equation, *operands):
    """torch.einsum from MindSpore primitives: every operand's axes are laid out on one
    order of letters, multiplied with broadcasting, and summed over the letters the
    output leaves out ("..." spans the leading axes, aligned from the right)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation]
    widths = [op.ndim - len(t.replace("...", "")) if "..." in t else 0
              for t, op in zip(terms, operands)]
    wide = max(widths)
    terms = [t.replace("...", "".join(spare[wide - w:wide])) for t, w in zip(terms, widths)]
    if not arrow:
        counts = {c: "".join(terms).count(c) for c in "".join(terms)}
        output = "".join(spare[:wide]) + "".join(sorted(
            c for c, n in counts.items() if n == 1 and c not in spare))
    output = output.replace("...", "".join(spare[:wide]))
    letters = list(dict.fromkeys(output + "".join(terms)))
    product = None
    for term, op in zip(terms, operands):
        if len(set(term)) != len(term):
            raise NotImplementedError(f"einsum with a repeated index: {equation}")
        own = [c for c in letters if c in term]  # its letters in that order
        op = ops.transpose(op, tuple(term.index(c) for c in own))
        shape = [op.shape[own.index(c)] if c in own else 1 for c in letters]
        op = op.reshape(tuple(shape))
        product = op if product is None else product * op
    summed = tuple(i for i, c in enumerate(letters) if c not in output)
    if summed:
        product = product.sum(axis=summed)
    return product
''',
    "torch_normalize": '''
def torch_normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """torch.nn.functional.normalize: ``input`` over its ``p``-norm along ``dim``."""
    norm = (ops.abs(input) ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
    return input / ops.clamp(norm, min=eps)
''',
    "torch_layer_norm": '''
def torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm over the trailing ``normalized_shape`` axes."""
    size = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    axes = tuple(range(input.ndim - size, input.ndim))
    mean = input.mean(axis=axes, keep_dims=True)
    var = ((input - mean) ** 2).mean(axis=axes, keep_dims=True)
    out = (input - mean) / ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out
''',
    "torch_batch_norm": '''
def torch_batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
                     momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm over every axis but the channels (axis 1). Training
    normalizes by the batch's statistics and moves the running ones, when given, towards
    them; otherwise the running statistics normalize. Weight and bias may be None."""
    shape = (1, -1) + (1,) * (input.ndim - 2)
    if training:
        axes = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(axis=axes, keep_dims=True)
        var = ((input - mean) ** 2).mean(axis=axes, keep_dims=True)
        if running_mean is not None and running_var is not None:
            count = input.size // input.shape[1]
            torch_assign_(running_mean, running_mean * (1 - momentum)
                          + mean.reshape(-1) * momentum)
            torch_assign_(running_var, running_var * (1 - momentum)
                          + var.reshape(-1) * (momentum * count / max(count - 1, 1)))
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) / ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out
''',
    "torch_attention": '''
def torch_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                    scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention: softmax(q k^T * scale + mask) v,
    a boolean mask keeping where it is True, ``is_causal`` keeping the lower triangle."""
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        key = ops.repeat_interleave(key, query.shape[-3] // key.shape[-3], -3)
        value = ops.repeat_interleave(value, query.shape[-3] // value.shape[-3], -3)
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    scores = ops.matmul(query, key.swapaxes(-2, -1)) * scale
    if is_causal:
        keep = ops.tril(ops.ones((query.shape[-2], key.shape[-2]), mindspore.int32)) > 0
        scores = scores.masked_fill(ops.logical_not(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == mindspore.bool_:
            scores = scores.masked_fill(ops.logical_not(attn_mask), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = ops.softmax(scores, axis=-1)
    if dropout_p > 0.0:
        weights = ops.dropout(weights, p=dropout_p)
    return ops.matmul(weights, value)
''',
    "torch_multi_head_attention_forward": '''
def torch_multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
        bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
        training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
        use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
        v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
        is_causal=False):
    """torch.nn.functional.multi_head_attention_forward on (length, batch, width) inputs:
    the query, key and value projected (one packed weight, or three with
    ``use_separate_proj_weight``), split into heads, softmax(q k^T / sqrt(head width) +
    masks) v, the heads joined and projected out; with ``need_weights``, the attention
    weights too (averaged over the heads by default). A boolean mask hides where it is
    True, as torch's does. Learned key/value biases, zero attention and static keys are
    not composed."""
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None \
            or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: msready composes it "
                                  "without bias_k / bias_v, add_zero_attn or static keys")
    batched = query.ndim == 3
    if not batched:
        query, key, value = query[:, None], key[:, None], value[:, None]
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask[None]
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    head_dim = embed_dim // num_heads
    if use_separate_proj_weight:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        w_q, w_k, w_v = ops.split(in_proj_weight, embed_dim, 0)
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = ops.split(in_proj_bias, embed_dim, 0)
    q = ops.dense(query, w_q, b_q)
    k = ops.dense(key, w_k, b_k)
    v = ops.dense(value, w_v, b_v)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).swapaxes(0, 1)
    k = k.reshape(src_len, bsz * num_heads, head_dim).swapaxes(0, 1)
    v = v.reshape(src_len, bsz * num_heads, head_dim).swapaxes(0, 1)
    scores = ops.matmul(q, k.swapaxes(-2, -1)) * head_dim ** -0.5
    if is_causal and attn_mask is None:
        keep = ops.tril(ops.ones((tgt_len, src_len), mindspore.int32)) > 0
        scores = scores.masked_fill(ops.logical_not(keep), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == mindspore.bool_:
            scores = scores.masked_fill(attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    if key_padding_mask is not None:
        hidden = key_padding_mask.reshape(bsz, 1, 1, src_len)
        if hidden.dtype != mindspore.bool_:
            hidden = hidden != 0
        scores = scores.reshape(bsz, num_heads, tgt_len, src_len).masked_fill(
            hidden, float("-inf")).reshape(bsz * num_heads, tgt_len, src_len)
    weights = ops.softmax(scores, axis=-1)
    if training and dropout_p > 0.0:
        weights = ops.dropout(weights, p=dropout_p)
    out = ops.matmul(weights, v).swapaxes(0, 1).reshape(tgt_len, bsz, embed_dim)
    out = ops.dense(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out[:, 0]
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(axis=1)
    return out, weights if batched else weights[0]
''',
    "torch_conv_transpose2d": '''
def torch_conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                           groups=1, dilation=1):
    """torch.nn.functional.conv_transpose2d through MindSpore's Conv2DTranspose primitive;
    ``weight`` in torch's layout (in, out / groups, kh, kw), the output size as torch's."""
    # one statement per argument: GRAPH_MODE's map takes no local function
    stride = (stride, stride) if isinstance(stride, int) else tuple(stride)
    padding = (padding, padding) if isinstance(padding, int) else tuple(padding)
    output_padding = (output_padding, output_padding) if isinstance(output_padding, int) \
        else tuple(output_padding)
    dilation = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
    n, _, h, w = input.shape
    cin, cout, kh, kw = weight.shape
    size = (n, cout * groups,
            (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1,
            (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1)
    transpose = ops.Conv2DTranspose(out_channel=cin, kernel_size=(kh, kw), pad_mode="pad",
                                    pad=(padding[0], padding[0], padding[1], padding[1]),
                                    stride=stride, dilation=dilation, group=groups)
    out = transpose(input, weight, size)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)
''',
    "TorchReplicationPad": '''
class TorchReplicationPad(nn.Cell):
    """torch.nn.ReplicationPad1d/2d/3d: the border values repeated outwards; ``padding``
    an int for every side or (left, right, top, bottom, ...) as torch orders it."""

    def __init__(self, padding):
        super().__init__()
        self.padding = padding if isinstance(padding, int) else tuple(padding)

    def construct(self, x):
        sides = (self.padding,) * (2 * (x.ndim - 2)) if isinstance(self.padding, int) \
            else self.padding
        return ops.pad(x, sides, mode="replicate")
''',
    "torch_interpolate": '''
def torch_interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                      recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate with a scale factor: MindSpore's ops.interpolate
    takes none for a 4-D input, so the output size is computed as torch does (each
    spatial size times its factor, rounded down)."""
    if size is None and scale_factor is not None:
        spatial = input.shape[2:]
        scales = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) \
            else (scale_factor,) * len(spatial)
        size = tuple(int(d * s) for d, s in zip(spatial, scales))
    return ops.interpolate(input, size=size, mode=mode, align_corners=align_corners)
''',
    "TorchUpsample": '''
class TorchUpsample(nn.Cell):
    """torch.nn.Upsample with a scale factor, through torch_interpolate."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners

    def construct(self, x):
        return torch_interpolate(x, self.size, self.scale_factor, self.mode,
                                 self.align_corners)
''',
    "TorchUnfold": '''
class TorchUnfold(nn.Cell):
    """torch.nn.Unfold: sliding blocks of a (N, C, H, W) input as columns, through
    ops.unfold (the functional form, which MindSpore has on this target)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def construct(self, x):
        return ops.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)
''',
    "TorchSoftplus": '''
class TorchSoftplus(nn.Cell):
    """torch.nn.Softplus: ops.softplus with torch's ``beta`` and ``threshold`` (MindSpore
    has the function on this target, not the layer)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def construct(self, x):
        return ops.softplus(x, self.beta, self.threshold)
''',
    "TorchRMSNorm": '''
class TorchRMSNorm(nn.Cell):
    """torch.nn.RMSNorm: the last ``len(normalized_shape)`` axes divided by their root mean
    square, times a weight of ones when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \\
            tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.weight = Parameter(ops.ones(shape, mindspore.float32), name="weight") \\
            if elementwise_affine else None

    def construct(self, x):
        return torch_rms_norm(x, self.normalized_shape, self.weight, self.eps)
''',
    "torch_rms_norm": '''
def torch_rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.nn.functional.rms_norm: the last ``len(normalized_shape)`` axes divided by
    their root mean square (plus ``eps``: by default the input type's machine epsilon),
    times ``weight``."""
    count = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    axes = tuple(range(input.ndim - count, input.ndim))
    if eps is None:
        eps = 9.765625e-04 if input.dtype == mindspore.float16 else 1.1920928955078125e-07
    out = input * ops.rsqrt((input * input).mean(axis=axes, keep_dims=True) + eps)
    return out if weight is None else out * weight
''',
    "TorchInstanceNorm": '''
class TorchInstanceNorm(nn.Cell):
    """torch.nn.InstanceNorm1d/2d/3d: each sample's channels normalised over their own
    spatial axes, scaled and shifted when ``affine`` (torch's default: not, and without
    running statistics)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(ops.ones(num_features, mindspore.float32), name="weight")
            self.bias = Parameter(ops.zeros(num_features, mindspore.float32), name="bias")

    def construct(self, x):
        axes = tuple(range(2, x.ndim))
        mean = x.mean(axis=axes, keep_dims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keep_dims=True)
        out = (x - mean) / ops.sqrt(var + self.eps)
        if self.affine:
            shape = (1, -1) + (1,) * (x.ndim - 2)
            out = out * self.weight.reshape(shape) + self.bias.reshape(shape)
        return out
''',
    "torch_tensor_unfold": '''
def torch_tensor_unfold(input, dimension, size, step):
    """torch.Tensor.unfold: every window of ``size`` along ``dimension``, ``step`` apart,
    the windows along that axis and each window's values on a new last axis (MindSpore's
    ``Tensor.unfold`` is im2col, another operation)."""
    dimension = dimension % input.ndim
    windows = [input.narrow(dimension, i, size)
               for i in range(0, input.shape[dimension] - size + 1, step)]
    return ops.movedim(ops.stack(windows, axis=dimension), dimension + 1, -1)
''',
    "torch_fold": '''
def torch_fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold through ops.fold, whose CPU kernel takes the output size
    as a tensor (a tuple of ints fails there)."""
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    return ops.fold(input, mindspore.tensor(size, mindspore.int32), kernel_size, dilation,
                    padding, stride)
''',
    "torch_unique": '''
def torch_unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """torch.unique over the whole tensor: its distinct values in ascending order and, when
    asked, where each element's value is among them and how often each occurs."""
    if dim is not None:
        raise NotImplementedError("unique(dim=...): msready composes it for the whole tensor")
    values, inverse = ops.unique(input.reshape(-1))
    order = ops.argsort(values)
    values = values[order]
    inverse = ops.argsort(order)[inverse].astype(mindspore.int64)
    out = [values]
    if return_inverse:
        out.append(inverse.reshape(input.shape))
    if return_counts:
        found = inverse[None, :] == ops.arange(values.shape[0], dtype=mindspore.int64)[:, None]
        out.append(found.astype(mindspore.int64).sum(axis=1))
    return out[0] if len(out) == 1 else tuple(out)
''',
    "torch_unflatten": '''
def torch_unflatten(input, dim, sizes):
    """torch.unflatten: axis ``dim`` split into ``sizes`` (one of them may be -1)."""
    dim = dim % input.ndim
    return input.reshape(input.shape[:dim] + tuple(sizes) + input.shape[dim + 1:])
''',
    **{f"torch_clamp_{side}": f'''
def torch_clamp_{side}(input, {side}):
    """torch.clamp_{side}: torch.clamp with only its {side}imum."""
    return ops.clamp(input, {side}={side})
''' for side in ("min", "max")},
    "torch_finfo": f'''
class TorchFloatInfo:
    """What torch.finfo tells of a floating point type: its bits, ``eps`` (the step after
    1.0), ``max`` / ``min`` (the largest finite values), ``tiny`` / ``smallest_normal`` (the
    smallest positive normal value), ``resolution`` and the type's name."""

    def __init__(self, bits, eps, max, tiny, resolution, dtype):
        self.bits = bits
        self.eps = eps
        self.max = max
        self.min = -max
        self.tiny = tiny
        self.smallest_normal = tiny
        self.resolution = resolution
        self.dtype = dtype


def torch_finfo(type=None):
    """torch.finfo of a MindSpore floating point dtype (float32, torch's default, when none
    is given); constants, so it also compiles in GRAPH_MODE."""
{_FINFO_BRANCHES}    if type is None or type == mindspore.float32:
        return TorchFloatInfo({_float_info(*_FLOATS[-1])})
    raise TypeError("torch.finfo takes a floating point dtype")
''',
    "torch_iinfo": f'''
class TorchIntInfo:
    """What torch.iinfo tells of an integer type: its bits, ``min``, ``max`` and name."""

    def __init__(self, bits, min, max, dtype):
        self.bits = bits
        self.min = min
        self.max = max
        self.dtype = dtype


def torch_iinfo(type):
    """torch.iinfo of a MindSpore integer dtype; constants, so it also compiles in
    GRAPH_MODE."""
{_IINFO_BRANCHES}    raise TypeError("torch.iinfo takes an integer dtype")
''',
    "torch_pad_sequence": '''
def torch_pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """torch.nn.utils.rnn.pad_sequence: tensors of different lengths (their first axis)
    padded with ``padding_value`` to the longest and stacked, along a new first axis with
    ``batch_first``, else a new second one."""
    longest = max(sequence.shape[0] for sequence in sequences)
    padded = []
    for sequence in sequences:
        short = longest - sequence.shape[0]
        ends = (0, short) if padding_side == "right" else (short, 0)
        padded.append(ops.pad(sequence, (0, 0) * (sequence.ndim - 1) + ends,
                              value=padding_value))
    return ops.stack(padded, 0 if batch_first else 1)
''',
    "TorchFloatFunctional": '''
class TorchFloatFunctional(nn.Cell):
    """torch's FloatFunctional before quantization: each method is the plain operation
    (torch puts an observer after it, which only records ranges)."""

    def add(self, x, y):
        return x + y

    def add_scalar(self, x, y):
        return x + y

    def mul(self, x, y):
        return x * y

    def mul_scalar(self, x, y):
        return x * y

    def matmul(self, x, y):
        return ops.matmul(x, y)

    def cat(self, x, dim=0):
        return ops.cat(tuple(x), dim)

    def add_relu(self, x, y):
        return ops.relu(x + y)

    def construct(self, x):
        raise RuntimeError("FloatFunctional is not meant to be called; use its methods")
''',
    "TorchQuantStub": '''
class TorchQuantStub(nn.Cell):
    """torch's QuantStub / DeQuantStub before quantization: the input as it is (they mark
    where a converted network quantizes and dequantizes)."""

    def __init__(self, qconfig=None):
        super().__init__()

    def construct(self, x):
        return x
''',
    "TorchTreeSpec": '''
class TorchTreeSpec:
    """torch.utils._pytree's TreeSpec: how a nest of lists, tuples (named ones too) and
    dictionaries holds its leaves (anything else, None and tensors included, is a leaf)."""

    def __init__(self, rebuild=None, children=()):
        self.rebuild = rebuild  # parts -> the container; None for a leaf
        self.children = list(children)
        self.num_leaves = 1 if rebuild is None else sum(c.num_leaves for c in self.children)

    def is_leaf(self):
        return self.rebuild is None
''',
    "torch_tree_flatten": '''
def torch_tree_flatten(tree, is_leaf=None):
    """torch.utils._pytree.tree_flatten: the leaves depth first (a dictionary's in the
    order of its keys) and the TorchTreeSpec that torch_tree_unflatten rebuilds from."""
    if (is_leaf is not None and is_leaf(tree)) or not isinstance(tree, (list, tuple, dict)):
        return [tree], TorchTreeSpec()
    if isinstance(tree, dict):
        keys = list(tree)
        values = [tree[key] for key in keys]

        def rebuild(parts, tree=tree, keys=keys):
            new = tree.copy()  # the same kind of dictionary (OrderedDict, defaultdict)
            new.clear()
            new.update(zip(keys, parts))
            return new
    elif hasattr(type(tree), "_fields"):  # a named tuple
        values = list(tree)

        def rebuild(parts, kind=type(tree)):
            return kind(*parts)
    else:
        values = list(tree)

        def rebuild(parts, kind=type(tree)):
            return kind(parts)
    leaves, children = [], []
    for value in values:
        found, spec = torch_tree_flatten(value, is_leaf)
        leaves += found
        children.append(spec)
    return leaves, TorchTreeSpec(rebuild, children)
''',
    "torch_tree_unflatten": '''
def torch_tree_unflatten(leaves, treespec):
    """torch.utils._pytree.tree_unflatten: the nest ``treespec`` describes, holding
    ``leaves`` in order."""
    leaves = list(leaves)

    def build(spec, at):
        if spec.rebuild is None:
            return leaves[at], at + 1
        parts = []
        for child in spec.children:
            part, at = build(child, at)
            parts.append(part)
        return spec.rebuild(parts), at

    return build(treespec, 0)[0]
''',
    "torch_tree_leaves": '''
def torch_tree_leaves(tree, is_leaf=None):
    """torch.utils._pytree.tree_leaves: the leaves of torch_tree_flatten."""
    return torch_tree_flatten(tree, is_leaf)[0]
''',
    "torch_tree_map": '''
def torch_tree_map(func, tree, *rests, is_leaf=None):
    """torch.utils._pytree.tree_map: the same nest with ``func`` of each leaf (and of the
    leaves at the same places in ``rests``)."""
    leaves, spec = torch_tree_flatten(tree, is_leaf)
    others = [torch_tree_flatten(rest, is_leaf)[0] for rest in rests]
    return torch_tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)
''',
    "torch_fill_diagonal_": '''
def torch_fill_diagonal_(input, fill_value, wrap=False):
    """Tensor.fill_diagonal_ of a matrix: ``fill_value`` on the main diagonal (for a tall
    matrix with ``wrap``, again every columns + 1 rows, as torch does), in the tensor's
    own dtype; returned, as torch returns the tensor it changed."""
    rows, cols = input.shape
    offset = ops.arange(rows).reshape(-1, 1) - ops.arange(cols).reshape(1, -1)
    diagonal = offset == 0
    if wrap and rows > cols:
        diagonal = ops.logical_and(offset >= 0, offset % (cols + 1) == 0)
    return ops.where(diagonal, mindspore.tensor(fill_value, input.dtype), input)
''',
    "torch_nonzero_tuple": '''
def torch_nonzero_tuple(input):
    """torch.nonzero(input, as_tuple=True), torch.where(input): the indices of the
    nonzero entries, one tensor per axis."""
    indices = ops.nonzero(input)
    return tuple(indices[:, axis] for axis in range(input.ndim))
''',
    "torch_cdist": '''
def torch_cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist on ops.cdist, which takes the norm's order only as a float and has no
    compute_mode (how torch computes the Euclidean distance, not what)."""
    return ops.cdist(x1, x2, float(p))
''',
    "torch_pairwise_distance": '''
def torch_pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """torch.nn.functional.pairwise_distance: the p-norm of ``x1 - x2 + eps`` over the
    last axis (MindSpore has no such function)."""
    return ops.norm(x1 - x2 + eps, float(p), dim=-1, keepdim=keepdim)
''',
    "torch_calculate_gain": '''
def torch_calculate_gain(nonlinearity, param=None):
    """torch.nn.init.calculate_gain: the scale an initializer gives weights followed by
    ``nonlinearity`` (torch's table of values)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return 2.0 ** 0.5
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return (2.0 / (1 + slope ** 2)) ** 0.5
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
''',
    "torch_stft": '''
def torch_stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
               pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """torch.stft on ops.stft, which takes the same arguments but names the padding
    modes in capitals ("REFLECT", "CONSTANT"; torch's "replicate" and "circular" have no
    counterpart there and are refused by ops.stft)."""
    mode = {"reflect": "REFLECT", "constant": "CONSTANT"}.get(pad_mode, pad_mode)
    return ops.stft(input, n_fft, hop_length, win_length, window, center, mode, normalized,
                    onesided, return_complex)
''',
    "torch_roll": '''
def torch_roll(input, shifts, dims=None):
    """torch.roll: elements shifted along ``dims``, those past the end coming back first;
    without ``dims`` the flattened tensor is rolled."""
    if dims is None:
        return torch_roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    shifts = tuple(shifts) if isinstance(shifts, (list, tuple)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    for shift, dim in zip(shifts, dims):
        size = input.shape[dim]
        shift = shift % size
        if shift:
            input = ops.cat((input.narrow(dim, size - shift, shift),
                             input.narrow(dim, 0, size - shift)), dim)
    return input
''',
    "einops_pack": '''
def einops_pack(tensors, pattern):
    """einops.pack: the axes at ``*`` of every tensor flattened into one and the tensors
    joined along it; also the shapes of those axes, for einops_unpack."""
    names = pattern.split()
    before, after = names.index("*"), len(names) - names.index("*") - 1
    shapes, flat = [], []
    for t in tensors:
        shape = tuple(t.shape)
        middle = shape[before:len(shape) - after]
        size = 1
        for d in middle:
            size *= d
        shapes.append(middle)
        flat.append(t.reshape(shape[:before] + (size,) + shape[len(shape) - after:]))
    return ops.cat(flat, before), shapes
''',
    "EinopsPatternLayer": '''
class EinopsPatternLayer(nn.Cell):
    """An einops layer (Rearrange / Reduce / Repeat) whose pattern is built when the
    network is (``Rearrange(f'b c {dims} -> ...', **sizes)``): the pattern is read here,
    once; the input's shape when it runs."""

    def __init__(self, pattern, reduction=None, **sizes):
        super().__init__()
        left, right = pattern.split("->")
        self.left = einops_groups(left)
        self.right = einops_groups(right)
        self.reduction = reduction
        self.sizes = sizes

    def construct(self, x):
        return einops_apply(x, self.left, self.right, self.reduction, self.sizes)
''',
    "einops_pattern": '''
def einops_pattern(x, pattern, reduction=None, **sizes):
    """einops.rearrange / reduce / repeat with a pattern built when the code runs (or one
    einops refuses, which raises here as it does there)."""
    if pattern.count("->") != 1:
        raise ValueError(f"einops pattern {pattern!r} has no single '->'")
    left, right = pattern.split("->")
    return einops_apply(x, einops_groups(left), einops_groups(right), reduction, sizes)
''',
    "einops_groups": '''
def einops_groups(text):
    """One side of an einops pattern as its groups of axis names: ``'b (h p) ...'`` ->
    ``(('b',), ('h', 'p'), ('...',))``; a unit axis (``1``, ``()``) is an empty group;
    an ellipsis inside a group (its axes merged) is ``'(...)'``."""
    groups, group = [], None
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            group = []
        elif token == ")":
            groups.append(tuple(group))
            group = None
        elif token != "1" and group is not None:  # ``(...)``: its axes merged
            group.append("(...)" if token == "..." else token)
        elif group is None:
            groups.append(() if token == "1" else (token,))
    return tuple(groups)
''',
    "einops_expand": '''
def einops_expand(groups, ell):
    """Groups with the ellipsis replaced by the names ``ell`` of the axes it stands for:
    one group each, or inside a group (``(...)``) merged into it."""
    out = ()
    for group in groups:
        if group == ("...",):
            for name in ell:
                out += ((name,),)
        else:
            names = ()
            for name in group:
                names += ell if name == "(...)" else (name,)
            out += (names,)
    return out
''',
    "einops_apply": '''
def einops_apply(x, left, right, reduction=None, sizes=None):
    """einops.rearrange / reduce / repeat of ``x`` by a pattern's groups (einops_groups):
    the grouped axes split, the axes the right side lacks reduced, the others reordered,
    the new ones repeated to their sizes, and the right side's groups merged."""
    shape = x.shape
    ell = ()  # names for the axes an ellipsis stands for
    for k in range(len(shape) - len(left) + 1):
        ell += ("..." + str(k),)
    left, right = einops_expand(left, ell), einops_expand(right, ell)
    known = dict(sizes or {})
    elementary = ()
    for group, size in zip(left, shape):
        missing = tuple(n for n in group if n not in known)
        if len(group) == 1:
            known[group[0]] = size
        elif missing:
            other = 1
            for n in group:
                if n in known:
                    other *= known[n]
            known[missing[0]] = size // other
        elementary += group
    x = x.reshape(tuple(known[n] for n in elementary))
    names = ()
    for group in right:
        names += group
    gone = tuple(i for i, n in enumerate(elementary) if n not in names)
    if gone:
        if reduction == "mean":
            x = x.mean(gone)
        elif reduction == "sum":
            x = x.sum(gone)
        elif reduction == "max":
            x = x.amax(gone)
        elif reduction == "min":
            x = x.amin(gone)
        else:
            x = x.prod(gone)
        elementary = tuple(n for n in elementary if n in names)
    kept = tuple(n for n in names if n in elementary)
    x = x.transpose(tuple(elementary.index(n) for n in kept))
    new = tuple(n for n in names if n not in elementary)
    if new:
        x = x.reshape(tuple(1 if n in new else known[n] for n in names))
        x = ops.broadcast_to(x, tuple(known[n] if n in new else -1 for n in names))
    merged = ()
    for group in right:
        size = 1
        for n in group:
            size *= known[n]
        merged += (size,)
    return x.reshape(merged)
''',
    "einops_unpack": '''
def einops_unpack(tensor, shapes, pattern):
    """einops.unpack: ``tensor`` split along the ``*`` axis into the pieces einops_pack
    joined, each with the shape of its axes restored; sliced, so a piece with no values
    (an empty table of tokens) comes back empty (``narrow`` takes no zero length)."""
    before = pattern.split().index("*")
    shape = tuple(tensor.shape)
    out, start = [], 0
    for middle in shapes:
        size = 1
        for d in middle:
            size *= d
        piece = tensor[(slice(None),) * before + (slice(start, start + size),)]
        out.append(piece.reshape(shape[:before] + tuple(middle) + shape[before + 1:]))
        start += size
    return out
''',
}
