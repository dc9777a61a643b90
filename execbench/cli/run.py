"""``execbench run``: evaluate a model on a suite, resumably."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from execbench.cli.app import (
    err,
    fail,
    fail_setting,
    flag,
    out,
    pairs,
    print_results,
    warn,
)
from execbench.cli.progress import Progress, ProgressEvery, check_every

if TYPE_CHECKING:
    from collections.abc import Iterable

    from execbench.rundir import RunConfig, Sample
    from execbench.tasks.asking import DrawnExamples
    from execbench.tasks.base import Instance
    from execbench.tasks.protocol import Protocol

UNREACHABLE = 3
"""Exit status of a run that stopped because no model server answers: apart from bad input
(2) and failed requests (1), so that a batch job can wait for the server and resume."""

FLAGS = {"n": "-n", "limit": "--limit", "shots": "--shots",
         "max_connections": "--max-connections", "top_p": "--top-p",
         "max_connection_failures": "--max-connection-failures",
         "max_retries": "--max-retries", "retry_base_delay": "--retry-delay",
         "timeout": "--timeout", "sample_deadline": "--sample-deadline",
         "server_start_timeout": "--server-start-timeout",
         "price_input": "--price-input", "price_output": "--price-output",
         "tasks": "--tasks", "temperature": "--temperature", "prompt": "--prompt",
         "shot_pick": "--shot-pick", "templates": "--template",
         "model_release": "--model-release", "model_cutoff": "--model-cutoff"}
"""The flag of each setting ``api.checked_run`` checks, for its messages."""

CHARS_PER_TOKEN = 4
"""The usual ratio of characters to tokens for English and code with BPE tokenizers; the
estimate needs no tokenizer, so a dry run works for any model."""

# The options, apart from the command so that it reads as what it does.
Suite = Annotated[Path, typer.Option(help="Suite folder made by `execbench build`.")]
ModelName = Annotated[str, typer.Option(
    help="provider/model, e.g. openai/gpt-4o, openai-api/vllm/Qwen/Qwen2.5-7B, hf/gpt2, "
         "anthropic/claude-sonnet-4-5, vllm/Qwen/Qwen2.5-7B (starts a vLLM server; "
         "sglang/... likewise), reference/oracle.")]
OutDir = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Run folder (resumable; default: runs/MODEL_SUITE_TIME, printed).")]
Samples = Annotated[int, typer.Option("-n", "--num-samples", help="Samples per instance.")]
Temperature = Annotated[float | None, typer.Option(
    help="Sampling temperature (default: 0 with -n 1; required with -n above 1, e.g. 0.2 "
         "for pass@1, 0.8 for pass@5).")]
TopP = Annotated[float | None, typer.Option(
    help="Nucleus sampling: keep the smallest set of tokens with this total probability "
         "(default: the provider's).")]
MaxTokens = Annotated[int | None, typer.Option(
    help="Most tokens per response (default: the provider's; hf: 1024).")]
Seed = Annotated[int | None, typer.Option(help="Sampling seed; sample i is sent seed+i.")]
MaxConnections = Annotated[int, typer.Option(help="Concurrent requests.")]
Limit = Annotated[int | None, typer.Option(help="At most N instances per task.")]
Tasks = Annotated[str | None, typer.Option(help="Only these tasks (comma-separated).")]
Shots = Annotated[int, typer.Option(
    help="Worked examples in each prompt, 0 to 3 (with --shot-pick fixed, the CodeSense "
         "tasks and abstract values take up to 3, other tasks show their own one for any "
         "N >= 1; drawn from the suite, N each).")]
PromptStyle = Annotated[str, typer.Option(
    "--prompt", help="Prompt style: shipped (each task's own prompt), reasoning (work the "
                     "run out first, then answer) or direct (the answer alone).")]
ShotPick = Annotated[str, typer.Option(
    help="Which worked examples --shots shows: fixed (the task's own), or drawn from the "
         "suite: random, same-kind (the same statement kind or construct category), "
         "same-function (another question on the same function). Seeded by --seed.")]
Templates = Annotated[list[str], typer.Option(
    "--template", metavar="[TASK=]FILE",
    help="A Jinja template replacing a task's prompt (repeatable; FILE alone: every task "
         "of the run). `execbench ls tasks --template output` prints the shipped one to "
         "start from, `--template-vars` what a template may use.")]
System = Annotated[str | None, typer.Option(
    help="A system message sent before every prompt.")]
BaseUrls = Annotated[list[str], typer.Option(
    metavar="URL",
    help="Base URL of the model's server; several (repeated, or separated by commas) "
         "are replicas of one model: each request goes to the one with the fewest in "
         "flight, and one that keeps failing is left out for a while.")]
ModelArgs = Annotated[list[str], typer.Option(
    "--model-arg", "-M", metavar="KEY=VALUE",
    help="Repeatable: an extra request field for HTTP "
    "models, an engine flag for vllm/ and sglang/ (-M tensor_parallel_size=2), an option "
    "of hf/ and reference/ models; `execbench ls models` lists them.")]
MaxRetries = Annotated[int, typer.Option(help="Retries per failed request.")]
Timeout = Annotated[float | None, typer.Option(
    help="Seconds an attempt may wait for data (each read, or each gap between the events "
         "of a streamed reply). Default: 600 for reasoning models (o-series, gpt-5, "
         "-M reasoning_effort, -M thinking); else 120, more for a long reply that is not "
         "streamed (its max tokens at 128,000 an hour, up to 600).")]
SampleDeadline = Annotated[float | None, typer.Option(
    help="Seconds one sample may take over all its attempts and back-off "
         "(default 3600); 0: no deadline.")]
RetryDelay = Annotated[float, typer.Option(
    help="First back-off in seconds before a retry; doubles each time, up to 60.")]
RetryErrors = Annotated[bool, flag(
    "--retry-errors", "On resume, ask again for samples whose request failed.")]
MaxConnectionFailures = Annotated[int, typer.Option(
    help="Stop the run (exit 3) after this many requests in a row could not connect to "
         "any server; the same command resumes it.")]
PriceInput = Annotated[float | None, typer.Option(
    help="Price per million input tokens, for the cost estimate (with --price-output).")]
PriceOutput = Annotated[float | None, typer.Option(
    help="Price per million output tokens, for the cost estimate.")]
ServerStartTimeout = Annotated[float, typer.Option(
    help="Seconds a server the run starts (vllm/, sglang/) has to become healthy.")]
ModelRelease = Annotated[str | None, typer.Option(
    metavar="YYYY-MM[-DD]",
    help="The model's release date, a day or a month: kept in run.json for the "
         "release-date report (overrides --model-cards).")]
ModelCutoff = Annotated[str | None, typer.Option(
    metavar="YYYY-MM[-DD]",
    help="The model's training cutoff, a day or a month (2023-10: through 2023-10-31): "
         "kept in run.json for the cutoff-split report (overrides --model-cards).")]
ModelCards = Annotated[Path | None, typer.Option(
    metavar="FILE.toml",
    help='Model cards: a TOML table per model name, e.g. ["openai/gpt-4o"] with '
         'release = 2024-05-13 and cutoff = "2023-10"; gives the --model its dates.')]
DryRun = Annotated[bool, flag(
    "--dry-run", "Send nothing and write nothing: show the first prompt of each task, the "
                 "number of requests and an estimate of the input tokens.")]


def run(
    suite: Suite, model: ModelName, out_dir: OutDir = None, samples: Samples = 1,
    temperature: Temperature = None, top_p: TopP = None, max_tokens: MaxTokens = None,
    seed: Seed = None, max_connections: MaxConnections = 16, limit: Limit = None,
    tasks: Tasks = None, shots: Shots = 0, prompt: PromptStyle = "shipped",
    shot_pick: ShotPick = "fixed",
    template: Templates = [],  # noqa: B006
    system: System = None,
    model_base_url: BaseUrls = [],  # noqa: B006
    model_arg: ModelArgs = [],  # noqa: B006
    max_retries: MaxRetries = 5, timeout: Timeout = None,
    sample_deadline: SampleDeadline = 3600.0, retry_delay: RetryDelay = 1.0,
    retry_errors: RetryErrors = False, max_connection_failures: MaxConnectionFailures = 5,
    price_input: PriceInput = None, price_output: PriceOutput = None,
    server_start_timeout: ServerStartTimeout = 900.0, progress_every: ProgressEvery = 30.0,
    model_release: ModelRelease = None, model_cutoff: ModelCutoff = None,
    model_cards: ModelCards = None, dry_run: DryRun = False,
) -> None:
    """Evaluate MODEL on SUITE; re-run the same command to resume."""
    from execbench import runner
    from execbench.api import checked_run, default_out
    from execbench.models.base import GenerateConfig
    from execbench.models.cards import CardError, dates_for
    from execbench.settings import SettingError

    if sample_deadline is not None and sample_deadline < 0:
        fail("--sample-deadline must be >= 0 (0: no deadline)")
    check_every(progress_every)
    try:
        dates = dates_for(model, model_cards, model_release, model_cutoff,
                          ("--model-release", "--model-cutoff"))
    except CardError as exc:
        fail(str(exc))
    config = runner.RunConfig(
        suite=str(suite), model=model, n=samples, shots=shots, limit=limit,
        tasks=None if tasks is None else tasks.split(","),
        base_url=",".join(model_base_url) or None, model_args=pairs(model_arg, "-M"),
        retry_errors=retry_errors, price_input=price_input, price_output=price_output,
        prompt=prompt, shot_pick=shot_pick, system=system, templates=_templates(template),
        model_release=dates.release, model_cutoff=dates.cutoff,
        generate=GenerateConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                seed=seed, max_connections=max_connections,
                                max_retries=max_retries, timeout=timeout,
                                sample_deadline=sample_deadline or None,
                                retry_base_delay=retry_delay,
                                server_start_timeout=server_start_timeout,
                                max_connection_failures=max_connection_failures))
    folder = default_out(model, suite) if out_dir is None else out_dir
    try:
        config = checked_run(config, folder)
    except SettingError as exc:
        fail_setting(exc, FLAGS)
    if out_dir is None and not dry_run:  # a dry run writes no folder to resume
        err.print(f"run folder: {folder} (to resume, add --out {folder})", highlight=False)
    out_dir = folder
    if dry_run:
        _dry_run(config, out_dir)
    else:
        _evaluate(config, out_dir, progress_every)


def _templates(given: list[str]) -> dict[str, str]:
    """``--template [TASK=]FILE`` values read, by task (``protocol.EVERY_TASK`` for a
    file given alone, or one whose name only looks like ``TASK=FILE``); a file that cannot
    be read as a template fails in one line."""
    from execbench.tasks.protocol import EVERY_TASK
    from execbench.tasks.registry import TASKS
    from execbench.tasks.templating import MAX_TEMPLATE

    read: dict[str, str] = {}
    for spec in given:
        task, equals, path = spec.partition("=")
        if not equals or task not in TASKS:  # a file name with "=" in it is a file
            task, path = EVERY_TASK, spec
        if task in read:
            fail(f"--template: two templates for {'every task' if task == EVERY_TASK else task}")
        file = Path(path)
        try:
            if not file.is_file():
                fail(f"--template: {file} is not a file")
            if file.stat().st_size > 4 * MAX_TEMPLATE:
                fail(f"--template: {file} is larger than a template may be")
            read[task] = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            fail(f"--template: {file} is not UTF-8 text")
        except OSError as exc:
            fail(f"--template: {file} cannot be read ({exc.strerror})")
    return read


def _evaluate(config: RunConfig, out_dir: Path, progress_every: float) -> None:
    """Run, with progress on stderr, then the results table and what the run cost."""
    from execbench import runner
    from execbench.models.base import ModelError, Unreachable
    from execbench.suite import SuiteError

    # A batch system ends a job with SIGTERM: stop as on Ctrl-C, so the samples are flushed,
    # the session recorded and a server the run started is stopped with it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        planned = runner.plan(config, out_dir)
        todo, total = planned.todo, planned.total
        if not todo:  # nothing to ask: no progress, no waiting for an answer
            err.print(f"complete: all {total} samples already in {out_dir}; the results "
                      "follow", highlight=False)
            results = runner.run(config, out_dir, planned=planned)
        else:
            if todo < total:
                err.print(f"resuming: {total - todo} of {total} samples already in {out_dir}")
            with Progress(config.model, "samples", progress_every) as shown:
                shown.update(0, todo, "waiting for the first answer")
                tally = _Tally(todo, shown)
                results = runner.run(config, out_dir, progress=tally.add, planned=planned,
                                     notice=lambda line: warn(line, "note:"))
    except Unreachable as exc:
        fail(str(exc), UNREACHABLE)
    except (runner.RunError, SuiteError, ModelError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        err.print(f"interrupted; run the same command again to resume from {out_dir}")
        raise typer.Exit(130) from None
    print_results(results)
    _print_usage(results)
    err.print(f"samples in {out_dir / runner.SAMPLES}, results in {out_dir / runner.RESULTS}, "
              f"settings and sessions in {out_dir / runner.RUN_CONFIG}", highlight=False)
    errors = results["counts"]["verdicts"].get("error", 0)
    if errors:
        err.print(f"[yellow]{errors} requests failed[/] (verdict 'error'; "
                  "--retry-errors asks again on the next run)")
    if errors and errors == results["counts"]["samples"]:
        raise typer.Exit(1)  # nothing was answered: let scripts and CI notice


class _Tally:
    """Counts samples as they come, for the progress shown: a terminal's bar is redrawn at
    most ten times a second (a fast server answers hundreds a second)."""

    def __init__(self, total: int, shown: Progress) -> None:
        self.total = total
        self.shown = shown
        self.counts = {"correct": 0, "error": 0, "done": 0}
        self.drawn = 0.0

    def note(self) -> str:
        said = f"{self.counts['correct'] / self.counts['done']:.1%} correct"
        return said + f", {self.counts['error']} errors" if self.counts["error"] else said

    def add(self, sample: Sample) -> None:
        self.counts["done"] += 1
        self.counts["correct"] += sample.correct
        self.counts["error"] += sample.verdict == "error"
        now = time.monotonic()
        if now - self.drawn >= 0.1 or self.counts["done"] == self.total:
            self.drawn = now
            self.shown.update(self.counts["done"], self.total, self.note())


def _print_usage(results: dict[str, Any]) -> None:
    """What the run cost, on stderr: requests, tokens, latency, wall time, cost. Tokens the
    server did not report are said to be missing, not counted as none."""
    usage, counts = results["usage"], results["counts"]
    said = f"usage: {usage['requests']:,} requests ({usage['retries']:,} retries), "
    answered = usage["samples"] - counts["verdicts"].get("error", 0)
    unreported = usage.get("samples_without_usage", 0) - (usage["samples"] - answered)
    if answered and unreported >= answered:
        who = "model" if results["run"]["model"].startswith(("reference/", "replay/")) \
            else "server"
        said += f"the {who} reported no token usage"
    else:
        said += f"{usage['input_tokens']:,} input and {usage['output_tokens']:,} output tokens"
        if unreported > 0:
            said += f" ({unreported:,} answers came without token usage, not counted)"
    latency = usage["latency_seconds"]
    if latency is not None:
        said += (f"; latency p50 {latency['p50']:.3g} s, p90 {latency['p90']:.3g} s, "
                 f"p99 {latency['p99']:.3g} s")
    said += f"; wall {usage['wall_seconds']:.1f} s"
    if "cost" in usage:
        said += f"; cost {usage['cost']['total']:.4g} at the prices given"
    if counts["truncated"] or counts["refused"]:
        said += (f"; {counts['truncated']} answers cut off at the token limit, "
                 f"{counts['refused']} refused or filtered")
    err.print(said, highlight=False)


def _dry_run(config: RunConfig, out_dir: Path) -> None:
    """Requests per task with their estimated input tokens, then each task's first prompt."""
    from execbench import runner
    from execbench.models import ModelError, get_model
    from execbench.suite import SuiteError

    try:
        planned = runner.preview(config, out_dir)
    except (runner.RunError, SuiteError) as exc:
        fail(str(exc))
    try:
        get_model(config.model, base_url=config.base_url, model_args=config.model_args)
    except ModelError as exc:
        warn(f"the run would stop here: {exc}")
    try:
        text = _dry_run_text(config, out_dir, planned.work(), planned.todo, planned.total)
    except (SuiteError, runner.RunError) as exc:  # the suite changed since the preview
        fail(str(exc))
    out.print(text, highlight=False, markup=False)


def _dry_run_text(config: RunConfig, out_dir: Path, work: Iterable[tuple[Instance, int]],
                  todo: int, total: int) -> str:
    from execbench.suite import SuiteFile
    from execbench.tasks.asking import drawn_from

    protocol = config.protocol()
    with drawn_from(SuiteFile.open(Path(config.suite)), protocol) as drawn:
        return _dry_run_lines(config, out_dir, work, todo, total, protocol, drawn)


def _dry_run_lines(config: RunConfig, out_dir: Path, work: Iterable[tuple[Instance, int]],
                   todo: int, total: int, protocol: Protocol,
                   drawn: DrawnExamples | None) -> str:
    from execbench.runner import RunError
    from execbench.tasks import get_task
    from execbench.tasks.asking import PromptTemplateError, ask

    per_task: dict[str, list[int]] = {}  # requests and prompt characters
    firsts: dict[str, tuple[str, list[dict[str, str]]]] = {}
    made: tuple[str, int] = ("", 0)
    for instance, _ in work:
        if made[0] != instance.id:  # an instance's samples share one prompt
            try:
                messages = ask(get_task(instance.task), instance, protocol, drawn)
            except PromptTemplateError as exc:
                raise RunError(f"{instance.id}: {exc}") from None
            made = (instance.id, sum(len(message["content"]) for message in messages))
            firsts.setdefault(instance.task, (instance.id, messages))
        counts = per_task.setdefault(instance.task, [0, 0])
        counts[0] += 1
        counts[1] += made[1]
    say = [f"dry run: {todo} requests to {config.model} (n={config.n}); "
           f"{total - todo} of {total} already in {out_dir}; nothing sent or written"]
    tokens = 0
    for task, (requests, chars) in per_task.items():
        estimate = chars // CHARS_PER_TOKEN
        tokens += estimate
        say.append(f"  {task}: {requests} requests, about {estimate:,} input tokens")
    say.append(f"about {tokens:,} input tokens in all (characters / {CHARS_PER_TOKEN}; "
               "responses not counted)")
    for task, (instance_id, messages) in firsts.items():
        say.append(f"\n--- first {task} prompt: {instance_id} ---")
        say += [f"[{message['role']}]\n{message['content']}" for message in messages]
    return "\n".join(say)
