"""``execbench serve-rewards``: batches in OpenRLHF's and execbench's forms, malformed
requests refused with the server going on, and the red-team completions sent to a real
server process, with the evidence that nothing of them ran checked from outside it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from execbench.rewards import Rewarder, truth_text
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from tests.helpers.cli import EXECBENCH
from tests.helpers.data import shared_data
from tests.helpers.red_team import RED_TEAM
from tests.helpers.waiting import eventually

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
    """The service on a free local port, in a thread, while the block runs."""
    from execbench.reward_server import serving

    with serving(rewarder, log=(log if log is not None else []).append) as url:
        yield _poster(url)


def _with(truth: str, part: str, key: str, value: Any) -> str:
    record = json.loads(truth)
    record[part][key] = value
    return json.dumps(record)


def _program_suite(folder: Path) -> Path:
    source = folder / "progs.jsonl"
    source.write_text(json.dumps({"id": "dbl", "code": "def dbl(x):\n    return 2 * x\n",
                                  "entry_point": "dbl", "calls": ["3", "5"]}) + "\n")
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input"], workers=1))
    return folder / "suite"


def test_batches_in_both_forms_and_malformed_requests(tmp_path: Path) -> None:
    manifest, instances, _ = load_suite(_program_suite(tmp_path))
    truths = [truth_text(i, manifest.recipe.limits) for i in instances]
    right = [get_task(i.task).reference_response(i) for i in instances]
    runs = next(truth for truth in truths if '"limits"' in truth)  # an input instance's
    log: list[str] = []
    with Rewarder() as rewarder, served(rewarder, log) as post:
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
        reference = get_task(instance.task).reference_response(instance)
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
        honest = [get_task(i.task).reference_response(i) for i in instances]
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
    return [(truth_text(i, manifest.recipe.limits), get_task(i.task).reference_response(i))
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
