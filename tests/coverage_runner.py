"""coverage.py's reading of many calls, measured in one helper process.

Each call is taken as the benchmark defines it: the program file runs as a module, then the
call runs, with the namespace name, random seed and hash seed a sandbox runner gives a
program. One process for all calls keeps the tests fast (a process per program would not).
For each call the helper reports coverage's raw executed ``lines``, its ``statements`` and
``executed`` statements (lines normalised to statement starts), and the exception
``raised``, if any.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HELPER = """\
import json, os, random, sys
import coverage

jobs = [json.loads(line) for line in sys.stdin]
cov = coverage.Coverage(data_file=None, branch=False, config_file=False)
paths = []
for number, job in enumerate(jobs):
    path = os.path.abspath(f"program_{number}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(job["code"])
    paths.append(path)
    module = compile(job["code"], path, "exec")
    call = compile(f"(lambda *a, **k: (a, k))({job['args']}\\n)", "<call>", "eval")
    namespace = {"__name__": "__program__"}
    random.seed(0)
    job["raised"] = None
    cov.start()
    try:
        exec(module, namespace)
        args, kwargs = eval(call, namespace)
        namespace[job["entry_point"]](*args, **kwargs)
    except BaseException as exc:
        job["raised"] = type(exc).__name__
    finally:
        cov.stop()
results = []
for job, path in zip(jobs, paths):
    _, statements, _, missing, _ = cov.analysis2(path)
    results.append({"lines": sorted(cov.get_data().lines(path) or []),
                    "statements": sorted(statements),
                    "executed": sorted(set(statements) - set(missing)),
                    "raised": job["raised"]})
print(json.dumps(results))
"""


def measure(calls: list[tuple[str, str, str]], cwd: Path) -> list[dict[str, Any]]:
    """coverage.py's reading of each (code, entry point, argument text), in order."""
    feed = "".join(json.dumps({"code": code, "entry_point": entry, "args": args}) + "\n"
                   for code, entry, args in calls)
    helper = subprocess.run(
        [sys.executable, "-c", HELPER], input=feed, capture_output=True, text=True, cwd=cwd,
        timeout=300, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    results = json.loads(helper.stdout)
    assert len(results) == len(calls)
    return results
