"""``msready convert-weights``: a torch checkpoint of a model the test trains, converted
with the weight map of its generated Cell and loaded into that Cell."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from msready.analyzer.scan import ScanOptions, scan
from msready.cli import main
from msready.skeletons.generate import build_skeletons
from msready.skeletons.weights import builtin_map

torch = pytest.importorskip("torch")
mindspore = pytest.importorskip("mindspore")
FIXTURE = Path(__file__).parent / "fixtures" / "skeletons" / "convert"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fixture model trained a few SGD steps, saved with torch, and its Cell built."""
    tmp = tmp_path_factory.mktemp("convert")
    torch.manual_seed(0)
    net = _load(FIXTURE / "tagger.py", "torch_tagger").Tagger()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(5):
        tokens = torch.randint(0, 50, (4, 7))
        loss = torch.nn.functional.cross_entropy(net(tokens).reshape(-1, 5),
                                                 torch.randint(0, 5, (28,)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    net.eval()
    pth = tmp / "model.pth"
    torch.save(net.state_dict(), pth)
    result = scan(str(FIXTURE), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    skeletons = build_skeletons(result, tmp / "skeletons", run=True, compare_torch=False)
    assert [(s.pynative, s.graph) for s in skeletons] == [("pass", "pass")], skeletons
    return {"tmp": tmp, "net": net, "pth": pth, "map": tmp / "skeletons" / "tagger.py.weights.json"}


def _cell(root: Path) -> Any:
    sys.path.insert(0, str(root))
    try:
        sys.modules.pop("tagger", None)
        return importlib.import_module("tagger").Tagger()
    finally:
        sys.path.remove(str(root))


def _load_into_cell(trained: dict[str, Any], ckpt: Path) -> tuple[Any, list[str], list[str]]:
    cell = _cell(trained["tmp"] / "skeletons")
    not_loaded, unused = mindspore.load_param_into_net(cell, mindspore.load_checkpoint(str(ckpt)))
    return cell, list(not_loaded), list(unused)


def test_converted_checkpoint_loads_every_parameter(trained: dict[str, Any]) -> None:
    ckpt = trained["tmp"] / "mapped.ckpt"
    code = main(["convert-weights", str(trained["pth"]), str(ckpt), "--map", str(trained["map"])])
    assert code == 0
    cell, not_loaded, unused = _load_into_cell(trained, ckpt)
    assert (not_loaded, unused) == ([], [])
    tokens = np.random.default_rng(1).integers(0, 50, (3, 7))
    cell.set_train(False)
    got = cell(mindspore.Tensor(tokens)).asnumpy()
    with torch.no_grad():
        want = trained["net"](torch.from_numpy(tokens)).numpy()
    assert np.abs(got - want).max() < 1e-4


def test_without_a_map_builtin_renames_cover_all_but_the_embedding(
        trained: dict[str, Any]) -> None:
    ckpt = trained["tmp"] / "builtin.ckpt"
    assert main(["convert-weights", str(trained["pth"]), str(ckpt)]) == 0
    _, not_loaded, unused = _load_into_cell(trained, ckpt)
    assert not_loaded == ["embed.embedding_table"]
    assert unused == ["embed.weight"]


def test_wrapped_and_data_parallel_checkpoints_are_unwrapped(trained: dict[str, Any]) -> None:
    state = {f"module.{k}": v for k, v in trained["net"].state_dict().items()}
    pth = trained["tmp"] / "wrapped.pth"
    torch.save({"epoch": 3, "state_dict": state}, pth)
    ckpt = trained["tmp"] / "wrapped.ckpt"
    assert main(["convert-weights", str(pth), str(ckpt), "--map", str(trained["map"])]) == 0
    assert _load_into_cell(trained, ckpt)[1:] == ([], [])


def test_builtin_map_by_suffix() -> None:
    keys = ["bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
            "bn.num_batches_tracked", "ln.weight", "ln.bias", "fc.weight", "fc.bias"]
    shapes = {"bn.weight": (4,), "bn.bias": (4,), "ln.weight": (4,), "ln.bias": (4,),
              "fc.weight": (4, 4), "fc.bias": (4,)}
    assert builtin_map(keys, shapes) == {
        "bn.weight": "bn.gamma", "bn.bias": "bn.beta", "bn.running_mean": "bn.moving_mean",
        "bn.running_var": "bn.moving_variance", "bn.num_batches_tracked": None,
        "ln.weight": "ln.gamma", "ln.bias": "ln.beta", "fc.weight": "fc.weight",
        "fc.bias": "fc.bias"}


def test_missing_checkpoint_is_one_error_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert-weights", str(tmp_path / "nope.pth"), str(tmp_path / "x.ckpt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msready: error: checkpoint") and err.count("\n") == 1


def test_bad_map_is_one_error_line(trained: dict[str, Any], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "map.json"
    bad.write_text("[1, 2", encoding="utf-8")
    assert main(["convert-weights", str(trained["pth"]), str(tmp_path / "x.ckpt"),
                 "--map", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msready: error: cannot read weight map") and err.count("\n") == 1


def test_not_a_checkpoint_is_one_error_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint")
    assert main(["convert-weights", str(junk), str(tmp_path / "x.ckpt")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "Traceback" not in err and err.count("\n") == 1


def test_without_torch_the_error_says_so(tmp_path: Path) -> None:
    script = ("import sys; sys.modules['torch'] = None\n"
              "from msready.cli import main\n"
              f"sys.exit(main(['convert-weights', {str(tmp_path / 'm.pth')!r}, "
              f"{str(tmp_path / 'm.ckpt')!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "needs torch" in proc.stderr and "Traceback" not in proc.stderr
