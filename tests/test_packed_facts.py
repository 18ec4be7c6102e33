"""A file's findings travel and wait as one blob of bytes (``PackedList``) until the scan
reads them, and read the same as before they were packed."""

from __future__ import annotations

import pickle

from msready.analyzer.facts import FileResult, PackedList, Pending
from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity


def _finding(line: int) -> Finding:
    return Finding(rule="MS201", rule_name="nonzero", category=Category.DYNAMIC_SHAPE,
                   severity=Severity.WARNING, confidence=Confidence.HIGH,
                   location=Location("m.py", line, 5, line, 20), symbol="torch.nonzero",
                   message="Output shape depends on the data.", suggestion="Use a mask.",
                   function="m.f")


def test_it_is_a_list_while_it_is_built() -> None:
    packed: PackedList[int] = PackedList([1, 2])
    packed.append(3)
    assert list(packed) == [1, 2, 3] and len(packed) == 3
    assert packed == PackedList([1, 2, 3]) and packed != PackedList([3])


def test_pickled_it_is_one_blob_that_loads_on_each_read() -> None:
    findings = PackedList([_finding(3), _finding(4)])
    loaded = pickle.loads(pickle.dumps(findings))
    assert loaded._items is None and loaded._blob == findings.pack()
    assert list(loaded) == list(findings) == list(loaded)
    first, again = next(iter(loaded)), next(iter(loaded))
    assert first == again and first is not again  # nothing is kept between reads
    assert pickle.loads(pickle.dumps(loaded)) == findings  # packed again as it is


def test_appending_to_a_packed_list_unpacks_it() -> None:
    loaded: PackedList[int] = pickle.loads(pickle.dumps(PackedList([1])))
    loaded.append(2)
    assert loaded._items == [1, 2] and list(loaded) == [1, 2]


def test_an_empty_list_packs_to_nothing() -> None:
    empty: PackedList[int] = PackedList()
    assert empty.pack() == b""
    assert list(pickle.loads(pickle.dumps(empty))) == []


def test_a_file_result_keeps_its_findings_and_pending_ones_through_pickle() -> None:
    result = FileResult("m.py", "m", False, "parsed", 10)
    result.findings.append(_finding(3))
    result.pending.append(Pending.of(_finding(5), ("pred", "tensor_test", ("p", "m.f", "x"))))
    loaded = pickle.loads(pickle.dumps(result))
    assert loaded == result
    pending = next(iter(loaded.pending))
    assert pending.condition == ("pred", "tensor_test", ("p", "m.f", "x"))
    assert pending.finding == _finding(5)
