"""MkDocs hook: the CLI reference (``docs/cli.md``) written at build time from the command
line itself, the click command tree typer builds from ``execbench.cli.app``, so the page
cannot drift from the flags. Only the CLI's own modules are imported (no extra such as
torch is needed), and the page depends on nothing but the commands' declarations: the
same code gives the same page on any machine."""

from __future__ import annotations

import re
from typing import Any

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The page with the marker replaced by the reference; other pages unchanged."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())


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
