"""torch APIs with no MindSpore form on CPU, composed from MindSpore primitives in the
generated file, and torch queries answered as eager code would be. Each composition is
run on MindSpore and compared with torch on the same inputs."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mindspore
import numpy as np
import pytest
import torch
from mindspore import Tensor, nn, ops

from msready.analyzer.result import SkeletonResult
from msready.skeletons import adapters, compositions
from msready.skeletons.layers import MESHGRID

# ``run_cells`` (conftest): write files, scan, generate and run the Cells
CellRun = Callable[..., tuple[Path, dict[str, SkeletonResult]]]

RNG = np.random.default_rng(0)


def _array(*shape: int) -> Any:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def composed() -> dict[str, Callable[..., Any]]:
    names: dict[str, Any] = {"ops": ops, "mindspore": mindspore, "Tensor": Tensor, "nn": nn,
                             "Parameter": mindspore.Parameter}
    for source in compositions.SOURCES.values():
        exec(source, names)
    return names


def _same(ms_out: Any, torch_out: Any) -> None:
    assert tuple(ms_out.shape) == tuple(torch_out.shape)
    np.testing.assert_allclose(ms_out.asnumpy(), torch_out.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("equation, shapes", [
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("b h d i, b h d j -> b h i j", [(2, 3, 5, 4), (2, 3, 5, 6)]),
    ("...id,...jd->...ij", [(2, 3, 4, 5), (3, 6, 5)]),  # "..." aligned from the right
    ("ij,jk", [(3, 4), (4, 5)]),  # no "->": the letters seen once, sorted
    ("bij->bj", [(2, 3, 4)]),
    ("i,i->", [(4,), (4,)]),
])
def test_einsum_is_composed_from_broadcast_products_and_sums(
        composed: dict[str, Callable[..., Any]], equation: str,
        shapes: list[tuple[int, ...]]) -> None:
    arrays = [_array(*s) for s in shapes]
    _same(composed["torch_einsum"](equation, *map(Tensor, arrays)),
          torch.einsum(equation, *map(torch.tensor, arrays)))


def test_einsum_compiles_in_graph_mode(tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # operands whose letters come in another order than the output's (a grouped linear
    # layer's weight): GRAPH_MODE reads the function's source, so it lives in a file
    (tmp_path / "grouped.py").write_text(
        "import mindspore\nfrom mindspore import nn, ops\n"
        + compositions.SOURCES["torch_einsum"]
        + "\n\nclass Grouped(nn.Cell):\n    def __init__(self, weight):\n"
          "        super().__init__()\n        self.weight = mindspore.Parameter(weight)\n\n"
          "    def construct(self, x):\n"
          "        return torch_einsum('gbnd,ged->bnge', x, self.weight)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    grouped = importlib.import_module("grouped")
    x, w = _array(4, 2, 8, 32), _array(4, 8, 32)
    mindspore.set_context(mode=mindspore.GRAPH_MODE)
    try:
        got = grouped.Grouped(Tensor(w))(Tensor(x))
    finally:
        mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    _same(got, torch.einsum('gbnd,ged->bnge', torch.tensor(x), torch.tensor(w)))


def test_normalize_and_layer_norm(composed: dict[str, Callable[..., Any]]) -> None:
    x, w, b = _array(2, 8, 4), _array(4), _array(4)
    _same(composed["torch_normalize"](Tensor(x), dim=-1),
          torch.nn.functional.normalize(torch.tensor(x), dim=-1))
    _same(composed["torch_layer_norm"](Tensor(x), (4,), Tensor(w), Tensor(b)),
          torch.nn.functional.layer_norm(torch.tensor(x), (4,), torch.tensor(w),
                                         torch.tensor(b)))


@pytest.mark.parametrize("stats, affine, training", [
    (False, False, True),  # the weight standardization of timm's StdConv: nothing but x
    (True, True, True),  # a training step moves the running statistics
    (True, True, False),
    (True, False, False),
])
def test_batch_norm_with_or_without_statistics_and_affine(
        composed: dict[str, Callable[..., Any]], stats: bool, affine: bool,
        training: bool) -> None:
    x, mean, var = _array(3, 4, 5, 2), _array(4), np.abs(_array(4)) + 0.5
    w, b = _array(4), _array(4)
    ms_stats = [mindspore.Parameter(Tensor(a.copy())) if stats else None for a in (mean, var)]
    pt_stats = [torch.tensor(a.copy()) if stats else None for a in (mean, var)]
    ms_affine = [Tensor(a) if affine else None for a in (w, b)]
    pt_affine = [torch.tensor(a) if affine else None for a in (w, b)]
    _same(composed["torch_batch_norm"](Tensor(x), *ms_stats, *ms_affine, training=training,
                                       momentum=0.2),
          torch.nn.functional.batch_norm(torch.tensor(x), *pt_stats, *pt_affine,
                                         training=training, momentum=0.2))
    for ms_stat, pt_stat in zip(ms_stats, pt_stats, strict=True):
        if ms_stat is not None and pt_stat is not None:
            _same(ms_stat, pt_stat)


@pytest.mark.parametrize("options", [{}, {"is_causal": True}, {"scale": 0.5}, {"mask": True}])
def test_scaled_dot_product_attention(composed: dict[str, Callable[..., Any]],
                                      options: dict[str, Any]) -> None:
    q, k, v = _array(2, 3, 6, 5), _array(2, 3, 6, 5), _array(2, 3, 6, 7)
    if options.pop("mask", False):
        keep = RNG.random((6, 6)) > 0.3
        keep[:, 0] = True  # every query sees one key
        options = {"attn_mask": keep}
    ms_options = {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    torch_options = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                     for k, v in options.items()}
    _same(composed["torch_attention"](Tensor(q), Tensor(k), Tensor(v), **ms_options),
          torch.nn.functional.scaled_dot_product_attention(
              torch.tensor(q), torch.tensor(k), torch.tensor(v), **torch_options))


@pytest.mark.parametrize("cin, cout, groups, stride, padding, output_padding", [
    (4, 6, 1, 2, 1, 0), (4, 4, 4, 2, 2, 0), (3, 5, 1, 1, 0, 0), (4, 6, 2, 2, 1, 1)])
def test_conv_transpose2d(composed: dict[str, Callable[..., Any]], cin: int, cout: int,
                          groups: int, stride: int, padding: int, output_padding: int) -> None:
    x, w, b = _array(2, cin, 5, 5), _array(cin, cout // groups, 3, 3), _array(cout)
    options = {"stride": stride, "padding": padding, "output_padding": output_padding,
               "groups": groups}
    _same(composed["torch_conv_transpose2d"](Tensor(x), Tensor(w), Tensor(b), **options),
          torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w),
                                               torch.tensor(b), **options))


def test_replication_pad(composed: dict[str, Callable[..., Any]]) -> None:
    x = _array(2, 3, 4, 4)
    _same(composed["TorchReplicationPad"]((1, 2, 1, 0))(Tensor(x)),
          torch.nn.ReplicationPad2d((1, 2, 1, 0))(torch.tensor(x)))
    _same(composed["TorchReplicationPad"](1)(Tensor(x)),
          torch.nn.ReplicationPad2d(1)(torch.tensor(x)))


@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm(composed: dict[str, Callable[..., Any]], affine: bool) -> None:
    x = _array(2, 3, 5, 4)
    torch_layer = torch.nn.InstanceNorm2d(3, affine=affine)
    ms_layer = composed["TorchInstanceNorm"](3, affine=affine)
    if affine:  # the same non-trivial scale and shift in both
        w, b = _array(3), _array(3)
        torch_layer.weight.data, torch_layer.bias.data = torch.tensor(w), torch.tensor(b)
        ms_layer.weight.set_data(Tensor(w))
        ms_layer.bias.set_data(Tensor(b))
    _same(ms_layer(Tensor(x)), torch_layer(torch.tensor(x)).detach())


@pytest.mark.parametrize(("shape", "eps"), [(4, None), ((5, 4), 1e-6)])
def test_rms_norm(composed: dict[str, Callable[..., Any]], shape: Any, eps: Any) -> None:
    x = _array(2, 3, 5, 4)
    torch_layer = torch.nn.RMSNorm(shape, eps=eps)
    ms_layer = composed["TorchRMSNorm"](shape, eps=eps)
    w = _array(*((shape,) if isinstance(shape, int) else shape))
    torch_layer.weight.data = torch.tensor(w)
    ms_layer.weight.set_data(Tensor(w))
    _same(ms_layer(Tensor(x)), torch_layer(torch.tensor(x)).detach())
    _same(composed["torch_rms_norm"](Tensor(x), shape),
          torch.nn.functional.rms_norm(torch.tensor(x), shape if isinstance(shape, tuple)
                                       else (shape,)))


def test_softplus(composed: dict[str, Callable[..., Any]]) -> None:
    x = _array(2, 3) * 30  # past the threshold too, where softplus is the identity
    _same(composed["TorchSoftplus"]()(Tensor(x)), torch.nn.Softplus()(torch.tensor(x)))
    _same(composed["TorchSoftplus"](beta=2, threshold=5)(Tensor(x)),
          torch.nn.Softplus(beta=2, threshold=5)(torch.tensor(x)))


@pytest.mark.parametrize("shape", [(6, 4), (8, 3, 3, 5), (4, 2, 3)])
def test_fan_in_and_fan_out_of_a_weight(composed: dict[str, Callable[..., Any]],
                                        shape: tuple[int, ...]) -> None:
    fans = composed["torch_fan_in_and_fan_out"](Tensor(_array(*shape)))
    assert fans == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert all(type(f) is int for f in fans)  # numbers, as torch's: math.sqrt takes them


@pytest.mark.parametrize("dim", [0, None])
def test_weight_norm_of_a_linear_and_a_convolution(composed: dict[str, Callable[..., Any]],
                                                   dim: int | None) -> None:
    linear = torch.nn.Linear(5, 3)
    dense = nn.Dense(5, 3)
    dense.weight.set_data(Tensor(linear.weight.detach().numpy()))
    dense.bias.set_data(Tensor(linear.bias.detach().numpy()))
    conv = torch.nn.Conv2d(2, 4, 3, padding=1, bias=False)
    cell = nn.Conv2d(2, 4, 3, pad_mode="pad", padding=1)
    cell.weight.set_data(Tensor(conv.weight.detach().numpy()))
    normed = torch.nn.utils.weight_norm(linear, dim=dim)
    ours = composed["TorchWeightNorm"](dense, dim=dim)
    assert ours.weight_g.shape == tuple(normed.weight_g.shape)
    x = _array(2, 5)
    with torch.no_grad():
        _same(ours(Tensor(x)), normed(torch.tensor(x)))
        x = _array(2, 2, 6, 6)
        _same(composed["TorchWeightNorm"](cell, dim=dim)(Tensor(x)),
              torch.nn.utils.weight_norm(conv, dim=dim)(torch.tensor(x)))


@pytest.mark.parametrize("dim", [2, 0])
def test_weight_norm_of_a_1d_convolution_over_torch_axes(
        composed: dict[str, Callable[..., Any]], dim: int) -> None:
    # torchaudio's positional convolution: ``parametrizations.weight_norm(conv, dim=2)``,
    # the kernel axis of torch's (out, in, k) weight, which MindSpore holds as (out, in, 1, k)
    conv = torch.nn.Conv1d(4, 6, 3, padding=1, groups=2)
    cell = nn.Conv1d(4, 6, 3, pad_mode="pad", padding=1, group=2, has_bias=True)
    cell.weight.set_data(Tensor(conv.weight.detach().numpy()[:, :, None, :]))
    cell.bias.set_data(Tensor(conv.bias.detach().numpy()))
    normed = torch.nn.utils.parametrizations.weight_norm(conv, dim=dim)
    ours = composed["TorchWeightNorm"](cell, dim=dim)
    x = _array(2, 4, 7)
    with torch.no_grad():
        _same(ours(Tensor(x)), normed(torch.tensor(x)))


WEIGHT_NORMED_HEAD = '''\
import torch
import torch.nn as nn


class ProjectionHead(nn.Module):
    def __init__(self, in_dim, out_dim=32, bottleneck_dim=16, norm_last_layer=True):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, bottleneck_dim), nn.GELU())
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def forward(self, x):
        x = nn.functional.normalize(self.mlp(x), dim=-1, p=2)
        return self.last_layer(x)
'''


def test_a_weight_normed_layer_keeps_its_magnitude_parameter(tmp_path: Path,
                                                             run_cells: CellRun) -> None:
    # DINO's head: the magnitude set to 1 and frozen through ``weight_g``
    out, cells = run_cells(tmp_path, {"head.py": WEIGHT_NORMED_HEAD})
    text = (out / "head.py").read_text()
    assert "self.last_layer = TorchWeightNorm(nn.Dense(bottleneck_dim, out_dim, has_bias=False))" \
        in text
    head = cells["ProjectionHead"]
    assert (head.pynative, head.graph, head.output_shape) == ("pass", "pass", "(2, 32)")


def test_unfold(composed: dict[str, Callable[..., Any]]) -> None:
    x = _array(2, 3, 6, 5)
    _same(composed["TorchUnfold"](2, padding=1, stride=2)(Tensor(x)),
          torch.nn.Unfold(2, padding=1, stride=2)(torch.tensor(x)))
    _same(composed["TorchUnfold"]((3, 2))(Tensor(x)),
          torch.nn.Unfold((3, 2))(torch.tensor(x)))


@pytest.mark.parametrize(("shape", "factor", "mode"), [
    ((2, 3, 5, 6), 2, "nearest"), ((2, 3, 5, 6), (2.0, 1.5), "bilinear"),
    ((2, 3, 7), 3, "nearest")])
def test_interpolate_with_a_scale_factor(composed: dict[str, Callable[..., Any]],
                                         shape: tuple[int, ...], factor: Any,
                                         mode: str) -> None:
    x = _array(*shape)
    _same(composed["torch_interpolate"](Tensor(x), scale_factor=factor, mode=mode),
          torch.nn.functional.interpolate(torch.tensor(x), scale_factor=factor, mode=mode))
    _same(composed["TorchUpsample"](scale_factor=factor, mode=mode)(Tensor(x)),
          torch.nn.Upsample(scale_factor=factor, mode=mode)(torch.tensor(x)))


@pytest.mark.parametrize("output_size, options", [
    ((5, 5), {"kernel_size": 2}),
    (8, {"kernel_size": 3, "padding": 1, "stride": 2}),  # volo's outlook attention
    ((6, 4), {"kernel_size": (2, 3), "dilation": 1, "stride": 1}),
])
def test_fold(composed: dict[str, Callable[..., Any]], output_size: Any,
              options: dict[str, Any]) -> None:
    # ops.fold's CPU kernel refuses the output size as a tuple: torch's call does not run
    k = options["kernel_size"]
    blocks = {(5, 5): 16, 8: 16, (6, 4): 10}[output_size if isinstance(output_size, int)
                                            else tuple(output_size)]
    x = _array(2, 3 * (k * k if isinstance(k, int) else k[0] * k[1]), blocks)
    with pytest.raises(TypeError):
        ops.fold(Tensor(x), output_size, **options).asnumpy()
    _same(composed["torch_fold"](Tensor(x), output_size, **options),
          torch.nn.functional.fold(torch.tensor(x), output_size, **options))


@pytest.mark.parametrize("shape, dimension, size, step", [
    ((2, 3, 8, 8), 2, 3, 1), ((2, 3, 8, 8), -1, 2, 2), ((5, 7), 0, 2, 3)])
def test_tensor_unfold(composed: dict[str, Callable[..., Any]], shape: tuple[int, ...],
                       dimension: int, size: int, step: int) -> None:
    x = _array(*shape)
    _same(composed["torch_tensor_unfold"](Tensor(x), dimension, size, step),
          torch.tensor(x).unfold(dimension, size, step))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(composed: dict[str, Callable[..., Any]], batch_first: bool,
                      side: str) -> None:
    pieces = [_array(3, 2), _array(1, 2), _array(4, 2)]
    _same(composed["torch_pad_sequence"]([Tensor(p) for p in pieces], batch_first, -1.0, side),
          torch.nn.utils.rnn.pad_sequence([torch.tensor(p) for p in pieces], batch_first, -1.0,
                                          side))


def test_roll(composed: dict[str, Callable[..., Any]]) -> None:
    x = _array(3, 5)
    _same(composed["torch_roll"](Tensor(x), (1, -2), (0, 1)),
          torch.roll(torch.tensor(x), (1, -2), (0, 1)))
    _same(composed["torch_roll"](Tensor(x), 4), torch.roll(torch.tensor(x), 4))


def test_unique_gives_sorted_values_their_positions_and_counts(
        composed: dict[str, Callable[..., Any]]) -> None:
    # MindSpore's ops.unique returns (values, indices), the values in the order met
    x = np.array([[3.0, 1.0, 3.0], [2.0, 1.0, 5.0]], dtype=np.float32)
    _same(composed["torch_unique"](Tensor(x)), torch.unique(torch.tensor(x)))
    values, inverse, counts = composed["torch_unique"](
        Tensor(x), return_inverse=True, return_counts=True)
    expected = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True)
    for got, want in zip((values, inverse, counts), expected, strict=True):
        _same(got, want)
    assert len(composed["torch_unique"](Tensor(np.array([8, 8, 16, 32])))) == 3


def test_multi_head_attention_forward_matches_torch_with_packed_or_separate_weights(
        composed: dict[str, Callable[..., Any]]) -> None:
    # (length, batch, width) inputs, four heads; CLIP's attention pool passes three
    # separate projection weights and a query of one position
    length, batch, width, heads = 5, 2, 8, 4
    x = _array(length, batch, width)
    packed, bias = _array(3 * width, width), _array(3 * width)
    out_w, out_b = _array(width, width), _array(width)
    mask = np.triu(np.ones((length, length), dtype=bool), 1)
    padding = np.zeros((batch, length), dtype=bool)
    padding[1, -2:] = True
    forward = composed["torch_multi_head_attention_forward"]
    for need_weights in (True, False):
        got = forward(Tensor(x), Tensor(x), Tensor(x), width, heads, Tensor(packed),
                      Tensor(bias), None, None, False, 0.0, Tensor(out_w), Tensor(out_b),
                      training=False, key_padding_mask=Tensor(padding),
                      need_weights=need_weights, attn_mask=Tensor(mask))
        t = torch.tensor
        want = torch.nn.functional.multi_head_attention_forward(
            t(x), t(x), t(x), width, heads, t(packed), t(bias), None, None, False, 0.0,
            t(out_w), t(out_b), training=False, key_padding_mask=t(padding),
            need_weights=need_weights, attn_mask=t(mask))
        _same(got[0], want[0])
        if need_weights:
            _same(got[1], want[1])
        else:
            assert got[1] is None and want[1] is None
    q_w, k_w, v_w = (_array(width, width) for _ in range(3))
    got = forward(Tensor(x[:1]), Tensor(x), Tensor(x), width, heads, None, Tensor(bias),
                  None, None, False, 0, Tensor(out_w), Tensor(out_b),
                  use_separate_proj_weight=True, q_proj_weight=Tensor(q_w),
                  k_proj_weight=Tensor(k_w), v_proj_weight=Tensor(v_w), training=False,
                  need_weights=False)
    want = torch.nn.functional.multi_head_attention_forward(
        torch.tensor(x[:1]), torch.tensor(x), torch.tensor(x), width, heads, None,
        torch.tensor(bias), None, None, False, 0, torch.tensor(out_w), torch.tensor(out_b),
        use_separate_proj_weight=True, q_proj_weight=torch.tensor(q_w),
        k_proj_weight=torch.tensor(k_w), v_proj_weight=torch.tensor(v_w), training=False,
        need_weights=False)
    _same(got[0], want[0])


@pytest.mark.parametrize("form, indexing", [
    ("list", "ij"), ("tuple", "xy"), ("separate", None), ("separate", "xy"), ("list", None),
    ("one", None), ("one in a list", "ij"),
])
def test_meshgrid_adapter_takes_every_form_torch_does(form: str, indexing: str | None) -> None:
    # ``torch_meshgrid``: the tensors one by one or as one list / tuple, 'ij' unless told
    names: dict[str, Any] = {"ops": ops}
    exec(adapters.SOURCES[MESHGRID], names)
    a, b, c = _array(3), _array(4), _array(2)
    ms, pt = [Tensor(v) for v in (a, b, c)], [torch.tensor(v) for v in (a, b, c)]
    pack: dict[str, Callable[[list[Any]], tuple[Any, ...]]] = {
        "list": lambda t: (t,), "tuple": lambda t: (tuple(t),), "separate": tuple,
        "one": lambda t: (t[0],), "one in a list": lambda t: ([t[0]],)}
    options = {} if indexing is None else {"indexing": indexing}
    got = names["torch_meshgrid"](*pack[form](ms), **options)
    want = torch.meshgrid(*pack[form](pt), indexing=indexing or "ij")
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


ATTENTION = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(
            2, 0, 3, 1, 4).unbind(0)
        if torch.jit.is_scripting():
            attn = torch.einsum('bhid,bhjd->bhij', q, k).softmax(-1)
            out = attn @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        out = F.normalize(out, dim=-1)
        return out.transpose(1, 2).reshape(B, N, C)
'''


def test_a_cell_using_them_runs(tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"model.py": ATTENTION})
    code = [ln.strip() for ln in (out / "model.py").read_text().splitlines()]
    assert "if False:" in code  # torch.jit.is_scripting(): eager code's answer
    assert "attn = torch_einsum('bhid,bhjd->bhij', q, k).softmax(-1)" in code
    assert "out = torch_attention(q, k, v)" in code
    assert "out = torch_normalize(out, dim=-1)" in code
    assert "def torch_attention(query, key, value, attn_mask=None, dropout_p=0.0, " \
           "is_causal=False," in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 8, 16)")


POOLED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionPool(nn.Module):
    def __init__(self, width=16, heads=4):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        x = x.flatten(start_dim=2).permute(2, 0, 1)  # (batch, width, h, w) -> (h*w, batch, width)
        x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)
        x, _ = F.multi_head_attention_forward(
            query=x[:1], key=x, value=x, embed_dim_to_check=x.shape[-1],
            num_heads=self.heads, q_proj_weight=self.q_proj.weight,
            k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight,
            in_proj_weight=None,
            in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
            out_proj_weight=self.c_proj.weight, out_proj_bias=self.c_proj.bias,
            use_separate_proj_weight=True, training=self.training, need_weights=False)
        return x.squeeze(0)
'''


def test_multi_head_attention_forward_runs_in_both_modes(
        tmp_path: Path, run_cells: CellRun) -> None:
    # CLIP's attention pooling calls torch's functional multi-head attention, which
    # MindSpore has no form of: the composition is written into the file
    out, cells = run_cells(tmp_path, {"pool.py": POOLED})
    code = (out / "pool.py").read_text()
    assert "x, _ = torch_multi_head_attention_forward(" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 16)"), \
        cell.error


FOLDED = '''\
import torch.nn as nn
import torch.nn.functional as F


class Outlook(nn.Module):
    def __init__(self, dim=16, kernel_size=3):
        super().__init__()
        self.k = kernel_size
        self.v = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        B, C, H, W = x.shape
        patches = F.unfold(self.v(x), self.k, padding=1, stride=2)
        return F.fold(patches, output_size=(H, W), kernel_size=self.k, padding=1, stride=2)
'''


def test_a_fold_runs_in_both_modes(tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"outlook.py": FOLDED})
    code = [ln.strip() for ln in (out / "outlook.py").read_text().splitlines()]
    assert "return torch_fold(patches, output_size=(H, W), kernel_size=self.k, padding=1, " \
           "stride=2)" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 16, 16, 16)")


STAGES = '''\
import torch
from torch import nn


class Stages(nn.Module):
    """One stage per distinct width, as RegNet counts them."""

    def __init__(self, widths=(8, 8, 16, 16, 32)):
        super().__init__()
        distinct = torch.unique(torch.tensor(widths))
        assert len(distinct) == 3
        self.stages = nn.ModuleList(nn.Linear(4, 4) for _ in range(len(distinct)))

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x
'''


def test_unique_in_a_constructor_counts_distinct_values(tmp_path: Path,
                                                         run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"stages.py": STAGES})
    assert "distinct = torch_unique(mindspore.tensor(widths))" in [
        ln.strip() for ln in (out / "stages.py").read_text().splitlines()]
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 4)")


WINDOWS = '''\
import torch.nn as nn
import torch.nn.functional as F


class SmoothPool(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        x = F.pad(self.conv(x), (1, 1, 1, 1), mode='reflect')
        x = x.unfold(2, 3, 1).unfold(3, 3, 1)
        return x.mean(dim=-1).mean(dim=-1)
'''


def test_sliding_windows_of_a_tensor_run_in_both_modes(tmp_path: Path,
                                                       run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"pool.py": WINDOWS})
    code = [ln.strip() for ln in (out / "pool.py").read_text().splitlines()]
    assert "x = torch_tensor_unfold(torch_tensor_unfold(x, 2, 3, 1), 3, 3, 1)" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 8, 16, 16)")


STANDARDIZED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class StdConv(nn.Conv2d):
    def __init__(self, cin=4, cout=8, eps=1e-6):
        super().__init__(cin, cout, 3, padding=1)
        self.eps = eps

    def forward(self, x):
        weight = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                              training=True, momentum=0., eps=self.eps).reshape_as(self.weight)
        out = F.conv2d(x, weight, self.bias, self.stride, self.padding)
        return out / out.max(out.abs().mean()) + out.min(1)[0].unsqueeze(1)
'''


def test_batch_norm_without_statistics_and_max_of_two_tensors_run(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"conv.py": STANDARDIZED})
    code = [ln.strip() for ln in (out / "conv.py").read_text().splitlines()]
    assert "weight = torch_batch_norm(self.weight.reshape(1, self.out_channels, -1), None, " \
           "None," in code
    # a tensor argument makes torch's max elementwise, an int a reduction: mint.max does both
    assert "return out / mint.max(out, out.abs().mean()) + mint.min(out, 1)[0].unsqueeze(1)" \
        in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 8, 16, 16)")


INIT = '''\
import math

import torch
import torch.nn as nn
from torch.nn.init import _calculate_fan_in_and_fan_out


def init_scaled(t):
    fan_in, _ = _calculate_fan_in_and_fan_out(t)
    with torch.no_grad():
        t.normal_(0, math.sqrt(1.0 / fan_in))


def init_truncated(t, a, b):
    with torch.no_grad():
        t.uniform_(a, b)
        t.erfinv_()
        t.mul_(2.0).add_(1.0)
    return t


class Scaled(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.w = nn.Parameter(torch.empty(dim))
        self.b = nn.Parameter(torch.empty(dim))
        init_truncated(self.w, -0.5, 0.5)
        init_scaled(self.fc.weight)
        with torch.no_grad():
            self.b.fill_(0.25)

    def forward(self, x):
        return self.fc(x) * self.w + self.b
'''


def test_in_place_fills_write_values_computed_by_mindspore(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"model.py": INIT})
    code = [ln.strip() for ln in (out / "model.py").read_text().splitlines()]
    assert "torch_uniform_(t, a, b)" in code
    assert "torch_assign_(t, ops.erfinv(t))" in code
    # torch's private helper takes the weight; MindSpore's namesake takes a shape
    assert "fan_in, _ = torch_fan_in_and_fan_out(t)" in code
    # a chain updates once per method: the addition reads ``t``, already doubled
    assert "torch_assign_(torch_assign_(t, t * 2.0), t + 1.0)" in code
    assert "torch_assign_(self.b, ops.full_like(self.b, 0.25))" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass")


NOISED = '''\
import torch
import torch.nn as nn


class Noised(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        jitter = torch.empty_like(image)
        jitter.uniform_(-0.1, 0.1)
        return self.conv(image + self.weight * noise + jitter)
'''


def test_a_fill_in_forward_is_the_values_it_would_write(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE writes into no tensor but a Parameter: a fill in code forward runs
    # becomes its values, as an expression and as a statement on a local name
    out, cells = run_cells(tmp_path, {"noised.py": NOISED})
    code = [ln.strip() for ln in (out / "noised.py").read_text().splitlines()]
    assert "noise = torch_normal(image.new_empty((batch, 1, height, width)))" in code
    assert "jitter = torch_uniform(jitter, -0.1, 0.1)" in code
    assert "torch_normal_" not in "\n".join(code)
    assert (cells["Noised"].pynative, cells["Noised"].graph) == ("pass", "pass")


def test_fills_keep_the_parameter_and_its_dtype(
        composed: dict[str, Callable[..., Any]]) -> None:
    weight = mindspore.Parameter(Tensor(np.zeros((4, 3), np.float32)), name="w")
    assert composed["torch_uniform_"](weight, -0.5, 0.5) is weight
    values = weight.asnumpy()
    assert values.dtype == np.float32 and values.min() >= -0.5 and values.max() <= 0.5
    assert values.std() > 0
    composed["torch_assign_"](weight, 2.0)
    assert (weight.asnumpy() == 2.0).all()


def test_variance_with_torchs_defaults_matches_torch() -> None:
    # what variance_args writes: torch is unbiased unless told, MindSpore's ddof is 0
    from mindspore import ops
    x = _array(2, 3, 4)
    _same(ops.var(Tensor(x), axis=1, keepdims=True, ddof=1),
          torch.tensor(x).var(1, keepdim=True))
    _same(Tensor(x).std(axis=1, ddof=1), torch.tensor(x).std(1))
    _same(Tensor(x).var(axis=(1, 2), keepdims=True, ddof=0),
          torch.tensor(x).var(dim=(1, 2), unbiased=False, keepdim=True))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_functional_convolutions_run_on_cpu_as_torchs(dims: int) -> None:
    # the Cells call ops.conv1d / ops.conv3d on CPU although their docs list Ascend, GPU
    from mindspore import ops
    x = _array(2, 4, *(7,) * dims)
    w = _array(6, 4, *(3,) * dims)
    ms_conv = getattr(ops, f"conv{dims}d")
    torch_conv = getattr(torch.nn.functional, f"conv{dims}d")
    _same(ms_conv(Tensor(x), Tensor(w), pad_mode="pad", padding=1),
          torch_conv(torch.tensor(x), torch.tensor(w), padding=1))
    _same(ms_conv(Tensor(x), Tensor(w), stride=2), torch_conv(torch.tensor(x),
                                                               torch.tensor(w), stride=2))


IN_PLACE_IN_AN_EXPRESSION = '''\
import torch.nn.functional as F
from torch import nn


class HardSwish(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.inplace = inplace
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        return x.mul_(F.relu6(x + 3.) / 6.) if self.inplace else x * F.relu6(x + 3.) / 6.


def hard_sigmoid(x, inplace=False):
    return x.add_(3.).clamp_(0., 6.).div_(6.) if inplace else F.relu6(x + 3.) / 6.


def unused(x):
    return x.mul_(2.)


class HardSigmoid(nn.Module):
    def __init__(self, inplace=True):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return hard_sigmoid(x, self.inplace)
'''


def test_an_in_place_update_used_as_a_value_in_forward_compiles_in_graph_mode(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"act.py": IN_PLACE_IN_AN_EXPRESSION})
    assert (cells["HardSwish"].status, cells["HardSwish"].graph) == ("pass", "pass")
    code = (out / "act.py").read_text()
    assert "return (x * (ops.relu6(x + 3.) / 6.)) if self.inplace" in code
    # the same in a function forward calls; one nothing runs from a forward keeps the update
    assert (cells["HardSigmoid"].status, cells["HardSigmoid"].graph) == ("pass", "pass")
    helper = code.split("def hard_sigmoid")[1].split("def unused")[0]
    assert "torch_assign_" not in helper and "ops.clamp(" in helper
    assert "return torch_assign_(x, x * 2.)" in code


CAUSAL_MASK = '''\
import torch
from torch import nn


class Causal(nn.Module):
    def __init__(self, width=16, length=8):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.register_buffer("mask", self.build_mask(length))
        self.scale = nn.Parameter(torch.ones([]) * 2.0)  # a scalar: an empty shape

    def build_mask(self, length):
        mask = torch.empty(length, length)
        mask.fill_(float("-inf"))
        mask.triu_(1)
        return mask

    def forward(self, x):
        scores = self.fc(x) @ self.fc(x).transpose(1, 2)
        return (scores + self.mask) * self.scale.exp()
'''


def test_an_in_place_method_mindspore_lacks_is_its_twin_written_back(
        tmp_path: Path, run_cells: CellRun) -> None:
    # MindSpore's Tensor has triu, not triu_: the value triu returns is written back
    out, cells = run_cells(tmp_path, {"mask.py": CAUSAL_MASK})
    code = [ln.strip() for ln in (out / "mask.py").read_text().splitlines()]
    assert "torch_assign_(mask, mask.triu(1))" in code
    assert not any("triu_" in ln for ln in code)
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 8, 8)")


LAMBDA_LAYER = '''\
from torch import nn


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.Sequential(nn.ReLU(), Lambda(lambda x: x.mean(dim=[2, 3])))
        self.head = Lambda(lambda x: x * 2.0)

    def forward(self, x):
        return self.head(self.pool(self.conv(x)))


class Scales(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Lambda(lambda x: x * s) for s in (1.0, 2.0)])

    def forward(self, x):
        return self.heads[0](x) + self.heads[1](x)
'''


def test_a_lambda_a_constructor_passes_on_is_written_alone_on_its_line(
        tmp_path: Path, run_cells: CellRun) -> None:
    # GRAPH_MODE finds a lambda by its source line and parses it only when it is alone
    # there; a lambda inside a comprehension reads the loop variable and stays in place
    out, cells = run_cells(tmp_path, {"net.py": LAMBDA_LAYER})
    assert (cells["Net"].status, cells["Net"].graph) == ("pass", "pass"), cells["Net"].error
    code = (out / "net.py").read_text()
    assert "        lambda_1 = lambda x: x.mean(" in code
    assert "Lambda(lambda_1)" in code and "        lambda_2 = lambda x: x * 2.0\n" in code
    assert "[Lambda(lambda x: x * s) for s in (1.0, 2.0)]" in code



def test_conv_transpose2d_compiles_in_graph_mode(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # a Cell's construct calls it with the stride and padding of a layer; GRAPH_MODE
    # reads the function's source, so it lives in a file as in a generated Cell
    (tmp_path / "upsampling.py").write_text(
        "import mindspore\nfrom mindspore import nn, ops\n"
        + compositions.SOURCES["torch_conv_transpose2d"]
        + "\n\n@mindspore.jit\ndef upsample(x, w):\n"
          "    return torch_conv_transpose2d(x, w, stride=2, padding=2, groups=4)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    upsampling = importlib.import_module("upsampling")
    x, w = _array(2, 4, 5, 5), _array(4, 1, 4, 4)
    _same(upsampling.upsample(Tensor(x), Tensor(w)), torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), stride=2, padding=2, groups=4))


@pytest.fixture(scope="module")
def adapted() -> dict[str, Any]:
    names: dict[str, Any] = {"ops": ops, "mindspore": mindspore, "Tensor": Tensor, "nn": nn}
    for source in adapters.SOURCES.values():
        exec(source, names)
    return names


@pytest.mark.parametrize("layer, args, kwargs, shape", [
    ("MaxPool2d", (3,), {}, (2, 3, 9, 9)),  # torch's stride is the kernel size
    ("MaxPool2d", (3, 2, 1), {}, (2, 3, 8, 8)),
    ("MaxPool2d", ([3, 3], [2, 2]), {"ceil_mode": True}, (2, 3, 8, 8)),
    ("AvgPool2d", (2,), {}, (2, 3, 8, 8)),
    ("AvgPool2d", (3, 2, 1), {"count_include_pad": False}, (2, 3, 8, 8)),
    ("MaxPool1d", (2,), {}, (2, 3, 8)),
    ("AvgPool1d", (3,), {"padding": 1, "stride": 1}, (2, 3, 8)),
])
def test_pooling_layers_used_as_values_take_torchs_arguments(
        adapted: dict[str, Any], layer: str, args: tuple[Any, ...], kwargs: dict[str, Any],
        shape: tuple[int, ...]) -> None:
    # ``partial(nn.MaxPool2d, kernel_size=3)``, ``pool = nn.AvgPool2d``: the layer is built
    # later with torch's arguments, which MindSpore's layer reads otherwise
    x = _array(*shape)
    cell = adapted[f"Torch{layer}"](*args, **kwargs)
    assert type(cell).__name__ == layer
    _same(cell(Tensor(x)), getattr(torch.nn, layer)(*args, **kwargs)(torch.tensor(x)))


def test_a_device_object_holds_its_name(composed: dict[str, Callable[..., Any]]) -> None:
    device = composed["TorchDevice"]
    assert (str(device("cuda:1")), device("cuda:1").index) == ("cuda:1", 1)
    assert device("cpu") == "cpu" and device(device("cpu")).type == "cpu"
    assert str(device("cuda", 0)) == str(device(0)) == "cuda:0"


DEVICE_HOLDER = '''\
import torch
from torch import nn


class Embedder(nn.Module):
    """Keeps the device it was given and moves inputs there."""

    def __init__(self, device=None):
        super().__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device is not None:
            self.device = device
        self.fc = nn.Linear(8, 4)
        self.to(self.device)

    def forward(self, x):
        x = x.to(self.device)
        if self.device.type == "cpu":
            x = x * 2
        return self.fc(x)
'''


def test_a_module_that_keeps_a_device_object_runs(tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"embed.py": DEVICE_HOLDER})
    embedder = cells["Embedder"]
    assert (embedder.pynative, embedder.graph) == ("pass", "pass"), embedder.error
    assert 'self.device = TorchDevice("cuda" if False else "cpu")' in (
        out / "embed.py").read_text()


GRAD_SWITCH_AS_VALUE = '''\
import torch
from torch import nn


def smart_inference_mode(new_torch=True):
    # torch's newer context where it has one: a decorator chosen when it is applied
    def decorate(fn):
        return (torch.inference_mode if new_torch else torch.no_grad)()(fn)

    return decorate


@smart_inference_mode()
def scale(x):
    return x * 2


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        with torch.no_grad():
            x = scale(x)
        return self.fc(x)
'''


def test_a_gradient_switch_used_as_a_value_changes_nothing(tmp_path: Path,
                                                         run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"scaled.py": GRAD_SWITCH_AS_VALUE})
    scaled = cells["Scaled"]
    assert (scaled.pynative, scaled.graph) == ("pass", "pass"), scaled.error
    code = (out / "scaled.py").read_text()
    assert "return (TorchGradContext if new_torch else TorchGradContext)()(fn)" in code
    assert "with torch" not in code  # the with block is dropped, its body kept


def test_a_gradient_switch_is_a_decorator_and_a_context(
        composed: dict[str, Callable[..., Any]]) -> None:
    switch = composed["TorchGradContext"]

    def f(x: int) -> int:
        return x + 1

    assert switch(f) is f and switch()(f) is f and switch(False)(f) is f
    with switch():
        assert f(1) == 2


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_in_each_of_their_forms(composed: dict[str, Callable[..., Any]],
                                            name: str) -> None:
    x, y = _array(3, 4), _array(3, 4)
    ours, theirs = composed[f"torch_{name}"], getattr(torch, name)
    _same(ours(Tensor(x), Tensor(y)), theirs(torch.tensor(x), torch.tensor(y)))
    _same(ours(Tensor(x), other=Tensor(y)), theirs(torch.tensor(x), other=torch.tensor(y)))
    values, indices = ours(Tensor(x), 1, True)
    torch_values, torch_indices = theirs(torch.tensor(x), 1, True)
    _same(values, torch_values)
    np.testing.assert_array_equal(indices.asnumpy(), torch_indices.numpy())
    _same(ours(Tensor(x)), theirs(torch.tensor(x)))


GATED_MAX = '''\
import torch
import torch.nn as nn


class FunnelAct(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        peak = torch.max(x, 1)[0]  # the largest channel: an axis written in the code
        return torch.max(x, self.conv(x)) + torch.min(x, other=peak[:, None])
'''


def test_the_elementwise_maximum_of_two_tensors_runs_in_both_modes(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"funnel.py": GATED_MAX})
    code = [ln.strip() for ln in (out / "funnel.py").read_text().splitlines()]
    assert "peak = ops.max(x, 1)[0]  # the largest channel: an axis written in the code" in code
    assert "return torch_max(x, self.conv(x)) + torch_min(x, other=peak[:, None])" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 8, 16, 16)")


def test_unflatten_and_one_sided_clamps(composed: dict[str, Callable[..., Any]]) -> None:
    x = _array(2, 12, 5)
    _same(composed["torch_unflatten"](Tensor(x), 1, (3, -1)),
          torch.tensor(x).unflatten(1, (3, -1)))
    _same(composed["torch_unflatten"](Tensor(x), -1, (5, 1)),
          torch.unflatten(torch.tensor(x), -1, (5, 1)))
    _same(composed["torch_clamp_min"](Tensor(x), 0.1), torch.tensor(x).clamp_min(0.1))
    _same(composed["torch_clamp_max"](Tensor(x), -0.2), torch.clamp_max(torch.tensor(x), -0.2))


HEADS_SPLIT = '''\
import torch
import torch.nn as nn


class Heads(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        q, k, v = self.qkv(x).unflatten(-1, (3, self.heads, -1)).unbind(2)
        scores = q.transpose(1, 2) @ k.permute(0, 2, 3, 1)
        weights = scores.clamp_min(-5.0).softmax(dim=-1)
        return torch.clamp_max(weights @ v.transpose(1, 2), 5.0).flatten(1)
'''


def test_methods_mindspore_tensors_lack_are_composed_in_the_cell(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"heads.py": HEADS_SPLIT})
    code = (out / "heads.py").read_text()
    assert "torch_unflatten(self.qkv(x), -1, (3, self.heads, -1))" in code
    assert "torch_clamp_min(scores, -5.0)" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_tells_torchs_limits_of_a_float_type(composed: dict[str, Callable[..., Any]],
                                                   name: str) -> None:
    ours, theirs = composed["torch_finfo"](getattr(mindspore, name)), torch.finfo(
        getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                  "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert composed["torch_finfo"]().max == torch.finfo().max  # torch's default, float32


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64", "uint16",
                                  "uint32", "uint64"])
def test_iinfo_tells_torchs_range_of_an_integer_type(composed: dict[str, Callable[..., Any]],
                                                     name: str) -> None:
    ours, theirs = composed["torch_iinfo"](getattr(mindspore, name)), torch.iinfo(
        getattr(torch, name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == \
        (theirs.bits, theirs.min, theirs.max, theirs.dtype)


TYPE_LIMITS = '''\
import torch
import torch.nn as nn


class Masked(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.eps = torch.finfo(torch.float16).eps

    def forward(self, x):
        dots = self.proj(x)
        dots = dots.masked_fill(dots > 0, -torch.finfo(dots.dtype).max)
        low = torch.iinfo(torch.int32).min
        return dots.softmax(dim=-1) + torch.finfo().tiny + self.eps + low
'''


def test_type_limits_read_in_forward_run_in_both_modes(tmp_path: Path,
                                                       run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"masked.py": TYPE_LIMITS})
    code = (out / "masked.py").read_text()
    assert "-torch_finfo(dots.dtype).max" in code and "torch_iinfo(mindspore.int32).min" in code
    assert (cells["Masked"].pynative, cells["Masked"].graph) == ("pass", "pass")


def test_a_parametrized_layer_computes_its_tensor_as_torchs(
        composed: dict[str, Callable[..., Any]]) -> None:
    class UnitRows(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.normalize(t, dim=-1)

    class Doubled(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return t * 2

    class OurUnitRows(nn.Cell):
        def construct(self, t: Tensor) -> Tensor:
            return t / ops.norm(t, dim=-1, keepdim=True)

    class OurDoubled(nn.Cell):
        def construct(self, t: Tensor) -> Tensor:
            return t * 2

    parametrize = torch.nn.utils.parametrize.register_parametrization
    ours_of = composed["torch_register_parametrization"]
    linear = torch.nn.Linear(5, 3)
    dense = nn.Dense(5, 3)
    dense.weight.set_data(Tensor(linear.weight.detach().numpy()))
    dense.bias.set_data(Tensor(linear.bias.detach().numpy()))
    conv = torch.nn.Conv2d(2, 4, 3, padding=1)
    cell = nn.Conv2d(2, 4, 3, pad_mode="pad", padding=1, has_bias=True)
    cell.weight.set_data(Tensor(conv.weight.detach().numpy()))
    cell.bias.set_data(Tensor(conv.bias.detach().numpy()))
    parametrize(linear, "weight", UnitRows())
    parametrize(conv, "weight", UnitRows())
    parametrize(conv, "weight", Doubled())  # chained: doubled after the rows are normed
    ours = ours_of(dense, "weight", OurUnitRows())
    chained = ours_of(ours_of(cell, "weight", OurUnitRows()), "weight", OurDoubled())
    with torch.no_grad():
        _same(ours.weight, linear.weight)
        x = _array(2, 5)
        _same(ours(Tensor(x)), linear(torch.tensor(x)))
        x = _array(2, 2, 6, 6)
        _same(chained(Tensor(x)), conv(torch.tensor(x)))
    # what trains is the layer's own parameter, the original
    assert [p.name for p in ours.trainable_params()] == ["module.weight", "module.bias"]


PARAMETRIZED = '''\
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize


class UnitRows(nn.Module):
    def forward(self, t):
        return F.normalize(t, dim=-1)


class NormLinear(nn.Module):
    def __init__(self, dim=8, dim_out=4):
        super().__init__()
        self.linear = nn.Linear(dim, dim_out, bias=False)
        parametrize.register_parametrization(self.linear, "weight", UnitRows())

    @property
    def weight(self):
        return self.linear.weight

    def forward(self, x):
        return self.linear(x) + self.weight.sum()
'''


def test_a_parametrized_layer_takes_the_name_that_held_it(tmp_path: Path,
                                                         run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"norm_linear.py": PARAMETRIZED})
    code = [ln.strip() for ln in (out / "norm_linear.py").read_text().splitlines()]
    assert 'self.linear = torch_register_parametrization(self.linear, "weight", ' \
           'UnitRows())' in code
    assert (cells["NormLinear"].pynative, cells["NormLinear"].graph) == ("pass", "pass")


FAST_PATH = '''\
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def fused_kernel_supported():
    # a kernel only some builds of torch have, asked for by a private name
    fast = getattr(torch.cpu, '_is_avx2_supported', lambda: False)()
    return fast and not torch.xpu.is_available() and sys.platform != 'darwin'


class Mixer(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.act = getattr(F, 'gelu', None)

    def forward(self, x):
        if fused_kernel_supported():
            return torch.special.i0e(self.proj(x))
        return self.act(self.proj(x))
'''


def test_a_torch_name_looked_up_with_a_default_the_cell_lacks_gives_the_default(
        tmp_path: Path, run_cells: CellRun) -> None:
    out, cells = run_cells(tmp_path, {"mixer.py": FAST_PATH})
    code = [ln.strip() for ln in (out / "mixer.py").read_text().splitlines()]
    assert "fast = (lambda: False)()" in code
    assert "return fast and not False and sys.platform != 'darwin'" in code
    # a name MindSpore has a form of is looked up as written
    assert any(ln.startswith("self.act = getattr(") for ln in code)
    cell = cells["Mixer"]
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


@pytest.mark.parametrize("pad_mode", ["reflect", "constant"])
def test_stft_takes_torch_padding_modes(composed: dict[str, Callable[..., Any]],
                                        pad_mode: str) -> None:
    x = _array(2, 400)
    window = np.hanning(65)[:64].astype(np.float32)
    ours = composed["torch_stft"](Tensor(x), 64, hop_length=16, window=Tensor(window),
                                  pad_mode=pad_mode, return_complex=True)
    theirs = torch.stft(torch.tensor(x), 64, hop_length=16, window=torch.tensor(window),
                        pad_mode=pad_mode, return_complex=True)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.asnumpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)


SPECTROGRAM = '''\
import torch
import torch.nn as nn


class Spectrogram(nn.Module):
    def __init__(self, n_fft=64, hop_length=16):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, waveform):
        spec = torch.stft(input=waveform, n_fft=self.n_fft, hop_length=self.hop_length,
                          window=self.window, center=True, pad_mode="reflect",
                          return_complex=True)
        return spec.abs().pow(2.0)
'''


def test_a_spectrogram_runs_in_both_modes(tmp_path: Path, run_cells: CellRun) -> None:
    # torchaudio's Spectrogram: torch's padding mode, written in lower case
    out, cells = run_cells(tmp_path, {"spectrogram.py": SPECTROGRAM})
    assert "spec = torch_stft(input=waveform, n_fft=self.n_fft" in \
        (out / "spectrogram.py").read_text()
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error


def test_nested_containers_flatten_and_rebuild_as_torch_does(
        composed: dict[str, Callable[..., Any]]) -> None:
    from collections import OrderedDict, namedtuple

    from torch.utils import _pytree

    pair = namedtuple("pair", "image mask")
    for tree in (None, 5, [1, (2, None), {"b": 3, "a": 4}], pair(1, [2, 3]),
                 OrderedDict(x=1, y=(2,)), {"boxes": [Tensor(_array(2, 4))]}):
        leaves, spec = composed["torch_tree_flatten"](tree)
        theirs, their_spec = _pytree.tree_flatten(tree)
        assert [id(leaf) for leaf in leaves] == [id(leaf) for leaf in theirs]
        assert spec.num_leaves == their_spec.num_leaves
        rebuilt = composed["torch_tree_unflatten"](leaves, spec)
        assert type(rebuilt) is type(tree) and repr(rebuilt) == repr(tree)
    doubled = composed["torch_tree_map"](lambda v: v * 2, [1, {"a": 2}, (3,)])
    assert doubled == _pytree.tree_map(lambda v: v * 2, [1, {"a": 2}, (3,)])
    assert composed["torch_tree_leaves"]([1, [2, [3]]]) == [1, 2, 3]


QUANTIZABLE = '''\
import torch
import torch.nn as nn


class QuantizableBlock(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.dequant = torch.ao.quantization.DeQuantStub()
        self.fc = nn.Linear(width, width)
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        x = self.quant(x)
        out = self.skip_add.add_relu(self.fc(x), x)
        return self.dequant(self.skip_add.cat([out, out], dim=1))
'''


def test_a_quantizable_network_runs_as_the_float_network_it_is(tmp_path: Path,
                                                               run_cells: CellRun) -> None:
    # torchvision's quantizable models, before prepare / convert: the stubs pass the input
    # on and FloatFunctional's methods are the plain operations
    out, cells = run_cells(tmp_path, {"quantizable.py": QUANTIZABLE})
    code = (out / "quantizable.py").read_text()
    assert "self.skip_add = TorchFloatFunctional()" in code
    assert "self.quant = TorchQuantStub()" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph, cell.output_shape) == ("pass", "pass", "(2, 16)"), \
        cell.error


NESTED_INPUTS = '''\
import torch.nn as nn
from torch.utils._pytree import tree_flatten, tree_unflatten


class Scale(nn.Module):
    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        flat, spec = tree_flatten({"image": x, "extra": [x]})
        return tree_unflatten([v * self.factor for v in flat], spec)["image"]
'''


def test_a_transform_flattens_its_nested_inputs_as_torch_does(tmp_path: Path,
                                                              run_cells: CellRun) -> None:
    # torchvision's v2 transforms flatten (image, boxes, ...) with torch.utils._pytree and
    # rebuild the same nest; the helpers are Python over containers, which PyNative runs
    # (GRAPH_MODE does not compile the Python objects they build inside construct)
    out, cells = run_cells(tmp_path, {"scale.py": NESTED_INPUTS})
    assert "flat, spec = torch_tree_flatten({\"image\": x, \"extra\": [x]})" in \
        (out / "scale.py").read_text()
    (cell,) = cells.values()
    assert cell.pynative == "pass", cell.error


@pytest.mark.parametrize("shape, value, wrap", [((4, 4), 0, False), ((7, 3), -1.5, True),
                                                ((7, 3), 2.0, False), ((3, 5), True, False)])
def test_fill_diagonal_of_a_matrix(composed: dict[str, Callable[..., Any]],
                                   shape: tuple[int, int], value: float, wrap: bool) -> None:
    # pytorch-metric-learning's ``matches.fill_diagonal_(0)`` on integer and boolean masks
    for dtype in ((np.bool_,) if isinstance(value, bool) else (np.float32, np.int64)):
        x = (_array(*shape) * 10).astype(dtype)
        theirs = torch.tensor(x).fill_diagonal_(value, wrap=wrap)
        ours = composed["torch_fill_diagonal_"](Tensor(x), value, wrap=wrap)
        assert ours.dtype == Tensor(x).dtype
        np.testing.assert_array_equal(ours.asnumpy(), theirs.numpy())


def test_where_with_one_argument_gives_indices_per_axis(
        composed: dict[str, Callable[..., Any]]) -> None:
    mask = _array(4, 5) > 0.5
    ours = composed["torch_nonzero_tuple"](Tensor(mask))
    theirs = torch.where(torch.tensor(mask))
    assert len(ours) == len(theirs) == 2
    for mine, torch_axis in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine.asnumpy(), torch_axis.numpy())


@pytest.mark.parametrize("p", [2, 1, 2.5])
def test_cdist_takes_an_integer_order(composed: dict[str, Callable[..., Any]],
                                      p: float) -> None:
    a, b = _array(2, 5, 3), _array(2, 4, 3)
    _same(composed["torch_cdist"](Tensor(a), Tensor(b), p=p),
          torch.cdist(torch.tensor(a), torch.tensor(b), p=p))


@pytest.mark.parametrize("p, keepdim", [(2, False), (1, True), (3.0, False)])
def test_pairwise_distance(composed: dict[str, Callable[..., Any]], p: float,
                           keepdim: bool) -> None:
    # pytorch-metric-learning's LpDistance compares embeddings row by row
    a, b = _array(4, 6), _array(4, 6) * 2
    _same(composed["torch_pairwise_distance"](Tensor(a), Tensor(b), p, keepdim=keepdim),
          torch.nn.functional.pairwise_distance(torch.tensor(a), torch.tensor(b), p,
                                                keepdim=keepdim))


@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(composed: dict[str, Callable[..., Any]], nonlinearity: str,
                        param: float | None) -> None:
    # torchaudio's Tacotron2 scales its initial weights by the gain of what follows
    assert composed["torch_calculate_gain"](nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param))


PAIRS = '''\
import torch.nn as nn


def same_value_pairs(values):
    matches = (values.unsqueeze(1) == values.unsqueeze(0)).float()
    matches.fill_diagonal_(0)
    return matches


def scale_in_place(t):
    t.mul_(2)


class PairCount(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(4, 1)

    def forward(self, x):
        return same_value_pairs(self.scale(x)[:, 0]).sum()
'''


def test_an_in_place_update_of_a_tensor_a_helper_made_is_a_new_value(
        tmp_path: Path, run_cells: CellRun) -> None:
    # pytorch-metric-learning's pair mining, called by the losses' forward: the helper
    # made ``matches`` itself, so no caller sees the update and the name takes the new
    # value (GRAPH_MODE writes into Parameters only); a tensor the helper was given is
    # its caller's, and is still written in place
    out, cells = run_cells(tmp_path, {"pairs.py": PAIRS})
    code = (out / "pairs.py").read_text()
    assert "    matches = torch_fill_diagonal_(matches, 0)\n" in code
    assert "    torch_assign_(t, t * 2)\n" in code
    (cell,) = cells.values()
    assert (cell.pynative, cell.graph) == ("pass", "pass"), cell.error
