"""A Cell's cached outcome is keyed by its generated file and the generated files its
import runs: editing another file, or msready's analysis, leaves it cached when the
Cell's code is the same."""

from __future__ import annotations

from pathlib import Path

from msready.skeletons.cache import CellCache, file_closures, imported

TREE = {
    "pkg/__init__.py": "from .layers import Block\n",
    "pkg/layers.py": "from mindspore import nn\nfrom pkg.util import width\n\nclass Block: ...\n",
    "pkg/util.py": "def width(c):\n    return c\n",
    "pkg/heads/__init__.py": "",
    "pkg/heads/cls.py": "from ..util import width\n\nclass Head: ...\n",
    "solo.py": "import mindspore\n\nclass Solo: ...\n",
}


def _job(module: str, name: str) -> dict[str, object]:
    return {"key": f"{module}.{name}", "module": module, "name": name, "inputs": [[2, 8]]}


def test_imports_name_the_packages_on_the_way() -> None:
    assert imported("pkg/heads/cls.py", TREE["pkg/heads/cls.py"]) == {
        "pkg", "pkg.util", "pkg.util.width"}
    assert imported("pkg/__init__.py", TREE["pkg/__init__.py"]) == {
        "pkg", "pkg.layers", "pkg.layers.Block"}
    assert imported("x.py", "import importlib\nimportlib.import_module('pkg')\n") is None


def test_a_module_runs_its_imports_and_their_packages() -> None:
    closures = file_closures(TREE)
    assert closures["solo"] == {"solo.py"}
    # ``pkg.heads.cls`` imports ``pkg.util``, and importing ``pkg`` runs its __init__,
    # which imports ``pkg.layers``; ``pkg.heads`` runs its own __init__
    assert closures["pkg.heads.cls"] == {"pkg/heads/cls.py", "pkg/util.py", "pkg/__init__.py",
                                         "pkg/layers.py", "pkg/heads/__init__.py"}
    # importing ``pkg.util`` runs ``pkg/__init__.py`` first, and what it imports
    assert closures["pkg.util"] == {"pkg/util.py", "pkg/__init__.py", "pkg/layers.py"}


def test_a_file_the_package_imports_keys_the_cells_of_its_siblings(tmp_path: Path) -> None:
    # ``pkg/__init__.py`` imports ``pkg.layers``: a class there that stopped the package
    # from importing stopped ``pkg.util`` too, which imports nothing of the package, and
    # mending it must run that Cell again
    job = _job("pkg.util", "width")
    CellCache(TREE, tmp_path).put(job, {"pynative": "fail", "graph": "fail"})
    mended = CellCache({**TREE, "pkg/layers.py": TREE["pkg/layers.py"] + "X = 1\n"}, tmp_path)
    assert mended.get(job) is None


def test_a_module_read_by_name_at_run_time_depends_on_everything() -> None:
    tree = {**TREE, "dyn.py": "import importlib\nm = importlib.import_module('solo')\n"}
    assert file_closures(tree)["dyn"] == set(tree)


def test_editing_one_file_keeps_the_cells_that_do_not_run_it(tmp_path: Path) -> None:
    before = CellCache(TREE, tmp_path)
    for module, name in (("solo", "Solo"), ("pkg.layers", "Block"), ("pkg.util", "width")):
        before.put(_job(module, name), {"pynative": "pass", "graph": "pass"})
    after = CellCache({**TREE, "pkg/util.py": "def width(c):\n    return 2 * c\n"}, tmp_path)
    assert after.get(_job("solo", "Solo")) == {"pynative": "pass", "graph": "pass"}
    assert after.get(_job("pkg.layers", "Block")) is None  # it imports pkg.util
    assert after.get(_job("pkg.util", "width")) is None


def test_a_class_passed_as_an_argument_brings_its_module(tmp_path: Path) -> None:
    # the child imports ``pkg.layers`` to build ``block=Block``
    job = {**_job("solo", "Solo"), "kwargs": {"block": {"__msready_object__": ["pkg.layers",
                                                                               "Block"],
                                                        "class": True}}}
    CellCache(TREE, tmp_path).put(job, {"pynative": "pass", "graph": "pass"})
    edited = CellCache({**TREE, "pkg/layers.py": TREE["pkg/layers.py"] + "X = 1\n"}, tmp_path)
    assert edited.get(job) is None
    assert CellCache(TREE, tmp_path).get(job) == {"pynative": "pass", "graph": "pass"}
