"""Whether a traced call gave a value to ask about. Tasks that ask what a call returns (or
what it did on the way to returning) cannot use a call that raised, hit a limit or returned
an object with no literal form; they say so in the same words, so a manifest's skips read
alike whichever task dropped the call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.values import is_exact, tags

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace


def no_value(trace: Trace) -> str | None:
    """Why the call's run leaves no literal return value, or None when it returned one."""
    if trace.status != "ok":
        what = trace.exception["type"] if trace.exception else trace.detail or ""
        return f"the call did not return normally ({trace.status}: {what})"
    if trace.value is not None and "ref" in tags(trace.value):
        return "the return value holds an object twice (a cycle or a shared reference)"
    if trace.value is None or not is_exact(trace.value):
        return "the return value has no literal form"
    return None
