"""Programs that read standard input and print: a suite from a CodeMind-style folder of 22
programs, the oracle right on every task that applies (output, input, coverage), the other
tasks skipping them with the reason, and a model's input answer fed to the program as
text in the sandbox, never run as code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.program import STDIN
from execbench.runner import RunConfig, read_samples, run
from execbench.sandbox.pool import Job, Sandbox
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.base import Instance
from tests.helpers.stdin_programs import PROGRAMS, write_codemind


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[Instance]]:
    folder = tmp_path_factory.mktemp("stdin")
    write_codemind(folder / "contest")
    manifest = build_suite([str(folder / "contest")], folder / "suite", BuildOptions(
        tasks=["output", "input", "coverage", "counterfactual", "statement", "mutation"],
        workers=1))
    _, instances, _ = load_suite(folder / "suite")
    return folder / "suite", manifest.to_record(), instances


def test_the_tasks_that_apply_are_built(suite: tuple[Path, dict, list[Instance]]) -> None:
    _, manifest, instances = suite
    # 30 tests of 22 programs; coverage needs a branch or loop some test leaves unrun
    # (compare, early_exit, sys_exit_zero, fizz, binary, queries)
    assert manifest["counts"]["by_task"] == {"output": 30, "input": 30, "coverage": 6,
                                             "counterfactual": 0, "statement": 0, "mutation": 0}
    assert sorted(i.program_id.split("/")[1] for i in instances if i.task == "coverage") == [
        "binary", "compare", "early_exit", "fizz", "queries", "sys_exit_zero"]
    for task in ("counterfactual", "statement", "mutation"):
        reasons = {s["reason"] for s in manifest["skipped"] if s.get("task") == task}
        assert reasons == {"the task asks about a function call, and a program that reads "
                           "standard input has none"}
    assert manifest["sources"][0]["format"] == "codemind"


def test_truths_are_what_the_programs_print(suite: tuple[Path, dict, list[Instance]]) -> None:
    _, _, instances = suite
    outputs = {i.id: i.data["truth"]["value"][1] for i in instances if i.task == "output"}
    assert outputs["output/contest/fizz/1"] == \
        "1\n2\nFizz\n4\nBuzz\nFizz\n7\n8\nFizz\nBuzz\n11\nFizz\n13\n14\nFizzBuzz\n"
    assert outputs["output/contest/early_exit/0"] == "negative\n"  # exit() ends it normally
    assert outputs["output/contest/sep_end/0"] == "x-y-z!\n"
    assert outputs["output/contest/bytes/0"] == "4\n"
    assert outputs["output/contest/queries/1"] == "empty\n"
    first = next(i for i in instances if i.id == "output/contest/compare/0")
    assert (first.entry_point, first.args) == (STDIN, repr(PROGRAMS["compare"][1][0]))


def test_the_oracle_is_right_on_every_task(suite: tuple[Path, dict, list[Instance]],
                                          tmp_path: Path) -> None:
    folder, _, _ = suite
    run(RunConfig(suite=str(folder), model="reference/oracle"), tmp_path / "run")
    verdicts = {s.instance_id: s.verdict
                for s in read_samples(tmp_path / "run" / "samples.jsonl").values()}
    assert len(verdicts) == 66 and set(verdicts.values()) == {"correct"}


def _instance(instances: list[Instance], instance_id: str) -> Instance:
    return next(i for i in instances if i.id == instance_id)


def test_an_input_answer_is_fed_as_text_never_run(suite: tuple[Path, dict, list[Instance]],
                                                  tmp_path: Path) -> None:
    _, _, instances = suite
    judging = get_task("input").judging
    marker = tmp_path / "ran"
    hostile = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    with Sandbox(workers=1) as sandbox:
        # 'Hello, Ada!' asked: the hostile text is a name, and is greeted as one
        greeted = judging.score(_instance(instances, "input/contest/readline/0"),
                                f"[ANSWER]\n{hostile}\n[/ANSWER]", sandbox)
        # another input that prints 'second' is as right as the test's own
        other = judging.score(_instance(instances, "input/contest/compare/0"),
                              "[ANSWER]\n-5 100\n[/ANSWER]", sandbox)
        wrong = judging.score(_instance(instances, "input/contest/compare/0"),
                              "[ANSWER]\n9 1\n[/ANSWER]", sandbox)
        crashed = judging.score(_instance(instances, "input/contest/compare/0"),
                                "[ANSWER]\nnot numbers\n[/ANSWER]", sandbox)
    assert greeted.verdict == "incorrect" and not marker.exists()
    assert greeted.detail == f'printed "Hello, {hostile}!\\n"'
    assert other.verdict == "correct" and other.answer == repr("-5 100\n")
    assert (wrong.verdict, wrong.detail) == ("incorrect", "printed 'first\\n'")
    assert crashed.verdict == "incorrect" and crashed.detail.startswith(
        "program exception: ValueError")


def test_an_output_answer_is_compared_as_judges_compare(
        suite: tuple[Path, dict, list[Instance]]) -> None:
    _, _, instances = suite
    judging = get_task("output").judging
    prefix = _instance(instances, "output/contest/prefix_sums/0")  # prints "1 3 6\n"
    assert judging.score(prefix, "[ANSWER]\n1 3 6   \n\n[/ANSWER]", None).verdict == "correct"
    assert judging.score(prefix, "[ANSWER]\n1 3 6 10\n[/ANSWER]", None).verdict == "incorrect"
    assert judging.score(prefix, "[ANSWER]\n1  3 6\n[/ANSWER]", None).verdict == "incorrect"
    assert judging.score(prefix, "no answer", None).verdict == "incorrect"
    assert judging.score(prefix, None, None).verdict == "unparsable"


@pytest.mark.parametrize(("answer", "verdict"), [
    ("1\u20282\u20283", "incorrect"),  # line separators Python splits at, a judge does not
    ("1\x0c2\x0c3", "incorrect"),  # form feeds
    ("1\x1c2\x1d3", "incorrect"),  # file and group separators
    ("1\x85\n2\n3", "incorrect"),  # a next-line control at a line's end is printed text
    ("1\u00a0\n2\n3", "incorrect"),  # so is a no-break space
    ("1\r\n2\r\n3\r\n", "correct"),  # \r\n line ends, as judges take them
    ("1 \t\n2\n3", "correct"),  # trailing spaces and tabs
])
def test_only_a_judges_blanks_are_set_aside(suite: tuple[Path, dict, list[Instance]],
                                            answer: str, verdict: str) -> None:
    """An answer about a program that prints '1\\n2\\n3\\n' cannot pass with characters
    that Python's ``splitlines`` and ``strip`` take for line breaks or spaces."""
    _, _, instances = suite
    unique = _instance(instances, "output/contest/sorted_unique/0")
    response = f"[ANSWER]\n{answer}\n[/ANSWER]"
    assert get_task("output").judging.score(unique, response, None).verdict == verdict


def test_prompts_show_the_program_and_its_stdin(
        suite: tuple[Path, dict, list[Instance]]) -> None:
    from execbench.tasks.asking import ask
    from execbench.tasks.protocol import Protocol

    _, _, instances = suite
    output = ask(get_task("output"), _instance(instances, "output/contest/gcd/0"),
                 Protocol())[-1]["content"]
    assert "[STDIN]\n12 18\n[/STDIN]" in output and "import math" in output
    asked = ask(get_task("input"), _instance(instances, "input/contest/gcd/0"),
                Protocol())[-1]["content"]
    assert "[PRINTED]\n6\n[/PRINTED]" in asked and "12 18" not in asked
    coverage = ask(get_task("coverage"), _instance(instances, "coverage/contest/fizz/0"),
                   Protocol(shots=1))[-1]["content"]
    assert "runs as a script, reading the text between [STDIN] and [/STDIN]" in coverage
    assert "[STDIN]\n5\n[/STDIN]" in coverage


@pytest.mark.parametrize(("code", "stdin", "status", "printed"), [
    ("import sys\nprint('half')\nsys.exit(3)\n", "", "exception", None),
    ("while True:\n    pass\n", "", "timeout", None),
    ("print(input())\n", "", "exception", None),  # EOFError: nothing to read
    ("import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')\n", "", "ok", ""),
    ("import sys\nprint('err', file=sys.stderr)\nprint('out')\n", "", "ok", "out\n"),
    ("print('a')\nraise KeyboardInterrupt\n", "", "exception", None),
    ("class Done(SystemExit):\n    pass\nprint('a')\nraise Done(0)\n", "", "ok", "a\n"),
    ("class Done(SystemExit):\n    pass\nraise Done(2)\n", "", "exception", None),
    # a BaseException raised by __del__ is unraisable: written to the dropped stderr
    ("class Odd:\n    def __del__(self):\n        raise SystemExit(5)\nx = Odd()\ndel x\n"
     "print('b')\n", "", "ok", "b\n"),
    ("print(repr(input()))\n", "\x00\ud800\n", "ok", "'\\x00\\udced\\udca0\\udc80'\n"),
])
def test_how_a_run_ends(code: str, stdin: str, status: str, printed: str | None) -> None:
    """A non-zero exit status is an exception (a ``SystemExit`` subclass's too), and so is
    ``KeyboardInterrupt``; stderr is not what it printed, nor is what ``__del__`` raises;
    a program that swaps its stdout away prints nothing that counts; a NUL and a lone
    surrogate in the text reach the program as the bytes a judge would feed (the
    surrogate's UTF-8, read back as escapes)."""
    with Sandbox(workers=1) as sandbox:
        trace = sandbox.run(Job(code, STDIN, repr(stdin), max_steps=10_000))
    assert trace.status == status
    assert (None if trace.value is None else trace.value[1]) == printed


FAST_INPUT = ("import io, os\ninput = io.BytesIO(os.read(0, os.fstat(0).st_size)).readline\n"
              "n = int(input())\nprint(n * 2)\n")
"""How many contest solutions read their input: the whole of descriptor 0 at once."""


@pytest.mark.parametrize(("code", "printed"), [
    ("print(len(open(0).read()))\n", ["3\n", "7\n"]),
    ("import os\nprint(os.read(0, 100))\n", ["b'21\\n'\n", "b'100\\n27\\n'\n"]),
    (FAST_INPUT, ["42\n", "200\n"]),
    ("import os, sys\nprint(os.read(sys.stdin.fileno(), 2).decode())\n", ["21\n", "10\n"]),
])
def test_a_program_that_reads_descriptor_zero_reads_its_stdin(code: str,
                                                              printed: list[str]) -> None:
    """The text is what descriptor 0 holds, as a judge feeds it, not only ``sys.stdin``:
    a program reading ``open(0)`` or ``os.read(0, ...)`` must not get an empty input and a
    truth made from it. Two calls of one unit each read their own text."""
    with Sandbox(workers=1) as sandbox:
        traces = sandbox.map([Job(code, STDIN, repr(text), max_steps=10_000)
                              for text in ("21\n", "100\n27\n")])
    assert [(trace.status, trace.value) for trace in traces] == [
        ("ok", ["str", text]) for text in printed]


def test_a_call_that_is_not_one_string_is_refused_in_the_sandbox() -> None:
    with Sandbox(workers=1) as sandbox:
        for args in ("5", "'a', 'b'", "__import__('os').getpid()"):
            trace = sandbox.run(Job("print(1)\n", STDIN, args))
            assert trace.status == "exception" and trace.exception["phase"] == "arguments"


def test_the_jsonl_shape_and_its_stated_outputs(tmp_path: Path) -> None:
    source = tmp_path / "progs.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in [
        {"id": "double", "code": "print(int(input()) * 2)\n",
         "inputs": ["3\n", {"stdin": "5\n", "stdout": "10\n"}, {"stdin": "6\n", "stdout": "13"}]},
        {"id": "silent", "code": "x = input()\n", "inputs": ["a\n"]},
        {"id": "bad", "code": "print(1)\n", "inputs": [5]},
        {"id": "broken", "code": "print(\n", "inputs": ["1\n"]},
    ]) + "\n")
    manifest = build_suite([str(source)], tmp_path / "suite",
                           BuildOptions(tasks=["output"], workers=1)).to_record()
    assert manifest["counts"]["by_task"] == {"output": 3}
    assert manifest["expected_output_mismatches"] == ["progs/double#2"]  # 12, not 13
    reasons = {s["where"].rpartition("/")[2]: s["reason"] for s in manifest["skipped"]}
    assert reasons == {
        "progs.jsonl:3": "key 'inputs': item 1 should be a string or an object with string "
                         "'stdin' and optional string 'stdout'",
        "progs.jsonl:4": "code does not compile: '(' was never closed (line 1)",
        "silent#0": "the program prints nothing for this input"}
