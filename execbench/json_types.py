"""The types of what execbench writes as JSON, so that a record's type says it can be
written and read back, instead of a mapping to anything.

``JSON`` is recursive: reading a field of a ``JSONObject`` gives a ``JSON`` the reader
narrows (``isinstance``) before using it, which is where a malformed file is caught."""

from __future__ import annotations

from typing import Protocol, TypeAlias

JSON: TypeAlias = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]
JSONObject: TypeAlias = dict[str, JSON]


class Recordable(Protocol):
    """A typed value with one mapping to its JSON record: a task's instance payload
    (``Building.build``) or its summary of a run (``Reporting.summarize``)."""

    def to_record(self) -> JSONObject: ...
