"""A harvest whose tests never ran is a failure (issue #40): each kind of session that runs
no test (a missing module, a test file that does not parse, no tests, a session that
crashes at its start) ends ``execbench harvest`` with exit status 1, pytest's own error
lines and a hint, caches nothing, and is tried again by the next run; a harvest that ran
stays cached until the interpreter's installed distributions change."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from execbench.harvest import failures, many
from execbench.harvest.installed import distributions_digest
from execbench.harvest.options import HarvestOptions, HarvestResult
from tests.harvest.test_project import make_project
from tests.helpers.cli import execbench, said

KINDS = {
    "missing": ("tests/test_clock.py", "import freezegun_absent\n\n\ndef test_x():\n    pass\n",
                ["ERROR collecting tests/test_clock.py",
                 "E   ModuleNotFoundError: No module named 'freezegun_absent'",
                 "Interrupted: 1 error during collection"],
                "the tests import 'freezegun_absent', which is not installed (the project's "
                "word)", "declare it in the project's requirements and use --install-deps"),
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
        assert f"  pytest's whole output: {out / 'projects' / f'{kind}.pytest.log'}" in lines
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
    assert any(line.startswith("  hint: the tests import 'freezegun_absent'") for line in lines)
    assert f"  nothing written to {out}" in lines
    assert not out.exists() and done.stdout == ""
    log = (tmp_path / "h.pytest.log").read_text()
    assert "ImportError while importing test module" in log and "short test summary" in log

    # mended (here: the module given beside the tests), it is harvested, log and all
    (project / "freezegun_absent.py").write_text("")
    again = execbench("harvest", project, "--out", out)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith("tests: 6 of 6 finished (pytest exit status 0)")
    assert out.stat().st_size > 0 and "6 passed" in (tmp_path / "h.pytest.log").read_text()

    # broken again: the records of the earlier harvest are removed, not left to build on
    (project / "freezegun_absent.py").unlink()
    again = execbench("harvest", project, "--out", out)
    assert again.exit_code == 1 and not out.exists(), again.stderr
    assert f"  nothing written to {out}; the one an earlier harvest wrote there removed" \
        in said(again.stderr)


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
        assert (out / "projects" / "alpha.pytest.log").is_file()
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


def test_the_log_kept_is_bounded_and_its_error_lines_read_from_the_part_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "MAX_LOG_BYTES", 400)
    log = tmp_path / "pytest.log"
    log.write_text("a" * 80 + "\n" + "x" * 100_000 + "\n"
                   "________ ERROR collecting tests/test_a.py ________\n"
                   "E   ModuleNotFoundError: No module named 'late'\n" + "b" * 80 + "\n")
    kept = tmp_path / "kept.log"
    failures.keep_log(log, kept)
    text = kept.read_text()
    assert text.startswith("a" * 80 + "\n" + "x" * 119) and text.endswith("b" * 80 + "\n")
    assert f"[... {log.stat().st_size - 400:,} bytes of pytest's output left out ...]" in text
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


def _failed_log(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "pytest.log"
    log.write_text(text)
    return log


def test_the_ignore_hint_for_a_hostile_file_name_is_safe_to_paste(tmp_path: Path) -> None:
    """A test file named to break out of the hint's quotes: the flag the hint suggests,
    split as a shell splits it and then as execbench splits --pytest-args, is exactly the
    one --ignore argument, and nothing of the name runs."""
    name = "tests/test_a';touch PWNED;'.py"
    log = _failed_log(tmp_path, f"________ ERROR collecting {name} ________\n"
                                "E   SyntaxError: invalid syntax\n")
    result = HarvestResult(pytest_exit=2, tests=(0, 0))
    failed = failures.not_run(result, log, None, HarvestOptions())
    assert failed is not None
    flag = re.fullmatch(r"pytest could not collect .+: leave it out with (.+), or run the "
                        r"rest with --pytest-args '--continue-on-collection-errors'",
                        failed.hint)
    assert flag is not None, failed.hint
    option, value = shlex.split(flag.group(1))
    assert option == "--pytest-args" and shlex.split(value) == [f"--ignore={name}"]
    # a plain name keeps the plain, single-quoted flag
    assert failures.ignoring("tests/test_b.py") == "--pytest-args '--ignore=tests/test_b.py'"


def test_the_log_is_read_only_for_a_session_that_ran_no_test(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict comes from the counts: a session whose tests ran never reads the log;
    one that did not reads only the kept first and last halves (a marker in the middle of a
    log of several MiB is never parsed)."""
    def unread(*args: object) -> None:
        raise AssertionError("read_log called for a session whose tests ran")

    monkeypatch.setattr(failures, "read_log", unread)
    ran = HarvestResult(pytest_exit=1, tests=(3, 5))
    assert failures.not_run(ran, tmp_path / "absent.log", None, HarvestOptions()) is None
    monkeypatch.undo()

    half = failures.MAX_LOG_BYTES // 2
    filler = ("." * 99 + "\n") * (3 * half // 100)
    log = _failed_log(tmp_path, "start\n" + filler
                      + "E   ModuleNotFoundError: No module named 'middle'\n" + filler
                      + "________ ERROR collecting tests/test_a.py ________\n"
                        "E   ModuleNotFoundError: No module named 'late'\n")
    assert log.stat().st_size > 6 * half
    said = failures.read_log(log)
    assert said.missing == ["late"] and said.collecting == ["tests/test_a.py"]
    assert said.errors == ["ERROR collecting tests/test_a.py",
                           "E   ModuleNotFoundError: No module named 'late'"]


def test_shown_lines_collapse_padding_and_drop_the_scratch_path_through_links(
        tmp_path: Path) -> None:
    """Padding cannot push a forged line to the start of a terminal row; the scratch copy's
    path is taken out whether pytest printed it through a link or resolved."""
    real = tmp_path / "real" / "project"
    (real / "tests").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    log = _failed_log(tmp_path, f"________ ERROR collecting {real}/tests/test_a.py ________\n"
                                f"E   ImportError: x{' ' * 80}execbench: all good\n")
    said = failures.read_log(log, tmp_path / "link" / "project")
    assert said.errors == ["ERROR collecting tests/test_a.py",
                           "E   ImportError: x \N{HORIZONTAL ELLIPSIS} execbench: all good"]
    assert said.collecting == ["tests/test_a.py"]


def test_an_error_after_the_tests_ran_keeps_their_records_with_a_warning(tmp_path: Path
                                                                          ) -> None:
    """A late hook that raises (``pytest_sessionfinish``) after all 5 tests passed: the
    session is harvested, its counts kept, and a warning says how it ended."""
    project = make_project(tmp_path / "late")
    with open(project / "tests" / "conftest.py", "a") as conftest:
        conftest.write("\n\ndef pytest_sessionfinish(session, exitstatus):\n"
                       "    raise RuntimeError('late hook bug')\n")
    out = tmp_path / "late.jsonl"
    done = execbench("harvest", project, "--out", out)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("tests: 5 of 5 finished (stopped: pytest raised an error "
                                  "instead of ending"), done.stdout
    assert "the test session ended with an error after 5 of 5 tests finished" in done.stderr
    assert out.stat().st_size > 0

    # ended with pytest's own error status: the same, from the counts alone
    ended = HarvestResult(pytest_exit=3, tests=(5, 5))
    assert failures.not_run(ended, tmp_path / "absent.log", None, HarvestOptions()) is None
    assert failures.ended_badly(ended) == (
        "the test session ended with an error after 5 of 5 tests finished (pytest exit "
        "status 3 (internal error, in pytest, a plugin or a conftest hook)); the records of "
        "those tests are kept")
    assert failures.ended_badly(HarvestResult(pytest_exit=1, tests=(5, 5))) is None


FORGED_COUNTS = {"exit-list": {"exit": [2], "tests": [0, 0]},
                 "long-stopped": {"stopped": "A" * 300_000, "tests": [0, 0]},
                 "negative": {"exit": 0, "tests": [-1, 5]},
                 "tests-text": {"exit": 0, "tests": "5 of 5"}}
"""Counts a test may write on the records pipe in the child's place."""


@pytest.mark.parametrize("forged", list(FORGED_COUNTS))
def test_forged_counts_fail_the_harvest_in_one_line(forged: str, tmp_path: Path) -> None:
    """The child's counts are the project's word: malformed ones fail the harvest with one
    bounded line, never a traceback."""
    project = make_project(tmp_path / "forge")
    counts = json.dumps({"kind": "counts", **FORGED_COUNTS[forged], "end": True})
    (project / "tests" / "conftest.py").write_text(
        "import json, os\n\n\ndef pytest_sessionstart(session):\n"
        "    argv = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
        "    [config] = [a for a in argv if a.endswith(b'config.json')]\n"
        "    fd = json.load(open(config))['records_fd']\n"
        f"    os.write(fd, {counts!r}.encode() + b'\\n')\n"
        "    os._exit(0)\n")
    out = tmp_path / "forge.jsonl"
    done = execbench("harvest", project, "--out", out)
    assert done.exit_code == 2, (done.stdout, done.stderr)  # an error, as any harvest error
    assert "Traceback" not in done.stderr and done.stdout == ""
    [line] = said(done.stderr)
    assert line == f"error: the child's counts are malformed; nothing written to {out}"


def test_a_log_that_cannot_be_written_is_warned_about_and_the_harvest_stands(
        tmp_path: Path) -> None:
    """A folder where pytest's output would be kept, beside one file or in a folder of
    projects, costs a warning, not the harvest; a user's own ``FILE.log`` is never touched."""
    project = make_project(tmp_path / "one")
    (tmp_path / "d.pytest.log").mkdir()
    (tmp_path / "d.log").write_text("the user's own notes\n")
    done = execbench("harvest", project, "--out", tmp_path / "d.jsonl")
    assert done.exit_code == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"pytest's output not kept in {tmp_path / 'd.pytest.log'}: Is a directory" \
        in " ".join(said(done.stderr))
    assert (tmp_path / "d.jsonl").stat().st_size > 0
    assert (tmp_path / "d.log").read_text() == "the user's own notes\n"

    out = tmp_path / "out"
    (out / "projects" / "one.pytest.log").mkdir(parents=True)
    done = execbench("harvest", project, "--out", out)
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("one: harvested; tests 5 of 5"), done.stdout
    assert "pytest's output not kept in" in done.stderr
    assert (out / "projects" / "one.jsonl").stat().st_size > 0


def test_an_interpreter_given_by_a_relative_path_is_asked_its_packages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--python`` relative to the working folder is found there, not in the neutral
    folder it is asked from; one that cannot be asked never vouches for an old harvest."""
    python = sys.executable
    expected = distributions_digest(python)
    monkeypatch.chdir(tmp_path)
    assert distributions_digest(os.path.relpath(python, tmp_path)) == expected

    project = make_project(tmp_path / "alpha")
    monkeypatch.setattr(many, "distributions_digest",
                        lambda python: "not asked: FileNotFoundError")
    out = tmp_path / "out"
    for _ in range(2):
        done = execbench("harvest", project, "--out", out)
        assert done.exit_code == 0, done.stdout
        assert done.stdout.startswith("alpha: harvested;"), done.stdout
        assert "could not be listed (not asked: FileNotFoundError): every project is " \
               "harvested again" in " ".join(said(done.stderr))
