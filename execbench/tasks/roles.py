"""A task's four roles, and the task that composes them.

A task lives four lives, each read by a different part of execbench, and each part asks
only for the role it needs:

* **Building** (``suite/``): which traces it needs, which calls it asks about, the
  instances it makes of each, its ``-T`` options and the counts a build states.
* **Asking** (the runner, ``show``, the reference models): the prompt of an instance, and
  a response that states its truth in the format scoring reads.
* **Judging** (the runner, ``score``, the rewards): the verdict on a response, and
  whether reaching it runs code (the benchmark's, or the model's own).
* **Reporting** (``metrics``, ``reports/``): the metrics it declares, the splits and
  pairings results break them down by, its layout, the summary of its samples beyond
  pass@k, and its truths as a person reads them.

Each role is a base class holding the defaults of its optional parts, once: a task
implements the abstract methods and overrides what differs. A registered :class:`Task`
names the four; one object may play several roles (the built-in families' classes derive
from all four), or a plugin may compose separate ones.

A plugin task, in a package of its own (``execbench.plugins``)::

    class ReturnType(Roles):
        name = "return-type"
        description = "the type of the value a call returns"
        family = "types"
        def build(self, program, call_index, trace, ctx): ...
        def prompt(self, instance, protocol): ...
        def reference_response(self, instance): ...
        def score(self, instance, response, sandbox): ...

    RETURN_TYPE = Task.of(ReturnType())

and the entry point ``return-type = package.module:RETURN_TYPE`` in ``execbench.tasks``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from execbench.analysis.shape import code_category
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.tasks.base import pass_at_1
from execbench.tasks.common.shown import shown_truth
from execbench.tasks.templating import CODE_VARIABLES

if TYPE_CHECKING:
    from execbench.json_types import Recordable
    from execbench.kept import Kept
    from execbench.program import Program
    from execbench.results import Metric
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace
    from execbench.tasks.base import (
        Breakdown,
        BuildContext,
        Instance,
        Message,
        Pairing,
        Score,
        TaskOption,
    )
    from execbench.tasks.protocol import Protocol
    from execbench.tasks.templating import TemplateVar


class Building(ABC):
    """How a task makes its instances from traced calls."""

    asks_inputs: bool = False
    """The task asks about one call per program, or ``BuildContext.inputs`` of them
    (``build --inputs``); other tasks choose their calls otherwise."""

    reads_stdin: bool = False
    """The task can ask about a program that reads standard input and prints
    (``program.STDIN``); the build skips such programs for the others, saying so."""

    trace_options: TraceOptions = RESULT_ONLY
    """What the ground-truth run of each call must record (the recorder, the bounds). A
    build traces every call once, with the options of all its tasks ``combined``. By
    default its lines and outcome only: an event list holds up to 10,000 pairs per call,
    which most tasks never read and a chunk of 2,000 calls held in gigabytes."""
    options: tuple[TaskOption, ...] = ()
    """The ``-T`` build options the task takes (``check_options`` refuses any other)."""

    def unusable(self, trace: Trace) -> str | None:
        """Why no instance of the task can come from this traced call whichever calls are
        chosen (it raised, its value has no literal form), or None. The build lists every
        such call in the manifest's skips with this reason and offers only the others to
        ``choose_calls``, so a call a task cannot use is never dropped without a word."""
        return None

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        """Which calls (indices into ``program.calls``) to build instances from, given the
        traced ones that are not ``unusable`` as (call index, trace) pairs; by default
        all. A call left out here is a choice (``-T tests=K`` takes K), not a skip; raise
        ``NotApplicable`` when no call of the program suits the task, saying why."""
        return [index for index, _ in traced]

    @abstractmethod
    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[Recordable]:
        """The payloads of the call's instances (usually one), each a typed value whose
        record holds the task's fields; raise ``SkipInstance`` to skip. Of the common
        fields only ``TASK_SETTABLE`` ones may be in a record (``code`` for a mutant);
        several instances of one call tell themselves apart with a ``variant``, which
        becomes the last part of their id."""

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        """Counts about the task's instances worth stating after a build (the manifest's
        ``task_counts.NAME``, printed by ``execbench build``), or None."""
        return None


class Asking(ABC):
    """How a task poses an instance, and how its truth is stated as an answer.

    A built-in task writes its prompt as a shipped template (``tasks/prompts/NAME.j2``,
    named by ``template_names``) and gives the variables it is rendered with
    (``prompt_vars``, documented by ``template_vars``), so that a user's ``--template``
    can replace it; a task that writes its prompt in code overrides ``prompt`` instead and
    takes no template. A task that ``reference/original`` can answer also defines
    ``original_response(instance) -> str``."""

    template_names: tuple[str, ...] = ()
    """The shipped templates the task renders, its main one first."""
    template_vars: tuple[TemplateVar, ...] = ()
    """The variables ``prompt_vars`` gives beyond ``templating.COMMON_VARS``."""
    template_needs: tuple[frozenset[str], ...] = (CODE_VARIABLES,)
    """What a user's template must show: one variable of each set (by default the code,
    plain or numbered), else it asks about something it never shows."""

    def prompt(self, instance: Instance, protocol: Protocol) -> list[Message]:
        """The messages that ask the instance under ``protocol`` (its style, its worked
        examples), for a task that writes its prompt in code (``asking.ask`` renders the
        template of one that has ``template_names``, ``asking.ask``)."""
        raise NotImplementedError(f"{type(self).__name__} has neither a template nor a "
                                  "prompt written in code")

    def template_of(self, instance: Instance) -> str:
        """The shipped template that asks ``instance`` (a task may ask some of its
        instances in another's style)."""
        return self.template_names[0]

    def variables(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        """Every variable a template of the task is rendered with."""
        return {"style": protocol.style, "shots": protocol.shots, "code": instance.code,
                "examples": [], **self.prompt_vars(instance, protocol)}

    def example_kind(self, instance: Instance) -> str:
        """What ``--shot-pick same-kind`` matches an example on: by default the construct
        category of the code (CES's: loop and condition, condition, loop, neither)."""
        return code_category(instance.code)

    def worked_call(self, instance: Instance) -> tuple[str, str, str]:
        """The code, entry point and arguments whose run a drawn example works out in
        reasoning style: the call its answer (``reference_response``) is about; by default
        the instance's own."""
        return instance.code, instance.entry_point, instance.args

    def prompt_vars(self, instance: Instance, protocol: Protocol) -> dict[str, Any]:
        """The task's own template variables (``template_vars``) for ``instance``, its
        worked examples (``examples``) among them."""
        raise NotImplementedError(f"{type(self).__name__} has no template variables")

    @abstractmethod
    def reference_response(self, instance: Instance) -> str:
        """A response that states the ground truth in the format ``score`` reads."""

    def abstains(self, instance: Instance) -> str | None:
        """Why no response can state the instance's truth (``reference/oracle`` then
        abstains, and no drawn example shows it), or None: by default every one can."""
        return None


class Judging(ABC):
    """How a task reaches a verdict on a response. Scoring includes extraction, so
    ``reference/oracle`` answers go through exactly the path a model's answers take."""

    needs_sandbox: bool = False
    """True when scoring runs code (then the runner gives ``score`` a sandbox)."""
    runs_model_code: bool = False
    """True when scoring runs code the model wrote (in the sandbox, never elsewhere), not
    only the benchmark's program on values read from the answer; ``ls tasks`` says so."""

    @abstractmethod
    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score:
        """The verdict on ``response`` (None when the model gave no text)."""


class Reporting:
    """How a task's results are summed up and shown, so that reports pick up a new family
    without knowing it."""

    name: str
    """The task's name, which its metrics' places name."""
    layout: str | None = None
    """The report layout (``execbench report --layout``) that shows the family in full."""
    pairings: tuple[Pairing, ...] = ()
    """Metrics over this task and another posed on the same calls."""
    breakdowns: tuple[Breakdown, ...] = ()
    """Splits of the task's instances into categories that results and reports break
    pass@k down by."""
    summary_data: tuple[str, ...] = ()
    """The fields of an instance's ``data`` that :meth:`summarize` reads. A run's results
    are made from a stream of its suite, and only these (with the common fields but the
    code) are kept of each instance for the summary, so that memory holds no code, truth
    or prompt of a suite of any size."""
    restated: tuple[tuple[str, str], ...] = ()
    """Fields of the truth that only restate a typed value beside them, as (field, the
    field it restates) pairs: :meth:`show_truth` leaves them out."""

    def metrics(self) -> tuple[Metric, ...]:
        """The numbers the task puts in ``results.json`` worth showing, headline first; by
        default pass@1 alone."""
        return (pass_at_1(self.name),)

    def summarize(self, samples: list[Kept],
                  instances: dict[str, Instance]) -> Recordable | None:
        """Metrics beyond pass@k (``results.json``: ``task_metrics.NAME``, the summary's
        record), or None. ``samples`` are the task's samples as results keep them (not
        the texts, so not the response, the answer or the detail), and ``instances``
        hold ``summary_data`` only (no code, no arguments); reports read the record back
        with the family's summary type."""
        return None

    def show_truth(self, truth: Any) -> str:
        """The instance's stored truth as a person reads it (``execbench show``, the HTML
        page): values as Python prints them, not the typed JSON they are stored in."""
        return shown_truth(truth, dict(self.restated))


class Roles(Building, Asking, Judging, Reporting):
    """All four roles in one class, as each built-in task is written."""

    name: str
    description: str
    family: str = "other"


@dataclass(frozen=True)
class Task:
    """A registered task: what it is called and the object playing each role."""

    name: str
    description: str
    family: str
    """The family the task belongs to (``prediction``, ``dexbench``, ...): a column group
    of the leaderboard, and a name ``--tasks`` takes for all its tasks."""
    building: Building
    asking: Asking
    judging: Judging
    reporting: Reporting

    @classmethod
    def of(cls, roles: Roles) -> Task:
        """The task one object plays every role of."""
        return cls(roles.name, roles.description, roles.family, roles, roles, roles, roles)
