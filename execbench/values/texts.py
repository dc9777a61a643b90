"""The compact JSON text of encodings, the order sets are sorted in and the base of
canonical text. Kept apart because three jobs share it (encoding sorts set members by
it, reading an answer's objects does too, equality compares by it) and must agree to
the byte: the suite's bytes depend on that order."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from execbench.values.shape import SEQUENCES, inner

if TYPE_CHECKING:
    from collections.abc import Iterable

    from execbench.values.shape import Encoded


def text_of(enc: Encoded | str) -> str:
    """The compact JSON text sets are sorted by and canonical text is made of: one writer,
    so that every order and every comparison agree."""
    return json.dumps(enc, separators=(",", ":"), ensure_ascii=False)


def joined(tag: str, parts: Iterable[str]) -> str:
    """``text_of([tag, items])`` from the texts of the items."""
    return "[" + text_of(tag) + ",[" + ",".join(parts) + "]]"


def pair_text(first: str, second: str) -> str:
    return "[" + first + "," + second + "]"


class Texts:
    """``text_of`` of encodings, for sorting the members of sets. A sorted member's text is
    kept until the set's own text is needed (as a member of a set around it), and the
    text of an encoding holding a sorted set (``noted``) is composed from its parts'
    texts, so nested sets write each part once instead of once per level above them;
    any other encoding is written whole by ``json``. An encoding kept or noted stays
    referenced, so that its ``id`` is never another's meanwhile."""

    def __init__(self) -> None:
        self.kept: dict[int, tuple[Encoded, str]] = {}
        self.holding: dict[int, Encoded] = {}
        """The encodings that are or hold a set sorted here."""

    def noted(self, enc: Encoded) -> Encoded:
        """``enc``, noted when it is a set or holds one sorted here."""
        if enc[0] in ("set", "frozenset") or self._holds(inner(enc)):
            self.holding[id(enc)] = enc
        return enc

    def _holds(self, parts: list[Encoded]) -> bool:
        return bool(self.holding) and any(id(part) in self.holding for part in parts)

    def sorted(self, members: list[Encoded]) -> list[Encoded]:
        """``sorted(members, key=text_of)``. Members holding a set are sorted by composed
        texts, kept for the set's own; others by ``json``'s, as always."""
        if not self._holds(members):
            return sorted(members, key=text_of)
        texts = [self.text(member) for member in members]
        order = sorted(range(len(members)), key=texts.__getitem__)
        for index in order:
            self.kept[id(members[index])] = (members[index], texts[index])
        return [members[index] for index in order]

    def text(self, enc: Encoded) -> str:
        """``text_of(enc)``: a kept text is handed over (each is asked for once at most)."""
        found = self.kept.pop(id(enc), None)
        if found is not None:
            return found[1]
        if id(enc) not in self.holding:
            return text_of(enc)
        tag = enc[0]
        if tag in SEQUENCES:
            return joined(tag, [self.text(item) for item in enc[1]])
        if tag == "dict":
            return joined(tag, [pair_text(self.text(key), self.text(value))
                                 for key, value in enc[1]])
        if tag == "instance":
            return "[" + text_of(tag) + "," + text_of(enc[1]) + "," + joined_fields(
                (name, self.text(value)) for name, value in enc[2]) + "]"
        return text_of(enc)


def joined_fields(fields: Iterable[tuple[str, str]]) -> str:
    """An object's attributes as ``text_of`` writes them, from their values' texts."""
    return "[" + ",".join(pair_text(text_of(name), text) for name, text in fields) + "]"
