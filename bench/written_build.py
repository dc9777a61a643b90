"""Model-written programs against CRUXEval: the time to build a suite from programs a
model wrote, against the time to build the same number of CRUXEval programs, and the time
the writing itself took.

Usage: ``python bench/written_build.py [--data PATH] [--programs N] [--repeats N]``

The "model" is an OpenAI-compatible server started here (a thread on 127.0.0.1) whose
reply to request ``i`` is CRUXEval's program ``i`` with its input, fenced as
``generate-programs`` asks: both sides then hold the same programs and calls, and what
differs is the path. ``generate-programs`` runs first (requests, the class check, two
sandboxed runs of each call), timed with and without the requests; then the output and
input tasks are built from its file, and from the same programs read from the CRUXEval
file. Each time is the best of ``--repeats``, the two builds in alternation. The ratio
line compares the builds (the goal: at most 2x); the one after it charges the writing's
checks to the written side too (its requests are the model's time, not execbench's).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import cruxeval_file, programs_options

from execbench.program_writing import WritingConfig, write_programs
from execbench.sources.written import class_rule
from execbench.suite import BuildOptions, build_suite

GOAL = 2.0
TASKS = ["output", "input"]


def _replies(path: Path, count: int) -> tuple[list[str], Path]:
    """The first ``count`` CRUXEval programs that are of the list class's rules, as
    replies, and a CRUXEval-format file of the same records."""
    replies, records = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        try:
            class_rule(record["code"])
        except ValueError:
            continue
        replies.append(f"```python\n{record['code']}\n```\n```inputs\n{record['input']}\n```")
        records.append(line)
        if len(records) == count:
            break
    kept = Path(tempfile.mkdtemp()) / "cruxeval.jsonl"
    kept.write_text("\n".join(records) + "\n", encoding="utf-8")
    return replies, kept


def _server(replies: list[str]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seed = body.get("seed", 0)
            text = replies[seed] if seed < len(replies) else "no more"
            payload = json.dumps({
                "id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser, args = programs_options(__doc__, argv)
    replies, crux = _replies(cruxeval_file(parser, args.data), args.programs)
    workers = os.cpu_count() or 1
    print(f"python {platform.python_version()}, {workers} workers, {len(replies)} programs "
          f"(CRUXEval programs of the list class's rules)")
    server = _server(replies)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    times: dict[str, list[float]] = {"write": [], "ask": [], "written": [], "cruxeval": []}
    try:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as folder:
                out = Path(folder) / "written.jsonl"
                start = time.perf_counter()
                summary = write_programs(WritingConfig(
                    model="openai-api/bench/writer", out=out, count=len(replies),
                    inputs=1, base_url=url, max_requests=len(replies)))
                times["write"].append(time.perf_counter() - start)
                times["ask"].append(summary.asking_seconds)
                start = time.perf_counter()
                made = build_suite([str(out)], Path(folder) / "w",
                                   BuildOptions(tasks=TASKS, workers=workers))
                times["written"].append(time.perf_counter() - start)
                start = time.perf_counter()
                crux_made = build_suite([str(crux)], Path(folder) / "c",
                                        BuildOptions(tasks=TASKS, workers=workers,
                                                     fmt="cruxeval"))
                times["cruxeval"].append(time.perf_counter() - start)
    finally:
        server.shutdown()
    best = {name: min(values) for name, values in times.items()}
    checks = min(w - a for w, a in zip(times["write"], times["ask"], strict=True))
    print(f"generate-programs: {summary.kept} of {summary.asked} kept (dropped "
          f"{dict(summary.dropped) or 'none'}); best {best['write']:.2f} s, of which "
          f"{checks:.2f} s reading and checking, the rest the requests")
    print(f"build from the written file: {made.counts.instances} instances, best "
          f"{best['written']:.2f} s")
    print(f"build from CRUXEval: {crux_made.counts.instances} instances, best "
          f"{best['cruxeval']:.2f} s")
    print(f"written build / cruxeval build: {best['written'] / best['cruxeval']:.2f}x "
          f"(goal: at most {GOAL:.0f}x)")
    print(f"(checks + written build) / cruxeval build: "
          f"{(checks + best['written']) / best['cruxeval']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
