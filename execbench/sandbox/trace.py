"""The trace schema: what one call produced, whoever ran it.

A ``Trace`` comes from the sandbox (a runner's JSON result) or from a file (a trace
recorded where the call ran, e.g. while a project's own tests ran); tasks see the same type
either way. ``TraceOptions`` says what to record and with which recorder (see
``tracer.RECORDERS``). Fields a recorder adds beyond the common ones are kept in ``extra``,
never dropped; a record that breaks the schema is refused with ``TraceError`` naming the
field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NotRequired, TypedDict

from execbench.sandbox.tracer import DEFAULT_OPTIONS, RECORDERS
from execbench.values import Encoded

STATUSES = ("ok", "exception", "timeout", "memory", "crashed", "output_limit")


class TraceError(ValueError):
    """A trace record that does not fit the schema."""


@dataclass(frozen=True)
class TraceOptions:
    """What the tracer records beyond lines and the result (see ``tracer.DEFAULT_OPTIONS``)
    and with which recorder (``tracer.RECORDERS``)."""

    recorder: str = DEFAULT_OPTIONS["recorder"]
    max_events: int = DEFAULT_OPTIONS["max_events"]
    states: bool = DEFAULT_OPTIONS["states"]
    max_states: int = DEFAULT_OPTIONS["max_states"]
    max_value_nodes: int = DEFAULT_OPTIONS["max_value_nodes"]
    max_branch_seq: int = DEFAULT_OPTIONS["max_branch_seq"]

    def __post_init__(self) -> None:
        if self.recorder not in RECORDERS:
            raise ValueError(str(RECORDERS.unknown([self.recorder])))


def combined(options: Iterable[TraceOptions]) -> TraceOptions:
    """One set of options that records everything each of ``options`` asks for, so that a
    build traces every call once whatever mix of tasks it builds: the recorder that
    subclasses all the others' (a subclass records all its base records, the same way),
    states if any asks, and the largest of each bound. With nothing asked, the defaults.

    Raises ``ValueError`` for recorders that neither extends the other: no single run
    could record both."""
    chosen = list(dict.fromkeys(options)) or [TraceOptions()]
    recorder = chosen[0].recorder
    for other in chosen[1:]:
        if issubclass(RECORDERS.get(other.recorder), RECORDERS.get(recorder)):
            recorder = other.recorder
        elif not issubclass(RECORDERS.get(recorder), RECORDERS.get(other.recorder)):
            raise ValueError(f"the recorders {recorder!r} and {other.recorder!r} cannot be "
                             "used in one run")
    return TraceOptions(recorder=recorder, states=any(o.states for o in chosen),
                        **{name: max(getattr(o, name) for o in chosen)
                           for name in ("max_events", "max_states", "max_value_nodes",
                                        "max_branch_seq")})


RESULT_ONLY = TraceOptions(max_events=0, max_branch_seq=0)
"""For runs whose lines and outcome matter but not their order: answer checks, searches."""

# The parts of a trace, as they are in its JSON record and in memory alike: plain JSON
# values, typed here so that readers know what each holds (``from_dict`` checks only the
# outer type of each field).

LineKey = str
"""A line number as the key of a line-keyed map: its decimal digits (``"12"``). JSON object
keys are strings, and a trace keeps them so in memory too, so that a trace read back from
its record is equal to the one that was written."""

LineEvent = list[int]
"""One entry of ``events``: ``[line, frame]``, ``frame`` an index into ``frames``."""


class BranchOutcomes(TypedDict):
    """What one ``if``/``while``/``for`` header decided during the run: ``true`` is how
    often its body was entered, ``false`` how often it was skipped or left, ``seq`` the
    first outcomes in order, one ``T`` or ``F`` each (at most ``max_branch_seq``)."""

    true: int
    false: int
    seq: str


Branches = dict[LineKey, BranchOutcomes]
"""Header line -> its outcomes; only headers whose body starts on a later line (an
outcome on one line cannot be told from line events) and that ran at least once."""

Loops = dict[LineKey, int]
"""Loop header line -> how many times the loop's body was entered over the whole run (the
``true`` count of its branch outcomes), for the loops that ran."""


class Frame(TypedDict):
    """A traced frame: the function's name and the first line of its code (a decorated
    function's is that of its first decorator; the module body's is 1)."""

    function: str
    line: int


class State(TypedDict):
    """The local variables of frame ``frame`` (an index into ``frames``) just before
    ``line`` runs; with ``event``, as the frame returns, or as an exception passes through
    it at ``line`` (the line did not finish)."""

    line: int
    frame: int
    locals: dict[str, Encoded]
    event: NotRequired[Literal["return", "exception"]]


class RaisedException(TypedDict):
    """What the call raised: its type's qualified name, its message (cut at 500
    characters), and the phase it was raised in (``module``, ``arguments``, ``call``;
    ``compile`` when the program did not compile)."""

    type: str
    message: str
    phase: NotRequired[str]


_TYPES: dict[str, type | tuple[type, ...]] = {
    "status": str, "detail": (str, type(None)), "value": (list, type(None)),
    "value_repr": (str, type(None)), "args": (list, type(None)),
    "kwargs": (dict, type(None)), "exception": (dict, type(None)), "stdout": str,
    "lines": list, "events": list, "events_truncated": bool, "frames": list, "states": list,
    "branches": dict, "loops": dict, "cpu_time": (int, float), "steps": int,
}


@dataclass
class Trace:
    """Everything one call produced; see ``tracer`` for the meaning of each field."""

    status: str
    detail: str | None = None
    value: Encoded | None = None
    value_repr: str | None = None
    args: list[Encoded] | None = None
    kwargs: dict[str, Encoded] | None = None
    exception: RaisedException | None = None
    stdout: str = ""
    lines: list[int] = field(default_factory=list)
    events: list[LineEvent] = field(default_factory=list)
    events_truncated: bool = False
    frames: list[Frame] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    branches: Branches = field(default_factory=dict)
    loops: Loops = field(default_factory=dict)
    cpu_time: float = 0.0
    steps: int = 0
    """Line events of the program the call ran (see ``tracer``): its cost, counted."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields of a recorder other than the base one (``recording.Recorder.result``)."""

    @classmethod
    def from_dict(cls, data: Any) -> Trace:
        """A trace from its JSON record; ``TraceError`` when a common field has the wrong
        type or the status is unknown. Other fields go to ``extra``."""
        if not isinstance(data, dict):
            raise TraceError(f"a trace is a JSON object, not {type(data).__name__}")
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key in _TYPES:
                if not isinstance(value, _TYPES[key]) or (key in ("cpu_time", "steps")
                                                           and isinstance(value, bool)):
                    raise TraceError(f"trace field {key!r} has type {type(value).__name__}")
                known[key] = value
            elif key == "extra":
                raise TraceError("trace field 'extra' is reserved")
            else:
                extra[key] = value
        if known.get("status") not in STATUSES:
            raise TraceError(f"unknown trace status {known.get('status')!r}")
        return cls(**known, extra=extra)

    @classmethod
    def from_payload(cls, payload: bytes) -> Trace:
        """Read a runner's JSON result; anything malformed is a ``crashed`` trace."""
        try:
            return cls.from_dict(json.loads(payload.decode("utf-8", "surrogatepass")))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return cls(status="crashed", detail=f"unreadable result: {str(exc)[:200]}")

    def recorded_values(self) -> list[Encoded]:
        """Every value the trace holds: arguments, the returned value, each state's
        variables (states assumed well formed)."""
        return [*(self.args or ()), *(self.kwargs or {}).values(),
                *([] if self.value is None else [self.value]),
                *(value for state in self.states for value in state["locals"].values())]

    def to_dict(self) -> dict[str, Any]:
        """The JSON record ``from_dict`` reads back: common fields, then ``extra``'s."""
        record = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**record, **self.extra}
