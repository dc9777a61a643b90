"""Questions about runs whose values include objects (harvested methods and their ``self``).

A harvest records an object of a class written in Python as its class and attributes
(``values.Encoder``), shown and answered as ``ClassName(attribute=value, ...)``. A prompt
whose code, call or answer involves such a value says how objects are written; prompts
of runs without one are left exactly as they were.

The question shows the function alone, not the classes it uses, so an answer may only be
an object of a class, with a set of attributes, that the call's arguments show: a method
returning ``Point(total, self.y)`` is asked when ``self`` (or another argument) is a
``Point`` with those attributes, never when only ``Point.__init__`` could tell what they
are (``unshown``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.values import Encoded, parts, tags

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace

OBJECTS_NOTE = ("An object is written as its class name with its attributes as keywords, "
                "ClassName(attribute=value, ...), listing every attribute it has, "
                "including ones set in __slots__; a private attribute by its stored name "
                "(_ClassName__attribute), a nested class by its dotted name (Outer.Inner).")

UNSHOWN = "the value holds an object of a class whose attributes the question does not show"


def holds_objects(trace: Trace) -> bool:
    """Whether the run's arguments, result or recorded variables hold an object."""
    return any("instance" in tags(value) for value in trace.recorded_values())


def unshown(value: Encoded, trace: Trace) -> bool:
    """Whether ``value`` holds an object whose class and attribute names no object in the
    call's arguments shows."""
    wanted = _shapes(value)
    if not wanted:
        return False
    shown = {shape for argument in [*(trace.args or ()), *(trace.kwargs or {}).values()]
             for shape in _shapes(argument)}
    return not wanted <= shown


def _shapes(value: Encoded) -> set[tuple[str, frozenset[str]]]:
    """Each object's class name and attribute names, at any depth."""
    return {(part[1], frozenset(name for name, _ in part[2])) for part in parts(value)
            if part[0] == "instance"}
