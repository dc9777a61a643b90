"""``execbench show``: samples with the prompt rendered again from the suite. The command
runs in this process (``tests/helpers/cli.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import Result

from execbench.runner import RunConfig, load_run_config
from execbench.tasks import get_task
from execbench.tasks.asking import ask
from execbench.tasks.base import Instance
from execbench.tasks.protocol import Protocol
from tests.helpers.cli import execbench


def show(*args: object) -> Result:
    return execbench("show", *args)


def test_show_filters_and_renders_the_prompt_that_was_sent(report_runs: list[Path]) -> None:
    oracle, constant = report_runs
    done = show(constant, "--task", "output", "--verdict", "incorrect", "--limit", 2,
                "--format", "json")
    assert done.exit_code == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["model"] == "reference/constant"
    assert len(shown["samples"]) == 2
    suite = Path(load_run_config(constant).suite)
    instances = {json.loads(line)["id"]: Instance.from_record(json.loads(line))
                 for line in (suite / "instances.jsonl").open()}
    for record in shown["samples"]:
        assert (record["task"], record["verdict"]) == ("output", "incorrect")
        instance = instances[record["instance_id"]]
        assert record["prompt"] == ask(get_task("output"), instance, Protocol(shots=0))
        assert record["prompt_changed"] is False
        assert json.loads(record["truth"]) == instance.data["truth"]
        assert record["response"] and record["answer"]


def test_show_text_has_each_part(report_runs: list[Path]) -> None:
    oracle, _ = report_runs
    done = show(oracle, "--instance", "coverage/", "--limit", 1)
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("=== coverage/small/") and lines[0].endswith(
        "sample 0: correct (reference/oracle) ===")
    for part in ("answer: ", "truth", "--- prompt ---", "--- response ---", "[ANSWER]"):
        assert any(line.startswith(part) for line in lines), part
    # values as Python prints them, never typed JSON (["int", 3])
    output = show(oracle, "--instance", "output/", "--limit", 1).stdout.splitlines()
    [truth] = [line for line in output if line.startswith("truth: ")]
    assert truth.startswith("truth: value: ") and '["' not in truth, truth


def test_show_says_when_nothing_matches_or_the_suite_is_gone(report_runs: list[Path],
                                                             tmp_path: Path) -> None:
    oracle, _ = report_runs
    done = show(oracle, "--verdict", "unparsable")
    assert done.exit_code == 2
    # the oracle's samples are all right: the message says so, with their count
    said = f"error: no sample in {oracle} matches these filters together (its samples: correct "
    assert done.stderr.startswith(said) and done.stderr.endswith(")\n")
    assert done.stderr[len(said):-2].replace(",", "").isdigit()
    moved = tmp_path / "run"
    moved.mkdir()
    for name in ("samples.jsonl", "run.json"):
        (moved / name).write_bytes((oracle / name).read_bytes())
    config = json.loads((moved / "run.json").read_text())
    config["suite"] = str(tmp_path / "gone")
    (moved / "run.json").write_text(json.dumps(config))
    assert isinstance(load_run_config(moved), RunConfig)
    done = show(moved, "--limit", 1)
    assert done.exit_code == 0
    assert f"its suite {tmp_path / 'gone'} is gone; put it back" in done.stderr
    assert "--- prompt: not in the suite ---" in done.stdout
