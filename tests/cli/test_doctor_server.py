"""``execbench doctor --model ... --model-base-url ...`` against scripted servers that play
what real ones were seen to do: vLLM (all well, a context it tells and counts),
``transformers serve`` (streams without ``[DONE]``, HTTP 422 for ``top_k``), llama.cpp's
Python server (no usage in streams, a stream interrupted when another request arrives),
and servers no run can use."""

from __future__ import annotations

import json
from typing import Any

from tests.fakeserver import VLLM, Context, FakeServer, Reply, prompt_of
from tests.helpers.cli import execbench
from tests.test_runner import flat

MODEL = "test-model"


def doctor(server: FakeServer | str, *extra: str) -> Any:
    url = server if isinstance(server, str) else server.base_url
    return execbench("doctor", "--model", f"openai-api/srv/{MODEL}", "--model-base-url", url,
                     *extra)


def lines(done: Any) -> dict[str, str]:
    """Each check's line, by its name."""
    found = {}
    for line in done.stdout.splitlines():
        parts = line.split(maxsplit=1)
        if len(parts) == 2 and parts[0] in ("ok", "!!", "--"):
            for name in ("reachable", "model", "whole reply", "streamed reply", "two at once",
                         "context", "extra field"):
                if parts[1].startswith(name):
                    found[name] = line.strip()
    return found


def test_a_server_that_does_everything_needs_no_settings() -> None:
    context = Context(MODEL, max_model_len=512, tokenizer=VLLM)
    with FakeServer(lambda body, attempt: Reply(), context=context) as server:
        done = doctor(server)
    assert done.exit_code == 0, done.stderr + done.stdout
    seen = lines(done)
    assert seen["model"].startswith("ok") and f"{MODEL} is listed" in seen["model"]
    assert "usage 10 prompt + 5 completion tokens" in seen["whole reply"]
    assert "finish_reason stop, [DONE], usage reported" in seen["streamed reply"]
    assert seen["two at once"].startswith("ok")
    assert "512 tokens (the server's max_model_len)" in seen["context"]
    assert "refused before sending" in seen["context"]
    assert "top_k=20 accepted" in seen["extra field"]
    assert "settings to run with: none needed" in done.stdout


def test_transformers_serve_streams_without_done_and_refuses_top_k() -> None:
    """A stream that ends at its finish reason without ``[DONE]`` is whole: no setting for
    it; ``top_k`` refused with 422 is a field not to pass."""
    def responder(body: dict[str, Any], attempt: int) -> Reply:
        if "top_k" in body:
            return Reply(status=422, raw=json.dumps(
                {"detail": "Unexpected fields in the request: {'top_k'}"}))
        return Reply(stream="no-done")

    with FakeServer(responder, context=Context(MODEL)) as server:
        done = doctor(server)
    assert done.exit_code == 0, done.stderr
    seen = lines(done)
    assert "finish_reason stop, no [DONE], usage reported" in seen["streamed reply"]
    assert seen["streamed reply"].startswith("ok")
    assert "top_k=20 refused: HTTP 422 Unexpected fields in the request: {'top_k'}" in \
        flat(seen["extra field"])
    assert "not told: prompts are sent unchecked" in seen["context"]
    assert "do not pass -M top_k: the server refuses it (HTTP 422)" in flat(done.stdout)
    assert "-M stream=false" not in done.stdout


def test_llama_cpp_streams_lack_usage_and_are_interrupted_by_another_request() -> None:
    """llama.cpp's Python server ignores ``stream_options`` and, when a second request
    arrives, ends the first stream with ``[DONE]`` and no finish reason; whole replies
    wait their turn. Both call for ``-M stream=false``, said once."""
    def responder(body: dict[str, Any], attempt: int) -> Reply:
        if body.get("stream") and prompt_of(body).endswith("(1 of 2)"):
            return Reply(stream="interrupted", usage=False)
        return Reply(usage=not body.get("stream"))

    with FakeServer(responder, context=Context(MODEL)) as server:
        done = doctor(server)
    assert done.exit_code == 0, done.stderr
    seen = lines(done)
    assert "finish_reason stop, [DONE], no usage" in seen["streamed reply"]
    assert seen["two at once"].startswith("!!")
    assert "1 of two concurrent streams interrupted" in seen["two at once"]
    assert "two whole replies at once: both answered" in seen["two at once"]
    settings = done.stdout.split("settings to run with:")[1]
    assert settings.count("-M stream=false") == 1
    assert "carry no token usage" in settings and "interrupted when another" in settings


def test_streams_that_never_finish_call_for_whole_replies() -> None:
    with FakeServer(lambda body, attempt: Reply(stream="interrupted"),
                    context=Context(MODEL)) as server:
        done = doctor(server)
    assert done.exit_code == 0, done.stderr
    assert "no finish reason (interrupted)" in lines(done)["streamed reply"]
    assert "-M stream=false: streamed replies do not end with a finish reason" in \
        flat(done.stdout)


def test_a_server_no_run_can_use_exits_1_with_the_reason() -> None:
    with FakeServer(lambda body, attempt: Reply.error(404, f"The model `{MODEL}` does not "
                                                           "exist."),
                    context=Context("other-model")) as server:
        done = doctor(server)
    assert done.exit_code == 1
    seen = lines(done)
    assert seen["model"].startswith("!!") and "the server lists other-model" in seen["model"]
    assert f"HTTP 404 The model `{MODEL}` does not exist." in flat(done.stderr)
    assert "settings to run with" not in done.stdout


def test_an_unreachable_server_exits_1() -> None:
    with FakeServer(lambda body, attempt: Reply()) as server:
        url = server.base_url
    done = doctor(url)
    assert done.exit_code == 1
    assert "cannot reach http://127.0.0.1:" in flat(done.stderr)


def test_model_flags_need_model() -> None:
    done = execbench("doctor", "--model-base-url", "http://localhost:1/v1")
    assert done.exit_code == 2 and "go with --model" in flat(done.stderr)
