"""Inputs found by following what MindSpore's errors ask for, when every input of a Cell
is a guess and none of the guesses runs: a convolution says how many dimensions and
channels it wants, a Dense layer or a LayerNorm how wide the last dimension is, an
unpacking of ``x.shape`` how many dimensions there are."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from msready.analyzer.result import SkeletonResult
from msready.skeletons import runner
from msready.skeletons.child import asked_for, bracketed
from msready.skeletons.generate import _status_line, _translation_error

CellRun = tuple[Path, dict[str, SkeletonResult]]


def shapes_asked(shape: tuple[int, ...], error: str) -> list[tuple[int, ...]]:
    return [tuple(c[0].shape) for c in asked_for([np.zeros(shape, np.float32)], error)]


@pytest.mark.parametrize(("shape", "error", "asked"), [
    # a convolution wants four dimensions: the batch and channels kept, 16 x 16 added
    ((2, 16), "ValueError: For primitive[Conv2D], the x shape size must be equal to 4, "
              "but got 2.", [(2, 16, 16, 16)]),
    ((2, 4, 16, 16), "ValueError: For primitive[Conv3D], the x shape size must be equal "
                     "to 5, but got 4.", [(2, 4, 8, 8, 8)]),
    # then as many channels as its weight times its groups
    ((2, 16, 16, 16), "RuntimeError: For 'Conv2D', 'C_in' of input 'x' shape divide by "
                      "parameter 'group' must be equal to 'C_in' of input 'weight' shape: 4, "
                      "but got 'C_in' of input 'x' shape: 16, and 'group': 2.",
     [(2, 8, 16, 16)]),
    # a convolution of five maps made of two inputs (both, their difference and their
    # ratios) takes five channels: one per input
    ((2, 5, 16, 16), "RuntimeError: For 'Conv2D', 'C_in' of input 'x' shape divide by "
                     "parameter 'group' must be equal to 'C_in' of input 'weight' shape: 5, "
                     "but got 'C_in' of input 'x' shape: 25, and 'group': 1.",
     [(2, 1, 16, 16)]),
    ((2, 16, 8, 8), "ValueError: For BatchNorm, scale.shape[0] should be equal to input_x's "
                    "channel dimension: 16, bug got scale.shape[0]: 32.", [(2, 32, 8, 8)]),
    # a Dense layer and a LayerNorm say the width of the last dimension; a product that
    # got the input's width may also be an attention over tokens of that width
    ((2, 16), "ValueError: For 'MatMul' the input dimensions must be equal, but got "
              "'x1_col': 16 and 'x2_row': 64.", [(2, 64), (2, 8, 16)]),
    ((2, 5, 16), "ValueError: Dense shape error, got x_col: 16, w_row: 64. In Dense x_col "
                 "and w_row should be equal.", [(2, 5, 64)]),
    ((2, 16), "ValueError: For 'LayerNorm', gamma or beta shape must match input shape, but "
              "got input shape: [const vector]{2, 16}, gamma shape: [const vector]{64}, "
              "beta shape: [const vector]{64}.", [(2, 64)]),
    # an axis read past the last one (an einops pattern's ``s__[2]``): one more dimension,
    # tokens of the input's width first
    ((2, 64), "IndexError: tuple index out of range", [(2, 8, 64), (2, 64, 16)]),
    # an unfolding (Im2Col) takes four dimensions
    ((2, 8, 64), "ValueError: For primitive[Im2Col], the dimension of input x must be equal "
                 "to 4, but got 3.", [(2, 8, 16, 16)]),
    # unpacking ``x.shape`` says how many dimensions there are
    ((2, 16), "ValueError: not enough values to unpack (expected 4, got 2)", [(2, 16, 16, 16)]),
    ((2, 192, 16, 16), "ValueError: too many values to unpack (expected 3)", [(2, 192, 16)]),
    # a kernel larger than what the convolutions and pooling left: a larger image
    ((2, 1, 16, 16), "ValueError: For 'Conv2d', input shape's h and w after padding must be "
                     "greater than or equal to kernel_size's h and w respectively.",
     [(2, 1, 32, 32)]),
    ((2, 3, 8, 8), "RuntimeError: For 'AvgPool' op, H_out/W_out must be positive, but "
                   "H_out/W_out is 0, please check input and parameters of op",
     [(2, 3, 16, 16)]),
    # a feature map reshaped to sizes that hold a quarter of its values: a quarter of the
    # image, or a few pixels less (after unpadded kernels, 28 x 28 where 32 x 32 was tried)
    ((2, 1, 32, 32), "ValueError: proposed_shape '[const vector]{2, 4, 64, 1}' is invalid "
                     "for input of size 2048", [(2, 1, 16, 16), (2, 1, 28, 28)]),
    # a sequence of tokens laid out as a 32 x 32 grid: 1024 tokens
    ((2, 8, 16), "ValueError: proposed_shape '[const vector]{2, 32, 32, 16}' is invalid for "
                 "input of size 256", [(2, 1024, 16)]),
    # channels divided down to nothing (``c // (16 * 16)``): the channels the other sizes
    # leave of the product
    ((2, 3, 8, 8), "ValueError: proposed_shape '[const vector]{2, 16, 16, 0, 8, 8}' is "
                   "invalid for input of size 384", [(2, 256, 8, 8)]),
    # the input added to a table it does not broadcast with takes the table's sizes
    ((2, 16, 16, 16), "ValueError: For 'Mul', input1.shape and input2.shape need to "
                      "broadcast. The value of input1.shape[4] or input2.shape[2] must be 1 "
                      "or -1 when they are not the same, but got input1.shape = "
                      "[2, 16, 16, 16] and input2.shape = [256, 16]", [(2, 16, 256, 16)]),
    # (a table with more dimensions: the input has them too, the batch kept)
    ((2, 16), "ValueError: For 'AddExt', input.shape and other.shape need to broadcast. The "
              "value of input.shape[2] or other.shape[4] must be 1 or -1 when they are not "
              "the same, but got input.shape = [2, 16] and other.shape = [1, 2, 256, 256]",
     [(2, 2, 256, 256), (2, 1, 2, 256, 256)]),
    # attention scores of 8 tokens meet a bias for 1024: 1024 tokens
    ((2, 8, 384), "ValueError: For 'AddExt', input.shape and other.shape need to broadcast. "
                  "The value of input.shape[5] or other.shape[4] must be 1 or -1 when they "
                  "are not the same, but got input.shape = [2, 8, 8, 8] and other.shape = "
                  "[8, 1024, 1024]", [(2, 1024, 384)]),
    # an axis past the last one: an image first, then one more dimension
    ((2, 16), "ValueError: For primitive[MeanExt], the axis value must be in [-2,2), but "
              "got 2.", [(2, 16, 16, 16), (2, 16, 16)]),
])
def test_an_error_about_the_input_asks_for_a_shape(shape: tuple[int, ...], error: str,
                                                   asked: list[tuple[int, ...]]) -> None:
    assert shapes_asked(shape, error) == asked


@pytest.mark.parametrize("error", [
    "AttributeError: 'Tensor' object has no attribute 'is_cuda'",
    "ValueError: For 'AddExt', input.shape and other.shape need to broadcast.",
    "AssertionError",
    # a reshape whose size is open (-1), or of something that is not an image
    "ValueError: proposed_shape '[const vector]{2, 8, -1, 49}' is invalid for input of "
    "size 65536",
    "ValueError: proposed_shape '[const vector]{2, 4, 8}' is invalid for input of size 32",
    # the rank it already has
    "ValueError: For primitive[Conv2D], the x shape size must be equal to 2, but got 2.",
])
def test_an_error_that_says_nothing_about_the_input_asks_for_nothing(error: str) -> None:
    assert shapes_asked((2, 16), error) == []


def test_an_input_too_large_to_run_quickly_is_not_asked_for() -> None:
    # 192 channels of a 224 x 224 image: 19 million values, slower to run than the search
    # may take; of a 16 x 16 image, tried
    error = "RuntimeError: For 'Conv2D', 'C_in' of input 'x' shape divide by parameter " \
            "'group' must be equal to 'C_in' of input 'weight' shape: 192, but got 'C_in' " \
            "of input 'x' shape: 3, and 'group': 1."
    assert shapes_asked((2, 3, 224, 224), error) == []
    assert shapes_asked((2, 3, 16, 16), error) == [(2, 192, 16, 16)]


def test_a_repeated_guess_changes_with_the_first_input_or_stays_and_others_stay() -> None:
    query, mask = np.zeros((2, 16), np.float32), np.zeros((3,), np.float32)
    both, alone = asked_for([query, query, mask, None],
                            "ValueError: Dense shape error, got x_col: 16, w_row: 32.")
    assert [None if a is None else a.shape for a in both] == [(2, 32), (2, 32), (3,), None]
    assert [None if a is None else a.shape for a in alone] == [(2, 32), (2, 16), (3,), None]


def test_a_dense_layer_after_convolutions_asks_for_a_larger_image() -> None:
    # 64 features came out of a 16 x 16 image, the Dense layer wants 1600: 80 x 80
    error = "ValueError: For 'MatMul' the input dimensions must be equal, but got " \
            "'x1_col': 64 and 'x2_row': 1600."
    # (else a few pixels larger: unpadded kernels take a constant off every side)
    assert shapes_asked((2, 3, 16, 16), error) == [(2, 3, 80, 80), (2, 3, 20, 20)]
    # a sequence of tokens may be longer, or wider
    assert shapes_asked((2, 8, 16), error) == [(2, 8, 400), (2, 8, 1600)]


def test_sides_that_gave_too_few_and_too_many_features_bound_the_next_side() -> None:
    bounds: dict[tuple[object, ...], list[int]] = {}

    def bracket(side: int, got: int) -> list[tuple[int, ...]]:
        error = "ValueError: For 'MatMul' the input dimensions must be equal, but got " \
                f"'x1_col': {got} and 'x2_row': 576."
        image = np.zeros((2, 3, side, side), np.float32)
        return [tuple(c[0].shape) for c in bracketed([image], error, bounds)]

    assert bracket(16, 64) == []  # too few: no bound above yet
    assert bracket(48, 5184) == [(2, 3, 32, 32)]
    assert bracket(32, 1600) == [(2, 3, 24, 24)]


def test_a_tensor_read_as_one_number_makes_a_later_input_zero() -> None:
    image, step = np.zeros((2, 3, 16, 16), np.float32), np.zeros((2, 16), np.float32)
    [changed] = asked_for([image, step], "ValueError: The tensor should have only one "
                                         "element, but got 1536, more than one element is "
                                         "ambiguous.")
    assert changed[0] is image and changed[1] == 0


CELLS = '''\
from mindspore import nn, ops


class Conv(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def construct(self, x):
        return self.conv(x)


class Grouped(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, group=2)

    def construct(self, x):
        return self.conv(x)


class Volume(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(4, 8, 3)

    def construct(self, x):
        return self.conv(x)


class Norm(nn.Cell):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((64,))

    def construct(self, x):
        return self.norm(x)


class Unpack(nn.Cell):
    def construct(self, x):
        b, c, h, w = x.shape
        return x.reshape(b, c, h * w).mean(2)


class Attention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.q = nn.Dense(32, 32)

    def construct(self, q, k):
        return ops.matmul(self.q(q), k.swapaxes(-1, -2))


class Stepped(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, pad_mode='same')
        self.fc = nn.Dense(4 * 10 * 10, 2)  # after a 20 x 20 image

    def construct(self, x, step):
        if step > 0:
            x = x * 2
        x = self.conv(x)
        return self.fc(x.reshape(x.shape[0], -1))


class Shrinking(nn.Cell):
    def __init__(self):
        super().__init__()
        self.down = nn.SequentialCell([nn.Conv2d(1, 4, 3, stride=2), nn.Conv2d(4, 4, 3, stride=2)])
        self.last = nn.Conv2d(4, 4, 7, pad_mode='valid')  # 7 x 7 left of a 28 x 28 image
        self.fc = nn.Dense(4, 2)

    def construct(self, x):
        x = self.last(self.down(x))
        return self.fc(x.reshape(x.shape[0], -1))


class Pyramid(nn.Cell):
    """Convolutions and rounding-up pools before a Dense layer built for 24 x 24 images
    (MTCNN's refinement network): 16 x 16 gives too few features, 48 x 48 too many."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell([
            nn.Conv2d(3, 28, 3, pad_mode='valid'),
            nn.MaxPool2d(3, 2, pad_mode='pad', padding=0, ceil_mode=True),
            nn.Conv2d(28, 48, 3, pad_mode='valid'),
            nn.MaxPool2d(3, 2, pad_mode='pad', padding=0, ceil_mode=True),
            nn.Conv2d(48, 64, 2, pad_mode='valid')])
        self.fc = nn.Dense(576, 16)

    def construct(self, x):
        x = self.body(x)
        return self.fc(x.reshape(x.shape[0], -1))


class Ratio(nn.Cell):
    """Five maps made of two inputs into one convolution (LPIPS's distance to logit)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(5, 8, 1)

    def construct(self, d0, d1):
        eps = 0.1
        return self.conv(ops.cat((d0, d1, d0 - d1, d0 / (d1 + eps), d1 / (d0 + eps)), 1))


class Broken(nn.Cell):
    def construct(self, x):
        return x.no_such_method()
'''


def job(name: str, *shapes: list[int], guessed: bool = True) -> dict[str, object]:
    return {"key": name, "module": "cells", "name": name, "kwargs": {}, "compare": None,
            "guessed": guessed,
            "inputs": [{"shape": s, "dtype": "float32", "high": 0} for s in shapes]}


def test_the_child_follows_the_errors_to_an_input_that_runs(tmp_path: Path) -> None:
    (tmp_path / "cells.py").write_text(CELLS, encoding="utf-8")
    jobs = [job("Conv", [2, 16]), job("Grouped", [2, 16, 16, 16]),
            job("Volume", [2, 4, 16, 16]), job("Norm", [2, 16]), job("Unpack", [2, 16]),
            job("Attention", [2, 16], [2, 16]), job("Stepped", [2, 16], [2, 16]),
            job("Broken", [2, 16]), job("Shrinking", [2, 16]),
            job("Pyramid", [2, 3, 16, 16], guessed=False),
            job("Ratio", [2, 5, 16, 16], [2, 5, 16, 16], guessed=False),
            # a guess among the alternatives is the shape the first error asks for: it is
            # not run again, and its own error (three channels) is followed
            job("Conv", [2, 16]) | {"key": "Alternatives", "alternatives": [
                [{"shape": [2, 16, 16, 16], "dtype": "float32", "high": 0}]]},
            job("Conv", [2, 16], guessed=False) | {"key": "Given"},
            job("Broken", [2, 16], guessed=False) | {"key": "BrokenGiven"}]
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)}, jobs,
                          timeout=60)
    ran = {key: (res["pynative"], res["graph"], res["input_shape"], res["input_fits"])
           for key, res in got.items()}
    assert ran == {
        "Conv": ("pass", "pass", "(2, 3, 16, 16)", True),  # four dimensions, then three channels
        "Grouped": ("pass", "pass", "(2, 8, 16, 16)", True),
        "Volume": ("pass", "pass", "(2, 4, 8, 8, 8)", True),
        "Norm": ("pass", "pass", "(2, 64)", True),
        "Unpack": ("pass", "pass", "(2, 16, 16, 16)", True),
        "Attention": ("pass", "pass", "(2, 32), (2, 32)", True),
        "Alternatives": ("pass", "pass", "(2, 3, 16, 16)", True),
        # four dimensions, three channels, a step that is a number, then 20 x 20
        "Stepped": ("pass", "pass", "(2, 3, 20, 20), 0", True),
        # 16 x 16 is too small for the last kernel, 32 x 32 four times too large for the
        # Dense layer (back to 16 x 16, tried), so a few pixels smaller: 28 x 28
        "Shrinking": ("pass", "pass", "(2, 1, 28, 28)", True),
        # 16 x 16 gives 64 features, 48 x 48 (nine times the area) 5184, 20 x 20 256:
        # halfway between the sides that gave too few and too many, 32, then 24
        "Pyramid": ("pass", "pass", "(2, 3, 24, 24)", True),
        # the first layer's five channels were given to each input: one each
        "Ratio": ("pass", "pass", "(2, 1, 16, 16), (2, 1, 16, 16)", True),
        # nothing about the input: no input fits, and the error is the first guess's
        "Broken": ("fail", "fail", "(2, 16)", False),
        # an input the repository's layers give is run first; when it fails, the errors
        # are followed from it too, and the given input is kept beside its error
        "Given": ("pass", "pass", "(2, 3, 16, 16)", True),
        # an error that says nothing about the input: the given input's failure stands
        "BrokenGiven": ("fail", "fail", "(2, 16)", True),
    }
    assert "no attribute 'no_such_method'" in got["Broken"]["error"]
    assert got["Given"]["given_input"] == [
        "(2, 16)", "ValueError: For primitive[Conv2D], the x shape size must be equal to 4, "
                   "but got 2."]
    assert "given_input" not in got["BrokenGiven"] and "given_input" not in got["Conv"]


COUNTED = '''\
from mindspore import nn, ops


class Inner(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def construct(self, x):
        return self.conv(x)


class Halving(nn.Cell):
    """Seven levels, each halving the image (a U-Net's): its sides are multiples of 128.
    Its output is as long as the number of inputs it refused."""

    def __init__(self):
        super().__init__()
        self.refused = 0

    def construct(self, x):
        if x.shape[-1] % 128:
            self.refused += 1
            raise ValueError("the sides do not halve seven times")
        return ops.zeros((self.refused,))


class Counted(nn.Cell):
    """Its output is as long as the number of its runs that worked."""

    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.runs = 0

    def construct(self, x):
        self.inner(x)
        self.runs += 1
        return ops.zeros((self.runs,))
'''


def test_the_run_that_found_the_input_is_the_pynative_run(tmp_path: Path) -> None:
    # a whole generator can take half of a Cell's time limit for one forward: the
    # input search's run that worked is not run a second time
    (tmp_path / "cells.py").write_text(COUNTED, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Counted", [2, 16]),
                           job("Counted", [2, 16], guessed=False) | {"key": "Given"}])
    for key in ("Counted", "Given"):
        outcome = got[key]
        assert (outcome["pynative"], outcome["input_shape"]) == ("pass", "(2, 3, 16, 16)")
        assert outcome["output_shape"] == "(1,)"
        # the Cells it called are those of that run
        assert outcome["ran"] == {"cells.Inner": "(2, 3, 16, 16)"}


def test_image_sides_are_tried_up_to_a_unets_each_refused_once(tmp_path: Path) -> None:
    # 32 (the layers' guess), then 16, 28, 64, 96: refused, each run once; 128 runs
    (tmp_path / "cells.py").write_text(COUNTED, encoding="utf-8")
    image = {"shape": [2, 3, 32, 32], "dtype": "float32", "high": 0, "spatial": 2}
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Halving", guessed=False) | {"inputs": [image]}])
    outcome = got["Halving"]
    assert (outcome["pynative"], outcome["input_shape"]) == ("pass", "(2, 3, 128, 128)")
    assert outcome["output_shape"] == "(5,)"


SLOW = '''\
import time

from mindspore import nn, ops


class Quick(nn.Cell):
    def construct(self, x):
        return x * 2


class Receding(nn.Cell):
    """Slow to run, and every input it is given asks for one a little wider."""

    def construct(self, x):
        time.sleep(1.5)
        return x + ops.zeros((x.shape[-1] + 1,))
'''


def test_a_search_that_finds_nothing_ends_before_the_cells_time_limit(tmp_path: Path) -> None:
    # each try takes 1.5 s and asks for another width: a search as long as the Cell's
    # limit would read as a time-out; the search stops first (after 20 s), so the Cell
    # says no input was found, with the first guess's error (the quick Cell first: the
    # first Cell's limit also covers the child's start)
    (tmp_path / "cells.py").write_text(SLOW, encoding="utf-8")
    got = runner.run_jobs("msready.skeletons.child", {"root": str(tmp_path)},
                          [job("Quick", [2, 16]), job("Receding", [2, 16])], timeout=40)
    assert got["Quick"]["pynative"] == "pass"
    outcome = got["Receding"]
    assert (outcome["pynative"], outcome["input_fits"]) == ("fail", False)
    assert "timed out" not in outcome["error"]
    assert "input.shape = [2, 16] and other.shape = [17]" in outcome["error"]


@pytest.mark.parametrize(("error", "translation"), [
    # a torch tensor method MindSpore's tensors lack fails on any input
    ("PyNative: AttributeError: 'Tensor' object has no attribute 'masked_scatter_'; "
     "GRAPH_MODE: AttributeError: 'Tensor' object has no attribute 'masked_scatter_'", True),
    ("PyNative: NotImplementedError: torch.distributed.is_available has no MindSpore form "
     "for this target and is left in the Cell", True),
    # a name the input was expected to have: the input is not a tensor at all
    ("PyNative: AttributeError: 'Tensor' object has no attribute 'proposal_boxes'", False),
    ("PyNative: ValueError: For primitive[Conv2D], the x shape size must be equal to 4, "
     "but got 2.", False),
    # only the PyNative part counts
    ("PyNative: AssertionError; GRAPH_MODE: AttributeError: 'Tensor' object has no "
     "attribute 'masked_scatter_'", False),
])
def test_a_translation_error_is_a_failure_whatever_the_input(error: str,
                                                             translation: bool) -> None:
    assert _translation_error(error) is translation


SOURCES = {
    "__init__.py": "",
    "tables.py": '''\
from abc import abstractmethod

import torch
import torch.nn as nn


class BiasTable(nn.Module):
    def __init__(self, heads=2):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(9, heads))

    def forward(self):
        return self.table * 2


class Base(nn.Module):
    @abstractmethod
    def forward(self):
        """Subclasses give their features."""


class Stub(nn.Module):
    def forward(self, x):
        raise NotImplementedError


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, *xs):
        return self.fc(torch.stack(xs).sum(0))
''',
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory,
          run_cells: Callable[[Path, dict[str, str]], CellRun]) -> CellRun:
    return run_cells(tmp_path_factory.mktemp("search"), SOURCES)


def test_a_forward_without_parameters_runs_without_an_input(built: CellRun) -> None:
    res = built[1]["BiasTable"]
    assert (res.pynative, res.graph, res.input_shape, res.output_shape) == (
        "pass", "pass", "", "(9, 2)")


def test_a_forward_taking_star_args_still_gets_an_input(built: CellRun) -> None:
    res = built[1]["Stack"]
    assert (res.pynative, res.input_shape) == ("pass", "(2, 8)")


def test_a_base_class_whose_forward_is_abstract_is_not_run(built: CellRun) -> None:
    for name in ("Base", "Stub"):
        res = built[1][name]
        assert (res.status, res.error) == (
            "unverified", "its forward is abstract (a base class its subclasses implement)")


def test_the_status_line_of_a_cell_run_on_a_searched_input_names_the_given_one() -> None:
    res = SkeletonResult("model.Pool", "model.py", 40, "skeletons/model.py", "pass", "pass",
                         status="pass", input_shape="(2, 16, 8, 8)", output_shape="(2, 16)",
                         given_input="(2, 8, 8, 16)", given_error="ValueError: too small")
    assert _status_line(res) == (
        "PyNative pass, GRAPH_MODE pass, input (2, 16, 8, 8) -> (2, 16) (input found by "
        "search: its layers give (2, 8, 8, 16), which fails with ValueError: too small)")


CHANNELS_LAST = '''\
import torch.nn as nn


class AxialEncoder(nn.Module):
    """Reads a channels-last input with ``input_axis`` axes between batch and channels
    (a Perceiver's image or clip)."""

    def __init__(self, input_channels=3, input_axis=2, dim=16):
        super().__init__()
        self.input_axis = input_axis
        self.proj = nn.Linear(input_channels, dim)

    def forward(self, data):
        b, *axis, _, device, dtype = *data.shape, data.device, data.dtype
        assert len(axis) == self.input_axis, 'input data must have the right number of axis'
        return self.proj(data).flatten(1, -2).mean(dim=1)
'''


def test_the_axes_forward_counts_between_batch_and_channels_give_a_channels_last_input(
        tmp_path: Path, run_cells: Callable[[Path, dict[str, str]], CellRun]) -> None:
    _, cells = run_cells(tmp_path, {"axial.py": CHANNELS_LAST})
    cell = cells["AxialEncoder"]
    assert (cell.pynative, cell.graph) == ("pass", "pass")
    assert (cell.input_shape, cell.given_input) == ("(2, 16, 16, 3)", "")


ONE_PAIR = '''\
import torch
import torch.nn as nn


class PairDistance(nn.Module):
    """A metric of one image pair at a time (LPIPS's L2)."""

    def forward(self, in0, in1):
        assert(in0.size()[0] == 1)  # currently only supports batchSize 1
        (N, C, X, Y) = in0.size()
        return torch.mean((in0 - in1) ** 2, dim=1).view(N, 1, X, Y).mean()
'''


def test_a_batch_size_forward_asserts_is_the_one_fed(
        tmp_path: Path, run_cells: Callable[[Path, dict[str, str]], CellRun]) -> None:
    _, cells = run_cells(tmp_path, {"pair.py": ONE_PAIR})
    cell = cells["PairDistance"]
    assert (cell.pynative, cell.graph) == ("pass", "pass")
    assert cell.input_shape.startswith("(1, ") and ", (1, " in cell.input_shape


LABELLED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class ContrastiveLoss(nn.Module):
    """A metric-learning loss: its labels may be left out by the signature, not by the code."""

    def __init__(self, margin=0.5):
        super().__init__()
        self.margin = margin

    def forward(self, embeddings, labels=None):
        if labels is None:
            raise ValueError("labels are required for this loss function")
        dist = torch.cdist(embeddings, embeddings)
        same = (labels[:, None] == labels[None, :]).float()
        return (same * dist.pow(2) + (1 - same) * F.relu(self.margin - dist).pow(2)).mean()


class HardestPairs(nn.Module):
    """A miner: its labels are required, and must be one class per row."""

    def forward(self, embeddings, labels):
        if labels.ndim != 1 or labels.shape[0] != embeddings.shape[0]:
            raise ValueError("labels must be a 1D tensor of shape (batch_size,)")
        dist = torch.cdist(embeddings, embeddings)
        same = labels[:, None] == labels[None, :]
        return torch.where(same, dist, torch.zeros_like(dist)).amax(dim=1)


class Scale(nn.Module):
    """An optional argument named like no labels is left out."""

    def forward(self, x, scale=None):
        return x if scale is None else x * scale
'''


def test_an_argument_named_for_labels_is_given_labels_when_needed(
        tmp_path: Path, run_cells: Callable[[Path, dict[str, str]], CellRun]) -> None:
    _, cells = run_cells(tmp_path, {"losses.py": LABELLED})
    loss = cells["ContrastiveLoss"]
    assert (loss.pynative, loss.graph) == ("pass", "pass"), loss.error
    assert loss.input_shape == "(2, 16), (2,) int"
    miner = cells["HardestPairs"]
    assert (miner.pynative, miner.graph) == ("pass", "pass"), miner.error
    assert miner.input_shape == "(2, 16), (2,) int"
    assert cells["Scale"].input_shape == "(2, 16)"  # tried first, and it ran


NORM_FIRST = '''\
import torch.nn as nn


class MaskHead(nn.Module):
    """A GroupNorm takes any number of axes after the channels; the Conv1d after it says
    the input is a signal."""

    def __init__(self, channels=24):
        super().__init__()
        self.norm = nn.GroupNorm(1, channels)
        self.conv = nn.Conv1d(channels, 8, 3)

    def forward(self, x):
        return self.conv(self.norm(x))
'''


def test_a_layer_of_any_rank_first_lets_the_next_layer_choose_the_rank(
        tmp_path: Path, run_cells: Callable[[Path, dict[str, str]], CellRun]) -> None:
    _, cells = run_cells(tmp_path, {"heads.py": NORM_FIRST})
    head = cells["MaskHead"]
    assert (head.pynative, head.graph) == ("pass", "pass"), head.error
    assert (head.input_shape, head.output_shape) == ("(2, 24, 32)", "(2, 8, 30)")


RESIZED = '''\
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class UpBlock(nn.Module):
    """Upsamples to the size its caller names, then joins the skip connection."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(2 * channels, channels, 3, padding=1)

    def forward(self, x, target_height: int, target_width: int,
                skip: Optional[torch.Tensor] = None):
        x = F.interpolate(x, size=(target_height, target_width), mode="nearest")
        skip = x if skip is None else skip
        return self.conv(torch.cat([x, skip], dim=1))
'''


def test_a_forward_argument_annotated_int_is_a_size_as_large_as_the_image(
        tmp_path: Path, run_cells: Callable[[Path, dict[str, str]], CellRun]) -> None:
    _, cells = run_cells(tmp_path, {"up.py": RESIZED})
    block = cells["UpBlock"]
    assert (block.pynative, block.graph) == ("pass", "pass"), block.error
    assert block.input_shape == "(2, 8, 16, 16), 16, 16"
    assert block.output_shape == "(2, 8, 16, 16)"
