"""Which contest solutions a build keeps: the filters of the generalization paper's contest
set, each a build option, and the paper's values as one preset (``--contest-filters yang``).

The filters run in a fixed order, each on what the ones before it kept, so that every
dropped program is counted once, under the first filter that drops it:

1. ``min_chars``/``max_chars``: the solution's length in characters, as the record gives
   it (``meta["chars"]``: without the preamble the contest format adds above it);
2. ``dedupe="ast"``: a solution whose syntax tree equals an earlier one's is dropped (the
   first in source order is kept). The tree is compared as ``ast.dump`` writes it without
   positions, so layout, comments and spacing do not count; names do, since a model reads
   them (two solutions that differ only in a variable's name are two programs);
3. ``max_steps_per_call``: a solution any of whose calls ran more than this many bytecode
   operations, the paper's measure: the interpreter's opcode events in the program's
   frames (``sandbox.recording.OpcodeRecorder``), counted in a run of each call made for
   this check only;
4. ``max_per_question``: at most this many solutions of one ``question_id``, the first in
   source order among those the filters above kept.

The first two need only the source; the last two run once the calls are traced.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from execbench.program import Program
from execbench.settings import SettingError, at_least_one

AST = "ast"
DEDUPE_MODES = (AST,)
FILTERS = ("min_chars", "max_chars", "dedupe", "max_steps_per_call", "max_per_question")
"""The filters in the order they run; the manifest counts what each dropped under these
names."""


@dataclass(frozen=True)
class ContestFilters:
    """The filters a build applies to contest solutions; None leaves one out."""

    min_chars: int | None = None
    max_chars: int | None = None
    dedupe: str | None = None
    max_steps_per_call: int | None = None
    max_per_question: int | None = None

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ContestFilters:
        return cls(**{f.name: record.get(f.name) for f in fields(cls)})

    def over(self, base: ContestFilters) -> ContestFilters:
        """These filters, with ``base``'s value wherever this one sets none (a preset that
        single options adjust)."""
        return ContestFilters(**{f.name: getattr(base, f.name) if getattr(self, f.name) is None
                                 else getattr(self, f.name) for f in fields(self)})


PRESETS: dict[str, ContestFilters] = {
    "yang": ContestFilters(min_chars=100, max_chars=800, dedupe=AST, max_steps_per_call=1000,
                           max_per_question=3),
}
"""Named sets of filters: ``yang`` is the generalization paper's contest set (100 to 800
characters, at most 1,000 operations a run, duplicates removed by syntax tree, at most 3
solutions a question)."""


def solution_chars(program: Program) -> int:
    """The solution's length as its record gives it; the whole code where no source said."""
    chars = program.meta.get("chars")
    return chars if isinstance(chars, int) else len(program.code)


def length_reason(filters: ContestFilters, program: Program) -> tuple[str, str] | None:
    """The filter (``min_chars`` or ``max_chars``) that drops ``program`` for its length,
    and why, or None."""
    chars = solution_chars(program)
    if filters.min_chars is not None and chars < filters.min_chars:
        return "min_chars", f"the solution has {chars} characters, fewer than --min-chars " \
                            f"{filters.min_chars}"
    if filters.max_chars is not None and chars > filters.max_chars:
        return "max_chars", f"the solution has {chars} characters, more than --max-chars " \
                            f"{filters.max_chars}"
    return None


def chosen(preset: str | None, single: ContestFilters) -> ContestFilters | None:
    """The filters a build asks for: the ``preset``'s, with each one ``single`` sets in its
    place; None when none is asked. ``SettingError`` names the setting that no build can
    use (settings are named by the fields of ``ContestFilters``, the preset
    ``contest_filters``)."""
    at_least_one({"min_chars": single.min_chars, "max_chars": single.max_chars,
                  "max_steps_per_call": single.max_steps_per_call,
                  "max_per_question": single.max_per_question})
    if preset is not None and preset not in PRESETS:
        raise SettingError(f"{{0}} is one of {', '.join(PRESETS)}, not {preset!r}",
                           "contest_filters")
    if single.dedupe is not None and single.dedupe not in DEDUPE_MODES:
        raise SettingError(f"{{0}} is one of {', '.join(DEDUPE_MODES)}, not "
                           f"{single.dedupe!r}", "dedupe")
    filters = single.over(PRESETS[preset]) if preset is not None else single
    if filters.min_chars is not None and filters.max_chars is not None \
            and filters.min_chars > filters.max_chars:
        raise SettingError(f"no solution has at least {filters.min_chars} and at most "
                           f"{filters.max_chars} characters ({{0}}, {{1}})", "min_chars",
                           "max_chars")
    return filters if filters.active else None
