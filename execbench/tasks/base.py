"""The Task protocol: what a benchmark task must provide, and the records it exchanges.

A task turns a traced call into instances (JSON records with the prompt fields and the
ground truth), renders prompts, and scores a response. Scoring includes extraction, so
``reference/oracle`` answers go through exactly the path a model's answers take.
Adding a task means one module implementing this protocol plus one ``register`` call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from execbench import SCHEMA_VERSION
from execbench.program import LANGUAGES, PYTHON
from execbench.registry import Registry
from execbench.results import Metric, Place
from execbench.sandbox.trace import RESULT_ONLY, TraceOptions
from execbench.tasks.common.extract import MAX_ANSWER_CHARS, answer_cut, start_counting_cuts

if TYPE_CHECKING:
    from execbench.program import Program
    from execbench.sandbox.pool import Sandbox
    from execbench.sandbox.trace import Trace

Message = dict[str, str]

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


_COMMON: dict[str, type] = {"id": str, "task": str, "source": str, "program_id": str,
                            "call_index": int, "code": str, "entry_point": str, "args": str}
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
    data: dict[str, Any] = field(default_factory=dict)
    """The task's fields (``truth``, ``variant``, ...)."""
    mutation: dict[str, Any] | None = None
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
    def build(cls, task: str, program: Program, index: int, fields: dict[str, Any]) -> Instance:
        """The instance a task's ``build`` describes with ``fields`` for call ``index``."""
        from execbench.sources.dates import program_date  # the sources import the tasks

        data = dict(fields)
        overrides = {name: data.pop(name) for name in TASK_SETTABLE if name in data}
        clash = sorted(set(data) & RESERVED)
        if clash:
            raise TypeError(f"task {task!r} sets common instance fields {clash}")
        variant = f"/{data['variant']}" if "variant" in data else ""
        call = program.calls[index]
        return cls(id=f"{task}/{program.id}/{index}{variant}", task=task,
                   source=program.source, program_id=program.id, call_index=index,
                   code=overrides.get("code", program.code), entry_point=program.entry_point,
                   args=call.args, data=data,
                   mutation=overrides.get("mutation", program.meta.get("mutation")),
                   recorded=call.recorded is not None, language=program.language,
                   date=None if (day := program_date(program)) is None else day.isoformat())

    @property
    def call(self) -> str:
        """The call as prompts show it: ``f(1, [2])``."""
        return f"{self.entry_point}({self.args})"

    def to_record(self) -> dict[str, Any]:
        """The JSON record; ``mutation``, ``recorded``, ``language`` and ``date`` appear
        only when set."""
        record = {"schema_version": SCHEMA_VERSION,
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
    def from_record(cls, record: dict[str, Any]) -> Instance:
        """Read a record ``to_record`` wrote; ``InstanceError`` names a bad common field."""
        data = dict(record)
        data.pop("schema_version", None)
        common = {}
        for name, kind in _COMMON.items():
            value = data.pop(name, None)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise InstanceError(f"instance {record.get('id')!r}: field {name!r} should be "
                                    f"{kind.__name__}")
            common[name] = value
        mutation = data.pop("mutation", None)
        recorded = data.pop("recorded", False) is True
        language = data.pop("language", PYTHON)
        if not isinstance(language, str) or language not in LANGUAGES:
            raise InstanceError(f"instance {record.get('id')!r}: unknown language "
                                f"{language!r} (known: {', '.join(LANGUAGES)})")
        date = data.pop("date", None)
        if date is not None and not isinstance(date, str):
            raise InstanceError(f"instance {record.get('id')!r}: field 'date' should be str")
        return cls(**common, data=data, mutation=mutation, recorded=recorded,
                   language=language, date=date)


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
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.verdict == CORRECT


def judge(instance: Instance, response: str | None, sandbox: Sandbox | None) -> Score:
    """The verdict on one response, as every scorer gives it (``run``, ``score``, the
    rewards): the instance's task scores it, with the sandbox when the task runs code, and
    an exception from the task becomes ``SCORING_ERROR`` (one odd answer must not stop a
    run, nor a trainer's batch). An answer over ``extract.MAX_ANSWER_CHARS`` is
    ``UNPARSABLE``, its detail and ``extra["answer_cut"]`` saying how much was over: a
    verdict on its head alone would count a right start followed by a wrong end right."""
    task = get_task(instance.task)
    start_counting_cuts()
    try:
        score = task.score(instance, response, sandbox if task.needs_sandbox else None)
    except Exception as exc:  # noqa: BLE001 - recorded as the verdict
        return Score(SCORING_ERROR, detail=f"{type(exc).__name__}: {exc}"[:300])
    cut = answer_cut()
    if cut:
        return Score(UNPARSABLE, detail=f"answer over {MAX_ANSWER_CHARS} characters: "
                     f"{cut} more not read", extra={"answer_cut": cut})
    return score


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


def check_options(tasks: list[Task], given: dict[str, str]) -> None:
    """Refuse ``-T`` options that would be ignored or are malformed: a key no task declares
    (a misspelling), a key only tasks that are not being built declare, a value outside
    the choices. Raises ``OptionError`` with one line saying which and what is accepted."""
    import difflib

    chosen = {option.name: option for task in tasks for option in task.options}
    declared: dict[str, list[str]] = {}
    for name in task_names():
        for option in get_task(name).options:
            declared.setdefault(option.name, []).append(name)
    for key, value in given.items():
        if key not in declared:
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = ", ".join(f"{k} ({', '.join(v)})" for k, v in sorted(declared.items()))
            raise OptionError(f"unknown -T key {key!r}; {hint}task options: {known or 'none'}")
        if key not in chosen:
            raise OptionError(f"-T {key} concerns the {', '.join(declared[key])} task, which "
                              f"is not being built (tasks: {', '.join(t.name for t in tasks)})")
        option = chosen[key]
        if not option.accepts(value):
            what = "a whole number of at least 1" if option.whole \
                else f"one of {', '.join(option.choices)}"
            raise OptionError(f"-T {key} must be {what}, not {value!r}")


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


class TaskBase:
    """Defaults for the optional parts of the ``Task`` protocol: one instance per call,
    traced with the plain line recorder, pass@1 as the only headline metric, no
    family-specific summary, build counts, pairing, breakdown or layout."""

    name: str
    family = "other"
    layout: str | None = None
    pairings: tuple[Pairing, ...] = ()
    breakdowns: tuple[Breakdown, ...] = ()
    summary_data: tuple[str, ...] = ()
    trace_options = RESULT_ONLY

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        return None
    options: tuple[TaskOption, ...] = ()
    runs_model_code = False

    def unusable(self, trace: Trace) -> str | None:
        return None

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        return [index for index, _ in traced]

    def metrics(self) -> tuple[Metric, ...]:
        return (pass_at_1(self.name),)

    def summarize(self, samples: list[dict[str, Any]],
                  instances: dict[str, Instance]) -> dict[str, Any] | None:
        return None


class OptionError(ValueError):
    """A ``-T`` option no chosen task takes, or a value it does not accept; the build stops
    with it before any program runs."""


class SkipInstance(Exception):
    """This call cannot make an instance of the task; the reason goes to the manifest."""


class NotApplicable(SkipInstance):
    """The task has no question about this call (or, from ``choose_calls``, about any call
    of this program): not a failure, and counted apart from skips, so that a summary does
    not alarm about what could never be asked. The reason goes to the manifest."""


class Task(Protocol):
    name: str
    description: str
    needs_sandbox: bool
    """True when scoring runs code (then the runner gives ``score`` a sandbox)."""
    runs_model_code: bool
    """True when scoring runs code the model wrote (in the sandbox, never elsewhere), not
    only the benchmark's program on values read from the answer; ``ls tasks`` says so."""
    family: str
    """The family the task belongs to (``prediction``, ``dexbench``, ...): a column group
    of the leaderboard."""
    layout: str | None
    """The report layout (``execbench report --layout``) that shows the family in full."""
    pairings: tuple[Pairing, ...]
    """Metrics over this task and another posed on the same calls."""
    breakdowns: tuple[Breakdown, ...]
    """Splits of the task's instances into categories that results and reports break
    pass@k down by."""
    trace_options: TraceOptions
    """What the ground-truth run of each call must record (the recorder, the bounds). A
    build traces every call once, with the options of all its tasks ``combined``. By
    default its lines and outcome only (``RESULT_ONLY``): an event list holds up to 10,000
    pairs per call, which most tasks never read and a chunk of 2,000 calls held in
    gigabytes."""

    def suite_counts(self, instances: list[Instance]) -> dict[str, int] | None:
        """Counts about the task's instances worth stating after a build (the manifest's
        ``task_counts.NAME``, printed by ``execbench build``), or None."""
        ...
    options: tuple[TaskOption, ...]
    """The ``-T`` build options the task takes (``check_options`` refuses any other)."""

    def metrics(self) -> tuple[Metric, ...]:
        """The numbers the task puts in ``results.json`` worth showing, headline first."""
        ...

    summary_data: tuple[str, ...]
    """The fields of an instance's ``data`` that :meth:`summarize` reads. A run's results
    are made from a stream of its suite, and only these (with the common fields but the
    code) are kept of each instance for the summary, so that memory holds no code, truth
    or prompt of a suite of any size."""

    def summarize(self, samples: list[dict[str, Any]],
                  instances: dict[str, Instance]) -> dict[str, Any] | None:
        """Metrics beyond pass@k (``results.json``: ``task_metrics.NAME``), or None.
        ``samples`` are the task's sample records with the fields metrics read
        (``runner.KEPT_FIELDS``: not the texts, so not ``response``, ``answer`` or
        ``detail``), and ``instances`` hold ``summary_data`` only (no code, no
        arguments)."""
        ...

    def unusable(self, trace: Trace) -> str | None:
        """Why no instance of the task can come from this traced call whichever calls are
        chosen (it raised, its value has no literal form), or None. The build lists every
        such call in the manifest's skips with this reason and offers only the others to
        ``choose_calls``, so a call a task cannot use is never dropped without a word."""
        ...

    def choose_calls(self, program: Program, traced: list[tuple[int, Trace]],
                     ctx: BuildContext) -> list[int]:
        """Which calls (indices into ``program.calls``) to build instances from, given the
        traced ones that are not ``unusable`` as (call index, trace) pairs. A call left out
        here is a choice (``-T tests=K`` takes K), not a skip; raise ``NotApplicable`` when
        no call of the program suits the task, saying why."""
        ...

    def build(self, program: Program, call_index: int, trace: Trace,
              ctx: BuildContext) -> list[dict[str, Any]]:
        """The task's fields of the call's instances (usually one); raise
        ``SkipInstance`` to skip. Of the common fields only ``TASK_SETTABLE`` ones may be
        set (``code`` for a mutant); several instances of one call tell themselves apart
        with a ``variant``, which becomes the last part of their id."""
        ...

    def prompt(self, instance: Instance, shots: int) -> list[Message]: ...

    def reference_response(self, instance: Instance) -> str:
        """A response that states the ground truth in the format ``score`` reads."""
        ...

    def score(self, instance: Instance, response: str | None,
              sandbox: Sandbox | None) -> Score: ...

    # Optional: ``original_response(instance) -> str`` for tasks ``reference/original``
    # can answer.


TASKS: Registry[Task] = Registry("task", populate="execbench.tasks", plugins="execbench.tasks",
                                 sort=True)
"""Every task by name; importing the ``execbench.tasks`` package registers the built-in ones,
and other packages add theirs as entry points (``execbench.plugins``)."""


def register(task: Task) -> Task:
    return TASKS.register(task.name, task)


def pairings() -> dict[str, Pairing]:
    """Every pairing the registered tasks declare, by name."""
    return {p.name: p for task in TASKS.entries().values() for p in task.pairings}


def get_task(name: str) -> Task:
    return TASKS.get(name)


def task_names() -> list[str]:
    """The tasks that can be built and scored here (a plugin that cannot be loaded is
    not one of them)."""
    return list(TASKS.entries())


def families() -> dict[str, list[str]]:
    """Each family's tasks, in name order: ``--tasks FAMILY`` names them all."""
    found: dict[str, list[str]] = {}
    for name, task in TASKS.entries().items():
        found.setdefault(task.family, []).append(name)
    return found
