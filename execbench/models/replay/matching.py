"""Which instance of a run each id of an answers file names, and what is left over.

An id names an instance in one of two ways, tried in this order:

1. it is the instance's id (``output/cruxeval/sample_12/0``): what a JSONL answers file
   written from a suite holds;
2. with ``-M task=T``, it is the record id a dataset gave the program (CRUXEval's
   ``sample_12``, the ``id`` of an lm-eval CRUXEval document), naming the ``T`` instance
   of the record's first call, unmutated and with no variant. With ``-M source=NAME``
   only that source's records are named; a record id two sources of the run share is
   refused rather than guessed.

Nothing is dropped without a word: answers whose id names no instance of the run, and
instances the file has no answer for, are counted and listed (``Matched.record``), and
said in one line each before the answers come (``Matched.notices``). A file none of whose
ids names an instance of the run is refused: that run would be a table of errors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from execbench.models.replay.answers import AnswersError, shown

if TYPE_CHECKING:
    from execbench.json_types import JSONObject
    from execbench.tasks.base import Instance

FIRST = 3
"""Ids a notice names before it says how many more there are."""


@dataclass
class Matched:
    """The instances of a run that the file answers, and what is left over either way."""

    by_instance: dict[str, str] = field(default_factory=dict)
    """The file's id for each answered instance of the run."""
    unanswered: list[str] = field(default_factory=list)
    """Instances of the run with no answer in the file, in suite order."""
    unknown: list[str] = field(default_factory=list)
    """Ids of the file that name no instance of the run, in the file's order."""
    fewest: int = 0
    most: int = 0
    """The fewest and most answers the file holds for an answered instance."""

    def notices(self, name: str, passed_over: int, listed: str) -> list[str]:
        """One line for each thing left over (nothing when every id and instance met);
        ``listed`` names where every such id is written."""
        said = []
        if self.unknown:
            count = len(self.unknown)
            said.append(f"{_many(count, 'id')} in {name} {'names' if count == 1 else 'name'} "
                        f"no instance of this run ({_first(self.unknown)}; all in {listed}): "
                        "not scored")
        if self.unanswered:
            total = len(self.unanswered) + len(self.by_instance)
            said.append(f"{len(self.unanswered)} of the run's {total} instances have no "
                        f"answer in {name} ({_first(self.unanswered)}; all in {listed}): "
                        "each of their samples is logged as an error")
        if self.fewest != self.most:
            said.append(f"{name} holds {self.fewest} to {self.most} answers per instance: "
                        "an instance's samples past its last answer are logged as errors")
        if passed_over:
            said.append(f"{_many(passed_over, 'line')} of {name} "
                        f"{'repeats' if passed_over == 1 else 'repeat'} a document under "
                        "another lm-eval filter (the same responses): read once")
        return said

    def record(self) -> JSONObject:
        """What ``replay.json`` keeps of the matching: the counts and every id."""
        return {"answered_instances": len(self.by_instance),
                "unanswered_instances": list(self.unanswered),
                "ids_naming_no_instance": list(self.unknown),
                "answers_per_instance": [self.fewest, self.most]}


def _many(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _first(ids: list[str]) -> str:
    named = ", ".join(shown(key) for key in ids[:FIRST])
    return named + (f" and {len(ids) - FIRST} more" if len(ids) > FIRST else "")


def record_id(instance: Instance, task: str, source: str | None) -> str | None:
    """The dataset's id of the record whose program the instance asks about, when the
    instance is the ``task`` question of its first call (of ``source`` if named); else
    None."""
    if instance.task != task or instance.call_index != 0 or instance.variant is not None \
            or instance.mutation is not None or source not in (None, instance.source):
        return None
    prefix = f"{instance.source}/"
    return instance.program_id[len(prefix):] if instance.program_id.startswith(prefix) \
        else None


def key_of(instance: Instance, counts: dict[str, int], task: str | None,
           source: str | None, one_task: bool = False) -> str | None:
    """The file's id that names ``instance`` (see the module), or None. With ``one_task``
    (a file that answers ``task`` alone, as a generations.json does) an instance of
    another task is named by none."""
    if one_task and instance.task != task:
        return None
    if instance.id in counts:
        return instance.id
    found = None if task is None else record_id(instance, task, source)
    return found if found is not None and found in counts else None


def match(counts: dict[str, int], instances: Iterable[Instance], *, name: str,
          task: str | None, source: str | None, one_task: bool = False) -> Matched:
    """Each instance of the run met with the file's id that names it (``counts``: how
    many answers each id has, in file order)."""
    matched = Matched()
    claimed: dict[str, str] = {}
    sizes = []
    example = None
    for instance in instances:
        example = example or instance.id
        key = key_of(instance, counts, task, source, one_task)
        if key is None:
            matched.unanswered.append(instance.id)
            continue
        if key in claimed:
            raise AnswersError(f"the id {shown(key)} in {name} names two instances of this "
                               f"run ({shown(claimed[key])}, {shown(instance.id)}): name the "
                               "source with -M source=NAME")
        claimed[key] = instance.id
        matched.by_instance[instance.id] = key
        sizes.append(counts[key])
    matched.unknown = [key for key in counts if key not in claimed]
    if not claimed:
        hint = "" if task is not None else \
            ", or with -M task=TASK the ids a dataset gave its records (CRUXEval's sample_0)"
        raise AnswersError(f"no id in {name} names an instance of this run "
                           f"({_first(matched.unknown)}); ids are instance ids such as "
                           f"{shown(example or '?')}{hint}")
    matched.fewest, matched.most = min(sizes), max(sizes)
    return matched
