"""A stand-in for vLLM's and SGLang's OpenAI-compatible servers, for the managed-server tests.

It takes the command line execbench gives an engine (``--model`` or ``--model-path``,
``--host``, ``--port``, engine flags, refusing unknown ones as the engines' argument parsers
do), listens only once "loaded" (after ``--startup-delay`` seconds), then serves
``/health``, ``/v1/models`` and ``/v1/chat/completions``, answering every chat request with
``--answer`` after ``--latency`` seconds. It logs to stdout as engines do, and exits on
SIGTERM. Test-only behaviour:

- ``--pid-file PATH`` writes its pid there (and, with ``--grandchild``, the pid of a child it
  starts, as engines start workers, to ``PATH.child``), so a test can check none outlives
  the run;
- ``EXECBENCH_STANDIN_DIE_AFTER=N`` in the environment makes it exit with status 1 after
  answering N requests (an environment variable, not a flag, because a run's flags are
  pinned and the resumed run must be the same command).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web


def main() -> None:
    parser = argparse.ArgumentParser(prog="standin-engine")
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--model")
    model.add_argument("--model-path")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--answer", default="[ANSWER]\nassert f(0) == 0\n[/ANSWER]")
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--grandchild", action="store_true")
    options = parser.parse_args()
    name = options.model or options.model_path
    print(f"stand-in engine {os.getpid()}: {json.dumps(sys.argv[1:])}", flush=True)
    if options.pid_file is not None:
        options.pid_file.write_text(str(os.getpid()))
        if options.grandchild:
            worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            options.pid_file.with_name(options.pid_file.name + ".child").write_text(
                str(worker.pid))
    die_after = int(os.environ.get("EXECBENCH_STANDIN_DIE_AFTER", "0"))
    answered = 0

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="")

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model"}]})

    async def complete(request: web.Request) -> web.Response:
        nonlocal answered
        body = await request.json()
        if body.get("model") != name:
            return web.json_response({"error": {"message": f"no model {body.get('model')}"}},
                                     status=404)
        await asyncio.sleep(options.latency)
        answered += 1
        if die_after and answered > die_after:
            print(f"stand-in engine: dying after {die_after} answers", flush=True)
            os._exit(1)
        return web.json_response({
            "id": "chatcmpl-standin", "object": "chat.completion", "created": 0, "model": name,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": options.answer}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
        })

    time.sleep(options.startup_delay)  # "loading the weights": not listening yet
    app = web.Application()
    app.add_routes([web.get("/health", health), web.get("/v1/models", models),
                    web.post("/v1/chat/completions", complete)])
    print("stand-in engine: ready", flush=True)
    try:
        web.run_app(app, host=options.host, port=options.port, print=None, access_log=None)
    finally:  # also when aiohttp's shutdown trips over a request cut off by the client
        print("stand-in engine: stopped", flush=True)


if __name__ == "__main__":
    main()
