"""Instance lines spooled to disk per task while a build goes on, then joined into the suite.

A suite lists its instances task by task, each task's in source order, but a build makes
them program by program (a chunk of programs at a time, every task on each chunk). Each
task's lines go to a file of their own beside the suite; at the end the files are joined,
in task order, into ``instances.jsonl`` (hashed on the way, replaced at once), so the file
is the one a build holding everything in memory would write, and memory holds one chunk.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO


class InstanceSpool:
    """One part file per task in ``folder`` while the build runs; ``finish`` joins them.
    Leaving the ``with`` block removes the part files, and the folder if the spool made it
    and the build wrote nothing else there (a failed build leaves what it found)."""

    def __init__(self, folder: Path, tasks: list[str]) -> None:
        self.folder = folder
        self.tasks = tasks
        self.made_folder = False
        self.parts: dict[str, Path] = {}
        self.files: dict[str, IO[str]] = {}
        self.joining: Path | None = None
        """The file ``finish`` writes before it replaces the suite's."""

    def __enter__(self) -> InstanceSpool:
        if not self.folder.exists():
            self.folder.mkdir(parents=True)
            self.made_folder = True
        for number, task in enumerate(self.tasks):
            path = self.folder / f".instances.{number}.part"
            self.parts[task] = path
            self.files[task] = path.open("w", encoding="utf-8", newline="",
                                          errors="backslashreplace")  # as jsonfiles.utf8
        return self

    def add(self, task: str, lines: Iterable[str]) -> None:
        """Append ``task``'s next lines (each ending in a newline)."""
        self.files[task].writelines(lines)

    def finish(self, path: Path) -> str:
        """Join the tasks' lines into ``path`` (replaced at once); its sha256."""
        digest = hashlib.sha256()
        tmp = self.joining = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as joined:
            for task in self.tasks:
                self.files[task].close()
                with self.parts[task].open("rb") as part:
                    while block := part.read(1 << 20):
                        digest.update(block)
                        joined.write(block)
        os.replace(tmp, path)
        return digest.hexdigest()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for task, file in self.files.items():
            file.close()
            self.parts[task].unlink(missing_ok=True)
        if self.joining is not None:
            self.joining.unlink(missing_ok=True)
        if kind is not None and self.made_folder and not any(self.folder.iterdir()):
            self.folder.rmdir()
