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

from execbench.harvest import history
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


def _clean_env(repo: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


def _git(repo: Path, *args: str, when: str = "") -> str:
    env = _clean_env(repo)
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


def _undated(root: Path) -> dict[str, str]:
    """Why each file of the checkout has no dates (none: every file dated)."""
    return since_commit(root, date(2024, 1, 1), lambda message: None).undated


def test_a_repository_posing_as_a_partial_clone_cannot_make_git_fetch(
        repo: tuple[Path, str], tmp_path: Path) -> None:
    """A missing object in a partial clone is fetched from its promisor remote, which
    starts the remote's upload-pack command or ssh: programs the repository names."""
    root, _ = repo
    marker = tmp_path / "ran"
    blob = _git(root, "rev-parse", "HEAD:tool/words.py")
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in (("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"),
                       ("remote.origin.url", str(tmp_path)),
                       ("remote.origin.uploadpack", f"sh -c 'echo ran >> {marker}; exit 1'"),
                       ("core.sshCommand", f"sh -c 'echo ran >> {marker}; exit 1' --")):
        _git(root, "config", key, value)
    assert "tool/words.py" in _undated(root)
    _git(root, "config", "remote.origin.url", "ssh://example.org/words")
    assert "tool/words.py" in _undated(root)
    assert not marker.exists(), marker.read_text()


def test_files_the_repository_names_for_blame_are_not_read(
        repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mailmap or ignore-revs file may be a FIFO nobody writes (git would wait on it
    until stopped) or a missing file (git would fail): none of them is opened."""
    root, _ = repo
    monkeypatch.setattr(history, "SECONDS", 30.0)  # what a read that waits would cost
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.mkfifo(root / ".mailmap")
    for key, value in (("mailmap.file", str(fifo)), ("mailmap.blob", "HEAD:tool/words.py"),
                       ("blame.ignoreRevsFile", str(tmp_path / "missing"))):
        _git(root, "config", key, value)
    assert _undated(root) == {}


def test_a_huge_blob_in_the_history_is_stopped_at_the_memory_bound(
        repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """24 MB of one line repeated compress to a few KB; blame of the file holds it
    several times over."""
    root, _ = repo
    _commit(root, {"tool/big.py": "x = 1\n" * 4_000_000}, "2024-07-01T10:00:00+00:00")
    _commit(root, {"tool/big.py": "def small():\n    return 1\n"}, "2024-07-02T10:00:00+00:00")
    monkeypatch.setattr(history, "MAX_MEMORY_BYTES", 64 << 20)
    undated = _undated(root)
    assert list(undated) == ["tool/big.py"]
    assert "git blame failed: fatal: Out of memory" in undated["tool/big.py"]


def _recommitted(root: Path, committer_time: str) -> None:
    """HEAD replaced by the same commit claiming another committer time (git itself would
    not write it: it refuses such dates)."""
    said = _git(root, "cat-file", "commit", "HEAD")
    forged = "\n".join(" ".join([*line.split(" ")[:-2], committer_time, "+0000"])
                       if line.startswith("committer ") else line
                       for line in said.split("\n")) + "\n"
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=root,
                          env=_clean_env(root), input=forged, capture_output=True, text=True,
                          check=True)
    _git(root, "update-ref", "HEAD", made.stdout.strip())


@pytest.mark.parametrize(("committer_time", "said"), [
    ("99999999999999", "git blame gave a time that is no date: b'99999999999999'"),
    ("4102444800", "a commit is dated 2100-01-01, in the future"),
])
def test_a_commit_time_out_of_range_or_in_the_future_undates_its_file(
        repo: tuple[Path, str], committer_time: str, said: str) -> None:
    root, _ = repo
    _recommitted(root, committer_time)
    functions = list_functions(root, 200, lambda message: None)
    dating = since_commit(root, date(2024, 1, 1), lambda message: None)
    assert dating.undated == {"tool/words.py": said}
    assert {dating.stamps(functions)[f.id].state for f in functions} == {"undated"}


def test_the_committer_time_dates_a_line_not_the_author_time(repo: tuple[Path, str]) -> None:
    """An author time set years back does not hide a line committed after the day."""
    root, _ = repo
    (root / "tool" / "late.py").write_text("def late(x):\n    return x + 1\n")
    _git(root, "add", "-A")
    env = {"GIT_AUTHOR_DATE": "2019-01-01T00:00:00+00:00",
           "GIT_COMMITTER_DATE": "2024-08-01T00:00:00+00:00"}
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "commit",
                    "-q", "-m", "backdated"], cwd=root, check=True,
                   env={**_clean_env(root), **env})
    functions = [f for f in list_functions(root, 200, lambda message: None)
                 if f.file == "tool/late.py"]
    [stamp] = since_commit(root, date(2024, 1, 1), lambda message: None).stamps(
        functions).values()
    assert (stamp.state, stamp.meta["date"]) == ("new", "2024-08-01")


def test_a_link_out_of_the_checkout_is_neither_listed_nor_dated(
        repo: tuple[Path, str], tmp_path: Path) -> None:
    root, _ = repo
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret():\n    return 1\n")
    (root / "tool" / "linked.py").symlink_to(outside / "secret.py")
    (root / "elsewhere").symlink_to(outside)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "links", when="2024-09-01T00:00:00+00:00")
    dating = since_commit(root, date(2024, 1, 1), lambda message: None)
    assert sorted(dating.lines) == ["tool/words.py"]
    assert dating.undated == {}


def test_a_checkout_in_a_folder_of_its_repository_is_dated(repo: tuple[Path, str]) -> None:
    """git's work tree is an empty folder, so paths are given from the repository's top."""
    root, second = repo
    dating = since_commit(root / "tool", date(2024, 1, 1), lambda message: None)
    assert (sorted(dating.lines), dating.undated) == (["words.py"], {})
    assert {commit for _, commit in dating.lines["words.py"]} == {
        _git(root, "rev-parse", "HEAD~1"), second}
