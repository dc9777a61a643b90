"""The records a task exchanges with the rest of execbench: the instance it builds, the
score it gives, what it may use while building, and what it declares (options,
breakdowns, pairings). The roles a task plays are in ``tasks.roles``; the registry of
tasks in ``tasks.registry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import execbench.import_guard  # noqa: F401 - first: a folder hiding the package, in one line
from execbench import SCHEMA_VERSION
from execbench.program import LANGUAGES, PYTHON
from execbench.results import Metric, Place

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject, Recordable
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

Message = dict[str, str]
_T = TypeVar("_T")

STEP_SHARE = 0.25
"""The share of the sandbox's step limit (``Limits.max_steps``) that a run made while
building a suite (a ground truth, a counterfactual witness, a buggy program) may use.
Answers are checked later under the full limit, so an answer that repeats such a run has
four times the steps it needed, and since steps are counted, not timed, the same call is
kept or dropped on every machine."""


def build_step_budget(sandbox: Sandbox) -> int:
    """Steps a run made while building may take (``STEP_SHARE`` of the limit)."""
    return int(sandbox.limits.steps * STEP_SHARE)


@dataclass(frozen=True)
class BuildContext:
    """What a task may use while building instances from one traced call."""

    seed: int
    sandbox: Sandbox
    """The build's sandbox, for tasks that must run the program again (e.g. to find an
    input that reaches a branch)."""
    options: dict[str, str] = field(default_factory=dict)
    """``-T key=value`` options given at build time."""
    traced: list[tuple[int, Trace]] = field(default_factory=list)
    """Every traced call of the program being built, as (call index, trace) pairs."""
    memo: dict[Any, Any] = field(default_factory=dict)
    """Results tasks share within one build (e.g. the mutant both generalization tasks use)."""
    inputs: int = 1
    """``build --inputs``: how many of a program's calls a task that asks about one call
    per program (``Building.asks_inputs``) asks about."""


CORRECT = "correct"
INCORRECT = "incorrect"
UNPARSABLE = "unparsable"
"""No answer could be read from the response (``extra["failure"]`` may say which rule of
the answer format it broke)."""
ERROR = "error"
"""The request failed, so there is no response to judge (set by the runner)."""
SCORING_ERROR = "scoring_error"
"""Scoring itself raised: a bug in the task, recorded instead of stopping the run."""
VERDICTS = (CORRECT, INCORRECT, UNPARSABLE, ERROR, SCORING_ERROR)
"""Every verdict a sample can get; only ``CORRECT`` counts as a success."""


class InstanceError(ValueError):
    """A record that is not a valid instance (a missing or mistyped common field)."""


_COMMON = ("id", "task", "source", "program_id", "call_index", "code", "entry_point",
           "args")
TASK_SETTABLE = ("code", "mutation")
"""Common fields a task's ``build`` may set (the mutant's code, the mutation it made);
setting any other common field is a bug the build stops on."""
RESERVED = frozenset({"schema_version", *_COMMON, "mutation", "recorded", "language",
                       "date"}) \
    - set(TASK_SETTABLE)
"""Record keys a task's fields may not use."""


@dataclass(frozen=True, slots=True)
class Instance:
    """One question of a suite: the call it is about, and the task's own fields.

    The record (``instances.jsonl``) is flat: the common fields beside the task's fields,
    which are kept apart here so that a task field can never silently replace a common one.
    """

    id: str
    task: str
    source: str
    program_id: str
    call_index: int
    code: str
    """The code the question shows (a task may show a mutant's)."""
    entry_point: str
    args: str
    """The call's argument text, as the source gave it."""
    data: JSONObject = field(default_factory=dict)
    """The task's fields (``truth``, ``variant``, ...)."""
    mutation: JSONObject | None = None
    """How the code differs from the source's program, when it is a mutant."""
    recorded: bool = False
    """The ground truth comes from a trace recorded where the call ran, not from running
    the call in the sandbox."""
    language: str = PYTHON
    """The language of ``code`` (``program.LANGUAGES``); written only when not Python, so
    that Python suites keep their bytes."""
    date: str | None = None
    """The day the program was published (``sources.dates``), where its source says:
    training data exported from a suite states it, so a trainer can keep a model's test
    problems later than its training problems. Written only when known."""

    @classmethod
    def build(cls, task: str, program: Program, index: int, payload: Recordable) -> Instance:
        """The instance of call ``index`` a task's ``build`` describes with ``payload``."""
        from execbench.sources.dates import program_date  # the sources import the tasks

        data = payload.to_record()
        code = data.pop("code", program.code)
        mutation = data.pop("mutation", program.meta.get("mutation"))
        clash = sorted(set(data) & RESERVED)
        if clash:
            raise TypeError(f"task {task!r} sets common instance fields {clash}")
        if not isinstance(code, str) or not (mutation is None or isinstance(mutation, dict)):
            raise TypeError(f"task {task!r} sets code that is no text or a mutation that is "
                            "no mapping")
        variant = f"/{data['variant']}" if "variant" in data else ""
        call = program.calls[index]
        return cls(id=f"{task}/{program.id}/{index}{variant}", task=task,
                   source=program.source, program_id=program.id, call_index=index,
                   code=code, entry_point=program.entry_point, args=call.args, data=data,
                   mutation=mutation,
                   recorded=call.recorded is not None, language=program.language,
                   date=None if (day := program_date(program)) is None else day.isoformat())

    @property
    def variant(self) -> str | None:
        """Which of a call's instances this is, where the task makes several."""
        found = self.data.get("variant")
        return found if isinstance(found, str) else None

    @property
    def truth(self) -> JSON:
        """The task's truth field as recorded (what ``show`` and the page print through
        the task's ``show_truth``); None for a task that states none."""
        return self.data.get("truth")

    @property
    def call(self) -> str:
        """The call as prompts show it: ``f(1, [2])``."""
        return f"{self.entry_point}({self.args})"

    def to_record(self) -> JSONObject:
        """The JSON record; ``mutation``, ``recorded``, ``language`` and ``date`` appear
        only when set."""
        record: JSONObject = {"schema_version": SCHEMA_VERSION,
                  **{name: getattr(self, name) for name in _COMMON}, **self.data}
        if self.mutation is not None:
            record["mutation"] = self.mutation
        if self.recorded:
            record["recorded"] = True
        if self.language != PYTHON:
            record["language"] = self.language
        if self.date is not None:
            record["date"] = self.date
        return record

    @classmethod
    def from_record(cls, record: JSONObject) -> Instance:
        """Read a record ``to_record`` wrote; ``InstanceError`` names a bad common field."""
        data = {key: value for key, value in record.items()
                if key not in _COMMON and key != "schema_version"}
        mutation = data.pop("mutation", None)
        if mutation is not None and not isinstance(mutation, dict):
            raise InstanceError(f"instance {record.get('id')!r}: field 'mutation' should be "
                                "a mapping")
        recorded = data.pop("recorded", False) is True
        language = data.pop("language", PYTHON)
        if not isinstance(language, str) or language not in LANGUAGES:
            raise InstanceError(f"instance {record.get('id')!r}: unknown language "
                                f"{language!r} (known: {', '.join(LANGUAGES)})")
        date = data.pop("date", None)
        if date is not None and not isinstance(date, str):
            raise InstanceError(f"instance {record.get('id')!r}: field 'date' should be str")
        return cls(id=_common(record, "id", str), task=_common(record, "task", str),
                   source=_common(record, "source", str),
                   program_id=_common(record, "program_id", str),
                   call_index=_common(record, "call_index", int),
                   code=_common(record, "code", str),
                   entry_point=_common(record, "entry_point", str),
                   args=_common(record, "args", str), data=data, mutation=mutation,
                   recorded=recorded, language=language, date=date)


def _common(record: JSONObject, name: str, kind: type[_T]) -> _T:
    """A common field of an instance's record, of its type."""
    value = record.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InstanceError(f"instance {record.get('id')!r}: field {name!r} should be "
                            f"{kind.__name__}")
    return value


@dataclass
class Score:
    """The verdict on one response.

    ``verdict`` is one of ``VERDICTS`` (every verdict other than ``CORRECT`` counts as a
    failure). ``score`` is an optional partial credit in [0, 1].
    """

    verdict: str
    answer: str | None = None
    score: float | None = None
    detail: str | None = None
    extra: JSONObject = field(default_factory=dict)
    stated: Any = field(default=None, repr=False, compare=False)
    """What the answer stated, as the task read it, where the error taxonomy
    (``common.taxonomy``) needs more than ``answer`` to align it with the run (a
    simulation's values per placeholder). Kept in memory only: never logged."""

    @property
    def correct(self) -> bool:
        return self.verdict == CORRECT


def _walk(record: Any, path: tuple[str, ...]) -> Any:
    """What lies at ``path`` in an instance's record; None where a key is missing."""
    for key in path:
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record


@dataclass(frozen=True)
class Breakdown:
    """A split of a task's instances into categories (CodeSense's statement kinds, the
    mutation operator of a generalization pair), declared by the task so that
    ``results.json`` gets pass@k and its interval per category
    (``metrics.TASK.breakdowns.NAME.CATEGORY``) and reports chart them, without either
    knowing the family."""

    name: str
    """What the categories are (``kind``, ``mutation operator``): the key in results and
    the title in reports."""
    key: tuple[str, ...]
    """Keys down an instance's record (``Instance.to_record``) to its category."""

    def category(self, instance: Instance) -> str:
        """The instance's category; ``?`` where its record has none."""
        found = _walk(instance.to_record(), self.key)
        return "?" if found is None else str(found)


@dataclass(frozen=True)
class TaskOption:
    """A ``-T key=value`` build option a task takes. Declared once on the task, so that the
    build's validation and ``execbench ls tasks`` read the same list."""

    name: str
    choices: tuple[str, ...]
    """The values it accepts; the first is the default. For a ``whole`` option, only the
    default."""
    help: str
    whole: bool = False
    """The option takes any whole number of at least 1 (``-T tests=5``)."""

    @property
    def accepted(self) -> str:
        """The accepted values as ``ls tasks`` and error messages show them."""
        return "N" if self.whole else "|".join(self.choices)

    def accepts(self, value: str) -> bool:
        if self.whole:
            return value.isdigit() and int(value) >= 1
        return value in self.choices

    def value(self, ctx: BuildContext) -> str:
        """The value given at build time (checked by ``check_options``), else the default."""
        return ctx.options.get(self.name, self.choices[0])


@dataclass(frozen=True)
class Pairing:
    """A metric over two tasks posed on the same calls (``results.json``:
    ``paired_metrics.NAME``), declared by one of the two tasks."""

    name: str
    first: str
    second: str


def pass_at_1(task: str, *, headline: bool = True, description: str = "") -> Metric:
    """The metric every task has: pass@1 over all its instances, with the bootstrap
    interval of the mean accuracy (which pass@1 equals)."""
    return Metric("pass@1", Place.group(task, "pass@1"), headline=headline,
                  description=description or f"share of {task} instances answered right",
                  interval=Place.group(task, "accuracy_ci95"))


class OptionError(ValueError):
    """A ``-T`` option no chosen task takes, or a value it does not accept; the build stops
    with it before any program runs."""


class SkipInstance(Exception):
    """This call cannot make an instance of the task; the reason goes to the manifest."""


class NotApplicable(SkipInstance):
    """The task has no question about this call (or, from ``choose_calls``, about any call
    of this program): not a failure, and counted apart from skips, so that a summary does
    not alarm about what could never be asked. The reason goes to the manifest."""
