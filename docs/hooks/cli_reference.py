"""The CLI reference (``docs/cli.md``), made from the command line itself: the click command
tree typer builds from ``execbench.cli.app``, so the page cannot drift from the flags.

The page holds the reference between two markers, so that it reads whole where Markdown
is shown as it is (a repository's web view); ``python docs/hooks/cli_reference.py``
writes it there, and a test fails while the page differs from what the commands declare.
As an MkDocs hook it writes the same text into the built page, so a site built from a tree
whose page is stale is still right. Only the CLI's own modules are imported (no extra such
as torch), and the text depends on nothing but the commands' declarations."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
PAGE = Path(__file__).resolve().parents[1] / "cli.md"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The page with the reference between the markers made anew; other pages unchanged."""
    if START not in markdown:
        return markdown
    return with_reference(markdown)


def with_reference(markdown: str) -> str:
    """``markdown`` with what lies between the markers replaced by the reference."""
    before, _, rest = markdown.partition(START)
    _, _, after = rest.partition(END)
    return f"{before}{START}\n\n{cli_reference()}\n{END}{after}"


def cli_reference() -> str:
    """Markdown for every command of ``execbench``, in the order the CLI lists them."""
    import typer

    from execbench.cli import app

    root = typer.main.get_command(app)
    context = type(root).context_class(root, info_name="execbench")
    return "\n".join(_command(root, context, level=2)).rstrip("\n") + "\n"


def _command(command: Any, context: Any, level: int) -> list[str]:
    """A command's section (a group's own, then one per subcommand)."""
    lines = [f"{'#' * level} `{context.command_path}`", ""]
    if command.help:
        lines += [_text(command.help.strip()), ""]
    lines += ["```text", command.get_usage(context), "```", ""]
    options = [record for param in command.params
               if not getattr(param, "hidden", False)
               and (record := param.get_help_record(context)) is not None]
    if options:
        lines += [f"- `{names}`: {_text(help_text) if help_text else ''}".rstrip()
                  for names, help_text in options]
        lines.append("")
    names = command.list_commands(context) if hasattr(command, "list_commands") else []
    for name in names:
        sub = command.get_command(context, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_context = type(context)(sub, info_name=name, parent=context)
        lines += _command(sub, sub_context, level)
    return lines


def _text(text: str) -> str:
    """Help text as Markdown: code spans kept, everything else escaped so that a ``*``,
    ``_`` or ``<...>`` in a help string shows as written instead of becoming markup."""
    text = " ".join(text.split())
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no code span at all
        return _escape(text)
    return "`".join(part if index % 2 else _escape(part) for index, part in enumerate(parts))


def _escape(text: str) -> str:
    text = re.sub(r"([\\*_\[\]`])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    PAGE.write_text(with_reference(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    sys.exit(0)
