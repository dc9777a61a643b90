"""Prompt protocols: the shipped templates keep every prompt's bytes, both styles render and
extract on every task, examples are drawn from the suite as asked, and the protocol is
pinned with the run."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from execbench.runner import RunConfig, RunError, read_samples, run
from execbench.sandbox.pool import Limits
from execbench.suite import BuildOptions, SuiteFile, build_suite, load_suite
from execbench.tasks import get_task, task_names
from execbench.tasks.asking import DrawnExamples, ask, drawn_from
from execbench.tasks.base import Instance
from execbench.tasks.common.extract import answer_text
from execbench.tasks.protocol import DIRECT, REASONING, STYLES, Protocol
from execbench.tasks.shots import Entry, call_of, function_of
from tests.helpers.data import shared_data

GOLDEN = {
    "humaneval": ({"limit": 4}, 941,
                  "76b890bad42364c2fc3b7676a5df69acbb4436b1776935ee552f65add2b3f0c8"),
    "humaneval-abstract": ({"limit": 3, "task_options": {"values": "abstract"}}, 330,
                           "8fabce49b45e140bb0cbe64a93aaf75600ac87f09a1ef0852a7234542101f529"),
    "humanevalpack": ({"limit": 3}, 36,
                      "fb9216f59313c8d787a8190ff0a28d1736ab669baa4adb854eaf86bdad86c891"),
}
"""Per source: the build, how many prompts (instances x shots 0, 1 and 3; the choice task
with 0 only, since it had no example before), and the SHA-256 of their hashes, as the
prompts written in code made them before they became templates (execbench 8f6483a)."""
BUG_TASKS = ["bug-prediction", "bug-localization", "bug-repair"]
NEUTRAL = {"input", "statement", "block", "loop", "branch"}
"""Tasks whose shipped prompt asks for the answer and leaves the working to the model."""


def _tasks(name: str) -> list[str]:
    if name == "humanevalpack":
        return BUG_TASKS
    if name == "humaneval-abstract":
        return ["output", "statement", "loop"]
    return [t for t in task_names() if t not in BUG_TASKS and t != "alias"]


def _built(name: str, folder: Path) -> list[Instance]:
    options = GOLDEN[name][0]
    spec = str(shared_data("humanevalpack.jsonl.gz")) if name == "humanevalpack" \
        else "humaneval"
    build_suite([spec], folder, BuildOptions(tasks=_tasks(name), **options))
    return load_suite(folder)[1]


@pytest.mark.parametrize("name", list(GOLDEN))
def test_the_shipped_templates_keep_every_prompt_byte_for_byte(name: str,
                                                               tmp_path: Path) -> None:
    hashes = {}
    for instance in _built(name, tmp_path / "suite"):
        for shots in (0, 1, 3):
            if instance.task == "choice" and shots:
                continue
            messages = ask(get_task(instance.task), instance, Protocol(shots=shots))
            hashes[f"{instance.id}|{shots}"] = hashlib.sha256(
                json.dumps(messages).encode()).hexdigest()
    total = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    assert (len(hashes), total) == GOLDEN[name][1:]


@pytest.fixture(scope="module")
def every_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite with instances of every task but the bug tasks and alias."""
    folder = tmp_path_factory.mktemp("protocol") / "suite"
    build_suite(["humaneval"], folder, BuildOptions(tasks=_tasks("humaneval"), limit=6))
    return folder


def test_every_style_renders_every_task_and_reads_the_same_answers(every_task: Path) -> None:
    """Reasoning asks for the run to be worked out on every task; direct asks for the
    answer at once and for no working anywhere; the shipped prompt is one of the two (it
    leaves the working to the model on the CodeSense questions and ``input``)."""
    suite = SuiteFile.open(every_task)
    seen = set()
    for instance in suite.instances():
        task = get_task(instance.task)
        shipped, reasoning, direct = (ask(task, instance, Protocol(style=style, shots=1))[0]
                                      ["content"] for style in STYLES)
        assert "<REASONING>" in reasoning or "step by step" in reasoning, instance.id
        if instance.task != "simulation":  # its example worked out (a simulation's is)
            assert "<REASONING>\n" in reasoning, instance.id
        assert "at once" in direct, instance.id
        assert "<REASONING>" not in direct and "step by step" not in direct, instance.id
        if instance.task in NEUTRAL:  # reasoning adds its request to the shipped prompt
            assert "Before answering," in reasoning and "Before answering," not in shipped
        else:  # the same request; only the examples may be worked out in reasoning style
            assert ask(task, instance, Protocol())[0]["content"] == \
                ask(task, instance, Protocol(style=REASONING))[0]["content"], instance.id
        assert all("[ANSWER]" in text for text in (shipped, reasoning, direct))
        response = task.asking.reference_response(instance)
        assert answer_text(response) is not None or instance.task == "simulation"
        seen.add(instance.task)
    assert seen == set(_tasks("humaneval"))


@pytest.mark.parametrize("pick", ["random", "same-kind", "same-function"])
def test_every_pick_renders_on_every_task(every_task: Path, pick: str) -> None:
    protocol = Protocol(style=DIRECT, shots=2, shot_pick=pick)
    suite = SuiteFile.open(every_task)
    shown: dict[str, int] = {}
    with drawn_from(suite, protocol) as drawn:
        for instance in suite.instances():
            task = get_task(instance.task)
            text = ask(task, instance, protocol, drawn)[0]["content"]
            examples = drawn.drawn(task, instance, protocol) if drawn else []
            assert all(str(e["answer"]) in text for e in examples), instance.id
            shown[instance.task] = shown.get(instance.task, 0) + len(examples)
    assert set(shown) == set(_tasks("humaneval"))
    # DexBench's and the generalization tasks ask one call per program: no other call
    alone = {"coverage", "counterfactual", "choice", "mutation"} \
        if pick == "same-function" else set()
    assert [task for task, count in shown.items() if not count and task not in alone] == []


@pytest.mark.parametrize("style", ["reasoning", "direct"])
def test_the_oracle_is_right_in_both_styles_with_drawn_examples(every_task: Path,
                                                                tmp_path: Path,
                                                                style: str) -> None:
    config = RunConfig(suite=str(every_task), model="reference/oracle", prompt=style,
                       shots=1, shot_pick="same-kind", limit=8)
    results = run(config, tmp_path / "run")
    samples = read_samples(tmp_path / "run" / "samples.jsonl")
    assert samples and all(s.verdict == "correct" for s in samples.values())
    assert results["run"]["prompt"] == style
    pinned = json.loads((tmp_path / "run" / "run.json").read_text())["pinned"]["protocol"]
    assert pinned == {"style": style, "shot_pick": "same-kind", "system": None,
                      "templates": {}}


def test_a_resume_in_another_style_is_refused_and_an_old_run_resumes(every_task: Path,
                                                                     tmp_path: Path) -> None:
    config = RunConfig(suite=str(every_task), model="reference/oracle", limit=2,
                       tasks=["output"])
    run(config, tmp_path / "run")
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["pinned"]["protocol"] is None  # the shipped protocol pins nothing new
    with pytest.raises(RunError, match="protocol"):
        run(RunConfig(suite=str(every_task), model="reference/oracle", limit=2,
                      tasks=["output"], prompt="direct"), tmp_path / "run")
    # a run pinned before protocols existed has no such key, and resumes
    del record["pinned"]["protocol"]
    (tmp_path / "run" / "run.json").write_text(json.dumps(record))
    run(RunConfig(suite=str(every_task), model="reference/oracle", limit=3,
                  tasks=["output"]), tmp_path / "run")


def _picked(suite: Path, pick: str, instance: Instance, seed: int = 0) -> list[Entry]:
    protocol = Protocol(style="direct", shots=3, shot_pick=pick, seed=seed)
    with drawn_from(SuiteFile.open(suite), protocol) as drawn:
        assert isinstance(drawn, DrawnExamples)
        return drawn.picked(get_task(instance.task), instance, protocol)


def test_examples_are_picked_as_asked_and_never_the_question_itself(every_task: Path) -> None:
    instances = [i for i in load_suite(every_task)[1] if i.task == "statement"]
    question = instances[0]
    kinds = {get_task("statement").asking.example_kind(i) for i in instances}
    assert len(kinds) > 1  # the suite has other kinds to leave out
    kind = get_task("statement").asking.example_kind(question)
    function, call = function_of(question), call_of(question)
    for pick in ("random", "same-kind"):
        picked = _picked(every_task, pick, question)
        assert len(picked) == 3
        assert all(e.function != function for e in picked), pick
        assert picked == _picked(every_task, pick, question)  # seeded: made again alike
    assert all(e.kind == kind for e in _picked(every_task, "same-kind", question))
    same = _picked(every_task, "same-function", question)
    assert same and all(e.function == function and e.call != call for e in same)
    seeds = {tuple(e.id for e in _picked(every_task, "random", question, seed))
             for seed in range(5)}
    assert len(seeds) > 1


def test_a_function_repeated_under_other_ids_is_one_function(tmp_path: Path) -> None:
    """CodeSense's files repeat a function under many records: an example from the same
    code under another id is the question's own function, never drawn by random or
    same-kind, and the very same call under another id is never drawn at all."""
    from tests.tasks.test_prediction import hand_instance

    question = hand_instance("output", truth={"value": ["int", 1], "repr": "1"})
    twin = replace(question, id="output/other/f/0", program_id="other/f")
    other_call = replace(question, id="output/other/f/1", program_id="other/f", call_index=1,
                         args="2")
    stranger = replace(question, id="output/g/0", program_id="g",
                       code="def g(x):\n    return -x\n", entry_point="g")
    suite = _Listed([question, twin, other_call, stranger])
    drawn = DrawnExamples(suite, None)
    output = get_task("output")
    for pick, expected in (("random", ["output/g/0"]), ("same-kind", ["output/g/0"]),
                           ("same-function", ["output/other/f/1"])):
        protocol = Protocol(style=DIRECT, shots=3, shot_pick=pick)
        assert [e.id for e in drawn.picked(output, question, protocol)] == expected, pick
    assert drawn.shortfall([question], Protocol(shots=3, shot_pick="same-function")) \
        .startswith("--shot-pick same-function: 1 of 1 questions have fewer than 3")


class _Listed:
    """A suite held in memory, as ``SuiteReader`` reads one."""

    def __init__(self, instances: list[Instance]) -> None:
        self.listed = instances
        self.limits = Limits()

    def offsets(self) -> dict[str, int]:
        return {instance.id: index for index, instance in enumerate(self.listed)}

    def instances(self) -> Iterator[Instance]:
        return iter(self.listed)

    def instance_at(self, offset: int, expected: str) -> Instance:
        assert self.listed[offset].id == expected
        return self.listed[offset]


def test_drawn_examples_carry_worked_steps_in_reasoning_style_only(every_task: Path) -> None:
    question = next(i for i in load_suite(every_task)[1] if i.task == "output")
    output = get_task("output")
    for style, steps in (("reasoning", 2), ("direct", 0)):
        protocol = Protocol(style=style, shots=2, shot_pick="random")
        with drawn_from(SuiteFile.open(every_task), protocol) as drawn:
            examples = drawn.drawn(output, question, protocol) if drawn else []
            prompt = ask(output, question, protocol, drawn)[0]["content"]
        assert len(examples) == 2
        worked = [str(e["worked"]) for e in examples]
        if steps:
            assert all(w.startswith("Running `") and "The call returns" in w for w in worked)
        else:
            assert worked == ["", ""]
        assert prompt.count("<REASONING>") == steps
        assert all(str(e["answer"]) in prompt for e in examples)
