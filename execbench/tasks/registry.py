"""Every task by name, and what reads them all: option checking, families, pairings, the
verdict every scorer gives, a truth as its task shows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from execbench.registry import Registry
from execbench.tasks.base import SCORING_ERROR, UNPARSABLE, OptionError, Pairing, Score
from execbench.tasks.common.extract import MAX_ANSWER_CHARS, answer_cut, start_counting_cuts
from execbench.tasks.common.shown import shown_truth
from execbench.tasks.common.taxonomy import labelled
from execbench.tasks.roles import Task

if TYPE_CHECKING:
    from execbench.sandbox.pool import Sandbox
    from execbench.tasks.base import Instance

TASKS: Registry[Task] = Registry("task", populate="execbench.tasks", plugins="execbench.tasks",
                                 sort=True)
"""Every task by name; importing the ``execbench.tasks`` package registers the built-in ones,
and other packages add theirs as entry points (``execbench.plugins``)."""


def register(task: Task) -> Task:
    return TASKS.register(task.name, task)


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


def pairings() -> dict[str, Pairing]:
    """Every pairing the registered tasks declare, by name."""
    return {p.name: p for task in TASKS.entries().values() for p in task.reporting.pairings}


def truth_shown(task: str, truth: Any) -> str:
    """A truth of ``task`` as the task shows it; a run of a task not installed here still
    shows its truths, every field of them."""
    found = TASKS.entries().get(task)
    return shown_truth(truth, {}) if found is None else found.reporting.show_truth(truth)


AST_RACE = "AST constructor recursion depth mismatch"
"""What CPython 3.11 raises (``SystemError``) when a parse in one thread disturbs one in
another: its ast module counts recursion per interpreter, not per thread (gh-106905). A run
scores answers in several threads at once, so an answer may meet it with nothing wrong in
its text; it is judged again (``AST_RACE_RETRIES`` times at most)."""
AST_RACE_RETRIES = 3


def judge(instance: Instance, response: str | None, sandbox: Sandbox | None) -> Score:
    """The verdict on one response, as every scorer gives it (``run``, ``score``, the
    rewards): the instance's task judges it, with the sandbox when the task runs code, and
    an exception from the task becomes ``SCORING_ERROR`` (one odd answer must not stop a
    run, nor a trainer's batch). An answer over ``extract.MAX_ANSWER_CHARS`` is
    ``UNPARSABLE``, its detail and ``extra["answer_cut"]`` saying how much was over: a
    verdict on its head alone would count a right start followed by a wrong end right. A
    wrong or unreadable answer gets its error label and line (``common.taxonomy``) here,
    once for all tasks; a label is an aid to reading the verdict, so a rule that fails
    leaves the verdict as it is, unlabelled. Scoring and labelling both parse code, and
    either is done again where it meets CPython's ``AST_RACE``."""
    judging = get_task(instance.task).judging

    def scored() -> Score:
        start_counting_cuts()
        return judging.score(instance, response, sandbox if judging.needs_sandbox else None)

    try:
        score = _past_the_ast_race(scored)
    except Exception as exc:  # noqa: BLE001 - recorded as the verdict
        return Score(SCORING_ERROR, detail=f"{type(exc).__name__}: {exc}"[:300])
    cut = answer_cut()
    if cut:
        score = Score(UNPARSABLE, detail=f"answer over {MAX_ANSWER_CHARS} characters: "
                      f"{cut} more not read", extra={"answer_cut": cut})
    try:
        return _past_the_ast_race(lambda: labelled(instance, response, score))
    except Exception:  # noqa: BLE001 - the verdict stands without its label
        return score


def _past_the_ast_race(work: Callable[[], Score]) -> Score:
    """``work()``, done again (``AST_RACE_RETRIES`` times at most) where it meets
    ``AST_RACE``."""
    for _ in range(AST_RACE_RETRIES):
        try:
            return work()
        except SystemError as exc:
            if AST_RACE not in str(exc):
                raise
    return work()


def check_options(tasks: list[Task], given: dict[str, str]) -> None:
    """Refuse ``-T`` options that would be ignored or are malformed: a key no task declares
    (a misspelling), a key only tasks that are not being built declare, a value outside
    the choices. Raises ``OptionError`` with one line saying which and what is accepted."""
    import difflib

    chosen = {option.name: option for task in tasks for option in task.building.options}
    declared: dict[str, list[str]] = {}
    for name in task_names():
        for option in get_task(name).building.options:
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
