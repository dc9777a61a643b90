"""The ``execbench`` command: build, run, score, report, show, harvest, ls, doctor."""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from execbench import __version__
from execbench.models.base import GenerateConfig, ModelError, Unreachable
from execbench.sandbox.pool import Limits
from execbench.sources import FORMATS

if TYPE_CHECKING:
    from execbench.runner import RunConfig
    from execbench.tasks.base import Instance

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Build execution-reasoning benchmarks and evaluate models on them.")
# soft_wrap: a message piped to a log stays on one line instead of wrapping at 80 columns.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

MAX_SHOTS = 3
"""The most worked examples a prompt may show (CodeSense's abstract prompts use three)."""

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
    count: Annotated[int | None, typer.Option(
        help="With the source 'dsl': how many DSL-List programs to sample (default 100).")
    ] = None,
    mutate: Annotated[bool, typer.Option(
        help="Build every task on a single-site mutant of each program (unseen variants).")
    ] = False,
    buggy: Annotated[bool, typer.Option(
        help="Build every task on the known bug of each program (HumanEvalPack), with the "
             "test call that reveals it; programs without one are skipped.")] = False,
    task_option: Annotated[list[str], typer.Option(
        "--task-option", "-T", help="Task option key=value (repeatable); `execbench ls tasks` "
                                    "lists each task's keys and values.")] = [],  # noqa: B006
    workers: Annotated[int | None, typer.Option(help="Sandbox workers (default: CPUs).")] = None,
    cpu_seconds: Annotated[float, typer.Option(help="CPU-time limit per call.")] = 2.0,
    memory_mb: Annotated[int, typer.Option(help="Address-space limit per worker, MB.")] = 1024,
    overwrite: Annotated[bool, typer.Option(
        help="Replace a different suite (or a run) already in the --out folder.")] = False,
) -> None:
    """Trace programs from SOURCES and write a benchmark suite."""
    from execbench.sources import GENERATED
    from execbench.suite import BuildOptions, SuiteError, build_suite

    _at_least_one({"--limit": limit, "--max-calls": max_calls, "--count": count,
                   "--workers": workers})
    names = _task_list(tasks)
    if fmt is not None and fmt not in FORMATS:
        _fail(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if count is not None and not any(spec == GENERATED and not Path(spec).exists()
                                     for spec in sources):
        _fail(f"--count sets how many programs the {GENERATED} source samples, and no "
              f"source is {GENERATED}")
    replaces_run = _check_build_out(out_dir, overwrite)
    limits = Limits(cpu_seconds=cpu_seconds, wall_seconds=max(10.0, 5 * cpu_seconds),
                    memory_mb=memory_mb)
    options = BuildOptions(tasks=names, seed=seed, limit=limit, max_calls=max_calls, fmt=fmt,
                           plus_inputs=plus_inputs, mutate=mutate, buggy=buggy,
                           count=100 if count is None else count,
                           task_options=_pairs(task_option, "-T"),
                           limits=limits, workers=workers, overwrite=overwrite)
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
    if replaces_run:
        from execbench.runner import RESULTS, RUN_CONFIG, SAMPLES

        for name in (RUN_CONFIG, SAMPLES, RESULTS):
            (out_dir / name).unlink(missing_ok=True)
    if len(warnings) > 20:
        err.print(f"... and {len(warnings) - 20} more skipped records (see manifest.json)")
    out.print(_build_summary(manifest, out_dir), highlight=False, markup=False)


def _task_list(text: str, *, known_only: bool = True) -> list[str]:
    """The task names of a --tasks value; an empty list is refused, and so is a name no
    task has unless ``known_only`` is off (a run says which tasks its suite has instead)."""
    from execbench.tasks import task_names

    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        _fail(f"--tasks names no task; known tasks: {', '.join(task_names())}")
    if not known_only:
        return names
    unknown = [t for t in names if t not in task_names()]
    if unknown:
        _fail(f"unknown task {', '.join(unknown)}; known tasks: {', '.join(task_names())}")
    return names


def _check_build_out(out_dir: Path, overwrite: bool) -> bool:
    """Whether the suite replaces a run in ``out_dir``. A suite written into a run folder
    would sit beside samples of other instances: refused, or with --overwrite the run's
    files are removed once the suite is written. (A different suite in the folder is
    refused by the build itself, once the sources are read.)"""
    from execbench.runner import RUN_CONFIG

    if not (out_dir / RUN_CONFIG).is_file():
        return False
    if not overwrite:
        _fail(f"{out_dir} holds a run (it has {RUN_CONFIG}); add --overwrite to replace it "
              "with a suite, or choose another --out")
    return True


def _build_summary(manifest: dict, out_dir: Path) -> str:
    """What was built, in one unit per line: instances and the programs they come from per
    task, then what was traced, then what was skipped, by kind."""
    counts = manifest["counts"]
    lines = [f"{counts['instances']} instances -> {out_dir}"]
    for task, number in counts["by_task"].items():
        lines.append(f"  {task}: {number} instances from "
                     f"{counts['programs_by_task'][task]} programs")
    skipped = counts["skipped"]
    kinds = [f"{skipped[kind]} {kind}" for kind in ("records", "programs", "calls")
             if skipped[kind]]
    if skipped["instances"]:
        per_task = ", ".join(f"{task} {n}" for task, n in skipped["instances"].items())
        kinds.append(f"{sum(skipped['instances'].values())} instances ({per_task})")
    lines.append(f"traced {counts['calls']} calls of {counts['programs']} programs; skipped: "
                 f"{', '.join(kinds) or 'nothing'} (manifest.json lists each)")
    for name, stated in manifest.get("task_counts", {}).items():
        lines.append(f"{name}: " + ", ".join(f"{key} {value}" for key, value in stated.items()))
    return "\n".join(lines)


@app.command()
def run(
    suite: Annotated[Path, typer.Option(help="Suite folder made by `execbench build`.")],
    model: Annotated[str, typer.Option(
        help="provider/model, e.g. openai/gpt-4o, openai-api/vllm/Qwen/Qwen2.5-7B, hf/gpt2, "
             "anthropic/claude-sonnet-4-5, vllm/Qwen/Qwen2.5-7B (starts a vLLM server; "
             "sglang/... likewise), reference/oracle.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run folder (resumable).")],
    samples: Annotated[int, typer.Option("-n", help="Samples per instance.")] = 1,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature (default: the provider's; hf: greedy).")] = None,
    top_p: Annotated[float | None, typer.Option(
        help="Nucleus sampling: keep the smallest set of tokens with this total probability "
             "(default: the provider's).")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        help="Most tokens per response (default: the provider's; hf: 1024).")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Sampling seed; sample i is sent seed+i.")] = None,
    max_connections: Annotated[int, typer.Option(help="Concurrent requests.")] = 16,
    limit: Annotated[int | None, typer.Option(help="At most N instances per task.")] = None,
    tasks: Annotated[str | None, typer.Option(help="Only these tasks (comma-separated).")] = None,
    shots: Annotated[int, typer.Option(
        help="Worked examples in each prompt, 0 to 3 (the CodeSense tasks and abstract "
             "values take up to 3; other tasks show their one example for any N >= 1).")] = 0,
    model_base_url: Annotated[list[str], typer.Option(
        metavar="URL",
        help="Base URL of the model's server; several (repeated, or separated by commas) "
             "are replicas of one model: each request goes to the one with the fewest in "
             "flight, and one that keeps failing is left out for a while.")] = [],  # noqa: B006
    model_arg: Annotated[list[str], typer.Option(
        "--model-arg", "-M", metavar="KEY=VALUE",
        help="Repeatable: an extra request field for HTTP "
        "models, an engine flag for vllm/ and sglang/ (-M tensor_parallel_size=2), an option "
        "of hf/ and reference/ models; `execbench ls models` lists them.")] = [],  # noqa: B006
    max_retries: Annotated[int, typer.Option(help="Retries per failed request.")] = 5,
    timeout: Annotated[float | None, typer.Option(
        help="Seconds an attempt may wait for data (each read, or each gap between the events "
             "of a streamed reply). Default: 600 for reasoning models (o-series, gpt-5, "
             "-M reasoning_effort, -M thinking); else 120, more for a long reply that is not "
             "streamed (its max tokens at 128,000 an hour, up to 600).")] = None,
    sample_deadline: Annotated[float | None, typer.Option(
        help="Seconds one sample may take over all its attempts and back-off "
             "(default 3600); 0: no deadline.")] = 3600.0,
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
    dry_run: Annotated[bool, typer.Option(
        help="Send nothing and write nothing: show the first prompt of each task, the "
             "number of requests and an estimate of the input tokens.")] = False,
) -> None:
    """Evaluate MODEL on SUITE; re-run the same command to resume."""
    from execbench import runner

    _at_least_one({"-n": samples, "--limit": limit, "--max-connections": max_connections,
                   "--max-connection-failures": max_connection_failures})
    if shots not in range(MAX_SHOTS + 1):
        _fail(f"--shots must be 0 to {MAX_SHOTS}")
    if max_retries < 0 or retry_delay < 0 or (timeout is not None and timeout <= 0):
        _fail("--max-retries and --retry-delay must be >= 0 and --timeout > 0")
    if sample_deadline is not None and sample_deadline < 0:
        _fail("--sample-deadline must be >= 0 (0: no deadline)")
    if (price_input is None) != (price_output is None):
        _fail("--price-input and --price-output go together (a cost needs both)")
    if any(price is not None and price < 0 for price in (price_input, price_output)):
        _fail("--price-input and --price-output must be >= 0")
    if progress_every <= 0 or server_start_timeout <= 0:
        _fail("--progress-every and --server-start-timeout must be > 0")
    config = runner.RunConfig(
        suite=str(suite), model=model, n=samples, shots=shots, limit=limit,
        tasks=None if tasks is None else _task_list(tasks, known_only=False),
        base_url=",".join(model_base_url) or None, model_args=_pairs(model_arg, "-M"),
        retry_errors=retry_errors,
        price_input=price_input, price_output=price_output,
        generate=GenerateConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                seed=seed, max_connections=max_connections,
                                max_retries=max_retries, timeout=timeout,
                                sample_deadline=sample_deadline or None,
                                retry_base_delay=retry_delay,
                                server_start_timeout=server_start_timeout,
                                max_connection_failures=max_connection_failures))
    from execbench.suite import SuiteError

    if dry_run:
        try:
            work, total = runner.preview(config, out_dir)
        except (runner.RunError, SuiteError) as exc:
            _fail(str(exc))
        _print_dry_run(config, out_dir, work, total)
        return
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
            shown = [0.0]

            def note() -> str:
                said = f"{tally['correct'] / tally['done']:.1%} correct"
                return said + f", {tally['error']} errors" if tally["error"] else said

            def progress(record: dict) -> None:
                # Called for every sample, hundreds a second on a fast server: the bar and
                # its note are redrawn at most ten times a second, as the bar refreshes.
                tally["done"] += 1
                tally["correct"] += record["correct"]
                tally["error"] += record["verdict"] == "error"
                if terminal:
                    now = time.monotonic()
                    if now - shown[0] >= 0.1 or tally["done"] == len(work):
                        shown[0] = now
                        bar.update(job, completed=tally["done"], note=note())
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
    _print_results([results])
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

    def update(self, done: int, note: Callable[[], str]) -> None:
        """Print a line if it is time; ``note`` is made only then."""
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        left = f", about {(self.total - done) / rate:.0f} s left" if done < self.total else ""
        err.print(f"progress: {done}/{self.total} samples ({done / self.total:.0%}), {note()}, "
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


CHARS_PER_TOKEN = 4
"""The usual ratio of characters to tokens for English and code with BPE tokenizers; the
estimate needs no tokenizer, so a dry run works for any model."""


def _print_dry_run(config: RunConfig, out_dir: Path, work: list[tuple[Instance, int]],
                   total: int) -> None:
    """Requests per task with their estimated input tokens, then each task's first prompt."""
    from execbench.models import ModelError, get_model
    from execbench.tasks import get_task

    try:
        get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    except ModelError as exc:
        err.print(f"[yellow]warning:[/] the run would stop here: {escape(str(exc))}",
                  highlight=False)
    per_task: dict[str, list[int]] = {}
    firsts: dict[str, tuple[str, list]] = {}
    for instance, _ in work:
        messages = get_task(instance.task).prompt(instance, config.shots)
        chars = sum(len(message["content"]) for message in messages)
        per_task.setdefault(instance.task, []).append(chars)
        firsts.setdefault(instance.task, (instance.id, messages))
    say = [f"dry run: {len(work)} requests to {config.model} (n={config.n}); "
           f"{total - len(work)} of {total} already in {out_dir}; nothing sent or written"]
    tokens = 0
    for task, sizes in per_task.items():
        estimate = sum(sizes) // CHARS_PER_TOKEN
        tokens += estimate
        say.append(f"  {task}: {len(sizes)} requests, about {estimate:,} input tokens")
    say.append(f"about {tokens:,} input tokens in all (characters / {CHARS_PER_TOKEN}; "
               "responses not counted)")
    for task, (instance_id, messages) in firsts.items():
        say.append(f"\n--- first {task} prompt: {instance_id} ---")
        say += [f"[{message['role']}]\n{message['content']}" for message in messages]
    out.print("\n".join(say), highlight=False, markup=False)


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    task: Annotated[str | None, typer.Option(help="Only this task's samples.")] = None,
    verdict: Annotated[str | None, typer.Option(
        help="Only samples with this verdict (correct, incorrect, unparsable, error, ...).")
    ] = None,
    source: Annotated[str | None, typer.Option(help="Only this source's samples.")] = None,
    instance: Annotated[str | None, typer.Option(
        help="Only this instance, or the instances whose id starts so.")] = None,
    limit: Annotated[int, typer.Option(help="At most N samples.")] = 10,
    fmt: Annotated[str, typer.Option("--format", help="text or json (one document).")
                   ] = "text",
) -> None:
    """Show logged samples: the prompt (rendered again from the suite), the raw response,
    the extracted answer, the truth and the verdict."""
    from execbench.report.samples import Filter, load_samples
    from execbench.runner import RunError

    _at_least_one({"--limit": limit})
    if fmt not in ("text", "json"):
        _fail(f"unknown format {fmt!r}; choose text or json")
    try:
        shown = load_samples(run_dir, Filter(task, verdict, source, instance), limit)
    except RunError as exc:
        _fail(str(exc))
    for warning in shown.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    if not shown.samples:
        _fail(f"no sample in {run_dir} matches")
    if fmt == "json":
        sys.stdout.write(json.dumps({"model": shown.model, "samples": shown.samples},
                                    indent=2, ensure_ascii=False) + "\n")
        return
    for record in shown.samples:
        say = [f"=== {record['instance_id']} sample {record['sample']}: {record['verdict']} "
               f"({shown.model}) ===",
               f"answer: {record['answer']}", f"truth: {record['truth']}"]
        if record["detail"]:
            say.append(f"detail: {record['detail']}")
        if record["prompt"] is None:
            say.append("--- prompt: not in the suite ---")
        else:
            note = " (differs from the one sent)" if record["prompt_changed"] else ""
            say.append(f"--- prompt{note} ---")
            say += [f"[{message['role']}]\n{message['content']}" for message in record["prompt"]]
        say.append("--- response ---")
        say.append(record["response"] if record["response"] is not None
                   else f"(none: {record['error']})")
        out.print("\n".join(say) + "\n", highlight=False, markup=False)


@app.command()
def score(run_dir: Annotated[Path, typer.Argument(help="Run folder.")]) -> None:
    """Re-extract and re-score the logged responses of RUN_DIR."""
    from execbench import runner
    from execbench.suite import SuiteError

    try:
        results = runner.rescore(run_dir)
    except (runner.RunError, SuiteError) as exc:
        _fail(str(exc))
    _print_results([results])


def _layouts() -> dict:
    from execbench.report.layouts import layouts

    return layouts()


def _load_results(run_dirs: list[Path]) -> list[dict]:
    """Each run's results.json; a folder without one is skipped with a warning, and no
    run at all is an error."""
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
    return results


def _ks(text: str | None, results: list[dict]) -> list[int]:
    """The pass@k columns: those ``--k`` names, or every k up to the largest n."""
    from execbench.report.tables import available_ks

    available = available_ks(results)
    if text is None:
        return available
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        _fail(f"--k takes comma-separated whole numbers, not {text!r}")
    if not ks or ks[0] < 1:
        _fail(f"--k takes numbers of at least 1, not {text!r}")
    if ks[-1] > available[-1]:
        _fail(f"--k {ks[-1]}: no run drew that many samples (the most is n={available[-1]}), "
              "so pass@k is not defined")
    return ks


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders to compare.")],
    fmt: Annotated[str, typer.Option(
        "--format", help="text (fits the terminal), markdown, csv (one table) or json (one "
                         "document).")] = "text",
    by_source: Annotated[bool, typer.Option(
        help="One row per source (the default layout).")] = False,
    verdicts: Annotated[bool, typer.Option(help="Also show verdict counts.")] = False,
    layout: Annotated[str, typer.Option(
        help="; ".join(f"{name}: {layout.description}"
                       for name, layout in _layouts().items()) + ".")] = "default",
    k: Annotated[str | None, typer.Option(
        "--k", help="pass@k columns, comma-separated (default: every k up to the largest n).")
    ] = None,
    plot: Annotated[Path | None, typer.Option(
        help="With a layout that has a figure (generalization): also write it as a PNG "
             "(needs the plot extra).")] = None,
    html: Annotated[Path | None, typer.Option(
        help="Also write one self-contained HTML page: leaderboard, every layout present "
             "with its figures (the plot extra), verdicts and failures, and a sample browser.")
    ] = None,
) -> None:
    """Compare runs: a layout's tables on stdout (and, with --html, a page to open)."""
    import shutil

    from execbench.report.layouts import View
    from execbench.report.tables import FORMATS as TABLE_FORMATS
    from execbench.report.tables import render, verdict_table

    if fmt not in TABLE_FORMATS:
        _fail(f"unknown format {fmt!r}; choose one of {', '.join(TABLE_FORMATS)}")
    chosen = _layouts().get(layout)
    if chosen is None:
        _fail(f"unknown layout {layout!r}; choose one of {', '.join(_layouts())}")
    if plot is not None and chosen.figure is None:
        with_figure = [name for name, item in _layouts().items() if item.figure is not None]
        _fail(f"--plot needs a layout that has a figure (--layout {' or '.join(with_figure)}); "
              f"the {layout} layout has none")
    if by_source and not chosen.by_source:
        _fail(f"--by-source concerns the default layout; the {layout} layout has its own rows")
    results = _load_results(run_dirs)
    tables = chosen.sections(results, View(ks=_ks(k, results), by_source=by_source))
    if verdicts:
        tables.append(verdict_table(results))
    sys.stdout.write(render(tables, fmt, width=shutil.get_terminal_size().columns))
    if plot is not None and chosen.figure is not None:
        try:
            image = chosen.figure(results)
        except RuntimeError as exc:
            _fail(str(exc))
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(image)
        err.print(f"plot written to {plot}", highlight=False)
    if html is not None:
        _write_html(html, run_dirs, results)


def _write_html(path: Path, run_dirs: list[Path], results: list[dict]) -> None:
    from execbench.report.html import render_html
    from execbench.runner import RunError

    folders = [folder for folder in run_dirs if (folder / "results.json").is_file()]
    try:
        page, warnings = render_html(folders, results)
    except RunError as exc:  # results.json without the run's settings or samples
        _fail(str(exc))
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    err.print(f"HTML report written to {path}", highlight=False)


def _print_results(results: list[dict]) -> None:
    """The default table of one run, after ``run`` and ``score``."""
    import shutil

    from execbench.report.tables import available_ks, comparison_table, render

    table = comparison_table(results, available_ks(results))
    sys.stdout.write(render([table], "text", width=shutil.get_terminal_size().columns))


@app.command()
def harvest(
    project: Annotated[Path, typer.Argument(help="The project folder (its pytest suite runs).")],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    python: Annotated[str, typer.Option(
        help="Interpreter that runs the tests (it needs pytest and the project's "
             "dependencies); default: this one.")] = sys.executable,
    pytest_args: Annotated[str, typer.Option(
        help="Arguments for pytest, as one shell-quoted string (e.g. '-k parse -x').")] = "",
    seed: Annotated[int, typer.Option(help="Seed of the calls sampled per function.")] = 0,
    max_calls: Annotated[int, typer.Option(help="Calls kept per function.")] = 5,
    max_events: Annotated[int, typer.Option(
        help="Line events per call; longer calls are dropped.")] = 1_000,
    max_value_nodes: Annotated[int, typer.Option(help="Nodes per recorded value.")] = 100,
    max_lines: Annotated[int, typer.Option(
        help="Lines of a function's source; longer functions are dropped.")] = 200,
    timeout: Annotated[float, typer.Option(
        help="Seconds for the whole test run; what was recorded by then is kept.")] = 600.0,
    progress_every: Annotated[float, typer.Option(
        help="Seconds between progress lines when stderr is not a terminal.")] = 10.0,
) -> None:
    """Run PROJECT's pytest suite, recording calls of its functions, and write them as a
    generic JSONL source (recorded traces) for `execbench build`."""
    import shlex

    from execbench.sources.harvest import NEVER_CALLED, HarvestError, HarvestOptions
    from execbench.sources.harvest import harvest as run_harvest

    _at_least_one({"--max-calls": max_calls, "--max-events": max_events,
                   "--max-value-nodes": max_value_nodes, "--max-lines": max_lines})
    if timeout <= 0:
        _fail(f"--timeout must be positive, not {timeout}")
    try:
        extra = tuple(shlex.split(pytest_args))
    except ValueError as exc:
        _fail(f"--pytest-args: {exc}")
    options = HarvestOptions(python=python, pytest_args=extra, seed=seed, max_calls=max_calls,
                             max_events=max_events, max_value_nodes=max_value_nodes,
                             max_lines=max_lines, timeout=timeout)
    last = [time.monotonic()]

    def warn(message: str) -> None:
        err.print(f"[yellow]skipped[/] {escape(message)}", highlight=False)

    with _progress() as bar:
        job = bar.add_task("tests", total=None, note="")

        def progress(status: dict) -> None:
            note = (f"{status['calls']} calls of {status['functions']} functions recorded, "
                    f"{status['seconds']:.0f} s")
            if err.is_terminal:
                bar.update(job, completed=status["tests"], total=status["total"] or None,
                           note=note)
            elif time.monotonic() - last[0] >= progress_every:
                last[0] = time.monotonic()
                err.print(f"progress: {status['tests']}/{status['total']} tests, {note}",
                          highlight=False)

        try:
            result = run_harvest(project, out_file, options, progress=progress, warn=warn)
        except HarvestError as exc:
            _fail(str(exc))
    done, total = result.tests
    exit_note = "stopped at --timeout" if result.timed_out else (
        f"pytest exit status {result.pytest_exit}" if result.pytest_exit is not None
        else "the test run ended early")
    say = [f"tests: {done} of {total} finished ({exit_note}); network: {result.network}"]
    never = result.functions[NEVER_CALLED]
    for what, counts in (("functions", result.functions), ("calls", result.calls)):
        dropped = {k: v for k, v in counts.items() if k not in ("kept", NEVER_CALLED)}
        said = f"{what}: {counts['kept']} kept, {sum(dropped.values()):,} dropped"
        say.append(said + (f", {never} never called by the tests" if what == "functions" else ""))
        say += [f"  {n:>11,}  {reason}" for reason, n in
                sorted(dropped.items(), key=lambda item: (-item[1], item[0]))]
    say.append(f"records refused: {sum(result.refused.values()):,}")
    say += [f"  {n:>11,}  {reason}" for reason, n in result.refused.most_common()]
    out.print("\n".join(say), highlight=False, markup=False)
    for warning in result.jail_warnings:
        err.print(f"[yellow]warning[/] {escape(warning)}", highlight=False)
    if result.pytest_exit is None and not result.timed_out:
        err.print("the test run ended early; the end of its output:\n" + result.log[-2000:],
                  highlight=False, markup=False)
    err.print(f"wrote {result.functions['kept']} functions to {out_file}", highlight=False)


@app.command("ls")
def list_things(what: Annotated[str, typer.Argument(
        help="tasks, formats, models, or a suite folder.")] = "tasks") -> None:
    """List the tasks (with their -T options), source formats, model kinds (with their
    environment variables and -M keys), or what a suite holds."""
    if what == "tasks":
        from execbench.tasks import get_task, task_names

        for name in task_names():
            task = get_task(name)
            runs = " (runs model-written code, in the sandbox)" if task.runs_model_code else ""
            out.print(f"{name:18} {task.description} [{task.family}]{runs}", highlight=False,
                      markup=False)
            for option in task.options:
                out.print(f"{'':16}   -T {option.name}={option.accepted}: "
                          f"{option.help} (default {option.choices[0]})", highlight=False,
                          markup=False)
    elif what == "formats":
        from execbench.sources import DESCRIPTIONS

        for name, description in DESCRIPTIONS.items():
            out.print(f"{name:10} {description}", highlight=False, markup=False)
    elif what == "models":
        from execbench.models import MODEL_KINDS

        for kind in MODEL_KINDS:
            out.print(f"{kind.name:26} {kind.description}", highlight=False, markup=False)
            if kind.env:
                out.print(f"{'':26}   environment: {kind.env}", highlight=False, markup=False)
            if kind.model_args:
                out.print(f"{'':26}   -M {kind.model_args}", highlight=False, markup=False)
            for setting, value in kind.sampling:
                out.print(f"{'':26}   unset {setting}: {value}", highlight=False, markup=False)
    elif Path(what).is_dir():
        _list_suite(Path(what))
    else:
        _fail(f"ls takes tasks, formats, models or a suite folder, not {what!r}")


def _list_suite(folder: Path) -> None:
    """What a suite holds: where it came from, with which options, and per task how many
    instances, from how many programs and sources, with the first ids."""
    from execbench.suite import SuiteError, load_suite

    try:
        manifest, instances, sha = load_suite(folder)
    except SuiteError as exc:
        _fail(str(exc))
    say = [f"suite {folder}: {len(instances)} instances, sha256 {sha[:16]}, built by "
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
        mine = [inst for inst in instances if inst.task == task]
        programs = len({inst.program_id for inst in mine})
        sources = ", ".join(sorted({inst.source for inst in mine})) or "none"
        first = ", ".join(inst.id for inst in mine[:3])
        say.append(f"  {task}: {len(mine)} instances from {programs} programs (sources: "
                   f"{sources}){'; first: ' + first if first else ''}")
    say.append(f"  skipped: {len(manifest['skipped'])} entries (listed in manifest.json)")
    out.print("\n".join(say), highlight=False, markup=False)


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
    from execbench.sandbox.harvest_jail import layers as harvest_layers

    jail = harvest_layers()
    out.print(f"harvest confinement: {sum(s.startswith('on') for s in jail.values())} of "
              f"{len(jail)} layers on", highlight=False)
    for name, state in jail.items():
        out.print(f"  {name:12} {state}", highlight=False)
    if on < len(layers):
        out.print("Layers that are off are warned about once per run; see the README's "
                  "'The sandbox' for what each one guards.", highlight=False)
