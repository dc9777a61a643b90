"""The ``ces-vetting`` report: a model's successes on the bug tasks, sorted by how the same
model simulated the buggy program on the error-revealing call (CES section 6.5).

A success on a bug task says little by itself: the model may have matched a pattern or
read the docstring. Its simulation of the buggy program tells the cases apart:

* **confident**: the simulation is coherent and its output right;
* **likely**: coherent, wrong output, and the first wrong value comes at or after the
  bug's first line (the model may have followed the run up to the bug, then lost it);
* **suspicious**: coherent, wrong output, first wrong value before the bug's first line
  (it never reached the bug in its simulation);
* **incoherent**: the simulation breaks a coherence rule;
* **not simulated**: no readable simulation of that program by that model.

"Before" and "after" compare line numbers of the buggy module: the divergence point is
the first wrong value in run order, the bug's place its first line in the buggy function.
A divergence at the output alone (every property right) counts as after the bug.

The runs to give are, per model, one run of bug tasks (a suite built with ``--tasks
bug-prediction,bug-localization,bug-repair``) and one run of ``simulation`` on a suite
built with ``--buggy`` from the same source; a run can hold both. The bug lines come from
the bug-localization instances of the bug run's suite, and which program an instance
asks about from its record in its run's suite (its ``program_id``, or for a simulation of
a buggy module the program the module was made from), so a run whose suite is gone is not
vetted. Only the first sample of each
simulation instance is read, and only the buggy variant of bug prediction is vetted (a
right "no bug" on the canonical program is not a bug found).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from execbench.kept import Kept
from execbench.reports.layouts import Layout, View, register_layout
from execbench.reports.tables import Cell, Table, percent
from execbench.rundir import SAMPLES, Results, iter_samples
from execbench.suite import SuiteError, SuiteFile
from execbench.tasks.bugs_payload import LocalizationQuestion
from execbench.tasks.ces.summary_payload import Judged

BUG_TASKS = ("bug-prediction", "bug-localization", "bug-repair")
SIMULATION = "simulation"
LOCALIZATION = "bug-localization"
CLASSES = ("confident", "likely", "suspicious", "incoherent", "not simulated")


def _samples(result: Results) -> list[Kept]:
    """The run's samples, the last record of each winning (a resumed run with
    ``--retry-errors`` logs a sample again), as results keep them (without their texts)."""
    return [sample.kept() for sample in iter_samples(Path(result.run_dir) / SAMPLES)]


@dataclass
class _Suite:
    """What vetting needs of a run's suite, by instance id: the program each bug-task
    instance asks about (with its variant), the original program of each simulation of a
    buggy module (``--buggy``), and the bug's lines per program."""

    bug_tasks: dict[str, tuple[str, str | None]]
    buggy_simulations: dict[str, str]
    bug_lines: dict[str, tuple[int, ...]]

    @classmethod
    def read(cls, result: Results) -> _Suite:
        found = cls({}, {}, {})
        try:
            for instance in SuiteFile.open(Path(result.config.suite)).instances():
                if instance.task in BUG_TASKS:
                    found.bug_tasks[instance.id] = (instance.program_id, instance.variant)
                if instance.task == LOCALIZATION:
                    found.bug_lines[instance.program_id] = \
                        LocalizationQuestion.from_record(instance.data).lines
                mutation = instance.mutation or {}
                original = mutation.get("original_id")
                if instance.task == SIMULATION and "bug_type" in mutation \
                        and isinstance(original, str):
                    found.buggy_simulations[instance.id] = original
        except (SuiteError, OSError):
            pass
        return found


def _simulations(results: Sequence[Results], samples: list[list[Kept]],
                 suites: list[_Suite]) -> dict[str, dict[str, Judged]]:
    """Per model, per program: what the scoring said of the first sample of its
    simulation on the buggy program."""
    found: dict[str, dict[str, Judged]] = {}
    for result, logged, suite in zip(results, samples, suites, strict=True):
        mine = found.setdefault(result.model, {})
        for sample in logged:
            original = suite.buggy_simulations.get(sample.instance_id)
            if sample.sample == 0 and original is not None and original not in mine:
                mine[original] = Judged.of(sample.extra)
    return found


def vet(simulated: Judged | None, bug_lines: Sequence[int] | None) -> str:
    """The class of one bug-task success, given what the scoring said of the model's
    simulation sample (None where there is none)."""
    kind = None if simulated is None else simulated.coherence
    if simulated is None or kind is None:
        return "not simulated"
    if kind.startswith("incoherent"):
        return "incoherent"
    if kind == "coherent_correct":
        return "confident"
    line = None if simulated.divergence is None else simulated.divergence.line
    if line is None or not bug_lines or line >= min(bug_lines):
        return "likely"
    return "suspicious"


def vetting_table(results: Sequence[Results]) -> Table:
    """Per model and bug task: the successes and their classes (% of the successes)."""
    samples = [_samples(result) for result in results]
    suites = [_Suite.read(result) for result in results]
    simulations = _simulations(results, samples, suites)
    counts: dict[tuple[str, str], Counter[str]] = {}
    for result, logged, suite in zip(results, samples, suites, strict=True):
        model = result.model
        for sample in logged:
            asked = suite.bug_tasks.get(sample.instance_id)
            if asked is None or not sample.correct or asked[1] == "fixed":
                continue
            program = asked[0]
            verdict = vet(simulations.get(model, {}).get(program), suite.bug_lines.get(program))
            counts.setdefault((model, sample.task), Counter())[verdict] += 1
    rows: list[list[Cell]] = []
    for (model, task), tally in sorted(counts.items()):
        total = sum(tally.values())
        rows.append([model, task, total, *(percent(tally[name] / total) for name in CLASSES)])
    return Table("Bug-task successes vetted by the simulation of the buggy program "
                 "(% of successes)", ["model", "task", "successes", *CLASSES], rows, keys=2,
                 note="confident: coherent simulation, right output; likely/suspicious: "
                      "coherent, wrong output, first wrong value at-or-after/before the bug's "
                      "first line; incoherent: a coherence rule broken.")


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [vetting_table(results)]


register_layout(Layout("ces-vetting", "bug-task successes vetted by the same model's "
                       "simulation of the buggy program: confident, likely, suspicious, "
                       "incoherent", _sections))
