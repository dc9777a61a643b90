"""Requests per second of the generation engine against a local server with a fixed latency.

Usage: ``python bench/generation_engine.py [--connections 64,256] [--requests N]
[--latency S] [--repeats N]``

A model server that answers after a fixed delay can serve ``connections / latency``
requests per second; what is lost below that is the cost of the client, of the server and
of the machine they share, and the raw client shows how much of it is not execbench's. This
script starts an OpenAI-compatible server in its own process (aiohttp.web, every answer
after ``--latency`` seconds, 50 ms by default) and, at each connection count, sends it the
same requests four ways:

- ``execbench run``: the CLI end to end, as a user runs it (``openai-api/bench/m``,
  ``--model-base-url``, ``--max-connections C``) on a small suite built here from generated
  programs with the ``generic`` format (the output task, ``-n`` samples per instance);
- ``execbench provider``: the same requests through the provider's ``generate`` alone,
  ``C`` at a time, as the runner's workers call it (the client without the runner);
- ``raw aiohttp``: a bare aiohttp client with ``C`` connections posting the same bodies and
  decoding the JSON replies;
- ``ideal``: ``C / latency``.

Rates are counted by the server, from the first request's arrival to the last reply, so
the CLI's start-up (imports, loading the suite, writing results) is not charged to the
requests; its whole wall time is printed beside. Each row is the best of ``--repeats``.
The last lines give execbench run / raw aiohttp (the goal: at least 95%).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, TCPConnector, web

from execbench.models import get_model
from execbench.models.base import GenerateConfig, Request
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task

PROGRAMS = 100
GOAL = 0.95
ANSWER = "[ANSWER]\nassert f(1) == 2\n[/ANSWER]"
ROOT = Path(__file__).resolve().parents[1]


def serve(latency: float) -> None:
    """The server process: answer every chat completion after ``latency`` seconds.

    It keeps the arrival time of the first request and the time of the last reply since
    the last ``POST /reset``, and reports them with the count at ``GET /stats``. The reply
    is encoded once: the server's own work per request should be as small as a real
    server's bookkeeping, so that the client is what is measured. It exits when its stdin
    closes, so that it never outlives the benchmark, however that ends.
    """
    reply = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": ANSWER}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112},
    }).encode()
    stats: dict[str, Any] = {"count": 0, "first": None, "last": None}

    async def complete(request: web.Request) -> web.Response:
        arrived = time.perf_counter()
        json.loads(await request.read())
        if stats["first"] is None:
            stats["first"] = arrived
        await asyncio.sleep(latency)
        stats["count"] += 1
        stats["last"] = time.perf_counter()
        return web.Response(body=reply, content_type="application/json")

    async def reset(_: web.Request) -> web.Response:
        stats.update(count=0, first=None, last=None)
        return web.json_response({})

    async def report(_: web.Request) -> web.Response:
        return web.json_response(stats)

    async def main() -> None:
        app = web.Application()
        app.add_routes([web.post("/v1/chat/completions", complete),
                        web.post("/reset", reset), web.get("/stats", report)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)  # hundreds of clients connect at once
        await web.SockSite(runner, listener).start()
        print(listener.getsockname()[1], flush=True)
        await asyncio.Event().wait()

    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    asyncio.run(main())


class Server:
    """The server process, started with this file's ``--serve`` and stopped on exit."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        self._call("POST", "/reset")

    def rate(self) -> tuple[int, float]:
        """Requests answered since the last reset, and their rate per second."""
        stats = self._call("GET", "/stats")
        span = stats["last"] - stats["first"] if stats["count"] else 0.0
        return stats["count"], stats["count"] / span if span else 0.0

    def close(self) -> None:
        """Closing its stdin ends the server (see ``serve``)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.stdout.close()
        self.process.wait()


def make_suite(folder: Path) -> list[dict[str, Any]]:
    """Build the output-task suite of ``PROGRAMS`` generated programs (one call each, so
    that building takes a second); return its instances."""
    source = folder / "programs.jsonl"
    records = [{"id": f"p{i}", "code": f"def f(x):\n    return x * {i % 7} + {i}\n",
                "entry_point": "f", "calls": [str(i)]} for i in range(PROGRAMS)]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    suite = folder / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=["output"], fmt="generic"))
    _, instances, _ = load_suite(suite)
    return instances


async def raw_client(base_url: str, bodies: list[dict[str, Any]], connections: int) -> None:
    """The floor for a Python client: post each body and decode the reply, nothing else."""
    queue = list(reversed(bodies))
    async with ClientSession(connector=TCPConnector(limit=connections)) as session:

        async def worker() -> None:
            while queue:
                body = queue.pop()
                async with session.post(f"{base_url}/chat/completions", json=body) as reply:
                    reply.raise_for_status()
                    await reply.json()

        await asyncio.gather(*(worker() for _ in range(connections)))


async def provider(base_url: str, requests: list[Request], connections: int) -> None:
    """The provider alone: ``generate`` called by ``connections`` workers, as the runner does."""
    model = get_model("openai-api/bench/m", base_url=base_url)
    config = GenerateConfig(max_connections=connections)
    queue = list(reversed(requests))
    try:

        async def worker() -> None:
            while queue:
                generation = await model.generate(queue.pop(), config)
                if generation.error is not None:
                    raise RuntimeError(generation.error)

        await asyncio.gather(*(worker() for _ in range(connections)))
    finally:
        await model.aclose()


def execbench_run(suite: Path, out: Path, base_url: str, samples: int, connections: int
                  ) -> float:
    """Run the CLI to completion; returns its wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("execbench")), "run", "--suite", str(suite),
         "--model", "openai-api/bench/m", "--model-base-url", base_url,
         "--max-connections", str(connections), "-n", str(samples), "--temperature", "0.8",
         "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"execbench run failed ({done.returncode}):\n{done.stderr}")
    return time.perf_counter() - start


def measure(server: Server, folder: Path, requests: list[Request], samples: int,
            connections: int, repeats: int) -> tuple[dict[str, float], float]:
    """The best rate of each way of sending, and execbench run's best wall time."""
    best: dict[str, float] = {}
    wall = float("inf")

    def keep(row: str) -> None:
        answered, rate = server.rate()
        if answered != len(requests):
            raise SystemExit(f"{row}: {answered} of {len(requests)} requests answered")
        best[row] = max(best.get(row, 0.0), rate)

    for repeat in range(repeats):
        server.reset()
        out = folder / f"run{connections}-{repeat}"
        wall = min(wall, execbench_run(folder / "suite", out, server.base_url, samples,
                                       connections))
        keep("execbench run")
        server.reset()
        asyncio.run(provider(server.base_url, requests, connections))
        keep("execbench provider")
        server.reset()
        bodies = [{"model": "m", "messages": request.messages} for request in requests]
        asyncio.run(raw_client(server.base_url, bodies, connections))
        keep("raw aiohttp")
    return best, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", default="64,256",
                        help="comma-separated connection counts (default 64,256)")
    parser.add_argument("--requests", type=int, default=4000,
                        help="requests per measurement, rounded to whole samples of the "
                             f"{PROGRAMS} instances (default 4000)")
    parser.add_argument("--latency", type=float, default=0.05,
                        help="the server's delay per request in seconds (default 0.05)")
    parser.add_argument("--repeats", type=int, default=2, help="repeats per row (default 2)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.serve:
        serve(options.latency)
        return 0
    counts = [int(c) for c in options.connections.split(",")]
    samples = max(1, options.requests // PROGRAMS)
    total = samples * PROGRAMS

    server = Server(options.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            instances = make_suite(folder)
            task = get_task("output")
            requests = [Request(task.asking.prompt(instance, 0), instance, sample)
                        for sample in range(samples) for instance in instances]
            print(f"server: {options.latency * 1000:g} ms per request, in its own process; "
                  f"{total} requests per measurement ({PROGRAMS} instances x {samples} "
                  f"samples); best of {options.repeats}")
            ratios = []
            for connections in counts:
                best, wall = measure(server, folder, requests, samples, connections,
                                     options.repeats)
                ideal = connections / options.latency
                print(f"\n{connections} connections")
                for row, rate in [*best.items(), ("ideal", ideal)]:
                    print(f"  {row:<20} {rate:>8,.0f} requests/s  {rate / ideal:6.1%} of ideal")
                print(f"  (execbench run's whole command took {wall:.2f} s at best, start-up "
                      "and results included)")
                ratios.append((connections, best["execbench run"] / best["raw aiohttp"]))
            print()
            for connections, ratio in ratios:
                verdict = "yes" if ratio >= GOAL else "NO"
                print(f"execbench run / raw aiohttp at {connections} connections: {ratio:.1%} "
                      f"(>= {GOAL:.0%}: {verdict})")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
