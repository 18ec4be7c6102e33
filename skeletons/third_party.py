"""Layers and helpers of third-party torch libraries that repositories import by the
dozen (timm's ``DropPath`` and ``Mlp``, fairscale's ``checkpoint_wrapper``), written for
MindSpore. A Cell never imports a side library; a name bound from one is otherwise the
``Unavailable`` stand-in, and a network that builds a ``DropPath`` in every block could
not run. Each source below does what the library's own code does, with its signature, so
the call sites stay as written.

Only the names listed here are provided; the rest of a library stays a stand-in.
"""

from __future__ import annotations

_TIMM_MODULES = ("timm.layers", "timm.models.layers")

# The module a name is imported from, and the name -> the MindSpore source's name.
PROVIDED: dict[str, str] = {
    **{f"{package}{module}.DropPath": "TimmDropPath"
       for package in _TIMM_MODULES for module in ("", ".drop")},
    **{f"{package}{module}.Mlp": "TimmMlp"
       for package in _TIMM_MODULES for module in ("", ".mlp")},
    **{f"{package}{module}.trunc_normal_": "timm_trunc_normal_"
       for package in _TIMM_MODULES for module in ("", ".weight_init")},
    "fairscale.nn.checkpoint_wrapper": "fairscale_checkpoint_wrapper",
    "fairscale.nn.checkpoint.checkpoint_wrapper": "fairscale_checkpoint_wrapper",
    "fairscale.nn.checkpoint.checkpoint_activations.checkpoint_wrapper":
        "fairscale_checkpoint_wrapper",
}

# Modules imported whole (``import pkg_resources as pkg``) -> the MindSpore source's class,
# which gives the names listed in its source and the stand-in for any other.
MODULES: dict[str, str] = {"pkg_resources": "PkgResources"}

SOURCES: dict[str, str] = {
    "PkgResources": '''
class _PkgResourcesType(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Unavailable()


class PkgResources(metaclass=_PkgResourcesType):
    """setuptools' pkg_resources, which a Cell does not import: its version parsing is
    that of packaging (its successor, which MindSpore requires); any other name of it is
    the stand-in."""

    @staticmethod
    def parse_version(version):
        from packaging.version import parse
        return parse(version)
''',
    "TimmDropPath": '''
class TimmDropPath(nn.Cell):
    """timm's DropPath (stochastic depth): in training, each sample's whole residual branch
    is dropped with probability ``drop_prob`` and the kept ones are scaled by
    1 / (1 - drop_prob); in evaluation it is the identity."""

    def __init__(self, drop_prob=0.0, scale_by_keep=True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def construct(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1.0 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        draw = ops.uniform(shape, Tensor(0.0, mindspore.float32), Tensor(1.0, mindspore.float32))
        mask = (draw < keep).astype(x.dtype)
        if keep > 0.0 and self.scale_by_keep:
            mask = mask / keep
        return x * mask
''',
    "TimmMlp": '''
class TimmMlp(nn.Cell):
    """timm's Mlp: Linear (a 1x1 convolution with ``use_conv``), activation, dropout, an
    optional norm, Linear, dropout; ``bias`` and ``drop`` may give one value per layer."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=None,
                 norm_layer=None, bias=True, drop=0.0, use_conv=False):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        bias = tuple(bias) if isinstance(bias, (tuple, list)) else (bias, bias)
        drop = tuple(drop) if isinstance(drop, (tuple, list)) else (drop, drop)
        if use_conv:
            self.fc1 = nn.Conv2d(in_features, hidden_features, 1, has_bias=bias[0])
            self.fc2 = nn.Conv2d(hidden_features, out_features, 1, has_bias=bias[1])
        else:
            self.fc1 = nn.Dense(in_features, hidden_features, has_bias=bias[0])
            self.fc2 = nn.Dense(hidden_features, out_features, has_bias=bias[1])
        # timm's default activation is torch's exact GELU (MindSpore's approximates)
        self.act = act_layer() if act_layer is not None else nn.GELU(approximate=False)
        self.drop1 = nn.Dropout(p=drop[0])
        self.norm = norm_layer(hidden_features) if norm_layer is not None \\
            else nn.Identity()
        self.drop2 = nn.Dropout(p=drop[1])

    def construct(self, x):
        x = self.drop1(self.act(self.fc1(x)))
        return self.drop2(self.fc2(self.norm(x)))
''',
    "timm_trunc_normal_": '''
def timm_trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """timm's trunc_normal_: fills the parameter in place from a normal distribution cut
    at [a, b]."""
    tensor.set_data(mindspore.common.initializer.initializer(
        mindspore.common.initializer.TruncatedNormal(sigma=std, mean=mean, a=a, b=b),
        tensor.shape, tensor.dtype))
    return tensor
''',
    "fairscale_checkpoint_wrapper": '''
def fairscale_checkpoint_wrapper(module, *args, **kwargs):
    """fairscale's activation checkpointing: MindSpore's is Cell.recompute(), which
    recomputes the Cell's activations in the backward pass instead of keeping them."""
    module.recompute()
    return module
''',
}


def provided_module(module: str | None) -> str | None:
    """The MindSpore source standing for ``import <module>``, if there is one."""
    return MODULES.get(module or "")


def provided(module: str, name: str | None) -> str | None:
    """The MindSpore source standing for ``from <module> import <name>``, if there is one."""
    return PROVIDED.get(f"{module}.{name}") if name else None
