"""The CodeSense report's finer analyses, and what every CodeSense table shares: reading a
run's summary of a task (``KindSummary``) into cells, strict and string match per run.

* **Function size**: accuracy by the lines of code of the function the question is asked
  in, binned as the paper's Table 12 (``analysis.shape.FUNCTION_SIZE_BINS``: small,
  medium, large); scoring records each instance's size (``function_lines``), so a run
  scored before it was says ``not recorded``.
* **Block size**: the block task's kinds ``block-k`` binned
  (``analysis.shape.BLOCK_SIZE_BINS``); ``results.json`` keeps each size's numbers
  (``task_metrics.block.by_kind``).
* **Statement kind by language**: a matrix of accuracy per statement kind and language of
  the code (Python, C, Java), drawn as a heatmap, where the runs' statements span languages.
* **Abstract category**: accuracy per abstract category of the value asked for (the paper's
  Table 6), concrete questions beside abstract ones.
* **Spread**: the mean, standard deviation, least and greatest of each task's accuracy over
  repeated runs (run folders of one model, prompt protocol, sampling settings and suite,
  as the paper's Table 10), and over the sample indices of one run drawn with ``-n``.

Groups are combined from the shares a summary records (``Share.combined``), so every number
is a share of samples, as the rest of the report's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from execbench.analysis.shape import BLOCK_SIZE_BINS, FUNCTION_SIZE_BINS, SizeBins, bin_order
from execbench.program import LANGUAGES
from execbench.reports.tables import Cell, Table, model_labels, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.common.abstract_payload import (
    UNFILED,
    KindSummary,
    Share,
    category_order,
)

TASKS = ("statement", "block", "loop", "branch", "output", "input", "alias")
"""The tasks whose summaries the CodeSense report reads (``task_metrics.TASK``), in the
order it shows them."""
KINDS = ("assignment", "arithmetic", "constant", "branch", "call")
"""The statement kinds, in the paper's order."""
MEASURES = ("strict", "string")
NOTE = ("strict: type-aware equality of the parsed answer (1 != 1.0 != True); string: the "
        "published benchmark's lower-cased, whitespace-stripped text comparison. Samples "
        "in brackets. A published value that is no literal has only the string comparison: "
        "strict leaves it out, and says 'not comparable' where nothing is left.")
NOT_COMPARABLE = "not comparable"
"""The strict cell of a group whose every sample has no type-aware verdict."""
NOT_RECORDED = "not recorded"
"""The cells of a run whose summary does not hold a split (scored before it was recorded)."""
RESCORE = ("'not recorded': the run was scored before execbench recorded it; `execbench "
           "score RUN` scores the run's answers again and records it.")


def noted(rows: list[list[Cell]], note: str) -> str:
    """A table's note, with what ``not recorded`` means where a cell of ``rows`` says it."""
    return f"{note} {RESCORE}" if any(NOT_RECORDED in row for row in rows) else note


def summary_of(result: Results, task: str) -> KindSummary | None:
    """The run's summary of the task; None when it has none (no such task, or its
    questions were not asked in CodeSense's style)."""
    record = result.task_metrics.get(task)
    return KindSummary.from_record(record) if isinstance(record, dict) else None


def summaries(results: Sequence[Results], task: str) -> list[KindSummary | None]:
    return [summary_of(result, task) for result in results]


def headers(keys: list[str], results: Sequence[Results]) -> list[str]:
    """The key columns, then a strict and a string column per run."""
    return [*keys, *(f"{label} {measure}" for label in run_labels(results)
                     for measure in MEASURES)]


def cells(group: Share | None) -> list[Cell]:
    """A group's strict and string-match cells (``-`` for a run without it)."""
    if group is None:
        return [None, None]
    strict: Cell = percent(group.strict)
    if strict is None and group.not_comparable:
        strict = NOT_COMPARABLE
    return [strict, percent(group.string_match)]


def sample_count(groups: Iterable[Share | None]) -> str:
    """The sample count of a row: one number, or each distinct one where runs differ."""
    counts = {g.samples for g in groups if g is not None and g.samples is not None}
    return "/".join(str(c) for c in sorted(counts)) or "0"


Split = Mapping[str, Share] | None
"""One run's groups of a split (by bin, by category): None where its summary does not hold
the split (``NOT_RECORDED``), an empty mapping where it has no samples of the task."""


def _rows(keys: list[Cell], names: list[str], label: Callable[[str], str] | str,
          splits: list[Split]) -> list[list[Cell]]:
    """A row per name: the keys, the name as ``label`` shows it (or ``label`` itself) with
    its sample count, a pair of cells per run."""
    rows = []
    for name in names:
        groups = [None if split is None else split.get(name) for split in splits]
        shown = label if isinstance(label, str) else label(name)
        row: list[Cell] = [*keys, f"{shown} ({sample_count(groups)})"]
        for split, group in zip(splits, groups, strict=True):
            row += [NOT_RECORDED, NOT_RECORDED] if split is None else cells(group)
        rows.append(row)
    return rows


def binned(groups: Mapping[str, Share], bins: SizeBins, size: Callable[[str], int | None]
           ) -> dict[str, Share]:
    """Groups keyed by a size merged into ``bins``' ranges, in their order; a group whose
    key ``size`` reads no size from is kept under its own name, after them."""
    members: dict[str, list[Share]] = {}
    for name, share in groups.items():
        found = size(name)
        members.setdefault(name if found is None else bins.of(found), []).append(share)
    ranges = [name for name in bins.names if name in members]
    others = sorted(set(members) - set(ranges), key=lambda name: (name == UNFILED, bin_order(name)))
    return {name: Share.combined(members[name]) for name in [*ranges, *others]}


def _block_size(kind: str) -> int | None:
    prefix, _, size = kind.partition("-")
    return int(size) if prefix == "block" and size.isdigit() else None


def block_bins(by_kind: Mapping[str, Share]) -> dict[str, Share]:
    """The block task's ``block-k`` kinds in ``BLOCK_SIZE_BINS``."""
    return binned(by_kind, BLOCK_SIZE_BINS, _block_size)


def shown_kinds(summary: KindSummary, task: str) -> Mapping[str, Share]:
    """A summary's groups by kind as the report shows them: the block task's in ranges."""
    return block_bins(summary.by_kind) if task == "block" else summary.by_kind


def block_label(name: str) -> str:
    return f"block {name}" if name[:1].isdigit() or name[:1] == "<" else name


def size_bins(summary: KindSummary) -> dict[str, Share]:
    """A summary's function sizes in ``FUNCTION_SIZE_BINS``."""
    return binned(summary.by_function_lines, FUNCTION_SIZE_BINS,
                  lambda name: int(name) if name.isdigit() else None)


def _size_label(name: str) -> str:
    """A size range with its word (``small: 1-9``); ``unknown`` for ``UNFILED``."""
    return "unknown" if name == UNFILED else FUNCTION_SIZE_BINS.label(name)


def _order(names: Iterable[str], key: Callable[[str], Any]) -> list[str]:
    return sorted(set(names), key=key)


def _size_order(name: str) -> tuple[int, int, str]:
    known = FUNCTION_SIZE_BINS.names
    return (0, known.index(name), name) if name in known else (1, int(name == UNFILED), name)


def _sizes(summary: KindSummary | None) -> Split:
    """A run's function sizes of a task, binned: None where its scores recorded none (every
    question in CodeSense's style records it, ``abstract.asked``: a run scored before)."""
    if summary is None or not summary.overall.samples and not summary.by_function_lines:
        return {}
    if not summary.by_function_lines:
        return None
    return size_bins(summary)


def function_size_table(results: Sequence[Results]) -> Table | None:
    """Accuracy by the size of the function asked about, per task and run. A run whose
    summary of a task has no sizes says ``not recorded``; None when no run has a task
    whose scores record sizes."""
    rows: list[list[Cell]] = []
    for task in TASKS:
        splits = [_sizes(summary) for summary in summaries(results, task)]
        names = _order((name for split in splits if split for name in split), _size_order)
        if names:
            rows += _rows([task], names, _size_label, splits)
        elif any(split is None for split in splits):
            rows.append([task, NOT_RECORDED, *(cell for split in splits for cell in (
                [NOT_RECORDED, NOT_RECORDED] if split is None else [None, None]))])
    if not rows:
        return None
    bins = ", ".join(FUNCTION_SIZE_BINS.label(name) for name in FUNCTION_SIZE_BINS.names)
    return Table("Accuracy by function size, in lines of code (% of samples)",
                 headers(["task", "function size"], results), rows, keys=2,
                 note=noted(rows, f"The lines of code (non-blank, not only comment) of the "
                            f"function the question is asked in, in the CodeSense paper's "
                            f"sizes ({bins}); unknown: samples of an instance no answer was "
                            f"scored for (every request failed). {NOTE}"))


def kind_language_table(results: Sequence[Results]) -> Table | None:
    """Statement accuracy per kind (rows) and language of the code (a pair of columns
    each), a block of rows per run; None unless the runs' statements span languages."""
    found = summaries(results, "statement")
    languages = _languages(found)
    if len(languages) < 2:
        return None
    rows: list[list[Cell]] = []
    for label, summary in zip(run_labels(results), found, strict=True):
        if summary is None:
            continue
        splits = [summary.kinds_of(language) for language in languages]
        present = {kind for split in splits if split for kind in split}
        if any(split is None for split in splits):
            present |= set(summary.by_kind)
        kinds = [kind for kind in KINDS if kind in present] + sorted(present - set(KINDS))
        for kind in kinds:
            row: list[Cell] = [label, kind]
            for split in splits:
                row += [NOT_RECORDED, NOT_RECORDED] if split is None else cells(split.get(kind))
            rows.append(row)
        rows.append([label, "all", *(cell for language in languages
                                     for cell in cells(summary.by_language.get(language)))])
    names = [LANGUAGES.get(language, language) for language in languages]
    return Table("Statement accuracy by kind and language (% of samples)",
                 ["run", "kind", *(f"{name} {measure}" for name in names
                                   for measure in MEASURES)], rows, keys=2,
                 note=noted(rows, "A row per statement kind of each run, a pair of columns "
                            "per language of the code. A run must ask statements of several "
                            f"languages in one suite to fill several columns. {NOTE}"))


def _languages(found: Iterable[KindSummary | None]) -> list[str]:
    present = {language for summary in found if summary is not None
               for language in summary.by_language}
    return sorted(present, key=lambda key: (key not in LANGUAGES, list(LANGUAGES).index(key)
                                            if key in LANGUAGES else 0, key))


def _categories(summary: KindSummary | None, values: str) -> Split:
    if summary is None:
        return {}
    if not summary.by_category:
        return None if summary.by_values.get(values, Share()).samples else {}
    return summary.by_category.get(values, {})


def category_table(results: Sequence[Results]) -> Table | None:
    """Accuracy per abstract category of the value asked for: per task and category, the
    concrete questions' row and the abstract questions' row, per run; None when no run
    recorded categories."""
    rows: list[list[Cell]] = []
    for task in TASKS:
        found = summaries(results, task)
        if not any(summary is not None and summary.by_category for summary in found):
            continue
        by_values = {values: [_categories(summary, values) for summary in found]
                     for values in ("concrete", "abstract")}
        names = _order((name for splits in by_values.values() for split in splits if split
                        for name in split), category_order)
        for name in names:
            for values, splits in by_values.items():
                if any(split and name in split for split in splits):
                    rows += _rows([task, "no category" if name == UNFILED else name],
                                  [name], values, splits)
    if not rows:
        return None
    return Table("Accuracy by abstract category of the value (% of samples)",
                 headers(["task", "category", "values"], results), rows, keys=3,
                 note=noted(rows, "The category of the value asked for (CodeSense's Table "
                            "6), whether the question asked for the value (concrete) or its "
                            "category (abstract). no category: a value whose type has none (an "
                            "object, bytes, a struct), or an instance no answer was scored "
                            "for. Yes/no questions are left out (the class balance shows "
                            f"them). {NOTE}"))


@dataclass(frozen=True)
class Spread:
    """Numbers measured several times: their count, mean, sample standard deviation (None
    for one), least and greatest; all None for none."""

    count: int
    mean: float | None
    sd: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        known = [value for value in values if value is not None]
        if not known:
            return cls(0, None, None, None, None)
        return cls(len(known), statistics.fmean(known),
                   statistics.stdev(known) if len(known) > 1 else None, min(known),
                   max(known))

    def cells(self) -> list[Cell]:
        return [percent(value) for value in (self.mean, self.sd, self.low, self.high)]


SPREAD = ("mean", "sd", "min", "max")


def _spread_headers(keys: list[str], count: str) -> list[str]:
    return [*keys, count, *(f"{measure} {what}" for measure in MEASURES for what in SPREAD)]


REPEAT_KEY = ("suite", "limit", "tasks", "temperature", "top_p", "max_tokens")
"""What runs of one model asked the same way must share to be repeats (beside the model and
protocol of their label), in the words a label tells groups apart by."""


def _repeat_key(result: Results) -> tuple[Any, ...]:
    config, generate = result.config, result.config.generate
    return (result.suite_sha256[:8], config.limit, ",".join(config.tasks or ()) or None,
            generate.temperature, generate.top_p, generate.max_tokens)


def repeat_groups(results: Sequence[Results]) -> list[tuple[str, list[Results]]]:
    """The runs grouped as repeats of one another: one model asked the same way (its
    ``model_labels`` label: the model, and the prompt protocol where runs differ in it),
    with the same sampling settings, on the same instances (suite, ``--limit``,
    ``--tasks``), in the order of their first run. Groups that would share a label are
    told apart by what differs among them (``suite 1a2b3c4d, temperature 0.8``)."""
    groups: dict[tuple[str, tuple[Any, ...]], list[Results]] = {}
    for label, result in zip(model_labels(results), results, strict=True):
        groups.setdefault((label, _repeat_key(result)), []).append(result)
    named = []
    for label, key in groups:
        others = [other for name, other in groups if name == label]
        differ = [f"{word} {'-' if part is None else part}"
                  for word, part, *rest in zip(REPEAT_KEY, key, *others, strict=True)
                  if len(set(rest)) > 1]
        named.append(f"{label} ({', '.join(differ)})" if differ else label)
    return list(zip(named, groups.values(), strict=True))


def spread_table(results: Sequence[Results]) -> Table | None:
    """Each task's accuracy over repeated runs (``repeat_groups``): mean, standard
    deviation, least and greatest, strict and string match; a run without repeats is one
    row with its value. None when no run has a CodeSense task."""
    rows: list[list[Cell]] = []
    for label, runs in repeat_groups(results):
        for task in TASKS:
            found = [summary for summary in summaries(runs, task) if summary is not None]
            if not found:
                continue
            strict = Spread.of(summary.overall.strict for summary in found)
            string = Spread.of(summary.overall.string_match for summary in found)
            rows.append([label, task, len(found), *strict.cells(), *string.cells()])
    if not rows:
        return None
    return Table("Spread of accuracy across repeated runs (% of samples)",
                 _spread_headers(["runs of", "task"], "runs"), rows, keys=2,
                 note="Over run folders: each run's accuracy over all its samples, the runs "
                      "grouped when they asked one model the same way (prompt protocol, "
                      "sampling settings) the same instances (suite, --limit, --tasks); "
                      "sd: the sample standard deviation (n - 1), as the CodeSense paper's "
                      "Table 10; a run without repeats is a row of its own, with no sd. "
                      "The spread over the samples inside one run (-n) is in the next "
                      "table, where a run drew several.")


def sample_spread_table(results: Sequence[Results]) -> Table | None:
    """Each task's accuracy per sample index of a run drawn with ``-n`` > 1: mean, standard
    deviation, least and greatest over the indices. None when no run drew several."""
    rows: list[list[Cell]] = []
    for label, result in zip(run_labels(results), results, strict=True):
        if result.config.n < 2:
            continue
        for task in TASKS:
            summary = summary_of(result, task)
            if summary is None:
                continue
            if not summary.by_sample:
                rows.append([label, task, result.config.n, *[NOT_RECORDED] * 8])
                continue
            shares = summary.by_sample.values()
            rows.append([label, task, len(summary.by_sample),
                         *Spread.of(share.strict for share in shares).cells(),
                         *Spread.of(share.string_match for share in shares).cells()])
    if not rows:
        return None
    return Table("Spread of accuracy across the samples of one run (% of samples)",
                 _spread_headers(["run", "task"], "samples"), rows, keys=2,
                 note=noted(rows, "Over sample indices: the accuracy of every instance's "
                            "first sample, of its second, ... (a run drawn with -n); sd: the "
                            "sample standard deviation (n - 1). The spread over repeated run "
                            "folders is in the table before."))
