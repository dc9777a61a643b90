"""Programs that read standard input against functions: the time to build a suite from
CRUXEval's programs written as scripts that read their input and print their result,
against the time to build the same programs as CRUXEval gives them.

Usage: ``python bench/stdin_build.py [--data PATH] [--programs N] [--repeats N]``

Each CRUXEval program ``f`` becomes a script that reads the call's arguments on stdin and
prints ``repr(f(...))``, in the ``stdin`` JSONL shape; both builds make the output and input
tasks, one after the other, best of ``--repeats``. The ratio line is the goal's (at most
2x): what reading stdin, capturing what is printed and judging printed text add to a
build.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from common import cruxeval_file, programs_options

from execbench.suite import BuildOptions, build_suite

GOAL = 2.0
TASKS = ["output", "input"]
READER = "\nimport sys\nprint(repr(f(*eval('(' + sys.stdin.read() + ',)'))))\n"
"""What each script adds below CRUXEval's function: read the arguments, print the result."""


def _files(path: Path, count: int, folder: Path) -> tuple[Path, Path]:
    """The first ``count`` CRUXEval records, as they are and as stdin scripts."""
    lines = path.read_text(encoding="utf-8").splitlines()[:count]
    crux, scripts = folder / "cruxeval.jsonl", folder / "scripts.jsonl"
    crux.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records = [json.loads(line) for line in lines]
    scripts.write_text("".join(json.dumps({"id": r["id"], "code": r["code"] + READER,
                                           "inputs": [r["input"]]}) + "\n"
                               for r in records), encoding="utf-8")
    return crux, scripts


def main(argv: list[str] | None = None) -> int:
    parser, args = programs_options(__doc__, argv)
    workers = os.cpu_count() or 1
    times: dict[str, list[float]] = {"cruxeval": [], "stdin": []}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        crux, scripts = _files(cruxeval_file(parser, args.data), args.programs, Path(folder))
        print(f"python {platform.python_version()}, {workers} workers, {args.programs} "
              "programs")
        for repeat in range(args.repeats):
            for name, source, fmt in (("cruxeval", crux, "cruxeval"),
                                      ("stdin", scripts, "stdin")):
                start = time.perf_counter()
                made = build_suite([str(source)], Path(folder) / f"{name}-{repeat}",
                                   BuildOptions(tasks=TASKS, workers=workers, fmt=fmt))
                times[name].append(time.perf_counter() - start)
                counts[name] = made.counts.instances
    best = {name: min(values) for name, values in times.items()}
    for name in ("cruxeval", "stdin"):
        print(f"build from {name}: {counts[name]} instances, best {best[name]:.2f} s")
    print(f"stdin build / cruxeval build: {best['stdin'] / best['cruxeval']:.2f}x "
          f"(goal: at most {GOAL:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
