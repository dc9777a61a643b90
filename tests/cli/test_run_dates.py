"""``execbench run --model-release/--model-cutoff/--model-cards``: the dates kept in
run.json only when given, pinned so that a resume with other dates is refused, shown by
``show``, and every bad date or card file refused in one line before the run folder is
used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.rundir import RunConfig, RunError, load_run_config
from execbench.settings import SettingError
from tests.helpers.cli import execbench, said

SOURCE = {"id": "twice", "code": "def f(x):\n    return 2 * x\n", "entry_point": "f",
          "calls": ["1", "2"]}
DATED = ("--model-release", "2024-05-13", "--model-cutoff", "2023-10")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dates-suite")
    source = folder / "small.jsonl"
    source.write_text(json.dumps(SOURCE) + "\n")
    done = execbench("build", source, "--out", folder / "suite", "--tasks", "output")
    assert done.exit_code == 0, done.stderr
    return folder / "suite"


def _run(suite: Path, out: Path, *args: object) -> tuple[int, list[str]]:
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", out,
                     *args)
    return done.exit_code, said(done.stderr)


def test_a_run_without_dates_writes_none(suite: Path, tmp_path: Path) -> None:
    assert _run(suite, tmp_path / "run")[0] == 0
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert not {"model_release", "model_cutoff"} & set(record)
    assert "model_dates" not in record["pinned"]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert not {"model_release", "model_cutoff"} & set(results["run"])


def test_dates_are_kept_pinned_and_shown(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(suite, out, *DATED)[0] == 0
    record = json.loads((out / "run.json").read_text())
    assert (record["model_release"], record["model_cutoff"]) == ("2024-05-13", "2023-10")
    assert record["pinned"]["model_dates"] == {"release": "2024-05-13", "cutoff": "2023-10"}
    results = json.loads((out / "results.json").read_text())
    assert (results["run"]["model_release"], results["run"]["model_cutoff"]) == (
        "2024-05-13", "2023-10")
    shown = execbench("show", out, "--limit", "1")
    assert "(reference/oracle; released 2024-05-13, cutoff 2023-10)" in shown.stdout
    document = json.loads(execbench("show", out, "--format", "json").stdout)
    assert (document["model_release"], document["model_cutoff"]) == ("2024-05-13", "2023-10")
    assert execbench("score", out).exit_code == 0  # the re-score finds the same pin

    assert _run(suite, out, *DATED)[0] == 0  # the same dates resume
    assert len(json.loads((out / "run.json").read_text())["sessions"]) == 2
    code, lines = _run(suite, out, "--model-release", "2024-05-13", "--model-cutoff",
                       "2023-11")
    assert code == 2 and len(lines) == 1
    assert ("different model_dates (the run's: release 2024-05-13, cutoff 2023-10; given "
            "now: release 2024-05-13, cutoff 2023-11)") in lines[0]
    code, lines = _run(suite, out)
    assert code == 2 and "given now: none" in lines[0]


def test_a_dated_resume_of_an_undated_run_is_refused(suite: Path, tmp_path: Path) -> None:
    assert _run(suite, tmp_path / "run")[0] == 0
    code, lines = _run(suite, tmp_path / "run", "--model-cutoff", "2023-10")
    assert code == 2 and "(the run's: none; given now: cutoff 2023-10)" in lines[0]
    assert "model_cutoff" not in json.loads((tmp_path / "run" / "run.json").read_text())


def test_cards_give_the_dates_and_flags_override_them(suite: Path, tmp_path: Path) -> None:
    cards = tmp_path / "cards.toml"
    cards.write_text('["reference/oracle"]\nrelease = 2024-05-13\ncutoff = "2023-10"\n\n'
                     '["openai/gpt-4o"]\ncutoff = "2023-10"\n')
    assert _run(suite, tmp_path / "carded", "--model-cards", cards)[0] == 0
    record = json.loads((tmp_path / "carded" / "run.json").read_text())
    assert (record["model_release"], record["model_cutoff"]) == ("2024-05-13", "2023-10")
    assert _run(suite, tmp_path / "over", "--model-cards", cards, "--model-cutoff",
                "2023-12-01")[0] == 0
    record = json.loads((tmp_path / "over" / "run.json").read_text())
    assert (record["model_release"], record["model_cutoff"]) == ("2024-05-13", "2023-12-01")
    other = tmp_path / "other.toml"
    other.write_text('["openai/gpt-4o"]\ncutoff = "2023-10"\n')
    code, lines = _run(suite, tmp_path / "missing", "--model-cards", other)
    assert code == 2 and len(lines) == 1 and "no card for 'reference/oracle'" in lines[0]
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(("args", "message"), [
    (("--model-cutoff", "2023-13"), "--model-cutoff '2023-13' is no day of the calendar"),
    (("--model-release", "May 2024"), "--model-release 'May 2024' is not a date"),
    (("--model-release", "2024-05", "--model-cutoff", "2024-06"),
     "--model-cutoff 2024-06 is after --model-release 2024-05"),
])
def test_a_bad_date_is_refused_before_the_folder_is_used(suite: Path, tmp_path: Path,
                                                         args: tuple[str, ...],
                                                         message: str) -> None:
    code, lines = _run(suite, tmp_path / "run", *args)
    assert code == 2 and len(lines) == 1 and message in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("content", [
    b"\xff\xfe not text", b'["reference/oracle"]\ncutoff = 2023-10\n',
    b"a = " + b"[" * 100_000 + b"]" * 100_000, b"# " + b"x" * (2 << 20) + b"\n",
    b'["reference/oracle"]\ncutoff = "\x1b[2J2023"\n'])
def test_a_hostile_card_file_stops_the_run_in_one_line(suite: Path, tmp_path: Path,
                                                       content: bytes) -> None:
    cards = tmp_path / "cards.toml"
    cards.write_bytes(content)
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out",
                     tmp_path / "run", "--model-cards", cards)
    lines = said(done.stderr)
    assert done.exit_code == 2 and len(lines) == 1 and "model cards" in lines[0]
    assert "\x1b" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_the_api_checks_dates_as_the_flags_do() -> None:
    with pytest.raises(SettingError, match="model_cutoff '2023-1' is not a date"):
        RunConfig(suite="s", model="reference/oracle", model_cutoff="2023-1").validate()


def test_dates_a_run_folder_holds_are_read_as_flags_are(suite: Path, tmp_path: Path) -> None:
    """Another's run folder with a forged date: ``show`` and ``score`` refuse its
    run.json in one line, ``report`` skips its results.json saying why."""
    out = tmp_path / "run"
    assert _run(suite, out, *DATED)[0] == 0
    record = json.loads((out / "run.json").read_text())
    record["model_cutoff"] = "\x1b[2Jsoon"
    (out / "run.json").write_text(json.dumps(record))
    with pytest.raises(RunError, match="not a run configuration"):
        load_run_config(out)
    shown = execbench("show", out)
    assert shown.exit_code == 2 and "\x1b" not in shown.stderr
    results = json.loads((out / "results.json").read_text())
    results["run"]["model_release"] = ["2024"]
    (out / "results.json").write_text(json.dumps(results))
    done = execbench("report", out, tmp_path / "nothing")
    assert done.exit_code == 2
    assert "results.json cannot be read" in done.stderr and "model_release" in done.stderr
