"""The one error for a value we refuse: a model's answer that is not a literal, a
malformed encoding from a runner (a program's to forge), a value too large or too
hash-alike to build. Callers catch this alone, whichever reader refused."""

from __future__ import annotations


class LiteralError(ValueError):
    """The text is not a literal we are willing to read."""
