"""``execbench --help`` at a fixed width (issue #40): the command list wraps each command's
summary where the width ends, never where its docstring's source line happened to end."""

from __future__ import annotations

import inspect

import pytest

from execbench.cli import app
from tests.helpers.cli import execbench


def _summaries(width: int) -> dict[str, list[str]]:
    """Each command's summary in the Commands panel, line by line, and the column's width
    as the last entry's key ``""``."""
    done = execbench("--help", env={"COLUMNS": str(width)})
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Commands" in line)
    rows = [line[1:-1] for line in lines[start + 1:] if line.startswith("│")]
    assert all(len(line) == width for line in lines[start:start + len(rows) + 2]), lines
    column = len(rows[0]) - len(rows[0].split(maxsplit=1)[1])  # where summaries start
    found: dict[str, list[str]] = {}
    name = ""
    for row in rows:
        if row[:column].strip():
            name = row[:column].strip()
            found[name] = []
        found[name].append(row[column:].rstrip())
    found[""] = [" " * (len(rows[0]) - column - 1)]  # the column, less rich's padding
    return found


@pytest.mark.parametrize("width", [80, 100, 123])
def test_command_summaries_break_only_where_the_width_ends(width: int) -> None:
    found = _summaries(width)
    room = len(found.pop("")[0])
    commands = {info.name or info.callback.__name__: info
                for info in app.registered_commands if info.callback is not None}
    assert found.keys() == {name.replace("_", "-") for name in commands}
    for info in commands.values():
        name = info.name or info.callback.__name__
        lines = found[name.replace("_", "-")]
        first = inspect.cleandoc(info.callback.__doc__ or "").split("\n\n")[0]
        assert " ".join(lines) == " ".join(first.split()), (name, lines)
        for line, following in zip(lines, lines[1:], strict=False):
            # a line ends only where the next word would not have fitted on it
            assert len(line) + 1 + len(following.split()[0]) > room, (name, lines)
