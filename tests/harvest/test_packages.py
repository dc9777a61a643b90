"""``execbench harvest --package NAME --new-since DATE`` against an index the test serves on
127.0.0.1: only the functions new or changed since the release before DATE are kept, each
dated by its release; a package that cannot be had is reported and the others go on; a
second run downloads nothing it has."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from execbench.executors import ExecutorChoice
from execbench.harvest.many import harvest_projects, package_projects
from execbench.harvest.options import HarvestOptions
from execbench.harvest.releases import Wanted
from tests.harvest.package_index import Index, sdist, serving
from tests.harvest.test_project import read
from tests.helpers.cli import execbench
from tests.helpers.oracle import oracle_right_on_output
from tests.helpers.ray_cluster import ray_cluster

TESTS_V1 = '''\
from tinycalc.core import scale, total


def test_total():
    assert total([1, 2, 3]) == 6


def test_scale():
    assert scale([1, 2], 3) == [3, 6]
'''

CORE_V1 = '''\
def total(values):
    result = 0
    for value in values:
        result += value
    return result


def scale(values, factor):
    out = []
    for value in values:
        out.append(value * factor)
    return out
'''

CORE_V2 = '''\
def total(values):
    """The sum; only this docstring and the comment below are new."""
    result = 0
    for value in values:  # one at a time
        result += value
    return result


def scale(values, factor):
    if factor < 0:
        raise ValueError("negative factor")
    return [value * factor for value in values]


def mean(values):
    if not values:
        return 0.0
    return total(values) / len(values)
'''

TESTS_V2 = TESTS_V1.replace("import scale, total", "import mean, scale, total") + '''

def test_mean():
    assert mean([1, 2, 3]) == 2.0
    assert mean([]) == 0.0
'''

SETUP = '''\
from pathlib import Path
Path({marker!r}).write_text("setup.py ran")
'''


def _release(version: str, core: str, tests: str, marker: Path) -> bytes:
    return sdist("tinycalc", version, {
        "pyproject.toml": f'[project]\nname = "tinycalc"\nversion = "{version}"\n',
        "setup.py": SETUP.format(marker=str(marker)),
        "tinycalc/__init__.py": "", "tinycalc/core.py": core,
        "tests/test_core.py": tests})


@pytest.fixture
def index(tmp_path: Path):
    """tinycalc 1.0 (January 2024), 2.0 (March) and 2.1 (April); brokenpkg, whose file
    is not the one the index's hash names; nothing for missingpkg."""
    marker = tmp_path / "setup-ran"
    found = Index()
    found.add("tinycalc", "1.0", _release("1.0", CORE_V1, TESTS_V1, marker),
              "2024-01-10T09:00:00.000000Z")
    found.add("tinycalc", "2.0", _release("2.0", CORE_V2, TESTS_V2, marker),
              "2024-03-05T12:30:00.000000Z")
    found.add("tinycalc", "2.1", _release("2.1", CORE_V2, TESTS_V2, marker),
              "2024-04-01T08:00:00.000000Z")
    found.add("brokenpkg", "1.0", sdist("brokenpkg", "1.0", {"a.py": ""}),
              "2024-03-01T00:00:00Z", sha256="0" * 64)
    with serving(found):
        yield found, marker


def test_only_new_and_changed_functions_are_kept_dated_and_failures_stay_alone(
        index: tuple[Index, Path], tmp_path: Path) -> None:
    served, marker = index
    out = tmp_path / "fresh"
    command = ("harvest", "--package", "tinycalc", "--package", "brokenpkg",
               "--package", "missingpkg", "--new-since", "2024-02-01",
               "--pip-args", f"--index-url {served.url}", "--out", out)
    done = execbench(*command)
    assert done.exit_code == 1, done.stderr
    lines = done.stdout.splitlines()
    # 2.0 is the first release after 2024-02-01 (not 2.1, uploaded later), compared with
    # 1.0: mean is new, scale changed, total unchanged (a docstring and a comment only)
    assert lines[0] == ("tinycalc: harvested; tests 3 of 3; functions 2 kept, calls 3 kept; "
                        "release 2.0 of 2024-03-05, against 1.0; listed functions 1 new, "
                        "1 changed, 1 unchanged")
    assert lines[1].startswith("brokenpkg: failed: brokenpkg-1.0.tar.gz: its sha256 is ")
    assert lines[1].endswith(f"the index says {'0' * 64}: not used")
    assert lines[2] == "missingpkg: failed: " \
        f"{served.url}/missingpkg/: the index answered 404 Not Found"

    records = read(out / "harvest.jsonl")
    assert sorted(records) == ["tinycalc:tinycalc.core.mean", "tinycalc:tinycalc.core.scale"]
    mean, scale = records["tinycalc:tinycalc.core.mean"], records["tinycalc:tinycalc.core.scale"]
    assert mean["meta"] == {"file": "tinycalc/core.py", "line": 15, "date": "2024-03-05",
                            "released": "2024-03-05T12:30:00+00:00", "package": "tinycalc",
                            "version": "2.0", "since": "new", "compared_with": "1.0",
                            "project": "tinycalc"}
    assert scale["meta"]["since"] == "changed" and scale["meta"]["date"] == "2024-03-05"
    assert len(mean["calls"]) == 2 and len(scale["calls"]) == 1

    summary = json.loads((out / "projects" / "tinycalc.json").read_text())
    assert summary["ages"] == {"new": 1, "changed": 1, "unchanged": 1, "undated": 0}
    assert summary["release"]["version"] == "2.0"
    assert summary["release"]["compared_with"] == "1.0"
    assert summary["functions"]["unchanged since 1.0"] == 1
    assert not marker.exists(), "the package's setup.py ran"

    # the dates travel: build keeps what is dated after a day, as for contest programs
    built = execbench("build", out / "harvest.jsonl", "--tasks", "output",
                      "--after", "2024-03-01", "--out", tmp_path / "suite")
    assert built.exit_code == 0, built.stderr
    instances = [json.loads(line) for line in
                 (tmp_path / "suite" / "instances.jsonl").read_text().splitlines()]
    assert len(instances) == 3 and {i["date"] for i in instances} == {"2024-03-05"}
    none = execbench("build", out / "harvest.jsonl", "--tasks", "output",
                     "--before", "2024-03-05", "--out", tmp_path / "none")
    assert none.exit_code == 2 and "no usable program in the given sources" in none.stderr

    # a second run: tinycalc is not downloaded or harvested again, the failures retried
    served.requests.clear()
    again = execbench(*command)
    assert again.exit_code == 1
    assert again.stdout.splitlines()[0].startswith("tinycalc: already harvested; tests 3 of 3")
    assert not [path for path in served.requests if "tinycalc" in path and "files" in path]
    assert "/files/brokenpkg-1.0.tar.gz" in served.requests
    assert read(out / "harvest.jsonl") == records


def test_a_package_without_new_since_is_its_latest_release_dated(
        index: tuple[Index, Path], tmp_path: Path) -> None:
    served, _ = index
    done = execbench("harvest", "--package", "tinycalc", "--pip-args",
                     f"--index-url {served.url}", "--out", tmp_path / "out")
    assert done.exit_code == 0, done.stderr
    records = read(tmp_path / "out" / "harvest.jsonl")
    assert sorted(records) == ["tinycalc:tinycalc.core.mean", "tinycalc:tinycalc.core.scale",
                               "tinycalc:tinycalc.core.total"]
    assert {r["meta"]["version"] for r in records.values()} == {"2.1"}
    assert {r["meta"]["date"] for r in records.values()} == {"2024-04-01"}
    assert "since" not in records["tinycalc:tinycalc.core.total"]["meta"]


def test_package_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    said = execbench("harvest", "--new-since", "2024-01-01", tmp_path, "--out", tmp_path / "o")
    assert said.exit_code == 2 and "--new-since picks releases of packages" in said.stderr
    said = execbench("harvest", "--package", "x", "--changed-since", "2024-01-01",
                     "--out", tmp_path / "o")
    assert said.exit_code == 2 and "--changed-since dates git checkouts' lines" in said.stderr
    said = execbench("harvest", "--package", "x", "--new-since", "soon", "--out", tmp_path)
    assert said.exit_code == 2 and "--new-since: 'soon' is not a date" in said.stderr
    said = execbench("harvest", "--package", "not a name", "--out", tmp_path / "o")
    assert said.exit_code == 2 and "'not a name' is not a package name" in said.stderr
    said = execbench("harvest", "--package", "x", "--package", "X", "--out", tmp_path / "o")
    assert said.exit_code == 2 and "the package 'x' is named twice" in said.stderr


@pytest.mark.slow
def test_fresh_code_from_the_real_registry_builds_a_suite_the_oracle_passes(
        tmp_path: Path) -> None:
    """toolz and idna: small, pure Python, no dependencies, their tests in their source
    distributions and quick (about 15 s for both, recorded, on two cores); both released a
    minor version in October 2025, after a year without one. Needs the index (PyPI, or
    the user's pip settings)."""
    out = tmp_path / "fresh"
    done = execbench("harvest", "--package", "toolz", "--package", "idna",
                     "--new-since", "2025-10-01", "--out", out)
    assert done.exit_code == 0, done.stderr
    summaries = {name: json.loads((out / "projects" / f"{name}.json").read_text())
                 for name in ("toolz", "idna")}
    assert [(s["release"]["version"], s["release"]["compared_with"])
            for s in summaries.values()] == [("1.1.0", "1.0.0"), ("3.11", "3.10")]
    assert summaries["toolz"]["ages"] == {"new": 1, "changed": 7, "unchanged": 154,
                                          "undated": 0}
    assert summaries["idna"]["ages"] == {"new": 2, "changed": 76, "unchanged": 36,
                                         "undated": 0}
    records = read(out / "harvest.jsonl")
    assert len(records) == 3
    assert {r["meta"]["since"] for r in records.values()} <= {"new", "changed"}
    assert all(r["meta"]["date"] > "2025-10-01" for r in records.values())

    oracle_right_on_output(out / "harvest.jsonl", tmp_path, "--after", "2025-10-01")


@pytest.mark.slow
def test_packages_harvested_on_ray_equal_the_local_harvest(index: tuple[Index, Path],
                                                           tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    served, _ = index
    projects = package_projects([Wanted("tinycalc")], date(2024, 2, 1), served.url)
    with ray_cluster(tmp_path / "cluster", nodes=1) as address:
        on_ray = harvest_projects(projects, tmp_path / "ray", HarvestOptions(),
                                  executor=ExecutorChoice("ray", address))
    here = harvest_projects(projects, tmp_path / "here", HarvestOptions())
    assert [o.state for o in on_ray] == [o.state for o in here] == ["harvested"]
    assert on_ray[0].summary == here[0].summary
    assert (tmp_path / "ray" / "harvest.jsonl").read_bytes() == \
        (tmp_path / "here" / "harvest.jsonl").read_bytes()
    # each harvest downloaded both releases itself (the Ray node its own)
    assert served.requests.count("/files/tinycalc-2.0.tar.gz") == 2
