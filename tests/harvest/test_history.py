"""``execbench harvest --changed-since DATE`` on a git repository the test makes with dated
commits: functions whose lines were last committed after DATE are kept with that commit's
date; the repository's configuration runs nothing; uncommitted edits leave their file
undated."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import date
from pathlib import Path

import pytest

from execbench.harvest.history import head, since_commit
from execbench.harvest.listing import list_functions
from execbench.harvest.options import HarvestError
from tests.harvest.test_project import read
from tests.helpers.cli import execbench

OLD = '''\
def kept_old(values):
    total = 0
    for value in values:
        total += value
    return total


def touched(text):
    words = text.split()
    return [word.upper() for word in words]
'''

NEW = OLD.replace("return [word.upper() for word in words]",
                  "return [word.title() for word in words]") + '''

def added(count):
    if count < 0:
        return []
    return list(range(count))
'''

TESTS = '''\
from tool.words import added, kept_old, touched


def test_all():
    assert kept_old([1, 2]) == 3
    assert touched("a b") == ["A", "B"]
    assert added(2) == [0, 1]
'''


def _git(repo: Path, *args: str, when: str = "") -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    said = subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.org",
                           "-c", "init.defaultBranch=main", *args], cwd=repo, env=env,
                          capture_output=True, text=True, check=True)
    return said.stdout.strip()


def _commit(repo: Path, files: dict[str, str], when: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"at {when}", when=when)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """tool/words.py committed on 2023-05-01, then on 2024-06-01 one line of ``touched``
    changed and ``added`` added; returns the checkout and the second commit."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, {"tool/__init__.py": "", "tool/words.py": OLD, "tests/test_words.py":
                   TESTS.replace(", added", "").replace("    assert added(2) == [0, 1]\n", "")},
            "2023-05-01T10:00:00+00:00")
    second = _commit(root, {"tool/words.py": NEW, "tests/test_words.py": TESTS},
                     "2024-06-01T15:00:00+00:00")
    return root, second


def _hostile_configuration(root: Path, marker: Path) -> None:
    """After the commits (git add would run the filter): every program the repository's
    own configuration could make git start writes ``marker``."""
    run = f"sh -c 'echo ran >> {marker}'"
    for key, value in (("core.fsmonitor", run), ("filter.evil.clean", run),
                       ("filter.evil.smudge", run), ("diff.evil.textconv", run),
                       ("core.pager", run)):
        _git(root, "config", key, value)
    (root / ".git" / "info" / "attributes").write_text("*.py filter=evil diff=evil\n")
    hooks = root / ".git" / "hooks"
    for name in ("post-checkout", "pre-commit", "post-index-change"):
        (hooks / name).write_text(f"#!/bin/sh\necho ran >> {marker}\n")
        (hooks / name).chmod(0o755)


def test_functions_changed_after_the_day_are_kept_with_their_commit(
        repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, second = repo
    marker = tmp_path / "ran"
    _hostile_configuration(root, marker)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # the user's, not applied
    out = tmp_path / "words.jsonl"
    done = execbench("harvest", root, "--changed-since", "2024-01-01", "--out", out)
    assert done.exit_code == 0, done.stderr
    assert "listed functions by date: 1 changed, 1 new, 1 unchanged" in done.stdout, done.stderr
    records = read(out)
    assert sorted(records) == ["tool.words.added", "tool.words.touched"]
    assert records["tool.words.added"]["meta"] == {
        "file": "tool/words.py", "line": 13, "date": "2024-06-01",
        "committed": "2024-06-01T15:00:00+00:00", "commit": second, "since": "new"}
    assert records["tool.words.touched"]["meta"]["since"] == "changed"
    assert records["tool.words.touched"]["meta"]["date"] == "2024-06-01"
    assert not marker.exists(), marker.read_text()

    # the last commit's own day keeps nothing; a day before the first finds all three new
    functions = list_functions(root, 200, lambda message: None)
    for day, states in ((date(2024, 6, 1), ["unchanged"] * 3),
                        (date(2023, 4, 30), ["new"] * 3)):
        stamps = since_commit(root, day, lambda message: None).stamps(functions)
        assert [stamps[f.id].state for f in functions] == states


def test_uncommitted_edits_leave_their_file_undated(repo: tuple[Path, str],
                                                    tmp_path: Path) -> None:
    root, _ = repo
    (root / "tool" / "words.py").write_text(NEW + "\n# an edit not committed\n")
    out = tmp_path / "words.jsonl"
    done = execbench("harvest", root, "--changed-since", "2024-01-01", "--out", out)
    assert done.exit_code == 0, done.stderr
    assert "tool/words.py: its functions have no date: differs from the last commit " \
        "(commit it to date its lines)" in " ".join(done.stderr.split())
    assert "listed functions by date: 3 undated" in done.stdout
    assert read(out) == {}


def test_a_folder_outside_git_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HarvestError, match="not a git checkout with a commit"):
        head(tmp_path)
    (tmp_path / "p").mkdir()
    done = execbench("harvest", tmp_path / "p", "--changed-since", "2024-01-01",
                     "--out", tmp_path / "p.jsonl")
    assert done.exit_code == 2 and "not a git checkout with a commit" in done.stderr
    summary = tmp_path / "many" / "projects" / "p.json"
    execbench("harvest", tmp_path / "p", "--changed-since", "2024-01-01",
              "--out", tmp_path / "many")
    assert "not a git checkout" in json.loads(summary.read_text())["error"]
