"""The CodeSense tasks against CodeSense's own published answers in
../shared/published/codesense (skipped when absent): Llama-3.1-8B's loop-body answers with
the authors' per-sample verdicts, and the output answers of their sanity set. Each answer
is served over HTTP by a scripted server as the model's reply to the prompt execbench
renders for the record it answers, and scored by a real run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from execbench.runner import RunConfig, read_samples, run
from execbench.suite import BuildOptions, build_suite, load_suite
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.protocol import Protocol
from tests.helpers.data import published, shared_data
from tests.helpers.fake_model import fake_model


def _answered(tmp_path: Path, source: Path, answers: dict[str, str], task: str, *,
              limit: int | None = None) -> dict[str, Any]:
    """Build ``source`` with ``task``, and run it with a model that gives each
    instance the published answer for its record (``answers``: record idx -> response).
    Returns the samples by record idx; every instance must have its answer."""
    suite = tmp_path / "suite"
    build_suite([str(source)], suite, BuildOptions(tasks=[task], limit=limit, workers=1))
    _, instances, _ = load_suite(suite)
    replies = {ask(get_task(instance.task), instance, Protocol(shots=0))[-1]["content"]:
               answers[instance.program_id.rsplit("/", 1)[1]] for instance in instances}
    with fake_model(replies.__getitem__) as model:
        run(RunConfig(suite=str(suite), **model), tmp_path / "run")
    samples = read_samples(tmp_path / "run" / "samples.jsonl").values()
    return {sample.instance_id.split("/")[2]: sample for sample in samples}


def test_string_match_is_the_authors_verdict_on_every_loop_body_answer(
        tmp_path: Path) -> None:
    """Llama-3.1-8B's 107 loop-body answers: on each of the 103 records execbench keeps,
    ``string_match`` is the authors' own ``parsed_result``. The strict verdict differs on
    five, each for a reason: four answers write ``name = value`` (execbench reads the
    value, the authors' comparison the whole text), and one answer, ``'('k', 8)``, is no
    Python value, which the authors' normalisation (it drops quotes) accepts."""
    artifact = json.loads(published("codesense/loop_body_llama31_8b.json").read_text())
    records = artifact["records"]
    samples = _answered(tmp_path, shared_data("codesense/loop_body_dataset_python.jsonl.gz"),
                        {idx: record["model_prediction"] for idx, record in records.items()},
                        "loop")
    assert len(records) == 107 and len(samples) == 103
    differ = []
    for idx, sample in samples.items():
        assert sample.extra["string_match"] is records[idx]["parsed_result"], idx
        if (sample.verdict == "correct") != sample.extra["string_match"]:
            differ.append((idx, sample.verdict))
    assert sum(record["parsed_result"] for record in records.values()) == 12
    assert sum(sample.extra["string_match"] for sample in samples.values()) == 11
    assert sorted(differ, key=lambda pair: int(pair[0])) == [
        ("54", "correct"), ("58", "correct"), ("69", "unparsable"), ("73", "correct"),
        ("94", "correct")]
    assert all(records[idx]["parsed_prediction"].split(" = ")[0].isidentifier()
               for idx, _ in differ if idx != "69")


def test_every_published_output_answer_is_read_from_its_ans_tags(tmp_path: Path) -> None:
    """The sanity set's two files of output answers (records 0 to 19, all in ``<ans>``
    tags): every answer to a record execbench keeps (19 of 20: record 8's input is no
    argument list) is read from its tags and scored, with ``string_match`` beside the
    strict verdict. Answers that describe the value in words are unparsable, never right;
    a value the authors recorded only as text (record 2's object, record 5's list of
    Timestamps) is judged by the string comparison alone."""
    source = shared_data("codesense/input_output_dataset_python.jsonl.gz")
    verdicts: Counter[tuple[str, str, bool]] = Counter()
    for number in (0, 1):
        responses = json.loads(published(
            f"codesense/sanity_output/output_{number}_response.json").read_text())
        answers = {str(item["idx"]): item["response"] for item in responses}
        # the first 19 programs: records 0 to 19 but 8
        samples = _answered(tmp_path / str(number), source, answers, "output", limit=19)
        assert len(answers) == 20 and sorted(samples, key=int) == [
            str(idx) for idx in range(20) if idx != 8]
        for idx, sample in samples.items():
            assert sample.extra["kind"] == "output" and "string_match" in sample.extra
            assert sample.detail != "empty response", idx
            told = answers[idx].split("<ans>", 1)[1].split("</ans>", 1)[0].strip()
            if sample.verdict != "unparsable":
                assert sample.answer == told, idx
            if idx in ("2", "5"):
                assert sample.extra["comparable"] is False
                assert sample.verdict == ("correct" if sample.extra["string_match"]
                                          else "incorrect")
            verdicts[f"file {number}", sample.verdict, sample.extra["string_match"]] += 1
    assert verdicts == {
        # file 0 writes records 0 and 1's strings without quotes: the string comparison
        # (which drops quotes) accepts them, the literal reading cannot
        ("file 0", "correct", True): 6, ("file 0", "unparsable", True): 2,
        ("file 0", "unparsable", False): 5, ("file 0", "incorrect", False): 6,
        ("file 1", "correct", True): 9, ("file 1", "unparsable", False): 3,
        ("file 1", "incorrect", False): 7}
