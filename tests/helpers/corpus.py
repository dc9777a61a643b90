"""How much of a benchmark a corpus-wide test checks: all of it under ``--run-slow`` (which
CI passes), else a fixed sample chosen with ``SEED``, so that a default run still makes
every check, on fewer programs, in seconds rather than minutes."""

from __future__ import annotations

import gzip
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")

SEED = 20
"""Fixed: a default run checks the same programs every time, so a failure reproduces."""


@dataclass(frozen=True)
class Corpus:
    full: bool
    """Whether tests check whole benchmarks (``--run-slow``) instead of samples."""

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """All of ``items``, or ``k`` of them chosen with ``SEED``, kept in their order."""
        if self.full or k >= len(items):
            return list(items)
        chosen = sorted(random.Random(SEED).sample(range(len(items)), k))
        return [items[index] for index in chosen]

    def file(self, path: Path, k: int, folder: Path) -> Path:
        """A JSONL source (``.gz`` or not) for a build: ``path`` itself, or a copy in
        ``folder`` under the same name (so program ids stay the same) holding ``sample``'s
        ``k`` of its records."""
        if self.full:
            return path
        with _open(path, "rt") as handle:
            records = [line for line in handle if line.strip()]
        copy = folder / path.name
        with _open(copy, "wt") as handle:
            handle.writelines(self.sample(records, k))
        return copy


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")
    return open(path, mode, encoding="utf-8")
