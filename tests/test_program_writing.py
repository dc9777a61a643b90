"""``execbench generate-programs`` against a real HTTP server whose scripted model writes
honest programs and hostile ones: only the honest ones are kept, each once, with their
provenance, and the oracle scores 100% on the suite built from the file; and the two runs
in the sandbox that keep a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.program import Call, Program
from execbench.program_writing import run_checks
from execbench.sandbox.pool import Sandbox
from tests.fakeserver import FakeServer, Reply
from tests.helpers.cli import execbench, said


def _reply(code: str, inputs: str) -> str:
    return f"Here it is.\n```python\n{code}```\n```inputs\n{inputs}\n```\n"


EVENS = ('def f(xs):\n    """Sum of the even ones."""\n'
         "    return sum(x for x in xs if x % 2 == 0)\n")
REPLIES = {
    0: _reply(EVENS, "[1, 2, 3, 4]\n[]\n[6]"),
    # writes into a module every unit imports
    1: _reply("import math\ndef f(xs):\n    math.floor = lambda v: 0\n    return xs\n", "[1]"),
    2: _reply("def f(xs):\n    while True:\n        pass\n", "[1]"),  # never ends
    # differs between runs: the sandbox seeds random alike in every unit, and this program
    # seeds it again from the system's entropy
    3: _reply("import random\ndef f(xs):\n    random.seed()\n"
              "    return [x + random.randint(0, 10**9) for x in xs]\n", "[1, 2]\n[3]"),
    # the first program again, laid out otherwise and with a comment
    4: _reply("def f(xs):\n    'Sum of the even ones.'\n"
              "    return sum(x for x in xs if x%2 == 0)  # the same\n", "[8]"),
    5: "Sure! I would write a function that sums a list.",
    6: _reply("def f(xs):\n    return xs[::-1]\n", "[1, 2]\n__import__('os').getcwd()"),
    7: _reply("def f(xs, k):\n    return [x for x in xs if x > k]\n", "[5, 1, 7], 4\n[], 0"),
    8: _reply("def f(xs):\n    out = []\n    for i in range(1, len(xs)):\n"
              "        out.append(xs[i] - xs[i - 1])\n    return out\n", "[1, 4, 9]\n[2]"),
}
"""Replies by request index (the request's seed, from --seed 0)."""


def _responder(body: dict, attempt: int) -> Reply:
    return Reply(text=REPLIES.get(body["seed"], "no more"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], int]:
    folder = tmp_path_factory.mktemp("written")
    out = folder / "written.jsonl"
    with FakeServer(_responder) as server:
        done = execbench("generate-programs", "--model", "openai-api/fake/writer",
                         "--model-base-url", server.base_url, "--count", "3",
                         "--max-requests", "10", "--out", out)
        asked = len(server.requests)
    return out, said(done.stderr) + [f"exit {done.exit_code}"], asked


def test_only_the_honest_programs_are_kept(generated: tuple[Path, list[str], int]) -> None:
    out, lines, asked = generated
    assert lines[-1] == "exit 0", lines
    # rounds of 3, 2, 2 and 2 requests: nine sent, the tenth never needed
    assert asked == 9
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [record["id"] for record in records] == ["list-00000", "list-00007", "list-00008"]
    assert records[0]["calls"] == ["[1, 2, 3, 4]", "[]", "[6]"]
    assert records[1]["entry_point"] == "f" and records[1]["calls"] == ["[5, 1, 7], 4", "[], 0"]
    said_lines = "\n".join(lines)
    assert ("3 programs kept of 9 asked (dropped: class 1, duplicate 1, input 1, "
            "nondeterministic 1, run 1, unreadable 1)") in said_lines
    assert "request 1: line 3: changes math.floor" in said_lines
    assert "request 2: the ground-truth run took more than 25% of the step limit" in said_lines


def test_provenance_is_kept(generated: tuple[Path, list[str], int]) -> None:
    out, _, _ = generated
    meta = json.loads(out.read_text().splitlines()[1])["meta"]
    assert meta["written_by"] == "openai-api/fake/writer"
    assert (meta["style"], meta["request"], meta["seed"], meta["temperature"]) == (
        "list", 7, 7, 0.8)
    assert "list of integers" in meta["prompt"] and "```inputs" in meta["prompt"]
    assert meta["asked_at"].endswith("+00:00")


def test_the_oracle_is_right_on_the_suite_built_from_them(
        generated: tuple[Path, list[str], int], tmp_path: Path) -> None:
    out, _, _ = generated
    built = execbench("build", out, "--tasks", "output,input", "--out",
                      tmp_path / "suite")
    assert built.exit_code == 0, built.stderr
    instances = (tmp_path / "suite" / "instances.jsonl").read_text().splitlines()
    assert len(instances) == 2 * 7  # seven calls, two tasks
    ran = execbench("run", "--suite", tmp_path / "suite", "--model", "reference/oracle",
                    "--out", tmp_path / "run")
    assert ran.exit_code == 0, ran.stderr
    metrics = json.loads((tmp_path / "run" / "results.json").read_text())["metrics"]
    assert {task: block["all"]["pass@1"] for task, block in metrics.items()} == {
        "input": 1.0, "output": 1.0}


def test_too_few_kept_is_exit_1_with_the_file_written(tmp_path: Path) -> None:
    with FakeServer(lambda body, attempt: Reply(text=REPLIES[5])) as server:
        done = execbench("generate-programs", "--model", "openai-api/fake/writer",
                         "--model-base-url", server.base_url, "--count", "2",
                         "--out", tmp_path / "none.jsonl")
    assert done.exit_code == 1
    lines = said(done.stderr)
    assert "0 programs kept of 8 asked (dropped: unreadable 8)" in lines[0]
    assert "only 0 of 2 programs kept after 8 requests" in lines[-1]
    assert (tmp_path / "none.jsonl").read_text() == ""


@pytest.mark.parametrize(("args", "message"), [
    (("--model", "reference/oracle"), "--model: reference/oracle answers questions of a "
                                      "suite and writes no programs"),
    (("--model", "openai-api/x/y", "--style", "trees"), "--style: no style 'trees'; the "
                                                        "styles are list"),
    (("--model", "openai-api/x/y", "--count", "0"), "--count and --inputs must be at least 1"),
])
def test_bad_settings_are_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = execbench("generate-programs", "--out", tmp_path / "x.jsonl", "--count", "1",
                     *args)
    lines = said(done.stderr)
    assert done.exit_code == 2 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "x.jsonl").exists()


def _program(name: str, code: str, *calls: str) -> Program:
    return Program(name, "written", code, "f", tuple(Call(args) for args in calls))


def test_two_runs_keep_the_calls_that_return_alike() -> None:
    half = _program("half", "def f(xs):\n    return xs[2]\n", "[1, 2, 3]", "[1]")
    raising = _program("raising", "def f(xs):\n    return 1 // 0\n", "[1]")
    with Sandbox(workers=1) as sandbox, Sandbox(workers=1) as again:
        held, reasons = run_checks(sandbox, again, [half, raising])
    assert [(p.id, [c.args for c in p.calls]) for p in held] == [("half", ["[1, 2, 3]"])]
    assert list(reasons) == ["raising"]
    assert (reasons["raising"].rule, str(reasons["raising"])) == (
        "run", "a call ended with exception")


@pytest.mark.skipif(not Path("/proc/sys/kernel/randomize_va_space").is_file()
                    or Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0",
                    reason="addresses differ between processes only where the kernel "
                           "lays each out at random")
def test_a_value_made_from_an_address_is_not_kept() -> None:
    """Where a builtin or the function itself lies in memory is the same in two runs in one
    process, and not in the next build's: the two runs are in two processes."""
    where = _program("where", "def f(xs):\n    return [id(len) // 4096, id(f) // 4096]\n",
                     "[1]")
    shown = _program("shown", "def f(xs):\n    return str(f)\n", "[1]")
    honest = _program("honest", "def f(xs):\n    return sorted(xs)\n", "[3, 1]")
    with Sandbox(workers=1) as sandbox, Sandbox(workers=1) as again:
        held, reasons = run_checks(sandbox, again, [where, shown, honest])
    assert [p.id for p in held] == ["honest"]
    assert {name: why.rule for name, why in reasons.items()} == {
        "where": "nondeterministic", "shown": "nondeterministic"}
