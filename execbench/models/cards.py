"""Model cards: a model's release date and training cutoff, which a run may carry.

A benchmark built from dated programs (contest problems) tells apart what a model could
have seen in training from what it could not only when the run knows the model's
training cutoff; results plotted across models need each model's release date. Neither
is something a provider's API reports, so the user states them: with ``run
--model-release``/``--model-cutoff``, or in a small TOML file of their own (``--model-cards``)
with one table per model name as ``--model`` takes it::

    ["openai/gpt-4o"]
    release = 2024-05-13
    cutoff = "2023-10"

A date is a day (``2024-05-13``: a TOML date or text) or a month alone (``"2023-10"``:
text, since TOML has no month type). A month stands for its whole span: a cutoff of
``2023-10`` means through 2023-10-31 (:meth:`ModelDates.cutoff_day`), a release of
``2024-05`` is placed at 2024-05-01 on a time axis (:meth:`ModelDates.release_day`).

The card file is the user's, but may come from anyone: it is read as a regular file of at
most ``MAX_CARD_BYTES``, must be UTF-8 TOML that ``tomllib`` reads without running out of
stack, and holds only tables of ``release`` and ``cutoff``; anything else is refused in
one line (``CardError``).
"""

from __future__ import annotations

import calendar
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from execbench.text_safety import visible

MAX_CARD_BYTES = 1 << 20
"""The largest card file read: a card is a few lines per model, so a megabyte holds
thousands, and a larger file is not one."""
KEYS = ("release", "cutoff")
_DATE = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2}))?")
_BARE_MONTH = re.compile(r"=\s*\d{4}-\d{2}\s*(#.*)?$", re.M)


class CardError(ValueError):
    """A date or a card file that cannot be read; the message says which and why."""


def model_date(value: object, what: str) -> str:
    """``value`` as a model date's text, ``YYYY-MM-DD`` or ``YYYY-MM`` (a TOML date is
    its day); ``CardError`` naming ``what`` for anything else."""
    if isinstance(value, datetime):
        raise CardError(f"{what} is a date and time ({value.isoformat()}); give a day "
                        "(YYYY-MM-DD) or a month (YYYY-MM)")
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str):
        raise CardError(f"{what} should be a day (YYYY-MM-DD) or a month (YYYY-MM), "
                        f"not {type(value).__name__}")
    found = _DATE.fullmatch(value)
    if found is None:
        raise CardError(f"{what} {_shown(value)} is not a date: write a day (YYYY-MM-DD) "
                        "or a month (YYYY-MM)")
    year, month, day = (int(part) if part else 1 for part in found.groups())
    try:
        date(year, month, day)
    except ValueError:
        raise CardError(f"{what} {_shown(value)} is no day of the calendar") from None
    return value


def _shown(text: str, most: int = 40) -> str:
    """A piece of outside text as a message shows it: quoted, escaped, cut short."""
    cut = text if len(text) <= most else text[:most] + "..."
    return visible(repr(cut), lines=False)


def _first_day(text: str) -> date:
    year, month, *day = (int(part) for part in text.split("-"))
    return date(year, month, day[0] if day else 1)


def _last_day(text: str) -> date:
    year, month, *day = (int(part) for part in text.split("-"))
    return date(year, month, day[0] if day else calendar.monthrange(year, month)[1])


@dataclass(frozen=True)
class ModelDates:
    """A model's release date and training cutoff, each a day or a month's text (see
    :func:`model_date`), or None where not known."""

    release: str | None = None
    cutoff: str | None = None

    @classmethod
    def checked(cls, release: object = None, cutoff: object = None,
                names: tuple[str, str] = KEYS) -> ModelDates:
        """The dates, once each reads and the cutoff is not after the release (a model
        cannot be trained on what comes after it is out); ``CardError`` otherwise, which
        calls the two by ``names`` (a card's keys, the command's flags)."""
        dates = cls(None if release is None else model_date(release, names[0]),
                    None if cutoff is None else model_date(cutoff, names[1]))
        if dates.release is not None and dates.cutoff is not None \
                and _first_day(dates.cutoff) > _last_day(dates.release):
            raise CardError(f"{names[1]} {dates.cutoff} is after {names[0]} {dates.release}: "
                            "a model is not trained on what comes after its release")
        return dates

    def __bool__(self) -> bool:
        return self.release is not None or self.cutoff is not None

    def over(self, card: ModelDates) -> ModelDates:
        """These dates, each one missing taken from ``card``."""
        return ModelDates(self.release if self.release is not None else card.release,
                          self.cutoff if self.cutoff is not None else card.cutoff)

    def cutoff_day(self) -> date | None:
        """The last day the cutoff covers: the day given, or a month's last day."""
        return None if self.cutoff is None else _last_day(self.cutoff)

    def release_day(self) -> date | None:
        """The day the release stands at on a time axis: the day given, or a month's
        first day."""
        return None if self.release is None else _first_day(self.release)

    def pinned(self) -> dict[str, str] | None:
        """What a resume must find unchanged: None for a run without dates (which pins
        nothing new, so runs pinned before dates existed resume)."""
        if not self:
            return None
        return {key: value for key, value in (("release", self.release),
                                              ("cutoff", self.cutoff)) if value is not None}

    def label(self) -> str:
        """``released 2024-05-13, cutoff 2023-10`` (what is known), or an empty text."""
        return ", ".join(part for part in (
            None if self.release is None else f"released {self.release}",
            None if self.cutoff is None else f"cutoff {self.cutoff}") if part)


def read_cards(path: Path) -> dict[str, ModelDates]:
    """The cards in the TOML file ``path``, by model name; ``CardError`` in one line for a
    file that is not one (not a regular file, too large, not UTF-8 or TOML, nested past
    the parser's stack, a table with other keys or bad dates)."""
    name = visible(str(path), lines=False)
    try:
        raw = _read_regular(path)
    except OSError as exc:
        raise CardError(f"cannot read the model cards {name}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CARD_BYTES:
        raise CardError(f"the model cards {name} are larger than {MAX_CARD_BYTES:,} bytes; "
                        "a card file holds a few lines per model")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CardError(f"the model cards {name} are not UTF-8 text (byte {exc.start})") \
            from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        hint = ('; a month alone is written as text: cutoff = "2023-10"'
                if _BARE_MONTH.search(text) else "")
        raise CardError(f"the model cards {name} are not TOML: {exc}{hint}") from None
    except (RecursionError, MemoryError):
        raise CardError(f"the model cards {name} are nested too deeply to read") from None
    return {model: _card(model, table, name) for model, table in document.items()}


def _card(model: str, table: Any, name: str) -> ModelDates:
    """One model's table as its dates; what is wrong is said with the model named."""
    where = f"{name}: [{_shown(model)}]"
    if not isinstance(table, Mapping):
        raise CardError(f"{where} should be a table of {' and '.join(KEYS)}, as "
                        f'["{model}"] followed by release = ... and cutoff = ... lines')
    stray = sorted(set(table) - set(KEYS))
    if stray:
        hint = (" (a model name with dots or slashes is quoted: "
                '["openai/gpt-4o"])' if any(isinstance(table[key], Mapping) for key in stray)
                else "")
        raise CardError(f"{where} has {', '.join(_shown(key) for key in stray)}; a card "
                        f"holds only {' and '.join(KEYS)}{hint}")
    try:
        return ModelDates.checked(table.get("release"), table.get("cutoff"))
    except CardError as exc:
        raise CardError(f"{where}: {exc}") from None


def _read_regular(path: Path) -> bytes:
    """At most one byte past ``MAX_CARD_BYTES`` of ``path``, refused (``OSError``) unless
    it is a regular file: opened without blocking, so a FIFO cannot hang the command."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        os.set_blocking(fd, True)
        return handle.read(MAX_CARD_BYTES + 1)


def dates_for(model: str, cards: Path | None, release: str | None, cutoff: str | None,
              names: tuple[str, str] = KEYS) -> ModelDates:
    """A run's dates: ``release`` and ``cutoff`` as given (called ``names`` in messages),
    each one not given taken from ``model``'s card in ``cards`` (where a file is named);
    ``CardError`` for a bad date or file, and for a file with no card of the model when no
    date is given at all (a name typed differently there would lose the dates unsaid)."""
    given = ModelDates.checked(release, cutoff, names)
    if cards is None:
        return given
    found = read_cards(cards)
    card = found.get(model)
    if card is None:
        if given:
            return given
        known = ", ".join(_shown(name) for name in sorted(found)[:5]) or "none"
        more = ", ..." if len(found) > 5 else ""
        raise CardError(f"the model cards {visible(str(cards), lines=False)} have no card "
                        f"for {_shown(model)} (cards: {known}{more})")
    merged = given.over(card)
    return ModelDates.checked(merged.release, merged.cutoff, names)


def with_cards(dates: ModelDates, model: str, cards: Mapping[str, ModelDates]) -> ModelDates:
    """A run's own dates, each one missing taken from its model's card (``report
    --model-cards``: the run's own win); ``CardError`` where the two together do not fit
    (a cutoff after the release), as ``dates_for`` refuses them for a run."""
    card = cards.get(model)
    if card is None:
        return dates
    merged = dates.over(card)
    try:
        return ModelDates.checked(merged.release, merged.cutoff)
    except CardError as exc:
        raise CardError(f"{_shown(model)}: its run's dates and its card together: {exc}") \
            from None
