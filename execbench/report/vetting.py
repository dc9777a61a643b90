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
the bug-localization instances of the bug run's suite. Only the first sample of each
simulation instance is read, and only the buggy variant of bug prediction is vetted (a
right "no bug" on the canonical program is not a bug found).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from execbench.report.layouts import Layout, View, register_layout
from execbench.report.tables import Cell, Table, percent
from execbench.rundir import SAMPLES, Results, iter_samples
from execbench.suite import SuiteError, SuiteFile

BUG_TASKS = ("bug-prediction", "bug-localization", "bug-repair")
SIMULATION = "simulation"
LOCALIZATION = "bug-localization"
BUGGY = "@buggy"
CLASSES = ("confident", "likely", "suspicious", "incoherent", "not simulated")


def _samples(result: Results) -> list[dict[str, Any]]:
    """The run's samples, the last record of each winning (a resumed run with
    ``--retry-errors`` logs a sample again), as every report reads them."""
    return [sample.to_record()
            for sample in iter_samples(Path(result.run_dir) / SAMPLES)]


def _program(instance_id: str) -> str:
    """The program an instance id names (``task/source/record/call[/variant]``), without
    the ``@buggy`` mark a ``--buggy`` build adds."""
    task, rest = instance_id.split("/", 1)
    if task == SIMULATION:
        program = rest.rsplit("/", 1)[0]
    else:
        program = rest.rsplit("/", 2 if task == "bug-prediction" else 1)[0]
    return program.removesuffix(BUGGY)


def _bug_lines(result: Results) -> dict[str, list[int]]:
    try:
        return {i.program_id: i.data["truth"]["lines"]
                for i in SuiteFile.open(Path(result.config.suite)).instances()
                if i.task == LOCALIZATION}
    except (SuiteError, OSError):
        return {}


def _simulations(results: Sequence[Results], samples: list[list[dict[str, Any]]]
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """Per model, per program: the first sample of its simulation on the buggy program."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for result, logged in zip(results, samples, strict=True):
        mine = found.setdefault(result.model, {})
        for sample in logged:
            if sample["task"] == SIMULATION and sample["sample"] == 0 \
                    and BUGGY in sample["instance_id"]:
                mine.setdefault(_program(sample["instance_id"]), sample)
    return found


def vet(sample: dict[str, Any] | None, bug_lines: list[int] | None) -> str:
    """The class of one bug-task success, given the model's simulation sample."""
    extra = (sample or {}).get("extra") or {}
    kind = extra.get("class")
    if kind is None:
        return "not simulated"
    if kind.startswith("incoherent"):
        return "incoherent"
    if kind == "coherent_correct":
        return "confident"
    line = (extra.get("divergence") or {}).get("line")
    if line is None or not bug_lines or line >= min(bug_lines):
        return "likely"
    return "suspicious"


def vetting_table(results: Sequence[Results]) -> Table:
    """Per model and bug task: the successes and their classes (% of the successes)."""
    samples = [_samples(result) for result in results]
    simulations = _simulations(results, samples)
    counts: dict[tuple[str, str], Counter[str]] = {}
    for result, logged in zip(results, samples, strict=True):
        model = result.model
        lines = _bug_lines(result)
        for sample in logged:
            if sample["task"] not in BUG_TASKS or not sample["correct"] \
                    or sample["instance_id"].endswith("/fixed"):
                continue
            program = _program(sample["instance_id"])
            verdict = vet(simulations.get(model, {}).get(program), lines.get(program))
            counts.setdefault((model, sample["task"]), Counter())[verdict] += 1
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
