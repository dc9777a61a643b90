"""Prompt templates: the shipped ones (``tasks/prompts/*.j2``) and a user's own.

Every built-in prompt is a Jinja template rendered with the variables its task declares
(``Asking.template_vars``), so a user who wants other wording starts from a copy
(``execbench ls tasks --template output``) and runs it with ``--template``.

A shipped template is execbench's own and renders here. A user's template is text someone
else may have written, so it is parsed, checked and rendered in a child process of its own
(``execbench.template_worker``), in Jinja's immutable sandbox (no attribute of Python's
internals, no method that changes a value, no constant folded while it compiles), with its
address space capped at ``WORKER_MEMORY`` and each request at ``RENDER_SECONDS``: a
template that loops for ever or builds a huge value costs that child, which is killed and
started again, and the run is told in one line. The rendered prompt is capped at
``MAX_RENDERED`` characters. A template is checked before anything is sent: it must
parse, include no other template, name only variables its task declares, and show what
its task asks about.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

MAX_RENDERED = 1_000_000
"""The most characters a rendered prompt may have: far above any real prompt."""
MAX_TEMPLATE = 200_000
"""The most characters a template may have."""
RENDER_SECONDS = 10.0
"""The longest a user's template may take to be checked or rendered once."""
WORKER_MEMORY = 1 << 30
"""The address space of the child process that renders users' templates (bytes)."""
START_SECONDS = 120.0
"""The longest the child may take to start (not counted in any request's time)."""
CODE_VARIABLES = frozenset({"code", "numbered_code"})
"""What most tasks' templates must show (one of them): the code asked about."""


class PromptTemplateError(ValueError):
    """A template that cannot be used for a task, said in one line."""


@dataclass(frozen=True)
class TemplateVar:
    """A variable a task's template is rendered with, and what it holds."""

    name: str
    description: str


COMMON_VARS = (
    TemplateVar("style", "the prompt style: 'shipped' (the task's own prompt), 'reasoning' "
                "(work the run out first, then answer) or 'direct' (the answer alone)"),
    TemplateVar("shots", "how many worked examples were asked for (--shots)"),
    TemplateVar("examples", "the worked examples, each a mapping with the question's "
                "variables, its 'answer' block and its 'worked' steps (empty where none are "
                "written, and in direct style)"),
    TemplateVar("code", "the code the question is about"),
)
"""Variables every built-in task's template gets."""
NUMBERED_CODE = TemplateVar("numbered_code", "the code with each line prefixed by its number")
CALL = TemplateVar("call", "the call, as `f(1, [2])`")
ENTRY_POINT = TemplateVar("entry_point", "the name of the function called")
GIVEN_NOTE = TemplateVar("given_note", "a sentence naming arguments that cannot be written "
                         "as literals and must be repeated as given (often empty)")
"""Variables several tasks give, described once."""


@cache
def shipped(name: str) -> str:
    """The text of a shipped template (``tasks/prompts/NAME.j2``)."""
    return resources.files("execbench.tasks").joinpath("prompts", f"{name}.j2").read_text(
        encoding="utf-8")


@cache
def _compiled(text: str) -> Any:
    from execbench.template_worker import environment

    return environment().from_string(text)


def render(text: str, variables: dict[str, Any]) -> str:
    """A shipped template rendered with ``variables`` (here: it is execbench's own)."""
    return str(_compiled(text).render(variables))


def check(text: str, task: str, declared: tuple[TemplateVar, ...],
          needs: tuple[frozenset[str], ...] = (CODE_VARIABLES,)) -> None:
    """Refuse, in one line, a user's template that is too long, does not parse, includes
    another, names a variable ``task`` does not declare, or leaves out something the task
    asks about (each set of ``needs``: one of its variables must be shown)."""
    if len(text) > MAX_TEMPLATE:
        raise PromptTemplateError(f"the template has {len(text):,} characters, more than "
                                  f"{MAX_TEMPLATE:,}")
    used = set(_WORKER.ask({"op": "names", "text": text}))
    known = {var.name for var in declared}
    unknown = sorted(used - known)
    if unknown:
        raise PromptTemplateError(
            f"the template names {', '.join(unknown)}, which task {task!r} does not give "
            f"(it gives {', '.join(sorted(known))}; `execbench ls tasks --template-vars`)")
    for need in needs:
        if not used & need:
            shown = " or ".join(sorted(need & known))
            raise PromptTemplateError(f"the template never shows {shown}, which task "
                                      f"{task!r} asks about")


def render_user(text: str, variables: dict[str, Any]) -> str:
    """A user's template rendered with ``variables``, in the child process;
    ``PromptTemplateError`` when it fails, takes too long, needs too much memory, or
    makes a prompt past ``MAX_RENDERED``."""
    rendered = str(_WORKER.ask({"op": "render", "text": text, "variables": variables}))
    if len(rendered) > MAX_RENDERED:
        raise PromptTemplateError(f"the rendered prompt has {len(rendered):,} characters, "
                                  f"more than {MAX_RENDERED:,}")
    return rendered


class _Worker:
    """The child process users' templates are checked and rendered in (started when first
    needed, killed and started again after a request it did not answer in time)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def ask(self, request: dict[str, Any]) -> Any:
        with self.lock:
            line = self._exchange(json.dumps(request).encode() + b"\n")
        reply = json.loads(line)
        if "error" in reply:
            raise PromptTemplateError(reply["error"])
        return reply["ok"]

    def _exchange(self, request: bytes) -> bytes:
        """The child's answer line; the child killed, and the reason raised, when it does
        not answer in time or dies (out of memory)."""
        process = self.process or self._start()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(request)
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], RENDER_SECONDS)
            line = process.stdout.readline() if ready else None
        except OSError:
            line = b""
        if line:
            return line
        self.stop()
        if line is None:
            raise PromptTemplateError(f"the template took more than {RENDER_SECONDS:g} s")
        raise PromptTemplateError(f"the template was stopped: it needed more than "
                                  f"{WORKER_MEMORY >> 20} MiB")

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", "from execbench.template_worker import main; main()",
             str(WORKER_MEMORY), str(MAX_RENDERED)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            close_fds=True)
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_SECONDS)
        if not ready or process.stdout.readline() != b"ready\n":
            process.kill()
            process.wait()
            raise PromptTemplateError("the process that renders templates did not start")
        self.process = process
        return process

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


_WORKER = _Worker()
atexit.register(_WORKER.stop)
