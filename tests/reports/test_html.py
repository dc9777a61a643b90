"""The HTML report, opened in real headless Chromium (Debian's package) and driven over
the DevTools protocol: it renders (the screenshot is not blank), its script fills the
leaderboard and the sample browser, a filter changes what is shown, and nothing is
fetched from the network. Skipped, saying so, where /usr/bin/chromium is absent.

Set EXECBENCH_SCREENSHOT=FILE.png to keep the screenshot.
"""

from __future__ import annotations

import asyncio
import base64
import html
import io
import json
import os
import re
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.layouts import shown_layouts
from execbench.rundir import Results, read_results
from tests.helpers.cli import execbench, said
from tests.helpers.data import shared_data
from tests.helpers.pages import page_samples

CHROMIUM = Path("/usr/bin/chromium")
NEEDS_CHROMIUM = pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium is not "
                                    "installed (/usr/bin/chromium; Debian: apt-get install "
                                    "chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0"]


@pytest.fixture(scope="module")
def page(report_runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    done = execbench("report", *report_runs, "--html", path)
    assert done.exit_code == 0, done.stderr
    assert said(done.stderr) == [f"HTML report written to {path}"], done.stderr
    return path


def test_the_page_is_one_self_contained_file(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text and "<script src" not in text
    assert 'src="data:image/png;base64,' in text  # the generalization figure
    data = page_samples(text)
    assert [len(run["rows"]) for run in data["runs"]] == [76, 38]
    # What belongs to an instance is stored once for both runs, each prompt once.
    assert len(data["instances"]) == 38 and len(data["prompts"]) <= 38


def test_the_page_holds_the_first_samples_of_each_task_and_says_so(
        report_runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run too large for a page: each task of each run keeps its first samples by
    instance id (here 3, at most 2,000 by default), and the page says how many of how many
    it holds; the tables still count every sample."""
    from execbench.reports import browser_data

    monkeypatch.setattr(browser_data, "PER_TASK", 3)
    path = tmp_path / "report.html"
    done = execbench("report", *report_runs, "--html", path)
    assert done.exit_code == 0, done.stderr
    text = path.read_text(encoding="utf-8")
    data = page_samples(text)
    shown = [(data["instances"][row[0]][0], row[1]) for row in data["runs"][0]["rows"]]
    tasks = {instance_id.split("/")[0] for instance_id, _ in shown}
    assert len(tasks) == 8 and len(shown) == 3 * len(tasks)  # the oracle's (n=2)
    for task in tasks:
        mine = [key for key in shown if key[0].startswith(task + "/")]
        assert mine == sorted(mine)[:3]
    held = sum(len(run["rows"]) for run in data["runs"])
    said = " ".join(html.unescape(text).split())
    assert (f"The page holds {held} of the runs' 114 samples: the first 3 of each task of "
            "each run") in said


def test_truths_read_as_python_prints_them(page: Path) -> None:
    data = page_samples(page.read_text(encoding="utf-8"))
    truths = {instance[0]: instance[3] for instance in data["instances"]}
    assert truths["input/small/words/0"] == "any input that gives 'A-B'"
    assert truths["output/small/words/1"] == "value: 'none'"
    assert not any('["str"' in (truth or "") for truth in truths.values())


@pytest.mark.slow  # about 20 s: five runs' results (their bootstrap) and the page
def test_five_runs_of_ten_thousand_samples_make_a_small_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sample kept its own copy of its instance's truth, source and task, and its
    run's name: five such runs made a 24 MB page. Built and run through the real code:
    2,000 programs whose calls carry recorded traces (so the build runs nothing). The
    page's per-task cap is raised to hold them all: what is measured is the packing."""
    from execbench.reports import browser_data
    from execbench.reports.html import render_html

    monkeypatch.setattr(browser_data, "PER_TASK", 10_000)
    from execbench.runner import RunConfig, run
    from execbench.suite import BuildOptions, build_suite
    from execbench.values import encode

    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"p{p}", "entry_point": "f",
        "code": f"def f(a, b):\n    # program {p}\n    return [a, b, 'x' * (b % 3)]\n",
        "calls": [{"args": f"{p}, {c}", "trace": {"status": "ok",
                                                 "value": encode([p, c, "x" * (c % 3)])}}
                  for c in range(5)]}) + "\n" for p in range(2000)))
    suite = tmp_path / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=["output"], workers=1))
    runs = []
    for name, model, answer in (("oracle", "reference/oracle", None),
                                ("constant", "reference/constant", None),
                                ("zero", "reference/constant", "[ANSWER]0[/ANSWER]"),
                                ("one", "reference/constant", "[ANSWER]1[/ANSWER]"),
                                ("silent", "reference/constant", "I cannot tell.")):
        runs.append(tmp_path / name)
        run(RunConfig(suite=str(suite), model=model,
                      model_args={} if answer is None else {"answer": answer}), runs[-1])
    results = [read_results(folder) for folder in runs]
    told: list[tuple[int, int]] = []
    page = render_html(runs, results, lambda done, total: told.append((done, total)))[0]
    assert sum(len(run["rows"]) for run in page_samples(page)["runs"]) == 50_000
    assert len(page.encode("utf-8")) < 5_000_000
    assert told == [(n, 5) for n in range(1, 6)]  # progress as each run is read


def _board(page: str) -> dict[str, list[tuple[str, str]]]:
    """The leaderboard's rows: per model, each cell's classes and text."""
    board = page.split('<section id="leaderboard">')[1].split("</section>")[0]
    return {label: re.findall(r'<td class="([^"]*)"[^>]*>([^<]*)</td>', cells)
            for label, cells in re.findall(r'<tr class="board-row"><th scope="row">([^<]*)'
                                           r"</th>(.*?)</tr>", board, re.S)}


def test_a_run_that_answered_nothing_is_never_best(report_runs: list[Path],
                                                   tmp_path: Path) -> None:
    from execbench.reports.html import render_html
    from execbench.runner import RunConfig, load_run_config, run

    silent = tmp_path / "silent"
    run(RunConfig(suite=load_run_config(report_runs[0]).suite, model="reference/constant",
                  model_args={"answer": "I cannot tell."}), silent)
    runs = [*report_runs, silent]
    results = [read_results(folder) for folder in runs]
    page = render_html(runs, results)[0]
    board = _board(page)
    said, mute = (board[f"reference/constant ({folder})"] for folder in runs[1:])
    # mutation MR (lower is better): the oracle never reverts, nor does the other constant
    # run, and the silent run has no answer to revert with: its 0.0 is no result.
    headers = [h.strip() for h in re.findall(r'<th class="metric" title="[^"]*">([^<]*)</th>',
                                             page)]
    column = headers.index("mutation MR ↓")
    assert board["reference/oracle"][column] == said[column] == ("num best", "0.0")
    assert mute[column] == ("num silent", "0.0")
    assert not any("best" in classes for classes, _ in mute)


def expected_charts(results: list[Results]) -> list[list]:
    """Per chart the page should draw, in order: its kind and how many bars and points.
    Headline metrics: a bar per run with a value; pass@k: a point per run and k it drew;
    breakdowns: a bar per run and category."""
    from execbench.reports.leaderboard import headline

    charts = [["headline", sum(m.metric.read(r) is not None
                               for r in results if m.task in r.metrics), 0]
              for m in headline(results)]
    tasks = sorted({task for r in results for task in r.metrics})
    charts += [["pass-at-k", 0, sum(r.config.n for r in results if task in r.metrics)]
               for task in tasks]
    for task in tasks:
        splits = [r.metrics[task].breakdowns if task in r.metrics else {} for r in results]
        charts += [["breakdown", sum(len(split.get(name, {})) for split in splits), 0]
                   for name in sorted({name for split in splits for name in split})]
    return charts


class DevTools:
    """A minimal DevTools-protocol client: one page's websocket, calls by id."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.ident = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.ident += 1
        await self.socket.send_json({"id": self.ident, "method": method, "params": params})
        async for message in self.socket:
            reply = json.loads(message.data)
            if reply.get("id") == self.ident:
                assert "error" not in reply, reply
                return reply["result"]
        raise AssertionError(f"the browser closed during {method}")

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression,
                                 returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")


FIGURES = ("Array.from(document.querySelectorAll('section.layout')).map(s => {"
           " const img = s.querySelector('figure img');"
           " return [s.id.replace('layout-', ''), img ? [img.complete,"
           "   img.naturalWidth, img.naturalHeight,"
           "   img.getBoundingClientRect().width] : null]; })")
"""Per layout section of the page, in order: its name and, where it has a figure, whether
the browser decoded it, its pixel size and the width it is laid out at."""


def _in_chromium(page: Path, tmp_path: Path,
                 drive: Callable[[DevTools], Awaitable[dict[str, Any]]],
                 size: tuple[int, int] = (1280, 1600)) -> dict[str, Any]:
    """What ``drive`` saw of ``page`` opened in headless Chromium in a window of ``size``,
    once the page says it is ready."""
    profile = tmp_path / "profile"
    browser = subprocess.Popen([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}",
                                f"--window-size={size[0]},{size[1]}", page.as_uri()],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            assert browser.poll() is None, "Chromium exited at start"
            time.sleep(0.1)
        return asyncio.run(asyncio.wait_for(
            _connect(int(port_file.read_text().split()[0]), drive), timeout=120))
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=20)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()


async def _connect(port: int, drive: Callable[[DevTools], Awaitable[dict[str, Any]]]
                   ) -> dict[str, Any]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        target = next(t for t in targets if t["type"] == "page")
        async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
            tools = DevTools(socket)
            for _ in range(200):
                if await tools.evaluate("document.body && document.body.dataset.ready") == "yes":
                    break
                await asyncio.sleep(0.1)
            return await drive(tools)


async def _drive(tools: DevTools) -> dict[str, Any]:
    seen: dict[str, Any] = {
        "board": await tools.evaluate(
            "Array.from(document.querySelectorAll('#leaderboard tr.board-row th'))"
            ".map(th => th.textContent)"),
        "fetched": await tools.evaluate(
            "performance.getEntriesByType('resource').map(e => e.name)"
            ".filter(name => !name.startsWith('data:'))"),
        "before": await tools.evaluate(
            "[document.querySelectorAll('#samples .sample').length,"
            " document.getElementById('sample-count').textContent]"),
        "charts": await tools.evaluate(
            "Array.from(document.querySelectorAll('svg.chart')).map(svg => {"
            " const box = svg.getBoundingClientRect();"
            " const bars = Array.from(svg.querySelectorAll('rect.bar'))"
            "   .map(bar => bar.getBoundingClientRect());"
            " return [svg.dataset.chart, bars.length,"
            "   svg.querySelectorAll('circle.point').length, box.width, box.height,"
            "   bars.filter(b => b.width > 0 && b.height > 0).length]; })"),
        "figures": await tools.evaluate(FIGURES),
        "opened": await tools.evaluate(
            "(async () => { const row = document.querySelector('#samples .sample');"
            " const before = row.querySelectorAll('dl, pre').length; row.open = true;"
            " await new Promise(done => setTimeout(done, 100));"
            " return [before, Array.from(row.querySelectorAll('dt'))"
            "   .map(dt => dt.textContent), row.querySelectorAll('pre').length]; })()"),
    }
    await tools.call("Emulation.setDeviceMetricsOverride", width=1280, height=1600,
                     deviceScaleFactor=1, mobile=False)
    shot = await tools.call("Page.captureScreenshot", format="png")
    seen["png"] = base64.b64decode(shot["data"])
    seen["after"] = await tools.evaluate(
        "(() => { const s = document.getElementById('filter-verdict');"
        " s.value = 'incorrect'; s.dispatchEvent(new Event('change'));"
        " const cards = Array.from(document.querySelectorAll('#samples .sample'));"
        " return [cards.length, document.getElementById('sample-count').textContent,"
        " cards.every(c => c.classList.contains('incorrect')), location.hash]; })()")
    return seen


@NEEDS_CHROMIUM
def test_the_page_renders_and_filters_in_chromium(page: Path, report_runs: list[Path],
                                                  tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image", reason="the screenshot check needs Pillow")
    seen = _in_chromium(page, tmp_path, _drive)

    assert seen["board"] == ["reference/oracle", "reference/constant"]
    assert seen["fetched"] == []
    drawn = seen["charts"]
    results = [read_results(folder) for folder in report_runs]
    assert [chart[:3] for chart in drawn] == expected_charts(results)
    assert all(width > 200 and height > 80 for *_, width, height, _ in drawn)
    assert sum(visible for *_, visible in drawn) > 20  # bars with a length on screen
    figures = dict(seen["figures"])
    drawable = [layout.name for layout, _ in shown_layouts(results) if layout.figure]
    assert list(figures) == [layout.name for layout, _ in shown_layouts(results)]
    assert {"dexbench", "paired-differences", "ces", "codesense"} <= set(drawable)
    for name in drawable:  # each figure decoded by the browser and laid out on the page
        complete, width, height, shown = figures[name]
        assert complete and width > 300 and height > 150 and shown > 200, (name, figures)
    before, facts, texts = seen["opened"]
    assert before == 0 and {"answer", "source"} <= set(facts) and texts == 2  # built on opening
    assert seen["before"] == [50, "114 of 114 samples match"]  # the first page of 50
    shown, said, all_incorrect, fragment = seen["after"]
    assert said.endswith(" of 114 samples match") and 0 < shown < 50 and all_incorrect
    assert said == f"{shown} of 114 samples match" and fragment == "#verdict=incorrect"

    picture = image.open(io.BytesIO(seen["png"])).convert("RGB")
    assert picture.size == (1280, 1600)
    low, high = picture.convert("L").getextrema()
    assert high - low > 150  # text on a background, not one flat colour
    assert len(picture.getcolors(maxcolors=1 << 20)) > 50
    if os.environ.get("EXECBENCH_SCREENSHOT"):
        Path(os.environ["EXECBENCH_SCREENSHOT"]).write_bytes(seen["png"])


WIDE = ("[document.documentElement.scrollWidth, window.innerWidth,"
        " Array.from(document.querySelectorAll('main *'))"
        "   .filter(node => node.getBoundingClientRect().right > window.innerWidth"
        "     && !node.closest('.scroll')).map(node => node.tagName + '.' + node.className)"
        "   .slice(0, 5)]")
"""How wide the page is, how wide the window, and the first few elements past its right
edge that do not sit in a box of their own that scrolls."""


async def _first_rows(tools: DevTools) -> dict[str, Any]:
    """At 1,400 px: the page's width and the window's, every browser row's verdict in the
    order listed (the rows paged in with "show more"), the `show` command the filter bar
    writes before and after a filter is chosen, and a screenshot."""
    await tools.call("Emulation.setDeviceMetricsOverride", width=1400, height=900,
                     deviceScaleFactor=1, mobile=False)
    seen: dict[str, Any] = {"wide": await tools.evaluate(WIDE)}
    seen["rows"] = await tools.evaluate(
        "(() => { const more = document.getElementById('more');"
        " while (!more.hidden) more.click();"
        " return Array.from(document.querySelectorAll('#samples .sample .verdict'))"
        "   .map(node => node.textContent); })()")
    seen["labels"] = await tools.evaluate(
        "Array.from(document.querySelectorAll('#filters label'))"
        ".filter(label => !label.hidden).map(label => label.firstChild.textContent.trim())")
    seen["command"] = await tools.evaluate(
        "document.getElementById('filter-command').textContent")
    shot = await tools.call("Page.captureScreenshot", format="png")
    seen["png"] = base64.b64decode(shot["data"])
    seen["wrong"] = await tools.evaluate(
        "(async () => { const links = Array.from(document.querySelectorAll('#wrong a.to-samples'));"
        " const first = links[0]; first.click();"
        " await new Promise(done => setTimeout(done, 200));"
        " const rows = Array.from(document.querySelectorAll('#samples .sample'));"
        " return [links.map(a => [a.closest('tr').cells[0].textContent,"
        "   a.closest('tr').cells[1].textContent, a.getAttribute('href'), a.textContent]),"
        "   ['filter-run', 'filter-task', 'filter-verdict']"
        "     .map(id => document.getElementById(id).value),"
        "   rows.length, rows.every(r => r.classList.contains("
        "     document.getElementById('filter-verdict').value)),"
        "   rows.length ? rows[0].querySelector('.gist').textContent : null,"
        "   Math.round(document.getElementById('browser').getBoundingClientRect().top)"
        "     - window.innerHeight]; })()")
    seen["filtered"] = await tools.evaluate(
        "(() => { for (const [id, value] of [['filter-run', ''],"
        "                                    ['filter-verdict', 'incorrect'],"
        "                                    ['filter-task', 'output']]) {"
        "   const s = document.getElementById(id); s.value = value;"
        "   s.dispatchEvent(new Event('change')); }"
        " return [document.getElementById('filter-command').textContent,"
        "   document.querySelectorAll('#samples .sample.incorrect').length,"
        "   document.querySelectorAll('#samples .sample').length]; })()")
    return seen


@NEEDS_CHROMIUM
def test_at_1400_px_the_browser_opens_on_wrong_answers_and_nothing_scrolls_sideways(
        page: Path, tmp_path: Path) -> None:
    """The oracle's (all right) and the constant model's (mostly wrong) samples: the list
    opens on wrong or unreadable answers, then the rest; the page is no wider than the
    window, the leaderboard's wide table scrolling inside its own box."""
    seen = _in_chromium(page, tmp_path, _first_rows, size=(1400, 900))
    width, window, past = seen["wide"]
    assert window == 1400 and width <= window and past == [], seen["wide"]
    rows = seen["rows"]
    assert len(rows) == 114 and rows[0] in ("incorrect", "unparsable")
    rank = {"incorrect": 0, "unparsable": 0, "correct": 2}
    assert [rank.get(verdict, 1) for verdict in rows] == sorted(
        rank.get(verdict, 1) for verdict in rows)
    assert rows.count("correct") < 114 - 20  # many wrong ones lead, not a token few
    assert seen["labels"] == ["run", "--task", "--verdict", "--source", "--instance"]
    assert seen["command"] == "execbench show RUN"
    links, chosen, listed, all_wrong, gist, top = seen["wrong"]  # top: less the window
    # "What went wrong" links each count of the constant model's samples that are not
    # right (the oracle has none) to those samples
    assert links and {run for run, *_ in links} == {"reference/constant"}
    run, task, href, number = links[0]
    verdict = href.rpartition("=")[2]
    assert verdict in ("incorrect", "unparsable", "error")
    assert href == f"#run={run.replace('/', '%2F')}&task={task}&verdict={verdict}"
    assert chosen == [run, task, verdict] and all_wrong
    assert listed == min(int(number), 50) and top < 0  # the browser scrolled into view
    assert gist.startswith(" · answer ") and " · truth " in gist
    command, wrong, shown = seen["filtered"]
    assert command == "execbench show RUN --task output --verdict incorrect"
    assert wrong == shown > 0
    shot = tmp_path / "page-1400.png"
    shot.write_bytes(seen["png"])
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("EXECBENCH_SCREENSHOT"):
        Path(os.environ["EXECBENCH_SCREENSHOT"]).with_suffix(".1400.png").write_bytes(
            seen["png"])


async def _figures(tools: DevTools) -> dict[str, Any]:
    return {"figures": await tools.evaluate(FIGURES), "wide": await tools.evaluate(WIDE),
            "fetched": await tools.evaluate(
                "performance.getEntriesByType('resource').map(e => e.name)"
                ".filter(name => !name.startsWith('data:'))")}


@pytest.fixture(scope="module")
def every_layout(report_runs: list[Path], tmp_path_factory: pytest.TempPathFactory
                 ) -> list[Path]:
    """Runs that between them give every registered layout something to show: the report
    runs (every family but the bugs: paired differences, vetted output, error labels),
    the oracle on HumanEvalPack's bug tasks and on its buggy programs' simulation
    (success overlap, vetting), and a dated model on dated contest programs (the cutoff
    split, the release date)."""
    from execbench.runner import RunConfig, run
    from execbench.suite import BuildOptions, build_suite

    folder = tmp_path_factory.mktemp("every-layout")
    pack = str(shared_data("humanevalpack.jsonl.gz"))
    for name, options in (
            ("bugs", BuildOptions(tasks=["bug-prediction", "bug-localization", "bug-repair"],
                                  limit=3, workers=1)),
            ("buggy", BuildOptions(tasks=["simulation"], limit=3, buggy=True, workers=1))):
        build_suite([pack], folder / f"{name}-suite", options)
        run(RunConfig(suite=str(folder / f"{name}-suite"), model="reference/oracle"),
            folder / name)
    contest = folder / "contest.jsonl"
    contest.write_text("".join(json.dumps({
        "id": f"c{day}", "code": f"def f(x):\n    return x + {day}\n", "function_name": "f",
        "input": "f(x = 1)", "output": str(1 + day), "contest_date": f"2023-{day:02}-01",
        "difficulty": "easy"}) + "\n" for day in range(1, 13)))
    build_suite([str(contest)], folder / "dated-suite", BuildOptions(tasks=["output"],
                                                                      workers=1))
    run(RunConfig(suite=str(folder / "dated-suite"), model="reference/oracle",
                  model_release="2023-09-15", model_cutoff="2023-06"), folder / "dated")
    return [*report_runs, folder / "bugs", folder / "buggy", folder / "dated"]


@pytest.mark.slow  # about 40 s: three more suites built and run, every layout drawn
@NEEDS_CHROMIUM
def test_every_layouts_figure_is_drawn_in_the_page_and_in_plots(
        every_layout: list[Path], tmp_path: Path) -> None:
    """Every registered layout that has a figure is shown for these runs: each is decoded
    by the browser and laid out on the page, which at 1,400 px never scrolls sideways, and
    ``--plots`` writes it as a PNG and an SVG that open."""
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image", reason="the figure check needs Pillow")
    from execbench.reports.layouts import layouts

    page, plots = tmp_path / "every.html", tmp_path / "plots"
    done = execbench("report", *every_layout, "--html", page, "--plots", plots)
    assert done.exit_code == 0, done.stderr
    drawable = {name for name, layout in layouts().items() if layout.figure is not None}
    seen = _in_chromium(page, tmp_path, _figures, size=(1400, 900))
    assert seen["fetched"] == []
    width, window, past = seen["wide"]  # every layout's tables, and nothing scrolls sideways
    assert window == 1400 and width <= window and past == [], seen["wide"]
    figures = {name: shape for name, shape in seen["figures"] if shape is not None}
    assert set(figures) == drawable, set(figures) ^ drawable
    for name, (complete, width, height, shown) in figures.items():
        assert complete and width > 300 and height > 150 and shown > 200, name
    for name in drawable:
        with image.open(plots / f"{name}.png") as drawn:
            assert drawn.size[0] > 300 and drawn.size[1] > 150, name
            assert len(drawn.convert("RGB").getcolors(maxcolors=1 << 20)) > 20, name
        svg = (plots / f"{name}.svg").read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<path" in svg, name
