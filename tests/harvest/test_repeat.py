"""The shared projects harvested again and again on a machine whose cores are all busy:
every run ends by itself (no test hangs, nothing stopped at a limit), leaves no process
behind, and writes the same bytes. toolz's suite forks a ``multiprocessing`` pool.

``EXECBENCH_HARVEST_REPEATS`` sets how many runs per project (default 3); more-itertools,
whose suite takes a minute and a half under the recorder, runs only when it is set.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from execbench.harvest.options import HarvestOptions
from execbench.harvest.project import harvest
from tests.helpers.data import SHARED_DATA, needs_shared_data
from tests.helpers.load import busy_cores, harvest_processes

PROJECTS = SHARED_DATA / "projects"
REPEATS = int(os.environ.get("EXECBENCH_HARVEST_REPEATS", "3"))
ARCHIVES = ["toolz-1.2.0.tar.gz", "inflection-0.5.1.tar.gz"] + (
    ["more_itertools-11.2.1.tar.gz"] if "EXECBENCH_HARVEST_REPEATS" in os.environ else [])


@pytest.mark.slow
@needs_shared_data("projects")
@pytest.mark.parametrize("archive", ARCHIVES)
def test_a_busy_machine_harvests_the_same_bytes_every_time(archive: str, tmp_path: Path
                                                            ) -> None:
    with tarfile.open(PROJECTS / archive) as tar:
        tar.extractall(tmp_path / "src", filter="data")
    [root] = list((tmp_path / "src").iterdir())
    assert not harvest_processes()
    files = set()
    with busy_cores():
        for attempt in range(REPEATS):
            out = tmp_path / f"harvest-{attempt}.jsonl"
            result = harvest(root, out, HarvestOptions())
            assert not result.timed_out and not result.hung and result.pytest_exit == 0, \
                (attempt, result.log)
            assert result.tests[0] == result.tests[1] > 0
            assert not harvest_processes(), attempt
            files.add(out.read_bytes())
    assert len(files) == 1 and files.pop()
