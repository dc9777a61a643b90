"""``execbench ls``: what the registries hold (tasks, source formats, model kinds, report
layouts), or what a suite holds. Each list is read from the registry that the command
line resolves names in, so what is listed is what is accepted. An entry another package
adds (a plugin) is listed as a built-in one is, with its distribution named; one that
cannot be loaded gets its error on its line, and the rest are listed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from execbench.cli.app import fail, flag, out

if TYPE_CHECKING:
    from execbench.registry import Registry

T = TypeVar("T")


def _loaded(registry: Registry[T]) -> Iterator[tuple[str, T | None, str]]:
    """Each entry of ``registry`` by name, with a note: the distribution of a plugin's
    entry (the end of its line), or, in place of an entry that cannot be loaded, why."""
    from execbench.plugins import PluginError

    for name in registry.names():
        try:
            entry = registry.get(name)
        except PluginError as exc:
            yield name, None, str(exc)
            continue
        origin = registry.origin(name)
        yield name, entry, "" if origin is None else f" (plugin: {origin})"


def _tasks() -> list[str]:
    from execbench.tasks.registry import TASKS, families

    lines = []
    for name, task, note in _loaded(TASKS):
        if task is None:
            lines.append(f"{name:18} {note}")
            continue
        runs = " (runs model-written code, in the sandbox)" if task.judging.runs_model_code else ""
        lines.append(f"{name:18} {task.description} [{task.family}]{runs}{note}")
        lines += [f"{'':16}   -T {option.name}={option.accepted}: {option.help} "
                  f"(default {option.choices[0]})" for option in task.building.options]
    lines.append("\nfamilies (--tasks FAMILY names each of its tasks):")
    lines += [f"{family:18} {', '.join(names)}" for family, names in families().items()]
    return lines


def _formats() -> list[str]:
    from execbench.sources import FORMATS, GENERATED, GENERATED_DESCRIPTION

    lines = [f"{name:10} {note if known is None else known.description + note}"
             for name, known, note in _loaded(FORMATS)]
    return [*lines, f"{GENERATED:10} {GENERATED_DESCRIPTION}"]


def _models() -> list[str]:
    from execbench.models import MODELS

    lines = []
    for name, provider, note in _loaded(MODELS):
        if provider is None:
            lines.append(f"{name + '/...':26} {note}")
            continue
        for kind in provider.kinds:
            lines.append(f"{kind.name:26} {kind.description}{note}")
            if kind.env:
                lines.append(f"{'':26}   environment: {kind.env}")
            if kind.model_args:
                lines.append(f"{'':26}   -M {kind.model_args}")
        lines += [f"{'':26}   unset {setting}: {value}" for setting, value in provider.sampling]
    return lines


def _layouts() -> list[str]:
    from execbench.reports.layouts import LAYOUTS

    lines = []
    width = max(map(len, LAYOUTS.names()))
    for name in LAYOUTS.names():
        layout = LAYOUTS.get(name)
        extras = [note for note, has in (("--plot", layout.figure is not None),
                                         ("--by-source", layout.by_source)) if has]
        lines.append(f"{name:{width}} {layout.description}"
                     + (f" ({', '.join(extras)})" if extras else ""))
    return lines


def _rewards() -> list[str]:
    from execbench.rewards import OPTIONS

    lines = []
    for name in OPTIONS.names():
        option = OPTIONS.get(name)
        served = "every task" if option.tasks is None else ", ".join(sorted(option.tasks))
        lines.append(f"{name:14} {option.description} [{served}]")
    return lines


LISTINGS: dict[str, Callable[[], list[str]]] = {
    "tasks": _tasks, "formats": _formats, "models": _models, "layouts": _layouts,
    "rewards": _rewards}
"""What ``execbench ls WHAT`` prints, one line per entry (indented lines detail it)."""


def _template_vars() -> list[str]:
    """Each task's template variables (``--template`` files may use these only)."""
    from execbench.tasks.registry import TASKS
    from execbench.tasks.templating import COMMON_VARS

    lines = ["every task's template gets:"]
    lines += [f"  {var.name:14} {var.description}" for var in COMMON_VARS]
    for name, task, note in _loaded(TASKS):
        if task is None:
            lines.append(f"\n{name}: {note}")
            continue
        own = task.asking.template_vars
        if not own:
            lines.append(f"\n{name}: writes its prompt in code, takes no template")
            continue
        shipped = ", ".join(f"{n}.j2" for n in task.asking.template_names)
        lines.append(f"\n{name} (shipped: {shipped}):")
        lines += [f"  {var.name:14} {var.description}" for var in own]
    return lines


def _shipped_template(name: str) -> str:
    """The shipped template of task ``name`` (its main one), or of the template called
    ``name`` (``codesense``, which several tasks share)."""
    from execbench.plugins import PluginError
    from execbench.tasks.registry import TASKS
    from execbench.tasks.templating import shipped

    try:
        task = TASKS.get(name) if name in TASKS else None
    except PluginError as exc:
        fail(str(exc))
    if task is not None:
        if not task.asking.template_names:
            fail(f"task {name!r} writes its prompt in code and ships no template")
        return shipped(task.asking.template_names[0])
    names = sorted({n for _, found, _ in _loaded(TASKS) if found is not None
                    for n in found.asking.template_names})
    if name not in names:
        fail(f"no task or shipped template named {name!r}; tasks: {', '.join(TASKS.names())}; "
             f"templates: {', '.join(names)}")
    return shipped(name)


def list_things(what: Annotated[str, typer.Argument(
        help="tasks, formats, models, layouts, rewards, or a suite folder.")] = "tasks",
        template_vars: Annotated[bool, flag(
            "--template-vars", "With tasks: the variables each task's prompt template is "
                               "rendered with.")] = False,
        template: Annotated[str | None, typer.Option(
            metavar="TASK", help="With tasks: print the shipped prompt template of TASK, "
                                 "to start a --template file from.")] = None) -> None:
    """List the tasks (with their -T options), source formats, model kinds (with their
    environment variables and -M keys), report layouts, reward options (`serve-rewards
    --reward`), or what a suite holds."""
    if (template_vars or template is not None) and what != "tasks":
        fail("--template-vars and --template go with `execbench ls tasks`")
    if template is not None:
        typer.echo(_shipped_template(template), nl=False)
    elif template_vars:
        out.print("\n".join(_template_vars()), highlight=False, markup=False)
    elif what in LISTINGS:
        out.print("\n".join(LISTINGS[what]()), highlight=False, markup=False)
    elif Path(what).is_dir():
        _list_suite(Path(what))
    else:
        fail(f"ls takes {', '.join(LISTINGS)} or a suite folder, not {what!r}")


def _list_suite(folder: Path) -> None:
    """What a suite holds: where it came from, with which options, and per task how many
    instances, from how many programs and sources, with the first ids."""
    from execbench.suite import SuiteError, SuiteFile

    # per task: instances, programs, sources, the first ids (the suite read as a stream)
    tasks: dict[str, tuple[int, set[str], set[str], list[str]]] = {}
    try:
        suite = SuiteFile.open(folder)
        for inst in suite.instances():
            count, programs, sources, first = tasks.setdefault(inst.task, (0, set(), set(), []))
            programs.add(inst.program_id)
            sources.add(inst.source)
            if len(first) < 3:
                first.append(inst.id)
            tasks[inst.task] = (count + 1, programs, sources, first)
    except SuiteError as exc:
        fail(str(exc))
    manifest = suite.manifest.to_record()
    total = sum(count for count, *_ in tasks.values())
    say = [f"suite {folder}: {total} instances, sha256 {suite.sha256[:16]}, built by "
           f"execbench {manifest['execbench_version']} on Python {manifest['python']}"]
    for source in manifest["sources"]:
        say.append(f"  source {source['name']} ({source['format']}, {source['origin']}): "
                   f"{source['programs']} programs")
    options = {key: manifest[key]
               for key in ("seed", "limit", "max_calls", "plus_inputs", "mutate", "buggy")
               if manifest.get(key) not in (None, False)}
    options.update({f"-T {k}": v for k, v in manifest.get("task_options", {}).items()})
    say.append("  options: " + (", ".join(f"{k}={v}" for k, v in options.items()) or "none"))
    for task in manifest["tasks"]:
        count, programs, sources, first = tasks.get(task, (0, set(), set(), []))
        shown = ", ".join(sorted(sources)) or "none"
        ids = ", ".join(first)
        say.append(f"  {task}: {count} instances from {len(programs)} programs (sources: "
                   f"{shown}){'; first: ' + ids if ids else ''}")
    say.append(f"  skipped: {len(manifest['skipped'])} entries (listed in manifest.json)")
    out.print("\n".join(say), highlight=False, markup=False)
