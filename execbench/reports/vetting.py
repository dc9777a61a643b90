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
a buggy module the program the module was made from), so a run whose suite is gone or
changed since the run, or whose log does not read (``run_files``), is not vetted and the
table's note says why. Only the first sample of each
simulation instance is read, and only the buggy variant of bug prediction is vetted (a
right "no bug" on the canonical program is not a bug found).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from execbench.json_types import JSONObject
from execbench.metrics import is_correct
from execbench.reports.layouts import Layout, View, register_layout
from execbench.reports.run_files import Unread, run_instances, run_log
from execbench.reports.tables import Cell, Table, percent, run_labels
from execbench.rundir import Results
from execbench.tasks.bugs_payload import LocalizationQuestion
from execbench.tasks.ces.summary_payload import Judged

BUG_TASKS = ("bug-prediction", "bug-localization", "bug-repair")
SIMULATION = "simulation"
LOCALIZATION = "bug-localization"
CLASSES = ("confident", "likely", "suspicious", "incoherent", "not simulated")


@dataclass
class RunSuite:
    """What vetting (and the success overlap) needs of a run's suite, by instance id: the
    program each bug-task instance asks about (with its variant), the original program of
    each simulation of a buggy module (``--buggy``), and the bug's lines per program. A
    suite that is gone, unreadable or changed since the run gives nothing and says why
    (``problem``)."""

    bug_tasks: dict[str, tuple[str, str | None]]
    buggy_simulations: dict[str, str]
    bug_lines: dict[str, tuple[int, ...]]
    problem: str | None = None

    @classmethod
    def read(cls, result: Results) -> RunSuite:
        found = cls({}, {}, {})
        try:
            for instance in run_instances(result):
                if instance.task in BUG_TASKS:
                    found.bug_tasks[instance.id] = (instance.program_id, instance.variant)
                if instance.task == LOCALIZATION:
                    try:
                        found.bug_lines[instance.program_id] = \
                            LocalizationQuestion.from_record(instance.data).lines
                    except (KeyError, ValueError):
                        raise Unread(f"{instance.id}: not a bug-localization question") \
                            from None
                mutation = instance.mutation or {}
                original = mutation.get("original_id")
                if instance.task == SIMULATION and "bug_type" in mutation \
                        and isinstance(original, str):
                    found.buggy_simulations[instance.id] = original
        except Unread as exc:
            return cls({}, {}, {}, str(exc))
        return found


@dataclass
class RunRead:
    """What vetting and the success overlap keep of one run, read in one pass over its
    log: per program, never per sample, so a run of any size costs its programs."""

    model: str
    suite: RunSuite
    simulated: dict[str, Judged] = field(default_factory=dict)
    """Per program, what the scoring said of the first sample (index 0) of its buggy
    simulation (the first logged for the program wins)."""
    first: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Per (bug task, program), whether sample 0 of the instance asking it is right (the
    buggy variant for prediction; the fixed one is not read)."""
    successes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Per (bug task, program), the right samples (any index; the buggy variant)."""
    problem: str | None = None
    """Why the run counts nothing: its suite or its log cannot be used."""

    @classmethod
    def read(cls, result: Results) -> RunRead:
        suite = RunSuite.read(result)
        found = cls(result.model, suite, problem=suite.problem)
        if suite.problem is not None:
            return found
        try:
            for sample in run_log(result):
                found._add(sample.instance_id, sample.task, sample.sample,
                           is_correct(sample), sample.extra)
        except Unread as exc:
            return cls(result.model, suite, problem=str(exc))
        return found

    def _add(self, instance_id: str, task: str, index: int, right: bool,
             extra: JSONObject | None) -> None:
        original = self.suite.buggy_simulations.get(instance_id)
        if original is not None:
            if index == 0 and task == SIMULATION:
                self.simulated.setdefault(original, Judged.of(extra))
            return
        asked = self.suite.bug_tasks.get(instance_id)
        # a record naming a task the instance is not of (someone else's log) is skipped
        if asked is None or asked[1] == "fixed" or not instance_id.startswith(f"{task}/"):
            return
        if right:
            self.successes[(task, asked[0])] += 1
        if index == 0:
            self.first.setdefault((task, asked[0]), right)


def read_runs(results: Sequence[Results]) -> list[RunRead]:
    return [RunRead.read(result) for result in results]


def buggy_simulations(read: Sequence[RunRead]) -> dict[str, dict[str, Judged]]:
    """Per model, per program: what the scoring said of the first sample of its
    simulation on the buggy program (the first run given that has one wins)."""
    found: dict[str, dict[str, Judged]] = {}
    for run in read:
        mine = found.setdefault(run.model, {})
        for program, judged in run.simulated.items():
            mine.setdefault(program, judged)
    return found


def unread_note(results: Sequence[Results], read: Sequence[RunRead]) -> str:
    """The runs that count nothing, each with why (empty when every run was read)."""
    return "".join(f" Not read: {label}: {run.problem}." for label, run in
                   zip(run_labels(results), read, strict=True) if run.problem is not None)


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


def vetting_table(results: Sequence[Results], read: Sequence[RunRead] | None = None
                  ) -> Table:
    """Per model and bug task: the successes and their classes (% of the successes)."""
    read = read_runs(results) if read is None else read
    simulations = buggy_simulations(read)
    counts: dict[tuple[str, str], Counter[str]] = {}
    for run in read:
        for (task, program), right in run.successes.items():
            verdict = vet(simulations.get(run.model, {}).get(program),
                          run.suite.bug_lines.get(program))
            counts.setdefault((run.model, task), Counter())[verdict] += right
    rows: list[list[Cell]] = []
    for (model, task), tally in sorted(counts.items()):
        total = sum(tally.values())
        rows.append([model, task, total, *(percent(tally[name] / total) for name in CLASSES)])
    return Table("Bug-task successes vetted by the simulation of the buggy program "
                 "(% of successes)", ["model", "task", "successes", *CLASSES], rows, keys=2,
                 note="confident: coherent simulation, right output; likely/suspicious: "
                      "coherent, wrong output, first wrong value at-or-after/before the bug's "
                      "first line; incoherent: a coherence rule broken; a failed request is "
                      "never a success." + unread_note(results, read))


def _sections(results: Sequence[Results], view: View) -> list[Table]:
    return [vetting_table(results)]


register_layout(Layout("ces-vetting", "bug-task successes vetted by the same model's "
                       "simulation of the buggy program: confident, likely, suspicious, "
                       "incoherent", _sections))
