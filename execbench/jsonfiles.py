"""How execbench writes its files: one stable encoding for records and one way to replace
a file whole.

Suites must come out byte-identical from the same inputs, and run files must never be
left half-written by a crash or Ctrl-C; both rest on the two helpers here.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def dumps(record: dict[str, Any]) -> str:
    """The one JSON encoding execbench writes records with (stable bytes)."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def utf8(text: str) -> bytes:
    """JSON text as the UTF-8 bytes of a file. A lone surrogate (a reply's ``"\\ud800"``
    escape reads as one) has no UTF-8 form and would stop the write, and with it a run:
    it is written back as its ``\\uXXXX`` escape, which JSON reads as the same string (text
    only ever sits inside a JSON string)."""
    return text.encode("utf-8", "backslashreplace")


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once: a reader (or a crash) sees the old file or
    the new one, never part of either."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(utf8(text))
    os.replace(tmp, path)



def file_sha256(path: Path) -> str:
    """A file's sha256, read a block at a time (a suite's instances may be gigabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
