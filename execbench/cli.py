"""The ``execbench`` command: build, run, score, report, ls, doctor."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from execbench import __version__
from execbench.models.base import GenerateConfig, ModelError, Unreachable
from execbench.sandbox.pool import Limits
from execbench.sources import FORMATS

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Build execution-reasoning benchmarks and evaluate models on them.")
# soft_wrap: a message piped to a log stays on one line instead of wrapping at 80 columns.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

UNREACHABLE = 3
"""Exit status of a run that stopped because no model server answers: apart from bad input
(2) and failed requests (1), so that a batch job can wait for the server and resume."""


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _at_least_one(counts: dict[str, int | None]) -> None:
    """Refuse a count option below 1 (None: not given). Left through, 0 or a negative value
    does something no one asks for: an empty suite or run, a slice that drops the last
    programs (``[:-1]``), a traceback, or a pool of no connections or workers that hangs."""
    for flag, value in counts.items():
        if value is not None and value < 1:
            _fail(f"{flag} must be at least 1, not {value}")


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"{flag} expects key=value, got {item!r}")
        result[key.strip()] = value
    return result


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[note]}"), TimeRemainingColumn(), console=err,
                    transient=False, disable=not err.is_terminal)


@app.callback(invoke_without_command=True)
def _main(version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False
          ) -> None:
    if version:
        out.print(f"execbench {__version__}")
        raise typer.Exit()


@app.command()
def build(
    sources: Annotated[list[str], typer.Argument(
        help="JSONL files (.jsonl/.jsonl.gz), folders of .py files, 'humaneval' (the "
             "packaged HumanEval) or 'dsl' (sampled DSL-List programs).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the suite to.")],
    tasks: Annotated[str, typer.Option(help="Comma-separated task names.")] = "output,input",
    seed: Annotated[int, typer.Option(help="Seed for every random choice.")] = 0,
    limit: Annotated[int | None, typer.Option(help="Use only the first N programs.")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", help=f"Source format, detected if omitted: {', '.join(FORMATS)}.")] = None,
    max_calls: Annotated[int | None, typer.Option(
        help="At most K calls per program, chosen with the seed.")] = None,
    plus_inputs: Annotated[bool, typer.Option(
        help="Also use EvalPlus's generated plus_input calls.")] = False,
    count: Annotated[int, typer.Option(
        help="With the source 'dsl': how many DSL-List programs to sample.")] = 100,
    mutate: Annotated[bool, typer.Option(
        help="Build every task on a single-site mutant of each program (unseen variants).")
    ] = False,
    buggy: Annotated[bool, typer.Option(
        help="Build every task on the known bug of each program (HumanEvalPack), with the "
             "test call that reveals it; programs without one are skipped.")] = False,
    task_option: Annotated[list[str], typer.Option(
        "--task-option", "-T", help="Task option key=value (repeatable).")] = [],  # noqa: B006
    workers: Annotated[int | None, typer.Option(help="Sandbox workers (default: CPUs).")] = None,
    cpu_seconds: Annotated[float, typer.Option(help="CPU-time limit per call.")] = 2.0,
    memory_mb: Annotated[int, typer.Option(help="Address-space limit per worker, MB.")] = 1024,
) -> None:
    """Trace programs from SOURCES and write a benchmark suite."""
    from execbench.suite import BuildOptions, SuiteError, build_suite
    from execbench.tasks import task_names

    _at_least_one({"--limit": limit, "--max-calls": max_calls, "--count": count,
                   "--workers": workers})
    names = [t.strip() for t in tasks.split(",") if t.strip()]
    unknown = [t for t in names if t not in task_names()]
    if unknown:
        _fail(f"unknown task {', '.join(unknown)}; known tasks: {', '.join(task_names())}")
    if fmt is not None and fmt not in FORMATS:
        _fail(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    limits = Limits(cpu_seconds=cpu_seconds, wall_seconds=max(10.0, 5 * cpu_seconds),
                    memory_mb=memory_mb)
    options = BuildOptions(tasks=names, seed=seed, limit=limit, max_calls=max_calls, fmt=fmt,
                           plus_inputs=plus_inputs, mutate=mutate, buggy=buggy, count=count,
                           task_options=_pairs(task_option, "-T"),
                           limits=limits, workers=workers)
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        if len(warnings) <= 20:
            err.print(f"[yellow]skipped[/] {escape(message)}", highlight=False)

    with _progress() as bar:
        job = bar.add_task("tracing", total=None, note="")
        try:
            manifest = build_suite(sources, out_dir, options, warn=warn,
                                   progress=lambda done, total: bar.update(job, completed=done,
                                                                           total=total))
        except SuiteError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            err.print(f"interrupted; nothing was written to {out_dir}")
            raise typer.Exit(130) from None
    if len(warnings) > 20:
        err.print(f"... and {len(warnings) - 20} more skipped records (see manifest.json)")
    counts = manifest["counts"]
    by_task = ", ".join(f"{k}: {v}" for k, v in counts["by_task"].items())
    out.print(f"{counts['instances']} instances ({by_task}) from {counts['programs']} programs "
              f"and {counts['calls']} calls; {counts['skipped']} skipped -> {out_dir}",
              highlight=False)


@app.command()
def run(
    suite: Annotated[Path, typer.Option(help="Suite folder made by `execbench build`.")],
    model: Annotated[str, typer.Option(
        help="provider/model, e.g. openai/gpt-4o, openai-api/vllm/Qwen/Qwen2.5-7B, hf/gpt2, "
             "anthropic/claude-sonnet-4-5, vllm/Qwen/Qwen2.5-7B (starts a vLLM server; "
             "sglang/... likewise), reference/oracle.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumable).")],
    samples: Annotated[int, typer.Option("-n", help="Samples per instance.")] = 1,
    temperature: Annotated[float | None, typer.Option()] = None,
    top_p: Annotated[float | None, typer.Option()] = None,
    max_tokens: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int | None, typer.Option(
        help="Sampling seed; sample i is sent seed+i.")] = None,
    max_connections: Annotated[int, typer.Option(help="Concurrent requests.")] = 16,
    limit: Annotated[int | None, typer.Option(help="At most N instances per task.")] = None,
    tasks: Annotated[str | None, typer.Option(help="Only these tasks (comma-separated).")] = None,
    shots: Annotated[int, typer.Option(help="0 (zero-shot) or 1 (one worked example).")] = 0,
    model_base_url: Annotated[list[str], typer.Option(
        metavar="URL",
        help="Base URL of the model's server; several (repeated, or separated by commas) "
             "are replicas of one model: each request goes to the one with the fewest in "
             "flight, and one that keeps failing is left out for a while.")] = [],  # noqa: B006
    model_arg: Annotated[list[str], typer.Option(
        "--model-arg", "-M", metavar="KEY=VALUE",
        help="Repeatable: an extra request field for HTTP "
        "models, an engine flag for vllm/ and sglang/ (-M tensor_parallel_size=2), an option "
        "of hf/ and reference/ models.")] = [],  # noqa: B006
    max_retries: Annotated[int, typer.Option(help="Retries per failed request.")] = 5,
    timeout: Annotated[float, typer.Option(help="Seconds per request attempt.")] = 120.0,
    retry_delay: Annotated[float, typer.Option(
        help="First back-off in seconds before a retry; doubles each time, up to 60.")] = 1.0,
    retry_errors: Annotated[bool, typer.Option(
        help="On resume, ask again for samples whose request failed.")] = False,
    max_connection_failures: Annotated[int, typer.Option(
        help="Stop the run (exit 3) after this many requests in a row could not connect to "
             "any server; the same command resumes it.")] = 5,
    price_input: Annotated[float | None, typer.Option(
        help="Price per million input tokens, for the cost estimate (with --price-output).")
    ] = None,
    price_output: Annotated[float | None, typer.Option(
        help="Price per million output tokens, for the cost estimate.")] = None,
    server_start_timeout: Annotated[float, typer.Option(
        help="Seconds a server the run starts (vllm/, sglang/) has to become healthy.")
    ] = 900.0,
    progress_every: Annotated[float, typer.Option(
        help="Seconds between one-line progress updates when stderr is not a terminal "
             "(a batch job's log); a terminal gets a progress bar.")] = 30.0,
) -> None:
    """Evaluate MODEL on SUITE; re-run the same command to resume."""
    from execbench import runner

    _at_least_one({"-n": samples, "--limit": limit, "--max-connections": max_connections,
                   "--max-connection-failures": max_connection_failures})
    if shots not in (0, 1):
        _fail("--shots must be 0 or 1")
    if max_retries < 0 or retry_delay < 0 or timeout <= 0:
        _fail("--max-retries and --retry-delay must be >= 0 and --timeout > 0")
    if (price_input is None) != (price_output is None):
        _fail("--price-input and --price-output go together (a cost needs both)")
    if any(price is not None and price < 0 for price in (price_input, price_output)):
        _fail("--price-input and --price-output must be >= 0")
    if progress_every <= 0 or server_start_timeout <= 0:
        _fail("--progress-every and --server-start-timeout must be > 0")
    config = runner.RunConfig(
        suite=str(suite), model=model, n=samples, shots=shots, limit=limit,
        tasks=[t.strip() for t in tasks.split(",")] if tasks else None,
        base_url=",".join(model_base_url) or None, model_args=_pairs(model_arg, "-M"),
        retry_errors=retry_errors,
        price_input=price_input, price_output=price_output,
        generate=GenerateConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                seed=seed, max_connections=max_connections,
                                max_retries=max_retries, timeout=timeout,
                                retry_base_delay=retry_delay,
                                server_start_timeout=server_start_timeout,
                                max_connection_failures=max_connection_failures))
    from execbench.suite import SuiteError

    # A batch system ends a job with SIGTERM: stop as on Ctrl-C, so the samples are flushed,
    # the session recorded and a server the run started is stopped with it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        work, total = runner.plan(config, out_dir)
        if len(work) < total:
            err.print(f"resuming: {total - len(work)} of {total} samples already in {out_dir}")
        with _progress() as bar:
            job = bar.add_task(model, total=len(work), note="")
            lines = _ProgressLines(len(work), progress_every)
            tally = {"correct": 0, "error": 0, "done": 0}
            terminal = err.is_terminal  # asked once: the question is a system call

            def progress(record: dict) -> None:
                tally["done"] += 1
                tally["correct"] += record["correct"]
                tally["error"] += record["verdict"] == "error"
                note = f"{tally['correct'] / tally['done']:.1%} correct"
                if tally["error"]:
                    note += f", {tally['error']} errors"
                if terminal:
                    bar.update(job, advance=1, note=note)
                else:
                    lines.update(tally["done"], note)

            results = runner.run(config, out_dir, progress=progress, work=work)
    except Unreachable as exc:
        _fail(str(exc), UNREACHABLE)
    except (runner.RunError, SuiteError, ModelError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print(f"interrupted; run the same command again to resume from {out_dir}")
        raise typer.Exit(130) from None
    _print_results([results], by_source=False)
    _print_usage(results)
    err.print(f"samples in {out_dir / runner.SAMPLES}, results in {out_dir / runner.RESULTS}, "
              f"settings and sessions in {out_dir / runner.RUN_CONFIG}", highlight=False)
    errors = results["counts"]["verdicts"].get("error", 0)
    if errors:
        err.print(f"[yellow]{errors} requests failed[/] (verdict 'error'; "
                  "--retry-errors asks again on the next run)")
    if errors and errors == results["counts"]["samples"]:
        raise typer.Exit(1)  # nothing was answered: let scripts and CI notice


class _ProgressLines:
    """Progress as a line every ``every`` seconds, for logs a progress bar would fill with
    control characters (batch jobs, Slurm); the last sample always gets its line."""

    def __init__(self, total: int, every: float) -> None:
        self.total = total
        self.every = every
        self.start = self.last = time.monotonic()

    def update(self, done: int, note: str) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        left = f", about {(self.total - done) / rate:.0f} s left" if done < self.total else ""
        err.print(f"progress: {done}/{self.total} samples ({done / self.total:.0%}), {note}, "
                  f"{rate:.1f} samples/s{left}", highlight=False)


def _print_usage(results: dict) -> None:
    """What the run cost, on stderr: requests, tokens, latency, wall time, cost."""
    usage = results["usage"]
    said = (f"usage: {usage['requests']:,} requests ({usage['retries']:,} retries), "
            f"{usage['input_tokens']:,} input and {usage['output_tokens']:,} output tokens")
    latency = usage["latency_seconds"]
    if latency is not None:
        said += (f"; latency p50 {latency['p50']:.3g} s, p90 {latency['p90']:.3g} s, "
                 f"p99 {latency['p99']:.3g} s")
    said += f"; wall {usage['wall_seconds']:.1f} s"
    if "cost" in usage:
        said += f"; cost {usage['cost']['total']:.4g} at the prices given"
    counts = results["counts"]
    if counts["truncated"] or counts["refused"]:
        said += (f"; {counts['truncated']} answers cut off at the token limit, "
                 f"{counts['refused']} refused or filtered")
    err.print(said, highlight=False)


@app.command()
def score(run_dir: Annotated[Path, typer.Argument(help="Run folder.")]) -> None:
    """Re-extract and re-score the logged responses of RUN_DIR."""
    from execbench import runner
    from execbench.suite import SuiteError

    try:
        results = runner.rescore(run_dir)
    except (runner.RunError, SuiteError) as exc:
        _fail(str(exc))
    _print_results([results], by_source=False)


def _layouts() -> dict:
    from execbench.report.layouts import layouts

    return layouts()


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders to compare.")],
    fmt: Annotated[str, typer.Option("--format", help="text, markdown, csv or json.")] = "text",
    by_source: Annotated[bool, typer.Option(help="One row per source.")] = False,
    verdicts: Annotated[bool, typer.Option(help="Also show verdict counts.")] = False,
    layout: Annotated[str, typer.Option(
        help="default (pass@k per task), or a layout: "
             + "; ".join(f"{name} ({layout.description})"
                         for name, layout in _layouts().items()) + ".")] = "default",
    plot: Annotated[Path | None, typer.Option(
        help="With a layout that has a figure (generalization): also write it as a PNG "
             "(needs the plot extra).")] = None,
) -> None:
    """Compare runs in one table."""
    from execbench.report.tables import FORMATS as TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        _fail(f"unknown format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    results = []
    for folder in run_dirs:
        path = folder / "results.json"
        if not folder.is_dir():
            err.print(f"[yellow]skipped[/] {escape(str(folder))}: no such folder", highlight=False)
            continue
        if not path.exists():
            err.print(f"[yellow]skipped[/] {escape(str(folder))}: no results.json "
                      "(run `execbench score` on it)", highlight=False)
            continue
        results.append(json.loads(path.read_text(encoding="utf-8")))
    if not results:
        _fail("no run with results to report")
    if layout == "default":
        if plot is not None:
            _fail("--plot needs a layout that has a figure (--layout generalization)")
        _print_results(results, by_source=by_source, fmt=fmt, verdicts=verdicts)
        return
    chosen = _layouts().get(layout)
    if chosen is None:
        _fail(f"unknown layout {layout!r}; choose default, {', '.join(_layouts())}")
    if plot is not None and chosen.plot is None:
        _fail(f"the {layout} layout has no figure to --plot")
    _print_sections(chosen.sections(results), fmt)
    if plot is not None:
        try:
            err.print(f"plot written to {chosen.plot(results, plot)}")
        except RuntimeError as exc:
            _fail(str(exc))


def _print_sections(sections: list[tuple[str, tuple[list[str], list[list[str]]]]],
                    fmt: str) -> None:
    from execbench.report.tables import render_table

    for title, (headers, rows) in sections:
        if fmt in ("text", "markdown"):
            sys.stdout.write(f"\n{title}\n\n" if fmt == "text" else f"\n### {title}\n\n")
        sys.stdout.write(render_table(headers, rows, fmt))


def _print_results(results: list[dict], *, by_source: bool, fmt: str = "text",
                   verdicts: bool = False) -> None:
    from execbench.report.tables import comparison_rows, render_table, verdict_rows

    headers, rows = comparison_rows(results, by_source=by_source)
    sys.stdout.write(render_table(headers, rows, fmt))
    if verdicts:
        headers, rows = verdict_rows(results)
        sys.stdout.write(render_table(headers, rows, fmt))


@app.command("ls")
def list_things(what: Annotated[str, typer.Argument(help="tasks, formats or models.")] = "tasks"
                ) -> None:
    """List the available tasks, source formats or model providers."""
    if what == "tasks":
        from execbench.tasks import get_task, task_names

        for name in task_names():
            task = get_task(name)
            runs = " (runs model-written code, in the sandbox)" if task.runs_model_code else ""
            out.print(f"{name:18} {task.description} [{task.family}]{runs}", highlight=False,
                      markup=False)
    elif what == "formats":
        for name in FORMATS:
            out.print(name)
    elif what == "models":
        from execbench.models import PROVIDERS

        for name in PROVIDERS:
            out.print(name)
    else:
        _fail("ls takes tasks, formats or models")


@app.command()
def doctor() -> None:
    """Start a sandbox worker and say which confinement layers are on here, and why not."""
    from execbench.sandbox.pool import Job, Sandbox

    with Sandbox(workers=1) as sandbox:
        trace = sandbox.run(Job("def f():\n    return 1\n", "f", ""))
        layers = sandbox.layers
    if trace.status != "ok":
        _fail(f"the sandbox could not run a trivial program: {trace.status} {trace.detail}", 1)
    on = sum(state.startswith("on") for state in layers.values())
    out.print(f"sandbox: {on} of {len(layers)} confinement layers on", highlight=False)
    for name, state in layers.items():
        out.print(f"  {name:12} {state}", highlight=False)
    if on < len(layers):
        out.print("Layers that are off are warned about once per run; see the README's "
                  "'The sandbox' for what each one guards.", highlight=False)
