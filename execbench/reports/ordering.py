"""The order a reader meets samples and names in: numbers in names by value, and the
samples that need a look (wrong or unreadable answers) before the ones that do not.

String order puts ``sample_12`` between ``sample_115`` and ``sample_120``, and a browser
that opens on an oracle's correct rows hides what went wrong behind thousands of them.
"""

from __future__ import annotations

import re

from execbench.tasks.base import CORRECT, INCORRECT, UNPARSABLE

WRONG = (INCORRECT, UNPARSABLE)
"""Verdicts of an answer that was given and is wrong or cannot be read: shown first."""


def natural(name: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that orders each run of digits by its value (``block-2`` before
    ``block-10``, ``sample_2`` before ``sample_12``), the rest as text; ties between
    spellings of one number (``7``, ``07``) fall back to the text, so the order is total."""
    # re.split with a group puts the digit runs at the odd places (``int`` reads every
    # digit ``\d`` matches; ``str.isdigit`` also accepts ``²``, which it does not)
    return tuple((0, int(part), part) if odd else (1, 0, part)
                 for odd, part in ((i % 2 == 1, part) for i, part in
                                   enumerate(re.split(r"(\d+)", name))))


def verdict_rank(verdict: str) -> int:
    """Where a verdict's samples come in the browser: wrong or unreadable answers (0),
    then no answer at all (request errors, scoring errors: 1), then correct ones (2)."""
    if verdict in WRONG:
        return 0
    return 2 if verdict == CORRECT else 1
