"""The after-call check watches every module of the runner's own code, and the standard
functions it calls, so a program that patches one (reached through ``sys.modules``) costs
its runner."""

from __future__ import annotations

import pkgutil

import pytest

from execbench import values
from execbench.program import STDIN
from execbench.sandbox import hygiene
from execbench.sandbox.pool import Job, Sandbox


def test_every_module_of_the_values_package_is_watched() -> None:
    """The runner encodes every result with ``execbench.values``: a module of it left out
    of ``RUNNER_MODULES`` could be patched by one unit and change the next one's record."""
    modules = {f"{values.__name__}.{found.name}" for found in pkgutil.iter_modules(values.__path__)}
    assert {values.__name__, *modules} <= set(hygiene.RUNNER_MODULES)


@pytest.mark.parametrize("patch", [
    "import io\nio.open = lambda *a, **k: io.StringIO('planted\\n')\n",
    "import io\nio.StringIO = io.BytesIO\n",
    "import os\nos.dup2 = lambda fd, to, inheritable=True: to\n",
    "import os\nos.unlink = lambda path: None\n",
    "import sys\nsys.modules['os'].dup2 = lambda fd, to, inheritable=True: to\n",
])
def test_a_stdin_program_cannot_change_how_the_next_call_is_fed(patch: str) -> None:
    """What the runner calls to feed a stdin program its text is checked after each call:
    a call that patches it costs the runner, and the unit's next call reads its own text,
    not one the first call planted (nor none at all)."""
    code = patch + "print(input())\n"
    with Sandbox(workers=1) as sandbox:
        traces = sandbox.map([Job(code, STDIN, repr(text), max_steps=10_000)
                              for text in ("first\n", "second\n")])
    assert [(trace.status, trace.value) for trace in traces] == [
        ("ok", ["str", "first\n"]), ("ok", ["str", "second\n"])]
