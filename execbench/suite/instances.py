"""Each task's instances from a chunk's traced calls, a program at a time: the calls a task
can use, the ones it chooses, and a skip with its reason for every one it cannot build."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from execbench.manifest import Skip
from execbench.program import STDIN, Program
from execbench.sandbox.trace import Trace
from execbench.suite.options import Progress
from execbench.tasks.base import BuildContext, Instance, NotApplicable, SkipInstance
from execbench.tasks.roles import Task

STDIN_SKIP = ("the task asks about a function call, and a program that reads standard input "
              "has none")


def build_instances(tasks: list[Task], programs: list[Program],
                    calls: list[tuple[Program, int]], traces: list[Trace], ctx: BuildContext,
                    skipped: dict[str, list[Skip]], progress: Progress,
                    emit: Callable[[Task, list[Instance]], None]) -> None:
    """Each task's instances from ``programs`` (in order), handed to ``emit`` a program at a
    time; its skips added to its list."""
    by_program: dict[str, list[tuple[int, Trace]]] = {}
    for (program, index), trace in zip(calls, traces, strict=True):
        by_program.setdefault(program.id, []).append((index, trace))
    for task in tasks:
        task_skips = skipped[task.name]
        for done, program in enumerate(programs):
            progress(f"building {task.name}", done, len(programs))
            traced = by_program.get(program.id, [])
            by_index = dict(traced)
            local = replace(ctx, traced=traced)
            if program.entry_point == STDIN and not task.building.reads_stdin:
                task_skips.append(Skip(where=program.id, kind="not_applicable",
                                       reason=STDIN_SKIP, task=task.name))
                continue
            usable = _usable(task, program, traced, task_skips)
            try:
                chosen = task.building.choose_calls(program, usable, local) if usable else []
            except NotApplicable as exc:
                task_skips.append(Skip(where=program.id, kind="not_applicable",
                                       reason=str(exc), task=task.name))
                continue
            instances: list[Instance] = []
            for index in chosen:
                _add_instance(task, program, index, by_index[index], local, instances,
                              task_skips)
            emit(task, instances)
        progress(f"building {task.name}", len(programs), len(programs))


def _usable(task: Task, program: Program, traced: list[tuple[int, Trace]],
            skipped: list[Skip]) -> list[tuple[int, Trace]]:
    """The traced calls the task can use; each other one is listed as skipped with the
    task's reason (``Building.unusable``)."""
    usable = []
    for index, trace in traced:
        reason = task.building.unusable(trace)
        if reason is None:
            usable.append((index, trace))
        else:
            skipped.append(Skip(where=f"{program.id}#{index}", kind="instance", reason=reason,
                                task=task.name))
    return usable


def _add_instance(task: Task, program: Program, index: int, trace: Trace, ctx: BuildContext,
                  instances: list[Instance], skipped: list[Skip]) -> None:
    try:
        built = task.building.build(program, index, trace, ctx)
    except SkipInstance as exc:
        kind = "not_applicable" if isinstance(exc, NotApplicable) else "instance"
        skipped.append(Skip(where=f"{program.id}#{index}", kind=kind, reason=str(exc),
                            task=task.name))
        return
    for payload in built:
        instances.append(Instance.build(task.name, program, index, payload))
