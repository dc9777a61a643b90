"""Progress of a long command on stderr, the same for ``build``, ``run``, ``score`` and
``harvest``: a bar on a terminal; in a log (a batch job's, a pipe) a line soon after the
start and then one every ``every`` seconds, with counts, rate and time left, so a log is
never silent for long, even while nothing is finished (a slow server's first answer, a
build still reading its sources). The lines come from a timer thread for that reason; a
bar would fill a log with control characters.

A time left is said only once it can mean something (``estimate_left``): the first
answers of a run come slower or faster than the rest (a server warming up, a cache), so
one sample's rate told "about 2243 s left" of a run that took 100. A stage that is done
is said once: the lines stop at 100% while the command writes its results, and its end
adds none that says the same again. Time is read from the clock given (``clock``), so
tests drive it by hand."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
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
ESTIMATE_AFTER_UNITS = 20
ESTIMATE_AFTER_SHARE = 0.05
ESTIMATE_AFTER_SECONDS = 10.0
"""A stage's time left is said once it has done ``ESTIMATE_AFTER_UNITS`` units and either
``ESTIMATE_AFTER_SHARE`` of its total or ``ESTIMATE_AFTER_SECONDS``: before, its rate is
mostly its start (a server's first answers, a cold cache) and the estimate off by
multiples."""


def estimate_left(done: int, total: int | None, elapsed: float) -> float | None:
    """Seconds left at the stage's rate so far, or ``None`` while too little is done to
    say (``ESTIMATE_AFTER_UNITS``) or nothing is left."""
    if not total or done >= total or done < ESTIMATE_AFTER_UNITS or elapsed <= 0:
        return None
    if done < ESTIMATE_AFTER_SHARE * total and elapsed < ESTIMATE_AFTER_SECONDS:
        return None
    return (total - done) * elapsed / done


def check_every(every: float) -> None:
    """Refuse a ``--progress-every`` that is no interval."""
    if every <= 0:
        fail("--progress-every must be > 0")


class Progress:
    """One command's progress: ``update`` it from the work as it goes (any thread)."""

    def __init__(self, what: str, unit: str, every: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # a line at most ten times a second, however small --progress-every is
        self.what, self.unit, self.every = what, unit, max(every, MIN_EVERY)
        self.clock = clock
        self.stage = what
        self.done = 0
        self.total: int | None = None
        self.note = ""
        self.terminal = err.is_terminal  # asked once: the question is a system call
        self._bar: Bar | None = None
        self._job: TaskID | None = None
        self._started = self._stage_started = clock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._lines_printed = 0
        self._last_said: tuple[str, int, int | None] | None = None
        """The stage and counts of the last line printed, so that a finished stage is
        said once."""

    def __enter__(self) -> Progress:
        if self.terminal:
            # markup off and text made visible in ``update``: stages and notes name
            # projects and sources, outside text that must not drive the terminal.
            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[note]}", markup=False),
                            TextColumn("{task.fields[left]}", markup=False), console=err,
                            transient=False)
            self._bar.start()
            self._job = self._bar.add_task(self.stage, total=None, note="", left="")
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
        if kind is None:
            self.end()
        if self._bar is not None:
            self._bar.stop()

    def update(self, done: int, total: int | None = None, note: str = "",
               stage: str | None = None, unit: str | None = None) -> None:
        """``done`` of ``total`` units; a new ``stage`` starts its own count and rate, and
        may count other ``unit``s."""
        if stage is not None and stage != self.stage:
            self.stage, self._stage_started = stage, self.clock()
        if unit is not None:
            self.unit = unit
        self.done, self.total, self.note = done, total, note
        if self._bar is not None and self._job is not None:
            left = estimate_left(done, total, self.clock() - self._stage_started)
            self._bar.update(self._job, description=visible(self.stage), completed=done,
                             total=total, note=visible(note),
                             left="" if left is None else f"about {left:.0f} s left")

    def _state(self) -> tuple[str, int, int | None]:
        return self.stage, self.done, self.total

    def _lines(self) -> None:
        wait = min(FIRST_LINE, self.every)
        while not self._stop.wait(wait):
            self.tick()
            wait = self.every

    def tick(self) -> None:
        """The timer's line: the counts now, unless the stage is finished and said."""
        if not (self.total and self.done >= self.total and self._last_said == self._state()):
            self._line()

    def end(self) -> None:
        """The work is done: a log that heard of it hears of its end, once."""
        if not self.terminal and self._lines_printed and self.total is not None \
                and self._last_said != self._state():
            self._line()

    def _line(self) -> None:
        state = self._state()
        err.print(self.said(), highlight=False, markup=False)
        self._last_said = state
        self._lines_printed += 1

    def said(self) -> str:
        """The progress line for now: the stage's counts, note, rate and (once it means
        something: ``estimate_left``) the time left."""
        done, total, note = self.done, self.total, self.note
        now = self.clock()
        elapsed = now - self._stage_started
        said = f"progress: {self.stage}: {done:,}"
        if total:
            said += f"/{total:,} {self.unit} ({done / total:.0%})"
        else:
            said += f" {self.unit}"
        if note:
            said += f", {note}"
        if done and elapsed > 0:
            said += f", {done / elapsed:.1f} {self.unit}/s"
            left = estimate_left(done, total, elapsed)
            if left is not None:
                said += f", about {left:.0f} s left"
        elif not done:
            said += f", {now - self._started:.0f} s in"
        return said
