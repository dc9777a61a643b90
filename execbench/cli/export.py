"""``execbench export``: a suite as training data (verl parquet, a ``datasets`` folder or
JSONL), split by program family, with evaluation suites' programs left out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from execbench.cli.app import err, fail, pairs, task_list


def export(
    suite: Annotated[Path, typer.Argument(help="The suite folder to export.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the export in.")],
    layout: Annotated[str, typer.Option(
        "--format", help="verl (parquet files of verl's rows), hf (a datasets folder) or "
                         "jsonl (one file per split).")] = "jsonl",
    split: Annotated[str, typer.Option(
        help="Splits and their shares of the program families, e.g. train=0.9,test=0.1.")
    ] = "train=1",
    seed: Annotated[int, typer.Option(help="Seed of the split's draw.")] = 0,
    shots: Annotated[int, typer.Option(
        help="Worked examples in each prompt, as `execbench run --shots`.")] = 0,
    prompt: Annotated[str, typer.Option(
        help="Prompt style, as `execbench run --prompt`: shipped, reasoning or direct.")
    ] = "shipped",
    exclude_suite: Annotated[list[Path] | None, typer.Option(
        "--exclude-suite", help="An evaluation suite: rows whose program family or "
                                "normalised program text it holds are dropped (repeatable).")
    ] = None,
    tasks: Annotated[str | None, typer.Option(
        help="Only these tasks (comma-separated; a family names its tasks).")] = None,
    licence: Annotated[list[str] | None, typer.Option(
        "--licence", help="SOURCE=LICENCE: the licence of a source's rows, over what its "
                          "format says (repeatable).")] = None,
) -> None:
    """Write SUITE as training data: one row per instance with its prompt as chat
    messages, a self-contained ground truth for `execbench.rewards`, and provenance."""
    from execbench.export import ExportError, ExportOptions, export_suite, parse_splits
    from execbench.suite import SuiteError
    from execbench.tasks.protocol import STYLES

    if shots < 0:
        fail("--shots must be 0 or more")
    if prompt not in STYLES:
        fail(f"--prompt must be one of {', '.join(STYLES)}")
    try:
        options = ExportOptions(
            layout=layout, splits=parse_splits(split), seed=seed, shots=shots, style=prompt,
            exclude=tuple(exclude_suite or ()),
            tasks=tuple(task_list(tasks)) if tasks is not None else None,
            licences=pairs(licence or [], "--licence"))
        summary = export_suite(suite, out, options)
    except (ExportError, SuiteError) as exc:
        fail(str(exc))
    rows = ", ".join(f"{name} {count:,}" for name, count in summary.rows.items())
    err.print(f"exported {sum(summary.rows.values()):,} rows ({rows}) to {out}", highlight=False)
    if summary.dropped:
        by_reason = summary.manifest["dropped"]["by_reason"]
        err.print(f"dropped {len(summary.dropped):,} rows: " + ", ".join(
            f"{count:,} {reason}" for reason, count in by_reason.items())
            + f" (listed in {out / 'export.json'})", highlight=False)
