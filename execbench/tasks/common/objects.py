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

from execbench.sandbox.values import Encoded, tags

if TYPE_CHECKING:
    from execbench.sandbox.trace import Trace

OBJECTS_NOTE = ("An object is written as its class name with its attributes as keywords, "
                "ClassName(attribute=value, ...), listing every attribute it has, "
                "including ones set in __slots__; a private attribute by its stored name "
                "(_ClassName__attribute), a nested class by its dotted name (Outer.Inner).")

UNSHOWN = "the value holds an object of a class whose attributes the question does not show"


def holds_objects(trace: Trace) -> bool:
    """Whether the run's arguments, result or recorded variables hold an object."""
    values = [*(trace.args or ()), *(trace.kwargs or {}).values(), trace.value,
              *(value for state in trace.states for value in state["locals"].values())]
    return any("instance" in tags(value) for value in values if value is not None)


def unshown(value: Encoded, trace: Trace) -> bool:
    """Whether ``value`` holds an object whose class and attribute names no object in the
    call's arguments shows."""
    shown = {shape for argument in [*(trace.args or ()), *(trace.kwargs or {}).values()]
             for shape in _shapes(argument)}
    return any(shape not in shown for shape in _shapes(value))


def _shapes(value: Encoded) -> set[tuple[str, frozenset[str]]]:
    """Each object's class name and attribute names, at any depth."""
    found: set[tuple[str, frozenset[str]]] = set()
    stack = [value]
    while stack:
        current = stack.pop()
        tag = current[0]
        if tag == "instance":
            found.add((current[1], frozenset(name for name, _ in current[2])))
            stack.extend(item for _, item in current[2])
        elif tag in ("list", "tuple", "set", "frozenset"):
            stack.extend(current[1])
        elif tag == "dict":
            stack.extend(part for pair in current[1] for part in pair)
    return found
