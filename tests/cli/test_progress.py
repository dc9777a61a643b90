"""Progress in a batch log (issue #23): a long command run with stderr piped, as a job
scheduler runs it, prints its first progress line before anything is finished and then one
per interval, with counts. The checks are on the order of events, never on how long the
machine took: a busy machine passes them as an idle one does."""

from __future__ import annotations

import io
import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, Reply
from tests.helpers.cli import EXECBENCH
from tests.test_runner import MODEL, cli_env


def _timed_lines(args: list[object], timeout: float = 300,
                 seen: Callable[[str], None] = lambda line: None,
                 ) -> tuple[int, list[tuple[float, str]]]:
    """Run the console script with stderr piped; its exit status and each stderr line
    with the seconds after the start at which it came (``seen`` hears each line as it
    comes)."""
    start = time.monotonic()
    proc = subprocess.Popen([EXECBENCH, *map(str, args)], env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - start, line.rstrip("\n")))
            seen(line)

    reader = threading.Thread(target=read)
    reader.start()
    status = proc.wait(timeout=timeout)
    reader.join()
    return status, lines


def _progress(lines: list[tuple[float, str]]) -> list[tuple[float, str]]:
    return [(at, line) for at, line in lines if line.startswith("progress: ")]


def test_build_prints_progress_in_a_log_before_tracing_ends(tmp_path: Path) -> None:
    """Programs whose call takes a while (a second of sleep each, one worker; each its own
    code, so that the sandbox does not batch them): the log hears from the build while
    calls are still being traced, then once a second with counts, per stage."""
    source = tmp_path / "slow.jsonl"
    code = "import time\n\ndef f(x):\n    time.sleep(1)\n    return x + {}\n"
    source.write_text("".join(json.dumps({
        "id": f"slow{n}", "code": code.format(n), "entry_point": "f", "calls": [str(n)]}) + "\n"
        for n in range(4)))
    status, lines = _timed_lines(["build", source, "--tasks", "output", "--out",
                                  tmp_path / "suite", "--progress-every", 1, "--workers", 1])
    assert status == 0, lines
    shown = _progress(lines)
    assert shown and not shown[0][1].startswith("progress: tracing calls: 4/4"), lines
    assert len(shown) >= 3, shown
    tracing = [line for _, line in shown if line.startswith("progress: tracing calls: ")]
    assert tracing and all("/4 calls (" in line for line in tracing), shown
    assert any(not line.startswith("progress: tracing calls: 0/") for line in tracing), shown
    assert shown[-1][1].startswith("progress: building output: 4/4 programs (100%)"), shown


def test_run_prints_progress_before_the_first_answer(tmp_path: Path) -> None:
    """A server that answers only once the log has said the run is waiting for it: the
    run must print that line before any answer comes (before, the first line came with
    the first answers), and its counts when the answers come."""
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"id": "p", "code": "def f(x):\n    return x + 1\n",
                                  "entry_point": "f", "calls": ["1", "2"]}) + "\n")
    suite = tmp_path / "suite"
    status, lines = _timed_lines(["build", source, "--tasks", "output", "--out", suite])
    assert status == 0, lines

    waiting = threading.Event()

    def after_the_log(body: dict, attempt: int) -> Reply:
        waiting.wait(timeout=240)
        return Reply(text="[ANSWER]\nassert f(1) == 2\n[/ANSWER]")

    def watch(line: str) -> None:
        if "waiting for the first answer" in line:
            waiting.set()

    with FakeServer(after_the_log) as server:
        status, lines = _timed_lines(["run", "--suite", suite, "--model", MODEL,
                                      "--model-base-url", server.base_url,
                                      "--out", tmp_path / "run", "--progress-every", 1],
                                     seen=watch)
    assert status == 0, lines
    assert waiting.is_set(), lines
    shown = _progress(lines)
    assert shown[0][1].startswith(f"progress: {MODEL}: 0/2 samples (0%), waiting for the "
                                  "first answer"), shown
    assert shown[-1][1].startswith(f"progress: {MODEL}: 2/2 samples (100%), "), shown


def test_a_bar_on_a_terminal_shows_outside_text_without_acting_on_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage or note names a project or source (an archive's file name): on a terminal
    its escape sequences and rich markup are shown, never sent to act (a window title, a
    cleared screen, a planted link)."""
    from execbench.cli import progress
    from execbench.cli.app import SafeConsole

    shown = io.StringIO()
    console = SafeConsole(file=shown, force_terminal=True, stderr=True, soft_wrap=True,
                              color_system="truecolor", width=200)
    monkeypatch.setattr(progress, "err", console)
    name = "\x1b]0;TITLE\x07\x1b[2J[link=https://evil.example]proj[/link]"
    with progress.Progress("harvest", "projects", 1) as bar:
        bar.update(0, 2, name, stage=f"harvesting {name}")
    out = shown.getvalue()
    assert "\x1b]0;TITLE" not in out and "\x1b[2J" not in out and "\x1b]8;" not in out
    assert "[link=https://evil.example]" in out


class _Clock:
    """A clock the test moves by hand: no test here depends on how fast anything runs."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_no_estimate_until_enough_is_done_to_mean_something() -> None:
    """A time left needs 20 units done and either 5% of the total or 10 s of the stage."""
    from execbench.cli.progress import Progress, estimate_left

    clock = _Clock()
    shown = Progress("model", "samples", clock=clock)
    clock.now += 0.5
    shown.update(1, 4_350)
    assert shown.said() == "progress: model: 1/4,350 samples (0%), 2.0 samples/s"
    clock.now += 4.5
    shown.update(19, 4_350)  # 10 s would pass with 19, but 19 is too few
    clock.now += 5.0
    assert "left" not in shown.said()
    shown.update(20, 4_350)  # 20 done, 10 s in: 4,330 left at 2 a second
    assert shown.said() == ("progress: model: 20/4,350 samples (0%), 2.0 samples/s, "
                            "about 2165 s left")
    # 20 of 100 in 1 s (20%, over 5%): said before 10 s
    assert estimate_left(20, 100, 1.0) == 4.0
    assert estimate_left(20, 1_000, 9.9) is None  # 2% and under 10 s
    assert estimate_left(50, 1_000, 2.0) == 38.0  # 5%
    assert estimate_left(100, 100, 30.0) is None and estimate_left(50, None, 30.0) is None
    # a new stage starts its own count and rate; nothing done, it says the command's time
    shown.update(0, 10, stage="scoring")
    clock.now += 3
    assert shown.said() == "progress: scoring: 0/10 samples (0%), 13 s in"
    clock.now += 10
    shown.update(20, 400)  # 20 in 13 s of this stage (not 23 s of the command), 5%
    assert shown.said().endswith("(5%), 1.5 samples/s, about 247 s left")


def test_a_finished_stage_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The timer's lines stop at 100% (the command writes its results after) and the end
    adds no line saying the same again; a new stage is said anew."""
    from execbench.cli import progress

    lines: list[str] = []
    monkeypatch.setattr(progress.err, "print", lambda text, **kwargs: lines.append(text))
    clock = _Clock()
    shown = progress.Progress("build", "calls", clock=clock)
    shown.terminal = False
    shown.update(2, 4)
    shown.tick()
    clock.now += 1
    shown.update(4, 4)
    for _ in range(4):  # four intervals while the results are written
        shown.tick()
        clock.now += 1
    shown.update(4, 4, note="written")
    shown.end()
    shown.update(0, 3, stage="building output", unit="programs")
    shown.tick()
    shown.update(3, 3)
    shown.end()
    shown.end()
    assert lines == ["progress: build: 2/4 calls (50%)",
                     "progress: build: 4/4 calls (100%), 4.0 calls/s",
                     "progress: building output: 0/3 programs (0%), 5 s in",
                     "progress: building output: 3/3 programs (100%)"], lines


def test_a_complete_run_resumed_says_so_and_goes_to_its_results(tmp_path: Path) -> None:
    """Nothing left to ask: one line saying so, no progress, no waiting for an answer."""
    from tests.helpers.cli import execbench

    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"id": "p", "code": "def f(x):\n    return x + 1\n",
                                  "entry_point": "f", "calls": ["1", "2"]}) + "\n")
    built = execbench("build", source, "--tasks", "output", "--out", tmp_path / "suite")
    assert built.exit_code == 0, built.stderr
    args = ("run", "--suite", tmp_path / "suite", "--model", "reference/oracle",
            "--out", tmp_path / "run")
    first = execbench(*args)
    assert first.exit_code == 0, first.stderr
    again = execbench(*args)
    assert again.exit_code == 0, again.stderr
    lines = again.stderr.splitlines()
    assert lines[0] == f"complete: all 2 samples already in {tmp_path / 'run'}; the results follow"
    assert not any(line.startswith(("progress:", "resuming:")) for line in lines), lines
    assert "waiting" not in again.stderr
    assert again.stdout == first.stdout  # the same results table
