"""The floor under any fork-per-unit sandbox of CPython on this machine: a lean warm process
forks a child per program, which compiles and traces it, encodes the result and writes it
to a pipe, and exits; nothing of the sandbox (no confinement, relay, wipe or pool).

Usage: ``python bench/fork_floor.py JOBS.json [UNITS]`` (a JSON list of ``[code,
entry_point, args]``), printing one JSON object; ``sandbox_throughput.py`` runs it in a
process of its own, so that the process forked is about as small as a sandbox worker
(only the tracer is imported here), and prints it beside the sandbox's own split.

The process is warmed and made ready to fork as a worker is: the programs' path run once
in it, its objects immortal where the interpreter has them, its collector frozen. Each
unit's program carries a fresh comment, so it is new to every cache. A bare fork (the child
exits at once) is measured the same way, in the same process.
"""

from __future__ import annotations

import gc
import io
import json
import os
import resource
import sys
from dataclasses import asdict

from execbench.sandbox import immortal, tracer
from execbench.sandbox.trace import TraceOptions

_WARM = 50
_BARE = 300
_OPTIONS = asdict(TraceOptions())
"""The tracer's options, made once here: a harness holds them before it forks."""


def _usage() -> tuple[float, int]:
    now = resource.getrusage(resource.RUSAGE_SELF)
    return now.ru_utime + now.ru_stime, now.ru_minflt


def _unit(job: list[str], tag: int, answers: int) -> None:
    """The child: what a harness must do for one new program, then exit."""
    code, entry_point, args = job
    sys.stdout = io.StringIO()
    result = tracer.run(tracer.compile_program(f"{code}\n# unit {tag}\n"), entry_point,
                        tracer.compile_args(args), _OPTIONS)
    os.write(answers, json.dumps(result, default=repr).encode())
    os._exit(0)


def _forks(units: int, jobs: list[list[str]] | None) -> tuple[float, float]:
    """CPU seconds and minor faults per fork, this process's and its children's together;
    each child runs a unit of ``jobs``, or, with None, exits at once (a bare fork)."""
    answers_read, answers_write = os.pipe()
    start, children = _usage(), [0.0, 0]
    for index in range(units):
        pid = os.fork()
        if pid == 0:
            if jobs is None:
                os._exit(0)
            _unit(jobs[index % len(jobs)], index, answers_write)
        if jobs is not None:
            os.read(answers_read, 1 << 20)
        rusage = os.wait4(pid, 0)[2]
        children[0] += rusage.ru_utime + rusage.ru_stime
        children[1] += rusage.ru_minflt
    end = _usage()
    os.close(answers_read)
    os.close(answers_write)
    return ((end[0] - start[0] + children[0]) / units,
            (end[1] - start[1] + children[1]) / units)


def measure(jobs: list[list[str]], units: int) -> dict[str, float]:
    sys.stdout = io.StringIO()
    for code, entry_point, args in jobs[:_WARM]:
        tracer.run(tracer.compile_program(code), entry_point, tracer.compile_args(args),
                   _OPTIONS)
    sys.stdout = sys.__stdout__
    immortal.make_immortal()
    gc.collect()
    gc.freeze()
    bare_cpu, bare_faults = _forks(_BARE, None)
    unit_cpu, unit_faults = _forks(units, jobs)
    return {"bare_cpu": bare_cpu, "bare_faults": bare_faults, "unit_cpu": unit_cpu,
            "unit_faults": unit_faults, "units": units}


if __name__ == "__main__":
    with open(sys.argv[1]) as source:
        work = json.load(source)
    print(json.dumps(measure(work, int(sys.argv[2]) if len(sys.argv) > 2 else len(work))))
