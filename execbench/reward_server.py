"""``execbench serve-rewards``: the rewards of ``execbench.rewards`` over HTTP.

``POST /get_reward`` (or ``/``) takes a batch in either of two forms and answers with one
reward per item, in order:

* OpenRLHF's remote reward model: ``{"query": [...], "prompts": [...], "labels": [...]}``,
  each query being its prompt followed by the response, each label an exported row's
  ``ground_truth``;
* execbench's own: ``{"responses": [...], "ground_truths": [...]}``.

The reply is ``{"rewards": [...], "scores": [...], "extra_logs": {"correct": [...],
"parsed": [...]}, "verdicts": [...]}`` (``rewards`` and ``scores`` are the same numbers:
OpenRLHF reads one or the other). A request that cannot be scored as a whole (not JSON,
lists of different lengths, a label that is no exported ground truth) gets a 400 with
``{"error": "..."}`` saying why in one line, and the server goes on. ``GET /health``
answers ``{"status": "ok"}``.

Each batch is scored in a worker thread, so a batch whose rows run code does not hold up
another's reading; its rows share nothing but the sandbox pool, in which each response
runs as its own unit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web

from execbench.rewards import Reward, Rewarder, RewardError

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The largest body the server reads; a batch of long prompts and truths fits well inside."""


def responses_of(body: Any) -> tuple[list[Any], list[Any]]:
    """The (ground truths, responses) of a request body, in either form;
    ``RewardError`` says what is wrong with one that is neither."""
    if not isinstance(body, dict):
        raise RewardError("the request body is not a JSON object")
    if "ground_truths" in body or "responses" in body:
        truths, responses = _lists(body, "ground_truths", "responses")
        return truths, responses
    if "query" not in body:
        raise RewardError("expected {\"query\", \"prompts\", \"labels\"} (OpenRLHF) or "
                          "{\"responses\", \"ground_truths\"}")
    queries, prompts, labels = _lists(body, "query", "prompts", "labels")
    answers = []
    for index, (query, prompt) in enumerate(zip(queries, prompts, strict=True)):
        if not isinstance(query, str) or not isinstance(prompt, str) \
                or not query.startswith(prompt):
            raise RewardError(f"query {index} does not start with its prompt, so its response "
                              "cannot be told apart")
        answers.append(query[len(prompt):])
    return labels, answers


def _lists(body: dict[str, Any], *names: str) -> list[list[Any]]:
    """The body's lists ``names``, all of one length."""
    found = [body.get(name) for name in names]
    for name, value in zip(names, found, strict=True):
        if not isinstance(value, list):
            raise RewardError(f"{name!r} must be a list")
    if len({len(value) for value in found if isinstance(value, list)}) > 1:
        raise RewardError("the lists " + ", ".join(map(repr, names)) + " differ in length")
    return [value for value in found if isinstance(value, list)]


def reply(rewards: list[Reward]) -> dict[str, Any]:
    values = [done.value for done in rewards]
    return {"rewards": values, "scores": values,
            "extra_logs": {"correct": [float(done.score.correct) for done in rewards],
                           "parsed": [float(done.parsed) for done in rewards]},
            "verdicts": [done.score.verdict for done in rewards]}


def make_app(rewarder: Rewarder, log: Callable[[str], None] = lambda _: None
             ) -> web.Application:
    """The service's application, scoring with ``rewarder``."""

    async def score(request: web.Request) -> web.Response:
        data = await request.read()
        try:  # parsing a large body takes a while: off the loop, as scoring is
            rewards = await asyncio.to_thread(_score, rewarder, data)
        except RewardError as exc:
            return _refused(str(exc), log)
        return web.json_response(reply(rewards))

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "reward": rewarder.choice.describe()})

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.router.add_post("/", score)
    app.router.add_post("/get_reward", score)
    app.router.add_get("/health", health)
    return app


def _score(rewarder: Rewarder, data: bytes) -> list[Reward]:
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise RewardError("the request body is not JSON") from None
    truths, responses = responses_of(body)
    return rewarder.rewards(truths, responses)


def _refused(why: str, log: Callable[[str], None]) -> web.Response:
    log(f"refused a request: {why}")
    return web.json_response({"error": why}, status=400)


def serve(rewarder: Rewarder, host: str, port: int,
          log: Callable[[str], None] = print) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    web.run_app(make_app(rewarder, log), host=host, port=port, print=None,
                handle_signals=True)


@contextlib.contextmanager
def serving(rewarder: Rewarder, host: str = "127.0.0.1", port: int = 0,
            log: Callable[[str], None] = lambda _: None) -> Iterator[str]:
    """The service in a thread of this process while the block runs (a trainer's own
    process, a test, a benchmark); yields its ``/get_reward`` URL (``port=0``: a free one)."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(make_app(rewarder, log))
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, host, port)
    loop.run_until_complete(site.start())
    bound = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{bound}/get_reward"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
