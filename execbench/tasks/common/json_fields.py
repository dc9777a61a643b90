"""Reading one field of a JSON record as the type it must have, in two ways.

Strictly (``text_of``, ``int_of``, ...): the narrowing a typed reader of an instance's task
fields or a fact does once, so that a malformed record fails where it is read
(``KeyError`` for a missing field, ``ValueError`` for one of the wrong type) instead of
wherever its value is used.

Leniently (``number``, ``count``, ``optional_count``, ``counts``, ``mapping``,
``optional_text``): a summary's ``from_record`` reads a
``results.json`` that may be older than the task (a key it did not write yet) or partial;
each gives what the report shows for a field that is absent or not of its type (None for
a number, 0 for a count, an empty mapping for a group) and never raises, so an old results
file reports as it did."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from execbench.json_types import JSON, JSONObject


def _wrong(key: str, what: str, value: JSON) -> ValueError:
    return ValueError(f"the record's {key!r} is not {what}: {value!r}"[:300])


def text_of(record: Mapping[str, JSON], key: str) -> str:
    value = record[key]
    if not isinstance(value, str):
        raise _wrong(key, "a string", value)
    return value


def int_of(record: Mapping[str, JSON], key: str) -> int:
    value = record[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(key, "an integer", value)
    return value


def bool_of(record: Mapping[str, JSON], key: str) -> bool:
    value = record[key]
    if not isinstance(value, bool):
        raise _wrong(key, "a boolean", value)
    return value


def list_of(record: Mapping[str, JSON], key: str) -> list[JSON]:
    value = record[key]
    if not isinstance(value, list):
        raise _wrong(key, "a list", value)
    return value


def ints_of(record: Mapping[str, JSON], key: str) -> tuple[int, ...]:
    """A list of integers (line numbers), as a tuple."""
    return ints(record[key], key)


def ints(value: JSON, key: str) -> tuple[int, ...]:
    """A list of integers (an item of the field ``key``), as a tuple."""
    if not isinstance(value, list) or not all(
            isinstance(item, int) and not isinstance(item, bool) for item in value):
        raise _wrong(key, "a list of integers", value)
    return tuple(item for item in value if isinstance(item, int))


def object_of(record: Mapping[str, JSON], key: str) -> JSONObject:
    value = record[key]
    if not isinstance(value, dict):
        raise _wrong(key, "an object", value)
    return value


def objects_of(record: Mapping[str, JSON], key: str) -> list[JSONObject]:
    """A list of objects (the parts of a record)."""
    value = list_of(record, key)
    if not all(isinstance(item, dict) for item in value):
        raise _wrong(key, "a list of objects", value)
    return [item for item in value if isinstance(item, dict)]


def lists_of(record: Mapping[str, JSON], key: str) -> list[list[JSON]]:
    """A list of lists (typed JSON values, ``values.Encoded``)."""
    value = list_of(record, key)
    if not all(isinstance(item, list) for item in value):
        raise _wrong(key, "a list of lists", value)
    return [item for item in value if isinstance(item, list)]


def texts_of(record: Mapping[str, JSON], key: str) -> tuple[str, ...]:
    """A list of strings, as a tuple."""
    value = list_of(record, key)
    if not all(isinstance(item, str) for item in value):
        raise _wrong(key, "a list of strings", value)
    return tuple(item for item in value if isinstance(item, str))


def int_or_none(record: Mapping[str, JSON], key: str) -> int | None:
    """An integer field that may be null or missing (None then)."""
    value = record.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise _wrong(key, "an integer or null", value)
    return value


def bool_or_none(record: Mapping[str, JSON], key: str) -> bool | None:
    """A boolean field that may be null or missing (None then)."""
    value = record.get(key)
    if value is not None and not isinstance(value, bool):
        raise _wrong(key, "a boolean or null", value)
    return value


def text_or_none(record: Mapping[str, JSON], key: str) -> str | None:
    """A string field that may be null or missing (None then)."""
    value = record.get(key)
    if value is not None and not isinstance(value, str):
        raise _wrong(key, "a string or null", value)
    return value


def number(record: Mapping[str, JSON], key: str) -> float | None:
    """A fraction or a mean (an int read as written); None where absent, undefined (None)
    or not a number (a bool is not one)."""
    value = record.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def count(record: Mapping[str, JSON], key: str) -> int:
    """A count; 0 where absent or not an int."""
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def mapping(record: Mapping[str, JSON], key: str) -> Mapping[str, JSON]:
    """A nested object; empty where absent or not an object."""
    return as_object(record.get(key))


def as_object(value: JSON) -> JSONObject:
    """A summary's record (a ``task_metrics`` entry, one of its groups); empty where it is
    no object."""
    return value if isinstance(value, dict) else {}


def optional_count(record: Mapping[str, JSON], key: str) -> int | None:
    """A count the report shows as unknown where absent; None then, or when not an int."""
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def counts(record: Mapping[str, JSON], key: str) -> dict[str, int]:
    """A nested object of counts; its entries that are no count are left out."""
    nested = mapping(record, key)
    return {name: found for name in nested
            if (found := optional_count(nested, name)) is not None}


def optional_text(record: Mapping[str, JSON], key: str) -> str | None:
    """The field when it is a string; None when it is missing (or anything else)."""
    value = record.get(key)
    return value if isinstance(value, str) else None
