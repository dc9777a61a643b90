"""The ``ces-success-overlap`` report: per model, which programs it got right on each of
bug prediction, bug localization, bug repair and the simulation of the buggy program, and
how those sets overlap (CES section 6.5: successes on the bug tasks and on simulation
rarely coincide, even though each bug task leans on following the run).

A program is one HumanEvalPack problem, named by its original id. What counts as *right*
on it, per task, reading only the first sample (``sample`` 0) of the one instance the
task has for it:

* **bug prediction**: the buggy variant's instance is answered "yes, it has a bug" (the
  verdict is correct). The fixed variant is not read: a right "no bug" on the canonical
  program is not a bug found.
* **bug localization**: the answer names one of the bug's lines.
* **bug repair**: the repaired function passes every test call.
* **simulation**: the simulation of the buggy program on the error-revealing call (a suite
  built with ``--buggy --tasks simulation``) is coherent and states the right output
  (``coherent_correct``).

A program is *asked* in a task when a first sample of the task's instance for it was
read (a call with no output to simulate has no simulation instance). Per model, the
programs compared are those asked in every task the model was asked at all: a program a
task never asked about is not "not right" there, and a task the model was never asked
(no simulation run given, say) is shown as ``-``, neither right nor wrong. Where several
runs of one model answer the same instance, the first run given wins. Runs are read as
the ``ces-vetting`` layout reads them (``vetting``, ``run_files``): which program an
instance asks about comes from its run's suite, so a run whose suite is gone or changed
since the run, or whose log does not read, counts nothing and the notes say why.

Tables: per model and task, the programs asked; every combination of tasks with the
programs right on exactly those (an UpSet or Venn diagram's regions, ``none`` included),
one column per model, ``-`` where the combination holds a task the model was never asked;
and per model and pair of tasks, the programs compared right on each, on both, on either
and their Jaccard index. The figure draws each model's combinations as UpSet-style bars
over a dot matrix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, product
from pathlib import Path
from typing import Any

from execbench.reports.layouts import Layout, View, pyplot, register_layout
from execbench.reports.tables import Cell, Table, percent
from execbench.reports.vetting import (
    BUG_TASKS,
    SIMULATION,
    RunRead,
    buggy_simulations,
    read_runs,
    unread_note,
)
from execbench.rundir import Results
from execbench.suite import MANIFEST

TASKS = (*BUG_TASKS, SIMULATION)
"""The four tasks compared, in the order combinations and figures list them."""
SHORT = {"bug-prediction": "prediction", "bug-localization": "localization",
         "bug-repair": "repair", SIMULATION: "simulation"}
RIGHT = "coherent_correct"
"""The simulation class that counts as right."""
COMBINATIONS: tuple[tuple[str, ...], ...] = tuple(sorted(
    (tuple(task for task, held in zip(TASKS, mask, strict=True) if held)
     for mask in product((True, False), repeat=len(TASKS))),
    key=lambda tasks: (-len(tasks), [TASKS.index(task) for task in tasks])))
"""Every subset of ``TASKS``: the four first, then by size, ``()`` (none right) last."""
NOTE = ("A program counts once per model, on the first sample of each task: prediction on "
        "the buggy variant, simulation of the buggy program on the error-revealing call "
        "(coherent with the right output); a failed request is not right. Only the "
        "programs asked in every task the model was asked are compared; -: a task the "
        "model was never asked.")


@dataclass
class Successes:
    """One model's programs: per task those asked and those right."""

    asked: dict[str, set[str]] = field(default_factory=lambda: {task: set() for task in TASKS})
    right: dict[str, set[str]] = field(default_factory=lambda: {task: set() for task in TASKS})

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks the model was asked at all, in ``TASKS`` order."""
        return tuple(task for task in TASKS if self.asked[task])

    @property
    def programs(self) -> set[str]:
        """The programs compared: asked in every task the model was asked."""
        tasks = self.tasks
        return set.intersection(*(self.asked[task] for task in tasks)) if tasks else set()

    def tasks_right(self, program: str) -> tuple[str, ...]:
        """The tasks ``program`` was right on, in ``TASKS`` order."""
        return tuple(task for task in TASKS if program in self.right[task])

    def regions(self) -> dict[tuple[str, ...], int | None]:
        """Programs compared right on exactly each combination of tasks (every one of
        ``COMBINATIONS``, zero included); None for a combination holding a task the model
        was never asked."""
        asked = set(self.tasks)
        found: dict[tuple[str, ...], int | None] = {
            tasks: 0 if asked.issuperset(tasks) else None for tasks in COMBINATIONS}
        for program in self.programs:
            key = self.tasks_right(program)
            found[key] = (found[key] or 0) + 1
        return found


def successes(results: Sequence[Results], read: Sequence[RunRead] | None = None
              ) -> dict[str, Successes]:
    """Per model (sorted), its programs and what it got right (see the module doc)."""
    read = read_runs(results) if read is None else read
    found: dict[str, Successes] = {}
    seen: set[tuple[str, str, str]] = set()
    for run in read:
        mine = found.setdefault(run.model, Successes())
        for (task, program), right in run.first.items():
            if (run.model, task, program) in seen:
                continue
            seen.add((run.model, task, program))
            mine.asked[task].add(program)
            if right:
                mine.right[task].add(program)
    for model, simulated in buggy_simulations(read).items():
        mine = found[model]
        for program, judged in simulated.items():
            mine.asked[SIMULATION].add(program)
            if judged.coherence == RIGHT:
                mine.right[SIMULATION].add(program)
    return dict(sorted(found.items()))


def combination_name(tasks: tuple[str, ...]) -> str:
    """``all four``, ``only simulation``, ``prediction + repair``, ``none``."""
    if len(tasks) == len(TASKS):
        return "all four"
    if not tasks:
        return "none"
    names = [SHORT[task] for task in tasks]
    return f"only {names[0]}" if len(names) == 1 else " + ".join(names)


def asked_table(found: dict[str, Successes], note: str = "") -> Table:
    """Per model: the programs asked in each task (``-``: never asked) and those compared
    (asked in every task the model was asked)."""
    rows: list[list[Cell]] = [
        [model, *(len(mine.asked[task]) or None for task in TASKS), len(mine.programs)]
        for model, mine in found.items()]
    return Table("Programs asked per task", ["model", *(SHORT[task] for task in TASKS),
                                             "compared"], rows,
                 note="-: the model was never asked the task; compared: the programs asked "
                      "in every task the model was asked, which the other tables count."
                      + note)


def combinations_table(found: dict[str, Successes], note: str = "") -> Table:
    """Rows: every combination of tasks; columns: per model, the programs compared that
    are right on exactly those tasks (count, and % of the model's programs compared)."""
    models = list(found)
    regions = {model: found[model].regions() for model in models}
    headers = ["tasks right", *(f"{model} {what}" for model in models
                                for what in ("programs", "%"))]
    rows: list[list[Cell]] = []
    for tasks in COMBINATIONS:
        cells: list[Cell] = []
        for model in models:
            total = len(found[model].programs)
            count = regions[model][tasks]
            cells += [count, percent(count / total) if total and count is not None else None]
        rows.append([combination_name(tasks), *cells])
    rows.append(["programs", *(cell for model in models
                               for cell in (len(found[model].programs), None))])
    return Table("Programs right on exactly these tasks, of those asked in all of the "
                 "model's tasks", headers, rows, note=NOTE + note)


def pairs_table(found: dict[str, Successes], note: str = "") -> Table:
    """Per model and pair of tasks it was asked: the programs compared right on each, on
    both, on either, and both over either (the Jaccard index, %); ``-`` for a pair with a
    task the model was never asked."""
    headers = ["model", "task A", "task B", "A right", "B right", "both", "either",
               "both / either"]
    rows: list[list[Cell]] = []
    for model, mine in found.items():
        programs = mine.programs
        for first, second in combinations(TASKS, 2):
            if not (mine.asked[first] and mine.asked[second]):
                rows.append([model, SHORT[first], SHORT[second], None, None, None, None,
                             None])
                continue
            a, b = mine.right[first] & programs, mine.right[second] & programs
            either = len(a | b)
            rows.append([model, SHORT[first], SHORT[second], len(a), len(b), len(a & b),
                         either, percent(len(a & b) / either) if either else None])
    return Table("Pairwise overlap of programs right (programs compared)", headers, rows,
                 keys=3, note=NOTE + note)


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    read = read_runs(results)
    found = successes(results, read)
    note = unread_note(results, read)
    return [asked_table(found, note), combinations_table(found, note),
            pairs_table(found, note)]


def figure(results: Sequence[Results]) -> Any:
    """UpSet style, one panel per model: a bar per combination of one or more tasks (the
    programs right on exactly those), over a matrix whose filled dots name the tasks; the
    title gives the model's programs and those right on none."""
    plt = pyplot()
    found = successes(results)
    shown = [tasks for tasks in COMBINATIONS if tasks]
    models = list(found) or ["no runs"]
    fig, axes = plt.subplots(2, len(models), squeeze=False, sharex=True,
                             figsize=(4.6 * len(models) + 0.8, 4.6),
                             gridspec_kw={"height_ratios": [3, 1.4]})
    xs = range(len(shown))
    for column, model in enumerate(models):
        bars, dots = axes[0][column], axes[1][column]
        regions = found[model].regions() if model in found else {}
        heights = [regions.get(tasks) or 0 for tasks in shown]
        bars.bar(xs, heights, color="tab:blue")
        for x, height in zip(xs, heights, strict=True):
            if height:
                bars.annotate(str(height), (x, height), ha="center", va="bottom", fontsize=7)
        programs = len(found[model].programs) if model in found else 0
        bars.set_title(f"{model}\n{programs} programs asked in all of its tasks, none "
                       f"right: {regions.get(()) or 0}", fontsize=9)
        bars.set_ylabel("programs right on exactly these" if column == 0 else "", fontsize=8)
        bars.set_ylim(0, max(1, *heights) * 1.15)
        bars.yaxis.get_major_locator().set_params(integer=True)
        for x, tasks in zip(xs, shown, strict=True):
            rows = [TASKS.index(task) for task in tasks]
            dots.scatter([x] * len(TASKS), range(len(TASKS)), color="lightgrey", s=18)
            dots.scatter([x] * len(rows), rows, color="black", s=18, zorder=3)
            dots.plot([x, x], [min(rows), max(rows)], color="black", linewidth=1.2)
        dots.set_yticks(range(len(TASKS)), [SHORT[task] for task in TASKS] if column == 0
                        else [""] * len(TASKS), fontsize=8)
        dots.set_ylim(len(TASKS) - 0.5, -0.5)
        dots.set_xticks([])
        for side in ("top", "right", "bottom"):
            dots.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def shows(result: Results) -> bool:
    """A run holds a bug task, or simulations of buggy programs (its suite was built with
    ``--buggy``): the page then shows the overlap with those runs."""
    if set(BUG_TASKS) & set(result.metrics):
        return True
    return SIMULATION in result.metrics and _built_buggy(Path(result.config.suite))


def _built_buggy(suite: Path) -> bool:
    """Whether the suite's manifest says ``--buggy``; False where it cannot be read."""
    try:
        path = suite / MANIFEST
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("buggy") is True


register_layout(Layout(
    "ces-success-overlap", "per model, the programs asked per task, and of those asked in "
    "all its tasks the ones right on each combination of bug prediction, localization, "
    "repair and the buggy program's simulation, with pairwise overlaps (CES section 6.5)",
    _sections, figure, shows=shows))
