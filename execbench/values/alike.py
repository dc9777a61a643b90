"""Sets and dicts built from outside text in time linear in their size.

Python's hashes of numbers and tuples are not keyed, so a text can name many distinct
members that share one hash and make building the set quadratic; both the literal reader
and ``decode`` build through here so that such a text is refused instead of stalling."""

from __future__ import annotations

from typing import TYPE_CHECKING

from execbench.values.errors import LiteralError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

MAX_ALIKE = 64
"""The most distinct members of one set, or keys of one dict, sharing one hash value that
a value read from outside text (an answer, a runner's result) may hold. Python's hashes of
numbers and tuples are not keyed (``hash(k * (2**61 - 1)) == 0`` for every int ``k``,
``hash(-1) == hash(-2)``), so a text of many members hashing alike would make building the
set quadratic; such a text is refused instead (``distinct``). Honest values come nowhere
near: numbers collide only when they differ by a multiple of 2**61 - 1, and tuples of -1
and -2 in 2**6 ways."""


class Alike:
    """The distinct members met so far, grouped by hash, each group at most ``MAX_ALIKE``
    long: a new member is compared with its group only (``in`` compares by identity, then
    ``==``, as a set does), so adding n members costs at most n * ``MAX_ALIKE``
    comparisons whatever their hashes."""

    def __init__(self) -> None:
        self.groups: dict[int, list[Any]] = {}

    def add(self, member: Any) -> None:
        """Note ``member``; ``TypeError`` when it is unhashable, as a set would raise."""
        group = self.groups.setdefault(hash(member), [])
        if member not in group:
            if len(group) >= MAX_ALIKE:
                raise LiteralError(f"more than {MAX_ALIKE} members of a set, or keys of a "
                                   "dict, hash alike")
            group.append(member)


def distinct(members: Iterable[Any]) -> set[Any]:
    """``set(members)``, built in time linear in their number: ``LiteralError`` when more
    than ``MAX_ALIKE`` distinct ones share a hash (see there)."""
    alike, kept = Alike(), []
    for member in members:
        alike.add(member)
        kept.append(member)
    return set(kept)


def dict_of(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, Any]:
    """``dict(pairs)`` (the last value of a key wins, its first form stays), its keys held
    to ``MAX_ALIKE`` alike as ``distinct`` holds a set's members."""
    alike, kept = Alike(), []
    for key, value in pairs:
        alike.add(key)
        kept.append((key, value))
    return dict(kept)
