"""Small Cells with torch's constructor signature, for torch layers a Cell names as a
value instead of calling (``partial(nn.LayerNorm, eps=1e-6)``, ``norm_layer=nn.LayerNorm``,
``class LayerNorm(nn.LayerNorm)``) and for containers MindSpore's counterpart cannot hold
(a ``ModuleDict`` of ``ModuleList``). A call is translated where it is written; a value is
called later with torch's arguments, so it gets an adapter that takes them. A generated
file holds the adapters it uses, after its imports."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

# torch name -> the adapter's class name; the sources are below, one class each.
ADAPTED = {
    "torch.nn.LayerNorm": "TorchLayerNorm",
    "torch.nn.Linear": "TorchLinear",
    "torch.nn.ModuleDict": "TorchModuleDict",
}

SOURCES = {
    "TorchLayerNorm": '''
class TorchLayerNorm(nn.LayerNorm):
    """torch.nn.LayerNorm's signature (an int shape, ``eps``) on MindSpore's LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        shape = tuple(normalized_shape) if isinstance(normalized_shape, (list, tuple)) \\
            else (normalized_shape,)
        super().__init__(shape, begin_norm_axis=-len(shape), begin_params_axis=-len(shape),
                         epsilon=eps)

    @property
    def weight(self):
        return self.gamma

    @property
    def bias(self):
        return self.beta
''',
    "TorchLinear": '''
class TorchLinear(nn.Dense):
    """torch.nn.Linear's signature (``bias``) on MindSpore's Dense."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, has_bias=bias)
''',
    "TorchModuleDict": '''
class TorchModuleDict(nn.Cell):
    """torch.nn.ModuleDict as a Cell whose children are attributes: unlike nn.CellDict it
    may hold CellList / SequentialCell, and ``d.key`` works in GRAPH_MODE."""

    def __init__(self, modules=None):
        super().__init__()
        self.names = []
        for key, cell in dict(modules or {}).items():
            self.insert_child_to_cell(key, cell)
            self.names.append(key)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, cell):
        self.insert_child_to_cell(key, cell)
        self.names.append(key)

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __contains__(self, key):
        return key in self.names

    def keys(self):
        return list(self.names)

    def values(self):
        return [getattr(self, k) for k in self.names]

    def items(self):
        return [(k, getattr(self, k)) for k in self.names]
''',
}


def used(module: cst.Module) -> list[cst.BaseStatement]:
    """The adapter classes a generated module refers to, as statements."""
    names = {n.value for n in m.findall(module, m.Name()) if isinstance(n, cst.Name)}
    return [stmt for name, source in SOURCES.items() if name in names
            for stmt in cst.parse_module(source.lstrip("\n")).body]
