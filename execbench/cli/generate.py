"""``execbench generate-programs``: programs a model writes, checked, as a source file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from execbench.cli.app import err, fail, fail_setting, pairs
from execbench.cli.run import (
    BaseUrls,
    MaxConnections,
    MaxRetries,
    MaxTokens,
    ModelArgs,
    ModelName,
    Temperature,
    Timeout,
    TopP,
)

FLAGS = {"style": "--style", "count": "--count", "inputs": "--inputs",
         "max_requests": "--max-requests", "model": "--model",
         "max_connections": "--max-connections", "max_retries": "--max-retries",
         "retry_base_delay": "--retry-delay", "timeout": "--timeout",
         "max_connection_failures": "--max-connection-failures",
         "sample_deadline": "--sample-deadline", "server_start_timeout": "--server-start-timeout"}
"""The flag of each setting ``WritingConfig.check`` names in its messages."""


def generate_programs(
    model: ModelName,
    out: Annotated[Path, typer.Option("--out", "-o", help="The source file to write "
                                                          "(generic JSONL).")],
    count: Annotated[int, typer.Option(help="Programs to keep.")],
    seed: Annotated[int, typer.Option(help="Request i is sent seed+i, and draws its "
                                           "theme from it.")] = 0,
    style: Annotated[str, typer.Option(help="The class of programs: list (list-"
                                            "manipulation functions, Yang et al.'s "
                                            "LLM-List).")] = "list",
    inputs: Annotated[int, typer.Option(help="Inputs asked for each program.")] = 3,
    max_requests: Annotated[int | None, typer.Option(
        help="Requests sent at most (default: four per program to keep).")] = None,
    temperature: Temperature = 0.8, top_p: TopP = None, max_tokens: MaxTokens = 1024,
    max_connections: MaxConnections = 16, max_retries: MaxRetries = 5,
    timeout: Timeout = None,
    model_base_url: BaseUrls = [],  # noqa: B006
    model_arg: ModelArgs = [],  # noqa: B006
) -> None:
    """Ask MODEL for programs of a class with inputs; keep those of the class that run
    alike twice within the step budget, each once; write them with their provenance as a
    source `execbench build` reads."""
    from execbench.cli.progress import Progress
    from execbench.models.base import GenerateConfig, ModelError
    from execbench.program_writing import WritingConfig, write_programs
    from execbench.settings import SettingError

    config = WritingConfig(
        model=model, out=out, count=count, seed=seed, style=style, inputs=inputs,
        max_requests=max_requests, base_url=",".join(model_base_url) or None,
        model_args=pairs(model_arg, "-M"),
        generate=GenerateConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                max_connections=max_connections, max_retries=max_retries,
                                timeout=timeout))
    try:
        with Progress("generate-programs", "programs kept") as shown:
            summary = write_programs(config, shown.update)
    except SettingError as exc:
        fail_setting(exc, FLAGS)
    except ModelError as exc:
        fail(str(exc), 3)
    dropped = ", ".join(f"{rule} {n}" for rule, n in sorted(summary.dropped.items()))
    err.print(f"{summary.kept} programs kept of {summary.asked} asked"
              + (f" (dropped: {dropped})" if dropped else "") + f"; written to {out}",
              highlight=False)
    for example in summary.examples.values():
        err.print(f"  e.g. {example}", highlight=False, markup=False)
    if summary.kept < count:
        fail(f"only {summary.kept} of {count} programs kept after {summary.asked} "
             "requests (raise --max-requests, or look at the reasons above)", 1)
