"""The three shared projects harvested here once per test run, for every test that needs
a local harvest of them: the real-projects checks read each project's records from it and
the Ray tests compare theirs to it. more-itertools' suite takes minutes under the tracer,
so harvesting it once for all of them keeps CI's slow run short."""

from __future__ import annotations

import json
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from execbench.harvest import jail
from execbench.harvest.many import harvest_projects, projects_from
from execbench.harvest.options import HarvestOptions
from tests.helpers.data import SHARED_DATA

PROJECTS = SHARED_DATA / "projects"
ARCHIVES = ["inflection-0.5.1.tar.gz", "toolz-1.2.0.tar.gz", "more_itertools-11.2.1.tar.gz"]
"""The first goes to a harvest as a folder, the others as archives (each way tested)."""


@dataclass(frozen=True)
class LocalHarvest:
    given: list[Path]
    """What the harvest was given, in ``ARCHIVES``' order."""
    out: Path
    """Its output folder: ``harvest.jsonl``, and ``projects/NAME.jsonl`` and ``.json``."""

    def records(self, name: str) -> Path:
        return self.out / "projects" / f"{name}.jsonl"

    def summary(self, name: str) -> Path:
        return self.out / "projects" / f"{name}.json"


def unpacked(archive: str, into: Path) -> Path:
    """A shared project's archive unpacked into ``into``; its root folder."""
    with tarfile.open(PROJECTS / archive) as tar:
        tar.extractall(into, filter="data")
    [root] = [path for path in into.iterdir() if path.is_dir()]
    return root


def harvest_locally(folder: Path) -> LocalHarvest:
    """The three projects harvested here, one by one, with the default options; a folder
    that already holds a finished harvest is taken as it is (a second xdist worker)."""
    done = folder / "harvested"
    if done.exists():
        return LocalHarvest([Path(line) for line in done.read_text().splitlines()],
                            folder / "out")
    given = [unpacked(ARCHIVES[0], folder / "src")] + [PROJECTS / name for name in ARCHIVES[1:]]
    outcomes = harvest_projects(projects_from(given), folder / "out", HarvestOptions())
    assert [outcome.state for outcome in outcomes] == ["harvested"] * 3, \
        [outcome.summary.get("error") for outcome in outcomes]
    done.write_text("".join(f"{path}\n" for path in given))
    return LocalHarvest(given, folder / "out")


CODESENSE_TASKS = ("statement", "block", "loop", "branch", "output", "input", "alias")


def oracle_on_codesense_tasks(harvested: Path, folder: Path) -> dict[str, float]:
    """Every CodeSense task built from a harvest's file (each with instances) and
    ``reference/oracle`` run on them: its pass@1 per task."""
    from tests.helpers.cli import execbench

    suite, run = folder / "suite", folder / "run"
    done = execbench("build", harvested, "--tasks", ",".join(CODESENSE_TASKS), "--out", suite)
    assert done.exit_code == 0, done.stderr
    counts = json.loads((suite / "manifest.json").read_text())["counts"]["by_task"]
    assert set(counts) == set(CODESENSE_TASKS) and all(counts.values()), counts
    done = execbench("run", "--suite", suite, "--model", "reference/oracle", "--out", run)
    assert done.exit_code == 0, done.stderr
    metrics = json.loads((run / "results.json").read_text())["metrics"]
    return {task: metrics[task]["all"]["pass@1"] for task in CODESENSE_TASKS}


def processes_with(token: str) -> list[int]:
    """Processes whose command line holds ``token`` (what a jailed test left running)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def needs_gdb_and_jail() -> None:
    """Skip, saying why, where the C harvest cannot run: no GDB, compiler or Make, or a jail
    without the layers the debugger needs (ptrace in a PID namespace of its own)."""
    for tool in ("gdb", "cc", "make"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (.ci/run installs it: apt-get install gdb "
                        "gcc make)")
    off = {name: state for name, state in jail.layers().items() if not state.startswith("on")}
    if off:
        pytest.skip(f"this machine lacks jail layers the debugger needs: {off}")
