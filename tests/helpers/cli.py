"""The ``execbench`` command run in this process, as a fresh process with piped output
would run it (as in CI): the same parsing, exit statuses and output, without paying the
CLI's start-up (a second or so on a loaded machine) for each call.

What a command changes in the process, and a fresh process would start without, is set up
and put back around each call: ``sys.argv`` (a run records its command line), the
environment (no terminal width or colour forced; extra variables only for the call), the
consoles (made anew, as a process piped to a file makes them) and the SIGTERM handler
(``run`` installs its own). Tests that need a real process (signals, a process killed
mid-run, start-up imports) start the console script instead: ``EXECBENCH``.
"""

from __future__ import annotations

import importlib
import signal
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from execbench.cli import app

EXECBENCH = str(Path(sys.executable).parent / "execbench")
"""The console script, for tests that need the command as a process of its own."""

FORCED = ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")
"""Variables that force a terminal width or colour: a pipe in CI has none of them."""


def said(stderr: str) -> list[str]:
    """What a command said on stderr but its progress lines, which come only when it takes
    a while (``FIRST_LINE``), so a loaded machine's log has them and an idle one's not."""
    return [line for line in stderr.splitlines() if not line.startswith("progress: ")]


def piped_env(**extra: str) -> dict[str, str | None]:
    """Environment changes for a call that prints to a pipe; ``extra`` variables added."""
    return {**dict.fromkeys(FORCED), **extra}


def execbench(*args: object, env: dict[str, str] | None = None) -> Result:
    """Run ``execbench ARGS`` here; ``exit_code``, ``stdout`` and ``stderr`` as the process
    would have them. An exception the command does not handle is raised, not turned into
    exit status 1, so a test shows its traceback."""
    argv = [str(arg) for arg in args]
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["execbench", *argv])
        _fresh_consoles(patch)
        try:
            return CliRunner().invoke(app, argv, env=piped_env(**(env or {})),
                                      catch_exceptions=False)
        finally:
            signal.signal(signal.SIGTERM, handler)


def _fresh_consoles(patch: pytest.MonkeyPatch) -> None:
    """New consoles in place of the CLI's own, under every name a command module gave
    them: a console decides when it is made whether to colour its output, and the CLI's
    were made when this process imported them (perhaps on a terminal, or under
    FORCE_COLOR), not as a piped process makes them."""
    shared = importlib.import_module("execbench.cli.app")  # the package rebinds "app"
    modules = [module for name, module in sys.modules.items() if name.startswith("execbench.cli")]
    for old in (shared.err, shared.out):
        new = type(old)(stderr=old.stderr, soft_wrap=old.soft_wrap, color_system=None)
        for module in modules:
            for attr, value in list(vars(module).items()):
                if value is old:
                    patch.setattr(module, attr, new)
