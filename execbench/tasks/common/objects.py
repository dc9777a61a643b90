"""Questions about runs whose values include objects (harvested methods and their ``self``).

A harvest records an object of a class written in Python as its class and attributes
(``values.Encoder``), shown and answered as ``ClassName(attribute=value, ...)``. A prompt
whose code, call or answer involves such a value says how objects are written; prompts
of runs without one are left exactly as they were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.sandbox.values import tags

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace

OBJECTS_NOTE = ("An object is written as its class name with its attributes as keywords, "
                "ClassName(attribute=value, ...), listing every attribute it has, "
                "including ones set in __slots__.")


def holds_objects(trace: Trace) -> bool:
    """Whether the run's arguments, result or recorded variables hold an object."""
    values = [*(trace.args or ()), *(trace.kwargs or {}).values(), trace.value,
              *(value for state in trace.states for value in state["locals"].values())]
    return any("instance" in tags(value) for value in values if value is not None)
