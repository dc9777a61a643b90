"""Progress of a long command on stderr, the same for ``build``, ``run``, ``score`` and
``harvest``: a bar on a terminal; in a log (a batch job's, a pipe) a line soon after the
start and then one every ``every`` seconds, with counts, rate and time left, so a log is
never silent for long, even while nothing is finished (a slow server's first answer, a
build still reading its sources). The lines come from a timer thread for that reason; a
bar would fill a log with control characters."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as Bar

from execbench.cli.app import err, fail
from execbench.text_safety import visible

ProgressEvery = Annotated[float, typer.Option(
    help="Seconds between one-line progress updates when stderr is not a terminal "
         "(a batch job's log; the first comes after half a second); a terminal gets a "
         "bar.")]

MIN_EVERY = 0.1
FIRST_LINE = 0.5
"""Seconds before a log's first line (or the interval, if shorter): soon enough to show
the command is alive within 2 s of its start on a busy machine (its imports and reading
the suite come first, over a second there), late enough that a command done at once
prints none."""


def check_every(every: float) -> None:
    """Refuse a ``--progress-every`` that is no interval."""
    if every <= 0:
        fail("--progress-every must be > 0")


class Progress:
    """One command's progress: ``update`` it from the work as it goes (any thread)."""

    def __init__(self, what: str, unit: str, every: float = 30.0) -> None:
        # a line at most ten times a second, however small --progress-every is
        self.what, self.unit, self.every = what, unit, max(every, MIN_EVERY)
        self.stage = what
        self.done = 0
        self.total: int | None = None
        self.note = ""
        self.terminal = err.is_terminal  # asked once: the question is a system call
        self._bar: Bar | None = None
        self._job: TaskID | None = None
        self._started = self._stage_started = time.monotonic()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._lines_printed = 0

    def __enter__(self) -> Progress:
        if self.terminal:
            # markup off and text made visible in ``update``: stages and notes name
            # projects and sources, outside text that must not drive the terminal.
            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[note]}", markup=False),
                            TimeRemainingColumn(), console=err, transient=False)
            self._bar.start()
            self._job = self._bar.add_task(self.stage, total=None, note="")
        else:
            self._timer = threading.Thread(target=self._lines, daemon=True,
                                           name="progress lines")
            self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
            if kind is None and self._lines_printed and self.total is not None:
                self._line()  # a log that heard of the work hears of its end
        if self._bar is not None:
            self._bar.stop()

    def update(self, done: int, total: int | None = None, note: str = "",
               stage: str | None = None, unit: str | None = None) -> None:
        """``done`` of ``total`` units; a new ``stage`` starts its own count and rate, and
        may count other ``unit``s."""
        if stage is not None and stage != self.stage:
            self.stage, self._stage_started = stage, time.monotonic()
        if unit is not None:
            self.unit = unit
        self.done, self.total, self.note = done, total, note
        if self._bar is not None and self._job is not None:
            self._bar.update(self._job, description=visible(self.stage), completed=done,
                             total=total, note=visible(note))

    def _lines(self) -> None:
        wait = min(FIRST_LINE, self.every)
        while not self._stop.wait(wait):
            self._line()
            wait = self.every

    def _line(self) -> None:
        done, total, note = self.done, self.total, self.note
        elapsed = time.monotonic() - self._stage_started
        said = f"progress: {self.stage}: {done:,}"
        if total:
            said += f"/{total:,} {self.unit} ({done / total:.0%})"
        else:
            said += f" {self.unit}"
        if note:
            said += f", {note}"
        if done and elapsed > 0:
            rate = done / elapsed
            said += f", {rate:.1f} {self.unit}/s"
            if total and done < total:
                said += f", about {(total - done) / rate:.0f} s left"
        elif not done:
            said += f", {time.monotonic() - self._started:.0f} s in"
        err.print(said, highlight=False, markup=False)
        self._lines_printed += 1
