"""Reading JSONL sources record by record, so one bad line never sinks the whole file.

Every JSONL format shares the same loop (:func:`load_records`): read a line, check it is a
JSON object with a unique id, hand it to the format's builder, and turn any
:class:`RecordError` into a :class:`~execbench.sources.base.Skipped` that names
``file:line``. Builders only have to describe what is wrong with a record.
"""

from __future__ import annotations

import gzip
import itertools
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from execbench.program import Program
from execbench.sources.base import Loaded, Skipped, SourceError

_GZIP_MAGIC = b"\x1f\x8b"
_SKIP_BLOCK = 1 << 20
MAX_RECORD_BYTES = 4 << 20
"""Bytes of one record (one line, once decompressed). The largest published record read
here (CodeSense's C statement predictions) is 1.0 MB; a longer line is skipped unread and
counted like any bad record, so a small gzip stream of one huge line cannot fill memory."""
MAX_SOURCE_BYTES = 1 << 30
"""Bytes of one source file once decompressed (the published ones are at most 8 MB)."""


class RecordError(Exception):
    """A record that cannot become a program; the message is the one-line skip reason."""


@dataclass(frozen=True)
class Line:
    """One non-blank line: its parsed JSON value, or why it could not be parsed."""

    lineno: int
    value: Any = None
    error: str | None = None


@dataclass
class Record:
    """A JSON object from a source, with typed access that reports bad keys by name."""

    data: dict[str, Any]
    id: str
    """The program id, ``"<source>/<record id>"``."""
    source: str
    notes: list[str] = field(default_factory=list)
    """Call-level problems (the program is kept); each becomes its own ``Skipped`` entry."""

    def get(self, key: str, kind: type | tuple[type, ...] = str) -> Any:
        """The value of a required key, checked against ``kind``."""
        if key not in self.data:
            raise RecordError(f"missing key {key!r}")
        return self.optional(key, kind)

    def optional(self, key: str, kind: type | tuple[type, ...] = str) -> Any:
        """The value of an optional key (``None`` when absent or null)."""
        value = self.data.get(key)
        # bool is an int subclass; no key here ever wants a bool where it asks for a number
        if value is not None and (not isinstance(value, kind) or type(value) is bool):
            raise RecordError(f"key {key!r} should be {_kind_name(kind)}, "
                              f"not {type(value).__name__}")
        return value


Build = Callable[[Record], Program]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", dict: "an object", int: "a number",
             float: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _open(path: Path) -> IO[bytes]:
    """Open plain or gzipped JSONL; the magic bytes decide, not the file name."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == _GZIP_MAGIC else path.open("rb")


def read_jsonl(path: Path) -> Iterator[Line]:
    """Yield every non-blank line of a (possibly gzipped) JSONL file with its line number.

    A last line without a newline is read like any other. A line over ``MAX_RECORD_BYTES``
    is passed over unread (a ``Line`` with its error), and a file that decompresses to more
    than ``MAX_SOURCE_BYTES`` stops with ``SourceError``, as does a damaged gzip stream: a
    problem of the whole file.
    """
    try:
        with _open(path) as fh:
            for lineno, raw in _bounded_lines(fh, path):
                if raw is None:
                    yield Line(lineno, error=f"record over {MAX_RECORD_BYTES} bytes, skipped")
                elif raw.strip():
                    yield _parse(lineno, raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None


def _bounded_lines(fh: IO[bytes], path: Path) -> Iterator[tuple[int, bytes | None]]:
    """Each line with its number, or ``None`` for one over ``MAX_RECORD_BYTES``: no more than
    that (or a block) is ever held, however long a line a small gzip stream unpacks to."""
    total = 0
    for lineno in itertools.count(1):
        raw = fh.readline(MAX_RECORD_BYTES + 1)
        if not raw:
            return
        total += len(raw)
        over = len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n")
        while over and not raw.endswith(b"\n"):
            raw = fh.readline(_SKIP_BLOCK)
            total += len(raw)
            if not raw or total > MAX_SOURCE_BYTES:
                break
        if total > MAX_SOURCE_BYTES:
            raise SourceError(f"cannot read {path}: more than {MAX_SOURCE_BYTES} bytes once "
                              "decompressed (the bound on one source)")
        yield lineno, None if over else raw


def _parse(lineno: int, raw: bytes) -> Line:
    try:
        return Line(lineno, value=json.loads(raw))
    except UnicodeDecodeError:
        return Line(lineno, error="not UTF-8 text")
    except json.JSONDecodeError as exc:
        return Line(lineno, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return Line(lineno, error="invalid JSON: nested too deeply")
    except ValueError as exc:  # e.g. an integer over Python's digit limit
        return Line(lineno, error=f"invalid JSON: {exc}")


def first_keys(path: Path) -> list[str] | None:
    """The keys of the first line that is a JSON object (what format detection looks at)."""
    for line in read_jsonl(path):
        if isinstance(line.value, dict):
            return list(line.value)
    return None


def load_records(loaded: Loaded, path: Path, id_key: str, build: Build, *,
                 line_ids: bool = False) -> None:
    """Build a program from every record of ``path`` into ``loaded``, skipping bad ones.
    With ``line_ids``, a record without ``id_key`` is named by its line (``line12``)."""
    seen: dict[str, int] = {}
    for line in read_jsonl(path):
        where = f"{loaded.origin}:{line.lineno}"
        if line.error is not None:
            loaded.skip(where, line.error)
            continue
        if not isinstance(line.value, dict):
            reason = f"not a JSON object (got {type(line.value).__name__})"
            loaded.skip(where, reason)
            continue
        record = Record(line.value, "", loaded.name)
        try:
            named = id_key in record.data or not line_ids
            record.id = f"{loaded.name}/" + (_record_id(record, id_key) if named
                                             else f"line{line.lineno}")
        except RecordError as exc:
            loaded.skip(where, str(exc))
            continue
        pid = record.id
        if pid in seen:
            reason = f"duplicate id (first seen at line {seen[pid]})"
            loaded.skip(where, reason, pid)
            continue
        seen[pid] = line.lineno
        try:
            program = build(record)
        except RecordError as exc:
            loaded.skip(where, str(exc), pid)
            continue
        loaded.programs.append(program)
        loaded.skipped.extend(Skipped(where, note, pid, kind="call",
                                      position=len(loaded.programs) - 1)
                              for note in record.notes)


def _record_id(record: Record, id_key: str) -> str:
    """Ids are usually strings; whole numbers (as in the original MBPP) are accepted too."""
    value = str(record.get(id_key, (str, int))).strip()
    if not value:
        raise RecordError(f"key {id_key!r} is empty")
    return value
