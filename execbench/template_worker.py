"""The child process users' templates are parsed and rendered in (``tasks.templating``),
and the sandboxed Jinja environment every template renders in.

The child imports nothing of execbench but this module (it starts in a moment, whatever
the machine's load), says ``ready``, then reads one JSON request per line and answers one
JSON line: ``{"ok": ...}`` or ``{"error": "one line"}``. Its address space is capped
before it reads anything, so a template that builds a huge value fails here with
MemoryError (or the process dies, which the parent reports), never in the run; the parent
bounds each request's time.
"""

from __future__ import annotations

import json
import resource
import sys
from functools import cache
from typing import Any


def environment() -> Any:
    """The sandboxed Jinja environment every template renders in: strict undefined, no
    constant folding (a folded constant is computed while the template compiles, before any
    guard), and no source of chance (``random``, ``lipsum``), so that a prompt made again
    (``show``, the page) is the one that was sent."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, trim_blocks=True,
                                        lstrip_blocks=True, keep_trailing_newline=False,
                                        autoescape=False, optimized=False)
    env.filters.pop("random", None)
    env.globals.pop("lipsum", None)
    return env


@cache
def _compiled(text: str) -> Any:
    return environment().from_string(text)


def _names(text: str) -> list[str]:
    """The variables the template reads; refused when it includes another template. Read
    as ``jinja2.meta.find_undeclared_variables`` does, but by a code generator that folds
    no constant, not even an output's (the one there does, running template code while it
    looks)."""
    from jinja2 import nodes
    from jinja2.compiler import CodeGenerator
    from jinja2.meta import TrackingCodeGenerator

    class Tracking(TrackingCodeGenerator):
        def __init__(self, env: Any) -> None:
            CodeGenerator.__init__(self, env, "<introspection>", "<introspection>",
                                   optimized=False)
            self.undeclared_identifiers: set[str] = set()

        def _output_child_to_const(self, node: Any, frame: Any, finalize: Any) -> str:
            # The generator folds each constant it outputs (``{{ '%0999999999d' % 1 }}``:
            # a gigabyte) whatever ``optimized`` says; reading names needs none of them.
            if isinstance(node, nodes.TemplateData):
                return str(super()._output_child_to_const(node, frame, finalize))
            raise nodes.Impossible()

    env = environment()
    parsed = env.parse(text)
    if any(True for _ in parsed.find_all((nodes.Include, nodes.Import, nodes.FromImport,
                                          nodes.Extends))):
        raise ValueError("the template includes, imports or extends another: a template is "
                         "one file")
    tracking = Tracking(env)
    tracking.visit(parsed)
    return sorted(tracking.undeclared_identifiers)


def _answer(request: dict[str, Any], max_rendered: int) -> dict[str, Any]:
    from jinja2 import TemplateSyntaxError
    from jinja2.exceptions import SecurityError, UndefinedError

    try:
        if request["op"] == "names":
            return {"ok": _names(request["text"])}
        rendered = _compiled(request["text"]).render(request["variables"])
        if len(rendered) > max_rendered:
            return {"error": f"the rendered prompt has {len(rendered):,} characters, more "
                             f"than {max_rendered:,}"}
        return {"ok": rendered}
    except TemplateSyntaxError as exc:
        return {"error": f"the template does not parse (line {exc.lineno}: {exc.message})"}
    except MemoryError:
        return {"error": "the template was stopped: it needed more memory than it may have"}
    except RecursionError:
        return {"error": "the template was stopped: it recursed too deep"}
    except Exception as exc:  # noqa: BLE001 - whatever a template raises is said in one line
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        kind = "refused" if isinstance(exc, SecurityError | UndefinedError) else "failed"
        if isinstance(exc, ValueError) and said.startswith("the template"):
            return {"error": said}
        return {"error": f"the template {kind}: {said}"}


def main() -> None:
    memory, max_rendered = (int(arg) for arg in sys.argv[1:3])
    environment()  # jinja2 imported before the clock of any request starts
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.buffer.flush()
    for line in sys.stdin.buffer:
        answer = _answer(json.loads(line), max_rendered)
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()
