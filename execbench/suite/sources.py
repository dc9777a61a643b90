"""Reading a build's sources: their programs in order, each id once, within the date
window and the ``--limit``, with what the sources hold (their tasks, their entries in
the manifest) and what was skipped on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from execbench.manifest import Skip, SuiteSource
from execbench.program import Program
from execbench.sources import FORMATS, Loaded, SourceError, load_source
from execbench.sources.dates import DATES, DateError, DateWindow, program_date
from execbench.suite.contest_filtering import Filtering
from execbench.suite.files import SuiteError
from execbench.suite.options import BuildOptions

CONTEST = "contest"
"""The format whose programs the contest filters apply to."""
DEFAULT_TASKS = ("output", "input")
"""What a build without ``--tasks`` makes of a source whose format holds no task of its
own (``Format.tasks``)."""


@dataclass
class Gathered:
    """What the sources give a build, in source order."""

    sources: list[SuiteSource] = field(default_factory=list)
    programs: list[Program] = field(default_factory=list)
    """The programs read, in source order."""
    skipped: list[Skip] = field(default_factory=list)
    """Skips made while reading the sources."""
    held_tasks: list[str] = field(default_factory=list)
    """The tasks the sources hold, in source order (``DEFAULT_TASKS`` for most formats)."""
    filtering: Filtering | None = None
    """The contest filters, once those that read only the source have run (None: no
    filter asked)."""


def read_sources(specs: Iterable[str], options: BuildOptions,
                 warn: Callable[[str], None]) -> Gathered:
    """The programs of every source, in order, each id once, within the ``--after`` and
    ``--before`` window, those of contest sources through the contest filters that read
    only the source, and at most ``--limit`` of them, with the skips within that limit
    warned and listed."""
    filters = options.contest_filters
    gathered = Gathered(filtering=Filtering(filters) if filters and filters.active else None)
    seen: set[str] = set()
    try:
        window = DateWindow.of(options.after, options.before)
    except DateError as exc:
        raise SuiteError(f"--after/--before: {exc}") from None
    dated = 0
    room = options.limit if options.limit is not None else float("inf")
    for spec in specs:
        try:
            loaded: Loaded = load_source(spec, options.fmt, plus_inputs=options.plus_inputs,
                                         count=options.count, seed=options.seed)
        except SourceError as exc:
            raise SuiteError(str(exc)) from None
        # Under --limit, what lies beyond the first N programs is not part of the build.
        offset = len(gathered.programs)
        listed = [item for item in loaded.skipped if offset + item.position < room]
        for item in listed:
            warn(str(item))
            gathered.skipped.append(Skip(where=item.where, kind=item.kind,
                                         reason=item.reason, id=item.id, from_source=True))
        kept = 0
        for program in loaded.programs:
            if program.id in seen:
                if len(gathered.programs) < room:
                    gathered.skipped.append(Skip(
                        where=loaded.origin, kind="program", id=program.id, from_source=True,
                        reason="a program with this id came from an earlier source"))
                continue
            seen.add(program.id)
            dated += program_date(program) is not None
            reason = window.excludes(program)
            if reason is not None:
                if len(gathered.programs) < room:
                    gathered.skipped.append(Skip(where=program.id, kind="not_applicable",
                                                 reason=reason, task=DATES))
                continue
            if gathered.filtering is not None and loaded.format == CONTEST and \
                    len(gathered.programs) < room:
                filtered = gathered.filtering.before_tracing(program)
                if filtered is not None:
                    gathered.skipped.append(filtered)
                    continue
            gathered.programs.append(program)
            kept += 1
        held = FORMATS.get(loaded.format).tasks if loaded.format in FORMATS else None
        for task in held(loaded.programs) if held else DEFAULT_TASKS:
            if task not in gathered.held_tasks:
                gathered.held_tasks.append(task)
        gathered.sources.append(SuiteSource(name=loaded.name, format=loaded.format,
                                            origin=loaded.origin, sha256=loaded.sha256,
                                            programs=kept, skipped=len(listed)))
    if options.plus_inputs and not any(source.format == "evalplus"
                                       for source in gathered.sources):
        formats = ", ".join(sorted({source.format for source in gathered.sources}))
        raise SuiteError(f"--plus-inputs adds the plus_input calls of evalplus sources "
                         f"(HumanEval+, MBPP+), and no source is one (formats: {formats})")
    if gathered.filtering is not None and not any(source.format == CONTEST
                                                  for source in gathered.sources):
        formats = ", ".join(sorted({source.format for source in gathered.sources}))
        raise SuiteError(f"the contest filters keep solutions of contest sources, and no "
                         f"source is one (formats: {formats})")
    if not window.open and not dated:
        raise SuiteError("--after and --before keep programs by date, and no program in the "
                         "given sources has one (the contest format's contest_date, or "
                         "meta.date in a generic record)")
    if not gathered.programs:
        raise SuiteError("no usable program in the given sources")
    if options.limit is not None:
        gathered.programs = gathered.programs[: options.limit]
    return gathered
