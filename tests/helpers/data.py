"""The shared benchmark files: real data the tests read from ``../shared/data`` beside the
repository (see the README there), and the papers' authors' artifacts in
``../shared/published``, which a checkout may lack. One place says where the folders are and
what a test says when a file is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
PUBLISHED = SHARED_DATA.parent / "published"


def _missing(path: Path) -> str:
    folder = path.relative_to(SHARED_DATA.parent).parts[0]
    return (f"{path} not found: the {folder} files live in ../shared/{folder} beside the "
            "repository (see the README.md there)")


def shared_data(name: str) -> Path:
    """The path of ``name`` (a file or folder) under the shared data folder; skips the test
    that asks when it is absent."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(_missing(path))
    return path


def needs_shared_data(name: str) -> pytest.MarkDecorator:
    """``shared_data`` as a mark, for tests whose parameters or module are built from the
    data before any test runs."""
    path = SHARED_DATA / name
    return pytest.mark.skipif(not path.exists(), reason=_missing(path))


def published(name: str) -> Path:
    """The path of ``name`` under the folder of the papers' published artifacts; skips the
    test that asks when it is absent."""
    path = PUBLISHED / name
    if not path.exists():
        pytest.skip(f"{path} not found: the authors' artifacts live in ../shared/published "
                    "beside the repository (see the README.md there)")
    return path


def padded_suite(source: Path, out: Path, min_bytes: int = 48_000_000) -> tuple[Path, int]:
    """A copy of the suite ``source`` over ``min_bytes``: its instances again and again
    (ids suffixed ``/copyN``), each program behind a 200 KB comment, for the tests that
    show a reader holds no suite in memory. Returns the folder and the number of copies."""
    lines = (source / "instances.jsonl").read_bytes().splitlines()
    padding = "# " + "x" * 200_000 + "\n"
    out.mkdir()
    (out / "manifest.json").write_bytes((source / "manifest.json").read_bytes())
    copies = min_bytes // (len(lines) * 200_000) + 1
    with (out / "instances.jsonl").open("w") as file:
        for copy in range(copies):
            for line in lines:
                record = json.loads(line)
                record["id"] += f"/copy{copy}"
                record["code"] = padding + record["code"]
                file.write(json.dumps(record, sort_keys=True) + "\n")
    assert (out / "instances.jsonl").stat().st_size > min_bytes
    return out, copies
