"""The executors: a choice refused in one line before any work; and on a real Ray cluster
started here (a head node and a second node, ``ray start``), a harvest of the shared
projects equal byte for byte to the local one, and a harvest whose Ray worker is killed
mid-project retried to the same bytes, with nothing left running; and a cluster that asks
for a token joined with it, and refused in one line without it."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from execbench.executors import ExecutorChoice, ExecutorError, run_units
from execbench.harvest.many import Outcome, harvest_projects, projects_from
from execbench.harvest.options import HarvestOptions
from tests.helpers.cli import EXECBENCH, execbench
from tests.helpers.data import needs_shared_data
from tests.helpers.harvests import LocalHarvest
from tests.helpers.load import harvest_processes
from tests.helpers.ray_cluster import ray_cluster, ray_env


def test_a_bad_choice_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="unknown executor 'dask'"):
        ExecutorChoice("dask")
    with pytest.raises(ExecutorError, match="--ray-address is for --executor ray"):
        ExecutorChoice("local", "127.0.0.1:6379")
    project = tmp_path / "p"
    project.mkdir()
    result = execbench("harvest", str(project), "--out", str(tmp_path / "one.jsonl"),
                       "--executor", "ray")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --executor ray writes a folder of projects: give --out a folder"]
    result = execbench("harvest", str(project), "--out", str(tmp_path / "many"),
                       "--executor", "spark")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: unknown executor 'spark': choose one of local, ray"]


def test_ray_missing_or_unreachable_is_one_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "ray", None)
        with pytest.raises(ExecutorError, match=r"needs Ray: pip install 'execbench\[ray\]'"):
            ExecutorChoice("ray")
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(ExecutorError, match=f"cannot reach Ray at 127.0.0.1:{port}"):
        list(run_units(ExecutorChoice("ray", f"127.0.0.1:{port}"), len, ["x"]))
    assert time.monotonic() - start < 30
    # nothing to run: no cluster is looked for
    assert list(run_units(ExecutorChoice("ray", f"127.0.0.1:{port}"), len, [])) == []


@contextlib.contextmanager
def _processes_seen(prefix: bytes) -> Iterator[set[bytes]]:
    """The command names starting with ``prefix`` seen on this machine while the block
    runs (polled): evidence of where the work ran."""
    seen: set[bytes] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for entry in Path("/proc").iterdir():
                try:
                    name = (entry / "cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                if name.startswith(prefix):
                    seen.add(name)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.join()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("ray", reason="the ray extra is not installed")
    with ray_cluster(tmp_path_factory.mktemp("ray")) as address:
        yield address


def _same_outputs(one: Path, other: Path, names: list[str]) -> None:
    assert (one / "harvest.jsonl").read_bytes() == (other / "harvest.jsonl").read_bytes()
    for name in names:
        assert (one / "projects" / f"{name}.jsonl").read_bytes() == \
            (other / "projects" / f"{name}.jsonl").read_bytes(), name
        mine, theirs = (json.loads((folder / "projects" / f"{name}.json").read_text())
                        for folder in (one, other))
        assert mine == theirs, name


@pytest.mark.slow
@needs_shared_data("projects")
def test_a_ray_harvest_equals_the_local_one(cluster: str, local_harvest: LocalHarvest,
                                            tmp_path: Path) -> None:
    projects = projects_from(local_harvest.given)
    finished: list[Outcome] = []
    with _processes_seen(b"ray::harvest_unit") as ran:
        outcomes = harvest_projects(projects, tmp_path / "out", HarvestOptions(),
                                    executor=ExecutorChoice("ray", cluster),
                                    finished=finished.append)
    assert ran, "no Ray worker was seen harvesting"
    assert [outcome.state for outcome in outcomes] == ["harvested"] * 3
    assert sorted(o.project.name for o in finished) == sorted(p.name for p in projects)
    _same_outputs(tmp_path / "out", local_harvest.out, [project.name for project in projects])
    merged = (tmp_path / "out" / "harvest.jsonl").read_text().splitlines()
    assert len(merged) > 100
    # run again: every project is already harvested, on Ray as here
    again = harvest_projects(projects, tmp_path / "out", HarvestOptions(),
                             executor=ExecutorChoice("ray", cluster))
    assert [outcome.state for outcome in again] == ["already harvested"] * 3


def _kill_the_worker_once(killed: list[int], stop: threading.Event) -> None:
    """Kill, once, the Ray worker that started a harvest jail, as soon as one runs; note
    the worker's pid, then the jail's."""
    while not stop.is_set():
        for pid in harvest_processes(anyones=True):
            try:
                parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                name = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")[0]
            except (OSError, ValueError, IndexError):
                continue
            if name.startswith(b"ray::"):
                os.kill(parent, signal.SIGKILL)
                killed += [parent, pid]
                return
        time.sleep(0.05)


@pytest.mark.slow
@needs_shared_data("projects")
def test_a_worker_killed_mid_harvest_is_retried_to_the_same_bytes(
        cluster: str, local_harvest: LocalHarvest, tmp_path: Path) -> None:
    projects = projects_from(local_harvest.given[1:2])  # toolz: its tests run for seconds
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_the_worker_once, args=(killed, stop))
    killer.start()
    try:
        outcomes = harvest_projects(projects, tmp_path / "out", HarvestOptions(),
                                    executor=ExecutorChoice("ray", cluster))
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 2, "no Ray worker was seen running a harvest"
    assert [outcome.state for outcome in outcomes] == ["harvested"]
    name = projects[0].name
    records = (tmp_path / "out" / "projects" / f"{name}.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in records]
    assert len(ids) == len(set(ids))
    assert (tmp_path / "out" / "projects" / f"{name}.jsonl").read_bytes() == \
        local_harvest.records(name).read_bytes()
    assert (tmp_path / "out" / "harvest.jsonl").read_bytes() == \
        local_harvest.records(name).read_bytes()
    # the killed worker's jail (and with it its tests) died with it; other harvests may
    # run on this machine, so only this one is looked for
    jail = killed[1]
    deadline = time.monotonic() + 10
    while jail in harvest_processes(anyones=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert jail not in harvest_processes(anyones=True)


@pytest.mark.slow
def test_a_build_sharded_on_ray_equals_the_local_build(cluster: str, tmp_path: Path) -> None:
    from execbench.suite import BuildOptions, build_suite
    from execbench.suite import build as suite_build

    options = BuildOptions(tasks=["output", "input", "coverage"], workers=1)
    local = build_suite(["humaneval"], tmp_path / "local", options)
    with _processes_seen(b"ray::trace_shard") as ran:
        sharded = build_suite(["humaneval"], tmp_path / "ray", dataclasses.replace(
            options, executor=ExecutorChoice("ray", cluster)))
    assert ran, "no Ray worker was seen tracing"
    assert local.counts.calls > 2 * suite_build.CHUNK_CALLS  # several shards
    for name in ("instances.jsonl", "manifest.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert sharded.instances_sha256 == local.instances_sha256


@pytest.mark.slow
def test_a_cluster_that_asks_for_a_token_is_joined_with_it_and_refused_without(
        tmp_path: Path) -> None:
    """Ray turns token authentication on for a cluster started where a token exists. A
    build given the token (Ray's variables) runs on it, to the local build's bytes; one
    without it is refused in one line of ours that says what to set, within a minute."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    token = secrets.token_hex(32)
    build = ["build", "humaneval", "--tasks", "output", "--limit", "3"]
    local = subprocess.run([EXECBENCH, *build, "--out", tmp_path / "local"],
                           capture_output=True, text=True, check=False)
    assert local.returncode == 0, local.stderr
    with ray_cluster(tmp_path / "cluster", nodes=1, token=token) as address:
        on_ray = [*build, "--executor", "ray", "--ray-address", address]
        start = time.monotonic()
        refused = subprocess.run([EXECBENCH, *on_ray, "--out", tmp_path / "refused"],
                                 env=ray_env(None),
                                 capture_output=True, text=True, check=False)
        assert time.monotonic() - start < 60
        assert refused.returncode != 0
        ours = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert len(ours) == 1 and f"cannot reach Ray at {address}" in ours[0], refused.stderr
        assert "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN" in ours[0]
        assert not (tmp_path / "refused").exists()
        joined = subprocess.run([EXECBENCH, *on_ray, "--out", tmp_path / "ray"],
                                env=ray_env(token), capture_output=True, text=True,
                                check=False)
        assert joined.returncode == 0, joined.stderr
    for name in ("instances.jsonl", "manifest.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
