"""The input a torch layer accepts, from its constructor arguments: the first layer of a
Module says what the Module can be fed (``in_channels`` of a Conv, ``in_features`` of a
Linear, integer indices below ``num_embeddings`` for an Embedding, ...)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One input tensor: shape, dtype (``float32`` or ``int64``; ``index`` for a Python
    int, ``flag`` for a Python bool) and, for indices, the bound."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    high: int = 0
    spatial: int = 0  # trailing image / signal dimensions, whose size is a guess
    listed: int = 0  # fed as a list of this many such tensors (a pyramid's feature maps)
    # fed as a dictionary of such tensors by these names, each level half the size of the
    # one before (a pyramid's feature maps by name: ``features["p3"]``)
    keyed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """The spec as a Cell job carries it."""
        return {"shape": list(self.shape), "dtype": self.dtype, "high": self.high,
                "spatial": self.spatial, "listed": self.listed, "keyed": list(self.keyed)}


# A forward argument that indexes (``self.running_mean[step]``): the Python int 0.
INDEX = InputSpec((), "index")
# A forward argument only tested for truth (``if target_is_real:``): the Python True.
FLAG = InputSpec((), "flag")


def size_int(first: InputSpec | None) -> InputSpec:
    """A forward argument annotated ``int`` that does not index (``target_height: int``):
    a Python int, the side of the first input's image or signal when it has one (the
    size it is resized to, or compared with), else the width."""
    side = first.shape[-1] if first is not None and first.spatial else 16
    return InputSpec((), "size", high=side)


def specs_json(specs: list[InputSpec | None]) -> list[dict[str, object] | None]:
    """A job's inputs: one spec per forward argument, None where nothing is passed."""
    return [s.to_json() if s is not None else None for s in specs]


ORDERS = {
    "Conv1d": ("in_channels",), "Conv2d": ("in_channels",), "Conv3d": ("in_channels",),
    "ConvTranspose1d": ("in_channels",), "ConvTranspose2d": ("in_channels",),
    "ConvTranspose3d": ("in_channels",), "Linear": ("in_features",),
    "Embedding": ("num_embeddings",), "LSTM": ("input_size",), "GRU": ("input_size",),
    "RNN": ("input_size",), "MultiheadAttention": ("embed_dim",),
    "LayerNorm": ("normalized_shape",), "BatchNorm1d": ("num_features",),
    "BatchNorm2d": ("num_features",), "BatchNorm3d": ("num_features",),
    "GroupNorm": ("num_groups", "num_channels"), "TransformerEncoderLayer": ("d_model",),
}
# The spatial size given to each layer family, after (batch, channels).
SPATIAL = {"1d": (32,), "2d": (16, 16), "3d": (4, 4, 4)}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def layer_input(torch_name: str, values: dict[str, object]) -> InputSpec | None:
    """The input a torch layer accepts, from its (evaluated) constructor arguments."""
    layer = torch_name.rsplit(".", 1)[-1]
    if not torch_name.startswith("torch.nn."):
        return None
    suffix = layer[-2:].lower()
    seq_first = values.get("batch_first") is not True

    def sequence(width: int) -> InputSpec:
        return InputSpec((8, 2, width) if seq_first else (2, 8, width))

    if layer.startswith(("Conv", "ConvTranspose")) and (c := _int(values.get("in_channels"))):
        size = SPATIAL.get(suffix, (16, 16))
        return InputSpec((2, c, *size), spatial=len(size))
    if layer == "Linear" and (c := _int(values.get("in_features"))):
        return InputSpec((2, c))
    if layer == "Embedding" and (c := _int(values.get("num_embeddings"))):
        return InputSpec((2, 8), "int64", c)
    if layer in ("LSTM", "GRU", "RNN") and (c := _int(values.get("input_size"))):
        return sequence(c)
    if layer in ("MultiheadAttention", "TransformerEncoderLayer") and (
            c := _int(values.get("embed_dim", values.get("d_model")))):
        return sequence(c)
    if layer == "LayerNorm":
        shape = values.get("normalized_shape")
        if _int(shape):
            return InputSpec((2, 8, shape))  # type: ignore[arg-type]
        if isinstance(shape, tuple) and all(_int(s) for s in shape):
            return InputSpec((2, *shape))
    if layer.startswith("BatchNorm") and (c := _int(values.get("num_features"))):
        if suffix == "1d":
            return InputSpec((2, c))
        return InputSpec((2, c, *SPATIAL[suffix]), spatial=len(SPATIAL[suffix]))
    if layer == "GroupNorm" and (c := _int(values.get("num_channels"))):
        return InputSpec((2, c, 16, 16), spatial=2)
    return None


# Inputs tried when no layer says what a Module takes, in order: features, a (batch,
# tokens, width) sequence, an image, a feature map, token indices, a signal, and one
# number per sample (a diffusion timestep). The width is the one synthesized arguments
# use (:data:`msready.skeletons.arguments.WIDTH`).
_GUESSES = (InputSpec((2, 16)), InputSpec((2, 8, 16)),
            InputSpec((2, 3, 32, 32), spatial=2), InputSpec((2, 16, 16, 16), spatial=2),
            InputSpec((2, 8), "int64", 32), InputSpec((2, 16, 32), spatial=1),
            InputSpec((2,)))


_FEATURES = _GUESSES[0]


def _variants(spec: InputSpec) -> list[InputSpec]:
    """Other ranks of an input derived from a layer: ``(2, C)`` may be fed as a
    ``(2, 8, C)`` sequence, a ``(2, C, H, W)`` map as ``(2, H*W, C)`` tokens or, from a
    layer that takes any number of axes after the channels (``GroupNorm(1, C)`` before a
    ``Conv1d``), as a ``(2, C, L)`` signal."""
    if spec.dtype != "float32":
        return []
    if len(spec.shape) == 2:
        return [InputSpec((2, 8, spec.shape[1])), InputSpec((2, 8, 8, spec.shape[1]))]
    if len(spec.shape) == 3 and not spec.spatial:
        return [InputSpec((2, spec.shape[-1])), InputSpec((2, spec.shape[-1], 8, 8), spatial=2)]
    if len(spec.shape) == 4:
        signal = [InputSpec((2, spec.shape[1], *SPATIAL["1d"]), spatial=1)] \
            if spec.spatial else []
        return [InputSpec((2, 64, spec.shape[1])), *signal]
    return []


def input_alternatives(spec: InputSpec | None, count: int) -> list[list[InputSpec | None]]:
    """Candidate input lists (``count`` tensors each) to try after ``spec``: other ranks
    of ``spec``, then the guesses (a pattern or a reshape before the first layer can
    change what the Module takes)."""
    specs = [*(_variants(spec) if spec is not None else []), *_GUESSES]
    specs = [s for i, s in enumerate(specs) if s != spec and s not in specs[:i]]
    out: list[list[InputSpec | None]] = []
    for one in specs:
        extra: InputSpec | None = one if one.dtype == "float32" else None
        out.append([one, *[extra] * (max(count, 1) - 1)])
    if count > 1:  # a feature map with a (batch, features) condition: ``conv(x, style)``
        out += [[one, *[_FEATURES] * (count - 1)] for one in [spec, *specs]
                if one is not None and len(one.shape) > 2 and one.dtype == "float32"]
    return out
