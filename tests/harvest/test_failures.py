"""A harvest whose tests never ran is a failure (issue #40): each kind of session that runs
no test (a missing module, a test file that does not parse, no tests, a session that
crashes at its start) ends ``execbench harvest`` with exit status 1, pytest's own error
lines and a hint, caches nothing, and is tried again by the next run; a harvest that ran
stays cached until the interpreter's installed distributions change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from execbench.harvest import failures, many
from execbench.harvest.installed import distributions_digest
from tests.harvest.test_project import make_project
from tests.helpers.cli import execbench, said

KINDS = {
    "missing": ("tests/test_clock.py", "import freezegun_absent\n\n\ndef test_x():\n    pass\n",
                ["ERROR collecting tests/test_clock.py",
                 "E   ModuleNotFoundError: No module named 'freezegun_absent'",
                 "Interrupted: 1 error during collection"],
                "the tests import freezegun_absent, which", "--install-deps installs"),
    "syntax": ("tests/test_bad.py", "def test_x(:\n    pass\n",
               ["ERROR collecting tests/test_bad.py", "E   SyntaxError: invalid syntax"],
               "pytest could not collect tests/test_bad.py",
               "--pytest-args '--ignore=tests/test_bad.py'"),
    "no-tests": ("tests/test_core.py", "", ["no tests ran in"], "pytest found no tests",
                 "--pytest-args 'tests'"),
    "exits": ("tests/conftest.py", "import os\n\n\ndef pytest_sessionstart(session):\n"
              "    os._exit(7)\n", ["(pytest printed nothing)"],
              "the session failed before its tests ran", "-p no:NAME"),
    "raises": ("tests/conftest.py", "def pytest_sessionstart(session):\n"
               "    raise RuntimeError('broken at the start')\n",
               ["INTERNALERROR> RuntimeError: broken at the start"],
               "the session failed before its tests ran", "-p no:NAME"),
}
"""Each kind: the file written into the tiny project, pytest's lines the failure shows (each
a line's start), and two parts of its hint."""

REASONS = {"missing": "pytest exit status 2 (interrupted", "syntax": "pytest exit status 2",
           "no-tests": "pytest exit status 5 (no tests collected)",
           "exits": "the test process ended before pytest's end",
           "raises": "pytest exit status 3 (internal error"}


def _broken(root: Path, kind: str) -> Path:
    make_project(root)
    relative, text, *_ = KINDS[kind]
    (root / relative).write_text(text)
    return root


def _shown(lines: list[str], expected: list[str]) -> None:
    for start in expected:
        assert any(line.strip().startswith(start) for line in lines), (start, lines)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_session_that_ran_no_test_fails_and_is_tried_again(kind: str, tmp_path: Path
                                                             ) -> None:
    project = _broken(tmp_path / kind, kind)
    _, _, expected, hint, flag = KINDS[kind]
    out = tmp_path / "out"
    for attempt in ("first", "retry"):
        done = execbench("harvest", project, "--out", out)
        assert done.exit_code == 1, (attempt, done.stdout, done.stderr)
        lines = done.stdout.splitlines()
        assert lines[0].startswith(f"{kind}: failed: the tests did not run: {REASONS[kind]}"), \
            (attempt, lines)
        assert "already harvested" not in done.stdout
        _shown(lines[1:], expected)
        [hinted] = [line for line in lines if line.startswith("  hint: ")]
        assert hint in hinted and flag in hinted, hinted
        assert f"  pytest's whole output: {out / 'projects' / f'{kind}.log'}" in lines
        # nothing cached: no records, a summary that holds the error and pytest's lines
        assert not (out / "projects" / f"{kind}.jsonl").exists()
        summary = json.loads((out / "projects" / f"{kind}.json").read_text())
        assert summary["error"].startswith("the tests did not run: ") and hint in summary["hint"]
        _shown(summary["errors"] or ["(pytest printed nothing)"], expected)
        assert (out / "harvest.jsonl").read_text() == ""
        assert "/execbench-harvest-" not in done.stdout  # the scratch copy's paths relative


def test_one_file_shows_the_import_error_writes_nothing_and_keeps_the_log(tmp_path: Path
                                                                          ) -> None:
    project = _broken(tmp_path / "missing", "missing")
    out = tmp_path / "h.jsonl"
    done = execbench("harvest", project, "--out", out)
    assert done.exit_code == 1, done.stderr
    lines = said(done.stderr)
    assert lines[0].startswith("error: the tests did not run: pytest exit status 2"), lines
    assert lines[0].endswith("; 0 of 5 tests finished"), lines
    assert "    E   ModuleNotFoundError: No module named 'freezegun_absent'" in lines
    assert any(line.startswith("  hint: the tests import freezegun_absent") for line in lines)
    assert f"  nothing written to {out}" in lines
    assert not out.exists() and done.stdout == ""
    log = (tmp_path / "h.log").read_text()
    assert "ImportError while importing test module" in log and "short test summary" in log

    # mended (here: the module given beside the tests), it is harvested, log and all
    (project / "freezegun_absent.py").write_text("")
    again = execbench("harvest", project, "--out", out)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith("tests: 6 of 6 finished (pytest exit status 0)")
    assert out.stat().st_size > 0 and "6 passed" in (tmp_path / "h.log").read_text()


def test_a_harvest_stays_cached_until_the_installed_distributions_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_project(tmp_path / "alpha")
    installed = {"digest": "one"}
    monkeypatch.setattr(many, "distributions_digest", lambda python: installed["digest"])
    out = tmp_path / "out"
    states = []
    for digest in ("one", "one", "two", "two"):
        installed["digest"] = digest
        done = execbench("harvest", project, "--out", out)
        assert done.exit_code == 0, done.stdout
        states.append(done.stdout.split(";")[0])
        assert (out / "projects" / "alpha.log").is_file()
    assert states == ["alpha: harvested", "alpha: already harvested", "alpha: harvested",
                      "alpha: already harvested"]


def test_installing_a_distribution_changes_the_digest(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    """The digest is the interpreter's answer, so a distribution it can import (here one
    on PYTHONPATH, which the tests' environment keeps) changes it, and nothing else does."""
    python = str(Path(__import__("sys").executable))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    before = distributions_digest(python)
    assert len(before) == 64 and distributions_digest(python) == before
    site = tmp_path / "site"
    (site / "freezegun_absent-1.0.dist-info").mkdir(parents=True)
    (site / "freezegun_absent-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: freezegun-absent\nVersion: 1.0\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    after = distributions_digest(python)
    assert len(after) == 64 and after != before
    assert distributions_digest(str(tmp_path / "no-python")).startswith("not asked: ")


def test_the_log_kept_is_bounded_and_its_error_lines_read_whatever_its_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "MAX_LOG_BYTES", 100)
    log = tmp_path / "pytest.log"
    log.write_text("a" * 80 + "\n" + "x" * 100_000 + "\n"
                   "________ ERROR collecting tests/test_a.py ________\n"
                   "E   ModuleNotFoundError: No module named 'late'\n" + "b" * 80 + "\n")
    kept = tmp_path / "kept.log"
    failures.keep_log(log, kept)
    text = kept.read_text()
    assert text.startswith("a" * 50) and text.endswith("b" * 49 + "\n")
    assert f"[... {log.stat().st_size - 100:,} bytes of pytest's output left out ...]" in text
    found = failures.read_log(log)
    assert found.errors == ["ERROR collecting tests/test_a.py",
                            "E   ModuleNotFoundError: No module named 'late'"]
    assert found.missing == ["late"] and found.collecting == ["tests/test_a.py"]


def test_hostile_pytest_output_is_shown_bounded_and_escaped(tmp_path: Path) -> None:
    """pytest's lines are the tests' own words: an error message that would retitle the
    terminal, and one line of 100,000 characters, are shown escaped and cut."""
    project = make_project(tmp_path / "loud")
    (project / "tests" / "test_loud.py").write_text(
        "raise ImportError('\\x1b]0;TITLE\\x07[bold]x[/bold]' + 'y' * 100_000)\n")
    done = execbench("harvest", project, "--out", tmp_path / "out")
    assert done.exit_code == 1, done.stdout
    assert "\x1b" not in done.stdout and "\\x1b]0;TITLE\\x07[bold]x[/bold]y" in done.stdout
    shown = done.stdout.splitlines()
    assert max(map(len, shown)) < failures.MAX_LINE_CHARS + 200, max(map(len, shown))
    assert len(shown) <= failures.MAX_ERROR_LINES + 6
