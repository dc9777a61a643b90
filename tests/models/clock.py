"""A clock for the HTTP client's tests: time moves only when the client waits or the test
moves it, and every wait asked for is recorded, so tests check which waits the client chose
rather than how long a run took on a loaded machine."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class ManualClock:
    now: float = 1000.0
    sleeps: list[float] = field(default_factory=list)
    """Every wait the client asked for, in order."""

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Record the wait and let it pass at once (other tasks still get their turn)."""
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.now += seconds
