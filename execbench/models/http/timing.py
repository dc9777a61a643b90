"""When to try again: back-off, the server's Retry-After, a sample's deadline, and the clock.

Every wait and every reading of the time goes through a :class:`Clock` that the model
holds, so that tests can replace it and check which waits were asked for, and in which
order, instead of timing the run.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

from execbench.models.base import GenerateConfig

MAX_DELAY = 60.0
"""Upper bound in seconds on any wait between attempts, Retry-After included.

A server asking for a longer pause would stall a whole run; waiting the cap and trying
again costs one attempt at worst.
"""


class Clock(Protocol):
    """The time as the client reads it and the way it waits."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for deadlines and benches."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` before the next attempt."""
        ...


class SystemClock:
    """The clock of a real run: ``time.monotonic`` and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class Deadline:
    """When one sample must stop trying (``--sample-deadline``), on ``clock``."""

    clock: Clock
    seconds: float | None
    """The limit as the user gave it; None: no deadline."""
    at: float | None

    @classmethod
    def starting_now(cls, seconds: float | None, clock: Clock) -> Deadline:
        return cls(clock, seconds, None if seconds is None else clock.monotonic() + seconds)

    def passed(self, after: float = 0.0) -> bool:
        """Whether the deadline is over now, or will be in ``after`` seconds."""
        return self.at is not None and self.clock.monotonic() + after >= self.at


def retry_delay(retry: int, config: GenerateConfig, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    A server-supplied Retry-After wins because the server knows when it will have capacity.
    Otherwise the delay doubles from ``config.retry_base_delay``; the random factor spreads
    out the many concurrent requests that tend to fail together on a rate limit, so they do
    not all come back at the same instant.
    """
    if retry_after is not None:
        return min(MAX_DELAY, retry_after)
    nominal = min(MAX_DELAY, config.retry_base_delay * 2 ** (retry - 1))
    return nominal * random.uniform(0.5, 1.0)


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait in seconds a reply's headers ask for, or None if they name none.

    OpenAI sends ``retry-after-ms`` (milliseconds, more precise, so it wins); the standard
    ``Retry-After`` is either seconds or an HTTP date, which some gateways and CDNs use. A
    date in the past, or a value that is not a finite number, means no wait or no advice.
    """
    millis = _finite(headers.get("retry-after-ms"))
    if millis is not None:
        return max(0.0, millis / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, with no statement about the sender's zone
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _finite(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None
