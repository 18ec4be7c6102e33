"""What the Cells' translation asks of MindSpore is asked once per MindSpore version: the
next scan reads the answers from the cache and does not import MindSpore to translate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from msready.skeletons import ms_facts
from msready.skeletons.cache import installed_version

ASK = """
import json, sys
from pathlib import Path
from msready.skeletons import ms_facts
ms_facts.remember_in(Path(sys.argv[1]) if sys.argv[1] != "-" else None)
answers = {
    "Dense": ms_facts.kind("mindspore.nn.Dense"),
    "nn": ms_facts.kind("mindspore.nn"),
    "relu": ms_facts.kind("mindspore.ops.relu"),
    "missing": ms_facts.kind("mindspore.nn.NoSuchLayer"),
    "Dense params": [name for name, _, _ in ms_facts.params("mindspore.nn.Dense")],
    "has_bias default": [d for n, _, d in ms_facts.params("mindspore.nn.Dense")
                         if n == "has_bias"],
}
ms_facts.save()
print(json.dumps({"answers": answers, "imported": "mindspore" in sys.modules}))
"""


def _ask(cache: Path | None) -> dict[str, object]:
    run = subprocess.run([sys.executable, "-c", ASK, str(cache) if cache else "-"],
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_second_scan_reads_the_answers_without_importing_mindspore(tmp_path: Path) -> None:
    first = _ask(tmp_path)
    assert first["imported"] is True  # nothing known yet: MindSpore answers
    assert first["answers"] == {
        "Dense": "class", "nn": "module", "relu": "other", "missing": None,
        "Dense params": ["in_channels", "out_channels", "weight_init", "bias_init",
                         "has_bias", "activation", "dtype"],
        "has_bias default": [[True]],
    }
    kept = tmp_path / "mindspore-facts" / f"{ms_facts.FORMAT}-{installed_version('mindspore')}.json"
    assert json.loads(kept.read_text())["kind"]["mindspore.nn.Dense"] == "class"
    second = _ask(tmp_path)
    assert second == {"answers": first["answers"], "imported": False}


def test_without_a_cache_the_answers_stay_in_memory(tmp_path: Path) -> None:
    assert _ask(None)["imported"] is True
    assert not (tmp_path / "mindspore-facts").exists()


def test_answers_another_scan_wrote_meanwhile_are_kept(tmp_path: Path) -> None:
    ms_facts.remember_in(tmp_path)
    assert ms_facts.kind("mindspore.nn.ReLU") == "class"
    _ask(tmp_path)  # another scan writes its answers in between
    ms_facts.save()
    kept = next((tmp_path / "mindspore-facts").glob("*.json"))
    known = json.loads(kept.read_text())["kind"]
    assert {"mindspore.nn.ReLU", "mindspore.nn.Dense"} <= set(known)
    ms_facts.remember_in(None)


def test_a_damaged_answers_file_gives_the_answers_it_can(tmp_path: Path) -> None:
    folder = tmp_path / "mindspore-facts"
    folder.mkdir()
    kept = folder / f"{ms_facts.FORMAT}-{installed_version('mindspore')}.json"
    kept.write_text(json.dumps({
        "kind": {"mindspore.nn.Dense": "class", "mindspore.nn.Odd": 5},
        "params": {"mindspore.nn.Dense": [["in_channels", "POSITIONAL_OR_KEYWORD"]]},
        "kept": "not a table"}))
    ms_facts.remember_in(tmp_path)
    assert ms_facts.kind("mindspore.nn.Dense") == "class"  # the valid answer is read
    assert ms_facts.kind("mindspore.nn.Odd") is None  # asked again: no such layer
    params = ms_facts.params("mindspore.nn.Dense")  # asked again: a param was cut short
    assert params is not None and params[0] == ("in_channels", "POSITIONAL_OR_KEYWORD",
                                                "empty")
    kept.write_text("{not json")
    ms_facts.remember_in(tmp_path)
    assert ms_facts.kind("mindspore.nn.Dense") == "class"
    ms_facts.remember_in(None)
