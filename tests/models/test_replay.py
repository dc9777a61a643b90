"""``replay/FILE``: answers made elsewhere scored as a model's.

The same answers are served twice: by the scripted HTTP server (``tests/fakeserver.py``)
through the production client, and from a file in each of the three shapes replay reads
(JSONL lines, CRUXEval's ``generations.json``, lm-eval's ``--log_samples``). Every sample
must come out with the same verdict, answer and detail either way. The CRUXEval
generations also carry the verdicts CRUXEval's own scorer gives them (``assert OUTPUT ==
GENERATION`` run), which the replayed verdicts must agree with. Then come the notices and
error samples for what does not match, and the hostile files.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from execbench import runner
from execbench.models import get_model
from execbench.models.base import GenerateConfig, ModelError
from execbench.models.replay import answers as answer_files
from execbench.rundir import RunConfig, read_samples
from execbench.suite import BuildOptions, build_suite
from tests.fakeserver import FakeServer, Reply, prompt_of
from tests.helpers.cli import execbench, said
from tests.helpers.fake_model import FAKE_MODEL

# A CRUXEval-shaped source: the file name makes the source's name, so program ids are
# cruxeval/sample_N as for the published file. Each code is unique, so a prompt's code
# tells which record it asks about.
RECORDS = [
    {"id": "sample_0", "code": "def f(s):\n    return s + 'a0'", "input": "'x'",
     "output": "'xa0'"},
    {"id": "sample_1", "code": "def f(n):\n    return n * 2 + 1", "input": "4", "output": "9"},
    {"id": "sample_2", "code": "def f(xs):\n    return sorted(xs)[::-1]", "input": "[3, 1, 2]",
     "output": "[3, 2, 1]"},
    {"id": "sample_3", "code": "def f(a, b):\n    return {a: b}", "input": "'k', 7",
     "output": "{'k': 7}"},
]
BY_ID = {record["id"]: record for record in RECORDS}

# CRUXEval generations (the half of the assertion CRUXEval keeps) with the verdict CRUXEval's
# evaluate_score gives each: `assert OUTPUT == GENERATION` run after the code.
GENERATIONS: dict[str, dict[str, list[tuple[str, bool]]]] = {
    "output": {
        "sample_0": [("'xa0'", True), ("'xa'", False)],
        "sample_1": [("9", True), ("nine", False)],
        "sample_2": [("[3, 2, 1]", True), ("[3,2,1]", True)],
        "sample_3": [('{"k": 7}', True), ("{'k': 8}", False)],
    },
    "input": {
        "sample_0": [("f('x')", True), ("f('y')", False)],
        "sample_1": [("f(4)", True), ("f(n=4)", True)],
        "sample_2": [("f([1, 2, 3])", True), ("f(3, 2)", False)],
        "sample_3": [("f('k', 7)", True), ("g('k', 7)", False)],
    },
}
N = 2


def completed(task: str, record: dict[str, str], generation: str) -> str:
    """What a model following the prompt writes for a CRUXEval generation: the assertion,
    completed, in an answer block (written here apart from the code under test)."""
    if task == "output":
        return f"[ANSWER]\nassert f({record['input']}) == {generation}\n[/ANSWER]"
    return f"[ANSWER]\nassert {generation} == {record['output']}\n[/ANSWER]"


def reply(task: str, record_id: str, sample: int) -> str:
    """The whole reply for one sample: what the server sends and the JSONL and lm-eval
    files hold."""
    return completed(task, BY_ID[record_id], GENERATIONS[task][record_id][sample][0])


def instance_id(task: str, record_id: str) -> str:
    return f"{task}/cruxeval/{record_id}/0"


def write_lines(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("replay")
    source = write_lines(folder / "cruxeval.jsonl", RECORDS)
    build_suite([str(source)], folder / "suite",
                BuildOptions(tasks=["output", "input"], workers=1))
    return folder / "suite"


Verdicts = dict[tuple[str, int], tuple[Any, ...]]


def verdicts(run: Path) -> Verdicts:
    return {key: (s.verdict, s.answer, s.detail, s.extra, s.response)
            for key, s in read_samples(run / "samples.jsonl").items()}


@pytest.fixture(scope="module")
def served(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Verdicts:
    """Every reply served by the scripted server to a real run (seed 0: sample k is sent
    seed k, which tells the server which sample it answers)."""
    def responder(body: dict[str, Any], attempt: int) -> Reply:
        prompt = prompt_of(body)
        task = "output" if "== ??" in prompt else "input"
        found = [rid for rid, record in BY_ID.items() if record["code"] in prompt]
        assert len(found) == 1, prompt
        return Reply(text=reply(task, found[0], body["seed"]))

    out = tmp_path_factory.mktemp("served") / "run"
    with FakeServer(responder) as server:
        runner.run(RunConfig(suite=str(suite), model=FAKE_MODEL, base_url=server.base_url,
                             n=N, generate=GenerateConfig(temperature=0.8, seed=0,
                                                          max_connections=4)), out)
    return verdicts(out)


def replay(suite: Path, out: Path, file: Path, *args: object, expect: int = 0) -> list[str]:
    """``execbench run`` of the replay of ``file``; what it said on stderr."""
    done = execbench("run", "--suite", suite, "--model", f"replay/{file}", "-n", N,
                     "--out", out, *args)
    assert done.exit_code == expect, done.stderr
    return said(done.stderr)


def test_jsonl_answers_score_as_served(suite: Path, served: Verdicts, tmp_path: Path) -> None:
    file = write_lines(tmp_path / "answers.jsonl", [
        {"instance_id": instance_id(task, rid), "response": reply(task, rid, k)}
        for task in GENERATIONS for rid in BY_ID for k in range(N)])
    stderr = replay(suite, tmp_path / "run", file)
    assert not [line for line in stderr if line.startswith("note:")], stderr
    assert verdicts(tmp_path / "run") == served
    record = json.loads((tmp_path / "run" / "replay.json").read_text())
    assert (record["format"], record["ids"], record["answers"]) == ("jsonl", 8, 16)
    assert record["unanswered_instances"] == record["ids_naming_no_instance"] == []


@pytest.mark.parametrize("task", ["output", "input"])
def test_cruxeval_generations_score_as_served_and_as_cruxeval_scores_them(
        suite: Path, served: Verdicts, tmp_path: Path, task: str) -> None:
    file = tmp_path / "generations.json"
    file.write_text(json.dumps({rid: [text for text, _ in generations]
                                for rid, generations in GENERATIONS[task].items()}, indent=4))
    replay(suite, tmp_path / "run", file, "-M", f"task={task}", "--tasks", task)
    got = verdicts(tmp_path / "run")
    assert got == {key: value for key, value in served.items() if key[0].startswith(task)}
    cruxeval = {(instance_id(task, rid), k): right
                for rid, generations in GENERATIONS[task].items()
                for k, (_, right) in enumerate(generations)}
    assert {key: value[0] == "correct" for key, value in got.items()} == cruxeval


def lm_eval_line(task: str, index: int, record: dict[str, str], resps: list[str],
                 kept: str = "create_test") -> dict[str, Any]:
    """A line as ``lm-eval --log_samples`` writes it for its CRUXEval tasks."""
    return {"doc_id": index, "doc": record, "target": "[ANSWER]",
            "arguments": [[f"[PYTHON]\n{record['code']}\n[/PYTHON]", {"until": ["[/ANSWER]"]}]],
            "resps": [resps], "filtered_resps": [[f"{record['code']}\nassert ..."]],
            "filter": kept, "metrics": ["pass_at_1"], "doc_hash": "0", "prompt_hash": "0",
            "target_hash": "0", "pass_at_1": 0.5, "task": f"cruxeval_{task}"}


@pytest.mark.parametrize("task", ["output", "input"])
def test_lm_eval_samples_score_as_served(suite: Path, served: Verdicts, tmp_path: Path,
                                         task: str) -> None:
    lines = [lm_eval_line(task, i, record, [reply(task, record["id"], k) for k in range(N)])
             for i, record in enumerate(RECORDS)]
    # lm-eval writes a document once per filter, with the same raw replies: read once
    lines.append(lm_eval_line(task, 0, RECORDS[0], ["other"] * N, kept="another-filter"))
    file = write_lines(tmp_path / f"samples_cruxeval_{task}.jsonl", lines)
    stderr = replay(suite, tmp_path / "run", file, "-M", f"task={task}", "--tasks", task)
    assert verdicts(tmp_path / "run") == {key: value for key, value in served.items()
                                          if key[0].startswith(task)}
    assert f"note: 1 line of {file} repeats a document under another lm-eval filter (the " \
        "same responses): read once" in stderr


def test_the_run_folder_works_with_report_show_and_score(suite: Path, served: Verdicts,
                                                          tmp_path: Path) -> None:
    file = write_lines(tmp_path / "answers.jsonl", [
        {"instance_id": instance_id(task, rid), "response": reply(task, rid, k)}
        for task in GENERATIONS for rid in BY_ID for k in range(N)])
    run = tmp_path / "run"
    replay(suite, run, file)
    done = execbench("report", run, "--format", "json")
    assert done.exit_code == 0, done.stderr
    assert f"replay/{file}" in done.stdout
    done = execbench("show", run, "--verdict", "incorrect", "--format", "json", "--limit", 50)
    assert done.exit_code == 0, done.stderr
    shown = json.loads(done.stdout)
    assert "assert f('y') == 'xa0'" in json.dumps(shown)
    before = (run / "samples.jsonl").read_bytes()
    done = execbench("score", run)
    assert done.exit_code == 0, done.stderr
    assert (run / "samples.jsonl").read_bytes() == before, "re-scoring changes no verdict"
    # resumed with the same file: nothing to ask again
    again = execbench("run", "--suite", suite, "--model", f"replay/{file}", "-n", N,
                      "--out", run)
    assert again.exit_code == 0, again.stderr
    assert len(read_samples(run / "samples.jsonl")) == 2 * len(RECORDS) * N


def test_what_does_not_match_is_counted_listed_and_logged_as_errors(
        suite: Path, tmp_path: Path) -> None:
    lines = [{"instance_id": instance_id("output", rid), "response": reply("output", rid, 0)}
             for rid in ("sample_0", "sample_1", "sample_2")]
    lines.append({"instance_id": instance_id("output", "sample_2"),
                  "response": reply("output", "sample_2", 1)})
    lines += [{"instance_id": name, "response": "1"}
              for name in ("esc\x1b[2Jape", "../../etc/passwd", "/etc/passwd",
                           "output/elsewhere/x/0")]
    file = write_lines(tmp_path / "answers.jsonl", lines)
    run = tmp_path / "run"
    stderr = replay(suite, run, file, "--tasks", "output")
    notes = [line for line in stderr if line.startswith("note:")]
    listed = run / "replay.json"
    assert notes == [
        f"note: 4 ids in {file} name no instance of this run (esc\\x1b[2Jape, "
        f"../../etc/passwd, /etc/passwd and 1 more; all in {listed}): not scored",
        f"note: 1 of the run's 4 instances have no answer in {file} "
        f"(output/cruxeval/sample_3/0; all in {listed}): each of their samples is logged as "
        "an error",
        f"note: {file} holds 1 to 2 answers per instance: an instance's samples past its last "
        "answer are logged as errors"]
    samples = read_samples(run / "samples.jsonl")
    errors = {key: s.error for key, s in samples.items() if s.verdict == "error"}
    short = f"no answer in {file} for sample 1 (it holds 1 for this instance)"
    assert errors == {("output/cruxeval/sample_0/0", 1): short,
                      ("output/cruxeval/sample_1/0", 1): short,
                      ("output/cruxeval/sample_3/0", 0): f"no answer in {file}",
                      ("output/cruxeval/sample_3/0", 1): f"no answer in {file}"}
    record = json.loads((run / "replay.json").read_text())
    assert record["ids_naming_no_instance"] == ["esc\x1b[2Jape", "../../etc/passwd",
                                                "/etc/passwd", "output/elsewhere/x/0"]
    assert record["unanswered_instances"] == ["output/cruxeval/sample_3/0"]
    assert sorted(path.name for path in run.iterdir()) == [
        "replay.json", "results.json", "run.json", "samples.jsonl"], "no id is a path"
    assert not (tmp_path / "etc").exists()
    results = json.loads((run / "results.json").read_text())
    assert results["counts"]["verdicts"]["error"] == 4


def test_a_changed_file_is_refused_on_resume(suite: Path, tmp_path: Path) -> None:
    file = write_lines(tmp_path / "answers.jsonl", [
        {"instance_id": instance_id("output", rid), "response": reply("output", rid, 0)}
        for rid in BY_ID])
    run = tmp_path / "run"
    replay(suite, run, file, "--tasks", "output")
    write_lines(file, [{"instance_id": instance_id("output", rid),
                        "response": reply("output", rid, 1)} for rid in BY_ID])
    stderr = replay(suite, run, file, "--tasks", "output", "--retry-errors", expect=2)
    assert stderr[-1] == (f"error: {file} is not the file this run's answers came from (its "
                          "sha256 is not the one replay.json holds): use a new --out folder "
                          "(or the same settings to resume)")


def test_a_file_changed_after_it_was_checked_is_not_read(suite: Path, tmp_path: Path) -> None:
    file = write_lines(tmp_path / "a.jsonl", [
        {"instance_id": instance_id("output", "sample_0"), "response": "'xa0'"}])
    model = get_model(f"replay/{file}")
    write_lines(file, [{"instance_id": instance_id("output", "sample_0"), "response": "'no'"}])
    with pytest.raises(ModelError, match="a.jsonl changed since it was read; run the command "
                                         "again"):
        asyncio.run(model.start(GenerateConfig(), tmp_path))


@pytest.mark.parametrize(("args", "message"), [
    ((), "g.json is a CRUXEval generations.json, which does not say which task it answers: "
         "name it with -M task=output or -M task=input"),
    (("-M", "task=branch"), "a CRUXEval generations.json answers output or input "
                            "prediction, not branch"),
    (("-M", "task=input", "--tasks", "output"), "no id in "),
    (("-M", "task=output", "-M", "format=jsonl"), "g.json:1: no 'instance_id' (keys: "
                                                  "sample_0)"),
    (("-M", "color=red"), "replay models take -M format, task, source; unknown: color"),
    (("-M", "format=csv"), "-M format=csv is not a shape replay reads"),
    (("-M", "task=outptu"), "-M task=outptu names no task"),
])
def test_settings_that_cannot_work_are_refused_before_anything_runs(
        suite: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    file = tmp_path / "g.json"
    file.write_text(json.dumps({"sample_0": ["'xa0'"]}))
    stderr = replay(suite, tmp_path / "run", file, *args, expect=2)
    assert message in stderr[-1], stderr
    assert len(stderr) == 1 and not (tmp_path / "run").exists()


def test_no_match_names_an_instance_id_and_the_task_option(suite: Path,
                                                          tmp_path: Path) -> None:
    file = write_lines(tmp_path / "a.jsonl", [{"instance_id": "sample_0", "response": "1"}])
    stderr = replay(suite, tmp_path / "run", file, expect=2)
    assert stderr[-1] == (f"error: no id in {file} names an instance of this run (sample_0); "
                          "ids are instance ids such as output/cruxeval/sample_0/0, or with -M "
                          "task=TASK the ids a dataset gave its records (CRUXEval's sample_0)")
    replay(suite, tmp_path / "run", file, "-M", "task=output", "--tasks", "output")


def refusal(file: Path, *options: str) -> str:
    """The one-line error a bad answers file is refused with."""
    args = dict(option.split("=", 1) for option in options)
    with pytest.raises(ModelError) as error:
        get_model(f"replay/{file}", model_args=args)
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("lines", "message"), [
    ([b'{"instance_id": "a", "response": "1"}', b'{"instance_id": "b", "response": "\xff"}'],
     "a.jsonl:2: not UTF-8 text (byte 35)"),
    ([b'{"instance_id": "a", "response": "1"}', b"[1, 2]"],
     "a.jsonl:2: the line is an array, not a JSON object"),
    ([b'{"instance_id": 7, "response": "1"}'], "a.jsonl:1: 'instance_id' is a number, not a "
                                               "string"),
    ([b'{"instance_id": "a", "response": null}'], "a.jsonl:1: 'response' is null, not a "
                                                  "string"),
    ([b'{"instance_id": "a", "response": {"text": "1"}}'],
     "a.jsonl:1: 'response' is an object, not a string"),
    ([b'{"instance_id": "a", "response": ["1"]}'], "a.jsonl:1: 'response' is an array"),
    ([b'{"instance_id": "", "response": "1"}'], "a.jsonl:1: 'instance_id' is empty"),
    ([b'{"instance_id": "a", "response": "1", "instance_id": "b"}'],
     "a.jsonl:1: the key 'instance_id' appears twice in one object"),
    ([b'{"instance_id": "a", "response": "1"}', b"", b'{"instance_id": "a", "response": "1"'],
     "a.jsonl:3: invalid JSON: Expecting ',' delimiter"),
    ([b'{"instance_id": "a", "response": "1"}', b'{"instance_id": "a"}'],
     "a.jsonl:2: no 'response' (keys: instance_id)"),
    ([b'{"instance_id": "a", "response": "1"}', b"[" * 100_000 + b"]" * 100_000],
     "a.jsonl:2: invalid JSON: nested too deeply"),
    ([b"", b"  "], "a.jsonl holds no answers"),
    ([b"hello"], "cannot tell the shape of"),
])
def test_a_malformed_line_refuses_the_file_naming_it(tmp_path: Path, lines: list[bytes],
                                                    message: str) -> None:
    file = tmp_path / "a.jsonl"
    file.write_bytes(b"\n".join(lines) + b"\n")
    assert message in refusal(file)


def test_a_huge_line_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_files, "MAX_LINE_BYTES", 1000)
    file = tmp_path / "a.jsonl"
    file.write_bytes(b'{"instance_id": "a", "response": "1"}\n'
                     + b'{"instance_id": "b", "response": "' + b"x" * 5000 + b'"}\n')
    assert refusal(file) == f"{file}:2: a line over 1,000 bytes"


def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert refusal(fifo).endswith("not a regular file")
    assert "not a regular file" in refusal(Path("/dev/zero"))
    assert "no such file" in refusal(tmp_path / "missing.jsonl").lower()
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(b"\x1f\x8b\x08\x00rest")
    assert "is gzip-compressed: decompress it first" in refusal(packed)


@pytest.mark.parametrize(("text", "message"), [
    ('{\n  "sample_0": ["1"],\n  "sample_1": [2]\n}', "generation 1 of sample_1 is a number"),
    ('{\n  "sample_0": "1"\n}', "sample_0 maps to a string, not a list of generations"),
    ('{\n  "sample_0": ["1"],\n  "sample_0": ["2"]\n}', "the key 'sample_0' appears twice"),
    ('{\n  "sample_0": ["1"],\n  "sample_1": ["2"\n}', "invalid JSON: Expecting ',' delimiter "
                                                       "(line 4, column 1)"),
])
def test_a_malformed_generations_file_is_refused(tmp_path: Path, text: str,
                                                 message: str) -> None:
    file = tmp_path / "g.json"
    file.write_text(text)
    assert message in refusal(file, "task=output")


@pytest.mark.parametrize(("change", "message"), [
    (lambda line: line["doc"].pop("id"), "its doc has no 'instance_id' or 'id' to match an "
                                         "instance by (doc keys: code, input, output)"),
    (lambda line: line.update(resps=[["a"], ["b"]]), "'resps' holds 2 requests, not one "
                                                      "request's generations"),
    (lambda line: line.update(resps=[[-1.5, True]]), "generation 1 in 'resps' is a number"),
    (lambda line: line.update(doc=[1]), "'doc' is an array, not a JSON object"),
])
def test_an_lm_eval_line_that_cannot_be_matched_is_refused(tmp_path: Path, change: Any,
                                                           message: str) -> None:
    line = lm_eval_line("output", 0, dict(RECORDS[0]), ["1"])
    change(line)
    file = write_lines(tmp_path / "s.jsonl", [lm_eval_line("output", 1, RECORDS[1], ["9"]),
                                               line])
    assert refusal(file, "task=output").startswith(f"{file}:2: {message}")


def test_an_lm_eval_document_twice_under_one_filter_is_refused(tmp_path: Path) -> None:
    file = write_lines(tmp_path / "s.jsonl", [lm_eval_line("output", 0, RECORDS[0], ["1"]),
                                              lm_eval_line("output", 0, RECORDS[0], ["2"])])
    assert "s.jsonl:2: a second line for the document sample_0 (the first is line 1)" in \
        refusal(file)


def test_replay_is_listed_and_keeps_no_temperature(suite: Path) -> None:
    listed = execbench("ls", "models")
    assert "replay/<file>" in listed.stdout and "format=jsonl|cruxeval|lm-eval" in listed.stdout
    config = RunConfig(suite=str(suite), model="replay/answers.jsonl", n=5)
    assert config.decoding_stated(None).generate.temperature is None
