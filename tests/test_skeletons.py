"""Starter Cells for example repositories, generated and run through the real pipeline:
scan the folder, build the Cells, run them in PyNative and GRAPH_MODE on CPU."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from msready.analyzer.result import SkeletonResult
from msready.analyzer.scan import ScanOptions, scan
from msready.skeletons.generate import build_skeletons

FIXTURES = Path(__file__).parent / "fixtures" / "skeletons"
_CACHE: dict[tuple[str, bool], tuple[Path, dict[str, SkeletonResult]]] = {}


def run_example(name: str, tmp_root: Path, compare: bool = False
                ) -> tuple[Path, dict[str, SkeletonResult]]:
    """Scan one example folder and build (and run) its Cells; results by class name."""
    key = (name, compare)
    if key not in _CACHE:
        result = scan(str(FIXTURES / name), options=ScanOptions(jobs=1, cache=False,
                                                                target="cpu"))
        out = tmp_root / f"{name}-{compare}"
        skeletons = build_skeletons(result, out / "skeletons", run=True, compare_torch=compare)
        _CACHE[key] = (out, {s.torch_class.rsplit(".", 1)[1]: s for s in skeletons})
    return _CACHE[key]


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("skeletons")


@pytest.mark.parametrize(("example", "cls"), [
    ("mlp", "MLP"),
    ("cnn", "CNN"),
    ("cnn", "ConvBNReLU"),
    ("lm", "LanguageModel"),
    ("transformer", "TransformerBlock"),
    ("transformer", "FeedForward"),
    ("buffers", "Standardize"),
    ("hazard", "Gate"),
    ("configured", "SelfAttention"),
    ("configured", "Encoder"),
    ("configured", "RNNLM"),
    ("mnist", "Net"),  # image size found by trying sizes: the Linear wants 28 x 28
    ("init", "Net"),  # nn.init calls, torch.no_grad blocks and decorators
    ("resnet", "ResNet"),  # block classes as arguments, helpers returning layers, self.modules()
    ("shadow", "L"),  # defined in logging.py, a name the standard library already holds
])
def test_example_cells_pass_in_both_modes(example: str, cls: str, tmp_root: Path) -> None:
    _, results = run_example(example, tmp_root)
    res = results[cls]
    assert (res.pynative, res.graph, res.error) == ("pass", "pass", None)


def test_hazard_cell_passes_pynative_and_fails_graph_mode(tmp_root: Path) -> None:
    out, results = run_example("hazard", tmp_root)
    res = results["Clipper"]
    assert (res.pynative, res.graph) == ("pass", "fail")
    assert res.error is not None and "Try" in res.error
    code = (out / "skeletons" / "gate.py").read_text()
    ast.parse(code)
    assert "# TODO(msready MS506)" in code
    assert "# TODO(msready MS202)" in code
    assert "# msready: Clipper: PyNative pass, GRAPH_MODE fail, input (2, 8) -> (2, 8): " in code


def test_result_fields_point_at_the_torch_class(tmp_root: Path) -> None:
    _, results = run_example("cnn", tmp_root)
    res = results["ConvBNReLU"]
    assert (res.torch_class, res.path, res.line) == ("models.blocks.ConvBNReLU",
                                                    "models/blocks.py", 5)
    assert res.cell_file == "skeletons/models/blocks.py"


def test_files_mirror_the_repository_and_import_across_files(tmp_root: Path) -> None:
    out, _ = run_example("cnn", tmp_root)
    root = out / "skeletons"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == [
        "models/__init__.py", "models/blocks.py", "models/net.py",
        "train_steps/__init__.py", "train_steps/train__module.py"]  # train.py's loop
    net = (root / "models" / "net.py").read_text()
    assert "from .blocks import ConvBNReLU" in net
    assert "import torch" not in net and "from torch" not in net
    assert "class CNN(nn.Cell):" in net and "def construct(self, x):" in net
    assert "from .net import CNN" in (root / "models" / "__init__.py").read_text()


def test_constructor_arguments_come_from_instantiation_sites(tmp_root: Path) -> None:
    # MLP has no defaults: MLP(20, 64, classes=3) in build() supplies them.
    _, results = run_example("mlp", tmp_root)
    assert results["MLP"].pynative == "pass"


def test_unknown_inputs_are_guessed_and_arguments_synthesized(tmp_root: Path) -> None:
    # Swish has no layer that gives its input: the guesses are tried and one runs.
    # Head is built from a config object nothing defines: its fields are synthesized.
    _, results = run_example("skip", tmp_root)
    swish, head = results["Swish"], results["Head"]
    assert (swish.status, swish.input_shape) == ("pass", "(2, 16)")
    assert (head.status, head.graph) == ("pass", "pass")
    assert head.synthesized == "config={hidden=16, classes=10}"


def test_weight_maps_are_written_next_to_the_cells(tmp_root: Path) -> None:
    import json

    out, _ = run_example("cnn", tmp_root)
    mapping = json.loads((out / "skeletons" / "models" / "net.py.weights.json").read_text())
    cnn = mapping["CNN"]["params"]
    assert cnn["features.0.bn.weight"] == "features.0.bn.gamma"
    assert cnn["features.0.bn.running_var"] == "features.0.bn.moving_variance"
    assert cnn["features.2.conv.weight"] == "features.2.conv.weight"
    assert cnn["classifier.bias"] == "classifier.bias"
    assert cnn["features.0.bn.num_batches_tracked"] is None
    assert mapping["CNN"]["shapes"]["features.0.conv.weight"] == [8, 3, 3, 3]
    lm_out, _ = run_example("lm", tmp_root)
    lm_map = json.loads((lm_out / "skeletons" / "lm.py.weights.json").read_text())
    lm = lm_map["LanguageModel"]["params"]
    assert lm["embed.weight"] == "embed.embedding_table"
    assert lm["rnn.weight_hh_l1"] == "rnn.weight_hh_l1"


@pytest.mark.parametrize(("example", "classes"), [
    ("cnn", ("CNN", "ConvBNReLU")),
    ("lm", ("LanguageModel",)),
    ("transformer", ("TransformerBlock",)),
    ("buffers", ("Standardize",)),
    ("configured", ("SelfAttention", "Encoder", "RNNLM")),
    ("mnist", ("Net",)),
    ("resnet", ("ResNet",)),
    ("shadow", ("L",)),
])
def test_compare_torch_matches_the_original_outputs(example: str, classes: tuple[str, ...],
                                                     tmp_root: Path) -> None:
    _, results = run_example(example, tmp_root, compare=True)
    for cls in classes:
        res = results[cls]
        assert res.pynative == "pass", res.error
        assert res.max_abs_diff is not None and res.max_abs_diff < 1e-4, (cls, res)


def test_without_compare_no_difference_is_reported(tmp_root: Path) -> None:
    _, results = run_example("lm", tmp_root)
    assert results["LanguageModel"].max_abs_diff is None


def test_configuration_objects_and_constants_build_the_cells(tmp_root: Path) -> None:
    # Encoder(ModelConfig(vocab=VOCAB, layers=1)) and RNNLM(NTOKEN, 24) in train.py, with
    # VOCAB = 32 and NTOKEN = VOCAB * 2 module constants; ModelConfig is a dataclass.
    import json

    out, results = run_example("configured", tmp_root)
    shapes = json.loads((out / "skeletons" / "model.py.weights.json").read_text())
    encoder = shapes["Encoder"]
    assert encoder["shapes"]["embed.embedding_table"] == [32, 16]
    assert "blocks.0.qkv.weight" in encoder["params"]
    assert "blocks.1.qkv.weight" not in encoder["params"]
    assert shapes["RNNLM"]["shapes"]["embed.embedding_table"] == [64, 24]
    # The configuration class is generated too, so the Cells can be built with it.
    assert "class ModelConfig:" in (out / "skeletons" / "config.py").read_text()
    assert results["SelfAttention"].pynative == "pass"


def test_the_cli_reports_the_cells_in_its_json(tmp_path: Path) -> None:
    import json

    from msready.cli import main

    for mode, expected in (("write", ("skipped", "skipped", "not run (--skeletons write)")),
                           ("run", ("pass", "pass", None))):
        out = tmp_path / mode
        code = main(["scan", str(FIXTURES / "mlp"), "-o", str(out), "--format", "json",
                     "--target", "cpu", "--skeletons", mode, "--no-cache", "-q"])
        assert code == 0
        entries = json.loads((out / "msready.json").read_text())["skeletons"]
        assert [(e["torch_class"], e["cell_file"], e["pynative"], e["graph"], e["error"])
                for e in entries] == [("mlp.MLP", "skeletons/mlp.py", *expected)]
        assert (out / "skeletons" / "mlp.py").is_file()


def test_block_built_only_by_a_helper_runs_with_synthesized_arguments(
        tmp_root: Path) -> None:
    # BasicBlock is only built as block(...) inside ResNet._make_layer: no arguments of its
    # own, so it gets small made-up ones and says so.
    out, results = run_example("resnet", tmp_root)
    block = results["BasicBlock"]
    assert (block.pynative, block.graph, block.error) == ("pass", "pass", None)
    assert block.synthesized == "inplanes=16, planes=16"
    code = (out / "skeletons" / "resnet.py").read_text()
    assert code.startswith("# msready: BasicBlock: PyNative pass, GRAPH_MODE pass, input "
                           "(2, 16, 16, 16) -> (2, 16, 16, 16) (synthesized: inplanes=16, "
                           "planes=16)\n")


NESTED = '''\
from torch import nn


def build(width):
    class Local(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(width, 2)

        def forward(self, x):
            return self.fc(x)

    return Local()


def check():
    class Probe(nn.Module):  # reads nothing of check(): built on its own
        def __init__(self, dim=4):
            super(Probe, self).__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return self.fc(x)

    return Probe()(None)


class Outer(nn.Module):
    class Inner(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return self.fc(x)

    def __init__(self):
        super().__init__()
        self.inner = Outer.Inner()

    def forward(self, x):
        return self.inner(x)
'''


def test_nested_classes_run_unless_they_read_their_functions_names(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    out, cells = run_cells(tmp_path, {"local.py": NESTED})
    assert (cells["Inner"].status, cells["Inner"].graph) == ("pass", "pass")
    assert (cells["Outer"].status, cells["Outer"].graph) == ("pass", "pass")
    local = cells["Local"]
    assert (local.status, local.error) == (
        "unverified", "defined inside the function build() and reads its local names "
                      "(width): only that function can build it; its translation is in the "
                      "Cell file")
    # a class a function defines but that reads none of its names is built from its lines
    probe = cells["Probe"]
    assert (probe.status, probe.graph, probe.input_shape) == ("pass", "pass", "(2, 4)")
    code = (out / "local.py").read_text()
    assert code.count("def construct(self, x):") == 4  # the nested classes' forward too


LEFT_IN_CELL = '''\
from torch import nn


def get_norm(norm, channels):
    norm = {"BN": nn.BatchNorm2d, "SyncBN": nn.SyncBatchNorm}[norm]
    return norm(channels)


class Plain(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = get_norm("BN", c)

    def forward(self, x):
        return self.bn(self.conv(x))


class Synced(Plain):
    def __init__(self, c=4):
        super().__init__(c)
        self.bn = get_norm("SyncBN", c)
'''


def test_a_torch_name_with_no_mindspore_form_fails_only_where_it_is_reached(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # nn.SyncBatchNorm has no CPU form: the registry keeps the torch name, and only the
    # Cell that calls it fails, naming it and the generated line that called it.
    out, cells = run_cells(tmp_path, {"nets.py": LEFT_IN_CELL})
    assert (cells["Plain"].status, cells["Plain"].graph) == ("pass", "pass")
    synced = cells["Synced"]
    assert synced.status == "fail" and synced.error is not None
    assert synced.error.startswith(
        "building the Cell: NotImplementedError: torch.nn.SyncBatchNorm has no MindSpore "
        "form for this target and is left in the Cell (see its TODO(msready MS100) line)")
    lines = (out / "nets.py").read_text().splitlines()
    line = int(synced.error.rsplit(":", 1)[1].rstrip(")"))
    assert lines[line - 1].strip() == "return norm(channels)"



BRANCH_LEFT_IN_CELL = '''\
import torch
from torch import nn


class Bessel(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 1e9:  # never here; GRAPH_MODE compiles the branch all the same
            return torch.special.i0e(y)
        return y
'''


def test_a_torch_name_graph_mode_compiles_is_the_one_its_error_names(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # GRAPH_MODE asks any object it compiles for its ``_func_graph_flags``: the stand-in
    # does not answer for torch, so the error is about torch.special.i0e itself
    _, cells = run_cells(tmp_path, {"bessel.py": BRANCH_LEFT_IN_CELL})
    cell = cells["Bessel"]
    assert (cell.pynative, cell.graph) == ("pass", "fail")
    assert cell.error is not None and cell.error.startswith("GRAPH_MODE: NotImplementedError")
    assert "torch.special.i0e has no MindSpore form" in cell.error
    assert "_func_graph_flags" not in cell.error

FUNCTIONAL_CONV = '''\
import torch
import torch.nn.functional as F
from torch import nn


class C(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 1)  # says what the Cell is fed
        self.weight = nn.Parameter(torch.randn(c, c, 3, 3))

    def forward(self, x):
        x = self.stem(x)
        a = F.conv2d(x, self.weight, padding='same')
        b = F.conv2d(x, self.weight, None, 1, 1)
        c = F.conv2d(x, self.weight, padding=(1, 1), groups=1)
        return a + b + c
'''


def test_functional_convolution_padding_matches_torch(tmp_path: Path) -> None:
    # 'same' is MindSpore's pad_mode; a size needs pad_mode='pad' and stays per axis
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "fc.py").write_text(FUNCTIONAL_CONV)
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    [cell] = build_skeletons(result, tmp_path / "out", run=True, compare_torch=True,
                             cache=False)
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert cell.max_abs_diff is not None and cell.max_abs_diff < 1e-3
    code = (tmp_path / "out" / "fc.py").read_text()
    assert "a = ops.conv2d(x, self.weight, pad_mode='same')" in code
    assert "b = ops.conv2d(x, self.weight, None, stride=1, pad_mode='pad', padding=1)" in code
    assert "c = ops.conv2d(x, self.weight, groups=1, pad_mode='pad', padding=(1, 1))" in code


PADDED_POOLS = '''\
from torch import nn


class Clip(nn.Module):
    def __init__(self, chan=4, frame_padding=None, padding=1):
        super().__init__()
        if frame_padding is None:
            frame_padding = 0
        self.stem = nn.Conv3d(3, chan, 1)
        self.max = nn.MaxPool3d(3, stride=(1, 2, 2), padding=(frame_padding, padding, padding))
        self.avg = nn.AvgPool3d(3, stride=2, padding=padding)

    def forward(self, x):
        x = self.stem(x)
        return self.max(x) + self.avg(x)[:, :, :1]


class Wave(nn.Module):
    def __init__(self, padding=1):
        super().__init__()
        self.stem = nn.Conv1d(2, 4, 1)
        self.max = nn.MaxPool1d(3, 2, padding)
        self.avg = nn.AvgPool1d(3, 2, padding)

    def forward(self, x):
        x = self.stem(x)
        return self.max(x) + self.avg(x)
'''


def test_padded_1d_and_3d_poolings_match_torch(tmp_path: Path) -> None:
    # a padding (here held by names) needs pad_mode='pad' in MindSpore's 1-D and 3-D pools
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pools.py").write_text(PADDED_POOLS)
    result = scan(str(repo), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    cells = {s.torch_class.rsplit(".", 1)[1]: s for s in build_skeletons(
        result, tmp_path / "out", run=True, compare_torch=True, cache=False)}
    for name in ("Clip", "Wave"):
        cell = cells[name]
        assert (cell.pynative, cell.graph) == ("pass", "pass"), (name, cell.error)
        assert cell.max_abs_diff is not None and cell.max_abs_diff < 1e-4, name


def test_a_padding_known_only_at_run_time_gives_the_convolutions_keywords() -> None:
    from msready.skeletons.adapters import SOURCES
    namespace: dict[str, object] = {}
    exec(SOURCES["torch_conv_padding"], namespace)
    keywords = namespace["torch_conv_padding"]
    assert callable(keywords)
    assert keywords("same") == {"pad_mode": "same"}
    assert keywords(0) == {} and keywords((0, 0)) == {}
    assert keywords(2) == {"pad_mode": "pad", "padding": 2}
    assert keywords([1, 2]) == {"pad_mode": "pad", "padding": (1, 2)}
    # a MindSpore Conv2d's own (top, bottom, left, right), read back by a subclass
    assert keywords((1, 1, 2, 2)) == {"pad_mode": "pad", "padding": (1, 2)}


MODULATED = '''\
import torch
import torch.nn.functional as F
from torch import nn


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim):
        super().__init__()
        self.weight = nn.Parameter(
            torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = nn.Linear(style_dim, in_channel)
        self.padding = kernel_size // 2

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = (self.weight * style).sum(0)
        return F.conv2d(input, weight, padding=self.padding)
'''


def test_a_feature_map_with_a_condition_vector_is_among_the_inputs_tried(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    _, cells = run_cells(tmp_path, {"mod.py": MODULATED})
    cell = cells["ModulatedConv2d"]
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert cell.input_shape == "(2, 16, 16, 16), (2, 16)"


TIMES = '''\
import torch
from torch import nn


class ConcatConv2d(nn.Module):
    def __init__(self, dim_in, dim_out, ksize=3, padding=1):
        super().__init__()
        self._layer = nn.Conv2d(dim_in + 1, dim_out, ksize, padding=padding)

    def forward(self, t, x):
        tt = torch.ones_like(x[:, :1, :, :]) * t
        return self._layer(torch.cat([tt, x], 1))


class TimeUnet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.conv = nn.Conv2d(3, dim, 3, padding=1)

    def forward(self, x, time):
        return self.conv(x) * time.view(-1, 1, 1, 1)
'''


def test_a_time_parameter_gets_a_time(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # an ODE function's forward(t, x) takes a scalar first; a timestep after the data
    # is one number per sample
    _, cells = run_cells(tmp_path, {"ode.py": TIMES})
    ode, unet = cells["ConcatConv2d"], cells["TimeUnet"]
    assert (ode.status, ode.graph, ode.input_shape) == ("pass", "pass", "(), (2, 16, 16, 16)")
    assert (unet.status, unet.graph, unet.input_shape) == ("pass", "pass", "(2, 3, 16, 16), (2,)")


AUTOGRAD_FUNCTION = '''\
import torch
from torch import nn


class SwishAutoFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        x = ctx.saved_tensors[0]
        s = torch.sigmoid(x)
        return grad_output * (s * (1 + x * (1 - s)))


class SwishMe(nn.Module):
    def forward(self, x):
        return SwishAutoFn.apply(x)


swish = SwishAutoFn.apply  # the function under another name


class SwishByName(nn.Module):
    def forward(self, x):
        return swish(x)
'''


def test_an_autograd_function_runs_its_forward_and_says_its_backward_is_unused(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    out, cells = run_cells(tmp_path, {"act.py": AUTOGRAD_FUNCTION})
    for name in ("SwishMe", "SwishByName"):
        assert (cells[name].status, cells[name].graph) == ("pass", "pass"), cells[name].error
    text = (out / "act.py").read_text()
    assert "class SwishAutoFn(TorchFunction):" in text
    assert "return SwishAutoFn.forward(TorchFunctionContext(), x)" in text
    assert "# TODO(msready MS100): SwishAutoFn.backward is not used: MindSpore " \
           "differentiates forward" in text


HELPER_BUILT = '''\
from torch import nn


def make_conv(in_chs, out_chs, kernel_size, **kwargs):
    kwargs.setdefault("bias", False)
    if kwargs.pop("depthwise", False):
        layer = nn.Conv2d(in_chs, out_chs, kernel_size, groups=in_chs, **kwargs)
    else:
        layer = nn.Conv2d(in_chs, out_chs, kernel_size, **kwargs)
    return layer


class Stem(nn.Module):
    def __init__(self, in_chs=6, out_chs=16):
        super().__init__()
        self.conv = make_conv(in_chs, out_chs, 3, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)

    def forward(self, x):
        return self.pool(self.conv(x))
'''


def test_a_layer_a_helper_returns_through_a_variable_gives_the_input(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # make_conv returns ``layer``, a Conv2d taking 6 channels; the pooling rounds up
    # (ceil_mode), which MindSpore accepts with pad_mode='pad' only
    _, cells = run_cells(tmp_path, {"stem.py": HELPER_BUILT})
    stem = cells["Stem"]
    assert (stem.status, stem.graph) == ("pass", "pass"), stem.error
    assert (stem.input_shape, stem.output_shape) == ("(2, 6, 16, 16)", "(2, 16, 8, 8)")


NO_LAYER_GIVES_THE_INPUT = '''\
import torch
from torch import nn


class GroupScale2d(nn.Module):
    def __init__(self, num_features, groups=32, eps=1e-5):
        super().__init__()
        self.groups = groups
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))

    def forward(self, x):
        assert x.dim() == 4, "expected 4D input"
        B, C, H, W = x.shape
        assert C % self.groups == 0
        g = x.reshape(B, self.groups, -1)
        g = g / (g.std(dim=-1, keepdim=True) + self.eps)
        return g.reshape(B, C, H, W) * self.weight.view(1, -1, 1, 1)
'''


def test_an_input_no_layer_gives_takes_the_class_width_in_the_rank_forward_checks(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # num_features is made up a multiple of groups (32); forward asserts 4 dimensions:
    # the input tried first is (2, 32, 16, 16), still a guess (no layer gave it)
    _, cells = run_cells(tmp_path, {"norm.py": NO_LAYER_GIVES_THE_INPUT})
    cell = cells["GroupScale2d"]
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert (cell.synthesized, cell.input_shape) == ("num_features=32", "(2, 32, 16, 16)")


DTYPE_PASSED_DOWN = '''\
import torch
from torch import nn


def make_freqs(n, dtype=None):
    freqs = torch.arange(n).float() / n
    return freqs.to(dtype)


def make_grid(n, device=None, dtype=None):
    grid = torch.linspace(-1.0, 1.0, n)
    return grid.to(device=device, dtype=dtype)


class FreqScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("freqs", make_freqs(dim), persistent=False)

    def forward(self, x):
        return x * self.freqs + make_grid(x.shape[-1]) * make_grid(x.shape[-1], dtype=x.dtype)
'''

DTYPE_KEPT_IN_A_NAME = '''\
import torch
from torch import nn


def channel_std(x, eps=1e-5):
    x_dtype = x.dtype
    std = x.float().var(dim=(2, 3), unbiased=False, keepdim=True).add(eps).sqrt().to(x_dtype)
    return std.expand(x.shape)


class ScaledNorm(nn.Module):
    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.v = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        x_dtype = x.dtype
        v_shape = (1, -1, 1, 1)
        v = self.v.view(v_shape).to(x_dtype)
        x = x * (x * v).sigmoid() / channel_std(x, self.eps)
        return x * self.weight.view(v_shape).to(x_dtype) + self.bias.view(v_shape).to(x_dtype)
'''


def test_tensor_to_with_a_dtype_in_a_name_runs_whether_it_is_none_or_a_dtype(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # timm's rotary embeddings pass ``dtype=None`` down to ``.to(dtype)`` (keep the dtype);
    # its EvoNorms keep ``x_dtype = x.dtype`` and cast expressions back to it
    out, cells = run_cells(tmp_path, {"rope.py": DTYPE_PASSED_DOWN,
                                      "evo.py": DTYPE_KEPT_IN_A_NAME})
    for name in ("FreqScale", "ScaledNorm"):
        cell = cells[name]
        assert (cell.status, cell.graph) == ("pass", "pass"), (name, cell.error)
    assert cells["ScaledNorm"].output_shape == "(2, 16, 16, 16)"
    assert "return torch_to(grid, dtype)" in (out / "rope.py").read_text()
    assert "torch_to(self.v.view(v_shape), x_dtype)" in (out / "evo.py").read_text()


GRIDS = '''\
import torch
from torch import nn


def ndgrid(*tensors):
    return torch.meshgrid(*tensors, indexing="ij")


def old_ndgrid(*tensors):
    return torch.meshgrid(*tensors)  # torch's default is 'ij'


def grid_positions(shape, indexing="ij"):
    coords = [torch.arange(s, dtype=torch.float32) for s in shape]
    return torch.stack(torch.meshgrid(coords, indexing=indexing), dim=-1)


class GridBias(nn.Module):
    def __init__(self, channels, size=4):
        super().__init__()
        self.size = size
        self.conv = nn.Conv2d(channels, channels, 1)
        self.proj = nn.Linear(2, channels)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.conv(x), (self.size, self.size * 2))
        h = torch.arange(self.size, dtype=torch.float32)
        w = torch.arange(self.size * 2, dtype=torch.float32)
        rows, cols = ndgrid(h, w)
        rows_old, cols_old = old_ndgrid(*[h, w])
        pos = grid_positions((self.size, self.size * 2)) + (rows - rows_old + cols - cols_old
                                                             ).unsqueeze(-1)
        bias = self.proj(pos).permute(2, 0, 1).unsqueeze(0)  # (1, C, size, size * 2)
        return x + bias
'''


def test_meshgrid_of_a_list_in_a_name_and_of_unpacked_tensors_runs_in_both_modes(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # timm's rotary embeddings: ``torch.meshgrid(t, indexing=...)`` with a list ``t`` and
    # ``ndgrid(*tensors)``; a grid indexed 'xy' would have the other shape and not add up
    out, cells = run_cells(tmp_path, {"grids.py": GRIDS})
    cell = cells["GridBias"]
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert cell.output_shape == "(2, 16, 4, 8)"
    code = (out / "grids.py").read_text()
    assert "torch.stack" not in code and "torch_meshgrid(coords, indexing=indexing)" in code


NON_LOCAL = '''\
import torch
from torch import nn
from torch.nn import functional as F


class NonLocalBlock(nn.Module):
    def __init__(self, in_channels, dimension=2, bn_layer=True):
        super().__init__()
        self.inter_channels = max(in_channels // 2, 1)
        self.stem = nn.Conv2d(in_channels, in_channels, 3, padding=1)  # the input's rank
        if dimension == 3:
            conv_nd, bn = nn.Conv3d, nn.GroupNorm
        elif dimension == 2:
            conv_nd = nn.Conv2d
            bn = nn.GroupNorm
        else:
            conv_nd = nn.Conv1d
            bn = nn.GroupNorm
        self.g = conv_nd(in_channels, self.inter_channels, kernel_size=1)
        self.theta = conv_nd(in_channels, self.inter_channels, kernel_size=1)
        self.phi = conv_nd(in_channels, self.inter_channels, kernel_size=1)
        if bn_layer:
            self.W = nn.Sequential(conv_nd(self.inter_channels, in_channels, kernel_size=1),
                                   bn(4, in_channels))
            nn.init.constant_(self.W[1].weight, 0)
            nn.init.constant_(self.W[1].bias, 0)
            nn.init.kaiming_normal_(self.W[0].weight)
        else:
            self.W = conv_nd(self.inter_channels, in_channels, kernel_size=1)
            nn.init.constant_(self.W.weight, 0)
            nn.init.constant_(self.W.bias, 0)
        self.heads = nn.ModuleList([nn.Linear(in_channels, in_channels), nn.LayerNorm(in_channels)])
        nn.init.zeros_(self.heads[0].bias)
        nn.init.ones_(self.heads[-1].weight)

    def forward(self, x):
        x = self.stem(x)
        b, c = x.shape[0], x.shape[1]
        g_x = self.g(x).view(b, self.inter_channels, -1).permute(0, 2, 1)
        theta_x = self.theta(x).view(b, self.inter_channels, -1).permute(0, 2, 1)
        phi_x = self.phi(x).view(b, self.inter_channels, -1)
        f = F.softmax(torch.matmul(theta_x, phi_x), dim=-1)
        y = torch.matmul(f, g_x).permute(0, 2, 1).contiguous()
        y = y.view(b, self.inter_channels, *x.shape[2:])
        z = self.W(y) + x
        pooled = z.mean(dim=(2, 3))
        return z + self.heads[1](self.heads[0](pooled)).view(b, c, 1, 1)
'''


def test_a_norm_zero_initialised_through_an_index_builds_and_runs_in_both_modes(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # DensePose's non-local block: ``self.W[1]`` is a GroupNorm (gamma / beta), reached
    # through a class held by a local name; ``self.W[0]`` a convolution (weight)
    out, cells = run_cells(tmp_path, {"nonlocal_block.py": NON_LOCAL})
    cell = cells["NonLocalBlock"]
    assert (cell.status, cell.graph) == ("pass", "pass"), cell.error
    assert cell.output_shape == cell.input_shape
    code = (out / "nonlocal_block.py").read_text()
    for line in ("self.W[1].gamma.set_data(", "self.W[1].beta.set_data(",
                 "self.W[0].weight.set_data(", "self.W.weight.set_data(",
                 "self.heads[0].bias.set_data(", "self.heads[-1].gamma.set_data("):
        assert line in code, line


SIZED_FOR_IMAGES = '''\
import torch
from torch import nn


class PatchNet(nn.Module):
    """A ViT-like stem: its position table holds one row per patch of an img_size image."""

    def __init__(self, img_size=40, patch=8, dim=12):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, (img_size // patch) ** 2, dim))

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x + self.pos


class WindowBlock(nn.Module):
    """A block built for the feature maps of one resolution (a window attention's)."""

    def __init__(self, dim, resolution=(12, 20)):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)
        self.bias = nn.Parameter(torch.zeros(1, dim, *resolution))

    def forward(self, x):
        return self.conv(x) + self.bias


class Encoder(nn.Module):
    """input_size is an LSTM's width here, not an image's."""

    def __init__(self, input_size=10, hidden=6):
        super().__init__()
        self.rnn = nn.LSTM(input_size, hidden, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]
'''


def test_an_image_size_parameter_sizes_the_input(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # img_size=40 and resolution=(12, 20) are sizes none of the usual guesses has: the
    # input is built to them and runs first time
    _, cells = run_cells(tmp_path, {"sized.py": SIZED_FOR_IMAGES})
    patch, window = cells["PatchNet"], cells["WindowBlock"]
    assert (patch.status, patch.input_shape, patch.output_shape) == (
        "pass", "(2, 3, 40, 40)", "(2, 25, 12)"), patch.error
    assert (window.status, window.input_shape) == ("pass", "(2, 16, 12, 20)"), window.error
    # an RNN's input_size stays its width: (batch, steps, 10)
    assert (cells["Encoder"].status, cells["Encoder"].input_shape) == ("pass", "(2, 8, 10)")


CALLED_LOSS = '''\
import torch
from torch import nn


class GANLoss(nn.Module):
    """A loss called as ``criterion(prediction, True)``: it defines __call__, not forward."""

    def __init__(self, real_label=1.0, fake_label=0.0):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(real_label))
        self.register_buffer("fake_label", torch.tensor(fake_label))
        self.loss = nn.MSELoss()

    def get_target_tensor(self, prediction, target_is_real):
        target = self.real_label if target_is_real else self.fake_label
        return target.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        return self.loss(prediction, self.get_target_tensor(prediction, target_is_real))


class Gate(nn.Module):
    """Its second argument is a tensor that is also tested: not a flag."""

    def __init__(self, width=6):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x, mask):
        if mask is None:
            return self.fc(x)
        return self.fc(x) * mask
'''


def test_a_module_called_through_its_own_call_runs_it_as_construct(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # GANLoss's __call__ becomes the Cell's construct (MindSpore's Cell.__call__ must run
    # it); target_is_real is only tested for truth, so it is given True, not a tensor
    out, cells = run_cells(tmp_path, {"losses.py": CALLED_LOSS})
    loss = cells["GANLoss"]
    assert (loss.status, loss.graph, loss.input_shape, loss.output_shape) == (
        "pass", "pass", "(2, 16), True", "()"), loss.error
    code = (out / "losses.py").read_text()
    assert "def construct(self, prediction, target_is_real):" in code
    assert "def __call__" not in code
    # a tensor compared with None is an input like any other
    assert (cells["Gate"].status, cells["Gate"].input_shape) == ("pass", "(2, 6), (2, 6)")


STAGES = '''\
import torch.nn as nn


class Stage(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        for i in range(depth):
            self.add_module(f"b{i}", nn.Conv2d(width, width, 3, padding=1))

    def forward(self, x):
        for block in self.children():
            x = block(x)
        return x


class Net(nn.Module):
    def __init__(self, width=8, depths=(1, 2)):
        super().__init__()
        self.stages = nn.ModuleList()
        self.blocks = []
        for depth in depths:
            stage = Stage(width, depth)
            self.blocks.append(len(list(stage.children())))
            self.stages.append(stage)

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x
'''


def test_module_methods_of_a_module_the_function_built_are_the_cells(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # ``stage`` is only ever a new ``Stage``: its ``children()`` are MindSpore's cells()
    out, cells = run_cells(tmp_path, {"stages.py": STAGES})
    code = [ln.strip() for ln in (out / "stages.py").read_text().splitlines()]
    assert "self.blocks.append(len(list(stage.cells())))" in code
    assert (cells["Net"].pynative, cells["Net"].graph) == ("pass", "pass"), cells["Net"].error


HELD_CHAIN = '''\
import torch.nn as nn


class Pool(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        return self.c_proj(x)


class Tower(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.attnpool = Pool(width)

    def forward(self, x):
        return self.attnpool(x)


class Model(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.visual = Tower(width)
        std = self.visual.attnpool.c_proj.in_features ** -0.5
        nn.init.normal_(self.visual.attnpool.c_proj.weight, std=std)

    def forward(self, x):
        return self.visual(x)
'''


def test_an_attribute_of_a_layer_held_two_modules_down_has_mindspores_name(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    # ``self.visual.attnpool.c_proj`` is a Linear held by a Pool held by a Tower: its
    # ``in_features`` is the Dense's ``in_channels``
    out, cells = run_cells(tmp_path, {"model.py": HELD_CHAIN})
    code = [ln.strip() for ln in (out / "model.py").read_text().splitlines()]
    assert "std = self.visual.attnpool.c_proj.in_channels ** -0.5" in code
    assert (cells["Model"].pynative, cells["Model"].graph) == ("pass", "pass"), \
        cells["Model"].error


SPREAD_ARGUMENTS = '''\
import torch
import torch.nn as nn


class Knots(nn.Module):
    def __init__(self, domain=(-5, 5), knots=17):
        super().__init__()
        self.domain = domain
        self.knots = knots

    def forward(self, x):
        t = torch.linspace(*self.domain, self.knots, device=x.device)
        return x[..., :1] * t
'''


def test_a_call_spreading_its_arguments_drops_the_device_keyword(
        tmp_path: Path, run_cells: Callable[..., tuple[Path, dict[str, SkeletonResult]]]
) -> None:
    out, cells = run_cells(tmp_path, {"knots.py": SPREAD_ARGUMENTS})
    assert "t = ops.linspace(*self.domain, self.knots)" in (out / "knots.py").read_text()
    assert (cells["Knots"].pynative, cells["Knots"].graph) == ("pass", "pass")
