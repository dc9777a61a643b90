"""execbench from Python: build a suite, run a model on it, report runs.

Each function takes the config that the matching command fills from its flags
(``BuildConfig`` for ``execbench build``, ``runner.RunConfig`` for ``run``,
``ReportConfig`` for ``report``) and checks it with the same code, so a script is refused
what a user typing options is refused, in the same words: a ``settings.SettingError``
names the setting by its field here and by its flag on the command line. What the
functions return is typed: the suite as a ``SuiteFile``, a run's ``Results``, a
``Report`` of tables. The builder, the runner and the reports are imported by the
function that needs them.

(``execbench.reports`` is the package of layouts and tables: a function of that name on
the ``execbench`` package would be replaced by the package as soon as anything imported
it, so the API has a module of its own.)
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from execbench.models.base import GenerateConfig
from execbench.rundir import Results, RunConfig
from execbench.settings import SettingError, at_least_one

if TYPE_CHECKING:
    from execbench.manifest import Manifest
    from execbench.reports.layouts import Layout
    from execbench.reports.tables import Table
    from execbench.rundir import Sample
    from execbench.suite import BuildOptions, Progress, SuiteFile

__all__ = ["BuildConfig", "GenerateConfig", "Report", "ReportConfig", "Results", "RunConfig",
           "build", "checked_run", "default_out", "report", "run", "task_names",
           "write_suite"]


def _plain(text: str) -> str:
    """``text`` (a path, a name, a message from elsewhere) as a ``SettingError`` text
    holds it: its braces are not the setting names'."""
    return text.replace("{", "{{").replace("}", "}}")


def task_names(given: str | Sequence[str], *, known_only: bool = True) -> list[str]:
    """The task names ``given`` (comma-separated, or a sequence) stands for, a family's
    name standing for each of its tasks (``execbench ls tasks`` lists them), each once.
    Naming no task is refused, and so is a name no task or family has unless
    ``known_only`` is off (a run says which tasks its suite has instead)."""
    from execbench.tasks.registry import TASKS, families

    grouped = families()
    parts = given.split(",") if isinstance(given, str) else given
    names: list[str] = []
    for part in (part.strip() for part in parts):
        for name in grouped.get(part, [part]) if part not in TASKS else [part]:
            if name and name not in names:
                names.append(name)
    if not names:
        raise SettingError(f"{{0}} names no task; known tasks: "
                           f"{_plain(', '.join(TASKS.names()))}", "tasks")
    unknown = [name for name in names if name not in TASKS]
    if known_only and unknown:
        raise SettingError(_plain(str(TASKS.unknown(unknown))))
    return names


@dataclass(frozen=True)
class BuildConfig:
    """A build as ``execbench build`` takes it (``execbench build --help`` says what each
    setting does); ``options`` checks it."""

    sources: Sequence[str]
    """Files, folders, or the built-in names ``humaneval`` and ``dsl``."""
    out: Path | str
    tasks: str | Sequence[str] | None = None
    """Task or family names; None: the task a CodeSense file holds, else output, input."""
    seed: int = 0
    limit: int | None = None
    fmt: str | None = None
    """The sources' format; None: detected."""
    max_calls: int | None = None
    plus_inputs: bool = False
    count: int | None = None
    """How many programs the ``dsl`` source samples (None: 100)."""
    mutate: bool = False
    buggy: bool = False
    after: str | None = None
    before: str | None = None
    task_options: Mapping[str, str] = field(default_factory=dict)
    workers: int | None = None
    max_steps: int | None = None
    cpu_seconds: float = 2.0
    memory_mb: int = 1024
    overwrite: bool = False
    executor: str = "local"
    ray_address: str | None = None
    contest_filters: str | None = None
    """A named set of contest filters (``yang``), which the single filters below adjust."""
    min_chars: int | None = None
    max_chars: int | None = None
    dedupe: str | None = None
    """``ast``: drop a contest solution whose syntax tree an earlier one has."""
    max_steps_per_call: int | None = None
    max_per_question: int | None = None
    inputs: int | None = None
    """Calls per program the one-call tasks (mutation, choice) ask (None: 1)."""

    def options(self) -> BuildOptions:
        """The builder's options, once every setting is one a build can use; raises
        ``SettingError`` before anything is read or run. (What only the sources can tell,
        a ``-T`` key no chosen task takes, a different suite in ``out``, the builder
        refuses itself, once it has read them.)"""
        from execbench.executors import ExecutorChoice, ExecutorError
        from execbench.sandbox.pool import Limits
        from execbench.sources import FORMATS, GENERATED
        from execbench.sources.contest_filters import ContestFilters, chosen
        from execbench.suite import BuildOptions

        at_least_one({"limit": self.limit, "max_calls": self.max_calls, "count": self.count,
                      "inputs": self.inputs,
                      "workers": self.workers, "max_steps": self.max_steps})
        tasks = None if self.tasks is None else task_names(self.tasks)
        if self.fmt is not None and self.fmt not in FORMATS:
            raise SettingError(_plain(str(FORMATS.unknown([self.fmt]))))
        if self.count is not None and not any(spec == GENERATED and not Path(spec).exists()
                                              for spec in self.sources):
            raise SettingError(f"{{0}} sets how many programs the {GENERATED} source "
                               f"samples, and no source is {GENERATED}", "count")
        _check_out(Path(self.out), self.overwrite)
        try:
            executor = ExecutorChoice(self.executor, self.ray_address)
        except ExecutorError as exc:
            raise SettingError(_plain(str(exc))) from None
        return BuildOptions(
            tasks=tasks, seed=self.seed, limit=self.limit, max_calls=self.max_calls,
            fmt=self.fmt, plus_inputs=self.plus_inputs, mutate=self.mutate, buggy=self.buggy,
            after=_day(self.after, "after"), before=_day(self.before, "before"),
            count=100 if self.count is None else self.count,
            task_options=dict(self.task_options),
            limits=Limits(cpu_seconds=self.cpu_seconds,
                          wall_seconds=max(10.0, 5 * self.cpu_seconds),
                          memory_mb=self.memory_mb, max_steps=self.max_steps),
            workers=self.workers, overwrite=self.overwrite, executor=executor,
            contest_filters=chosen(self.contest_filters, ContestFilters(
                self.min_chars, self.max_chars, self.dedupe, self.max_steps_per_call,
                self.max_per_question)),
            inputs=1 if self.inputs is None else self.inputs)


def _day(text: str | None, setting: str) -> str | None:
    """A day as ``YYYY-MM-DD``, so that the manifest writes every spelling of a day the
    same way."""
    from execbench.sources.dates import DateError, parse_date

    if text is None:
        return None
    try:
        return parse_date(text).isoformat()
    except DateError as exc:
        raise SettingError(f"{{0}}: {_plain(str(exc))}", setting) from None


def _check_out(out: Path, overwrite: bool) -> None:
    """Refuse a suite written into a run folder, where it would sit beside samples of
    other instances, unless ``overwrite`` (then ``write_suite`` removes the run's files
    once the suite is written)."""
    from execbench.rundir import RUN_CONFIG

    if (out / RUN_CONFIG).is_file() and not overwrite:
        raise SettingError(f"{_plain(str(out))} holds a run (it has {RUN_CONFIG}); add {{0}} "
                           "to replace it with a suite, or choose another {1}", "overwrite",
                           "out")


def write_suite(sources: Sequence[str], out: Path, options: BuildOptions, *,
                warn: Callable[[str], None] | None = None,
                progress: Progress | None = None) -> Manifest:
    """Build the suite ``options`` describe into ``out`` (``BuildConfig.options`` made
    them) and return its manifest; a run the suite replaces is removed once the suite is
    written. ``warn`` is told each skipped record, ``progress`` how far the build is."""
    from execbench.rundir import RESULTS, RUN_CONFIG, SAMPLES
    from execbench.suite import build_suite

    replaces_run = (out / RUN_CONFIG).is_file()
    manifest = build_suite(sources, out, options, warn=warn or (lambda _message: None),
                           progress=progress)
    if replaces_run:
        for name in (RUN_CONFIG, SAMPLES, RESULTS):
            (out / name).unlink(missing_ok=True)
    return manifest


def build(config: BuildConfig, *, warn: Callable[[str], None] | None = None,
          progress: Progress | None = None) -> SuiteFile:
    """Build a suite as ``execbench build`` does; the suite comes back opened, its
    manifest and hash read. Raises ``SettingError`` for settings no build can use and
    ``suite.SuiteError`` for sources that cannot be built."""
    from execbench.suite import SuiteFile

    out = Path(config.out)
    write_suite(list(config.sources), out, config.options(), warn=warn, progress=progress)
    return SuiteFile.open(out)


def checked_run(config: RunConfig, out: Path | None = None) -> RunConfig:
    """``config`` for a run into ``out`` (None: a new folder), with each family it names
    given as its tasks and its temperature stated (``RunConfig.decoding_stated``), once
    every setting is one a run can use (else ``SettingError``)."""
    config.validate()
    config = config.decoding_stated(out)
    if config.tasks is not None:
        config = replace(config, tasks=task_names(config.tasks, known_only=False))
    _check_templates(config)
    return config


def _check_templates(config: RunConfig) -> None:
    """Refuse, before anything is sent, a ``--template`` some task of the run cannot use
    (or that fails on its first question), one that names a task the run does not ask,
    and examples drawn for a task that writes its prompt in code
    (``asking.check_templates``); the suite's tasks are the run's unless ``tasks`` names
    them. A suite that cannot be read is left to the run to report."""
    from execbench.suite import SuiteError, SuiteFile
    from execbench.tasks import get_task
    from execbench.tasks.asking import PromptTemplateError, check_templates
    from execbench.tasks.protocol import EVERY_TASK, FIXED

    if not config.templates and config.shot_pick == FIXED:
        return
    try:
        suite = SuiteFile.open(Path(config.suite))
    except (SuiteError, OSError):
        return
    names = config.tasks if config.tasks is not None else suite.manifest.recipe.tasks
    stray = sorted(set(config.templates) - {*names, EVERY_TASK})
    if stray:
        said = _plain(f"names {', '.join(stray)}, not a task of this run ({', '.join(names)})")
        raise SettingError("{0} " + said, "templates")
    try:
        check_templates(config.protocol(), [get_task(name) for name in names], suite)
    except (PromptTemplateError, SuiteError) as exc:
        raise SettingError(f"{{0}}: {_plain(str(exc))}", "templates") from None


def default_out(model: str, suite: Path) -> Path:
    """``runs/MODEL_SUITE_TIME``, as inspect keeps a log folder: a run needs no folder
    named to start, and two runs started apart never share one."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{model}_{suite.resolve().name}").strip("-")
    return Path("runs") / f"{name}_{time.strftime('%Y%m%d-%H%M%S')}"


def run(config: RunConfig, out: Path | str | None = None, *,
        progress: Callable[[Sample], None] | None = None,
        notice: Callable[[str], None] | None = None) -> Results:
    """Evaluate a model on a suite as ``execbench run`` does, into ``out`` (default:
    ``default_out``), resuming what that folder holds. ``progress`` is told each sample as
    it is logged, ``notice`` each line the user should read before the answers come."""
    from execbench import runner

    folder = default_out(config.model, Path(config.suite)) if out is None else Path(out)
    config = checked_run(config, folder)
    return Results.from_record(runner.run(config, folder, progress=progress, notice=notice))


@dataclass(frozen=True)
class ReportConfig:
    """A report as ``execbench report`` takes it (without its page, ``--html``)."""

    runs: Sequence[Path | str]
    """Run folders to compare."""
    layout: str = "default"
    fmt: str = "text"
    """How ``Report.text`` shows the tables: text, markdown, csv or json."""
    k: Sequence[int] | None = None
    """The pass@k columns; None: every k up to the largest n."""
    by_source: bool = False
    verdicts: bool = False
    figure: bool = False
    """Also draw the layout's figure (``Report.figure``, a PNG; the plot extra)."""
    width: int = 100
    """Characters a text table may take; a wider one is split."""
    compare: bool = False
    """Two runs' paired differences on the instances both answered: the
    ``paired-differences`` layout, for exactly two runs (``reports.compare``)."""
    model_cards: Path | str | None = None
    """A TOML file of model cards (``models.cards``) giving the runs' models a release date
    and training cutoff where a run has none of its own (runs made before dates were
    recorded); a run's own dates win."""
    tasks: Sequence[str] | None = None
    """Only these tasks' numbers (``Results.for_tasks``); None: every task of each run."""

    def chosen_layout(self) -> Layout:
        """The layout, once it can show what was asked of it (else ``SettingError``)."""
        from execbench.reports.compare import COMPARE_LAYOUT
        from execbench.reports.layouts import LAYOUTS, layouts
        from execbench.reports.tables import FORMATS

        if self.fmt not in FORMATS:
            raise SettingError(f"unknown format {_plain(repr(self.fmt))}; choose one of "
                               f"{', '.join(FORMATS)}")
        if self.layout not in LAYOUTS:
            raise SettingError(_plain(str(LAYOUTS.unknown([self.layout]))))
        if self.compare and self.layout not in ("default", COMPARE_LAYOUT):
            raise SettingError(f"{{0}} is the {COMPARE_LAYOUT} layout; it takes no other "
                               f"layout than that ({self.layout})", "compare", "layout")
        chosen = LAYOUTS.get(COMPARE_LAYOUT if self.compare else self.layout)
        if self.figure and chosen.figure is None:
            drawn = [name for name, item in layouts().items() if item.figure is not None]
            raise SettingError(f"{{0}} needs a layout that has a figure ({{1}} "
                               f"{' or '.join(drawn)}); the {chosen.name} layout has none",
                               "figure", "layout")
        if self.by_source and not chosen.by_source:
            raise SettingError(f"{{0}} concerns the default layout; the {chosen.name} layout "
                               "has its own rows", "by_source")
        return chosen


@dataclass(frozen=True)
class Report:
    """What ``report`` found: the tables, rendered as asked, and what was read."""

    tables: list[Table]
    text: str
    """The tables in the config's format (``json``: one document)."""
    results: list[Results]
    """Each run's results."""
    skipped: list[str]
    """The folders given that hold no results, each with why and what to run."""
    warnings: list[str]
    """What makes the runs less comparable than they look (a suite gone or changed since
    a run, runs over different instances)."""
    figure: bytes | None = None


def report(config: ReportConfig) -> Report:
    """Compare runs as ``execbench report`` does. Raises ``SettingError`` for what no
    report can show, when no folder given holds results, and for a figure that cannot be
    drawn here (without the plot extra)."""
    from execbench.reports.comparable import coverage_warning
    from execbench.reports.layouts import View
    from execbench.reports.tables import render, verdict_table
    from execbench.rundir import RESULTS, not_a_run, read_results, stale_suite

    layout = config.chosen_layout()
    results: list[Results] = []
    skipped, warnings = [], []
    for folder in map(Path, config.runs):
        path = folder / RESULTS
        if not path.is_file():
            skipped.append(not_a_run(folder))
            continue
        stale = stale_suite(folder)
        if stale:
            warnings.append(stale)
        try:
            results.append(read_results(folder))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            skipped.append(f"{folder}: its {RESULTS} cannot be read "
                           f"({type(exc).__name__}: {exc})")
    if config.model_cards is not None:
        results = _with_cards(results, Path(config.model_cards))
    if config.tasks is not None:
        results = _for_tasks(results, config.tasks, skipped)
    left_out = _plain("".join(f"; {why}" for why in skipped))
    if not results:
        raise SettingError("no run with results to report" + left_out)
    mismatch = coverage_warning(results)
    if mismatch is not None:
        warnings.append(mismatch)
    if config.compare and len(results) != 2:
        raise SettingError(f"{{0}} takes two runs with results, not {len(results)}"
                           + left_out, "compare")
    if len(results) < layout.min_runs:
        raise SettingError(f"the {layout.name} layout compares runs: give at least "
                           f"{layout.min_runs}, not {len(results)}"
                           + left_out, "layout")
    tables = layout.sections(results, View(ks=_ks(config.k, results),
                                           by_source=config.by_source))
    if config.verdicts:
        tables.append(verdict_table(results))
    try:
        figure = layout.draw(results) if config.figure else None
    except RuntimeError as exc:
        raise SettingError(f"{{0}}: {_plain(str(exc))}", "figure") from None
    return Report(tables, render(tables, config.fmt, width=config.width), results, skipped,
                  warnings, figure)


def _for_tasks(results: list[Results], tasks: Sequence[str],
               skipped: list[str]) -> list[Results]:
    """``results`` seen through ``tasks``; a run that answered none of them joins
    ``skipped`` with the reason. ``SettingError`` for a task no run answered, which is a
    typo more often than a wish (a run that answered it elsewhere would say so)."""
    answered = {task for result in results for task in result.metrics}
    unknown = [task for task in tasks if task not in answered]
    if not tasks:
        raise SettingError("{0} names no task", "tasks")
    if unknown:
        raise SettingError(f"{{0}}: no run here answered {_plain(', '.join(unknown))} (they "
                           f"answered {_plain(', '.join(sorted(answered)) or 'nothing')})",
                           "tasks")
    kept = []
    for result in results:
        if any(task in result.metrics for task in tasks):
            kept.append(result.for_tasks(tasks))
        else:
            skipped.append(f"{result.run_dir}: answered none of {', '.join(tasks)}")
    return kept


def _with_cards(results: list[Results], path: Path) -> list[Results]:
    """``results`` with each run's missing dates taken from its model's card in ``path``
    (``SettingError`` for a card file that cannot be read)."""
    from execbench.models.cards import CardError, read_cards, with_cards

    try:
        cards = read_cards(path)
    except CardError as exc:
        raise SettingError("{0}: " + _plain(str(exc)), "model_cards") from None
    if results and not any(result.model in cards for result in results):
        from execbench.text_safety import visible

        def listed(names: set[str]) -> str:
            return visible(", ".join(repr(name) for name in sorted(names)[:5]) or "none",
                           lines=False)

        raise SettingError("{0} " + _plain(
            f"{visible(str(path), lines=False)} has no card for any of the runs' models "
            f"({listed({r.model for r in results})}); its cards: {listed(set(cards))}"),
            "model_cards")
    dated = []
    for result in results:
        try:
            dates = with_cards(result.config.dates(), result.model, cards)
        except CardError as exc:
            raise SettingError("{0}: " + _plain(str(exc)), "model_cards") from None
        dated.append(replace(result, config=replace(
            result.config, model_release=dates.release, model_cutoff=dates.cutoff)))
    return dated


def _ks(given: Sequence[int] | None, results: list[Results]) -> list[int]:
    """The pass@k columns: those given, or every k up to the largest n."""
    from execbench.reports.tables import available_ks

    available = available_ks(results)
    if given is None:
        return available
    ks = sorted(set(given))
    if not ks or ks[0] < 1:
        raise SettingError(f"{{0}} takes numbers of at least 1, not {_plain(repr(list(given)))}",
                           "k")
    if ks[-1] > available[-1]:
        raise SettingError(f"{{0}} {ks[-1]}: no run drew that many samples (the most is "
                           f"n={available[-1]}), so pass@k is not defined", "k")
    return ks
