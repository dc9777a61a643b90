"""Posing a question: the one way a prompt is made (``ask``), wherever it is sent or shown
again, the check of a run's templates before anything is sent, and the examples a run
draws from its suite (``drawn_from``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from execbench.tasks.protocol import DIRECT, FIXED, Protocol
from execbench.tasks.shots import DrawnExamples, SuiteReader
from execbench.tasks.templating import (
    COMMON_VARS,
    PromptTemplateError,
    check,
    render,
    render_user,
    shipped,
)

if TYPE_CHECKING:
    from execbench.tasks.base import Instance, Message
    from execbench.tasks.roles import Task

__all__ = ["DrawnExamples", "PromptTemplateError", "ask", "check_templates", "drawn_from"]


def ask(task: Task, instance: Instance, protocol: Protocol,
        drawn: DrawnExamples | None = None) -> list[Message]:
    """The messages that pose ``instance`` under ``protocol``: the system message, then the
    user's template or the task's own, rendered with the task's variables, its worked
    examples drawn from the suite by ``drawn`` where the protocol picks them there (a
    task that writes its prompt in code gives its own)."""
    asking = task.asking
    own = protocol.template_for(task.name)
    if not asking.template_names:
        messages = asking.prompt(instance, protocol)
    else:
        variables = asking.variables(instance, protocol)
        if protocol.shot_pick != FIXED:
            if drawn is None:
                raise ValueError(f"--shot-pick {protocol.shot_pick} draws examples from the "
                                 "suite: none was given")
            variables["examples"] = drawn.drawn(task, instance, protocol)
        text = render(shipped(asking.template_of(instance)), variables) if own is None \
            else render_user(own, variables)
        messages = [{"role": "user", "content": text}]
    if protocol.system:
        return [{"role": "system", "content": protocol.system}, *messages]
    return messages


def check_templates(protocol: Protocol, tasks: list[Task], suite: SuiteReader | None) -> None:
    """Refuse, in one line naming the task, before anything is sent: a template some task
    of the run cannot use (``templating.check``), examples drawn for a task that writes its
    prompt in code, and, with the ``suite`` given, a template that fails on the first
    question of a task it asks (with the task's own examples and drawn ones alike)."""
    own = {task.name: protocol.template_for(task.name) for task in tasks}
    for task in tasks:
        text = own[task.name]
        if not task.asking.template_names and (text is not None or protocol.shot_pick != FIXED):
            raise PromptTemplateError(f"task {task.name!r} writes its prompt in code: it "
                                      "takes no template and no drawn examples")
        if text is not None:
            check(text, task.name, (*COMMON_VARS, *task.asking.template_vars),
                  task.asking.template_needs)
    asked = {name for name, text in own.items() if text is not None}
    if suite is None or not asked:
        return
    drawn = DrawnExamples(suite, None) if protocol.shot_pick != FIXED else None
    for instance in suite.instances():
        if instance.task in asked:
            asked.discard(instance.task)
            task = next(t for t in tasks if t.name == instance.task)
            try:
                ask(task, instance, replace(protocol, shot_pick=FIXED))
                if drawn is not None:
                    ask(task, instance, protocol, drawn)
            except PromptTemplateError as exc:
                raise PromptTemplateError(f"task {task.name!r}, on {instance.id}: "
                                          f"{exc}") from None
        if not asked:
            return


@contextmanager
def drawn_from(suite: SuiteReader, protocol: Protocol) -> Iterator[DrawnExamples | None]:
    """What draws the examples of a run asked under ``protocol`` from ``suite`` (None when
    its examples are the tasks' own), with a sandbox for worked steps outside direct style,
    stopped when done."""
    from execbench.sandbox.pool import Sandbox

    if protocol.shot_pick == FIXED or not protocol.shots:
        yield None
        return
    sandbox = Sandbox(workers=1, limits=suite.limits) if protocol.style != DIRECT else None
    try:
        yield DrawnExamples(suite, sandbox)
    finally:
        if sandbox is not None:
            sandbox.close()
