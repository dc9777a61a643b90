"""What tracing real calls costs in this process: ``sys.settrace`` against ``sys.monitoring``.

Usage: ``python bench/tracing.py [--data PATH] [--repeats N]``

Python 3.12 added ``sys.monitoring`` (PEP 669), whose callbacks get a code object and a
line number instead of a frame, and stop for code that answers ``DISABLE``.
``execbench.sandbox.monitor`` records the runs that keep no event list and no states
(``trace.RESULT_ONLY``, the options of answer checks, witness searches and mutation
testing) from it; everything else is recorded by ``sys.settrace``. This script checks that
both give the same records and measures what each costs, on the HumanEval calls (the
packaged programs) and on CRUXEval's (``--data``; left out with a note when absent), run in
this process with no sandbox: each program compiled once (``tracer.compile_program``),
each call run by ``tracer.record`` with the recorder chosen here.

1. Untimed: every call run with both recorders under ``RESULT_ONLY``, once under the
   sandbox's step limit and once under half the call's own steps (so it ends in
   ``StepLimit``), and the two records compared whole (status, value, exception, lines,
   steps, branches, loops, frames). The calls that differ are counted, with examples.
2. ``--repeats`` rounds (default 3), each timing one pass over every call of each source
   in each mode, the modes in an order that rotates from round to round: untraced (the
   same runs, no recorder listening), settrace with the default options (the event list
   and branch sequences a build records), settrace under ``RESULT_ONLY``, monitoring
   under ``RESULT_ONLY``. Printed: the median seconds of each, monitoring over settrace,
   and each mode over untraced.

On Python 3.11 there is no ``sys.monitoring``: the script says so and exits 0. One to two
minutes per interpreter on 2 cores, most of it HumanEval's heaviest calls (five calls of
problem 75 run 1.7 million lines each).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import platform
import random
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from common import DEFAULT_DATA, add_data_option

from execbench.sandbox import recording, tracer
from execbench.sandbox.pool import Limits
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.sources import load_source


class Call(NamedTuple):
    """One call of a benchmark, its program and arguments compiled once for every run."""

    program: recording.CompiledProgram
    entry_point: str
    args: Any
    """``tracer.compile_args`` of ``text``."""
    text: str


class Untraced(recording.Recorder):
    """The run with nothing listening: the floor both recorders are measured from."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _calls(source: str) -> list[Call]:
    """Every call of ``source`` whose program and arguments compile."""
    calls = []
    for program in load_source(source).programs:
        try:
            compiled = tracer.compile_program(program.code)
        except (SyntaxError, ValueError):
            continue
        for call in program.calls:
            try:
                calls.append(Call(compiled, program.entry_point,
                                  tracer.compile_args(call.args), call.args))
            except (SyntaxError, ValueError):
                continue
    return calls


def _record(recorder_type: type[recording.Recorder], call: Call,
            options: dict[str, Any]) -> dict[str, Any]:
    """One call as the sandbox's runner makes it: ``random`` reseeded, output captured."""
    random.seed(0)
    with contextlib.redirect_stdout(io.StringIO()):
        return tracer.record(recorder_type(call.program, options), call.entry_point, call.args)


def _differences(calls: list[Call], monitor: type[recording.Recorder],
                 options: dict[str, Any]) -> tuple[list[int], list[str]]:
    """How many calls the two recorders record differently, under ``options`` and under
    half of each call's own steps, and a few of those calls described."""
    differ, examples = [0, 0], []
    for call in calls:
        expected = _record(recording.Recorder, call, options)
        halved = {**options, "max_steps": expected["steps"] // 2}
        for index, (want, got) in enumerate([
                (expected, _record(monitor, call, options)),
                (_record(recording.Recorder, call, halved), _record(monitor, call, halved))]):
            if got == want:
                continue
            differ[index] += 1
            if len(examples) < 3:
                fields = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
                examples.append(f"{call.entry_point}({call.text[:60]}): " + "; ".join(
                    f"{k}: {str(want.get(k))[:80]} != {str(got.get(k))[:80]}" for k in fields))
    return differ, examples


def _pass(recorder_type: type[recording.Recorder], calls: list[Call],
          options: dict[str, Any]) -> float:
    """Seconds to run every call once."""
    gc.collect()
    start = time.perf_counter()
    for call in calls:
        _record(recorder_type, call, options)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(parser)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}")
    if not hasattr(sys, "monitoring"):
        print("sys.monitoring does not exist before Python 3.12: nothing to compare")
        return 0
    from execbench.sandbox.monitor import MonitorRecorder

    sources = {"HumanEval": _calls("humaneval")}
    data: Path = args.data / "cruxeval.jsonl" if args.data.is_dir() else args.data
    if data.exists():
        sources["CRUXEval"] = _calls(str(data))
    else:
        print(f"{data} not found: CRUXEval left out (see shared/data/README.md; "
              f"default {DEFAULT_DATA})")
    every = [call for calls in sources.values() for call in calls]
    print(f"{len(every):,} calls: " + ", ".join(f"{name} {len(calls):,}"
                                                for name, calls in sources.items()))

    limit = Limits().steps
    result_only = {**tracer.DEFAULT_OPTIONS, **asdict(RESULT_ONLY), "max_steps": limit}
    full = {**tracer.DEFAULT_OPTIONS, **asdict(TraceOptions()), "max_steps": limit}
    differ, examples = _differences(every, MonitorRecorder, result_only)
    for count, under in zip(differ, (f"the step limit ({limit:,})",
                                     "half of each call's own steps"), strict=True):
        print(f"records equal under {under}: {len(every) - count:,} of {len(every):,} calls "
              f"({count} differ)")
    for example in examples:
        print(f"  {example}")

    modes: dict[str, tuple[type[recording.Recorder], dict[str, Any]]] = {
        "untraced": (Untraced, result_only),
        "settrace, default options": (recording.Recorder, full),
        "settrace, RESULT_ONLY": (recording.Recorder, result_only),
        "monitoring, RESULT_ONLY": (MonitorRecorder, result_only),
    }
    seconds: dict[tuple[str, str], list[float]] = {
        (mode, name): [] for mode in modes for name in sources}
    names = list(modes)
    for round_ in range(args.repeats):
        for mode in names[round_ % len(names):] + names[:round_ % len(names)]:
            recorder_type, options = modes[mode]
            for name, calls in sources.items():
                seconds[mode, name].append(_pass(recorder_type, calls, options))
    median = {key: statistics.median(times) for key, times in seconds.items()}
    columns = list(sources)
    if len(sources) > 1:
        columns.append("all")
        for mode in modes:
            median[mode, "all"] = sum(median[mode, name] for name in sources)
    print(f"\nseconds per pass, median of {args.repeats} rounds ({', '.join(columns)}):")
    for mode in modes:
        row = ", ".join(f"{median[mode, c]:.3f}" for c in columns)
        print(f"  {mode:27} {row}")
    print("monitoring / settrace, RESULT_ONLY: " + ", ".join(
        f"{median['monitoring, RESULT_ONLY', c] / median['settrace, RESULT_ONLY', c]:.2f} "
        f"{c}" for c in columns))
    for mode in names[1:]:
        print(f"{mode} / untraced: " + ", ".join(
            f"{median[mode, c] / median['untraced', c]:.2f} {c}" for c in columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
