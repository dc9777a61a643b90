"""``execbench harvest`` over several projects: one file per project, a merged file in the
order given, a failed project reported while the others go on, and a resume that redoes
only what is missing or was harvested with other settings."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from execbench.harvest import many
from execbench.harvest.deps import TOO_DEEP
from execbench.harvest.many import Project, project_key, projects_from
from execbench.harvest.options import HarvestError, HarvestOptions, HarvestResult
from execbench.harvest.project import harvest
from tests.harvest.test_project import make_project, read
from tests.helpers.cli import execbench
from tests.helpers.oracle import oracle_right_on_output


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project folder, and another packed as a ``.tar.gz``."""
    base = tmp_path_factory.mktemp("many")
    alpha = make_project(base / "alpha")
    beta = make_project(base / "src" / "beta",
                        "\n\ndef test_more():\n    assert total([9]) == 27\n")
    archive = base / "beta.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(beta, arcname="beta")
    return alpha, archive


def _broken_archive(folder: Path) -> Path:
    broken = folder / "broken.tar.gz"
    broken.write_bytes(b"this is no archive")
    return broken


def test_each_project_alone_and_merged_in_the_order_given(two: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    alpha, beta = two
    broken = _broken_archive(tmp_path)
    done = execbench("harvest", beta, broken, alpha, "--out", tmp_path / "out")
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("beta: harvested; tests 6 of 6")
    assert lines[1].startswith("broken: failed: cannot unpack")
    assert lines[2].startswith("alpha: harvested; tests 5 of 5")
    projects = tmp_path / "out" / "projects"
    assert not (projects / "broken.jsonl").exists()
    assert "cannot unpack" in json.loads((projects / "broken.json").read_text())["error"]

    # each project's records are those of a harvest of it alone, ids prefixed
    alone = tmp_path / "alpha-alone.jsonl"
    harvest(alpha, alone, HarvestOptions())
    expected = {f"alpha:{key}": {**record, "id": f"alpha:{key}",
                                 "meta": {**record["meta"], "project": "alpha"}}
                for key, record in read(alone).items()}
    assert read(projects / "alpha.jsonl") == expected
    merged = (tmp_path / "out" / "harvest.jsonl").read_bytes()
    assert merged == b"".join((projects / f"{name}.jsonl").read_bytes()
                              for name in ("beta", "alpha"))
    ids = [json.loads(line)["id"] for line in merged.splitlines()]
    assert ids[0].startswith("beta:") and ids[-1].startswith("alpha:")
    assert len(set(ids)) == len(ids)

    # the merged file is a source like any harvest
    oracle_right_on_output(tmp_path / "out" / "harvest.jsonl", tmp_path)

    # a resume redoes the failed project only; mended, it joins the merged file in place
    broken.unlink()
    make_project(tmp_path / "broken")
    again = execbench("harvest", beta, tmp_path / "broken", alpha, "--out", tmp_path / "out")
    assert again.exit_code == 0, again.stdout
    assert [line.split(";")[0] for line in again.stdout.splitlines()] == [
        "beta: already harvested", "broken: harvested", "alpha: already harvested"]
    ids = [json.loads(line)["id"] for line in
           (tmp_path / "out" / "harvest.jsonl").read_text().splitlines()]
    assert [i.split(":")[0] for i in ids] == sorted((i.split(":")[0] for i in ids),
                                                    key=["beta", "broken", "alpha"].index)


def test_other_settings_or_other_bytes_are_harvested_again(two: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    alpha, _ = two
    copy = make_project(tmp_path / "alpha")
    [project] = projects_from([copy])
    key = project_key(project, HarvestOptions())
    assert project_key(project, HarvestOptions(seed=1)) != key
    assert project_key(project, HarvestOptions(test_timeout=5)) != key
    assert project_key(projects_from([alpha])[0], HarvestOptions()) == key  # same bytes
    (copy / "pkg" / "__pycache__").mkdir()
    (copy / "pkg" / "__pycache__" / "core.pyc").write_bytes(b"ignored, as the copy does")
    assert project_key(project, HarvestOptions()) == key
    (copy / "pkg" / "core.py").write_text((copy / "pkg" / "core.py").read_text() + "\n# edit\n")
    assert project_key(project, HarvestOptions()) != key

    listing = tmp_path / "projects.txt"
    listing.write_text("# the copy\nalpha\n\n")
    first = execbench("harvest", "--projects", listing, "--out", tmp_path / "out")
    assert first.stdout.startswith("alpha: harvested")
    same = execbench("harvest", "--projects", listing, "--out", tmp_path / "out")
    assert same.stdout.startswith("alpha: already harvested")
    other = execbench("harvest", "--projects", listing, "--seed", "3", "--out", tmp_path / "out")
    assert other.stdout.startswith("alpha: harvested")


def test_an_archive_that_would_write_outside_its_folder_fails_alone(two: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    alpha, _ = two
    evil = tmp_path / "evil.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as packed:
        packed.writestr("../outside.py", "x = 1\n")
    evil.write_bytes(buffer.getvalue())
    done = execbench("harvest", evil, alpha, "--out", tmp_path / "out")
    assert done.exit_code == 1
    assert "evil: failed: " in done.stdout and "outside the project" in done.stdout
    assert "alpha: harvested" in done.stdout
    assert not (tmp_path / "outside.py").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere", "--out", "OUT"], "no such project folder or archive: nowhere"),
    (["--out", "OUT"], "no project given"),
    (["A", "A", "--out", "OUT"], "two projects are named 'alpha'"),
    (["NOTES", "--out", "OUT"], "is neither a folder nor an archive"),
    (["A", "B", "--out", "OUT.jsonl"], "several projects are written to a folder"),
    (["--projects", "LIST", "--out", "OUT"], "cannot read the project list"),
])
def test_bad_input_is_one_line(two: tuple[Path, Path], tmp_path: Path, args: list[str],
                               message: str) -> None:
    alpha, beta = two
    (tmp_path / "notes.txt").write_text("x")
    names = {"A": alpha, "B": beta, "OUT": tmp_path / "out", "OUT.jsonl": tmp_path / "o.jsonl",
             "NOTES": tmp_path / "notes.txt", "LIST": tmp_path / "missing.txt"}
    done = execbench("harvest", *[names.get(arg, arg) for arg in args])
    assert done.exit_code == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_one_archive_into_one_file(two: tuple[Path, Path], tmp_path: Path) -> None:
    _, beta = two
    done = execbench("harvest", beta, "--out", tmp_path / "beta.jsonl")
    assert done.exit_code == 0, done.stderr
    assert "pkg.core.total" in read(tmp_path / "beta.jsonl")


def test_projects_from_refuses_what_it_cannot_harvest(tmp_path: Path) -> None:
    with pytest.raises(HarvestError, match="no project given"):
        projects_from([])


def _hostile(root: Path) -> Path:
    """A project whose author nests everything that was once read by recursion: a chain of
    1,500 ``-r`` includes, a TOML array 3,000 deep and a module whose one expression has
    50,000 operands. Each once ended the whole run with a ``RecursionError``."""
    make_project(root)
    (root / "requirements.txt").write_text("-r r1.txt\n")
    for number in range(1, 1500):
        (root / f"r{number}.txt").write_text(f"-r r{number + 1}.txt\n")
    (root / "pyproject.toml").write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    (root / "pkg" / "deep.py").write_text("def f(x):\n    y = x" + "+x" * 50_000
                                          + "\n    return y\n")
    return root


def test_a_project_nested_too_deeply_for_recursion_ends_only_itself(
        two: tuple[Path, Path], tmp_path: Path) -> None:
    alpha, _ = two
    hostile = _hostile(tmp_path / "hostile")
    done = execbench("harvest", hostile, alpha, "--install-deps", "--out", tmp_path / "out")
    assert done.exit_code in (0, 1), done.stderr
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    lines = done.stdout.splitlines()
    # pytest itself reads pyproject.toml: in the jail, where it ends that project's tests
    assert lines[0].startswith(("hostile: harvested; tests 5 of 5",
                                "hostile: failed: the tests did not run: ")), lines
    if "failed" in lines[0]:  # pytest's last lines name the error; its hint follows
        shown = lines[1:lines.index(next(line for line in lines if "hint:" in line))]
        assert any("RecursionError" in line for line in shown), lines
    assert next(line for line in lines if line.startswith("alpha: ")).startswith(
        "alpha: harvested; tests 5 of 5"), lines
    warned = [line.partition("hostile: ")[2] for line in done.stderr.splitlines()]
    assert "pyproject.toml not read: nested too deeply (RecursionError)" in warned
    assert "pkg/deep.py: not read (nested too deeply: RecursionError)" in warned
    assert f"r16.txt: '-r r17.txt' not installed: {TOO_DEEP}" in warned


def test_any_error_of_one_project_is_its_own(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a project's harvest raises is that project's failure, in one line; the
    next project is harvested and merged."""
    def harvest_or_fail(root: Path, out: Path, *args: object, **kwargs: object
                        ) -> HarvestResult:
        if root.name == "bad":
            raise RecursionError("maximum recursion depth exceeded\nwhile reading it")
        out.write_text(json.dumps({"id": "f", "code": "", "calls": []}) + "\n")
        return HarvestResult(pytest_exit=0)

    monkeypatch.setattr(many, "harvest", harvest_or_fail)
    projects = [Project("bad", tmp_path / "bad"), Project("good", tmp_path / "good")]
    for project in projects:
        project.path.mkdir()
    outcomes = many.harvest_projects(projects, tmp_path / "out", HarvestOptions())
    assert [o.state for o in outcomes] == ["failed", "harvested"]
    assert outcomes[0].summary["error"] == ("RecursionError: maximum recursion depth "
                                            "exceeded while reading it")
    merged = (tmp_path / "out" / "harvest.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in merged] == ["good:f"]
