"""What the simulation task's results hold, typed: what the scoring of a sample says of it
(``Judged``, its ``Divergence``), as the summary and the vetting report read it from the
sample's ``extra``; and the run's summary (``SimulationSummary``, ``results.json``:
``task_metrics.simulation``), computed in ``summary`` and read back by the ``ces`` report.

Each record is written and read here and nowhere else. Reading tolerates an older or
partial record: a missing or malformed count or share reads as None, a missing mapping as
empty, so that a results file from before a field existed still reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from execbench.json_types import JSON, JSONObject
from execbench.tasks.common.json_fields import (
    as_object,
    counts,
    mapping,
    number,
    optional_count,
    optional_text,
)

CATEGORIES = ("CO", "LO", "LC", "Others")
"""The construct categories (the paper's Table 1): only conditionals, only loops, loops and
conditionals, neither."""
CLASSES = {(True, True): "coherent_correct", (True, False): "coherent_incorrect",
           (False, True): "incoherent_correct", (False, False): "incoherent_incorrect"}
"""(coherent, output right) -> the sample's class."""
RULES = ("rule1", "rule2", "rule3")
LEVELS = ("strong", "weak", "random")
"""The consistency levels of a program's calls (``coverage.consistency``)."""


@dataclass(frozen=True)
class Divergence:
    """Where a coherent simulation with a wrong output first left the real run
    (``rules.divergence``): its first wrong property, or the output itself."""

    kind: str
    """The paper's kind of the property (``sites.QUADRUPLE``), or ``output``."""
    id: str
    """The property's tag, or ``output``."""
    line: int | None
    """The property's line; None for the output."""
    quadruple: str
    """The state of the four kinds at that statement: ``T`` right, ``F`` wrong, ``-`` not
    applicable (``----`` for the output)."""
    label: str | None = None
    """What the property names; None for the output."""

    def to_record(self) -> JSONObject:
        record: JSONObject = {"kind": self.kind, "id": self.id, "line": self.line}
        if self.label is not None:
            record["label"] = self.label
        record["quadruple"] = self.quadruple
        return record

    @classmethod
    def from_record(cls, record: JSON) -> Divergence | None:
        """The divergence a sample's ``extra`` records; None where there is none (an
        empty or missing record). A missing text field reads as empty."""
        if not isinstance(record, dict) or not record:
            return None
        return cls(optional_text(record, "kind") or "", optional_text(record, "id") or "",
                   optional_count(record, "line"), optional_text(record, "quadruple") or "",
                   optional_text(record, "label"))


AT_OUTPUT = Divergence("output", "output", None, "----")
"""The divergence of a simulation whose every property is right but the output."""


@dataclass(frozen=True)
class Judged:
    """What the scoring of a simulation sample says of it, read from its ``extra``."""

    coherence: str | None
    """Its class (``CLASSES``); None for a sample with no readable simulation."""
    rules: tuple[str, ...] = ()
    """The coherence rules that fired."""
    divergence: Divergence | None = None
    """Where it first went wrong, for a coherent simulation with a wrong output."""
    output_right: bool = False
    """The stated output is the value returned (type-aware), coherent or not."""
    output_matched: bool = False
    """The stated output's text passes the lenient string comparison with the value's
    repr (``common.answers.string_match``), even where it does not parse."""

    @classmethod
    def of(cls, extra: JSONObject | None) -> Judged:
        found = extra or {}
        rules = found.get("rules")
        return cls(optional_text(found, "class"),
                   tuple(r for r in rules if isinstance(r, str)) if isinstance(rules, list)
                   else (),
                   Divergence.from_record(found.get("divergence")),
                   found.get("output_right") is True, found.get("output_string_match") is True)


@dataclass(frozen=True)
class Group:
    """A group of samples (all, a construct category, a source): the share of them in
    each class, over every sample of the group (None for an empty group), with the failed
    and unreadable ones, the rules fired and the divergence points (counts of samples)."""

    samples: int | None
    coherent_correct: float | None
    coherent_incorrect: float | None
    incoherent_correct: float | None
    incoherent_incorrect: float | None
    errors: int | None
    unparsable: int | None
    rules: Mapping[str, int]
    """Rule -> the samples it fired on (``RULES``, in order)."""
    divergence: Mapping[str, int]
    """Divergence kind -> samples, sorted by kind."""
    quadruples: Mapping[str, int]
    """Statement state at the divergence point -> samples, sorted."""
    output_right: float | None = None
    """The share of samples whose stated output is right (type-aware), coherent or not."""
    output_string_match: float | None = None
    """The share of samples whose stated output the lenient string comparison accepts
    (``common.answers``): an unquoted string counts. None in a record from before it."""

    def to_record(self) -> JSONObject:
        return {"samples": self.samples, "coherent_correct": self.coherent_correct,
                "coherent_incorrect": self.coherent_incorrect,
                "incoherent_correct": self.incoherent_correct,
                "incoherent_incorrect": self.incoherent_incorrect, "errors": self.errors,
                "unparsable": self.unparsable, "rules": dict(self.rules),
                "divergence": dict(self.divergence), "quadruples": dict(self.quadruples),
                "output_right": self.output_right,
                "output_string_match": self.output_string_match}

    @classmethod
    def from_record(cls, record: JSON) -> Group:
        found = as_object(record)
        return cls(optional_count(found, "samples"), number(found, "coherent_correct"),
                   number(found, "coherent_incorrect"), number(found, "incoherent_correct"),
                   number(found, "incoherent_incorrect"), optional_count(found, "errors"),
                   optional_count(found, "unparsable"), counts(found, "rules"),
                   counts(found, "divergence"), counts(found, "quadruples"),
                   number(found, "output_right"), number(found, "output_string_match"))


NO_GROUP = Group.from_record({})
"""A group a record lacks: every number unknown."""


@dataclass(frozen=True)
class Spectrum:
    """Some programs by the consistency level of their calls: the share at each level
    (None when there is no program) and how many programs there are."""

    strong: float | None
    weak: float | None
    random: float | None
    programs: int | None

    @property
    def levels(self) -> tuple[float | None, float | None, float | None]:
        """The shares in the order of ``LEVELS``."""
        return (self.strong, self.weak, self.random)

    def to_record(self) -> JSONObject:
        return {"strong": self.strong, "weak": self.weak, "random": self.random,
                "programs": self.programs}

    @classmethod
    def from_record(cls, record: JSON) -> Spectrum:
        found = as_object(record)
        return cls(number(found, "strong"), number(found, "weak"), number(found, "random"),
                   optional_count(found, "programs"))


NO_SPECTRUM = Spectrum.from_record({})
"""A spectrum a record lacks (one written before it was counted): every number unknown."""


@dataclass(frozen=True)
class Consistency(Spectrum):
    """Programs by how their calls were simulated (the paper's Figure 6): the spectrum of
    all programs (the share at each level, None when there is no program), the share of
    those whose calls differ in coverage (the most that could be strong), and the levels
    over those programs alone (``differing``): only there can a program's calls show that
    a model follows more than one path, so only there does the spectrum test consistency.
    Its record is the spectrum's, then the two."""

    different_coverage: float | None = None
    differing: Spectrum = NO_SPECTRUM
    """The levels over the programs with two calls of different known coverage; unknown
    in a record from before it was kept."""

    def to_record(self) -> JSONObject:
        return {**super().to_record(), "different_coverage": self.different_coverage,
                "differing": self.differing.to_record()}

    @classmethod
    def from_record(cls, record: JSON) -> Consistency:
        found = as_object(record)
        every = Spectrum.from_record(found)
        return cls(*every.levels, every.programs, number(found, "different_coverage"),
                   Spectrum.from_record(found.get("differing")))


NO_CONSISTENCY = Consistency.from_record({})
"""A consistency block a record lacks: every number unknown."""


@dataclass(frozen=True)
class SimulationSummary:
    """A run's numbers for the task: over all samples, per construct category (every one
    of ``CATEGORIES``, in order) and per source (sorted), and the consistency of the
    programs' calls, over all and per category."""

    overall: Group
    """All samples (the record's ``all``)."""
    by_category: Mapping[str, Group]
    by_source: Mapping[str, Group]
    consistency: Consistency
    consistency_by_category: Mapping[str, Consistency]

    def category(self, name: str) -> Group:
        """The group of a construct category; unknown numbers when the record lacks it."""
        return self.by_category.get(name, NO_GROUP)

    def category_consistency(self, name: str) -> Consistency:
        """The consistency of a category's programs; unknown when the record lacks it."""
        return self.consistency_by_category.get(name, NO_CONSISTENCY)

    def to_record(self) -> JSONObject:
        return {"all": self.overall.to_record(),
                "by_category": {name: g.to_record() for name, g in self.by_category.items()},
                "by_source": {name: g.to_record() for name, g in self.by_source.items()},
                "consistency": self.consistency.to_record(),
                "consistency_by_category": {
                    name: c.to_record() for name, c in self.consistency_by_category.items()}}

    @classmethod
    def from_record(cls, record: JSON) -> SimulationSummary:
        """The summary of a ``task_metrics.simulation`` record; an older or partial one
        reads with None for what it lacks (and no groups where a mapping is missing)."""
        found = as_object(record)
        return cls(Group.from_record(found.get("all")),
                   {name: Group.from_record(g)
                    for name, g in mapping(found, "by_category").items()},
                   {name: Group.from_record(g) for name, g in mapping(found, "by_source").items()},
                   Consistency.from_record(found.get("consistency")),
                   {name: Consistency.from_record(c)
                    for name, c in mapping(found, "consistency_by_category").items()})
