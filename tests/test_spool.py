"""A build made a chunk of programs at a time writes the bytes of one made all at once, and
a build that fails leaves nothing of itself behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from execbench.suite import BuildOptions, build_suite
from execbench.suite import build as suite_build
from execbench.tasks import get_task

TASKS = ["output", "input", "coverage", "counterfactual", "mutation", "choice", "simulation",
         "statement", "loop"]


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize(("source", "options"), [
    ("humaneval", {"limit": 8, "tasks": TASKS}),
    ("dsl", {"count": 8, "mutate": True, "tasks": ["output", "coverage", "simulation"]}),
], ids=["humaneval", "dsl-mutate"])
def test_chunks_of_one_program_give_the_bytes_of_one_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str,
        options: dict) -> None:
    stages: list[tuple[str, int, int | None]] = []
    whole = build_suite([source], tmp_path / "whole", BuildOptions(**options))
    monkeypatch.setattr(suite_build, "CHUNK_CALLS", 1)
    chunked = build_suite([source], tmp_path / "chunked", BuildOptions(**options),
                          progress=lambda *stage: stages.append(stage))
    assert _files(tmp_path / "chunked") == _files(tmp_path / "whole")
    assert chunked.instances_sha256 == whole.instances_sha256
    assert sorted(_files(tmp_path / "chunked")) == ["instances.jsonl", "manifest.json"]
    assert whole.counts.instances > 20
    # progress runs on over the chunks against the whole build's totals
    tracing = [(done, total) for stage, done, total in stages if stage == "tracing calls"]
    assert [done for done, _ in tracing] == sorted(done for done, _ in tracing)
    assert tracing[-1][0] == tracing[-1][1] > 8


def test_a_failed_build_leaves_the_suite_it_found_and_no_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "suite"
    options = BuildOptions(tasks=["output", "input"], limit=6)
    build_suite(["humaneval"], out, options)
    before = _files(out)
    task = get_task("input")
    calls = []

    def broken(*args: object) -> object:
        calls.append(args)
        if len(calls) > 3:
            raise RuntimeError("a task that fails half way")
        return original(*args)

    original = task.building.build
    monkeypatch.setattr(suite_build, "CHUNK_CALLS", 1)
    monkeypatch.setattr(task.building, "build", broken)
    with pytest.raises(RuntimeError, match="half way"):
        build_suite(["humaneval"], out, options)
    assert _files(out) == before
    with pytest.raises(RuntimeError, match="half way"):
        build_suite(["humaneval"], tmp_path / "new", options)
    assert not (tmp_path / "new").exists()
