"""Range checks of settings, shared by the command line and the Python API.

A check names the settings it concerns by their field names (``max_connections``); the
command line shows its flags instead (``--max-connections``), so that one check serves a
script calling ``runner.run`` and a user typing options, each in their own words.
"""

from __future__ import annotations

from collections.abc import Mapping


class SettingError(ValueError):
    """A setting out of range. ``text`` has a ``{0}``, ``{1}``, ... for each of ``names``."""

    def __init__(self, text: str, *names: str) -> None:
        super().__init__(text.format(*names))
        self.text = text
        self.names = names

    def named(self, words: Mapping[str, str]) -> str:
        """The message with each setting called by its word in ``words`` (a flag)."""
        return self.text.format(*(words.get(name, name) for name in self.names))


def at_least_one(counts: Mapping[str, int | None]) -> None:
    """Refuse a count below 1 (None: not given). Left through, 0 or a negative value does
    something no one asks for: an empty suite or run, a slice that drops the last programs
    (``[:-1]``), or a pool of no connections or workers that hangs."""
    for name, value in counts.items():
        if value is not None and value < 1:
            raise SettingError(f"{{0}} must be at least 1, not {value}", name)
