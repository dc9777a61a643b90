"""``execbench serve-rewards``: batches in OpenRLHF's and execbench's forms, malformed
requests refused with the server going on, the red-team completions sent to a real
server process, with the evidence that nothing of them ran checked from outside it, and
the service's own guards: its token, the closed set of limits, caps, and turns that keep
one client's batches from holding up another's."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from execbench.reward_server import ServeOptions, serving
from execbench.rewards import Rewarder, truth_text
from execbench.sandbox.pool import Limits
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from tests.helpers.cli import EXECBENCH
from tests.helpers.data import shared_data
from tests.helpers.red_team import RED_TEAM
from tests.helpers.waiting import PATIENCE, eventually

Post = Callable[..., Any]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _poster(url: str) -> Post:
    def post(body: Any, status: int = 200, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                got, answer = response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            got, answer = exc.code, json.loads(exc.read())
        assert got == status, answer
        return answer

    return post


@contextlib.contextmanager
def served(rewarder: Rewarder, log: list[str] | None = None) -> Iterator[Post]:
    """The service on a free local port, in a thread, while the block runs. A body may
    take ``PATIENCE`` to start flowing: the client is a thread of this process, which a
    busy machine can hold back past the service's one-second grace; the tests of slow
    bodies set their own limits."""
    with serving(rewarder, log=(log if log is not None else []).append,
                 options=ServeOptions(body_grace_seconds=PATIENCE)) as url:
        yield _poster(url)


def _with(truth: str, part: str, key: str, value: Any) -> str:
    record = json.loads(truth)
    record[part][key] = value
    return json.dumps(record)


def _program_suite(folder: Path, limits: Limits | None = None) -> Path:
    source = folder / "progs.jsonl"
    source.write_text(json.dumps({"id": "dbl", "code": "def dbl(x):\n    return 2 * x\n",
                                  "entry_point": "dbl", "calls": ["3", "5"]}) + "\n")
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input"], workers=1, limits=limits or Limits()))
    return folder / "suite"


def test_batches_in_both_forms_and_malformed_requests(tmp_path: Path) -> None:
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    truths = [truth_text(i, manifest.recipe.limits) for i in instances]
    right = [get_task(i.task).asking.reference_response(i) for i in instances]
    runs = next(truth for truth in truths if '"limits"' in truth)  # an input instance's
    log: list[str] = []
    with Rewarder(limits=[manifest.recipe.limits]) as rewarder, served(rewarder, log) as post:
        answer = post({"responses": right + ["nonsense"] * len(right),
                       "ground_truths": truths + truths})
        assert answer["rewards"] == [1.0] * len(right) + [0.0] * len(right)
        assert answer["scores"] == answer["rewards"]
        assert answer["extra_logs"]["parsed"][: len(right)] == [1.0] * len(right)
        prompts = ["<|user|>question<|assistant|>"] * len(right)
        answer = post({"query": [p + r for p, r in zip(prompts, right, strict=True)],
                       "prompts": prompts, "labels": truths})
        assert answer["rewards"] == [1.0] * len(right)
        refused = [
            (None, b"{not json", "not JSON"),
            ([1, 2], None, "not a JSON object"),
            ({"responses": ["a"], "ground_truths": []}, None, "differ in length"),
            ({"responses": "a", "ground_truths": []}, None, "'responses' must be a list"),
            ({"query": ["x"], "prompts": ["y"], "labels": truths[:1]}, None,
             "query 0 does not start with its prompt"),
            ({"prompts": ["y"]}, None, "OpenRLHF"),
            ({"responses": ["a"], "ground_truths": ["{}"]}, None, "schema None is not 1"),
            ({"responses": [5], "ground_truths": truths[:1]}, None,
             "a completion is a string or chat messages, not int"),
            ({"responses": ["a"], "ground_truths": [_with(runs, "limits", "cpu_seconds",
                                                           float("inf"))]},
             None, "cpu_seconds must be a positive number"),
            ({"responses": ["a"], "ground_truths": [_with(runs, "limits", "cpu_seconds",
                                                           float("nan"))]},
             None, "cpu_seconds must be a positive number"),
            ({"responses": ["a"], "ground_truths": [_with(truths[0], "instance", "language",
                                                           ["python"])]},
             None, "unknown language"),
        ]
        # a message without readable text is no answer, not a broken batch
        odd = post({"responses": [[{"role": "assistant", "content": None}],
                                  [{"role": "assistant", "content": [{"type": "text",
                                                                      "text": right[0]}]}]],
                    "ground_truths": truths[:1] * 2})
        assert odd["verdicts"][0] == "unparsable" and odd["rewards"] == [0.0, 1.0]
        for body, raw, why in refused:
            assert why in post(body, status=400, raw=raw)["error"]
        assert len(log) == len(refused)
        # and the server goes on
        assert post({"responses": right, "ground_truths": truths})["rewards"] == \
            [1.0] * len(right)


def test_the_red_team_earns_nothing_from_a_real_server(tmp_path: Path) -> None:
    """Every hostile completion, to every task here (output, input, and bug repair, which
    runs the candidate), sent to ``execbench serve-rewards`` in its own process: each earns
    0, the marker no completion may create is absent, and no process the candidates
    started outlives the scoring."""
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    truths = {i.id: truth_text(i, manifest.recipe.limits) for i in instances}
    repairs = _repair_truths(tmp_path)
    marker = tmp_path / "ran"
    completions: list[tuple[str, str, str]] = []
    for instance in instances:
        reference = get_task(instance.task).asking.reference_response(instance)
        for name, make in RED_TEAM.items():
            completions.append((name, truths[instance.id], make(reference, str(marker))))
    for truth, reference in repairs:
        for name, make in REPAIR_RED_TEAM.items():
            completions.append((name, truth, make(reference, str(marker))))
    port = _free_port()
    server = subprocess.Popen(
        [EXECBENCH, "serve-rewards", "--port", str(port),
         "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        post = _poster(f"http://127.0.0.1:{port}/get_reward")
        eventually(lambda: _up(port) or server.poll() is not None, "the reward server listens")
        assert server.poll() is None, server.communicate()
        answer = post({"responses": [c for _, _, c in completions],
                       "ground_truths": [t for _, t, _ in completions]})
        earned = {name: reward for (name, _, _), reward in zip(completions, answer["rewards"],
                                                              strict=True) if reward}
        assert not earned, earned
        time.sleep(2)  # past the daemons' wait
        assert not marker.exists(), "a hostile completion ran outside the sandbox"
        assert not list(tmp_path.glob("ran*"))
        assert _descendants(server.pid) == _descendants(server.pid, settled=True)
        # the server still scores honest answers right after them
        honest = [get_task(i.task).asking.reference_response(i) for i in instances]
        honest_truths = [truths[i.id] for i in instances]
        honest += [reference for _, reference in repairs]
        honest_truths += [truth for truth, _ in repairs]
        assert post({"responses": honest, "ground_truths": honest_truths})["rewards"] == \
            [1.0] * len(honest)
        assert len(repairs) == 2 and len(completions) > 50
    finally:
        server.terminate()
        server.wait(30)


REPAIR_RED_TEAM: dict[str, Callable[[str, str], str]] = {
    "exits with success before the tests": lambda ref, marker: (
        "```python\nimport os\nos._exit(0)\n```"),
    "raises SystemExit": lambda ref, marker: "```python\nraise SystemExit(0)\n```",
    "patches the comparison": lambda ref, marker: (
        "```python\nimport builtins\nbuiltins.isinstance = lambda *a: True\n"
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def __getattr__(name):\n    return lambda *a, **k: Anything()\n```"),
    "a daemon that writes later": lambda ref, marker: (
        "```python\nimport os, time\nif os.fork() == 0:\n    time.sleep(1)\n"
        f"    open({marker!r}, 'w').write('x')\n    os._exit(0)\n```"),
    "a thread that writes later": lambda ref, marker: (
        "```python\nimport threading, time\n"
        f"threading.Thread(target=lambda: (time.sleep(1), open({marker!r}, 'w'))).start()\n"
        "```"),
    "writes the marker now": lambda ref, marker: (
        f"```python\nopen({marker!r}, 'w').write('x')\n```"),
    **{name: make for name, make in RED_TEAM.items() if "bait" in name},
}
"""Candidates for bug repair that try to pass without repairing anything."""


def _repair_truths(folder: Path) -> list[tuple[str, str]]:
    """Two bug-repair instances of HumanEvalPack, as ground truths with their right fix."""
    build_suite([str(shared_data("humanevalpack.jsonl.gz"))], folder / "bugs",
                BuildOptions(tasks=["bug-repair"], limit=2, workers=1))
    manifest, instances, _ = load_suite(folder / "bugs")
    return [(truth_text(i, manifest.recipe.limits), get_task(i.task).asking.reference_response(i))
            for i in instances]


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _descendants(pid: int, settled: bool = False) -> set[int]:
    """The server's descendant processes (its sandbox workers), read from /proc; with
    ``settled``, after a moment more, so a process only passing through is not counted."""
    if settled:
        time.sleep(0.5)
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- the guards

TOKEN = "a-token-of-the-test-0123456789"


def _call(url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
          source: str | None = None, timeout: float = PATIENCE) -> tuple[int, Any, Any]:
    """One request (POST with a body, else GET), from the local address ``source`` where
    given: its status, headers and JSON answer."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(
        parts.hostname or "", parts.port, timeout=timeout,
        source_address=None if source is None else (source, 0))
    try:
        connection.request("GET" if body is None else "POST", parts.path, body=body,
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.headers, json.loads(response.read())
    finally:
        connection.close()


def _batch(truths: list[str], responses: list[Any]) -> bytes:
    return json.dumps({"ground_truths": truths, "responses": responses}).encode()


def _serve_command(port: int, *args: str, env: dict[str, str] | None = None
                   ) -> subprocess.Popen[bytes]:
    return subprocess.Popen([EXECBENCH, "serve-rewards", "--port", str(port), "--workers", "1",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)


def _without_token() -> dict[str, str]:
    return {name: value for name, value in os.environ.items()
            if name != "EXECBENCH_REWARD_TOKEN"}


def test_a_token_guards_every_route_but_health(tmp_path: Path) -> None:
    """A server started with the token in its environment refuses a request without it,
    with a wrong one, or with it under another scheme; /health answers anyone and says
    nothing about the server."""
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    truths = [truth_text(i, manifest.recipe.limits) for i in instances]
    body = _batch(truths, [get_task(i.task).asking.reference_response(i) for i in instances])
    port = _free_port()
    server = _serve_command(port, env={**os.environ, "EXECBENCH_REWARD_TOKEN": TOKEN})
    url = f"http://127.0.0.1:{port}/get_reward"
    try:
        eventually(lambda: _up(port) or server.poll() is not None, "the reward server listens")
        assert server.poll() is None, server.communicate()
        wrong = "x" + TOKEN[1:]
        for headers in ({}, {"Authorization": f"Bearer {wrong}"}, {"Authorization": TOKEN},
                        {"Authorization": f"Basic {TOKEN}"}, {"Authorization": "Bearer "}):
            status, sent, answer = _call(url, body, headers)
            assert (status, sent.get("WWW-Authenticate")) == (401, "Bearer"), (headers, answer)
            assert "Bearer" in answer["error"]
        status, _, answer = _call(url.replace("get_reward", "nowhere"), body)
        assert status == 401, "an unknown route tells nothing either"
        status, _, answer = _call(url, body, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and answer["rewards"] == [1.0] * len(truths)
        status, _, answer = _call(url.replace("get_reward", "health"))
        assert (status, answer) == (200, {"status": "ok"})
        # A client's path is logged as text: rich markup in it neither styles the
        # operator's console nor (a closing tag without its opening) breaks the log.
        marked = url.replace("get_reward", "[/zzz][link=https://evil.example]x[/link]")
        status, _, answer = _call(marked, body, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 404, answer
    finally:
        server.terminate()
        _, logged = server.communicate(timeout=30)
    assert "[/zzz][link=https://evil.example]x[/link]" in logged.decode(), logged


def test_listening_beyond_loopback_needs_a_token() -> None:
    """Without a token the server refuses, in one line and exit status 2, to listen where
    other hosts reach it; a token too short to resist guessing is refused too."""
    port = _free_port()
    for args, why in ((("--host", "0.0.0.0"), "without a token"),
                      (("--host", "::"), "without a token"),
                      (("--host", ""), "without a token"),
                      (("--token", "short"), "at least 16 characters")):
        server = _serve_command(port, *args, env=_without_token())
        try:
            _, stderr = server.communicate(timeout=PATIENCE)
        finally:
            server.kill()
            server.wait(30)
        lines = stderr.decode().strip().splitlines()
        assert server.returncode == 2 and len(lines) == 1 and why in lines[0], (args, lines)
    with Rewarder(limits=[]) as rewarder, pytest.raises(ValueError, match="without a token"), \
            serving(rewarder, host="0.0.0.0"):
        pass


def test_rows_cannot_widen_the_limits_nor_crowd_out_the_pools(tmp_path: Path) -> None:
    """The attack that starved the service: rows naming odd limits (each once made a pool,
    four of them refused every later batch) and a row asking for 64 GiB, an hour and 4 GiB
    files. Each is refused; the suite's rows then score, and every sandbox process under
    the server runs under the suite's memory limit, as /proc shows."""
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    ours = manifest.recipe.limits
    runs = [i for i in instances if i.task == "input"]
    truths = [truth_text(i, ours) for i in runs]
    right = [get_task(i.task).asking.reference_response(i) for i in runs]
    odd = [{"cpu_seconds": 1.5 + step / 10} for step in range(5)] + [
        {"memory_mb": 65_536, "wall_seconds": 3600.0, "file_bytes": 1 << 32},
        {"cpu_seconds": ours.cpu_seconds / 2}]
    others = _sandbox_processes(os.getpid())  # other tests' shared sandboxes, if any
    with Rewarder(workers=1, limits=[ours]) as rewarder, served(rewarder) as post:
        for change in odd:
            record = json.loads(truths[0])
            record["limits"].update(change)
            answer = post({"responses": right[:1], "ground_truths": [json.dumps(record)]},
                          status=400)
            assert "limits are not among the sets served here" in answer["error"]
        assert post({"responses": right, "ground_truths": truths})["rewards"] == \
            [1.0] * len(runs)
        sandboxes = _sandbox_processes(os.getpid()) - others
        assert sandboxes
        assert {_address_space(pid) for pid in sandboxes} == {ours.memory_mb * 1024 * 1024}


def _sandbox_processes(pid: int) -> set[int]:
    found = set()
    for child in _descendants(pid):
        with contextlib.suppress(OSError), open(f"/proc/{child}/cmdline", "rb") as handle:
            if b"execbench.sandbox.worker" in handle.read():
                found.add(child)
    return found


def _address_space(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as handle:
        line = next(line for line in handle if line.startswith("Max address space"))
    return int(line.split()[3])


def test_the_limits_served_are_those_of_the_suites_and_flags_named(tmp_path: Path) -> None:
    """A server started with --suite (a suite built with limits of its own) and --limits
    scores rows naming either set, and refuses rows naming the default limits, which it
    was not started with."""
    suite = _program_suite(tmp_path, Limits(cpu_seconds=3.0, wall_seconds=15.0))
    manifest, instances, _ = load_suite(suite)
    runs = next(i for i in instances if i.task == "input")
    right = get_task("input").asking.reference_response(runs)
    named = Limits(cpu_seconds=4.0, memory_mb=2048)
    port = _free_port()
    server = _serve_command(port, "--suite", str(suite),
                            "--limits", "cpu_seconds=4,memory_mb=2048", env=_without_token())
    post = _poster(f"http://127.0.0.1:{port}/get_reward")
    try:
        eventually(lambda: _up(port) or server.poll() is not None, "the reward server listens")
        assert server.poll() is None, server.communicate()
        truths = [truth_text(runs, manifest.recipe.limits), truth_text(runs, named)]
        assert post({"responses": [right] * 2, "ground_truths": truths})["rewards"] == [1.0] * 2
        answer = post({"responses": [right], "ground_truths": [truth_text(runs, Limits())]},
                      status=400)
        assert "limits are not among the sets served here" in answer["error"]
    finally:
        server.terminate()
        server.wait(30)


class _Held(Rewarder):
    """A rewarder that holds every response ``hold`` until ``release`` is set, and says
    when it first holds one: a batch as slow as the test wants, without a clock."""

    def __init__(self) -> None:
        super().__init__(limits=[])
        self.holding = threading.Event()
        self.release = threading.Event()

    def reward(self, truth: Any, response: Any) -> Any:
        if response == "hold":
            self.holding.set()
            self.release.wait(PATIENCE)
        return super().reward(truth, response)


def test_one_clients_batches_leave_health_and_other_clients_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One client (127.0.0.1) sends 40 batches whose scoring it holds, more than the
    threads a server may have. While they hold, /health answers and another client
    (127.0.0.2, standing in for another host: each address counts as its own client here)
    has its batch scored: both before any held batch ends. The first client's batches
    past its share are refused at once with 429, not queued unread."""
    import execbench.reward_server

    monkeypatch.setattr(execbench.reward_server, "client_of", lambda address: address)
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    output = next(i for i in instances if i.task == "output")
    truth = truth_text(output, manifest.recipe.limits)
    events: list[tuple[str, int]] = []
    with _Held() as rewarder, serving(rewarder) as url:
        def held() -> None:
            status, sent, _ = _call(url, _batch([truth], ["hold"]))
            events.append(("held", status if status != 429 or sent["Retry-After"] else 0))

        clients = [threading.Thread(target=held) for _ in range(40)]
        try:
            for client in clients:
                client.start()
            assert rewarder.holding.wait(PATIENCE)
            status, _, answer = _call(url.replace("get_reward", "health"))
            events.append(("health", status))
            status, _, answer = _call(url, _batch(
                [truth], [get_task("output").asking.reference_response(output)]),
                source="127.0.0.2")
            events.append(("other", status))
            assert answer["rewards"] == [1.0]
        finally:
            rewarder.release.set()
            for client in clients:
                client.join(PATIENCE)
    scored = [at for at, event in enumerate(events) if event == ("held", 200)]
    assert scored and ("held", 429) in events and len(events) == 42
    assert {status for kind, status in events if kind == "held"} == {200, 429}
    assert events.index(("health", 200)) < scored[0] and events.index(("other", 200)) < scored[0]


def test_a_request_past_a_cap_is_refused_in_json(tmp_path: Path) -> None:
    """A body announced past the cap is refused before it is read (413), a batch of more
    items than the cap or an answer longer than it with 400, an unknown route with 404, a
    body that does not come in time with 408: each in one line of JSON, and the server
    goes on."""
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    output = next(i for i in instances if i.task == "output")
    truth = truth_text(output, manifest.recipe.limits)
    right = get_task("output").asking.reference_response(output)
    caps = ServeOptions()
    with Rewarder(limits=[]) as rewarder, serving(rewarder) as url:
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                timeout=PATIENCE)
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Length", str(caps.max_body_bytes + 1))
        connection.endheaders()  # and not a byte of the body
        response = connection.getresponse()
        assert response.status == 413
        assert "the most this service reads" in json.loads(response.read())["error"]
        connection.close()
        many = caps.max_items + 1
        status, _, answer = _call(url, _batch([truth] * many, ["0"] * many))
        assert status == 400 and f"at most {caps.max_items:,}" in answer["error"]
        long = " " * caps.max_answer_chars + right
        status, _, answer = _call(url, _batch([truth, truth], [right, long]))
        assert status == 400 and answer["error"].startswith("response 1 is")
        status, _, answer = _call(url.replace("get_reward", "nowhere"), b"{}")
        assert status == 404 and "nowhere" in answer["error"]
        assert _call(url, _batch([truth], [right]))[2]["rewards"] == [1.0]
    small = ServeOptions(max_body_bytes=1000, body_seconds=0.5)
    with Rewarder(limits=[]) as rewarder, serving(rewarder, options=small) as url:
        status, _, answer = _call(url, _batch([truth] * 4, [right] * 4))
        assert status == 413 and "1,000 bytes" in answer["error"]
        # a body that never arrives holds its place only so long
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                timeout=PATIENCE)
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Length", "900")
        connection.endheaders(b"{")
        response = connection.getresponse()
        assert response.status == 408 and "did not arrive" in json.loads(response.read())["error"]
        connection.close()


def test_turns_go_round_the_clients_and_each_clients_in_order() -> None:
    """One place, three clients: the client with three requests waiting gets every
    other turn, not three in a row, and its own requests keep their order."""
    from execbench.reward_server import Turns

    async def main() -> list[str]:
        turns, order = Turns(places=1, per_client=1), []

        async def one(client: str, label: str) -> None:
            await turns.acquire(client)
            order.append(label)
            await asyncio.sleep(0)
            turns.release(client)

        await turns.acquire("first")  # held while the others queue
        waiting = [asyncio.create_task(one(client, label)) for client, label in
                   (("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1"))]
        await asyncio.sleep(0)
        turns.release("first")
        await asyncio.gather(*waiting)
        return order

    assert asyncio.run(main()) == ["a1", "b1", "c1", "a2", "a3"]


@pytest.fixture(scope="module")
def one_output(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """An output instance's ground truth and its right answer."""
    manifest, instances, _ = load_suite(_program_suite(tmp_path_factory.mktemp("one")))
    output = next(i for i in instances if i.task == "output")
    return truth_text(output, manifest.recipe.limits), \
        get_task("output").asking.reference_response(output)


def _open_request(url: str, head: bytes, source: str | None = None) -> socket.socket:
    """A raw connection that has sent ``head`` (a request line, headers and what else)."""
    parts = urllib.parse.urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=PATIENCE,
                                    source_address=None if source is None else (source, 0))
    sock.sendall(head)
    return sock


def _answer_of(sock: socket.socket) -> bytes:
    """The response the server sends (b"" when it closes without a word): read until its
    Content-Length is in, since a server may keep the socket a while to drain a body."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = [line.split(b":")[1] for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")]
        if length and len(body) >= int(length[0]):
            break
    sock.close()
    return received


def test_a_compressed_body_is_refused_unread(one_output: tuple[str, str]) -> None:
    """A gzip body would be unpacked on the event loop (1 MB of it: 1 GiB): any
    Content-Encoding but identity gets 415, whatever the body holds."""
    import gzip

    truth, right = one_output
    with Rewarder(limits=[]) as rewarder, serving(rewarder) as url:
        packed = gzip.compress(_batch([truth], [right]))
        status, _, answer = _call(url, packed, {"Content-Encoding": "gzip"})
        assert status == 415 and "uncompressed" in answer["error"]
        assert _call(url, _batch([truth], [right]))[2]["rewards"] == [1.0]


def test_slow_bodies_from_many_local_addresses_leave_a_trainer_served(
        one_output: tuple[str, str]) -> None:
    """Two stalled bodies from 127.0.0.2 and 127.0.0.3 fill a server of two places. Every
    loopback address is one client, and a body must keep flowing after its grace, so both
    stalled bodies get 408 long before ``body_seconds`` and a batch from 127.0.0.1 sent
    after them is scored."""
    from execbench.reward_server import client_of

    assert client_of("127.0.0.2") == client_of("127.0.0.3") == client_of("::1") \
        == client_of("::ffff:127.0.0.9")
    assert client_of("2001:db8::1") == client_of("2001:db8::2") != client_of("2001:db8:1::1")
    assert client_of("10.0.0.1") != client_of("10.0.0.2")
    truth, right = one_output
    small = ServeOptions(max_pending=2, body_seconds=10 * PATIENCE, body_grace_seconds=0.3)
    head = b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"
    with Rewarder(limits=[]) as rewarder, serving(rewarder, options=small) as url:
        stalled = [_open_request(url, head, source) for source in ("127.0.0.2", "127.0.0.3")]
        answers = [_answer_of(sock) for sock in stalled]
        assert all(b" 408 " in answer and b"slower than" in answer for answer in answers)
        status, _, answer = _call(url, _batch([truth], [right]), source="127.0.0.1")
        assert status == 200 and answer["rewards"] == [1.0]


def test_a_body_of_nested_nothing_is_refused_before_it_is_parsed(
        one_output: tuple[str, str]) -> None:
    """31 MiB of ``[],`` under a key the service ignores would parse to 20 times its size:
    a body with more lists, objects and members outside its strings than a batch needs is
    refused (400) before ``json.loads``; long strings are no such thing."""
    truth, right = one_output
    with Rewarder(limits=[]) as rewarder, serving(rewarder) as url:
        bomb = b'{"ground_truths":[],"responses":[],"x":{"y":[' + b",".join([b"[]"] * 200_000) \
            + b"]}}"
        status, _, answer = _call(url, bomb)
        assert status == 400 and "outside its strings" in answer["error"]
        long = right + " [{,}]" * 100_000  # brackets inside a string count for nothing
        status, _, answer = _call(url, _batch([truth], [long]))
        assert status == 200 and answer["verdicts"] != ["scoring_error"]


def test_a_connection_without_a_whole_request_is_closed(one_output: tuple[str, str]) -> None:
    """Slowloris: a connection whose headers never end is closed after ``header_seconds``
    (it held a socket for an hour before), and the server goes on."""
    truth, right = one_output
    quick = ServeOptions(header_seconds=0.3)
    with Rewarder(limits=[]) as rewarder, serving(rewarder, options=quick) as url:
        unfinished = _open_request(url, b"GET /health HTTP/1.1\r\nHost: x\r\nX-a: ")
        assert _answer_of(unfinished) == b""
        assert _call(url, _batch([truth], [right]))[2]["rewards"] == [1.0]
