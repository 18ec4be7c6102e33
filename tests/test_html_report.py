"""The HTML report in a real headless Chromium: no console error, no network request, the
filters change what is shown (by select and by URL hash), print styles hide the controls,
and a screenshot is saved.

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (fd 3 in,
fd 4 out, NUL-separated JSON messages) with the standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from msready.analyzer.findings import Category, Confidence, Finding, Location, Severity
from msready.analyzer.priorities import prioritise
from msready.analyzer.result import ScanResult, SkeletonResult
from msready.analyzer.scan import scan_files
from msready.reports import html
from msready.rules.docs import DOCS_URL

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"

MODEL = '''\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        keep = torch.nonzero(x)
        return self.conv(x)[keep]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Block()

    def forward(self, x):
        print(x.shape)  # <script>alert("x")</script>
        return self.backbone(x).item()
'''

TRAIN = '''\
import torch
from model import Net

opt = torch.optim.SGD(Net().parameters(), lr=0.1, momentum=0.9)
'''


def _finding(path: str, line: int, category: Category, severity: Severity,
             trace: tuple[str, ...] = ()) -> Finding:
    return Finding(
        rule={Category.DYNAMIC_SHAPE: "MS201", Category.GRAPH_SYNTAX: "MS501",
              Category.IDIOM: "MS601"}[category],
        rule_name=f"{category.value}-example",
        category=category, severity=severity, confidence=Confidence.HIGH,
        location=Location(path, line, 9, line, 30), symbol="torch.nonzero",
        message=f"A {category.value} hazard <b>here</b>.", suggestion="Write it another way.",
        trace=trace,
    )


@pytest.fixture(scope="module")
def result() -> ScanResult:
    """A real scan of a two-file repository, with findings of three categories added."""
    scanned = scan_files({"model.py": MODEL, "train.py": TRAIN}, target="cpu")
    scanned.findings = [
        _finding("model.py", 11, Category.DYNAMIC_SHAPE, Severity.ERROR,
                 ("Net.forward", "Block.forward")),
        _finding("model.py", 12, Category.DYNAMIC_SHAPE, Severity.WARNING),
        _finding("model.py", 21, Category.GRAPH_SYNTAX, Severity.WARNING, ("Net.forward",)),
        _finding("model.py", 22, Category.GRAPH_SYNTAX, Severity.ERROR, ("Net.forward",)),
        _finding("train.py", 4, Category.IDIOM, Severity.INFO),
    ]
    scanned.skeletons = [SkeletonResult("model.Block", "model.py", 5, "skeletons/block.py",
                                        "pass", "fail", "RuntimeError: <graph> failed")]
    prioritise(scanned)
    return scanned


class Browser:
    """A headless Chromium page driven over the DevTools pipe."""

    def __init__(self, tmp: Path) -> None:
        self._to_chrome_r, self._to_chrome_w = os.pipe()
        self._from_chrome_r, self._from_chrome_w = os.pipe()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--remote-debugging-pipe",
             f"--user-data-dir={tmp / 'profile'}", "about:blank"],
            pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=self._wire_fds,
        )
        os.close(self._to_chrome_r)
        os.close(self._from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=self.session)

    def _wire_fds(self) -> None:
        # In the child: Chromium reads commands on fd 3 and writes answers on fd 4. Copy both
        # pipe ends out of the way first, so that wiring one never overwrites the other.
        read_end = fcntl.fcntl(self._to_chrome_r, fcntl.F_DUPFD, 10)
        write_end = fcntl.fcntl(self._from_chrome_w, fcntl.F_DUPFD, 10)
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome_r], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_chrome_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and wait for its answer, keeping events that arrive meanwhile."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})  # type: ignore[no-any-return]
            self.events.append(answer)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """Wait for an event (or take it from those already received)."""
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open(self, url: str) -> None:
        """Load a page afresh (through about:blank, so that a new hash is a new load)."""
        for step in ("about:blank", url):
            self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
            self.call("Page.navigate", {"url": step}, session=self.session)
            self.wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value."""
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session=self.session)
        if "exceptionDetails" in answer:
            raise AssertionError(f"page script failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(str(params.get("exceptionDetails")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
        return out

    def requests(self) -> list[str]:
        """URLs the page requested."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        """Close the browser."""
        with contextlib.suppress(TimeoutError, RuntimeError, OSError):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome_w)
        os.close(self._from_chrome_r)


@pytest.fixture(scope="module")
def report(result: ScanResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(html.render(result), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is needed for the HTML report test (apt-get install chromium); "
                    f"not found at {CHROMIUM}")
    page = Browser(tmp_path_factory.mktemp("chromium"))
    page.call("Emulation.setDeviceMetricsOverride",
              {"width": 1366, "height": 860, "deviceScaleFactor": 1, "mobile": False},
              session=page.session)
    yield page
    page.close()


VISIBLE = "document.querySelectorAll('article.finding:not([hidden])').length"


def test_loads_without_console_errors_or_network(browser: Browser, report: Path) -> None:
    browser.events.clear()
    browser.open(report.as_uri())
    # Five findings of three causes: MS201 on torch.nonzero twice, MS501 twice, MS601 once.
    assert browser.js("document.querySelectorAll('article.finding').length") == 3
    assert browser.js(VISIBLE) == 3
    assert browser.errors() == []
    assert all(u.startswith(("file:", "data:")) for u in browser.requests()), browser.requests()


def test_example_repository_report_loads_cleanly(browser: Browser, tmp_path: Path) -> None:
    from msready.analyzer.scan import ScanOptions, scan

    example = Path(__file__).resolve().parent.parent / "examples" / "tinynet"
    scanned = scan(str(example), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    page = tmp_path / "report.html"
    page.write_text(html.render(scanned), encoding="utf-8")
    browser.events.clear()
    browser.open(page.as_uri() + "#category=idiom")
    idioms = sum(1 for c in scanned.causes if c.category is Category.IDIOM)
    assert idioms and browser.js(VISIBLE) == idioms
    assert browser.errors() == []


def test_category_filter_hides_other_findings(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    shown = browser.js("""(() => {
        const s = document.getElementById('filter-category');
        s.value = 'dynamic-shape';
        s.dispatchEvent(new Event('change'));
        return Array.from(document.querySelectorAll('article.finding:not([hidden])'))
            .map(a => a.dataset.category);
    })()""")
    assert shown == ["dynamic-shape"]
    assert browser.js("location.hash") == "#category=dynamic-shape"
    assert browser.js("document.getElementById('filter-count').textContent") == (
        "1 of 3 causes shown")
    assert browser.errors() == []


def test_filters_combine_and_reset(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    browser.js("""(() => {
        for (const [k, v] of [['severity', 'error'], ['file', 'model.py']]) {
            const s = document.getElementById('filter-' + k);
            s.value = v; s.dispatchEvent(new Event('change'));
        }
    })()""")
    assert browser.js(VISIBLE) == 2
    browser.js("document.getElementById('filter-reset').click()")
    assert browser.js(VISIBLE) == 3


def test_hash_in_url_applies_filter_on_load(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri() + "#severity=error&file=model.py")
    assert browser.js("document.getElementById('filter-severity').value") == "error"
    assert browser.js(VISIBLE) == 2
    browser.open(report.as_uri() + "#category=no-such-category")
    assert browser.js(VISIBLE) == 3


def test_files_table_click_filters_by_file(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    browser.js("document.querySelector('.file-link[data-value=\"train.py\"]').click()")
    assert browser.js(VISIBLE) == 1
    assert browser.js("document.getElementById('filter-file').value") == "train.py"


def test_start_here_lists_blockers_that_link_to_their_cause(browser: Browser,
                                                            report: Path) -> None:
    browser.open(report.as_uri())
    assert browser.js("document.querySelector('main > section').id") == "start-here"
    items = browser.js("""Array.from(document.querySelectorAll('#start-here li.blocker'))
        .map(li => [li.dataset.kind, li.querySelector('code').textContent,
                    li.querySelector('a.places-link').textContent])""")
    assert items == [["dynamic-shape", "torch.nonzero", "2 places"]]
    target = browser.js("document.querySelector('#start-here a.places-link')"
                        ".getAttribute('href')")
    assert browser.js(f"document.querySelector('{target}').dataset.count") == "2"


def test_one_item_per_cause_with_its_places_folded(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    first = "document.querySelector('article.cause')"
    assert browser.js(f"{first}.querySelector('.rule').textContent") == (
        "MS201 dynamic-shape-example")
    assert browser.js(f"{first}.querySelector('details.places').open") is False
    assert browser.js(f"{first}.querySelector('details.places li').checkVisibility()") is False
    browser.js(f"{first}.querySelector('details.places summary').click()")
    assert browser.js(f"{first}.querySelector('details.places').open") is True
    assert browser.js(f"{first}.querySelectorAll('details.places li').length") == 2
    assert browser.js(f"{first}.querySelector('details.places li').checkVisibility()") is True
    # Ordered by severity x where the code runs, not by family: the idiom comes last.
    order = browser.js("Array.from(document.querySelectorAll('article.cause'))"
                       ".map(a => a.dataset.category)")
    assert order[-1] == "idiom"


def test_files_table_is_sorted_and_sorts_on_click(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    files = ("Array.from(document.querySelectorAll('#files-table tbody tr'))"
             ".map(r => r.dataset.file)")
    cost = ("Array.from(document.querySelectorAll('#files-table tbody tr'))"
            ".map(r => parseFloat(r.cells[6].textContent))")
    costs = browser.js(cost)
    assert costs == sorted(costs, reverse=True) and browser.js(files) == ["model.py", "train.py"]
    browser.js("document.querySelector('#files-table th[data-sort=text]').click()")
    assert browser.js(files) == ["model.py", "train.py"]
    browser.js("document.querySelector('#files-table th[data-sort=text]').click()")
    assert browser.js(files) == ["train.py", "model.py"]
    browser.js("document.querySelectorAll('#files-table th')[1].click()")
    counts = browser.js("Array.from(document.querySelectorAll('#files-table tbody tr'))"
                        ".map(r => parseInt(r.cells[1].textContent))")
    assert counts == [4, 1]


def test_no_horizontal_scroll_at_1280_pixels(browser: Browser, tmp_path: Path) -> None:
    from msready.analyzer.scan import ScanOptions, scan

    example = Path(__file__).resolve().parent.parent / "examples" / "tinynet"
    scanned = scan(str(example), options=ScanOptions(jobs=1, cache=False, target="cpu"))
    page = tmp_path / "report.html"
    page.write_text(html.render(scanned), encoding="utf-8")
    browser.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
                 session=browser.session)
    try:
        browser.open(page.as_uri())
        browser.js("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert browser.js("document.documentElement.scrollWidth") <= 1280
    finally:
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": 1366, "height": 860, "deviceScaleFactor": 1, "mobile": False},
                     session=browser.session)


def test_api_status_filter(browser: Browser, report: Path, result: ScanResult) -> None:
    browser.open(report.as_uri())
    status = result.apis[0].status
    hidden = browser.js(f"""(() => {{
        const s = document.getElementById('filter-status');
        s.value = '{status}'; s.dispatchEvent(new Event('change'));
        return Array.from(document.querySelectorAll('tr.api'))
            .filter(r => !r.hidden).map(r => r.dataset.status);
    }})()""")
    assert hidden and set(hidden) == {status}


def test_print_media_hides_controls(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=browser.session)
    try:
        assert browser.js("getComputedStyle(document.querySelector('.filters')).display") == "none"
        assert browser.js("getComputedStyle(document.querySelector('.top')).display") == "none"
    finally:
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=browser.session)
    pdf = browser.call("Page.printToPDF", {}, session=browser.session)
    assert base64.b64decode(pdf["data"])[:4] == b"%PDF"


def test_screenshot(browser: Browser, report: Path, tmp_path: Path) -> None:
    browser.open(report.as_uri())
    shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=browser.session)
    png = base64.b64decode(shot["data"])
    out = tmp_path / "report.png"
    out.write_bytes(png)
    if os.environ.get("MSREADY_SCREENSHOT_DIR"):
        shutil.copy(out, Path(os.environ["MSREADY_SCREENSHOT_DIR"]) / "report.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


# ----- the rendered text (no browser) --------------------------------------------------------


def test_first_screen_has_score_parts_formula_and_confidence(result: ScanResult) -> None:
    page = html.render(result)
    score = result.score
    assert score is not None
    assert f'aria-label="readiness score {score.value} of 100"' in page
    assert f"confidence: {score.confidence}" in page
    for part in score.parts:
        assert f'<td class="part-name">{part.name}</td>' in page
    assert "How the score is computed" in page
    assert f") = {score.value}</code></p>" in page


def test_findings_show_source_lines_trace_and_rule_link(result: ScanResult) -> None:
    page = html.render(result)
    assert ('<span class="line hit"><span class="ln">11</span>'
            '        keep = torch.nonzero(x)</span>') in page
    assert '<a class="rule" href="#rule-ms201" title="msready rule MS201">' in page
    assert '<article class="rule-doc" id="rule-ms201">' in page
    assert f'<a class="doc-link" href="{DOCS_URL}#ms201">docs/rules.md#ms201</a>' in page
    assert "<code>Net.forward</code> → <code>Block.forward</code>" in page


def test_everything_from_the_code_is_escaped(result: ScanResult) -> None:
    page = html.render(result)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "<b>here</b>" not in page
    assert "RuntimeError: &lt;graph&gt; failed" in page


def test_self_contained(result: ScanResult) -> None:
    page = html.render(result)
    assert "<link" not in page and "src=" not in page and "@import" not in page
    # Only links to the published rule documentation leave the page (a click, no fetch).
    outside = re.findall(r"""(?:href|src|action)\s*=\s*["']?((?:https?:)?//[^"' >]*)""", page)
    assert all(url.startswith(DOCS_URL + "#") for url in outside), outside
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page)
    assert "default-src 'none'" in page  # the page's own policy forbids any fetch


def test_apis_table_lists_targets_counts_and_locations(result: ScanResult) -> None:
    page = html.render(result)
    for api in result.apis:
        assert f"<code>{api.symbol}</code>" in page
    sgd = next(a for a in result.apis if a.symbol == "torch.optim.SGD")
    assert "<code>train.py:4</code>" in page and sgd.count == 1


def test_a_measured_difference_is_said_once_in_its_row() -> None:
    # torch.ones(2, 3): the table measured that ops.ones wants one size tuple; the note is
    # on the size parameter, and the row's paragraph does not say it a second time
    scanned = scan_files({"m.py": "import torch\nx = torch.ones(2, 3)\n"}, target="cpu")
    page = html.render(scanned)
    row = page[page.index('data-symbol="torch.ones"'):]
    row = row[:row.index("</tr>")]
    assert row.count("Measured on CPU") == 1
    assert "<b>semantics</b> <code>size</code>: Measured on CPU" in row


def test_checklist_and_skeletons_are_rendered(result: ScanResult) -> None:
    page = html.render(result)
    assert '<span class="run run-fail">fail</span>' in page
    assert '<h3>Optimizer <span class="muted">(' in page
    assert "lr=0.1, momentum=0.9" in page


def test_a_passing_cells_note_is_not_shown_as_an_error(result: ScanResult) -> None:
    note = ("at the repository's sizes it held more than 4 GiB of memory; it ran with "
            "smaller made-up sizes")
    ran = SkeletonResult("model.Wide", "model.py", 30, "skeletons/model.py", "pass", "pass",
                         note, status="pass", synthesized="dim=48")
    page = html.render(replace(result, skeletons=[*result.skeletons, ran]))
    assert '<pre class="note">at the repository' in page
    assert "<pre>RuntimeError: &lt;graph&gt; failed</pre>" in page  # a failure stays one


def test_an_input_found_by_search_shows_the_given_input_and_its_error(
        result: ScanResult) -> None:
    ran = SkeletonResult("model.Pool", "model.py", 40, "skeletons/model.py", "pass", "pass",
                         status="pass", input_shape="(2, 16, 8, 8)",
                         given_input="(2, 8, 8, 16)",
                         given_error="ValueError: Dense shape error, got x_col: 8, w_row: 16.")
    page = html.render(replace(result, skeletons=[*result.skeletons, ran]))
    assert "found by search: its layers give <code>(2, 8, 8, 16)</code>" in page
    assert ('<pre class="note">with (2, 8, 8, 16): ValueError: Dense shape error, got '
            'x_col: 8, w_row: 16.</pre>') in page


def test_empty_repository_renders(tmp_path: Path) -> None:
    empty = scan_files({"notes.py": "print('no torch here')\n"}, target="cpu")
    page = html.render(empty)
    assert "No torch API use was found." in page
    assert "No findings" in page
    assert empty.score is not None and empty.score.value == 0
    assert "msready found no torch usage here" in page


def test_unscored_result_renders(result: ScanResult) -> None:
    page = html.render(replace(result, score=None))
    assert "no score" in page and "No readiness score was computed" in page


def test_source_lines_match_parser_lines_after_a_form_feed() -> None:
    source = "import torch\n\x0c\ndef f(x):\n    return torch.nonzero(x)\n"
    scanned = scan_files({"ff.py": source}, target="cpu")
    scanned.findings = [replace(_finding("ff.py", 4, Category.DYNAMIC_SHAPE, Severity.ERROR))]
    prioritise(scanned)
    page = html.render(scanned)
    assert ('<span class="line hit"><span class="ln">4</span>'
            '    return torch.nonzero(x)</span>') in page


def test_donut_legend_click_filters_the_api_table(browser: Browser, report: Path) -> None:
    browser.open(report.as_uri())
    browser.js("document.querySelector('[data-api-status=\"consistent\"]').click()")
    shown = browser.js("Array.from(document.querySelectorAll('tr.api'))"
                       ".filter(r => !r.hidden).map(r => r.dataset.status)")
    hidden = browser.js("document.querySelectorAll('tr.api[hidden]').length")
    assert shown and set(shown) == {"consistent"} and hidden > 0
    assert browser.errors() == []
