"""``reports.run_files``: the one reader of a run's suite and log behind the layouts that
go back to them (``paired-differences``, ``ces-vetting``, ``ces-success-overlap``,
``vetted-output``, ``cutoff-split``). A hostile or rebuilt file costs its run a note naming
the reason, through the command, on the page and in the figures, never a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from execbench.reports.run_files import Unread, run_instances, run_log, run_suite
from execbench.rundir import RESULTS, SAMPLES, read_results
from execbench.runner import RunConfig, run
from execbench.suite import MANIFEST, BuildOptions, SuiteFile, build_suite
from tests.helpers.cli import execbench
from tests.helpers.data import shared_data
from tests.helpers.programs import REPORTED as PROGRAMS

DATED = [{**program, "meta": {"date": "2023-06-01"}} for program in PROGRAMS]
"""The report programs, dated before the runs' cutoff, so ``cutoff-split`` reads the log."""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two suites and the oracle's run of each, with a cutoff: ``mixed`` (output,
    coverage and simulation on the two report programs, dated) and ``bugs`` (the three bug
    tasks on two HumanEvalPack programs)."""
    folder = tmp_path_factory.mktemp("run-files")
    source = folder / "dated.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in DATED))
    build_suite([str(source)], folder / "mixed-suite", BuildOptions(
        tasks=["output", "coverage", "simulation"], workers=1))
    build_suite([str(shared_data("humanevalpack.jsonl.gz"))], folder / "bugs-suite",
                BuildOptions(tasks=["bug-prediction", "bug-localization", "bug-repair"],
                             limit=2, workers=1))
    for name in ("mixed", "bugs"):
        run(RunConfig(suite=str(folder / f"{name}-suite"), model="reference/oracle",
                      model_cutoff="2024-01"), folder / name)
    return {"mixed": folder / "mixed", "bugs": folder / "bugs", "folder": folder}


def _copy(made: dict[str, Path], name: str, to: Path) -> Path:
    """A copy of the run and of its suite, the copy's results naming the copied suite."""
    suite = to / f"{name}-suite"
    shutil.copytree(made["folder"] / f"{name}-suite", suite)
    out = to / name
    shutil.copytree(made[name], out)
    record = json.loads((out / RESULTS).read_text(encoding="utf-8"))
    record["run"]["suite"] = str(suite)
    (out / RESULTS).write_text(json.dumps(record), encoding="utf-8")
    return out


def _relog(run_dir: Path, **fields: Any) -> None:
    """Log the first sample again, some of its fields replaced (the later record wins)."""
    log = run_dir / SAMPLES
    record = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    with log.open("a", encoding="utf-8") as file:
        file.write(json.dumps({**record, **fields}) + "\n")


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


Harm = Callable[[Path, Path], None]
HARMS: list[Any] = [
    pytest.param(lambda out, suite: _append(out / SAMPLES, "not json\n"),
                 "not a sample record", True, id="log line not json"),
    pytest.param(lambda out, suite: _relog(out, correct="yes"), "wrong types", True,
                 id="correct a string"),
    pytest.param(lambda out, suite: _relog(out, score="high"), "wrong types", True,
                 id="score a string"),
    pytest.param(lambda out, suite: (out / SAMPLES).unlink(), "not found", True,
                 id="log gone"),
    pytest.param(lambda out, suite: _append(suite / "instances.jsonl", "\n"),
                 "changed since the run", False, id="suite rebuilt"),
]


def _section(page: str, layout: str) -> str:
    """The page's part for one layout (from its anchor to the next layout's)."""
    start = page.index(f'id="layout-{layout}"')
    end = page.find('id="layout-', start + 1)
    return page[start:] if end < 0 else page[start:end]


LAYOUTS = ("cutoff-split", "vetted-output", "ces-success-overlap", "ces-vetting",
           "paired-differences")
"""The layouts that read a run's log or suite (``paired-differences`` reads no suite)."""


@pytest.mark.parametrize(("harm", "said", "log"), HARMS)
def test_a_harmed_run_gets_a_note_in_every_layout_and_the_others_report(
        made: dict[str, Path], tmp_path: Path, harm: Harm, said: str, log: bool) -> None:
    """Each harm done to a copy of both runs, reported with the good mixed run: every
    layout that reads the harmed file notes the reason in its table (``paired-differences``
    only for a log harm) and the good run still reports; ``--plots`` draws every layout;
    ``--html`` writes the page with the same notes (a log with a line that is not JSON
    leaves the run's samples out of the page's browser, said on stderr). Never a
    traceback."""
    mixed, bugs = _copy(made, "mixed", tmp_path), _copy(made, "bugs", tmp_path)
    for out in (mixed, bugs):
        harm(out, Path(json.loads((out / RESULTS).read_text())["run"]["suite"]))
    runs = (mixed, bugs, made["mixed"])
    for layout in LAYOUTS:
        done = execbench("report", *runs, "--layout", layout, "--format", "json")
        assert done.exit_code == 0, (layout, done.stderr)
        notes = " ".join(table["note"] or "" for table in json.loads(done.stdout)["tables"])
        notes += " ".join(str(row) for table in json.loads(done.stdout)["tables"]
                          for row in table["rows"])
        assert (said in notes) == (log or layout != "paired-differences"), layout
    split = json.loads(execbench("report", *runs, "--layout", "cutoff-split", "--format",
                                 "json").stdout)["tables"][0]["rows"]
    assert {row["run"] for row in split} == {f"reference/oracle ({made['mixed']})"}
    plots, page = tmp_path / "plots", tmp_path / "page.html"
    done = execbench("report", *runs, "--plots", plots)
    assert done.exit_code == 0, done.stderr
    for layout in LAYOUTS:
        if layout != "ces-vetting":  # no run's family layout, shown only when asked for
            assert (plots / f"{layout}.png").read_bytes().startswith(b"\x89PNG"), layout
    done = execbench("report", *runs, "--html", page)
    assert "Traceback" not in done.stderr + done.stdout
    assert done.exit_code == 0, done.stderr
    if said == "not a sample record":  # the browser leaves the runs out, and says so
        assert "its samples are not in the page's browser" in " ".join(done.stderr.split())
    text = page.read_text(encoding="utf-8")
    for layout in ("cutoff-split", "vetted-output", "ces-success-overlap",
                   *(("paired-differences",) if log else ())):
        assert said in _section(text, layout), layout


def test_the_suite_is_used_only_as_the_run_pinned_it(made: dict[str, Path],
                                                    tmp_path: Path) -> None:
    result = read_results(made["mixed"])
    suite = run_suite(result)
    assert isinstance(suite, SuiteFile) and suite.sha256 == result.suite_sha256
    assert sorted({instance.task for instance in run_instances(result)}) == [
        "coverage", "output", "simulation"]
    copied = _copy(made, "mixed", tmp_path)
    folder = tmp_path / "mixed-suite"
    for manifest, why in ((b"\xff{", "not JSON"), (b"[1]", "not a JSON object"),
                          (b"{}", "schema version")):
        (folder / MANIFEST).write_bytes(manifest)
        assert why in str(run_suite(read_results(copied)))
    shutil.rmtree(folder)
    assert run_suite(read_results(copied)) == f"suite {folder} not found"
    with pytest.raises(Unread, match="not found"):
        list(run_instances(read_results(copied)))


def test_the_log_streams_the_winning_record_of_each_sample(made: dict[str, Path],
                                                          tmp_path: Path) -> None:
    """The oracle's log, one sample per instance, all right; a record logged again wins
    (as results count it), and an id that cannot key a sample is the wrong type."""
    result = read_results(made["mixed"])
    first = list(run_log(result))
    assert first and all(sample.correct for sample in first)
    copied = _copy(made, "mixed", tmp_path)
    _relog(copied, correct=False, verdict="incorrect")
    again = list(run_log(read_results(copied)))
    assert len(again) == len(first)
    assert [sample.correct for sample in again].count(False) == 1
    _relog(copied, instance_id=["a", "list"])
    with pytest.raises(Unread, match="wrong types"):
        list(run_log(read_results(copied)))
