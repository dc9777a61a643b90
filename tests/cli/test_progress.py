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
