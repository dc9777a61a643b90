"""The child process users' templates are parsed and rendered in (``templating``).

It reads one JSON request per line and answers one JSON line: ``{"ok": ...}`` or
``{"error": "one line"}``. Its address space is capped before it reads anything, so a
template that builds a huge value fails here with MemoryError (or the process dies, which
the parent reports), never in the run; the parent bounds each request's time.
"""

from __future__ import annotations

import json
import resource
import sys
from functools import cache
from typing import Any

from execbench.tasks.templating import environment


@cache
def _compiled(text: str) -> Any:
    return environment().from_string(text)


def _names(text: str) -> list[str]:
    """The variables the template reads; refused when it includes another template."""
    from jinja2 import meta, nodes

    parsed = environment().parse(text)
    if any(True for _ in parsed.find_all((nodes.Include, nodes.Import, nodes.FromImport,
                                          nodes.Extends))):
        raise ValueError("the template includes, imports or extends another: a template is "
                         "one file")
    return sorted(meta.find_undeclared_variables(parsed))


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
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    for line in sys.stdin.buffer:
        answer = _answer(json.loads(line), max_rendered)
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()
