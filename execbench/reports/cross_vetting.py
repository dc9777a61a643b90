"""The ``vetted-output`` report: a run's output predictions checked against what the same
run said about the same call in the other tasks that asked about it.

A right output can come from a pattern or a lucky guess rather than from following the
run. When one suite asks the ``output`` task, the ``coverage`` task (which lines run,
DexBench's forward question) and the ``simulation`` task (CES) about the same program and
call, the other two answers are a witness: a model that traced the run should also say
which lines ran, and simulate it coherently. Per run this report gives

* **vetted output pass@1**, by three rules, each next to the plain output pass@1 on the
  same calls and the drop in points: *vetted by simulation* (the output is right and the
  simulation of that call coherent, CES's coherence: no rule broken, whatever its own
  stated output), *vetted by coverage* (the output is right and the executed lines
  exactly right), *vetted by either* (right output, and at least one of the two holds;
  only calls asked in all three tasks);
* **the per-call matrix**: output right or wrong against coverage right or wrong, and
  against a simulation that is coherent, incoherent or absent (no readable simulation:
  an answer that could not be read, or a failed request). "Right output, wrong coverage"
  and "right output, incoherent simulation" are the outputs the other task does not back.

Which instances ask about the same call comes from the run's suite (each instance's
``program_id`` and ``call_index``; a mutant or buggy variant has a program id of its own),
so a run whose suite is gone, or changed since the run, is reported with a note and not
vetted. Only the plain question of each task is read (an instance with a ``variant`` is
not). Samples are paired by index, as DexBench's dual metric pairs them: sample i of the
output task with sample i of the other task, over the indexes both have. Each call weighs
one: its share of vetted pairs is averaged over the calls, which with one sample per
instance is the share of calls. Calls asked in the output task alone, or not in it, are
left out and counted in the calls table.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from execbench.metrics import is_correct
from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.run_files import Unread, run_instances, run_log
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.ces.summary_payload import Judged

OUTPUT, COVERAGE, SIMULATION = "output", "coverage", "simulation"
TASKS = (OUTPUT, COVERAGE, SIMULATION)
COHERENT, INCOHERENT, ABSENT = "coherent", "incoherent", "absent"
SIMULATION_STATES = (COHERENT, INCOHERENT, ABSENT)
RIGHT, WRONG = "right", "wrong"
RULES = ("simulation", "coverage", "either")
"""The vetting rules, by what vets a right output: a coherent simulation, a right coverage
answer, either of the two."""

CallKey = tuple[str, int]
"""(program id, call index): one call of one program, as the suite names it."""


@dataclass
class Answers:
    """What one run said about one call, per sample index, in each task that asked it."""

    output: dict[int, bool] = field(default_factory=dict)
    coverage: dict[int, bool] = field(default_factory=dict)
    simulation: dict[int, str] = field(default_factory=dict)
    """Sample index -> ``COHERENT``, ``INCOHERENT`` or ``ABSENT``."""

    def asked(self) -> tuple[bool, bool, bool]:
        return bool(self.output), bool(self.coverage), bool(self.simulation)


@dataclass(frozen=True)
class RunAnswers:
    """One run's answers by call, or why they could not be read (``problem``)."""

    calls: dict[CallKey, Answers]
    problem: str | None = None


def simulation_state(extra: object) -> str:
    """A simulation sample's state from what its scoring added: coherent, incoherent, or
    absent where it holds no readable simulation (no class: unparsable, failed)."""
    kind = Judged.of(extra if isinstance(extra, dict) else None).coherence or ""
    for state in (INCOHERENT, COHERENT):
        if kind.startswith(state):
            return state
    return ABSENT


def _calls_of(result: Results) -> dict[str, tuple[CallKey, str]]:
    """Per instance id of the three tasks' plain questions, its call and task (``Unread``
    says why the run's suite cannot tell: gone, unreadable, changed since the run)."""
    return {instance.id: ((instance.program_id, instance.call_index), instance.task)
            for instance in run_instances(result)
            if instance.task in TASKS and instance.variant is None}


def read_answers(result: Results) -> RunAnswers:
    """The run's answers by call, streamed from its samples (only an index and a verdict
    are kept per sample); a hostile or unreadable suite or log gives a problem, not an
    error."""
    calls: dict[CallKey, Answers] = {}
    try:
        wanted = _calls_of(result)
        for sample in run_log(result):
            named = wanted.get(sample.instance_id)
            if named is None or sample.task != named[1]:
                continue
            answers = calls.setdefault(named[0], Answers())
            if named[1] == OUTPUT:
                answers.output[sample.sample] = is_correct(sample)
            elif named[1] == COVERAGE:
                answers.coverage[sample.sample] = is_correct(sample)
            else:
                answers.simulation[sample.sample] = simulation_state(sample.extra)
    except Unread as exc:
        return RunAnswers({}, f"{exc}: not vetted")
    return RunAnswers(calls)


NEEDS = {"simulation": (SIMULATION,), "coverage": (COVERAGE,),
         "either": (COVERAGE, SIMULATION)}
"""The tasks besides the output whose answers each rule reads."""


def _tasks(answers: Answers) -> dict[str, dict[int, Any]]:
    return {COVERAGE: answers.coverage, SIMULATION: answers.simulation}


def _backed(answers: Answers, rule: str, index: int) -> bool:
    """Whether sample ``index`` of the rule's other tasks backs the output."""
    by_simulation = answers.simulation.get(index) == COHERENT
    by_coverage = answers.coverage.get(index) is True
    return {"simulation": by_simulation, "coverage": by_coverage,
            "either": by_simulation or by_coverage}[rule]


def _pairs(answers: Answers, rule: str) -> list[tuple[bool, bool]] | None:
    """(output right, output vetted) for each sample index the rule's tasks share on the
    call; None where the call is not asked in them."""
    common = set(answers.output)
    for task in NEEDS[rule]:
        common &= _tasks(answers)[task].keys()
    if not common:
        return None
    return [(answers.output[i], answers.output[i] and _backed(answers, rule, i))
            for i in sorted(common)]


@dataclass(frozen=True)
class Vetted:
    """One run's output pass@1 by one rule: plain and vetted over the same calls."""

    calls: int
    plain: float
    vetted: float

    @property
    def drop(self) -> float:
        """Points lost to vetting."""
        return 100 * (self.plain - self.vetted)


def vetted(calls: Iterable[Answers], rule: str) -> Vetted | None:
    """The output pass@1 of the calls the rule's tasks share, plain and vetted, each call
    weighing one (its share of right, and of vetted, sample pairs); None with no such call."""
    shares = []
    for answers in calls:
        pairs = _pairs(answers, rule)
        if pairs is not None:
            shares.append((sum(right for right, _ in pairs) / len(pairs),
                           sum(ok for _, ok in pairs) / len(pairs)))
    if not shares:
        return None
    return Vetted(len(shares), sum(p for p, _ in shares) / len(shares),
                  sum(v for _, v in shares) / len(shares))


@dataclass(frozen=True)
class MatrixCell:
    """One cell of a per-call matrix: matched sample pairs in it, and its share of the
    calls (each call weighing one, its pairs sharing that weight)."""

    pairs: int
    share: float


def matrix(calls: Iterable[Answers], against: str) -> dict[tuple[str, str], MatrixCell] | None:
    """Output right/wrong against ``coverage`` right/wrong or ``simulation`` coherent/
    incoherent/absent, over the calls asked in both; None with no such call."""
    states = (RIGHT, WRONG) if against == COVERAGE else SIMULATION_STATES
    counts = {(o, s): 0 for o in (RIGHT, WRONG) for s in states}
    weights = dict.fromkeys(counts, 0.0)
    total = 0
    for answers in calls:
        other = _tasks(answers)[against]
        common = sorted(answers.output.keys() & other.keys())
        if not common:
            continue
        total += 1
        for i in common:
            state = other[i] if against == SIMULATION else RIGHT if other[i] else WRONG
            cell = (RIGHT if answers.output[i] else WRONG, state)
            counts[cell] += 1
            weights[cell] += 1 / len(common)
    if not total:
        return None
    return {cell: MatrixCell(counts[cell], weights[cell] / total) for cell in counts}


def _answers(results: Sequence[Results]) -> list[RunAnswers]:
    return [read_answers(result) for result in results]


CALLS_NOTE = ("Calls are told apart by the suite's program id and call index; a call "
              "asked in the output task alone, or not in it, is left out (nothing to vet, "
              "or nothing vetted).")


def calls_table(results: Sequence[Results], read: Sequence[RunAnswers]) -> Table:
    """Per run: how many calls each pair of tasks shares, how many are left out, and why
    a run could not be vetted."""
    headers = ["run", "all three tasks", "output+simulation", "output+coverage", "left out",
               "note"]
    rows: list[list[Cell]] = []
    for label, answers in zip(run_labels(results), read, strict=True):
        kinds = [found.asked() for found in answers.calls.values()]
        every = kinds.count((True, True, True))
        sim_only = kinds.count((True, False, True))
        cov_only = kinds.count((True, True, False))
        rows.append([label, every, sim_only, cov_only,
                     len(kinds) - every - sim_only - cov_only, answers.problem])
    return Table("Calls asked in several tasks", headers, rows, note=CALLS_NOTE)


VETTED_NOTE = ("simulation: right output and a coherent simulation of the call (no CES "
               "coherence rule broken); coverage: right output and the executed lines "
               "exactly right; either: right output and one of the two (calls asked in all "
               "three tasks). plain: output pass@1 on the same calls; drop: plain - vetted. "
               "Sample i of the output task is paired with sample i of the other task; "
               "each call weighs one.")


def vetted_table(results: Sequence[Results], read: Sequence[RunAnswers]) -> Table:
    """Per run and rule: calls, plain and vetted output pass@1, the drop in points."""
    headers = ["run", "vetted by", "calls", "plain pass@1 (%)", "vetted pass@1 (%)",
               "drop (points)"]
    rows: list[list[Cell]] = []
    for label, answers in zip(run_labels(results), read, strict=True):
        for rule in RULES:
            found = vetted(answers.calls.values(), rule)
            if found is not None:
                rows.append([label, rule, found.calls, percent(found.plain),
                             percent(found.vetted), found.drop])
    return Table("Output pass@1 vetted by the same run's other answers on the call",
                 headers, rows, keys=2, note=VETTED_NOTE)


MATRIX_NOTES = {
    COVERAGE: "Right output, wrong coverage: an output the lines it claims do not back "
              "(a guess, or a pattern); wrong output, right coverage: the path followed, "
              "a value lost.",
    SIMULATION: "absent: no readable simulation (an unreadable answer or a failed "
                "request). Right output, incoherent simulation: a right answer the model's "
                "own account of the run does not hold up.",
}


def matrix_table(results: Sequence[Results], read: Sequence[RunAnswers],
                 against: str) -> Table:
    """Per run, each cell of output x ``against``: sample pairs and share of calls."""
    headers = ["run", "output", against, "sample pairs", "share of calls (%)"]
    rows: list[list[Cell]] = []
    for label, answers in zip(run_labels(results), read, strict=True):
        found = matrix(answers.calls.values(), against)
        if found is not None:
            rows += [[label, output, state, cell.pairs, percent(cell.share)]
                     for (output, state), cell in found.items()]
    return Table(f"Output against {against} on the same call", headers, rows, keys=3,
                 note=MATRIX_NOTES[against] + " Shares: each call weighs one; with one "
                                             "sample per instance, pairs are calls.")


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    read = _answers(results)
    return [vetted_table(results, read), matrix_table(results, read, COVERAGE),
            matrix_table(results, read, SIMULATION), calls_table(results, read)]


_SHADES = {RIGHT: ("tab:green", "tab:olive", "khaki"),
           WRONG: ("tab:orange", "tab:red", "lightgrey")}
"""Per output right/wrong, the colour of a call the other task backs (coverage right, or
a coherent simulation), does not back, and has no readable simulation of: the two
matrices share them, and one legend."""


def _colour(cell: tuple[str, str]) -> str:
    output, state = cell
    return _SHADES[output][0 if state in (RIGHT, COHERENT) else
                           2 if state == ABSENT else 1]


def figure(results: Sequence[Results]) -> Any:
    """Top: per rule, plain against vetted output pass@1 per run (grouped bars). Bottom:
    the per-call matrices as stacked bars of shares of calls, one bar per run, and their
    shared legend."""
    plt = pyplot()
    labels = run_labels(results)
    read = _answers(results)
    places = list(range(len(results)))
    fig, axes = plt.subplot_mosaic(
        [["simulation", "coverage", "either"], [f"by {COVERAGE}", f"by {SIMULATION}", "key"]],
        figsize=(max(2.4 * len(results) + 6.0, 10.0), 8.0), layout="constrained")
    for rule in RULES:
        axis = axes[rule]
        found = [vetted(answers.calls.values(), rule) for answers in read]
        for offset, name, colour in ((-0.2, "plain", "tab:grey"), (0.2, "vetted", "tab:blue")):
            heights = [0.0 if v is None else 100 * (v.plain if name == "plain" else v.vetted)
                       for v in found]
            axis.bar([p + offset for p in places], heights, width=0.4, color=colour,
                     label=name)
        axis.set_title(f"output pass@1 vetted by {rule} (%)", fontsize=9)
        _runs_axis(axis, places, labels, [v is None for v in found])
    axes["either"].legend(fontsize=7, loc="lower right")
    for against in (COVERAGE, SIMULATION):
        axis = axes[f"by {against}"]
        found_cells = [matrix(answers.calls.values(), against) for answers in read]
        states = (RIGHT, WRONG) if against == COVERAGE else SIMULATION_STATES
        bottom = [0.0] * len(results)
        for cell in ((o, s) for o in (RIGHT, WRONG) for s in states):
            heights = [0.0 if cells is None else 100 * cells[cell].share
                       for cells in found_cells]
            axis.bar(places, heights, bottom=bottom, color=_colour(cell))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        axis.set_title(f"output x {against}, per call (% of calls)", fontsize=9)
        _runs_axis(axis, places, labels, [cells is None for cells in found_cells])
    key = axes["key"]
    key.axis("off")
    patches = [plt.Rectangle((0, 0), 1, 1, color=_colour((output, state)))
               for output in (RIGHT, WRONG) for state in (RIGHT, WRONG, ABSENT)]
    key.legend(patches, [f"output {output}, {said}" for output in (RIGHT, WRONG)
                         for said in ("backed (coverage right / simulation coherent)",
                                      "not backed (coverage wrong / incoherent)",
                                      "no readable simulation")],
               loc="center", fontsize=7, frameon=False)
    return fig


def _runs_axis(axis: Any, places: list[int], labels: list[str], empty: list[bool]) -> None:
    """A 0-100% axis with one tick per run, "no calls" written where a run has none (a
    bar of 0 would read as 0%)."""
    for place in (place for place, none in zip(places, empty, strict=True) if none):
        axis.text(place, 2, "no calls", rotation=90, ha="center", va="bottom", fontsize=7,
                  color="dimgrey")
    axis.set_ylim(0, 105)
    axis.set_xticks(places, [_tick(label) for label in labels], rotation=30, ha="right",
                    fontsize=7)


def _tick(label: str) -> str:
    """A run label as a tick: a long one (a replayed file's path, a run folder) keeps its
    start and end around an ellipsis, in lines of 24 characters, so that the panels keep
    their room; the tables give it whole."""
    if len(label) > 48:
        label = f"{label[:22]}\N{HORIZONTAL ELLIPSIS}{label[-25:]}"
    return textwrap.fill(label, 24, break_on_hyphens=False)


def shows(result: Results) -> bool:
    """A run that answered the output task and at least one of the two that vet it."""
    return OUTPUT in result.metrics and bool({COVERAGE, SIMULATION} & set(result.metrics))


register_layout(Layout(
    "vetted-output", "output predictions vetted by the same run's answers on the same call: "
                     "output pass@1 kept only where the CES simulation is coherent or the "
                     "DexBench coverage answer is right, and output x coverage / simulation "
                     "per call", _sections, figure, shows=shows))
