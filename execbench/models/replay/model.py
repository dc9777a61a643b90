"""The replay model: each sample's answer taken from a file, by instance and sample index.

A request carries its instance and its sample index, so an answer is found by the id that
names the instance (:mod:`.matching`) and its place among that id's answers; the prompt's
text plays no part. A sample the file has no answer for is an error sample saying so
("no answer in FILE"): it counts as wrong and shows in every report.

CRUXEval's ``generations.json`` holds the half of an assertion CRUXEval's own scripts kept
from each reply: for output prediction the value after ``==``, for input prediction the
call before it (``f('abc')``). Such a generation is put back into the completed assertion
the task's prompt asks for, in an answer block (:func:`completed_assertion`), and read by
the task's extractor like any reply: its verdict is the one a model that answered that
assertion gets. Answers of the other shapes are whole replies and are scored as written.

The run folder records which file was replayed (``replay.json``: its path, shape and
sha256, and every id left over either way); a run resumed with a different file under the
same name is refused, since its samples would mix two sets of answers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from execbench.jsonfiles import dumps, write_atomic
from execbench.models.base import (
    GenerateConfig,
    Generation,
    ModelBase,
    ModelError,
    Request,
    instance_of,
)
from execbench.models.replay.answers import CRUXEVAL, AnswersError, read_answers, shown
from execbench.models.replay.matching import Matched, key_of, match

if TYPE_CHECKING:
    from execbench.json_types import JSONObject
    from execbench.tasks.base import Instance

RECORD = "replay.json"
"""The run folder's record of the file replayed into it."""
CRUXEVAL_TASKS = ("output", "input")
"""The tasks whose CRUXEval generations are known halves of an assertion."""


def completed_assertion(instance: Instance, generation: str) -> str:
    """A CRUXEval generation as the reply our prompt asks for: the value completes
    ``assert f(x) == ??`` (output), the call completes ``assert ?? == y`` (input)."""
    if instance.task == "output":
        return f"[ANSWER]\nassert {instance.call} == {generation}\n[/ANSWER]"
    from execbench.tasks.prediction_payload import InputQuestion

    output = InputQuestion.from_record(instance.data).output_shown
    return f"[ANSWER]\nassert {generation} == {output}\n[/ANSWER]"


class ReplayModel(ModelBase):
    """Answers read from one file (see the module)."""

    takes_seed = False

    def __init__(self, name: str, file: str, shape: str | None, task: str | None,
                 source: str | None) -> None:
        self.name = name
        self.label = shown(file)
        """The file as the user named it, for messages."""
        self.answers = read_answers(Path(file), shape)
        if self.answers.shape == CRUXEVAL and task is None:
            raise AnswersError(f"{self.label} is a CRUXEval generations.json, which does not "
                               "say which task it answers: name it with -M task=output or "
                               "-M task=input")
        if self.answers.shape == CRUXEVAL and task not in CRUXEVAL_TASKS:
            raise AnswersError(f"a CRUXEval generations.json answers output or input "
                               f"prediction, not {task}: name one with -M task=output or "
                               "-M task=input")
        self.task = task
        self.source = source
        self.counts = self.answers.counts()
        self.matched: Matched | None = None
        self.record = Path(RECORD)
        """Where ``start`` wrote the run's record of the file."""

    def check(self, instances: Sequence[Instance]) -> None:
        """Meet the run's instances with the file's ids; refused when none is named."""
        self.matched = match(self.counts, instances, name=self.label, task=self.task,
                             source=self.source, one_task=self.answers.shape == CRUXEVAL)

    def notices(self) -> list[str]:
        if self.matched is None:
            return []
        return self.matched.notices(self.label, self.answers.passed_over,
                                    shown(str(self.record)))

    async def start(self, config: GenerateConfig, run_dir: Path) -> None:
        """Refuse a file other than the one the run began with, then record this one."""
        self._same_file(run_dir)
        self.answers.open()
        record: JSONObject = {
            "file": str(self.answers.path.resolve()), "format": self.answers.shape,
            "sha256": self.answers.sha256, "task": self.task, "source": self.source,
            "ids": len(self.counts), "answers": sum(self.counts.values())}
        if self.matched is not None:
            record |= self.matched.record()
        self.record = run_dir / RECORD
        write_atomic(self.record, dumps(record) + "\n")

    def _same_file(self, run_dir: Path) -> None:
        from execbench.rundir import RESUME_REMEDY, answered_nothing

        path = run_dir / RECORD
        if not path.exists():
            return
        try:
            earlier = json.loads(path.read_text(encoding="utf-8")).get("sha256")
        except (OSError, ValueError, AttributeError):
            earlier = None
        if earlier != self.answers.sha256 and not answered_nothing(run_dir):
            raise ModelError(f"{self.label} is not the file this run's answers came from "
                             f"(its sha256 is not the one {RECORD} holds): {RESUME_REMEDY}")

    async def generate(self, request: Request, config: GenerateConfig) -> Generation:
        started = time.perf_counter()
        instance = instance_of(request, f"replay of {self.label}")
        if self.matched is not None:
            key = self.matched.by_instance.get(instance.id)
        else:  # asked without a check (the API's own use): the same rule, per request
            key = key_of(instance, self.counts, self.task, self.source,
                         self.answers.shape == CRUXEVAL)
        held = 0 if key is None else self.counts[key]
        if key is None or request.sample >= held:
            error = f"no answer in {self.label}"
            if held:
                error += f" for sample {request.sample} (it holds {held} for this instance)"
            return Generation(text=None, error=error)
        text = self.answers.response(key, request.sample)
        if self.answers.shape == CRUXEVAL:
            text = completed_assertion(instance, text)
        return Generation(text=text, latency=time.perf_counter() - started)

    async def aclose(self) -> None:
        self.answers.close()
