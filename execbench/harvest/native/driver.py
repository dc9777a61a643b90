"""One native harvest: the project copied, built and tested in the jail under its
language's recorder, the recorded calls sampled and written as generic JSONL.

The order guards the records: the copy's source files are read (``snapshot``) before
the build or the tests run, so a record's ``code`` is the project's text, whatever the
build or the tests write later; a recorded call naming lines outside a snapshotted file
is refused (``recording``). The build and the test command are shell commands the user
gives: each runs as ``/bin/sh FILE`` (the command written to a file beside the copy) in
its own start of the jail, the build with the language's debug settings in its
environment, the tests with the recorder wrapped around them; what both print goes to
the log. A build that fails stops the harvest with its last line; tests that fail do not
(their calls are kept, as a failing pytest suite's are).

Calls are sampled per function as they come: at most ``max_calls`` by reservoir sampling
seeded with the seed and the function, a call whose argument text repeats an earlier one's
dropped first (the generic format keeps one call per text: two calls shown alike, pointers
by their targets, could not be told apart by a question either), so memory holds at most
``max_calls`` calls per function whatever the run. The file lists functions by file and
line, each function's calls in the order they were made: the same project, commands and
seed give the same bytes.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from execbench.harvest import jail
from execbench.harvest.channel import drain
from execbench.harvest.languages import LANGUAGES, Language
from execbench.harvest.native import shape
from execbench.harvest.native.facts import arguments, call_record
from execbench.harvest.native.recording import RawCall, Recording
from execbench.harvest.options import HarvestError, HarvestOptions, HarvestResult
from execbench.sandbox import confine
from execbench.sandbox.process_group import stop_group

MAX_SOURCE_BYTES = 2 << 20
"""A source file longer than this is not snapshotted (nothing in it is recorded)."""
MAX_DEPTH = 4
"""Pointer and struct levels a recorded value follows."""
MAX_CALLS_SEEN = 100
"""Calls per function the recorder records; later ones are not stopped at (stepping
through every line of a hot function's every call would cost the run more than the sample
of ``max_calls`` gains from it). The sample is drawn from these first calls."""
NO_SHAPE = "its text could not be read as statements"
REPEATED = "repeated arguments"
REPLACED = "replaced in the sample by a later call"
NEVER_CALLED = "never called by the tests"
_POLL_SECONDS = 0.2
_GRACE_SECONDS = 3.0


def harvest(project: Path, out: Path, options: HarvestOptions,
            progress: Callable[[dict[str, Any]], None] | None = None,
            warn: Callable[[str], None] = lambda message: None,
            log: Path | None = None) -> HarvestResult:
    """Build and test ``project`` (``options.build``, ``options.test``) with the recorder
    of ``options.language`` and write ``out``; see the module doc."""
    from execbench.harvest.project import copy_project

    language: Language = LANGUAGES.get(options.language)
    project = project.resolve()
    if not project.is_dir():
        raise HarvestError(f"{project} is not a folder")
    tools = language.tools()
    result = HarvestResult()
    with tempfile.TemporaryDirectory(prefix="execbench-harvest-") as folder:
        scratch = Path(folder)
        copy = scratch / "project"
        copy_project(project, copy, result.warnings.append)
        sources = snapshot(copy, language.suffixes, result.warnings.append)
        for message in result.warnings:
            warn(message)
        for name in ("home", "tmp"):
            (scratch / name).mkdir()
        log_path = scratch / "run.log"
        try:
            sampler = Sampler(options)
            if options.build:
                _build(scratch, language, tools, options, result, log_path)
            _test(scratch, language, tools, sources, options, result, sampler, log_path,
                  progress)
        finally:
            if log is not None and log_path.is_file():
                log.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(log_path, log)
    _write(out, sources, sampler, options, result, language.name)
    return result


def snapshot(copy: Path, suffixes: tuple[str, ...], warn: Callable[[str], None]
             ) -> dict[str, list[str]]:
    """The copy's source files by relative path, as lines, read before anything runs (links
    are not followed: the copy keeps them as links)."""
    found: dict[str, list[str]] = {}
    for folder, dirs, files in os.walk(copy):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            if not name.endswith(suffixes) or path.is_symlink():
                continue
            relative = path.relative_to(copy).as_posix()
            if path.stat().st_size > MAX_SOURCE_BYTES:
                warn(f"{relative}: over {MAX_SOURCE_BYTES >> 20} MiB, not recorded")
                continue
            found[relative] = path.read_text(encoding="utf-8", errors="replace").split("\n")
    return found


TEST_FOLDERS = frozenset({"test", "tests", "testing", "t", "unity", "cmocka", "check"})
"""Folders whose sources are the tests or their framework, not the project's code."""
_TEST_NAME = re.compile(r"(?:test[^/]*|[^/]*[_-]tests?\.[^/.]+)$", re.IGNORECASE)


def own(sources: dict[str, list[str]]) -> list[str]:
    """The project's own source files: not in a test folder (``TEST_FOLDERS``), not named
    ``test*`` or ``*_test.c``/``*-tests.c``: the recorder records functions of these only
    (never ``main``, nor the C library's, which are in no file of the copy)."""
    return [name for name in sources
            if not TEST_FOLDERS.intersection(name.lower().split("/")[:-1])
            and not _TEST_NAME.match(name.rpartition("/")[2])]


class Sampler:
    """Calls kept per function as they return: repeated arguments dropped, then at most
    ``max_calls`` by reservoir sampling with the seed and the function's id."""

    def __init__(self, options: HarvestOptions) -> None:
        self.options = options
        self.kept: dict[str, list[tuple[int, RawCall]]] = {}
        self.seen: Counter[str] = Counter()
        self.distinct: Counter[str] = Counter()
        self.arguments: dict[str, set[str]] = {}
        self.dropped: Counter[str] = Counter()
        self.random: dict[str, random.Random] = {}

    def __call__(self, call: RawCall) -> None:
        function = call.function
        self.seen[function] += 1
        key = arguments(call.args, "c")
        given = self.arguments.setdefault(function, set())
        if key in given:
            self.dropped[REPEATED] += 1
            return
        given.add(key)
        self.distinct[function] += 1
        ordinal = self.distinct[function]
        kept = self.kept.setdefault(function, [])
        limit = self.options.max_calls
        if ordinal <= limit:
            kept.append((ordinal, call))
            return
        rng = self.random.setdefault(function, random.Random(f"{self.options.seed}/{function}"))
        slot = rng.randrange(ordinal)
        self.dropped[REPLACED] += 1
        if slot < limit:
            kept[slot] = (ordinal, call)


def _build(scratch: Path, language: Language, tools: list[str], options: HarvestOptions,
           result: HarvestResult, log_path: Path) -> None:
    script = scratch / "build.sh"
    script.write_text(options.build + "\n")
    env = {**_environment(scratch), **language.build_env(options)}
    config = _jail_config(scratch, ["/bin/sh", str(script)], env,
                          [*tools, str(script)], options)
    code, reader = _run_jailed(scratch, config, None, log_path, options.timeout, None, None)
    _layers(result, reader)
    if code != 0:
        raise HarvestError(f"the build ({options.build!r}) failed with exit status {code}: "
                           f"{_last_line(log_path)}")


def _test(scratch: Path, language: Language, tools: list[str], sources: dict[str, list[str]],
          options: HarvestOptions, result: HarvestResult, sampler: Sampler, log_path: Path,
          progress: Callable[[dict[str, Any]], None] | None) -> None:
    script = scratch / "test.sh"
    script.write_text(options.test + "\n")
    config_path = scratch / "config.json"
    recorder = language.recorder(scratch, str(script), config_path)
    child = {"root": str(scratch / "project"), "files": sorted(own(sources)),
             "max_events": options.max_events, "max_value_nodes": options.max_value_nodes,
             "max_depth": MAX_DEPTH, "max_calls_seen": MAX_CALLS_SEEN}
    env = {**_environment(scratch), **recorder.env,
           "EXECBENCH_RECORDER_CONFIG": str(config_path)}
    config = _jail_config(scratch, recorder.argv, env,
                          [*tools, *recorder.read, str(script), str(config_path)], options)
    config["ptrace"] = recorder.ptrace
    if recorder.loopback:
        config["loopback"] = True
    reading = Recording({name: len(sources[name]) for name in own(sources)}, sampler,
                        max_line=options.max_trace_chars + (1 << 16),
                        max_events=options.max_events, max_nodes=options.max_value_nodes)
    code, reader = _run_jailed(scratch, config, child, log_path, options.timeout, reading,
                               progress)
    _layers(result, reading)
    result.refused = reading.refused
    result.timed_out = code is None
    end = reading.end
    if end is None:
        if code is not None:
            raise HarvestError(f"the recorder did not finish (exit status {code}): "
                               f"{_last_line(log_path)}")
        result.tests = (0, 1)
    else:
        result.tests = tuple(end["tests"])  # type: ignore[assignment]
        result.pytest_exit = end["exit"]
    result.seen = sum(sampler.seen.values())


def _run_jailed(scratch: Path, config: dict[str, Any], child: dict[str, Any] | None,
                log_path: Path, timeout: float, reading: Recording | None,
                progress: Callable[[dict[str, Any]], None] | None
                ) -> tuple[int | None, Recording | Any]:
    """Run one jail to its end (or ``timeout``); its exit status (None at the timeout)
    and what read its channel."""
    reader = reading if reading is not None else _FirstLine()
    start = time.monotonic()
    code: int | None = None
    with open(log_path, "ab") as log:
        process, channel = jail.start(config, child, scratch, log)
        try:
            while process.poll() is None:
                ready, _, _ = select.select([channel], [], [], _POLL_SECONDS)
                if ready:
                    reader.feed(drain(channel))
                if progress is not None and reading is not None:
                    progress({"seconds": time.monotonic() - start, "tests": 0, "total": 0,
                              "calls": reading.calls, "functions": 0})
                if time.monotonic() - start > timeout:
                    break
            else:
                code = process.returncode
        finally:
            stop_group(process, _GRACE_SECONDS)
            reader.feed(drain(channel))
            os.close(channel)
    reader.finish()
    return code, reader


class _FirstLine:
    """The build's channel: only the jail's report of its layers comes on it."""

    def __init__(self) -> None:
        self.data = b""
        self.jail: dict[str, Any] | None = None

    def feed(self, data: bytes) -> None:
        if self.jail is None and len(self.data) < 1 << 20:
            self.data += data

    def finish(self) -> None:
        first = self.data.split(b"\n", 1)[0]
        try:
            record = json.loads(first)
        except ValueError:
            return
        if isinstance(record, dict) and record.get("kind") == "jail":
            self.jail = record


def _layers(result: HarvestResult, reader: Any) -> None:
    if reader.jail is None:
        raise HarvestError("the harvest jail did not start")
    result.layers = reader.jail["layers"]
    result.jail_warnings = list(reader.jail["warnings"])
    result.network = result.layers.get("network", result.network)


def _environment(scratch: Path) -> dict[str, str]:
    env = confine.scrubbed_environment(os.environ)
    env.update(HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"),
               PATH=env.get("PATH") or os.defpath)
    return env


def _jail_config(scratch: Path, argv: list[str], env: dict[str, str], read: list[str],
                 options: HarvestOptions) -> dict[str, Any]:
    return {"scratch": str(scratch), "project": str(scratch / "project"),
            "home": str(scratch / "home"), "tmp": str(scratch / "tmp"),
            "read": sorted({os.path.realpath(path) for path in read}), "argv": argv,
            "env": env, "max_file_bytes": options.max_file_bytes,
            "max_temp_bytes": options.max_temp_bytes}


def _last_line(log_path: Path) -> str:
    with open(log_path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4000))
        lines = handle.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def _write(out: Path, sources: dict[str, list[str]], sampler: Sampler,
           options: HarvestOptions, result: HarvestResult, language: str) -> None:
    """The generic JSONL: a record per function with a kept call, by file and line."""
    result.calls.update(sampler.dropped)
    records = []
    for function, kept in sampler.kept.items():
        first = kept[0][1]
        lines = sources[first.file][first.first - 1:first.last]
        code = "\n".join(lines).rstrip() + "\n"
        if len(lines) > options.max_lines:
            result.functions["longer than --max-lines"] += 1
            result.calls["its function dropped"] += len(kept)
            continue
        analysed = shape.analyse(code)
        if analysed is None:
            result.functions[NO_SHAPE] += 1
            result.calls["its function dropped"] += len(kept)
            continue
        calls = [call_record(call, analysed, code, language)
                 for _, call in sorted(kept, key=lambda item: item[1].number)]
        result.functions["kept"] += 1
        result.calls["kept"] += len(calls)
        records.append(((first.file, first.first, function), {
            "id": function, "code": code, "entry_point": first.name.rpartition(".")[2],
            "calls": calls,
            "language": language, "meta": {"file": first.file, "line": first.first}}))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(record) + "\n" for _, record in sorted(records,
                                                                            key=lambda r: r[0])),
                   encoding="utf-8")
