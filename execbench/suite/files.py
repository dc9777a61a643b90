"""A suite's two files, ``instances.jsonl`` and ``manifest.json``, read back.

What reads a suite (a run, a re-score, a report, an export) reads it here, as a stream
checked against the sha256 the manifest was opened with; the build writes the same two
files by these names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import SCHEMA_VERSION
from execbench.jsonfiles import file_sha256
from execbench.manifest import Manifest
from execbench.sandbox.pool import Limits
from execbench.tasks.base import Instance, InstanceError

INSTANCES = "instances.jsonl"
MANIFEST = "manifest.json"


class SuiteError(Exception):
    """The suite cannot be built or read (no usable source, missing files, bad schema)."""


def _read_manifest(folder: Path) -> Manifest:
    manifest_path, instances_path = folder / MANIFEST, folder / INSTANCES
    if not manifest_path.is_file() or not instances_path.is_file():
        raise SuiteError(f"{folder} is not a suite (needs {MANIFEST} and {INSTANCES}); "
                         "make one with `execbench build`")
    record = json.loads(manifest_path.read_text(encoding="utf-8"))
    if record.get("schema_version") != SCHEMA_VERSION:
        raise SuiteError(f"{folder}: schema version {record.get('schema_version')} is not "
                         f"{SCHEMA_VERSION}; rebuild the suite with this execbench")
    try:
        return Manifest.from_record(record)
    except (KeyError, TypeError) as exc:
        raise SuiteError(f"{manifest_path}: not a manifest this execbench reads ({exc!r}); "
                         "rebuild the suite") from None


@dataclass(frozen=True)
class SuiteFile:
    """A suite read as a stream: its manifest and the sha256 of ``instances.jsonl`` at
    once, its instances one at a time, so that what reads a suite (a run, a re-score, a
    report) holds one instance, not the suite, whatever the suite's size."""

    folder: Path
    manifest: Manifest
    sha256: str

    @classmethod
    def open(cls, folder: Path) -> SuiteFile:
        manifest = _read_manifest(folder)
        return cls(folder, manifest, file_sha256(folder / INSTANCES))

    @property
    def limits(self) -> Limits:
        return self.manifest.recipe.limits

    def offsets(self) -> dict[str, int]:
        """Where each instance's line starts in ``instances.jsonl``, by id, for reading
        instances out of file order (:meth:`instance_at`)."""
        found: dict[str, int] = {}
        offset = 0
        for number, line in enumerate(self._lines(), 1):
            if line.strip():
                found[_parse(self.folder / INSTANCES, number, line).id] = offset
            offset += len(line)
        return found

    def instance_at(self, offset: int, expected: str) -> Instance:
        """The instance ``expected`` whose line starts at ``offset`` (from :meth:`offsets`):
        a line that holds another instance means the file changed since it was indexed."""
        path = self.folder / INSTANCES
        with path.open("rb") as file:
            file.seek(offset)
            line = file.readline()
        instance = _parse(path, None, line) if line.strip() else None
        if instance is None or instance.id != expected:
            raise _changed(path)
        return instance

    def check_unchanged(self) -> None:
        """Refuse a file that no longer hashes to what :meth:`open` read, for readers that
        seek (:meth:`instance_at`) and so never see every line."""
        if file_sha256(self.folder / INSTANCES) != self.sha256:
            raise _changed(self.folder / INSTANCES)

    def instances(self) -> Iterator[Instance]:
        """The instances in file order (checked against the sha256 as they are read)."""
        path = self.folder / INSTANCES
        for number, line in enumerate(self._lines(), 1):
            if line.strip():
                yield _parse(path, number, line)

    def _lines(self) -> Iterator[bytes]:
        """The lines of ``instances.jsonl``, hashed as they are read: a file changed since
        :meth:`open` (no longer the suite a run pinned) stops the reading with an error
        rather than mixing two suites' instances."""
        path = self.folder / INSTANCES
        digest = hashlib.sha256()
        with path.open("rb") as file:
            # binary lines end at newlines only: records keep U+0085 and U+2028 raw
            for line in file:
                digest.update(line)
                yield line
        if digest.hexdigest() != self.sha256:
            raise _changed(path)


def _changed(path: Path) -> SuiteError:
    return SuiteError(f"{path} changed while it was read; read it again")


def _parse(path: Path, number: int | None, line: bytes) -> Instance:
    try:
        return Instance.from_record(json.loads(line))
    except (ValueError, InstanceError) as exc:
        where = f"{path}:{number}" if number is not None else str(path)
        raise SuiteError(f"{where}: {exc}") from None


def load_suite(folder: Path) -> tuple[Manifest, list[Instance], str]:
    """Read a whole suite: (manifest, instances, sha256 of instances.jsonl)."""
    suite = SuiteFile.open(folder)
    return suite.manifest, list(suite.instances()), suite.sha256
